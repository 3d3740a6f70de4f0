"""Reading a training-schema CSV: the file(s), the columns, every cell readable and possible.

The schema is validation/README.md's; a short name (SHIPPED) names the files the repository ships.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from ..catalog import entries as _schema
from ..errors import FlopcastError
from ..limits import LIMITS
from . import measured

REQUIRED = ("run_id", "source", "model", "layers", "hidden", "heads", "seq_len", "hardware", "chips",
            "global_batch", "dtype")
MEASURED = "measured_tokens_per_s_per_chip"


def read_table(path: str | Path) -> tuple[list[str], list[dict]]:
    """(header, rows) of a CSV: header names stripped, short rows padded with "", rows of blank cells dropped.

    One-line FlopcastErrors for a missing, unreadable or empty file (shared by the serving reader)."""
    path = Path(path)
    if not path.exists():
        raise FlopcastError(f"file {path} does not exist")
    if path.is_dir():
        raise FlopcastError(f"{path} is a folder, not a CSV file")
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: a spreadsheet's byte-order mark is not a column name
    except UnicodeDecodeError:
        raise FlopcastError(f"{path} is not a UTF-8 text CSV") from None
    except OSError as exc:
        raise FlopcastError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not text.strip():
        raise FlopcastError(f"{path} is empty")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [(h or "").strip() for h in reader.fieldnames or []]
        reader.fieldnames = header
        rows = []
        for row in reader:
            row = {k: ("" if v is None else v) for k, v in row.items() if k is not None}
            if any(v.strip() for v in row.values()):
                rows.append(row)
    except csv.Error as exc:
        raise FlopcastError(f"{path} is not a readable CSV: {exc}") from None
    return header, rows


def read_rows(path: str | Path) -> tuple[list[str], list[dict]]:
    return read_table(path)


def require_rows(rows, path) -> None:
    if not rows:
        raise FlopcastError(f"{path} has no rows (only a header)")


def check_columns(header, path, required=REQUIRED):
    missing = [c for c in required if c not in header]
    if not any(k in header for k in measured.KINDS):
        missing.append(MEASURED)
    if missing:
        raise FlopcastError(f"{path} lacks column(s) {', '.join(missing)}; the training schema needs "
                            f"{', '.join(required)} and a measured figure ({', '.join(measured.KINDS)}; "
                            "see validation/README.md)")


def _int(v):
    v = (v or "").strip()
    return int(float(v)) if v else None


def _float(v):
    v = (v or "").strip()
    return float(v) if v else None


def parse_number(col: str, value, whole: bool = False, minimum: float | None = None) -> float | int | None:
    """A cell as a number, None when blank; FlopcastError naming the column and value otherwise.

    whole: a count (int; 8.0 is read as 8, 8.5 is refused); minimum: the least value allowed."""
    s = (value or "").strip()
    if not s:
        return None
    try:
        v = float(s)
    except ValueError:
        raise FlopcastError(f"{col} {s!r} is not a number") from None
    if not math.isfinite(v):
        raise FlopcastError(f"{col} {s!r} is not a finite number")
    if whole:
        if v != int(v):
            raise FlopcastError(f"{col} {s!r} is not a whole number")
        v = int(v)
    if minimum is not None and v < minimum:
        what = "positive" if minimum == 1 and whole else f"at least {minimum:g}"
        raise FlopcastError(f"{col} must be {what}, got {s}")
    if col in COUNT_MAXIMUM and v > COUNT_MAXIMUM[col]:
        raise FlopcastError(f"{col} {s} is out of range; valid: at most {COUNT_MAXIMUM[col]:,}")
    return v


def _safe_float(v) -> float | None:
    """The measured cell of a skipped row, for the listing only: None unless a finite number."""
    try:
        x = float((v or "").strip())
    except ValueError:
        return None
    return x if math.isfinite(x) else None


# count columns and the least value each may take (moe_*: 0 or blank is a dense model)
COUNT_COLUMNS = {c: 1 for c in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len", "chips",
                                "tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch", "global_batch")}
COUNT_COLUMNS.update({"moe_experts": 0, "moe_topk": 0, "moe_expert_ffn": 0})
# optional architecture columns (validation/README.md): MoE placement, multi-token prediction, MLA's latent
ARCH_COLUMNS = {"moe_shared_experts": 0, "moe_dense_layers": 0, "moe_layer_freq": 1, "mtp_layers": 0,
                "mla_kv_lora_rank": 1}
COUNT_COLUMNS.update(ARCH_COLUMNS)
# and the most each may be: the bounds of the model schema (catalog/entries.py) and of the CLI (limits.py)
COUNT_MAXIMUM = {"layers": _schema.LAYERS, "hidden": _schema.WIDTH, "heads": _schema.HEADS, "kv_heads": _schema.HEADS,
                 "ffn_hidden": 2**24, "vocab": 2**24, "seq_len": _schema.TOKENS_PER_SEQ, "moe_experts": _schema.HEADS,
                 "moe_topk": _schema.HEADS, "moe_expert_ffn": 2**24, "moe_shared_experts": _schema.HEADS,
                 "moe_dense_layers": _schema.LAYERS, "moe_layer_freq": _schema.LAYERS, "mtp_layers": 64,
                 "mla_kv_lora_rank": _schema.WIDTH,
                 "vcpus": 10**6, "batch": int(LIMITS["max_batch"].high),
                 **{c: int(LIMITS[c].high) for c in ("chips", "tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch",
                                                     "global_batch", "threads", "input_tokens", "output_tokens")}}
TEXT_REQUIRED = ("model", "hardware")


def check_row(row: dict) -> float:
    """Every numeric cell of a training row readable and possible; the measured figure (> 0) returned.

    FlopcastError (the row's skip reason) naming the first bad cell: not a number, not a whole count,
    a count below 1, a blank required cell, or a measured figure that is blank, zero, negative or not finite."""
    for col in TEXT_REQUIRED:
        if not (row.get(col) or "").strip():
            raise FlopcastError(f"{col} is blank")
    if not (row.get("chips") or "").strip():
        raise FlopcastError("chips is blank")
    for col, least in COUNT_COLUMNS.items():
        parse_number(col, row.get(col), whole=True, minimum=least)
    parse_number("params_b", row.get("params_b"))
    kind = measured.stated_kind(row)
    if kind is None:
        raise FlopcastError(f"{MEASURED} is blank (and no other measured figure is given: "
                            f"{', '.join(measured.KINDS[1:])}): nothing to compare with")
    m = parse_number(kind, (row.get(kind) or "").strip().rstrip("%") if kind == measured.MFU else row.get(kind))
    if m is not None and m <= 0:
        raise FlopcastError(f"{kind} must be positive, got {row[kind].strip()}")
    return m


# The measured runs the repository ships (validation/), by short name; `training` and `inference` are the unions of the
# training and of the serving files.
VALIDATION_DIR = Path(__file__).resolve().parents[3] / "validation"
SHIPPED = {
    "calibration_runs": ("calibration_runs.csv",),
    "more_training_runs": ("more_training_runs.csv",),
    "training": ("calibration_runs.csv", "more_training_runs.csv"),
    "inference_runs": ("inference_runs.csv",),
    "more_inference_runs": ("more_inference_runs.csv",),
    "inference": ("inference_runs.csv", "more_inference_runs.csv"),
}


def resolve_files(name) -> list[Path]:
    """The CSV file(s) a validate/calibrate argument names: a path, or a short name of a shipped file (SHIPPED)."""
    p = Path(name)
    if p.exists() or str(name) not in SHIPPED:
        return [p]
    files = [VALIDATION_DIR / f for f in SHIPPED[str(name)]]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise FlopcastError(f"{name} names the shipped file(s) {', '.join(missing)}, which this installation lacks; "
                            "pass a CSV path instead")
    return files


def _read_all(path) -> list[dict]:
    """The rows of one CSV, or of several (a list, or a short name from SHIPPED), checked against the schema."""
    paths = list(path) if isinstance(path, (list, tuple)) else resolve_files(path)
    out = []
    for p in paths:
        header, rows = read_table(p)
        check_columns(header, p)
        require_rows(rows, p)
        out.extend(rows)
    return out
