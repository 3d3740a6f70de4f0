"""`flopcast claims`: the Trainium2 / Graviton4 announcement claims against flopcast's own models.

Parse, call flopcast.claims, render. No formulas here.
"""

from __future__ import annotations

import click

from .. import api
from ..progress import Progress
from ..report.text_table import Column, fold, render, sideways, width
from .options import calibration_option, check_executor, executor_options, report_options
from .render import emit_report, to_json

# the summary table: the claim and the estimates wrap within their widths (characters), why takes the rest
SUMMARY = [Column("#", text=True), Column("claim", text=True, wrap=24), Column("announced", decimal=False, wrap=10),
           Column("estimate", decimal=False, wrap=14), Column("verdict", text=True), Column("why", text=True)]


def _num(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v:
            return "n/a"
        return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"
    return str(v)


def _with_unit(v, unit: str) -> str:
    short = unit.split(" (")[0]
    return "n/a" if v is None else f"{_num(v)} {short}"


def _details(d: dict, indent: str = "    ") -> list[str]:
    """Details dict as text: scalars as `key: value`, lists of points as small tables."""
    lines = []
    for k, v in d.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            keys = [kk for kk in v[0] if not isinstance(v[0][kk], list)]

            def cell(x):
                if isinstance(x, dict):  # e.g. fabric tiers: the groups that cross a tier
                    return " ".join(f"{a}:{b}" for a, b in x.items() if b != "none") or "-"
                return _num(x)
            lines.append(f"{indent}{k}:")
            lines += _points(v, keys, cell, indent + "  ")
        elif isinstance(v, dict) and v and any(isinstance(x, dict) for x in v.values()):
            lines.append(f"{indent}{k}:")
            for kk, vv in v.items():
                if isinstance(vv, dict):
                    lines.append(f"{indent}  {kk}: " + ", ".join(f"{a}={_num(b) if not isinstance(b, dict) else b}"
                                                              for a, b in vv.items()))
                else:
                    lines.append(f"{indent}  {kk}: {_num(vv)}")
        elif isinstance(v, dict):
            lines.append(f"{indent}{k}: " + ", ".join(f"{a}={_num(b)}" for a, b in v.items()))
        elif isinstance(v, list):
            lines.append(f"{indent}{k}: " + ", ".join(_num(x) for x in v))
        else:
            lines.append(f"{indent}{k}: {_num(v)}")
    return lines


def _points(points: list[dict], keys: list[str], cell, indent: str) -> list[str]:
    """A list of points as a table: the numbers in columns, the text fields (a layout, the fabric tiers) on a
    line of their own under each point, so the table fits the width."""
    words = [kk for kk in keys if any(isinstance(x.get(kk), (str, dict)) for x in points)]
    numbers = [kk for kk in keys if kk not in words]
    columns = [Column(kk, decimal=False) for kk in numbers]
    rows = [[cell(x.get(kk)) for kk in numbers] for x in points]
    text = [" | ".join(cell(x.get(kk)) for kk in words) for x in points]
    if words:
        columns.append(Column(" | ".join(words), text=True, below=True))
        rows = [row + [t] for row, t in zip(rows, text)]
    lines = render(columns, rows, indent=indent)
    if max(len(line) for line in lines) <= width() or not numbers:
        return lines
    # too many columns for the width: one column per point, named by its first number, the text under it
    names = [row[0] for row in rows]
    lines = sideways(numbers[0], names, [(kk, [row[j] for row in rows]) for j, kk in enumerate(numbers) if j],
                     indent=indent)
    return lines + [f for n, t in zip(names, text) if words for f in fold(f"{indent}{numbers[0]} {n}: {t}")]


def _band_line(r) -> str:
    iv = r.interval
    held = "" if r.reading is None else f"; no figure announced, held to flopcast's reading {_num(r.reading)}"
    if iv.get("relative") is None:
        return f"  band: none ({iv['basis']})"
    span = ("" if iv.get("low") is None else f"interval {_num(iv['low'])} .. {_num(iv['high'])}, ")
    return (f"  band: {span}-{100 * iv['below']:.1f}% / +{100 * iv['above']:.1f}% of the estimate "
            f"({iv['basis']}){held}")


def report(result) -> str:
    """The text of a claims.ClaimsResult: the summary table, the verdict rules, then each claim's details."""
    rows = [[r.id, r.claim, _with_unit(r.claimed, r.unit), _with_unit(r.estimate, r.unit), r.verdict, r.why]
            for r in result.rows]
    out = ["flopcast claims: AWS's Trainium2 / Graviton4 announcement (re:Invent 2023) against flopcast's models"
           + (" (--quick: fewer sizes and models)" if result.quick else ""), ""]
    out += render(SUMMARY, rows)
    out += ["", "verdict rules:"] + [f"  - {rule}" for rule in result.rules]
    out += ["", "details", "======="]
    for r in result.rows:
        out += ["", f"[{r.id}] {r.claim}",
                f"  announced {_num(r.claimed)}, flopcast {_num(r.estimate)} ({r.unit}) -> {r.verdict}: {r.why}",
                _band_line(r), "  assumptions:"] + [f"    - {a}" for a in r.assumptions]
        out += ["  sources:"] + [f"    - {s}" for s in r.sources]
        out += ["  details:"] + _details({k: v for k, v in r.details.items() if k != "cases"})
        if "cases" in r.details:
            out += ["    cases: see --json (details.cases) or the series 'graviton_speedups'"]
    out += ["", f"computed in {result.elapsed_s:.1f} s"]
    return "\n".join(f for line in out for f in fold(line))


@click.command("claims")
@click.option("--json", "as_json", is_flag=True,
              help="Print {\"claims\": [...], \"series\": {...}} with unit-suffixed keys.")
@click.option("--quick", is_flag=True, help="Fewer cluster sizes, models and batches (a fast run).")
@calibration_option
@executor_options
@report_options
def claims(as_json, quick, calibration, engine, address, workers, html, png):
    """Test AWS's Trainium2 / Graviton4 announcement claims with flopcast's own models.

    One row per claim: the claim as announced, flopcast's estimate, the assumptions and sources behind it,
    and a verdict (consistent / optimistic / pessimistic / cannot tell) with why. Takes tens of seconds;
    a progress line per claim goes to stderr.
    """
    check_executor(engine, address)
    with Progress("checking the claims", unit="claims") as bar:
        out = api.claims(quick=quick, progress=bar.step, calibration=calibration, engine=engine, workers=workers,
                         address=address)
    result = out.result
    click.echo(to_json(out.to_dict()) if as_json else report(result))
    from ..report import figures  # the figures load matplotlib only when a report is asked for

    emit_report(html, png, lambda: figures.claims_report(result))

