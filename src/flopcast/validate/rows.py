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
from ..limits import LIMITS, REQUIRED_TEXT, TEXT, Bound, Column, RowSchema, count, parse_cell, read_bounded, real
from ..units import reads_not_finite
from . import measured

MEASURED = "measured_tokens_per_s_per_chip"
# A file of measured runs is a few hundred rows (the shipped ones: 7 to 90 rows, 396 in all, at most 40 kB); each
# row is a forecast, and a blank layout a search, so the rows a run reads are bounded, not the disk. Measured at a
# load of 12 on 2 cores: `validate` on 376 training rows 19 s of CPU, `calibrate` (each of its rounds forecasts
# every row) 50 s, on the 138 shipped rows it fits ~21 s (so at most 160 rows: ~25 s).
MAX_FILE_BYTES = 4 << 20
MAX_ROWS = 400
MAX_FIT_ROWS = 160
# a serving row is a simulated benchmark, each evaluation of the fit's objective simulates every row, and the
# leave-one-source-out folds fit again: the shipped 85-row published_inference_runs.csv fits in ~21 s of CPU (load
# 11), a 161-row file 44-54 s; so at most 90 rows, each run once (the fit scores a figure by its run_id)
MAX_SERVING_FIT_ROWS = 90


def fit_rows(rows: list[dict], path, limit: int) -> list[dict]:
    """The rows a fit reads: a FlopcastError for a run_id that repeats an earlier row's (the fit scores each
    figure by run_id, so a repeat would silently replace the earlier run) or for more than `limit` rows."""
    seen: dict[str, int] = {}
    for n, row in enumerate(rows, start=1):
        key = (row.get("run_id") or "").strip()
        if key in seen:
            raise FlopcastError(f"{path} row {n}: run_id {key!r} repeats row {seen[key]}; valid: each measured "
                                "run once, under its own run_id")
        seen[key] = n
    if len(rows) > limit:
        raise FlopcastError(f"{path}: {len(rows):,} rows to fit; valid: at most {limit:,} (each evaluation of the "
                            "fit simulates every row)")
    return rows


def read_table(path: str | Path) -> tuple[list[str], list[dict]]:
    """(header, rows) of a CSV: header names stripped, short rows padded with "", rows of blank cells dropped.

    One-line FlopcastErrors for a missing, unreadable or empty file (shared by the serving reader)."""
    path = Path(path)
    if not path.exists():
        raise FlopcastError(f"file {path} does not exist")
    if path.is_dir():
        raise FlopcastError(f"{path} is a folder, not a CSV file")
    try:
        # -sig: a spreadsheet's byte-order mark is not a column name
        text = read_bounded(path, MAX_FILE_BYTES).decode("utf-8-sig")
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


def require_rows(rows, path) -> None:
    if not rows:
        raise FlopcastError(f"{path} has no rows (only a header)")


def check_columns(header, path, required=None):
    required = REQUIRED if required is None else required
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


def parse_number(col: str, value, whole: bool = False, minimum: float | None = None) -> float | int | None:
    """A cell as a number, None when blank; FlopcastError naming the column and value otherwise.

    A column of the training schema is read by its declared type and range (TRAINING); another column as a
    finite number, `whole` a count (8.0 is read as 8, 8.5 is refused), `minimum` the least value allowed."""
    if col in TRAINING.columns:
        return TRAINING.cell(col, value)
    bound = Bound(minimum, math.inf, integer=whole) if minimum is not None else (
        Bound(-math.inf, math.inf, integer=True) if whole else None)
    return parse_cell(col, value, bound)


def _safe_float(v) -> float | None:
    """The measured cell of a skipped row, for the listing only: None unless a finite number."""
    try:
        x = float((v or "").strip())
    except ValueError:
        return None
    return x if math.isfinite(x) else None


# optional architecture columns (validation/README.md): MoE placement, multi-token prediction, MLA's latent
ARCH_COLUMNS = {"moe_shared_experts": 0, "moe_dense_layers": 0, "moe_layer_freq": 1, "mtp_layers": 0,
                "mla_kv_lora_rank": 1}
_L, _W, _H = _schema.LAYERS, _schema.WIDTH, _schema.HEADS  # the model schema's bounds (catalog/entries.py)
_FFN = 2**24


def _cli(name: str, **kw) -> Column:
    return count(1, LIMITS[name].high, **kw)  # the command line's bound (limits.py)


