"""Tables out: a result's rows as CSV, the one writer every command with a table uses (`--csv FILE`).

The rows are the result's `rows()` (flopcast.frame: the JSON keys of each row, nested mappings
flattened with `/`, as `to_frame()` has them); the columns are those keys in the order they first
appear, a row without a column leaves its cell empty, and a missing number (None, NaN) is empty.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from ..errors import FlopcastError
from ..frame import flatten


def columns(rows: list[dict]) -> list[str]:
    seen = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    return list(seen)


def _cell(value):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return value.item() if hasattr(value, "item") else value


def csv_text(rows: list[dict]) -> str:
    flat = [{k: _cell(v) for k, v in flatten(r).items()} for r in rows]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns(flat), lineterminator="\n")
    writer.writeheader()
    writer.writerows(flat)
    return buf.getvalue()


def write_csv(path, rows: list[dict]) -> Path:
    """Write the rows to `path` (missing folders created); a path that cannot be written is one sentence."""
    p = Path(path).expanduser()
    for parent in reversed(p.parents):
        if parent.exists() and not parent.is_dir():
            raise FlopcastError(f"cannot write {path}: {parent} is a file, not a folder")
    if p.is_dir():
        raise FlopcastError(f"cannot write {path}: it is a folder; give a file name such as {p / 'table.csv'}")
    text = csv_text(rows)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    except OSError as exc:
        raise FlopcastError(f"cannot write {path}: {exc.strerror or exc}") from None
    return p


def write_result(path, result) -> int:
    """Write a result's table (its `rows()`) to `path`; returns the number of rows."""
    rows = result.rows()
    write_csv(path, rows)
    return len(rows)
