"""Text tables: the one renderer every command's aligned table goes through.

A table is its columns (a header that carries the unit, e.g. `step s`, `GiB/chip`, and a format for its
numbers) and its rows. Numbers get thousands separators and line up on the decimal point; text columns are
left-aligned. The table fits a width (the terminal's, or 100 columns when the output is not a terminal): the
last column, the one that holds free text such as a layout, wraps at spaces onto continuation lines that
start under it, so nothing is cut off.
"""

from __future__ import annotations

import math
import shutil
import sys
import textwrap
from dataclasses import dataclass

PIPE_WIDTH = 100  # columns used when stdout is not a terminal
GAP = "  "


@dataclass(frozen=True)
class Column:
    """One column: `header` names it with its unit; `fmt` formats a number (`,.3f`, `,d`); `text` columns
    are left-aligned and formatted with str()."""

    header: str
    fmt: str = ","
    text: bool = False


def width() -> int:
    """The width to fit: the terminal's when stdout is one, else PIPE_WIDTH."""
    if sys.stdout.isatty():
        return shutil.get_terminal_size((PIPE_WIDTH, 24)).columns
    return PIPE_WIDTH


def _cell(value, col: Column) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if col.text or isinstance(value, str):
        return str(value)
    return format(value, col.fmt)


def _split(cell: str) -> tuple[str, str]:
    """The cell's integer part and its decimal point with what follows ('1,234.5' -> '1,234', '.5')."""
    head, dot, tail = cell.partition(".")
    return (head, dot + tail) if head.replace(",", "").lstrip("-").isdigit() else (cell, "")


def _numeric(cells: list[str], header: str) -> list[str]:
    """Right-aligned on the decimal point, the header right-aligned over them."""
    parts = [_split(c) for c in cells]
    left = max((len(h) for h, _ in parts), default=0)
    right = max((len(t) for _, t in parts), default=0)
    body = [h.rjust(left) + t.ljust(right) for h, t in parts]
    span = max([len(header)] + [len(b) for b in body])
    return [header.rjust(span)] + [b.rjust(span) for b in body]


def _textual(cells: list[str], header: str) -> list[str]:
    span = max([len(header)] + [len(c) for c in cells])
    return [header.ljust(span)] + [c.ljust(span) for c in cells]


def render(columns: list[Column], rows: list[list], indent: str = "", fit: int | None = None) -> list[str]:
    """The table as lines: a header line, then one line per row (a wrapped last column adds lines)."""
    fit = width() if fit is None else fit
    grid = [[_cell(v, c) for v, c in zip(row, columns)] for row in rows]
    laid = []
    for j, col in enumerate(columns[:-1]):
        cells = [r[j] for r in grid]
        laid.append(_textual(cells, col.header) if col.text else _numeric(cells, col.header))
    lead = [indent + GAP.join(parts) for parts in zip(*laid)] if laid else [indent] * (len(rows) + 1)
    last, lasts = columns[-1], [last_cell for *_, last_cell in grid]
    if not last.text:
        return [(a + GAP if laid else a) + b for a, b in zip(lead, _numeric(lasts, last.header))]
    room = max(fit - len(lead[0]) - (len(GAP) if laid else 0), 20)
    pad = " " * (len(lead[0]) + (len(GAP) if laid else 0))
    out = [(lead[0] + GAP if laid else lead[0]) + last.header]
    for a, cell in zip(lead[1:], lasts):
        pieces = textwrap.wrap(cell, room, break_on_hyphens=False) or [""]
        out.append((a + GAP if laid else a) + pieces[0])
        out += [pad + p for p in pieces[1:]]
    return [line.rstrip() for line in out]
