"""One training step, for one layout or a million: the same numpy code.

`evaluate` takes a LayoutBatch (numpy arrays) and returns arrays; the scalar path
(`flopcast.train`) calls it with a batch of one. Every formula it uses lives in
flopcast.cost; this module only composes them into a step:

    step = m * t_stage_max + bubble + exposed pp/dp communication + optimizer + overhead
    bubble = (p - 1) / v * t_stage_max      (Narayanan et al. 2021, sec. 2.2; v = 1 for 1F1B and GPipe)

with t_stage the time one pipeline stage spends on one micro-batch (forward,
backward, recomputation, exposed tensor/context/expert-parallel communication).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cost import comm, compute, memory, params
from ..cost.comm import Collective
from ..cost.efficiency import Calibration
from ..model.strategy import MODERN_SOFTWARE, LayoutBatch, Recompute, Schedule, Sharding, Software
from ..model.system import Dtype, System
from ..model.workload import Mlp, Model

# Kernels one fused Megatron-style layer launches per micro-batch: ~12 forward, ~24 backward.
# An assumption (counted from Megatron-Core's layer with fused norms and bias-activation);
# each costs calibration.op_overhead_s.
KERNELS_PER_LAYER = 36
# Host-side operator calls of one MoE layer's forward in Megatron-Core 0.14/0.15 (the versions Megatron-Bridge
# 25.11 requires), alltoall token dispatcher and TEGroupedMLP, counted in megatron/core/transformer/moe
# (moe_layer.py, router.py, token_dispatcher.py, moe_utils.py, experts.py) and Transformer Engine 2.8's
# grouped_linear.py, the helper functions confirmed by running them under a PyTorch dispatch counter:
# router GEMM and score function with top-k ~14, dispatch preprocessing with its all-gather 18, the
# device-to-host copy of the token counts ~14, permute ~10, the two all-to-alls 13, chunk sorts ~15,
# experts' fixed calls ~21, unpermute ~5 (~110 with or without the permute fusion), plus ~18 for the
# load-balancing auxiliary loss that the catalog's MoE models train with; and per local expert, each of the
# two grouped linears launches one GEMM and makes one split view (4). Counts by hand, +-10%.
# Each call costs calibration.moe_host_op_s.
MOE_HOST_OPS = 128
MOE_HOST_OPS_PER_EXPERT = 4
GRAD_COMM_BYTES = 4  # gradients reduced in fp32 (Megatron-LM: accumulate_allreduce_grads_in_fp32 with bf16)
FSDP_COMM_BYTES = 2  # FSDP gathers and reduces 16-bit shards (PyTorch FSDP mixed precision, param/reduce bf16)
OPTIMIZER_BYTES_PER_PARAM = 30  # Adam step reads fp32 master, grad, m, v (16 B), writes master, m, v, bf16 copy (14 B)



# Share of the linear-layer GEMM FLOPs a 4-bit recipe keeps in BF16: NVIDIA's NVFP4 pretraining recipe runs
# the forward, data-gradient and weight-gradient GEMMs of the linear layers in FP4 except about 16% of them
# (the 12B model's first two and last eight blocks), and keeps embeddings, the output head, attention and
# norms in BF16 (arXiv:2509.25149, sec. 4.1 "Linear layers in higher precision"); its MXFP4 comparison
# uses the same recipe. FP8 (Transformer Engine) and INT8 (AQT) recipes quantize every linear layer.
FP4_BF16_GEMM_SHARE = 0.16
QUANTIZED_CODES = np.array(sorted(d for d in Dtype if d.quantized))
GEMM_BYTES = np.array([d.gemm_bytes for d in Dtype])


def _peaks(chip, dtypes: np.ndarray):
    """(nominal GEMM peak, effective GEMM peak, attention/elementwise peak) per layout; NaN where the chip
    lacks the dtype. The effective peak of a 4-bit recipe mixes in BF16 for FP4_BF16_GEMM_SHARE of the
    FLOPs (a harmonic mean: time adds up); the nominal peak is what MFU divides by."""
    table = np.full(len(Dtype), np.nan)
    for d in Dtype:
        try:
            table[d] = chip.peak(d)
        except ValueError:
            pass
    nominal = table[dtypes]
    fp4 = (dtypes == Dtype.NVFP4) | (dtypes == Dtype.MXFP4)
    bf16 = table[Dtype.BF16]
    mixed = 1.0 / ((1.0 - FP4_BF16_GEMM_SHARE) / nominal + FP4_BF16_GEMM_SHARE / bf16)
    gemm = np.where(fp4, mixed, nominal)
    attn = table[np.where(np.isin(dtypes, QUANTIZED_CODES), Dtype.BF16, dtypes)]
    return nominal, gemm, attn


@dataclass(frozen=True)
class _Layer:
    """Per micro-batch times (s) and FLOPs of one layer on one chip."""

    fwd: np.ndarray
    bwd: np.ndarray
    attn_fwd: np.ndarray
    flops_fwd: np.ndarray
    attn_flops_fwd: np.ndarray
    tp_comm: np.ndarray
    cp_comm: np.ndarray
    ep_comm: np.ndarray


def _layer(model: Model, system: System, cal: Calibration, x: dict, moe_layer: bool, sliding: bool,
           software: Software) -> _Layer:
    chip = system.chip
    fam = cal.for_chip(chip)
    tp, cp, ep, b, sp, T = x["tp"], x["cp"], x["ep"], x["b"], x["sp"], x["T"]
    h, s = model.hidden, model.seq_len
    kw = dict(peak=x["peak_gemm"], efficiency=x["gemm_eff"], tile=chip.tile, cores=chip.cores,
              bandwidth=chip.memory_bandwidth, memory_efficiency=fam.memory, operand_bytes=x["operand_bytes"])

    fwd = np.zeros_like(T)
    bwd = np.zeros_like(T)
    flops = np.zeros_like(T)

    def gemm(mm, nn, kk, count=1.0, efficiency_scale=1.0):
        nonlocal fwd, bwd, flops
        f, bk, fl = compute.gemm_fwd_bwd_time(mm, nn, kk, **dict(kw, efficiency=kw["efficiency"] * efficiency_scale))
        fwd = fwd + count * f
        bwd = bwd + count * bk
        flops = flops + count * fl

    # attention projections
    if model.mla:
        a = model.mla
        if a.q_lora_rank:  # 0: queries projected at full rank (DeepSeek-V2-Lite)
            gemm(T, a.q_lora_rank, h)
            gemm(T, model.q_dim / tp, a.q_lora_rank)
        else:
            gemm(T, model.q_dim / tp, h)
        gemm(T, a.kv_lora_rank + a.qk_rope_head_dim, h)
        gemm(T, model.heads * (a.qk_nope_head_dim + a.v_head_dim) / tp, a.kv_lora_rank)
        d_qk, d_v = a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim
    else:
        gemm(T, (model.q_dim + 2 * model.kv_dim) / tp, h)
        d_qk = d_v = model.d_head
    gemm(T, h, model.attn_out_dim / tp)

    # attention core (fused): each chip's s/cp queries against the keys before them
    if sliding:
        s_kv, causal = min(model.sliding_window, s), 1.0
    else:
        s_kv, causal = s, 0.5
    attn_flops = compute.attention_core_flops(b, s / cp, s_kv, model.heads / tp, d_qk, d_v, causal)
    attn_bwd_factor = compute.FLASH_BACKWARD_FACTOR
    if software.flash_attention:
        attn_fwd = attn_flops / (x["peak_attn"] * fam.attention)
    else:
        # unfused attention (Megatron-LM before FlashAttention): QK^T over the whole s x s matrix (the causal
        # mask is applied afterwards), and the scores stream through HBM (Dao et al. 2022, sec. 2.2, Algorithm 0)
        issued = compute.attention_core_flops(b, s / cp, s_kv, model.heads / tp, d_qk, d_v, 1.0)
        scores = b * (s / cp) * s_kv * model.heads / tp
        attn_fwd = (issued / (x["peak_attn"] * fam.attention)
                    + compute.memory_time(scores * compute.unfused_score_bytes(model.dropout),
                                          bandwidth=chip.memory_bandwidth, memory_efficiency=fam.memory))
        attn_bwd_factor = compute.UNFUSED_BACKWARD_FACTOR

    # MLP or experts
    act_elems = 0.0
    if moe_layer:
        e = model.moe
        gemm(T, e.experts, h)  # router
        tokens_per_expert = T * e.topk * ep / e.experts
        up = e.expert_ffn * (2 if model.mlp == Mlp.SWIGLU else 1)
        gemm(tokens_per_expert, up / tp, h, count=e.experts / ep, efficiency_scale=cal.grouped_gemm)
        gemm(tokens_per_expert, h, e.expert_ffn / tp, count=e.experts / ep, efficiency_scale=cal.grouped_gemm)
        shared = e.shared_ffn or e.shared_experts * e.expert_ffn
        if shared:
            gemm(T, shared * (2 if model.mlp == Mlp.SWIGLU else 1) / tp, h)
            gemm(T, h, shared / tp)
        act_elems = e.topk * (memory.mlp_activation_elems(h, e.expert_ffn, model.mlp) + 4 * h)  # + permutes
        act_elems = act_elems + (memory.mlp_activation_elems(h, shared, model.mlp) if shared else 0.0)
    else:
        up = model.ffn_hidden * (2 if model.mlp == Mlp.SWIGLU else 1)
        gemm(T, up / tp, h)
        gemm(T, h, model.ffn_hidden / tp)
        act_elems = memory.mlp_activation_elems(h, model.ffn_hidden, model.mlp)

    # elementwise: two norms (read+write h), two residual adds (read 2h, write h), activation, rotary
    replicated = 10.0 * h / np.where(sp, tp, 1.0)
    sharded = (act_elems + 2.0 * (model.q_dim + model.kv_dim)) / tp
    elem_fwd = compute.memory_time(T * (replicated + sharded) * memory.ACT_BYTES * cal.elementwise_traffic,
                                   bandwidth=chip.memory_bandwidth, memory_efficiency=fam.memory)
    overhead = KERNELS_PER_LAYER * cal.op_overhead_s
    fwd = fwd + attn_fwd + elem_fwd + overhead / 3.0
    if moe_layer:
        # the token dispatcher copies the per-expert token counts to the host once per MoE layer (all-to-all
        # split sizes; Megatron-Core MoEAlltoAllTokenDispatcher), so the host cannot run ahead of the device:
        # the layer's forward takes at least the host time to issue its operators
        host_ops = MOE_HOST_OPS + MOE_HOST_OPS_PER_EXPERT * model.moe.experts / ep
        fwd = np.maximum(fwd, host_ops * cal.moe_host_op_s)
    bwd = bwd + attn_bwd_factor * attn_fwd + 2.0 * elem_fwd + overhead * 2.0 / 3.0

    # tensor parallel: 2 all-reduces (or all-gather + reduce-scatter with sp) forward, 2 backward
    # (Shoeybi et al. 2019, Fig. 4; Korthikanti et al. 2022, sec. 4.2.2)
    act_bytes = T * h * memory.ACT_BYTES
    ar = comm.collective_time(Collective.ALL_REDUCE, act_bytes, tp, 1, system, cal)
    agrs = (comm.collective_time(Collective.ALL_GATHER, act_bytes, tp, 1, system, cal)
            + comm.collective_time(Collective.REDUCE_SCATTER, act_bytes, tp, 1, system, cal))
    tp_comm = 4.0 * np.where(sp, agrs, ar)  # 2 per pass, forward and backward

    # context parallel (ring attention, Liu et al. 2023): K and V chunks go round the ring forward,
    # K, V and their gradients backward; hidden behind the attention compute where it is longer
    kv_bytes = b * s * 2 * model.kv_dim * memory.ACT_BYTES / tp  # all chunks of K and V
    ring = comm.collective_time(Collective.ALL_GATHER, kv_bytes, cp, tp, system, cal)
    cp_comm = (np.maximum(ring - attn_fwd, 0.0)
               + np.maximum(2.0 * ring - attn_bwd_factor * attn_fwd, 0.0))

    # expert parallel: dispatch and combine all-to-all forward and backward (Lepikhin et al. 2020)
    ep_comm = np.zeros_like(T)
    if moe_layer:
        a2a_bytes = T / np.where(sp, tp, 1.0) * model.moe.topk * h * memory.ACT_BYTES
        ep_comm = 4.0 * comm.collective_time(Collective.ALL_TO_ALL, a2a_bytes, ep, tp * cp, system, cal)

    return _Layer(fwd, bwd, attn_fwd, flops + attn_flops, attn_flops, tp_comm, cp_comm, ep_comm)


# The layout fields a layer's times depend on (everything `_layer` reads through `x`).
LAYER_FIELDS = ("tp", "cp", "ep", "micro_batch", "sequence_parallel", "dtype")
# The layout fields the data-parallel collectives depend on (parameters per stage and the groups).
DP_FIELDS = ("tp", "pp", "dp", "cp", "ep", "vp", "schedule")


def _distinct(lb: LayoutBatch, fields, dedupe: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(index of the first layout of each distinct combination of `fields`, map from layouts to those).

    dedupe=False: every layout is its own combination (identity maps)."""
    if not dedupe:
        return np.arange(lb.size), np.arange(lb.size)
    cols = [getattr(lb, f).astype(np.int64) for f in fields]
    key = np.zeros(lb.size, dtype=np.int64)
    radix = 1
    for c in cols:
        top = int(c.max(initial=0)) + 1
        if c.min(initial=0) < 0 or radix * top >= 2**62:  # cannot pack into one integer: compare rows
            _, first, inverse = np.unique(np.stack(cols, axis=1), axis=0, return_index=True, return_inverse=True)
            return first, inverse.reshape(-1)
        key = key * top + c
        radix *= top
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse


