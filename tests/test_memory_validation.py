"""Model-state memory against published per-parameter figures (validation/memory_runs.csv)."""

import csv
import pathlib

import numpy as np
import pytest

from flopcast.cost import memory
from flopcast.model.strategy import Sharding, parse_choice
from flopcast.model.system import Dtype

ROWS = list(csv.DictReader(open(pathlib.Path(__file__).resolve().parents[1] / "validation" / "memory_runs.csv")))


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
