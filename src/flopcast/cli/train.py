"""`flopcast train` and `flopcast catalog`: parse, call flopcast.api, render."""

from __future__ import annotations

import click

from ..limits import click_type
from .. import api, emit
from ..progress import Progress
from .options import (calibration_option, cuda_graphs_option, dispatcher_option, economics_options, layout_from,
                      layout_options, report_options)
from .render import echo_json, emit_report, to_json


def _figures():
    from ..report import figures  # the figures load matplotlib only when a report is asked for

    return figures


@click.command("train")
@click.argument("model", default=api.DEFAULT_MODEL)
@click.option("--hardware", "-H", default=api.DEFAULT_SYSTEM, show_default=True,
              help="System (e.g. trn2.48xlarge, p5.48xlarge, dgx-a100-80gb), a chip name, or a YAML/TOML file.")
@click.option("--chips", "-n", type=click_type("chips"),
              help="Chips in the job [default: 64 trn2.48xlarge instances = 1,024 chips, "
              "else one node].")
@layout_options
@cuda_graphs_option
@dispatcher_option
@click.option("--tokens", default=None, help="Training tokens (e.g. 6e12, 300B, 1.5T; 'chinchilla' = 20 per parameter) "
              "[default: chinchilla, as plan, compare, reliability and report].")
@click.option("--objective", type=click.Choice(["throughput", "cost", "energy"]), default="throughput",
              show_default=True, help="What the layout search optimises when a layout field is left out.")
@click.option("--emit", "framework", type=click.Choice(emit.frameworks()), default=None,
              help="Print the arguments or YAML that start the chosen layout in this framework (Megatron-LM, "
                   "Megatron-Bridge/NeMo, NxD Training, MaxText) instead of the report.")
@economics_options
@calibration_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@report_options
def train(model, hardware, chips, tokens, objective, framework, calibration, as_json, seq_len, html, png,
          price_per_hour, power_w, pue, cuda_graphs, dispatcher, **kw):
    """Forecast one training configuration: step time, throughput, MFU, memory, time and cost to train.

    Layout fields left out are chosen by flopcast's search (the fastest layout that fits).
    With no arguments: the ~300B dense GPT of AWS's announcement on 1,024 Trainium2 chips for
    20 tokens per parameter.
    """
    n_tokens = tokens or "chinchilla"  # 20 per parameter for every model, as plan, compare, reliability and report
    with Progress("searching layouts", enabled=not as_json) as bar:
        r = api.train(model, hardware, chips, tokens=n_tokens, seq_len=seq_len, objective=objective, progress=bar,
                      calibration=calibration, price_per_hour=price_per_hour, power_w=power_w, pue=pue,
                      cuda_graphs=cuda_graphs, dispatcher=dispatcher, **layout_from(kw))
    launch = r.launch(framework) if framework else None
    if as_json:
        echo_json({**r.to_dict(), "launch": launch.to_dict()} if launch else r.to_dict())
    elif launch:
        click.echo(launch.render(), nl=False)
    else:
        from ..report.text import train_report

        click.echo(train_report(r))
    emit_report(html, png, lambda: _figures().train_report(r))


@click.command("catalog")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def catalog(name, as_json):
    """List built-in models, chips and systems, or show one entry with the source of every number."""
    from ..report import catalog as show

    if name:
        click.echo(show.entry_text(name) if not as_json else to_json(show.entry_json(name)))
    else:
        click.echo(show.listing() if not as_json else to_json(show.listing_json()))
