"""Text tables: the one renderer every command's aligned table goes through.

A table is its columns (a header that carries the unit, e.g. `step s`, `GiB/chip`, and a format for its
numbers) and its rows. Numbers get thousands separators and line up on the decimal point; text columns are
left-aligned. The table fits a width (the terminal's, or 100 columns when the output is not a terminal): the
last column, the one that holds free text such as a layout, wraps at spaces onto continuation lines that
start under it, so nothing is cut off; an earlier text column may wrap at a width of its own (`wrap`).
`sideways` turns a table on its side (one column per system) and `fold` wraps a line of prose.
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
    decimal: bool = True  # numbers line up on the point; False: right-aligned (a column of unlike quantities)
    wrap: int = 0  # a column before the last: its cells wrap at this many characters (0: never)
    below: bool = False  # the last text column: on lines of its own under each row (a wide table's free text)


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
    return (head, dot + tail) if head.replace(",", "").lstrip("-+").isdigit() else (cell, "")


def _numeric(cells: list[str], header: str, decimal: bool = True) -> list[str]:
    """Right-aligned on the decimal point (or right-aligned), the header right-aligned over them."""
    parts = [_split(c) if decimal else (c, "") for c in cells]
    left = max((len(h) for h, _ in parts), default=0)
    right = max((len(t) for _, t in parts), default=0)
    body = [h.rjust(left) + t.ljust(right) for h, t in parts]
    span = max([len(header)] + [len(b) for b in body])
    return [header.rjust(span)] + [b.rjust(span) for b in body]


def _textual(cells: list[str], header: str) -> list[str]:
    span = max([len(header)] + [len(c) for c in cells])
    return [header.ljust(span)] + [c.ljust(span) for c in cells]


def render(columns: list[Column], rows: list[list], indent: str = "", fit: int | None = None,
           header: bool = True) -> list[str]:
    """The table as lines: a header line (unless `header` is False: a list of labelled figures), then one
    line per row (a wrapped last column adds lines). A cell given as text (already formatted, e.g. '28.5'
    or 'n/a') is aligned like the numbers of its column."""
    lines = _render(columns, rows, indent, width() if fit is None else fit)
    return lines if header else lines[1:]


def _wrapped(cells: list[str], col: Column) -> list[list[str]]:
    """A column whose cells wrap at `col.wrap` characters: per row, its lines, padded to the column's span
    (left-aligned text, or right-aligned figures)."""
    pieces = [textwrap.wrap(c, col.wrap, break_on_hyphens=False, break_long_words=False) or [""] for c in cells]
    span = max([len(col.header)] + [len(p) for ps in pieces for p in ps])
    pad = str.ljust if col.text else str.rjust
    return [[pad(col.header, span)]] + [[pad(p, span) for p in ps] for ps in pieces]


def _laid(columns: list[Column], grid: list[list[str]]) -> list[list[list[str]]]:
    """Every column but the last, laid out: per column, the header's then each row's lines."""
    laid = []
    for j, col in enumerate(columns):
        cells = [r[j] for r in grid]
        if col.wrap:
            laid.append(_wrapped(cells, col))
            continue
        lines = _textual(cells, col.header) if col.text else _numeric(cells, col.header, col.decimal)
        laid.append([[line] for line in lines])
    return laid


def _render(columns: list[Column], rows: list[list], indent: str, fit: int) -> list[str]:
    grid = [[_cell(v, c) for v, c in zip(row, columns)] for row in rows]
    last = columns[-1]
    laid = _laid(columns if not last.text else columns[:-1], grid)
    spans = [len(col[0][0]) for col in laid]
    lead = len(indent) + sum(spans) + len(GAP) * len(spans)  # where a last text column starts
    if last.text and last.below:
        return _with_below(laid, spans, [last.header] + [r[-1] for r in grid], indent, fit)
    room = max(fit - lead, 20)
    out = []
    for i in range(len(rows) + 1):
        cells = [col[i] for col in laid]
        if last.text:
            text = (last.header if i == 0 else grid[i - 1][-1]).strip()
            cells.append(textwrap.wrap(text, room, break_on_hyphens=False, break_long_words=False) or [""])
        height = max(len(c) for c in cells)
        widths = spans + ([room] if last.text else [])
        for k in range(height):
            parts = [c[k] if k < len(c) else " " * w for c, w in zip(cells, widths)]
            out.append((indent + GAP.join(parts)).rstrip())
    return out


def _with_below(laid, spans, texts: list[str], indent: str, fit: int) -> list[str]:
    """Rows whose last column goes on lines of its own, indented under the row, wrapped to the width."""
    under = indent + "    "
    out = []
    for i, text in enumerate(texts):
        cells = [col[i] for col in laid]
        for k in range(max(len(c) for c in cells)):
            out.append((indent + GAP.join(c[k] if k < len(c) else " " * w for c, w in zip(cells, spans))).rstrip())
        out += textwrap.wrap(text, max(fit - len(under), 20), initial_indent=under, subsequent_indent=under,
                             break_on_hyphens=False, break_long_words=False) if text else []
    return out


def sideways(corner: str, names: list[str], rows: list[tuple[str, list]], indent: str = "",
             fit: int | None = None) -> list[str]:
    """A table on its side: one column per name (e.g. a system), one row per quantity (`(label, cells)`, the
    label with its unit, the cells formatted). Names that do not fit the width go on to a further block of
    the same rows, so no line runs past it."""
    fit = width() if fit is None else fit
    label_w = max([len(corner)] + [len(label) for label, _ in rows])
    spans = [max([len(n)] + [len(_cell(cells[k], Column(n))) for _, cells in rows]) for k, n in enumerate(names)]
    blocks, start, used = [], 0, len(indent) + label_w
    for k, span in enumerate(spans):
        if k > start and used + len(GAP) + span > fit:
            blocks.append((start, k))
            start, used = k, len(indent) + label_w
        used += len(GAP) + span
    blocks.append((start, len(names)))
    out = []
    for a, b in blocks:
        columns = [Column(corner, text=True)] + [Column(n, decimal=False) for n in names[a:b]]
        out += ([""] if out else []) + _render(columns, [[label, *cells[a:b]] for label, cells in rows], indent, fit)
    return out


def fold(line: str, fit: int | None = None) -> list[str]:
    """A line of prose within the width: wrapped at spaces, continuation lines indented two past its own. A line
    with a run of spaces inside is a table's (render fits those) and is left as it is."""
    fit = width() if fit is None else fit
    if len(line) <= fit or "  " in line.strip():  # short, or a table's line (its columns are not prose)
        return [line]
    lead = line[:len(line) - len(line.lstrip())]
    return textwrap.wrap(line, fit, initial_indent="", subsequent_indent=lead + "  ", break_on_hyphens=False,
                         break_long_words=False) or [line]


FIGURES = (Column("", text=True), Column(""), Column("", text=True), Column("", text=True))


def figures(rows: list[list], indent: str = "  ", fit: int | None = None) -> list[str]:
    """Labelled figures, one a line: label, value (formatted, lined up on its decimal point), unit, and a remark
    that wraps under itself (an interval, what the figure assumes)."""
    return render(list(FIGURES), rows, indent=indent, fit=fit, header=False)
