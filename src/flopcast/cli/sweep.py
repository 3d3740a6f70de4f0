"""`flopcast sweep FILE --out F.parquet|F.csv`: a grid of training scenarios (docs/sweep.md), as a table."""

from __future__ import annotations

from pathlib import Path

import click

from .. import api
from ..errors import FlopcastError
from ..progress import Progress
from ..units import fmt_duration
from .options import check_executor, output_path
from .render import echo_json


@click.command("sweep")
@click.argument("file")
@click.option("--out", "-o", required=True, callback=output_path,
              help="The results table: FILE.parquet (pyarrow) or FILE.csv.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="local: a process pool on this machine; ray: Ray tasks on a Ray cluster.")
@click.option("--address", default=None, help="The Ray cluster (e.g. auto, ray://HOST:10001); none starts a local one.")
@click.option("--workers", type=click.IntRange(min=1, max=4096), default=None,
              help="Processes (local) or CPUs of a local Ray cluster; default: this machine's cores.")
@click.option("--resume/--no-resume", default=True, show_default=True,
              help="Skip the scenarios already in --out (a failed one runs again).")
@click.option("--html", "html", default=None, callback=output_path,
              help="Also write an HTML report: sensitivity, heatmaps, Pareto fronts.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's summary as JSON.")
def sweep(file, out, engine, address, workers, resume, html, as_json):
    """Run every scenario of a sweep FILE (models x systems x what-ifs x chips x tokens) and write one row each."""
    if html is not None and not str(html).strip():
        raise FlopcastError("--html needs a file name, e.g. --html sweep.html")
    check_executor(engine, address)
    with Progress("sweep", unit="scenarios", enabled=not as_json) as bar:
        run = api.sweep(file, out, engine=engine, workers=workers, address=address, resume=resume, progress=bar)
    if html:
        from ..sweep import figures  # matplotlib only when a report is asked for

        path = figures.report(run).write_html(html)
    if as_json:
        echo_json({**run.to_dict(), "html": str(path) if html else None})
        return
    counts = ", ".join(f"{v:,} {k}" for k, v in run.counts.items()) or "no rows"
    rate = f", {run.scenarios_per_s:,.1f} scenarios/s" if run.ran and run.seconds > 0 else ""
    click.echo(f"sweep {run.sweep.name}: {len(run.sweep.scenarios):,} scenarios, {run.ran:,} run now "
               f"({run.engine}, {run.workers} workers, {fmt_duration(run.seconds)}{rate}), {run.skipped:,} "
               f"already in {Path(out).name}")
    click.echo(f"  {counts}")
    click.echo(f"  wrote {run.out}" + (f" and {path}" if html else ""))
