"""One training step, for one layout or a million: the same numpy code.

`evaluate` takes a LayoutBatch (numpy arrays) and returns arrays; the scalar path
(`flopcast.train`) calls it with a batch of one. Every formula it uses lives in
flopcast.cost; this module only composes them into a step:

    step = m * t_stage_max + bubble + exposed pp/dp communication + optimizer + overhead
    bubble = (p - 1) / v * t_stage_max      (Narayanan et al. 2021, sec. 2.2; v = 1 for 1F1B and GPipe)

with t_stage the time one pipeline stage spends on one micro-batch (forward, backward, recomputation,
exposed tensor/context/expert-parallel communication; `flopcast.simulate.layer`). DualPipe and combined
1F1B run a forward and a backward of two micro-batches together so the expert-parallel all-to-all of one
hides behind the other's compute (`flopcast.cost.pipeline`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cost import comm, compute, memory, params, pipeline
from ..cost.comm import Collective
from ..model.efficiency import Calibration
from ..model.strategy import MODERN_SOFTWARE, LayoutBatch, Recompute, Schedule, Sharding, Software, virtual_stages
from ..model.system import System
from ..model.workload import Model
from .flops import model_flops_per_token, recompute_flops_per_token
from .layer import Layer, gemm_kwargs, layer_times
from .peaks import GEMM_BYTES, QUANTIZED_CODES, peaks

GRAD_COMM_BYTES = 4  # gradients reduced in fp32 (Megatron-LM: accumulate_allreduce_grads_in_fp32 with bf16)
FSDP_COMM_BYTES = 2  # FSDP gathers and reduces 16-bit shards (PyTorch FSDP mixed precision, param/reduce bf16)
FP8_GATHER_BYTES = 1  # FSDP2's float8 all-gather sends the float8 weight (torchao/float8/fsdp_utils.py)
OPTIMIZER_BYTES_PER_PARAM = 30  # Adam step reads fp32 master, grad, m, v (16 B), writes master, m, v, bf16 copy (14 B)
# The layout fields a layer's times depend on (everything `layer_times` reads through `x`).
LAYER_FIELDS = ("tp", "cp", "ep", "etp", "micro_batch", "sequence_parallel", "dtype")
# The layout fields the data-parallel collectives depend on (parameters per stage and the groups).
DP_FIELDS = ("tp", "pp", "dp", "cp", "ep", "etp", "vp", "schedule")


def _distinct(lb: LayoutBatch, fields, dedupe: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(index of the first layout of each distinct combination of `fields`, map from layouts to those).

    dedupe=False: every layout is its own combination (identity maps)."""
    if not dedupe:
        return np.arange(lb.size), np.arange(lb.size)
    cols = [np.asarray(getattr(lb, f), dtype=np.int64) for f in fields]  # (no copy of an int64 field)
    key = np.zeros(lb.size, dtype=np.int64)
    radix = 1
    for c in cols:
        top = int(c.max(initial=0)) + 1
        if c.min(initial=0) < 0 or radix * top >= 2**62:  # cannot pack into one integer: compare rows
            _, first, inverse = np.unique(np.stack(cols, axis=1), axis=0, return_index=True, return_inverse=True)
            return first, inverse.reshape(-1)
        key = key * top + c
        radix *= top
    if radix <= 4 * lb.size + (1 << 16):  # few possible keys: counted, not sorted (np.unique's answer, 10-20x sooner)
        present = np.bincount(key, minlength=radix) > 0
        at = np.full(radix, lb.size, dtype=np.int64)
        np.minimum.at(at, key, np.arange(lb.size, dtype=np.int64))  # each key's first layout
        return at[present], (np.cumsum(present) - 1)[key]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse


