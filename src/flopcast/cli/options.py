"""Click options and argument parsers shared by several commands. Imports no command module."""

from __future__ import annotations

import click

from ..errors import FlopcastError
from ..units import parse_count, parse_duration


def layout_options(f):
    opts = [
        click.option("--tp", type=int, help="Tensor-parallel degree (chips; within a node)."),
        click.option("--pp", type=int, help="Pipeline-parallel degree (stages)."),
        click.option("--dp", type=int, help="Data-parallel degree (derived from chips when omitted)."),
        click.option("--cp", type=int, help="Context-parallel degree (ring attention)."),
        click.option("--ep", type=int, help="Expert-parallel degree (MoE models)."),
        click.option("--vp", type=int, help="Virtual pipeline stages per rank (interleaved schedule)."),
        click.option("--micro-batch", type=int, help="Sequences per micro-batch."),
        click.option("--global-batch", type=int, help="Sequences per optimizer step."),
        click.option("--seq-len", type=int, help="Training sequence length (default: the model's)."),
        click.option("--recompute", type=click.Choice(["none", "selective", "full"]), help="Activation recomputation."),
        click.option("--sharding", type=click.Choice(["none", "zero1", "zero2", "zero3", "fsdp"]),
                     help="Optimizer/gradient/weight sharding over data parallel (ZeRO stage; fsdp = zero3)."),
        click.option("--sequence-parallel/--no-sequence-parallel", default=None,
                     help="Megatron sequence parallelism (needs tp > 1)."),
        click.option("--dtype", type=click.Choice(["fp32", "tf32", "bf16", "fp16", "fp8", "cfp8", "int8", "nvfp4",
                                                   "mxfp4"]),
                     help="Compute data type (fp8, int8, nvfp4, mxfp4: GEMMs in that format, BF16 elsewhere; "
                          "cfp8 = Trainium's configurable FP8; int8 = AQT on TPUs)."),
        click.option("--schedule", type=click.Choice(["1f1b", "interleaved", "gpipe"]), help="Pipeline schedule."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


LAYOUT_KEYS = ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch", "recompute", "sharding",
               "sequence_parallel", "dtype", "schedule")


def layout_from(kw: dict) -> dict:
    """The layout fields the user gave, from a command's keyword arguments."""
    return {k: kw[k] for k in LAYOUT_KEYS if kw.get(k) is not None}


def report_options(f):
    """Add `--html FILE` and `--png DIR` to a click command (parameters `html` and `png`)."""
    f = click.option("--png", "png", type=click.Path(file_okay=False), default=None,
                     help="Also write each figure as a PNG (about 110 dpi) into this directory (needs matplotlib).")(f)
    f = click.option("--html", "html", type=click.Path(dir_okay=False), default=None,
                     help="Also write a self-contained HTML report with the figures to this file (needs matplotlib).")(f)
    return f


def tokens(text: str | None, model) -> float | None:
    """--tokens: a count (6e12, 300B, 1.5T) or 'chinchilla' (20 per parameter of `model`, a name or Model)."""
    if text is None:
        return None
    from .. import api

    if text.strip().lower() in ("chinchilla", "20x", "auto"):
        return api.default_tokens(api.resolve_model(model))
    try:
        return parse_count(text)
    except ValueError:
        raise FlopcastError(f"--tokens {text!r} is not a number; write e.g. 6e12, 300B or 1.5T") from None


def seconds(text: str, option: str) -> float:
    """A positive duration such as 1s, 500ms or 2min, in seconds; a one-line error naming `option`."""
    t = text.strip().lower().replace(" ", "")
    try:
        if t.endswith("ms"):
            v = float(t[:-2]) / 1e3
        elif t.endswith("us"):
            v = float(t[:-2]) / 1e6
        else:
            v = parse_duration(t)
    except ValueError:
        raise FlopcastError(f"{option} {text!r} is not a duration; write e.g. 1s, 500ms, 50ms") from None
    if v <= 0:
        raise FlopcastError(f"{option} must be positive, got {text!r}")
    return v
