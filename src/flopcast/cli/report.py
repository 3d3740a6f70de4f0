"""`flopcast report`: one HTML page (or a folder of PNGs) with flopcast's figures of a training scenario
and a serving deployment. Parses, then calls flopcast.report.figures.build_report."""

from __future__ import annotations

import click

from ..limits import click_type
from .. import api
from ..errors import FlopcastError
from ..progress import Progress
from ..report.figures import DEFAULT_SERVE_CHIPS, DEFAULT_SERVE_MODEL, DEFAULT_SERVE_SYSTEM, build_report
from .options import calibration_option, economics_options, layout_from, layout_options, report_options
from .render import emit_report


@click.command("report")
@click.argument("model", default=api.DEFAULT_MODEL)
@click.option("--hardware", "-H", default=api.DEFAULT_SYSTEM, show_default=True,
              help="Training system (e.g. trn2.48xlarge, p5.48xlarge) or a YAML/TOML file.")
@click.option("--chips", "-n", type=click_type("chips"),
              help="Chips of the training job [default: as `flopcast train`: "
              "1,024 on trn2.48xlarge, else one node]. Scaling curves span 1/8x to 8x of it.")
@click.option("--tokens", help="Training tokens (e.g. 300B, 1.5T); default 20 per parameter (Chinchilla).")
@click.option("--serve-model", default=DEFAULT_SERVE_MODEL, show_default=True, help="Model of the serving figures.")
@click.option("--serve-hardware", default=DEFAULT_SERVE_SYSTEM, show_default=True,
              help="System of the serving figures (e.g. trn2.48xlarge, inf2.48xlarge, p5.48xlarge, c8g.16xlarge).")
@click.option("--serve-chips", type=click_type("chips"), default=DEFAULT_SERVE_CHIPS, show_default=True,
              help="Chips of one serving replica (tensor parallel over them).")
@click.option("--requests", "n_requests", type=click_type("requests"), default=300, show_default=True,
              help="Simulated requests per request rate of the serving curve.")
@click.option("--sizes", help="Cluster sizes of the scaling, Pareto and goodput curves, chips, comma-separated "
              "(rounded up to whole nodes) [default: 1/8x to 8x --chips].")
@layout_options
@calibration_option
@economics_options
@report_options
def report(model, hardware, chips, tokens, serve_model, serve_hardware, serve_chips, n_requests, sizes, calibration,
           price_per_hour, power_w, pue, html, png, seq_len, **kw):
    """Write flopcast's figures of one scenario: scaling, breakdowns, pipeline schedule, Pareto front,
    serving latency/throughput, roofline and goodput.

    One self-contained HTML file (default flopcast-report.html; opens offline) and/or one PNG per
    figure (--png DIR). Needs matplotlib: pip install 'flopcast[report]'.
    """
    from ..report.plots import matplotlib_figure

    matplotlib_figure()  # fail fast, in one line, when matplotlib is missing
    if n_requests < 10:
        raise FlopcastError(f"--requests must be at least 10, got {n_requests}")
    if not html and not png:
        html = "flopcast-report.html"
    m = api.resolve_model(model, seq_len)
    n_tokens = api.args.tokens(tokens, m) if tokens else None
    scaling = None
    if sizes:  # each size is a search of its own: at most 16 of them (the default draws 7), whole numbers of chips
        scaling = api.args.chip_counts(sizes, "sizes", most=16)
    with Progress("drawing the report", unit="steps") as bar:

        def step(k: int, n: int, text: str) -> None:  # build_report names each step as it starts
            bar.total, bar.done = n, k - 1
            bar.note(text)

        emit_report(html, png, lambda: build_report(m, hardware, chips, tokens=n_tokens, serve_model=serve_model,
                                                    serve_hardware=serve_hardware, serve_chips=serve_chips,
                                                    requests=n_requests, scaling_chips=scaling,
                                                    layout=layout_from(kw), calibration=calibration, progress=step,
                                                    economics={"price_per_hour": price_per_hour, "power_w": power_w,
                                                               "pue": pue}))
        bar.update(bar.total - bar.done)
