"""Tables out: the rows of a command's JSON as CSV, one writer for every command that prints a table.

The columns are the JSON keys of the rows, nested mappings flattened with `/` (`layout/tp`,
`time_breakdown_s/comm/tp`), in the order they first appear; a row without a column leaves it empty.
A list of plain values is one cell joined with "; "; a list holding mappings is one cell of JSON.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from ..errors import FlopcastError

# command -> the key of its JSON document that holds the table's rows (a list, or a mapping name -> row)
TABLE_KEYS = {"search": "top", "plan": "points", "compare": "systems", "validate": "rows", "deploy": "points",
              "sweep": "rows"}


def flatten(row: dict, prefix: str = "") -> dict:
    """One level of `column -> cell` from a nested row; keys joined with '/'."""
    out = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, name + "/"))
        else:
            out[name] = _cell(value)
    return out


def _cell(value):
    if value is None or value == {}:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (dict, list, tuple)) for v in value):
            return json.dumps(value, default=str)
        return "; ".join(str(v) for v in value)
    if hasattr(value, "item"):  # a numpy scalar
        return value.item()
    return value


def rows_of(doc: dict, key: str, name_column: str = "name") -> list[dict]:
    """The rows under `key`: a list as it is, a mapping name -> row as rows with the name in `name_column`."""
    table = doc.get(key)
    if table is None:
        raise FlopcastError(f"this result has no {key!r} table to write as CSV")
    if isinstance(table, dict):
        return [{name_column: k, **(v if isinstance(v, dict) else {"value": v})} for k, v in table.items()]
    return [r if isinstance(r, dict) else {"value": r} for r in table]


def columns(rows: list[dict]) -> list[str]:
    seen = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    return list(seen)


def csv_text(rows: list[dict]) -> str:
    flat = [flatten(r) for r in rows]
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


def write_table(path, command: str, doc: dict) -> int:
    """Write the table of `command`'s JSON document `doc` to `path`; returns the number of rows."""
    key = TABLE_KEYS.get(command)
    if key is None:
        raise FlopcastError(f"{command} prints no table; CSV is written by {', '.join(TABLE_KEYS)}")
    rows = rows_of(doc, key, "system" if command == "compare" else "name")
    write_csv(path, rows)
    return len(rows)
