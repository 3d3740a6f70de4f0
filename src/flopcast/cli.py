"""Command line: parse arguments, call the API, render. No formulas here."""

from __future__ import annotations

import json
import math
import sys

import click

from . import api
from .errors import FlopcastError
from .cli_options import layout_options
from .cli_options import layout_from as _layout
from .progress import Progress
from .report.html import emit_report, report_options
from .units import parse_count


def _json(obj) -> str:
    def default(o):
        if hasattr(o, "item"):
            return o.item()
        return str(o)

    def clean(o):
        if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
            return None
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    return json.dumps(clean(obj), indent=2, default=default)


def _tokens(text: str | None, model) -> float | None:
    if text is None:
        return None
    if text.strip().lower() in ("chinchilla", "20x", "auto"):
        return api.default_tokens(api.resolve_model(model))
    try:
        return parse_count(text)
    except ValueError:
        raise FlopcastError(f"--tokens {text!r} is not a number; write e.g. 6e12, 300B or 1.5T") from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="flopcast")
def cli():
    """flopcast: forecast what training and serving large models costs on AI hardware.

    Start with `flopcast train` (the ~300B GPT on Trainium2 on its defaults),
    `flopcast catalog` (models, chips, systems) and `flopcast validate FILE.csv`.
    """


@cli.command()
@click.argument("model", default=api.DEFAULT_MODEL)
@click.option("--hardware", "-H", default=api.DEFAULT_SYSTEM, show_default=True,
              help="System (e.g. trn2.48xlarge, p5.48xlarge, dgx-a100-80gb), a chip name, or a YAML/TOML file.")
@click.option("--chips", "-n", type=int, help="Chips in the job [default: 64 trn2.48xlarge instances = 1,024 chips, "
              "else one node].")
@layout_options
@click.option("--tokens", help="Training tokens (e.g. 6e12, 300B, 1.5T; 'chinchilla' = 20 per parameter). "
              "Default on the built-in scenario: 20 per parameter.")
@click.option("--objective", type=click.Choice(["throughput", "cost", "energy"]), default="throughput",
              show_default=True, help="What the layout search optimises when a layout field is left out.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@report_options
def train(model, hardware, chips, tokens, objective, as_json, seq_len, html, png, **kw):
    """Forecast one training configuration: step time, throughput, MFU, memory, time and cost to train.

    Layout fields left out are chosen by flopcast's search (the fastest layout that fits).
    With no arguments: the ~300B dense GPT of AWS's announcement on 1,024 Trainium2 chips for
    20 tokens per parameter.
    """
    default_scenario = tokens is None and model == api.DEFAULT_MODEL and hardware == api.DEFAULT_SYSTEM
    n_tokens = _tokens(tokens, model) if tokens else (api.default_tokens(api.resolve_model(model)) if default_scenario else None)
    with Progress("searching layouts", enabled=not as_json) as bar:
        r = api.train(model, hardware, chips, tokens=n_tokens, seq_len=seq_len, objective=objective, progress=bar,
                      **_layout(kw))
    if as_json:
        click.echo(_json(r.to_dict()))
    else:
        from .report.text import train_report

        click.echo(train_report(r))
    from . import cli_report

    emit_report(html, png, lambda: cli_report.train_report(r))


@cli.command("catalog")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def catalog_cmd(name, as_json):
    """List built-in models, chips and systems, or show one entry with the source of every number."""
    from .catalog import show

    if name:
        click.echo(show.entry_text(name) if not as_json else _json(show.entry_json(name)))
    else:
        click.echo(show.listing() if not as_json else _json(show.listing_json()))


def _register_commands():
    """Commands that live in their own modules (imported last: they use this module's helpers)."""
    from . import cli_claims, cli_plan, cli_reliability, cli_report, cli_serving, cli_validate

    for module in (cli_plan, cli_validate, cli_serving, cli_reliability, cli_claims, cli_report):
        for command in module.COMMANDS:
            cli.add_command(command)


_register_commands()


def main(argv=None) -> int:
    """Entry point: one line on stderr and exit code 2 for bad input, never a traceback."""
    try:
        cli.main(args=argv, prog_name="flopcast", standalone_mode=False)
    except FlopcastError as exc:
        click.echo(f"error: {exc}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.UsageError as exc:
        msg = exc.format_message()
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
        click.echo(f"error: {msg}{hint}", err=True)
        return 2
    except click.ClickException as exc:
        click.echo(f"error: {exc.format_message()}", err=True)
        return exc.exit_code or 1
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