# The training schema (validation/README.md): every column a training row may have, with its cell's type and
# physical range. Counts are whole numbers (moe_*: 0 or blank is a dense model); the measured figures are
# positive, at most 1,000x the fastest published run (a cell past that is a typo or a unit slip).
TRAINING = RowSchema("the training schema", {
    "run_id": REQUIRED_TEXT, "source": REQUIRED_TEXT, "source_locator": TEXT, "date": TEXT,
    "model": REQUIRED_TEXT, "params_b": real(1e5, open_low=False),
    "layers": count(1, _L, required=True), "hidden": count(1, _W, required=True),
    "heads": count(1, _H, required=True), "kv_heads": count(1, _H), "ffn_hidden": count(1, _FFN),
    "vocab": count(1, _FFN), "seq_len": count(1, _schema.TOKENS_PER_SEQ, required=True), "mlp": TEXT,
    "moe_experts": count(0, _H), "moe_topk": count(0, _H), "moe_expert_ffn": count(0, _FFN),
    "moe_shared_experts": count(0, _H), "moe_dense_layers": count(0, _L), "moe_layer_freq": count(1, _L),
    "mtp_layers": count(0, 64), "mla_kv_lora_rank": count(1, _W),
    "hardware": REQUIRED_TEXT, "chips": _cli("chips", required=True),
    **{d: _cli(d) for d in ("tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch")},
    "global_batch": _cli("global_batch", required=True), "dtype": REQUIRED_TEXT, "recompute": TEXT,
    "sharding": TEXT, "schedule": TEXT, "framework": TEXT, "cuda_graphs": TEXT,
    "attention": TEXT, "tp_comm_overlap": TEXT, "fp8_allgather": TEXT, "dispatcher": TEXT,
    measured.TOKENS: real(1e9), measured.STEP_TIME: real(1e7), measured.SEQUENCES: real(1e9),
    measured.TFLOPS: real(1e6), measured.MFU: real(100, percent=True), measured.TIME_TO_TRAIN: real(1e10),
    measured.CONVENTION: TEXT, measured.TRAIN_TOKENS: real(LIMITS["tokens"].high),
    "measured_as": TEXT, "notes": TEXT,
}, one_of=measured.KINDS)
REQUIRED = tuple(c for c, col in TRAINING.columns.items() if col.required)
TEXT_REQUIRED = ("model", "hardware")


def check_row(row: dict) -> float:
    """Every cell of a training row readable and possible (TRAINING); the measured figure (> 0) returned.

    FlopcastError (the row's skip reason) naming the first bad cell: not a number, not a whole count,
    outside its column's range, a blank required cell, or a measured figure that is blank."""
    for col in TEXT_REQUIRED:
        if not (row.get(col) or "").strip():
            raise FlopcastError(f"{col} is blank")
    if not (row.get("chips") or "").strip():
        raise FlopcastError("chips is blank")
    for col, column in TRAINING.columns.items():
        if column.bound is not None and col not in measured.KINDS:
            TRAINING.cell(col, row.get(col))
    kind = measured.stated_kind(row)
    if kind is None:
        raise FlopcastError(f"{MEASURED} is blank (and no other measured figure is given: "
                            f"{', '.join(measured.KINDS[1:])}): nothing to compare with")
    return TRAINING.cell(kind, row.get(kind))


# The measured runs the repository ships (validation/), by short name; `training` and `inference` are the unions of the
# training and of the serving files.
VALIDATION_DIR = Path(__file__).resolve().parents[3] / "validation"
SHIPPED = {
    "calibration_runs": ("calibration_runs.csv",),
    "more_training_runs": ("more_training_runs.csv",),
    "training": ("calibration_runs.csv", "more_training_runs.csv"),
    "published_training_runs": ("published_training_runs.csv",),
    "inference_runs": ("inference_runs.csv",),
    "more_inference_runs": ("more_inference_runs.csv",),
    "published_inference_runs": ("published_inference_runs.csv",),
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


def read_checked(path, schema: RowSchema, check=None) -> list[dict]:
    """The rows of one CSV, or of several (a list, or a short name from SHIPPED): each file's header checked by
    `check(header, path)` (its kind's required columns) and against `schema` (no unknown column), and not empty."""
    paths = list(path) if isinstance(path, (list, tuple)) else resolve_files(path)
    out = []
    for p in paths:
        header, rows = read_table(p)
        (check or check_columns)(header, p)
        schema.check_header(header, str(p))
        require_rows(rows, p)
        _check_text(rows, schema, p)
        out.extend(rows)
        if len(out) > MAX_ROWS:
            raise FlopcastError(f"{p}: over {MAX_ROWS:,} rows of measured runs; valid: at most {MAX_ROWS:,} rows "
                                "(split the file)")
    return out


def _check_text(rows, schema: RowSchema, path) -> None:
    """A one-line FlopcastError for a text cell (a name: run_id, hardware, model, ...) that reads as a number that
    is not finite ('nan', 'inf': what a spreadsheet or dataframe writes for a missing value), which no name is."""
    text = [c for c, col in schema.columns.items() if col.bound is None]
    for i, row in enumerate(rows, start=1):
        for col in text:
            v = row.get(col)
            if isinstance(v, str) and reads_not_finite(v):
                raise FlopcastError(f"{path} row {i}: {col} {v.strip()!r} is not a name (it reads as a number "
                                    f"that is not finite); valid: a name, or a blank cell")


def _read_all(path) -> list[dict]:
    """The training rows of one CSV or of several, checked against the training schema."""
    return read_checked(path, TRAINING)
