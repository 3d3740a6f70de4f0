"""Click options shared by several commands (layout, --html/--png). Imports no command module."""

from __future__ import annotations

import click

from ..errors import FlopcastError
from ..limits import check_output, click_type


def layout_options(f):
    opts = [
        click.option("--tp", type=click_type("tp"), help="Tensor-parallel degree (chips; within a node)."),
        click.option("--pp", type=click_type("pp"), help="Pipeline-parallel degree (stages)."),
        click.option("--dp", type=click_type("dp"), help="Data-parallel degree (derived from chips when omitted)."),
        click.option("--cp", type=click_type("cp"), help="Context-parallel degree (ring attention)."),
        click.option("--ep", type=click_type("ep"), help="Expert-parallel degree (MoE models)."),
        click.option("--etp", type=click_type("etp"),
                     help="Expert tensor-parallel degree (MoE models; Megatron-Core --expert-tensor-parallel-size): "
                          "1 folds ep over the tp ranks [default: searched among tp and 1]."),
        click.option("--vp", type=click_type("vp"), help="Virtual pipeline stages per rank (interleaved schedule)."),
        click.option("--micro-batch", type=click_type("micro_batch"), help="Sequences per micro-batch."),
        click.option("--global-batch", type=click_type("global_batch"), help="Sequences per optimizer step."),
        click.option("--seq-len", type=click_type("seq_len"), help="Training sequence length (default: the model's)."),
        click.option("--recompute", type=click.Choice(["none", "selective", "full", "mlp", "op", "qkv_context",
                                                     "qkv"]),
                     help="Activation recomputation (mlp: the MLP recomputed, attention's activations kept; op: "
                          "torchtitan's per-operator policy, every second matmul recomputed; qkv_context: the "
                          "layer input, Q, K, V and attention's output kept, the rest recomputed, MaxText's "
                          "remat_policy custom; qkv: the layer input, Q, K and V kept, attention recomputed too)."),
        click.option("--sharding", type=click.Choice(["none", "zero1", "zero2", "zero3", "fsdp"]),
                     help="Optimizer/gradient/weight sharding over data parallel (ZeRO stage; fsdp = zero3)."),
        click.option("--sequence-parallel/--no-sequence-parallel", default=None,
                     help="Megatron sequence parallelism (needs tp > 1)."),
        click.option("--dtype", type=click.Choice(["fp32", "tf32", "bf16", "fp16", "fp8", "cfp8", "int8", "nvfp4",
                                                   "mxfp4"]),
                     help="Compute data type (fp8, int8, nvfp4, mxfp4: GEMMs in that format, BF16 elsewhere; "
                          "cfp8 = Trainium's configurable FP8; int8 = AQT on TPUs)."),
        click.option("--schedule", type=click.Choice(["1f1b", "interleaved", "gpipe", "dualpipe", "1f1b-overlap"]),
                     help="Pipeline schedule."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def dispatcher_option(f):
    """`--dispatcher alltoall|flex`: the MoE token dispatcher the run uses."""
    return click.option(
        "--dispatcher", "dispatcher", type=click.Choice(["alltoall", "flex"]), default=None,
        help="MoE token dispatcher: alltoall (Megatron-Core's default: each token copied once per routed expert "
             "and sent by NCCL), flex (DeepEP/HybridEP: each token sent once per destination rank) "
             "[default: alltoall].")(f)


def cuda_graphs_option(f):
    """`--cuda-graphs none|partial|full`: how much of an MoE layer's host work the run replays from captured graphs."""
    return click.option(
        "--cuda-graphs", "cuda_graphs", type=click.Choice(["none", "partial", "full"]), default=None,
        help="CUDA-graph capture of MoE layers: none (eager, every operator issued from the host), partial (the "
             "router and dispatch preprocessing captured: Megatron-Core --cuda-graph-scope moe_router "
             "moe_preprocess), full (the whole step one compiled program) [default: the framework's for the chip: "
             "full on TPU and Trainium (XLA, Neuron), none on GPUs (Megatron-Core's default)].")(f)


LAYOUT_KEYS = ("tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch", "global_batch", "recompute", "sharding",
               "sequence_parallel", "dtype", "schedule")


def layout_from(kw: dict) -> dict:
    """The layout fields the user gave, from a command's keyword arguments."""
    return {k: kw[k] for k in LAYOUT_KEYS if kw.get(k) is not None}


def _named_path(ctx, param, value):
    """An empty --html or --png is an error, not silently no report; so is a pipe nothing reads (a hang)."""
    if value is not None and not str(value).strip():
        raise FlopcastError(f"{param.opts[0]} needs a path; valid: a file name such as report.html (or leave it out)")
    return output_path(ctx, param, value)


def output_path(ctx, param, value):
    """An output option's path, checked before any work: not a pipe that no process reads (a hang)."""
    if value is not None:
        check_output(value, param.opts[0])
    return value


def report_options(f):
    """Add `--html FILE` and `--png DIR` to a click command (parameters `html` and `png`)."""
    f = click.option("--png", "png", type=click.Path(file_okay=False), default=None, callback=_named_path,
                     help="Also write each figure as a PNG (about 110 dpi) into this directory (needs matplotlib).")(f)
    f = click.option("--html", "html", type=click.Path(dir_okay=False), default=None, callback=_named_path,
                     help="Also write a self-contained HTML report with the figures to this file "
                          "(needs matplotlib).")(f)
    return f


def calibration_option(f):
    """`--calibration FILE`: a file `flopcast calibrate --out` wrote, read instead of the shipped calibration."""
    return click.option("--calibration", "calibration", type=click.Path(dir_okay=False), default=None,
                        help="Calibration file to predict with (what `flopcast calibrate --out FILE` writes) "
                             "instead of the one flopcast ships.")(f)


def csv_option(f):
    """`--csv FILE`: the command's table as CSV, its columns the JSON keys of each row ('/' joins nested keys)."""
    return click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None, callback=output_path,
                        help="Also write the table as CSV to this file; the columns are the JSON keys of each row "
                             "(nested keys joined with '/').")(f)


def economics_options(f):
    """`--price USD/h`, `--power W` and `--pue`: replace the catalog's price, chip power and PUE."""
    f = click.option("--pue", type=click_type("pue"), default=None,
                     help="Power usage effectiveness, 1 to 5 (default: the operator's published figure, e.g. AWS "
                          "1.15).")(f)
    f = click.option("--power", "power_w", type=click_type("power_w"), default=None,
                     help="Chip power in watts, replacing the catalog's "
                          "(energy = chips + hosts and network, x PUE).")(f)
    f = click.option("--price", "price_per_hour", type=click_type("price_per_hour"), default=None,
                     help="Price of one instance (node) per hour in USD, replacing the catalog's.")(f)
    return f


def check_executor(engine: str, address: str | None) -> None:
    """--address names a Ray cluster: only with --engine ray."""
    if address is not None and engine != "ray":
        raise FlopcastError("--address is for --engine ray")


def executor_options(f):
    """--engine, --address, --workers: where a command's independent pieces run (sweep/executors.py)."""
    f = click.option("--workers", type=click.IntRange(min=1, max=4096), default=1, show_default=True,
                     help="Processes (or Ray tasks) for the independent pieces; 1 computes here.")(f)
    f = click.option("--address", default=None,
                     help="The Ray cluster (e.g. auto, ray://HOST:10001); none starts a local one.")(f)
    return click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                        help="local: this machine's processes; ray: Ray tasks.")(f)

