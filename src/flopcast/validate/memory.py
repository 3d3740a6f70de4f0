"""Model-state memory against published per-parameter figures (validation/memory_runs.csv).

Each row states a training data type, a sharding and a data-parallel degree and the bytes per parameter a
rank holds for weights, gradients and optimizer states (`measured_state_bytes_per_param`); flopcast's memory
model (cost/memory.py, state_bytes_per_param and state_bytes) predicts the same figure. The file is read by its
declared schema (MEMORY, as the training and serving files are: an unknown column, or a name that reads as a number
that is not finite, is refused in one line); a row with a cell the model cannot read is kept as skipped with its
reason (a sentence naming the cell and what is valid).
"""

from __future__ import annotations

import numpy as np

from ..cost import memory
from ..errors import FlopcastError
from ..limits import LIMITS, REQUIRED_TEXT, TEXT, RowSchema, count, real
from ..model.strategy import Sharding, parse_choice
from ..model.system import Dtype
from .rows import read_checked

MEASURED = "measured_state_bytes_per_param"
# Every column a memory row may have, with its cell's type and range: a rank's state is at most ~20 bytes a
# parameter (fp32 weights, gradients and Adam's two moments, unsharded), so past 1,000 a cell is a unit slip.
MEMORY = RowSchema("the memory schema", {
    "run_id": REQUIRED_TEXT, "source": REQUIRED_TEXT, "source_locator": TEXT, "dtype": REQUIRED_TEXT,
    "sharding": REQUIRED_TEXT, "dp": count(1, LIMITS["dp"].high, required=True),
    MEASURED: real(1_000, required=True), "measured_as": TEXT, "notes": TEXT,
})
REQUIRED = tuple(c for c, col in MEMORY.columns.items() if col.required)


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
        dp = _cell(r, "dp")
        measured = _cell(r, MEASURED)
    except FlopcastError as exc:
        return {**out, "predicted": None, "measured": None, "error_pct": None, "status": "skipped",
                "reason": str(exc)}
    predicted = predicted_state_bytes_per_param(dtype, sharding, dp)
    return {**out, "dp": dp, "predicted": predicted, "measured": measured,
            "error_pct": 100.0 * (predicted - measured) / measured, "status": "ok", "reason": None}


def _cell(row: dict, column: str):
    """A number cell by its column's declared type and range (MEMORY); FlopcastError when blank or not one."""
    v = MEMORY.cell(column, row.get(column))
    if v is None:
        raise FlopcastError(f"{column} is blank")
    return v


def _check_columns(header, path) -> None:
    missing = MEMORY.missing(header)
    if missing:
        raise FlopcastError(f"{path} lacks column(s) {', '.join(missing)}; the memory schema needs "
                            f"{', '.join(REQUIRED)} (see validation/README.md)")


def validate_memory(path) -> dict:
    """{"rows": one dict per row (predicted and measured bytes per parameter, error %), "summary": MAPE, bias,
    the largest |error|, rows predicted and skipped}."""
    out = [_row(r) for r in read_checked([path], MEMORY, _check_columns)]
    errs = [r["error_pct"] for r in out if r["status"] == "ok"]
    summary = {"n_ok": len(errs), "n_skipped": len(out) - len(errs),
               "mape_pct": float(np.mean(np.abs(errs))) if errs else None,
               "bias_pct": float(np.mean(errs)) if errs else None,
               "max_abs_error_pct": float(np.max(np.abs(errs))) if errs else None}
    return {"rows": out, "summary": summary}
