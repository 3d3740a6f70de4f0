"""Model-state memory against published per-parameter figures (validation/memory_runs.csv).

Each row states a training data type, a sharding and a data-parallel degree and the bytes per parameter a
rank holds for weights, gradients and optimizer states (`measured_state_bytes_per_param`); flopcast's memory
model (cost/memory.py, state_bytes_per_param and state_bytes) predicts the same figure. A row with a cell the
model cannot read is kept as skipped with its reason (a sentence naming the cell and what is valid).
"""

from __future__ import annotations

import numpy as np

from ..cost import memory
from ..errors import FlopcastError
from ..model.strategy import Sharding, parse_choice
from ..model.system import Dtype
from .rows import read_table

MEASURED = "measured_state_bytes_per_param"
REQUIRED = ("run_id", "source", "dtype", "sharding", "dp", MEASURED)


def is_memory_header(header) -> bool:
    """Whether a header is the memory schema's (its measured column and every required one)."""
    return all(c in header for c in REQUIRED)


def predicted_state_bytes_per_param(dtype: Dtype, sharding: Sharding, dp: int) -> float:
    """Bytes per parameter a rank holds for weights, gradients and optimizer states (no expert parameters)."""
    w, g, o = memory.state_bytes_per_param(np.array([dtype]))
    parts = memory.state_bytes(1.0, 0.0, np.array([float(dp)]), np.array([1.0]), np.array([sharding]),
                               dtype_weight_bytes=w, grad_bytes=g, optimizer_bytes=o)
    return float(sum(p[0] for p in parts))


def _row(r: dict) -> dict:
    out = {k: r.get(k, "") for k in ("run_id", "source", "dtype", "sharding", "dp")}
    try:
        dtype = Dtype.parse(r["dtype"])
        sharding = parse_choice(Sharding, r["sharding"], "sharding")
        dp = _positive(r["dp"], "dp", int)
        measured = _positive(r[MEASURED], MEASURED, float)
    except FlopcastError as exc:
        return {**out, "predicted": None, "measured": None, "error_pct": None, "status": "skipped",
                "reason": str(exc)}
    predicted = predicted_state_bytes_per_param(dtype, sharding, dp)
    return {**out, "dp": dp, "predicted": predicted, "measured": measured,
            "error_pct": 100.0 * (predicted - measured) / measured, "status": "ok", "reason": None}


def _positive(text: str, column: str, kind):
    try:
        v = kind(str(text).strip())
    except ValueError:
        v = None
    if v is None or not v > 0 or v != v or v == float("inf"):
        raise FlopcastError(f"{column} {text!r} is not a positive {'integer' if kind is int else 'number'}")
    return v


def validate_memory(path) -> dict:
    """{"rows": one dict per row (predicted and measured bytes per parameter, error %), "summary": MAPE, bias,
    the largest |error|, rows predicted and skipped}."""
    header, rows = read_table(path)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise FlopcastError(f"{path} lacks column(s) {', '.join(missing)}; the memory schema needs "
                            f"{', '.join(REQUIRED)} (see validation/README.md)")
    out = [_row(r) for r in rows]
    errs = [r["error_pct"] for r in out if r["status"] == "ok"]
    summary = {"n_ok": len(errs), "n_skipped": len(out) - len(errs),
               "mape_pct": float(np.mean(np.abs(errs))) if errs else None,
               "bias_pct": float(np.mean(errs)) if errs else None,
               "max_abs_error_pct": float(np.max(np.abs(errs))) if errs else None}
    return {"rows": out, "summary": summary}
