"""The named validity rules a layout must pass, as boolean arrays (True = passes): the degrees and batches
(checked before the search expands them), the schedule, sequence parallelism and micro-batches after; the data
types a chip trains in; and their application, counting what each rule is the first to reject (_apply,
grid_verdicts on the search's candidate grid).
"""

from __future__ import annotations

import numpy as np

from ..errors import FlopcastError
from ..model.strategy import LayoutBatch, Recompute, Schedule, virtual_stages, virtual_stages_allowed
from ..model.system import Dtype, System
from ..model.workload import Model

# Megatron-Core's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split give the
# input embedding and the loss one layer's slot each in the pipeline split (megatron/core/transformer/
# transformer_block.py get_num_layers_to_build: num_layers + 1 for each), so pp x vp may reach layers + 2: the first
# virtual stage then holds the embedding alone and the last the loss (Llama 3.1 405B's 126 layers in pp 16 x vp 8)
PIPELINE_SLOTS_RULE = "pp x vp does not exceed the layers plus the embedding's and the loss's slots"
PIPELINE_EDGE_SLOTS = 2
EP_RULE = "ep is 1 for dense models and divides the experts; etp x ep divides tp x cp x dp"
ETP_RULE = "etp differs from tp only for MoE models, with sequence parallelism where tp > 1"


def base_rules(model: Model, system: System, tp, cp, pp, dp, gb, mb, ep, etp, chips: int | None,
                exact_chips: bool) -> dict:
    """The rules that depend on the degrees and batches only (checked before the expansion)."""
    used = tp * pp * dp * cp
    experts = model.moe.experts if model.moe else 1
    etp = np.where(etp > 0, etp, tp)
    out = {
        "tp divides the attention heads": (model.heads % tp == 0)
        & ((model.kv_heads % tp == 0) | (tp % model.kv_heads == 0)),
        "tp fits within one node": tp <= system.tp_domain,
        "global batch divides into dp x micro-batch": (gb % (dp * mb) == 0) & (gb >= dp * mb),
        "cp divides the sequence": model.seq_len % cp == 0,
        EP_RULE: np.where(model.moe is not None, (experts % ep == 0) & ((tp * cp * dp) % (ep * etp) == 0), ep == 1),
        "chips available": used <= (chips if chips else used),
    }
    if exact_chips and chips:
        out["tp x pp x dp x cp equals the chips"] = used == chips
    return out


def expanded_rules(model: Model, tp, pp, vp, schedule, sp, micro_batches=None, recompute=None, etp=None) -> dict:
    """The rules that involve the pipeline schedule, sequence parallelism and the micro-batches.

    micro_batches: a function returning the micro-batches per step (computed only where DualPipe is asked for)."""
    interleaved = schedule == Schedule.INTERLEAVED
    overlap = schedule == Schedule.ONE_F_ONE_B_OVERLAP
    dual = schedule == Schedule.DUALPIPE
    any_overlap, any_dual = bool(overlap.any()), bool(dual.any())  # (the search's hot path has neither for dense)
    if any_overlap:
        staged, allowed = pp * virtual_stages(schedule, vp), virtual_stages_allowed(schedule, vp, pp)
    else:
        staged, allowed = pp * np.where(interleaved, vp, 1), np.where(interleaved, (vp > 1) & (pp > 1), vp == 1)
    everywhere = np.ones(np.shape(schedule), dtype=bool)
    dual_ok = everywhere
    if any_dual:
        m = micro_batches() if micro_batches is not None else None
        dual_ok = ~dual | ((pp % 2 == 0) & (pp > 1) & (m is None or ((m % 2 == 0) & (m >= 2 * pp))))
    out = {
        PIPELINE_SLOTS_RULE: staged <= model.layers + PIPELINE_EDGE_SLOTS,
        "vp > 1 only with the interleaved schedule, which needs pp > 1": allowed,
        "sequence parallel needs tp > 1": (sp == 0) | (tp > 1),
        # without sequence parallelism the tp ranks hold the same tokens, which only experts split like the
        # attention can share (Megatron-Core asserts sequence parallelism for expert parallelism with tp > 1)
        ETP_RULE: everywhere if etp is None else ((etp == 0) | (etp == tp)
                                                 | ((model.moe is not None) & ((sp == 1) | (tp == 1)))),
        # DualPipe feeds micro-batches from both ends: an even pp and at least 2 pp micro-batches, an even number
        # (deepseek-ai/DualPipe: num_chunks % 2 == 0 and num_chunks >= num_ranks * 2, num_ranks even)
        "dualpipe needs an even pp > 1 and an even number of at least 2 pp micro-batches": dual_ok,
    }
    if recompute is not None:
        # Megatron-Core's combined 1F1B does not run with full activation recomputation (its developer guide,
        # "Combined 1F1B: Expert-Parallel All-to-All Overlap", compatibility)
        out["1f1b-overlap does not run with full recomputation"] = (
            ~overlap | (recompute != Recompute.FULL) if any_overlap else everywhere)
    return out


