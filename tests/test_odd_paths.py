"""Paths a user may name that are not plain files (fuzz campaign, seed 801 round): symbolic links that form a loop
are one sentence wherever a file is read, never Python's RuntimeError from `Path.resolve`."""

import pytest

from flopcast.cli import main


@pytest.fixture
def loop(tmp_path):
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    return str(tmp_path / "a.yaml")


@pytest.mark.parametrize("argv", [["train", "{}", "-H", "p5.48xlarge"], ["train", "llama3-8b", "-H", "{}"],
                                  ["catalog", "{}"], ["infer", "{}", "-H", "p5.48xlarge"],
                                  ["validate", "{}"], ["serve", "llama3-8b", "-H", "p5.48xlarge", "--trace", "{}"]])
def test_a_symlink_loop_is_one_sentence(loop, capsys, argv):
    assert main([a.replace("{}", loop) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err


def test_the_loop_is_named(loop, capsys):
    assert main(["train", loop, "-H", "p5.48xlarge"]) == 2
    assert "symbolic links form a loop" in capsys.readouterr().err


def test_a_sweep_variant_based_on_a_looping_file_is_one_sentence(loop, tmp_path, capsys):
    from flopcast.errors import FlopcastError
    from flopcast.sweep.hardware import base_ref

    with pytest.raises(FlopcastError, match="symbolic links form a loop"):
        base_ref(loop, None)
