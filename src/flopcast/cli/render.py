"""Output shared by the commands: strict JSON, and the HTML/PNG reports they write on request.

Imports no command module.
"""

from __future__ import annotations

import json
import math

import click

from ..errors import FlopcastError


def _clean(o):
    """NaN and infinities become null (JSON has no such numbers); containers are walked."""
    if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def _default(o):
    if hasattr(o, "tolist"):  # numpy scalars and arrays
        return _clean(o.tolist())
    return str(o)


def to_json(obj) -> str:
    """Strict JSON (no NaN, no Infinity): numpy scalars as numbers, anything else unknown as its text."""
    return json.dumps(_clean(obj), indent=2, default=_default, allow_nan=False)


def echo_json(obj) -> None:
    click.echo(to_json(obj))


def echo(text: str = "") -> None:
    """Print prose within the terminal's width (report/text_table.fold): a long line wraps at spaces, its
    continuation indented under it."""
    from ..report.text_table import fold

    for line in text.split("\n"):
        for part in fold(line):
            click.echo(part)


def num(x) -> str:
    """A rate or a time as a person writes it: 255, 47.7, 0.48 (three figures or whole numbers); None: n/a."""
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def emit_report(html, png, report) -> list:
    """Write `report` (a report.html.Report, or a function returning one, called only when needed) as HTML
    and/or PNGs; say where on stderr. Does nothing when neither path is given."""
    if not html and not png:
        return []
    r = report() if callable(report) else report
    written = []
    try:
        if html:
            written.append(r.write_html(html))
            n = len(r.figures)
            click.echo(f"wrote {html} ({n} figure{'' if n == 1 else 's'})", err=True)
        if png:
            files = r.write_png(png)
            written += files
            click.echo(f"wrote {len(files)} PNG file{'' if len(files) == 1 else 's'} to {png}", err=True)
    except OSError as exc:
        where = exc.filename or html or png
        raise FlopcastError(f"cannot write {where}: {exc.strerror or exc}") from None
    return written


def write_csv(path, result) -> None:
    """Write a result's table (report/tables.py, its rows()) when --csv names a file; say where on stderr."""
    if not path:
        return
    from ..report import tables

    n = tables.write_result(path, result)
    click.echo(f"wrote {path} ({n} row{'' if n == 1 else 's'})", err=True)
