"""The command line: a table of commands, loaded only when one runs, and the one-line error handling.

Each command lives in a module of this package (one per command family) that parses its options,
calls flopcast.api and renders; options shared by several commands are in `options.py`, output helpers
in `render.py`; neither imports a command, and no command imports this module. Adding a command is one
module here and one row in COMMANDS (as pip's `commands/__init__.py` does).
"""

from __future__ import annotations

import importlib
import io
import os
import sys

import click

from ..errors import FlopcastError, flag_names

# name -> (module in this package, attribute, one-line summary shown by `flopcast --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "train": ("train", "train", "One training configuration: step time, MFU, memory, cost."),
    "catalog": ("train", "catalog", "Models, chips and systems; one entry with its sources."),
    "search": ("plan", "search", "Every valid layout of a model on a cluster, ranked."),
    "plan": ("plan", "plan", "Size a cluster from a deadline, a budget, or a frontier."),
    "compare": ("plan", "compare", "Systems side by side: training, or serving (--serve)."),
    "infer": ("serving", "infer", "Latency, throughput and cost of one batch (roofline)."),
    "serve": ("serving", "serve", "Simulated serving: latency percentiles, SLOs, cost."),
    "deploy": ("deploy", "deploy", "The cheapest deployment per system at the SLOs (searched, simulated)."),
    "reliability": ("reliability", "reliability", "Time-to-train with failures, checkpoints and restarts."),
    "claims": ("claims", "claims", "AWS's Trainium2 / Graviton4 claims, checked."),
    "validate": ("validate", "validate", "Predictions against the measured runs of a CSV file."),
    "calibrate": ("validate", "calibrate", "Fit the efficiency parameters on measured runs."),
    "report": ("report", "report", "All figures of one scenario, as HTML or PNG files."),
    "sweep": ("sweep", "sweep", "A grid of scenarios (models x hardware what-ifs x sizes) as a table."),
    "ui": ("ui", "ui", "A local web page: forecasts, breakdowns, systems side by side."),
}


def flags(command: click.Command | None) -> dict:
    """{argument: (flag, negated flag or None)} of a command's options: micro_batch -> --micro-batch."""
    out = {}
    for p in getattr(command, "params", ()):
        if isinstance(p, click.Option):
            long = [o for o in p.opts if o.startswith("--")] or p.opts
            negated = [o for o in p.secondary_opts if o.startswith("--")]
            out[p.name] = (long[0], negated[0] if negated else None)
    return out


class LazyGroup(click.Group):
    """A group whose commands are imported from COMMANDS when they run (`--help` imports none)."""

    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except FlopcastError as exc:  # the API names its arguments (`tp=3`); say the flags (--tp 3)
            command = self.get_command(ctx, ctx.invoked_subcommand or "")
            raise FlopcastError(flag_names(str(exc), flags(command))) from None

    def format_commands(self, ctx, formatter):
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][2]) for name in self.list_commands(ctx)])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="flopcast")
def cli():
    """flopcast: forecast what training and serving large models costs on AI hardware.

    Start with `flopcast train` (the ~300B GPT on Trainium2 on its defaults),
    `flopcast catalog` (models, chips, systems) and `flopcast validate FILE.csv`.
    """


def _drop_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush of an unwritable stdout (a full
    disk, a closed pipe) fails silently (the recipe of the Python docs, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass  # stdout is not a file (captured in a test)


def _printable_stdout() -> None:
    """Undecodable bytes of a file name (Python's surrogate escapes) written as \\xff escapes where stdout's encoder
    is strict (a UTF-8 locale other than C.UTF-8), not a UnicodeEncodeError half-way through the output."""
    if getattr(sys.stdout, "errors", None) == "strict" and hasattr(sys.stdout, "reconfigure"):
        try:
            sys.stdout.reconfigure(errors="backslashreplace")
        except (ValueError, OSError, io.UnsupportedOperation):
            pass  # a stream that cannot change (captured in a test): its own encoder stays


def main(argv=None) -> int:
    """Entry point: one line on stderr and exit code 2 for bad input, never a traceback."""
    from .. import allocator

    allocator.tune()  # large arrays kept mapped between a search's slices (allocator.py)
    _printable_stdout()
    try:
        cli.main(args=argv, prog_name="flopcast", standalone_mode=False)
        sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
        return 0
    except OSError as exc:
        if exc.filename is None:  # stdout itself (files the commands write report their own errors)
            _drop_stdout()
            click.echo(f"error: cannot write the output: {exc.strerror or exc}", err=True)
            return 2
        click.echo(f"error: {exc.filename}: {exc.strerror or exc}", err=True)
        return 2
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