def _as_float(lb: LayoutBatch) -> dict:
    return {k: getattr(lb, k).astype(float) for k in ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch")}


def evaluate(model: Model, system: System, lb: LayoutBatch, cal: Calibration,
             reserve_bytes: float = memory.RESERVE_BYTES, software: Software = MODERN_SOFTWARE,
             dedupe: bool = True) -> dict:
    """Step time, its breakdown, memory and throughput for every layout in `lb` (arrays).

    `software` says what the framework offers (flash attention, ZeRO-3 gather granularity); one for all layouts.
    dedupe=False evaluates every layout on its own instead of once per distinct combination: for a batch of
    copies of one layout whose calibration parameters are arrays with one value per copy (the fit's Jacobian).
    """
    chip = system.chip
    fam = cal.for_chip(chip)
    f = _as_float(lb)
    tp, pp, dp, cp, ep, vp, b, gb = (f[k] for k in ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch"))
    sp = (lb.sequence_parallel.astype(bool)) & (tp > 1)
    recompute, sharding, schedule, dtype = lb.recompute, lb.sharding, lb.schedule, lb.dtype
    s, h, L = model.seq_len, model.hidden, model.layers
    m = gb / (dp * b)
    T = b * s / cp
    peak_nominal, peak_gemm, peak_attn = _peaks(chip, dtype)
    quantized = np.isin(dtype, QUANTIZED_CODES)
    # every narrow GEMM format takes the family's fitted low-precision (FP8) GEMM efficiency: no FP4 or INT8
    # training run is in the calibration data
    gemm_eff = np.where(quantized, fam.gemm_fp8, fam.gemm)
    operand_bytes = GEMM_BYTES[dtype]
    x = dict(tp=tp, cp=cp, ep=ep, b=b, sp=sp, T=T, peak_gemm=peak_gemm, peak_attn=peak_attn,
             gemm_eff=gemm_eff, operand_bytes=operand_bytes)

    # Layer times depend on LAYER_FIELDS only, which a search repeats over many layouts: compute them
    # once per distinct combination and spread them back (the same numbers, far fewer operations).
    first, inverse = _distinct(lb, LAYER_FIELDS, dedupe)
    xu = {k: v[first] for k, v in x.items()}

    def spread(a):
        return np.broadcast_to(a, first.shape)[inverse]

    # the layer kinds this model has, and how many of each
    kinds = []
    sliding_share = model.sliding_share
    for moe_layer, count in ((False, model.dense_layers), (True, model.moe_layers)):
        if count == 0:
            continue
        for sliding, share in ((False, 1.0 - sliding_share), (True, sliding_share)):
            if share > 0:
                layer = _layer(model, system, cal, xu, moe_layer, sliding, software)
                layer = _Layer(**{k: spread(v) for k, v in layer.__dict__.items()})
                kinds.append((count * share, moe_layer, layer))

    def per_layer(attr):
        return sum(c * getattr(l, attr) for c, _, l in kinds) / L

    fwd, bwd, attn_fwd = per_layer("fwd"), per_layer("bwd"), per_layer("attn_fwd")
    rec = np.where(recompute == Recompute.FULL, fwd, np.where(recompute == Recompute.SELECTIVE, attn_fwd, 0.0))
    full_rec = recompute == Recompute.FULL
    exposed = 1.0 - cal.tp_overlap
    tp_c = per_layer("tp_comm") * np.where(full_rec, 1.5, 1.0) * exposed
    cp_c = per_layer("cp_comm")
    ep_c = per_layer("ep_comm") * np.where(full_rec, 1.5, 1.0) * exposed

    # first stage: embedding lookup; last stage: logits GEMM and fp32 cross-entropy
    kw = dict(peak=xu["peak_gemm"], efficiency=xu["gemm_eff"], tile=chip.tile, cores=chip.cores,
              bandwidth=chip.memory_bandwidth, memory_efficiency=fam.memory, operand_bytes=xu["operand_bytes"])
    lg_f, lg_b, lg_flops = (spread(a) for a in compute.gemm_fwd_bwd_time(xu["T"], model.vocab / xu["tp"], h, **kw))
    ce = compute.memory_time(3 * 4.0 * T * model.vocab / tp, bandwidth=chip.memory_bandwidth, memory_efficiency=fam.memory)
    t_logits = lg_f + lg_b + 3 * ce
    t_embed = compute.memory_time(3 * T * h * memory.ACT_BYTES, bandwidth=chip.memory_bandwidth,
                                  memory_efficiency=fam.memory)

    # per micro-batch stage times: the average stage and the busiest
    interleaved = schedule == Schedule.INTERLEAVED
    v = np.where(interleaved, vp, 1.0)
    layer_time = fwd + bwd + rec + tp_c + cp_c + ep_c
    stage_layers_max = np.where(interleaved, np.ceil(L / (pp * v)) * v, np.ceil(L / pp))
    edge = np.where(pp > 1, np.maximum(t_embed, t_logits), t_embed + t_logits)
    t_avg = (L * layer_time + t_embed + t_logits) / pp
    t_max = np.maximum(stage_layers_max * layer_time + edge, t_avg)
    if software.uneven_pipeline_split:
        t_max = np.where(pp > 1, np.minimum(t_max, _balanced_stage(L, pp, layer_time, t_embed, t_logits, t_avg)), t_max)

    parts = {
        "compute": m * (L * (fwd + bwd) + t_embed + t_logits) / pp,
        "recompute": m * L * rec / pp,
        "comm/tp": m * L * tp_c / pp,
        "comm/cp": m * L * cp_c / pp,
        "comm/ep": m * L * ep_c / pp,
        "imbalance": m * (t_max - t_avg),
        "bubble": (pp - 1.0) / v * t_max,
    }
    # pipeline send/recv of one micro-batch's boundary activations, forward and backward, per virtual stage;
    # in steady state each transfer hides behind the next chunk's compute, the pipeline fill exposes them
    p2p = comm.p2p_time(T * h * memory.ACT_BYTES / np.where(sp, tp, 1.0), tp * cp * dp, system, cal)
    chunk = stage_layers_max / v * fwd
    steady = 2.0 * v * m * np.maximum(p2p - cal.comm_overlap * chunk, 0.0)
    parts["comm/pp"] = np.where(pp > 1, steady + 2.0 * (pp - 1.0) * p2p, 0.0)

    # parameters a chip holds before data-parallel sharding (busiest stage)
    layer_dense = params.layer_params(model, False)
    n_moe = model.moe_layers
    if model.moe:
        routed, _ = params.moe_params(model)
        layer_moe_nonexpert = params.layer_params(model, True) - routed
    else:
        routed, layer_moe_nonexpert = 0.0, 0.0
    share = stage_layers_max / L
    # the first and last stages each hold one vocab x hidden matrix; with pp = 1 one stage holds both (one if tied)
    embed = model.vocab * h * np.where(pp > 1, 1.0, 1.0 if model.tied_embeddings else 2.0)
    dense_params = (share * (model.dense_layers * layer_dense + n_moe * layer_moe_nonexpert) + embed) / tp
    expert_params = share * n_moe * routed / (ep * tp)

    # data parallel: gradient reduction and parameter gathers (Rajbhandari et al. 2020)
    dp_stride = tp * cp
    edp = np.maximum(dp / ep, 1.0)
    edp_stride = tp * cp * ep
    # the bytes and groups below depend on DP_FIELDS only: one collective per distinct combination
    first_d, inverse_d = _distinct(lb, DP_FIELDS, dedupe)

    def dp_collective(kind, dense_bytes, expert_bytes):
        u = first_d
        t = (comm.collective_time(kind, np.broadcast_to(dense_bytes, T.shape)[u], dp[u], dp_stride[u], system, cal)
             + comm.collective_time(kind, np.broadcast_to(expert_bytes, T.shape)[u], edp[u], edp_stride[u], system, cal))
        return np.broadcast_to(t, u.shape)[inverse_d]
    grad_ar = dp_collective(Collective.ALL_REDUCE, dense_params * GRAD_COMM_BYTES, expert_params * GRAD_COMM_BYTES)
    grad_rs = dp_collective(Collective.REDUCE_SCATTER, dense_params * GRAD_COMM_BYTES, expert_params * GRAD_COMM_BYTES)
    param_ag = dp_collective(Collective.ALL_GATHER, dense_params * memory.WEIGHT_BYTES, expert_params * memory.WEIGHT_BYTES)
    fsdp_ag = dp_collective(Collective.ALL_GATHER, dense_params * FSDP_COMM_BYTES, expert_params * FSDP_COMM_BYTES)
    fsdp_rs = dp_collective(Collective.REDUCE_SCATTER, dense_params * FSDP_COMM_BYTES, expert_params * FSDP_COMM_BYTES)
    t_mb_compute = stage_layers_max * (fwd + bwd + rec)
    window = cal.comm_overlap * t_mb_compute
    once = np.where(sharding == Sharding.NONE, grad_ar, grad_rs + param_ag)
    # FSDP / ZeRO-3: gather for forward and backward, reduce-scatter every micro-batch (3x the weights per
    # micro-batch, Rajbhandari et al. 2020 sec. 7.2.2), issued as one collective per layer and parameter group,
    # each paying the collective's latency: the bandwidth term above counts the bytes once, these the launches
    gathers = stage_layers_max * software.zero3_gathers_per_layer - 1.0
    u = first_d
    lat = np.broadcast_to(2.0 * comm.collective_time(Collective.ALL_GATHER, 0.0, dp[u], dp_stride[u], system, cal)
                          + comm.collective_time(Collective.REDUCE_SCATTER, 0.0, dp[u], dp_stride[u], system, cal),
                          u.shape)[inverse_d]
    per_mb = 2.0 * fsdp_ag + fsdp_rs + np.maximum(gathers, 0.0) * lat
    # only the share of a layer's parameters the framework prefetches can be gathered behind compute
    hideable = per_mb
    if np.isfinite(software.zero3_prefetch_params):
        prefetched = np.minimum(software.zero3_prefetch_params * tp / layer_dense, 1.0)
        hideable = per_mb - 2.0 * fsdp_ag * (1.0 - prefetched)
    parts["comm/dp"] = np.where(sharding == Sharding.ZERO3,
                                m * (per_mb - np.minimum(hideable, cal.zero3_overlap * t_mb_compute)),
                                np.maximum(once - window, 0.0))

    # optimizer step: memory-bound Adam over the parameters this chip owns
    owned = np.where(sharding >= Sharding.ZERO1, dense_params / dp + expert_params / edp, dense_params + expert_params)
    parts["optimizer"] = compute.memory_time(owned * OPTIMIZER_BYTES_PER_PARAM, bandwidth=chip.memory_bandwidth,
                                             memory_efficiency=fam.memory)
    parts["overhead"] = np.full_like(T, cal.step_overhead_s)
    step = sum(parts.values())

    # memory per chip
    weights, grads, optim = memory.state_bytes(dense_params, expert_params, dp, ep, sharding,
                                               dtype_weight_bytes=np.where(dtype <= Dtype.TF32, 4.0, 2.0))
    fp8 = quantized

    def act(rc):
        return sum(c * memory.layer_activation_bytes(model, s / cp, b, tp, sp=sp, recompute=rc, moe_layer=is_moe,
                                                     flash=software.flash_attention, fp8=fp8,
                                                     quantized_bytes=operand_bytes)
                   for c, is_moe, _ in kinds) / L
    act_layer, act_full_layer = act(recompute), act(Recompute.NONE)
    inflight = memory.inflight_factor(pp, v, m, schedule)
    working = np.where(full_rec, act_full_layer, 0.0)  # the one layer being recomputed
    first = stage_layers_max * act_layer * inflight + working + T * h * memory.ACT_BYTES
    last = stage_layers_max * act_layer + working + memory.logits_bytes(T, model.vocab, tp)
    activations = np.where(pp > 1, np.maximum(first, last), first + memory.logits_bytes(T, model.vocab, tp))
    gathered = np.where(sharding == Sharding.ZERO3, 2.0 * layer_dense / tp * memory.WEIGHT_BYTES, 0.0)
    # FP8 (and INT8, FP4): the GEMMs read a quantized copy of the 16-bit weights (scales included), kept across
    # micro-batches (Transformer Engine documentation, "Low precision training / Performance considerations /
    # Memory usage")
    other = reserve_bytes + gathered
    if fp8.any():
        other = other + np.where(fp8, (weights + gathered) / memory.WEIGHT_BYTES * operand_bytes, 0.0)
    mem = {"weights": weights, "grads": grads, "optimizer": optim, "activations": activations, "other": other}
    mem_total = sum(mem.values())

    chips = tp * pp * dp * cp
    tokens = gb * s
    flops_per_token = model_flops_per_token(model)
    model_flops_rate = tokens * flops_per_token / step / chips
    rec_flops_token = np.where(full_rec, flops_per_token / 3.0,
                               np.where(recompute == Recompute.SELECTIVE, _attention_flops_per_token(model) / 3.0, 0.0))
    return dict(
        step_time_s=step,
        time_parts=parts,
        memory_parts=mem,
        memory_bytes=mem_total,
        fits=mem_total <= chip.memory,
        microbatches=m,
        tokens_per_s=tokens / step,
        tokens_per_s_per_chip=tokens / step / chips,
        model_flops_per_s_per_chip=model_flops_rate,
        mfu=model_flops_rate / peak_nominal,
        hfu=tokens * (flops_per_token + rec_flops_token) / step / chips / peak_nominal,
        chips=chips,
        peak_flops=peak_nominal,
    )


def _balanced_stage(L: int, pp, layer_time, t_embed, t_logits, t_avg):
    """The busiest stage's time per micro-batch when whole layers are placed so that the first stage (with the
    embedding) and the last (with the logits and loss) take fewer: the smallest T at which the stages hold all
    L layers, (pp - 2) floor(T / t) + floor((T - t_embed) / t) + floor((T - t_logits) / t) >= L, t the
    layer time. T lies within one layer time above the average stage time t_avg; it is one of the
    candidates k t, k t + t_embed, k t + t_logits just above t_avg."""
    t = np.maximum(layer_time, 1e-30)
    eps = 1e-9

    def held(T):
        return ((pp - 2.0) * np.floor(T / t + eps) + np.maximum(np.floor((T - t_embed) / t + eps), 0.0)
                + np.maximum(np.floor((T - t_logits) / t + eps), 0.0))

    best = np.full(np.shape(t_avg), np.inf)
    for offset in (0.0, t_embed, t_logits):
        k = np.ceil((t_avg - offset) / t - eps)
        for extra in (0.0, 1.0):
            T = (k + extra) * t + offset
            best = np.where((T >= t_avg - eps * t) & (held(T) >= L), np.minimum(best, T), best)
    return best


def _attention_flops_per_token(model: Model) -> float:
    """Attention-score FLOPs per token, forward + backward, without the causal half.

    PaLM's 12 L H Q T for MHA (Chowdhery et al. 2022, App. B), written 6 L T (q_dim + attn_out_dim)
    so MLA's different query and value widths count; sliding-window layers see the window, not T."""
    s_eff = model.seq_len
    if model.sliding_share:
        share = model.sliding_share
        s_eff = (1 - share) * model.seq_len + share * min(model.sliding_window, model.seq_len)
    return 6.0 * model.layers * s_eff * (model.q_dim + model.attn_out_dim)


def model_flops_per_token(model: Model) -> float:
    """Model FLOPs per trained token: 6N + 12 L H Q T (PaLM, Chowdhery et al. 2022, App. B).

    N counts the weights in GEMMs a token passes (routed experts: top-k of them), the
    logit layer included; attention scores are counted without the causal half, as PaLM does.
    """
    return 6.0 * params.matmul_params_per_token(model) + _attention_flops_per_token(model)
