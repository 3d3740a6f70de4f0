"""The CLI: golden output for one configuration, the JSON keys, each error message."""

import json
import pathlib
import re

import pytest

from flopcast.cli import main

GOLDEN = pathlib.Path(__file__).parent / "golden" / "train_gpt3_a100.txt"
GPT3_ARGS = ["train", "gpt3-175b", "--hardware", "dgx-a100-80gb", "--chips", "1024", "--tp", "8", "--pp", "16",
             "--micro-batch", "1", "--global-batch", "1536", "--recompute", "full", "--sharding", "zero1",
             "--sequence-parallel", "--schedule", "1f1b", "--dtype", "fp16", "--tokens", "300B"]


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_golden_output(capsys):
    code, out, err = run(GPT3_ARGS, capsys)
    assert code == 0, err
    # after a deliberate change (e.g. `flopcast calibrate`), regenerate with:
    #   flopcast train gpt3-175b ... (GPT3_ARGS) > tests/golden/train_gpt3_a100.txt   and review the diff
    assert GOLDEN.exists(), f"{GOLDEN} is missing; regenerate it from GPT3_ARGS and review it"
    assert out == GOLDEN.read_text()


JSON_KEYS = {"step_time_s", "tokens_per_s", "tokens_per_s_per_chip", "model_tflops_per_chip", "mfu", "hfu",
             "memory_gib", "memory_breakdown_gib", "memory_capacity_gib", "fits", "time_breakdown_s",
             "time_to_train_s", "time_to_train_days", "chip_hours", "instance_hours", "energy_kwh", "cost_usd",
             "layout", "chips", "chips_used", "idle_chips", "unavailable"}


def test_json_keys(capsys):
    code, out, _ = run(GPT3_ARGS + ["--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert JSON_KEYS <= set(d)
    assert set(d["time_breakdown_s"]) >= {"compute", "comm/tp", "comm/dp", "comm/pp", "bubble", "optimizer"}
    assert set(d["memory_breakdown_gib"]) == {"weights", "grads", "optimizer", "activations", "other"}
    assert d["energy_kwh"] > 0 and d["time_to_train_days"] > 0


def test_trainium_json_names_the_estimated_power_and_the_capacity_block_price(capsys):
    code, out, _ = run(["train", "llama2-7b", "--hardware", "trn2.48xlarge", "--chips", "16", "--tp", "4", "--pp", "1",
                        "--micro-batch", "1", "--global-batch", "64", "--tokens", "1T", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["power_basis"] == "estimate" and d["price_kind"] == "capacity-block"  # AWS publishes neither as spec
    assert d["energy_kwh"] == pytest.approx(sum(d["energy_breakdown_kwh"].values()))
    assert d["cost_usd"] == pytest.approx(sum(d["cost_breakdown_usd"].values()))


def test_trn3_json_says_why_energy_and_cost_are_missing(capsys):
    code, out, _ = run(["train", "llama2-7b", "--hardware", "trn3-ultraserver", "--chips", "16", "--tokens", "1T",
                        "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["energy_kwh"] is None and "power" in d["unavailable"]["energy"]
    assert d["cost_usd"] is None and "price" in d["unavailable"]["cost"]


@pytest.mark.parametrize("args, pattern", [
    (["train", "gpt3-176b"], r"unknown model 'gpt3-176b'; closest: gpt3-175b"),
    (["train", "llama2-7b", "--hardware", "h100-sxn"], r"unknown system 'h100-sxn'"),
    (["train", "llama2-7b", "--hardware", "p5.48xlarge", "--chips", "8", "--tp", "3", "--pp", "1"],
     r"does not divide chips|must divide the 32 attention heads"),
    (["train", "llama2-7b", "--hardware", "p5.48xlarge", "--chips", "16", "--tp", "8", "--pp", "1", "--dp", "4"],
     r"tp x pp x dp x cp equals the chips"),
    (["train", "llama2-7b", "--hardware", "p5.48xlarge", "--chips", "64", "--tp", "1", "--pp", "64", "--dp", "1"],
     r"--pp 64 exceeds the 32 layers"),
    (["train", "llama2-7b", "--hardware", "p5.48xlarge", "--chips", "8", "--tp", "8", "--pp", "1",
      "--micro-batch", "3", "--global-batch", "8"], r"global batch divides into dp x micro-batch"),
    (["train", "llama2-7b", "--hardware", "p5.48xlarge", "--chips", "16", "--tp", "16", "--pp", "1"],
     r"--tp 16 exceeds the 8 chips of one p5.48xlarge node"),
    (["train", "llama2-7b", "--tokens", "lots"], r"--tokens 'lots' is not a number"),
    (["train", "llama2-7b", "--hardware", "p4d.24xlarge", "--chips", "8", "--dtype", "fp8"], r"has no FP8 units"),
    (["train", "llama2-7b", "--chips", "64", "--ep", "4"], r"dense model"),
    (["train", "llama2-7b", "--chips", "64", "--seq-len", "0"], r"--seq-len '0' is out of range"),
    (["train", "llama2-7b", "--chips", "64", "--tokens", "1e40"], r"at most 1e\+17"),
    (["train", "llama2-7b", "--hardware", "p5.48xlarge", "--chips", "8", "--tp", "1", "--sequence-parallel"],
     r"--sequence-parallel needs --tp > 1"),
    (["train", "llama2-7b", "--recompute", "sometimes"], r"Invalid value for '--recompute'"),
])
def test_errors_are_one_line_exit_2(capsys, args, pattern):
    code, out, err = run(args, capsys)
    assert code == 2
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(pattern, err), err


def test_catalog_lists_and_shows_sources(capsys):
    code, out, _ = run(["catalog"], capsys)
    assert code == 0 and "trainium2" in out and "gpt-300b" in out and "trn2.48xlarge" in out
    code, out, _ = run(["catalog", "trainium2"], capsys)
    assert code == 0 and "[NEURON_TRN2_CHIP]" in out and "sources:" in out


def test_default_train_runs(capsys):
    code, out, err = run(["train", "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["chip"] == "trainium2" and d["chips"] == 1024 and d["time_to_train_days"] > 0


def test_python_m_flopcast_and_lazy_commands():
    """`python -m flopcast` is the CLI; `--help` lists every command of the table without importing one."""
    import subprocess
    import sys

    from flopcast.cli import COMMANDS

    code = ("import sys, runpy; sys.argv = ['flopcast', '--help']\n"
            "try:\n    runpy.run_module('flopcast', run_name='__main__')\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\n"
            "loaded = [m for m in sys.modules if m.startswith('flopcast.cli.')]\n"
            "print('LOADED', loaded)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    for name in COMMANDS:
        assert f"  {name} " in out
    assert "LOADED []" in out
