"""The results table: one row per scenario, written as Parquet (pyarrow, `flopcast[sweep]`) or CSV.

Columns: the scenario's keys as written (model, system, what-if values, chips, tokens, pins,
objective), each what-if value in SI as applied to its system (`<knob>_si`), the best layout
(one column per field and `layout` as text), the forecast (step time, MFU, memory, time-to-train
ideal and with failures, cost, energy; `*_low`/`*_high` where the forecast carries intervals),
and `status` (ok | does not fit | misses the SLOs | invalid | failed) with `error`. A serving scenario's row
holds its targets and workload and the best deployment instead (sweep/serving.py). An `invalid` scenario cannot be
forecast as written (no layout divides, a what-if out of range); a `failed` one stopped for
another reason and is run again when the sweep resumes.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from ..errors import FlopcastError
from ..limits import unicode_text
from ..model.strategy import LAYOUT_FIELDS
from . import serving

MISSING_PYARROW = "Parquet output needs pyarrow: pip install 'flopcast[sweep]' (or write --out FILE.csv)"
SUFFIXES = (".parquet", ".csv")

KEY_COLUMNS = ("scenario_id", "model", "system", "chips", "tokens", "seq_len", "objective", "layout_pins")
RESULT_COLUMNS = (
    "status", "error", "hardware", "chip", "chips_used", "layout",
    *(f"layout_{f}" for f in LAYOUT_FIELDS),
    "step_time_s", "tokens_per_s", "tokens_per_s_per_chip", "mfu", "hfu", "memory_gib", "memory_capacity_gib", "fits",
    "time_to_train_s", "time_to_train_days", "expected_time_to_train_s", "expected_time_to_train_days", "goodput",
    "chip_hours", "energy_kwh", "cost_usd", "calibration_basis",
)
# headline keys whose prediction intervals (`<key>_low`, `<key>_high`) are copied where the forecast has them
INTERVAL_KEYS = ("step_time_s", "tokens_per_s", "mfu", "time_to_train_s", "expected_time_to_train_s", "cost_usd",
                 "energy_kwh")
# `misses the SLOs`: a serving scenario that no deployment serves within its targets at any rate
STATUSES = ("ok", "does not fit", "misses the SLOs", "invalid", "failed")
DONE = ("ok", "does not fit", "misses the SLOs", "invalid")  # a resumed sweep skips these; `failed` runs again


def key_columns(scenario, system=None, resolved: dict | None = None) -> dict:
    """The scenario's own columns: as written, and each what-if in SI for its system."""
    out = {
        "scenario_id": scenario.id, "model": scenario.model, "system": scenario.system, "chips": scenario.chips,
        "tokens": scenario.tokens, "seq_len": scenario.seq_len, "objective": scenario.objective,
        "layout_pins": " ".join(f"{k}={v}" for k, v in scenario.layout) or None,
    }
    for key, value in scenario.what_if:
        out[f"what_if.{key}"] = str(value)
        out[f"{key}_si"] = (resolved or {}).get(key)
    if scenario.serve is not None:
        out.update(serving.key_columns(scenario.serve))
    return out


def result_columns(d: dict) -> dict:
    """The forecast's columns from a TrainResult.to_dict()."""
    layout = d.get("layout") or {}
    out = {k: d.get(k) for k in RESULT_COLUMNS if k in d}
    out["status"] = "ok" if d.get("fits") else "does not fit"
    out["error"] = None if d.get("fits") else "; ".join(d.get("notes") or []) or "does not fit in memory"
    out["layout"] = " ".join(f"{k}={v}" for k, v in layout.items())
    for f in LAYOUT_FIELDS:
        out[f"layout_{f}"] = layout.get(f)
    for k in INTERVAL_KEYS:
        for end in ("low", "high"):
            if f"{k}_{end}" in d:
                out[f"{k}_{end}"] = d[f"{k}_{end}"]
    return out


def error_columns(status: str, error: str) -> dict:
    return {"status": status, "error": error}


def columns(rows: list) -> list:
    """Every column any row has, keys first, in a stable order."""
    seen = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    what_if = sorted(k for k in seen if k.startswith("what_if.") or k.endswith("_si"))
    fixed = [k for k in (*KEY_COLUMNS, *RESULT_COLUMNS) if k in seen or k in KEY_COLUMNS or k in ("status", "error")]
    rest = [k for k in seen if k not in fixed and k not in what_if]
    order = [*KEY_COLUMNS, *what_if]
    return order + [k for k in fixed if k not in order] + rest


def check_out(path) -> Path:
    p = Path(path)
    if p.suffix.lower() not in SUFFIXES:
        raise FlopcastError(f"--out {path}: write .parquet or .csv")
    if p.suffix.lower() == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise FlopcastError(MISSING_PYARROW) from None
    if p.exists() and p.is_dir():
        raise FlopcastError(f"--out {path} is a folder; give a file name ending in .parquet or .csv")
    return p


def clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def write(path, rows: list) -> Path:
    """Write every row (all columns, missing cells empty) to Parquet or CSV, by the suffix."""
    p = check_out(path)
    cols = columns(rows)
    rows = [{c: clean(r.get(c)) for c in cols} for r in rows]
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    if p.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(rows, schema=_schema(pa, cols, rows))
        pq.write_table(table, tmp)
    else:
        with tmp.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
    tmp.replace(p)
    return p


def _schema(pa, cols: list, rows: list):
    """Column types from the values (a column of numbers and nulls is a float or integer column)."""
    fields = []
    for c in cols:
        values = [r[c] for r in rows if r[c] is not None]
        if values and all(isinstance(v, bool) for v in values):
            t = pa.bool_()
        elif values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            t = pa.int64()
        elif values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            t = pa.float64()
        else:
            t = pa.string()
            for r in rows:
                if r[c] is not None and not isinstance(r[c], str):
                    r[c] = str(r[c])
        fields.append(pa.field(c, t))
    return pa.schema(fields)


def read(path) -> list:
    """The rows of an earlier sweep's output (Parquet or CSV); [] when there is none."""
    p = check_out(path)
    if not p.exists():
        return []
    try:
        if p.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(p).to_pylist()
        with p.open(newline="", encoding="utf-8") as f:
            return _csv_rows(csv.reader(f))
    except (OSError, ValueError, csv.Error) as exc:
        raise FlopcastError(" ".join(f"cannot read the earlier output {path} to resume: {exc}; "
                                     f"delete it or pass --no-resume".split())) from None


def _csv_rows(reader) -> list:
    """The rows of a CSV as dicts by its header; a row with more or fewer cells than the header is an error."""
    header = next(reader, [])
    out = []
    for line, cells in enumerate(reader, start=2):
        if not cells:
            continue
        if len(cells) != len(header):
            raise ValueError(f"line {line} has {len(cells)} cells for the header's {len(header)} columns")
        out.append({k: _cell(v, k) for k, v in zip(header, cells)})
    return out


def _cell(text: str, column: str):
    """A CSV cell back to a number or a boolean where it is one (what-if values stay as written)."""
    if text == "":
        return None
    if column.startswith("what_if."):
        return text
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def journal_path(out: Path) -> Path:
    """Rows land here, one JSON line each, as they finish; the table is written from it at the end."""
    return out.with_name(out.name + ".partial.jsonl")


def read_journal(out: Path) -> list:
    p = journal_path(out)
    if not p.exists():
        return []
    rows = []
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short when the run stopped
        if isinstance(row, dict) and unicode_text(row):  # one scenario's row; anything else is not ours to resume
            rows.append(row)
    return rows
