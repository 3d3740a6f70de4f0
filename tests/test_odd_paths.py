"""Paths and names a user may give that are not plain (fuzz campaign, seeds 801-804): symbolic links that form a loop
are one sentence wherever a file is read, never Python's RuntimeError from `Path.resolve`; a JSON string with an
unpaired surrogate escape (`"\\ud800"`, in a config.json, an upload or a sweep journal) is refused where it is read,
not a UnicodeEncodeError when printed; a file name that is not UTF-8 prints where stdout's encoder is strict."""

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


HF = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 512, "vocab_size": 1000,
      "max_position_embeddings": 512}


@pytest.mark.parametrize("extra", [["--json"], ["--html", "r.html"], []])
def test_a_config_with_an_unpaired_surrogate_escape_is_one_sentence(tmp_path, capsys, monkeypatch, extra):
    import json

    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**HF, "_name_or_path": "\ud800x"}))  # written as "\ud800x"
    assert main(["train", str(tmp_path / "config.json"), "-H", "p5.48xlarge", "-n", "8", "--tp", "1", "--pp", "1"]
                + extra) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unpaired surrogate" in err, err


def test_an_upload_with_an_unpaired_surrogate_is_a_400_sentence():
    import json

    from starlette.testclient import TestClient

    from flopcast.ui import create_app

    with TestClient(create_app(), raise_server_exceptions=False) as client:
        for body in ({"filename": "m.yaml", "text": "base: llama3-8b\nname: \ud800\n"},
                     {"filename": "\udcff.yaml", "text": "base: llama3-8b\n"}):
            r = client.post("/api/upload", content=json.dumps(body).encode(),  # the escapes as a browser sends them
                            headers={"content-type": "application/json"})
            assert r.status_code == 400 and "unpaired surrogate" in r.json()["error"], r.text


def test_a_file_name_that_is_not_utf8_prints_where_stdout_is_strict(tmp_path, monkeypatch):
    import io
    import sys

    path = tmp_path / "\udcff.yaml"  # the name Python gives the bytes b"\xff.yaml"
    path.write_text("base: llama3-8b\n")
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["train", str(path), "-H", "p5.48xlarge", "-n", "8", "--tp", "1", "--pp", "1"]) == 0
    out.flush()
    assert b"\\udcff (based on" in raw.getvalue()


def test_a_journal_line_that_is_not_unicode_is_not_resumed(tmp_path):
    from flopcast.sweep import table

    out = tmp_path / "o.csv"
    table.journal_path(out).write_text('{"model": "\\ud800"}\n{"model": "llama3-8b"}\n')
    assert table.read_journal(out) == [{"model": "llama3-8b"}]
