"""Model-state memory against published per-parameter figures (validation/memory_runs.csv)."""

import csv
import pathlib

import numpy as np
import pytest

from flopcast.cost import memory
from flopcast.model.strategy import Sharding, parse_choice
from flopcast.model.system import Dtype

with open(pathlib.Path(__file__).resolve().parents[1] / "validation" / "memory_runs.csv", newline="") as f:
    ROWS = list(csv.DictReader(f))


@pytest.mark.parametrize("row", ROWS, ids=[r["run_id"] for r in ROWS])
def test_state_bytes_per_parameter_match_the_source(row):
    dtype = Dtype.parse(row["dtype"])
    sharding = parse_choice(Sharding, row["sharding"], "sharding")
    dp = int(row["dp"])
    w, g, o = memory.state_bytes_per_param(np.array([dtype]))
    parts = memory.state_bytes(1.0, 0.0, np.array([float(dp)]), np.array([1.0]), np.array([sharding]),
                               dtype_weight_bytes=w, grad_bytes=g, optimizer_bytes=o)
    assert float(sum(p[0] for p in parts)) == pytest.approx(float(row["measured_state_bytes_per_param"]))


def test_the_file_covers_every_training_dtype_with_and_without_a_distributed_optimizer():
    seen = {(r["dtype"], r["sharding"]) for r in ROWS}
    for d in ("fp16", "bf16", "fp32"):
        assert (d, "none") in seen and (d, "zero1") in seen


def test_validate_reads_the_memory_file_and_predicts_every_row(tmp_path, capsys):
    import flopcast
    from flopcast.cli import main

    res = flopcast.validate("validation/memory_runs.csv")
    assert res.schema == "memory" and res.summary["n_ok"] == len(ROWS) and res.summary["n_skipped"] == 0
    assert res.summary["max_abs_error_pct"] < 1e-9
    # fp16 without a distributed optimizer: 2 (weights) + 2 (grads) + 16 (fp32 main params and grads, Adam m, v)
    assert res.records[0]["predicted"] == pytest.approx(20.0)
    bad = tmp_path / "mem.csv"
    bad.write_text("run_id,source,dtype,sharding,dp,measured_state_bytes_per_param\n"
                   "a,S,bf16,zero1,8,7.5\nb,S,bf17,none,1,18\nc,S,bf16,none,0,18\n")
    res = flopcast.validate(str(bad))
    assert [r["status"] for r in res.records] == ["ok", "skipped", "skipped"]
    assert "unknown dtype 'bf17'" in res.records[1]["reason"]
    assert "dp must be positive, got 0" in res.records[2]["reason"]  # the memory schema's sentence (MEMORY)
    assert main(["validate", str(bad)]) == 0
    assert "rows predicted: 1   skipped: 2" in capsys.readouterr().out
    assert main(["calibrate", str(bad)]) == 2
    assert "memory file" in capsys.readouterr().err