def micro_batches_of(lb: LayoutBatch):
    return lambda: lb.global_batch // np.maximum(lb.dp * lb.micro_batch, 1)


def rules(model: Model, system: System, lb: LayoutBatch, chips: int | None, *, exact_chips: bool) -> dict:
    """Named validity rules, each a boolean array (True = passes), in the order they are applied."""
    out = base_rules(model, system, lb.tp, lb.cp, lb.pp, lb.dp, lb.global_batch, lb.micro_batch, lb.ep, lb.etp,
                      chips, exact_chips)
    out.update(expanded_rules(model, lb.tp, lb.pp, lb.vp, lb.schedule, lb.sequence_parallel, micro_batches_of(lb),
                               lb.recompute, lb.etp))
    return out


def _apply(named: dict, ok: np.ndarray, rejected: dict, weight: int = 1) -> np.ndarray:
    """AND the rules into `ok`, counting for each the candidates it is the first to reject."""
    for name, passed in named.items():
        newly = ok & ~passed
        n = int(np.count_nonzero(newly))
        if n:
            rejected[name] = rejected.get(name, 0) + n * weight
        ok &= passed
    return ok


# Chip families with a published int8 training recipe: Accurate Quantized Training (AQT) runs the forward and
# backward GEMMs in int8 on TPUs (Google Cloud blog, "Accurate Quantized Training (AQT) for TPU v5e", 2023;
# MaxText `quantization=int8`); GPU frameworks publish no int8 training path.
INT8_TRAINING_FAMILIES = frozenset({"tpu"})


def training_dtype_problem(chip, dtype: Dtype) -> str | None:
    """Why `chip` cannot train in `dtype`, or None. FP8, NVFP4 and MXFP4 need their units (a published peak of
    that type; no BF16 fallback for training); int8 trains only where AQT does (TPUs with int8 MXUs)."""
    if dtype == Dtype.INT8:
        if chip.family not in INT8_TRAINING_FAMILIES:
            return f"int8 training (AQT) is published for TPUs only; {chip.id} serves int8 but does not train in it"
        if Dtype.INT8 not in chip.peak_flops:
            return f"{chip.id} has no published int8 peak"
    if dtype in (Dtype.FP8, Dtype.NVFP4, Dtype.MXFP4) and dtype not in chip.peak_flops:
        return f"{chip.id} has no {dtype.label.upper()} units (the catalog gives no {dtype.label} peak)"
    try:
        chip.peak(dtype)
    except FlopcastError:
        return f"{chip.id} has no published {dtype.label} peak"
    return None


def grid_verdicts(model, system, rows, pair_arr, axes, rejected: dict, dtypes: dict | None = None) -> np.ndarray:
    """The flat indices (in C order) of the candidates of the grid rows x pairs x recompute x sharding x sp x dtype
    (axes: the recompute, sharding, sp and dtype values) that pass the expanded rules and train in their dtype on
    the chip; what each rule is the first to reject counted into `rejected`, and each dtype's candidates that pass
    the rules into `dtypes` (when given).

    A rule reads some of the grid's axes only (the rows, pairs, recompute, sp; never sharding or dtype): the rules
    are judged on the axes they read, each verdict standing for the candidates along the others (counted with
    their number: _apply's weight), and the grid built once, for the candidates that pass."""
    on = lambda v, axis: v.reshape([-1 if i == axis else 1 for i in range(6)])  # noqa: E731
    shape = (len(rows), len(pair_arr), *map(len, axes))
    m = on(rows[:, 4] // np.maximum(rows[:, 3] * rows[:, 5], 1), 0)  # micro_batches_of
    named = expanded_rules(model, on(rows[:, 0], 0), on(rows[:, 2], 0), on(pair_arr[:, 0], 1), on(pair_arr[:, 1], 1),
                           on(axes[2], 4), lambda m=m: m, on(axes[0], 2), on(rows[:, 7], 0))
    read = np.broadcast_shapes(shape[:1] + (1,) * 5, *(np.shape(v) for v in named.values()))
    if len(read) != 6 or read[5] != 1:  # (a rule reading the dtype: judged on the whole grid)
        read = shape
    size, judged = int(np.prod(shape)), int(np.prod(read))
    ok = _apply(named, np.ones(read, dtype=bool), rejected, size // judged)
    dts = axes[3]
    trains = np.ones(len(dts), dtype=bool)
    per_dtype = size // judged // len(dts) if read[5] == 1 else None  # candidates a verdict stands for, per dtype
    for d in np.unique(dts):
        at = dts == d
        if dtypes is not None:
            n = (int(np.count_nonzero(ok)) * per_dtype * int(np.count_nonzero(at)) if per_dtype is not None
                 else int(np.count_nonzero(ok[..., at])))
            dtypes[int(d)] = dtypes.get(int(d), 0) + n
        if training_dtype_problem(system.chip, Dtype(int(d))):
            trains &= ~at
    return np.flatnonzero(np.broadcast_to(ok, shape) & trains.reshape(1, 1, 1, 1, 1, -1))
