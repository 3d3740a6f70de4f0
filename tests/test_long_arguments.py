"""Very long argument lists (fuzz campaign, seed 801-802 round, fuzz_shapes._long): a list of names is a loop a user
controls, so repeats are dropped and at most api.args.MAX_NAMES distinct names are taken (`search --dtypes` of
bf16,fp8 repeated 2,000 times searched 4,000 times; `deploy --weights` of 2,400 formats never finished);
`report --sizes` takes at most 16 sizes (3,000 ran for minutes); an error quotes a long value cut short."""

import json

import pytest

from flopcast.api import args
from flopcast.cli import main
from flopcast.errors import FlopcastError


def test_repeated_names_are_taken_once_in_their_order():
    assert args.names("fp8,bf16,fp8,,bf16, fp8", "dtypes") == ["fp8", "bf16"]
    assert args.names(["a", "b", "a"], "hardware") == ["a", "b"]


def test_more_distinct_names_than_the_cap_is_one_sentence():
    with pytest.raises(FlopcastError, match=r"names 17 distinct values .*valid: at most 16"):
        args.names(",".join(f"s{i}" for i in range(17)), "hardware")
    assert len(args.names(",".join(f"s{i}" for i in range(17)), "chips", most=None)) == 17


def test_a_dtype_list_repeated_thousands_of_times_is_searched_once_per_dtype(capsys):
    argv = ["search", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", "--tp", "1", "--pp", "1", "--top", "1", "--json"]
    assert main(argv + ["--dtypes", ",".join(["bf16", "fp8"] * 2000)]) == 0
    many = json.loads(capsys.readouterr().out)
    assert main(argv + ["--dtypes", "bf16,fp8"]) == 0
    once = json.loads(capsys.readouterr().out)
    assert many["candidates"] == once["candidates"] and many["top"] == once["top"]


@pytest.mark.parametrize("argv", [["compare", "llama3-8b", "-n", "8"], ["deploy", "llama3-8b"]])
def test_too_many_systems_is_one_sentence(capsys, argv):
    from flopcast import catalog

    systems = ",".join(sorted(catalog.raw("system"))[:40])
    assert main(argv + ["-H", systems]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--hardware names 40 distinct values" in err and "at most 16" in err, err


def test_report_sizes_are_bounded_and_a_long_value_is_quoted_short(capsys, tmp_path):
    sizes = ",".join(str(8 * i) for i in range(1, 3000))
    assert main(["report", "llama3-8b", "-H", "p5.48xlarge", "--sizes", sizes, "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--sizes must be a comma-separated list of at most 16 chip counts" in err and len(err) < 400, err
    assert main(["reliability", "llama3-8b", "-H", "p5.48xlarge", "--sweep-chips", sizes]) == 2
    err = capsys.readouterr().err.strip()
    assert "at most 64 chip counts" in err and "characters)" in err and len(err) < 400, err