@dataclass(frozen=True)
class _Ctx:
    """What every step of `evaluate` reads: the inputs and the layouts' numbers as float arrays."""

    model: Model
    system: System
    cal: Calibration
    software: Software
    lb: LayoutBatch
    f: dict  # tp, pp, dp, cp, ep, etp (resolved), vp, micro_batch, global_batch as floats
    x: dict  # the per-layout inputs of the layer times
    m: np.ndarray  # micro-batches per step
    v: np.ndarray  # virtual stages the schedule runs
    first: np.ndarray  # layouts with distinct LAYER_FIELDS
    inverse: np.ndarray
    dedupe: bool

    def spread(self, a):
        if not self.dedupe:  # every layout its own combination: the values as they are (no copy through inverse)
            return np.broadcast_to(a, self.first.shape)
        return np.broadcast_to(a, self.first.shape)[self.inverse]

    def distinct(self, x: dict) -> dict:
        """x at the first layout of each distinct combination (x itself where every layout is its own)."""
        return {k: v[self.first] for k, v in x.items()} if self.dedupe else x

    @property
    def full_rec(self):
        return self.lb.recompute == Recompute.FULL


def _context(model, system, lb, cal, software, dedupe) -> _Ctx:
    fam = cal.for_chip(system.chip)
    f = {k: getattr(lb, k).astype(float) for k in ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch")}
    f["etp"] = lb.expert_tp.astype(float)
    tp, dtype = f["tp"], lb.dtype
    peak_nominal, peak_gemm, peak_attn = peaks(system.chip, dtype)
    # fp8: GEMMs in any narrow format (FP8, INT8, NVFP4, MXFP4); every one takes the family's fitted
    # low-precision (FP8) GEMM efficiency, no FP4 or INT8 training run being in the calibration data
    quantized = np.isin(dtype, QUANTIZED_CODES)
    x = dict(tp=tp, cp=f["cp"], ep=f["ep"], etp=f["etp"], b=f["micro_batch"],
             sp=lb.sequence_parallel.astype(bool) & (tp > 1),
             T=f["micro_batch"] * model.seq_len / f["cp"], peak_gemm=peak_gemm, peak_attn=peak_attn,
             peak_nominal=peak_nominal, gemm_eff=np.where(quantized, fam.gemm_fp8, fam.gemm), fp8=quantized,
             operand_bytes=GEMM_BYTES[dtype])
    # Layer times depend on LAYER_FIELDS only, which a search repeats over many layouts: compute them
    # once per distinct combination and spread them back (the same numbers, far fewer operations).
    # FSDP2's float8 all-gather casts the weights on the shard: the layer's weight casts shrink with the FSDP degree
    x["fsdp"] = np.where(lb.sharding == Sharding.ZERO3, f["dp"] * f["cp"], 1.0)
    first, inverse = _distinct(lb, LAYER_FIELDS + (("dp", "sharding") if software.fp8_allgather else ()), dedupe)
    m = f["global_batch"] / (f["dp"] * f["micro_batch"])
    return _Ctx(model, system, cal, software, lb, f, x, m, virtual_stages(lb.schedule, f["vp"]), first, inverse,
                dedupe)


def _layer_kinds(c: _Ctx) -> list[tuple[float, bool, Layer]]:
    """(layers of this kind, MoE?, its times) for each kind of layer the model has."""
    xu = c.distinct(c.x)
    kinds = []
    for n, moe_layer, sliding in _kinds(c.model):
        layer = layer_times(c.model, c.system, c.cal, xu, moe_layer, sliding, c.software)
        kinds.append((n, moe_layer, Layer(**{k: c.spread(v) for k, v in layer.__dict__.items()})))
    return kinds


def _kinds(model: Model) -> list[tuple[float, bool, bool]]:
    """(layers of this kind, MoE?, sliding-window?) for each kind of layer the model has."""
    out = []
    for moe_layer, count in ((False, model.dense_layers), (True, model.moe_layers)):
        for sliding, share in ((False, 1.0 - model.sliding_share), (True, model.sliding_share)):
            if count and share > 0:
                out.append((count * share, moe_layer, sliding))
    return out


def _edges(c: _Ctx, kinds, ep_exposed: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(first stage's embedding lookup, last stage's logits GEMM, fp32 cross-entropy and the multi-token-
    prediction modules: each one more layer, its 2h -> h projection and its own logits and loss).
    ep_exposed=False leaves the modules' all-to-all out (a lower bound whatever the schedule hides of it)."""
    model, chip, h = c.model, c.system.chip, c.model.hidden
    fam = c.cal.for_chip(chip)
    xu = c.distinct(c.x)
    kw = gemm_kwargs(chip, fam, xu)
    lg_f, lg_b, _ = (c.spread(a) for a in compute.gemm_fwd_bwd_time(xu["T"], model.vocab / xu["tp"], h, **kw))
    T, tp = c.x["T"], c.f["tp"]
    ce = compute.memory_time(3 * 4.0 * T * model.vocab / tp, bandwidth=chip.memory_bandwidth,
                             memory_efficiency=fam.memory)
    t_logits = lg_f + lg_b + 3 * ce
    t_embed = compute.memory_time(3 * T * h * memory.ACT_BYTES, bandwidth=chip.memory_bandwidth,
                                  memory_efficiency=fam.memory)
    if model.mtp_layers:
        pj_f, pj_b, _ = (c.spread(a) for a in compute.gemm_fwd_bwd_time(xu["T"], h / xu["tp"], 2 * h, **kw))
        block = [l for _, is_moe, l in kinds if is_moe == (model.moe_layers > 0)][0]
        # its all-to-all exposed as the layers' are: in full, but in the share of micro-batches an overlapping
        # schedule pairs with another's backward (`_layer_time`; the SMs it takes there are left out)
        unpaired = 1.0 - pipeline.paired_share(c.lb.schedule, c.f["pp"], c.m) if ep_exposed else 0.0
        block_t = block.fwd + block.bwd + block.tp_comm * (1.0 - c.cal.tp_overlap) + block.ep_comm * unpaired
        t_logits = t_logits * (1 + model.mtp_layers) + model.mtp_layers * (pj_f + pj_b + block_t)
    return t_embed, t_logits


def _per_layer(kinds, L, attr):
    return sum(n * getattr(l, attr) for n, _, l in kinds) / L


def _layer_time(c: _Ctx, kinds) -> dict:
    """Per layer (averaged over the kinds) per micro-batch: compute, recompute and the exposed communication.

    The expert-parallel all-to-all is exposed in full; under DualPipe and combined 1F1B, in the paired share of
    micro-batches, it runs beside another micro-batch's compute (which then has the SMs the all-to-all leaves it)
    and only the excess over that compute is exposed."""
    L, sched = c.model.layers, c.lb.schedule
    exposed = 1.0 - (c.cal.tp_overlap if c.software.tp_comm_overlap else 0.0)
    fwd, bwd, selective, mlp, op, qkv_context = (
        _per_layer(kinds, L, a) for a in ("fwd", "bwd", "selective_fwd", "mlp_fwd", "op_fwd", "qkv_context_fwd"))
    rc = c.lb.recompute
    attn = _per_layer(kinds, L, "attn_fwd")
    rec = np.select([c.full_rec, rc == Recompute.SELECTIVE, rc == Recompute.MLP, rc == Recompute.OP,
                     rc == Recompute.QKV_CONTEXT, rc == Recompute.QKV],
                    [fwd, selective, mlp, op, qkv_context, qkv_context + attn], 0.0)
    # the recomputed forward repeats its collectives: all of a layer's forward ones (half of its tensor-parallel
    # collectives, both forward all-to-alls of an MoE layer) under full recomputation; the MLP's one of the four
    # tensor-parallel collectives and the MoE layer's dispatch and combine under MLP recomputation; per-operator
    # recomputation saves the reduce-scatters' outputs but not the all-gathers' (torchtitan _save_list), so the two
    # forward all-gathers run again; recomputing the output projection and the MLP (QKV_CONTEXT) repeats both forward
    # collectives, as full recomputation does (QKV too)
    qkv_rec = (rc == Recompute.QKV_CONTEXT) | (rc == Recompute.QKV)
    mlp_rec = (rc == Recompute.MLP) | qkv_rec
    tp_c = _per_layer(kinds, L, "tp_comm") * np.where(c.full_rec | qkv_rec, 1.5,
                                                      np.where(mlp_rec | (rc == Recompute.OP), 1.25, 1.0)) * exposed
    # full recomputation repeats the forward's context-parallel exchange too, as does recomputing the attention
    # core from the kept K and V (QKV)
    cp_c = _per_layer(kinds, L, "cp_comm") + np.where(c.full_rec | (rc == Recompute.QKV),
                                                      _per_layer(kinds, L, "cp_fwd"), 0.0)
    a2a = _per_layer(kinds, L, "ep_comm") * np.where(c.full_rec | mlp_rec, 1.5, 1.0)
    # the token dispatcher's all-to-alls sit on the compute stream between the router and the experts: exposed in
    # full unless a schedule overlaps them with another micro-batch (Megatron-Core MoE README, "Expert Parallel
    # (EP) Communication Overlap": --overlap-moe-expert-parallel-comm; "EP All-to-All can consume 30-40% of
    # training time without optimization"), unlike the tensor-parallel collectives --tp-comm-overlap hides
    ep_c = a2a
    if np.any(sched >= Schedule.DUALPIPE):
        busy = fwd + bwd + rec + tp_c + cp_c
        paired = pipeline.paired_share(sched, c.f["pp"], c.m)
        slow = pipeline.overlap_compute_factor(c.system.chip)
        hidden = pipeline.overlapped_stage_time(busy, a2a, slow) - busy
        ep_c = np.where(paired > 0, paired * hidden + (1.0 - paired) * ep_c, ep_c)
    return dict(fwd=fwd, bwd=bwd, rec=rec, tp=tp_c, cp=cp_c, ep=ep_c, a2a=a2a,
                wgrad=_per_layer(kinds, L, "wgrad"), total=fwd + bwd + rec + tp_c + cp_c + ep_c)


def _stage_times(c: _Ctx, lt: dict, t_embed, t_logits) -> dict:
    """The average and the busiest stage's time per micro-batch, and the layers the busiest holds. DualPipe
    puts the first and the last stage on one rank, so its edge ranks each carry half of both edges."""
    L, pp, v = c.model.layers, c.f["pp"], c.v
    dual = c.lb.schedule == Schedule.DUALPIPE
    any_dual = bool(dual.any())  # (the search's hot path for dense models has none)
    layer_time = lt["total"]
    stage_layers = np.where(v > 1, np.ceil(L / (pp * v)) * v, np.ceil(L / pp))
    edge = np.where(pp > 1, np.maximum(t_embed, t_logits), t_embed + t_logits)
    first_edge, last_edge = t_embed, t_logits
    if any_dual:
        half = (t_embed + t_logits) / 2.0
        edge = np.where(dual & (pp > 1), half, edge)
        first_edge, last_edge = np.where(dual, half, t_embed), np.where(dual, half, t_logits)
    t_avg = (L * layer_time + t_embed + t_logits) / pp
    t_max = np.maximum(stage_layers * layer_time + edge, t_avg)
    if c.software.uneven_pipeline_split:
        balanced = pipeline.balanced_stage(L, pp, layer_time, first_edge, last_edge, t_avg)
        t_max = np.where(pp > 1, np.minimum(t_max, balanced), t_max)
    return dict(t_avg=t_avg, t_max=t_max, stage_layers=stage_layers)


def _bubble(c: _Ctx, lt: dict, st: dict):
    """The pipeline's idle time per step (cost.pipeline.bubble_time) on the busiest stage's chunks."""
    pp, t_max = c.f["pp"], st["t_max"]
    if not (c.lb.schedule == Schedule.DUALPIPE).any():
        return (pp - 1.0) / c.v * t_max
    n, slow = st["stage_layers"], pipeline.overlap_compute_factor(c.system.chip)
    fwd_c = n * (lt["fwd"] + lt["tp"] / 2 + lt["cp"] / 3)
    fb_pair = pipeline.overlapped_stage_time(t_max - n * lt["ep"], n * lt["a2a"], slow)
    return pipeline.bubble_time(c.lb.schedule, pp, c.v, t_max, fb_pair, t_max - fwd_c, n * lt["wgrad"])


def _pipeline_parts(c: _Ctx, lt: dict, st: dict, t_embed, t_logits) -> dict:
    """Step-time parts of the layers' work, the stage imbalance, the bubble and the pipeline's send/recv."""
    m, pp, L, v = c.m, c.f["pp"], c.model.layers, c.v
    parts = {
        "compute": m * (L * (lt["fwd"] + lt["bwd"]) + t_embed + t_logits) / pp,
        "recompute": m * L * lt["rec"] / pp,
        "comm/tp": m * L * lt["tp"] / pp,
        "comm/cp": m * L * lt["cp"] / pp,
        "comm/ep": m * L * lt["ep"] / pp,
        "imbalance": m * (st["t_max"] - st["t_avg"]),
        "bubble": _bubble(c, lt, st),
    }
    # pipeline send/recv of one micro-batch's boundary activations, forward and backward, per virtual stage;
    # in steady state each transfer hides behind the next chunk's compute, the pipeline fill exposes them
    tp, sp = c.f["tp"], c.x["sp"]
    p2p = comm.p2p_time(c.x["T"] * c.model.hidden * memory.ACT_BYTES / np.where(sp, tp, 1.0),
                        tp * c.f["cp"] * c.f["dp"], c.system, c.cal)
    chunk = st["stage_layers"] / v * lt["fwd"]
    steady = 2.0 * v * m * np.maximum(p2p - c.cal.comm_overlap * chunk, 0.0)
    parts["comm/pp"] = np.where(pp > 1, steady + 2.0 * (pp - 1.0) * p2p, 0.0)
    return parts


def weight_dp(f: dict):
    """Ranks holding the same dense weights, which reduce gradients and shard ZeRO/FSDP states together: dp x cp
    (Megatron-Core: parallel_state.get_data_parallel_group(with_context_parallel=True); torchtitan: dp_shard_cp)."""
    return f["dp"] * f["cp"]


def expert_dp(f: dict):
    """Expert data-parallel degree: the stage's tp x cp x dp ranks over etp x ep (MoE Parallel Folding, Liu et al.
    2025, arXiv:2504.14960, sec. 3), at least 1."""
    return np.maximum(f["tp"] * f["cp"] * f["dp"] / (f["etp"] * f["ep"]), 1.0)


def _stage_params(c: _Ctx, stage_layers) -> tuple[np.ndarray, np.ndarray, float]:
    """(dense, expert) parameters a chip holds before data-parallel sharding on the busiest stage, and one
    dense layer's. The first and last stages each hold one vocab x hidden matrix (with pp = 1 one stage holds
    both, one if tied); the last also the multi-token-prediction modules. DualPipe holds two stages."""
    model, L, pp, tp, ep, etp = c.model, c.model.layers, c.f["pp"], c.f["tp"], c.f["ep"], c.f["etp"]
    layer_dense = params.layer_params(model, False)
    n_moe = model.moe_layers
    routed, layer_moe_nonexpert = 0.0, 0.0
    if model.moe:
        routed, _ = params.moe_params(model)
        layer_moe_nonexpert = params.layer_params(model, True) - routed
    share = stage_layers / L
    embed = model.vocab * model.hidden * np.where(pp > 1, 1.0, 1.0 if model.tied_embeddings else 2.0)
    dense = (share * (model.dense_layers * layer_dense + n_moe * layer_moe_nonexpert) + embed) / tp
    expert = share * n_moe * routed / (ep * etp)
    if model.mtp_layers:
        mtp_routed = model.mtp_layers * routed if n_moe else 0.0
        dense = dense + (params.mtp_params(model) - mtp_routed) / tp
        expert = expert + mtp_routed / (ep * etp)
    copies = np.where(c.lb.schedule == Schedule.DUALPIPE, 2.0, 1.0)
    return dense * copies, expert * copies, layer_dense


def _dp_parts(c: _Ctx, lt: dict, stage_layers, dense_params, expert_params, layer_dense) -> dict:
    """Exposed data-parallel communication and the optimizer step (Rajbhandari et al. 2020)."""
    system, cal, sw, sharding = c.system, c.cal, c.software, c.lb.sharding
    tp, dp, ep, T = c.f["tp"], weight_dp(c.f), c.f["ep"], c.x["T"]
    edp, edp_stride = expert_dp(c.f), c.f["etp"] * ep
    dp_stride = tp  # the context-parallel ranks of a data-parallel replica sit next to each other, tp apart
    # the bytes and groups below depend on DP_FIELDS only: one collective per distinct combination
    u, inverse_d = _distinct(c.lb, DP_FIELDS, c.dedupe)

    def dp_collective(kind, per_param_bytes, dense_bytes=None):
        dense_bytes = per_param_bytes if dense_bytes is None else dense_bytes
        t = (comm.collective_time(kind, np.broadcast_to(dense_params * dense_bytes, T.shape)[u], dp[u],
                                  dp_stride[u], system, cal)
             + comm.collective_time(kind, np.broadcast_to(expert_params * per_param_bytes, T.shape)[u], edp[u],
                                    edp_stride[u], system, cal))
        return np.broadcast_to(t, u.shape)[inverse_d]
    # each collective only where some layout's sharding uses it (the rest select it away: the same numbers)
    none, zero3 = sharding == Sharding.NONE, sharding == Sharding.ZERO3
    unused = np.zeros(T.shape)
    grad_ar = dp_collective(Collective.ALL_REDUCE, GRAD_COMM_BYTES) if none.any() else unused
    grad_rs, param_ag = ((dp_collective(Collective.REDUCE_SCATTER, GRAD_COMM_BYTES),
                          dp_collective(Collective.ALL_GATHER, memory.WEIGHT_BYTES))
                         if (~none & ~zero3).any() else (unused, unused))
    if not zero3.any():
        return _dp_unsharded(c, lt, stage_layers, dense_params, expert_params, np.where(none, grad_ar,
                                                                                       grad_rs + param_ag))
    fsdp_ag = dp_collective(Collective.ALL_GATHER, FSDP_COMM_BYTES, _fsdp_gather_bytes(c, stage_layers, dense_params))
    fsdp_rs = dp_collective(Collective.REDUCE_SCATTER, FSDP_COMM_BYTES)
    t_mb_compute = stage_layers * (lt["fwd"] + lt["bwd"] + lt["rec"])
    once = np.where(none, grad_ar, grad_rs + param_ag)
    # FSDP / ZeRO-3: gather for forward and backward, reduce-scatter every micro-batch (3x the weights per
    # micro-batch, Rajbhandari et al. 2020 sec. 7.2.2), issued as one collective per layer and parameter group,
    # each paying the collective's latency: the bandwidth term above counts the bytes once, these the launches
    gathers = stage_layers * sw.zero3_gathers_per_layer - 1.0
    lat = np.broadcast_to(2.0 * comm.collective_time(Collective.ALL_GATHER, 0.0, dp[u], dp_stride[u], system, cal)
                          + comm.collective_time(Collective.REDUCE_SCATTER, 0.0, dp[u], dp_stride[u], system, cal),
                          u.shape)[inverse_d]
    per_mb = 2.0 * fsdp_ag + fsdp_rs + np.maximum(gathers, 0.0) * lat
    # only the share of a layer's parameters the framework prefetches can be gathered behind compute
    hideable = per_mb
    if np.isfinite(sw.zero3_prefetch_params):
        prefetched = np.minimum(sw.zero3_prefetch_params * tp / layer_dense, 1.0)
        hideable = per_mb - 2.0 * fsdp_ag * (1.0 - prefetched)
    dp_comm = np.where(sharding == Sharding.ZERO3, c.m * (per_mb - np.minimum(hideable,
        cal.zero3_overlap * t_mb_compute)),
                       np.maximum(once - cal.comm_overlap * t_mb_compute, 0.0))
    return {"comm/dp": dp_comm, "optimizer": _optimizer(c, dense_params, expert_params)}


def _fsdp_gather_bytes(c: _Ctx, stage_layers, dense_params):
    """Bytes per dense parameter of an FSDP all-gather: FSDP_COMM_BYTES, and under FSDP2's float8 all-gather
    (Software.fp8_allgather, torchao/float8/fsdp_utils.py WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather)
    FP8_GATHER_BYTES for the dense layers' weights in an FP8 layout; the embedding and output head stay bf16."""
    if not c.software.fp8_allgather:
        return FSDP_COMM_BYTES
    copies = np.where(c.lb.schedule == Schedule.DUALPIPE, 2.0, 1.0)
    model = c.model  # the dense layers' linears: attention and MLP, without the norms (torchao converts nn.Linear)
    layer_linears = params.attention_params(model) + params.mlp_params(model.hidden, model.ffn_hidden, model.mlp)
    linears = stage_layers / model.layers * model.dense_layers * layer_linears / c.f["tp"] * copies
    fp8_share = np.where(c.x["fp8"], linears / np.maximum(dense_params, 1.0), 0.0)
    return FSDP_COMM_BYTES - (FSDP_COMM_BYTES - FP8_GATHER_BYTES) * fp8_share


def _dp_unsharded(c: _Ctx, lt: dict, stage_layers, dense_params, expert_params, once) -> dict:
    """_dp_parts where no layout is ZeRO-3: the gradient (and parameter) collectives once per step, exposed
    past what the compute window hides."""
    t_mb_compute = stage_layers * (lt["fwd"] + lt["bwd"] + lt["rec"])
    dp_comm = np.maximum(once - c.cal.comm_overlap * t_mb_compute, 0.0)
    return {"comm/dp": dp_comm, "optimizer": _optimizer(c, dense_params, expert_params)}


def _optimizer(c: _Ctx, dense_params, expert_params):
    """The optimizer step: memory-bound Adam over the parameters this chip owns."""
    dp, edp = weight_dp(c.f), expert_dp(c.f)
    owned = np.where(c.lb.sharding >= Sharding.ZERO1, dense_params / dp + expert_params / edp,
                     dense_params + expert_params)
    chip, fam = c.system.chip, c.cal.for_chip(c.system.chip)
    return compute.memory_time(owned * OPTIMIZER_BYTES_PER_PARAM, bandwidth=chip.memory_bandwidth,
                               memory_efficiency=fam.memory)


def _memory(c: _Ctx, kinds, stage_layers, dense_params, expert_params, layer_dense, reserve_bytes) -> dict:
    """Bytes per chip on the busiest stage: weights, gradients, optimizer states, activations, other."""
    model, lb, T, h = c.model, c.lb, c.x["T"], c.model.hidden
    tp, L = c.f["tp"], model.layers
    w_bytes, g_bytes, o_bytes = memory.state_bytes_per_param(lb.dtype)
    weights, grads, optim = memory.state_bytes(dense_params, expert_params, weight_dp(c.f), expert_dp(c.f),
                                               lb.sharding, dtype_weight_bytes=w_bytes, grad_bytes=g_bytes,
                                               optimizer_bytes=o_bytes)
    fp8 = c.x["fp8"]

    def act(rc, at=slice(None)):  # per layout (of those at `at`)
        return sum(n * memory.layer_activation_bytes(model, model.seq_len / c.f["cp"][at], c.f["micro_batch"][at],
                                                     tp[at], sp=c.x["sp"][at], recompute=rc, moe_layer=is_moe,
                                                     etp=c.f["etp"][at], flash=c.software.flash_attention,
                                                     fp8=fp8[at], quantized_bytes=c.x["operand_bytes"][at],
                                                     named_remat=c.software.named_remat_on(c.system.chip.family))
                   for n, is_moe, _ in kinds) / L
    act_layer = act(lb.recompute)
    # the one layer being recomputed (per-operator recomputation rebuilds a whole block's forward too): its full
    # activations, computed only for the layouts that rebuild one
    rebuilt = np.flatnonzero(c.full_rec | (lb.recompute == Recompute.OP))
    working = np.zeros(np.shape(act_layer))
    if rebuilt.size:
        working[rebuilt] = act(Recompute.NONE, rebuilt)
    inflight = memory.inflight_factor(c.f["pp"], c.v, c.m, lb.schedule)
    pp = c.f["pp"]
    last_layers = stage_layers + model.mtp_layers  # the MTP modules sit with the output head
    first = stage_layers * act_layer * inflight + working + T * h * memory.ACT_BYTES
    loss = memory.logits_bytes(T, model.vocab, tp, c.software.loss_bytes_per_logit) * (1 + model.mtp_layers)
    last = last_layers * act_layer + working + loss
    activations = np.where(pp > 1, np.maximum(first, last), first + model.mtp_layers * act_layer * inflight + loss)
    gathered = np.where(lb.sharding == Sharding.ZERO3, 2.0 * layer_dense / tp * memory.WEIGHT_BYTES, 0.0)
    # FP8 (and INT8, FP4): the GEMMs read a quantized copy of the 16-bit weights (scales included), kept across
    # micro-batches (Transformer Engine documentation, "Low precision training / Performance considerations /
    # Memory usage")
    other = reserve_bytes + gathered
    if fp8.any():
        other = other + np.where(fp8, (weights + gathered) / memory.WEIGHT_BYTES * c.x["operand_bytes"], 0.0)
    return {"weights": weights, "grads": grads, "optimizer": optim, "activations": activations, "other": other}


def evaluate(model: Model, system: System, lb: LayoutBatch, cal: Calibration,
             reserve_bytes: float = memory.RESERVE_BYTES, software: Software = MODERN_SOFTWARE,
             dedupe: bool = True) -> dict:
    """Step time, its breakdown, memory and throughput for every layout in `lb` (arrays).

    `software` says what the framework offers (flash attention, ZeRO-3 gather granularity); one for all layouts.
    dedupe=False evaluates every layout on its own instead of once per distinct combination: for a batch of
    copies of one layout whose calibration parameters are arrays with one value per copy (the fit's Jacobian).
    """
    c = _context(model, system, lb, cal, software, dedupe)
    kinds, st, parts, held = _step(c)
    mem = _memory(c, kinds, st["stage_layers"], *held, reserve_bytes)
    return _result(c, parts, mem)


def _step(c: _Ctx):
    """(layer kinds, stage times, the step's parts, (dense, expert, one dense layer's) parameters per chip)."""
    kinds = _layer_kinds(c)
    t_embed, t_logits = _edges(c, kinds)
    lt = _layer_time(c, kinds)
    st = _stage_times(c, lt, t_embed, t_logits)
    parts = _pipeline_parts(c, lt, st, t_embed, t_logits)
    held = _stage_params(c, st["stage_layers"])
    parts.update(_dp_parts(c, lt, st["stage_layers"], *held))
    parts["overhead"] = np.full_like(c.x["T"], c.cal.step_overhead_s)
    return kinds, st, parts, held


def tokens_per_s(model: Model, system: System, lb: LayoutBatch, cal: Calibration,
                 software: Software = MODERN_SOFTWARE, dedupe: bool = True) -> np.ndarray:
    """`evaluate`'s tokens per second without its memory (the same numbers): what the fit's residuals read."""
    c = _context(model, system, lb, cal, software, dedupe)
    return c.f["global_batch"] * model.seq_len / sum(_step(c)[2].values())


def memory_bytes(model: Model, system: System, lb: LayoutBatch, cal: Calibration,
                 reserve_bytes: float = memory.RESERVE_BYTES, software: Software = MODERN_SOFTWARE) -> np.ndarray:
    """Bytes per chip of every layout, `evaluate`'s memory without its times (the same formulas: which layouts
    fit, at a fraction of the work; no layer times, so no grouping of the layouts by LAYER_FIELDS)."""
    c = _context(model, system, lb, cal, software, False)
    kinds = [(n, is_moe, None) for n, is_moe, _ in _kinds(model)]  # _memory reads counts and kinds only
    L, pp, v = model.layers, c.f["pp"], c.v
    stage_layers = np.where(v > 1, np.ceil(L / (pp * v)) * v, np.ceil(L / pp))
    dense_params, expert_params, layer_dense = _stage_params(c, stage_layers)
    return sum(_memory(c, kinds, stage_layers, dense_params, expert_params, layer_dense, reserve_bytes).values())


def _result(c: _Ctx, parts: dict, mem: dict) -> dict:
    step = sum(parts.values())
    mem_total = sum(mem.values())
    f, model, peak = c.f, c.model, c.x["peak_nominal"]
    chips = f["tp"] * f["pp"] * f["dp"] * f["cp"]
    tokens = f["global_batch"] * model.seq_len
    flops_per_token = model_flops_per_token(model)
    model_flops_rate = tokens * flops_per_token / step / chips
    rec_flops_token = recompute_flops_per_token(model, c.lb.recompute, c.software.flash_attention)
    return dict(
        step_time_s=step,
        time_parts=parts,
        memory_parts=mem,
        memory_bytes=mem_total,
        fits=memory.fits(mem_total, c.system.chip),
        microbatches=c.m,
        tokens_per_s=tokens / step,
        tokens_per_s_per_chip=tokens / step / chips,
        model_flops_per_s_per_chip=model_flops_rate,
        mfu=model_flops_rate / peak,
        hfu=tokens * (flops_per_token + rec_flops_token) / step / chips / peak,
        chips=chips,
        peak_flops=peak,
    )
