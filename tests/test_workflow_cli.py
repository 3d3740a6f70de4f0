"""The user's workflow on the command line: --emit, --csv, --calibration, and calibrate --out."""

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from flopcast import api, catalog
from flopcast.cost import calibrations
from flopcast.cli import main
from flopcast.errors import FlopcastError
from flopcast.validate import calibrate as cb

ROOT = Path(__file__).resolve().parents[1]
PINNED = ["--tp", "1", "--pp", "1", "--micro-batch", "1", "--global-batch", "64"]


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def slow_calibration(path: Path) -> Path:
    """The shipped calibration with every GEMM efficiency halved, in the format `flopcast calibrate` writes."""
    cal = catalog.calibration()
    fams = {k: replace(v, gemm=v.gemm / 2, gemm_fp8=v.gemm_fp8 / 2) for k, v in cal.families.items()}
    cb.write(replace(cal, families=fams), {"data_file": "test"}, path)
    return path


def test_train_emit_megatron_prints_runnable_flags(capsys):
    code, out, _ = run(["train", "llama3-8b", "-H", "p5.48xlarge", "-n", "16", *PINNED, "--dp", "16",
                        "--global-batch", "128", "--emit", "megatron"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("# Megatron-LM pretrain_gpt.py: llama3-8b on 16 h100-sxm")
    command = "\n".join(line for line in lines if not line.startswith("#"))
    assert command.startswith("torchrun --nnodes 2 --nproc-per-node 8")
    assert "--tensor-model-parallel-size 1 \\" in command and "--global-batch-size 128" in command
    code, out, _ = run(["train", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", *PINNED, "--emit", "nemo", "--json"],
                       capsys)
    doc = json.loads(out)
    assert doc["launch"]["framework"] == "nemo"
    assert yaml.safe_load(doc["launch"]["text"])["train"]["global_batch_size"] == 64
    code, _, err = run(["train", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", "--emit", "neuron"], capsys)
    assert code == 2 and "valid for p5.48xlarge: megatron, nemo, maxtext" in err and err.count("\n") == 1


def test_search_plan_compare_validate_write_csv(tmp_path, capsys):
    f = tmp_path / "search.csv"
    code, out, _ = run(["search", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", "--tp", "1", "--pp", "1",
                        "--micro-batch", "1", "--top", "3", "--csv", str(f), "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    rows = list(csv.DictReader(f.open()))
    assert len(rows) == len(doc["top"]) > 0
    assert float(rows[0]["step_time_s"]) == pytest.approx(doc["top"][0]["step_time_s"])
    assert rows[0]["layout/global_batch"] == str(doc["top"][0]["layout"]["global_batch"])
    f = tmp_path / "compare.csv"
    assert run(["compare", "llama3-8b", "-H", "p5.48xlarge,p4d.24xlarge", "-n", "8", *PINNED, "--csv", str(f)],
               capsys)[0] == 0
    rows = list(csv.DictReader(f.open()))
    assert [r["system"] for r in rows] == ["p5.48xlarge", "p4d.24xlarge"] and rows[0]["mfu"]
    f = tmp_path / "plan.csv"
    assert run(["plan", "llama3-8b", "-H", "p5.48xlarge", "--tokens", "1T", "--deadline", "30d", *PINNED[:4],
                "--csv", str(f)], capsys)[0] == 0
    rows = list(csv.DictReader(f.open()))
    assert rows and {"nodes", "chips"} <= set(rows[0])
    f = tmp_path / "validate.csv"
    assert run(["validate", str(ROOT / "validation" / "inference_runs.csv"), "--csv", str(f)], capsys)[0] == 0
    rows = list(csv.DictReader(f.open()))
    assert rows and "predicted" in rows[0] and "run_id" in rows[0]


def test_calibration_file_replaces_the_shipped_one(tmp_path, capsys):
    slow = slow_calibration(tmp_path / "slow.yaml")
    base = api.train("llama3-8b", "p5.48xlarge", 8, tp=1, pp=1, micro_batch=1, global_batch=64)
    other = api.train("llama3-8b", "p5.48xlarge", 8, tp=1, pp=1, micro_batch=1, global_batch=64,
                      calibration=str(slow))
    assert other.step_time_s > 1.3 * base.step_time_s  # half the GEMM efficiency: a much slower step
    code, out, _ = run(["train", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", *PINNED, "--calibration", str(slow),
                        "--json"], capsys)
    assert code == 0 and json.loads(out)["step_time_s"] == pytest.approx(other.step_time_s)
    # a serving calibration for a training command, and the reverse, are one sentence each
    serving = ROOT / "src" / "flopcast" / "catalog" / "data" / "inference_calibration.yaml"
    code, _, err = run(["train", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", *PINNED, "--calibration", str(serving)],
                       capsys)
    assert code == 2 and "is a serving calibration" in err
    code, _, err = run(["infer", "llama3-8b", "-H", "p5.48xlarge", "--calibration", str(slow)], capsys)
    assert code == 2 and "is a training calibration" in err
    code, out, _ = run(["infer", "llama3-8b", "-H", "p5.48xlarge", "--calibration", str(serving), "--json"], capsys)
    assert code == 0 and any(str(serving) in a for a in json.loads(out)["assumptions"])


@pytest.mark.parametrize("text, message", [
    ("families: {trainium: {gemm: 0.5, gemmm: 0.4}}\n",
     "families.trainium.gemmm is not a calibration parameter; closest: gemm"),
    ("families: {trainium: {gemm: -1}}\n", "gemm: -1; valid: a finite number above 0, at most 1"),
    ("global: {tp_overlap: 0.1}\nfamilies: {}\n", "is not a calibration file"),
    ("families: {gpu: {compute: 0.5, memory: 0.7, layer_overhead: 1}}\n",
     "layer_overhead is not a calibration parameter"),
])
def test_bad_calibration_files_are_one_sentence(tmp_path, text, message):
    f = tmp_path / "cal.yaml"
    f.write_text(text)
    with pytest.raises(FlopcastError, match=message.replace("(", r"\(")):
        calibrations.read(f)
    with pytest.raises(FlopcastError, match="does not exist"):
        calibrations.training(tmp_path / "missing.yaml")


def test_calibrate_writes_where_the_user_says(tmp_path, capsys, monkeypatch):
    rows = (ROOT / "validation" / "calibration_runs.csv").read_text().splitlines()
    small = tmp_path / "small.csv"
    small.write_text("\n".join(rows[:4]) + "\n")  # three measured runs: a fit of seconds
    shipped = (ROOT / "src" / "flopcast" / "catalog" / "data" / "calibration.yaml").read_text()
    monkeypatch.chdir(tmp_path)
    code, _, _ = run(["calibrate", str(small)], capsys)
    assert code == 0 and (tmp_path / "calibration.yaml").exists()  # the default: the working directory
    assert run(["calibrate", str(small), "--out", str(tmp_path / "fits" / "mine.yaml")], capsys)[0] == 0
    kind, cal = calibrations.read(tmp_path / "fits" / "mine.yaml")
    assert kind == "training" and cal.provenance["n_rows"] == 3
    assert (ROOT / "src" / "flopcast" / "catalog" / "data" / "calibration.yaml").read_text() == shipped
    code, out, _ = run(["train", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", *PINNED, "--calibration",
                        str(tmp_path / "fits" / "mine.yaml"), "--json"], capsys)
    assert code == 0 and json.loads(out)["step_time_s"] > 0


def test_a_file_replaces_only_the_calibration_of_its_kind(tmp_path):
    slow = slow_calibration(tmp_path / "slow.yaml")
    cal, engines = calibrations.pair(slow)
    assert cal != catalog.calibration() and engines == calibrations.serving()
    serving = ROOT / "src" / "flopcast" / "catalog" / "data" / "inference_calibration.yaml"
    cal, engines = calibrations.pair(serving)
    assert cal == catalog.calibration() and set(engines) == set(calibrations.serving())


def test_claims_predict_with_the_named_calibration(tmp_path):
    from flopcast.claims.evidence import Runs

    slow = slow_calibration(tmp_path / "slow.yaml")
    shipped, mine = Runs(True), Runs(True, calibration=str(slow))
    a, b = (r.train("llama3-8b", "p5.48xlarge", 8, tp=1, pp=1, micro_batch=1, global_batch=64) for r in (shipped, mine))
    assert b.step_time_s > 1.3 * a.step_time_s and mine.engines == shipped.engines
