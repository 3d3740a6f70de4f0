"""One transformer layer's times on one chip, per micro-batch: its GEMMs, attention, elementwise kernels and
the tensor-, context- and expert-parallel communication it waits for. Numpy arrays in, arrays out: the
training step (`flopcast.simulate.training`) composes these into a pipeline stage. Every formula it uses lives
in flopcast.cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cost import comm, compute, memory
from ..cost.comm import Collective
from ..model.efficiency import Calibration
from ..model.strategy import ContextParallel, CudaGraphs, Dispatcher, Software
from ..model.system import System
from ..model.workload import Mlp, Model

FP32_BYTES = 4.0  # the dK and dV context parallelism passes round in fp32 (_cp_options.convert_to_f32)

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
# Of those, the router's (GEMM, score, top-k: ~14; auxiliary loss ~18) and the dispatch preprocessing's (with its
# all-gather 18, the token-count copy ~14) are what Megatron-Core captures in CUDA graphs with
# --cuda-graph-impl transformer_engine --cuda-graph-scope moe_router moe_preprocess (Megatron-Core MoE README,
# "CPU Overhead Bottleneck"; the attention, captured too with scope attn, is not among the MoE layer's calls); the
# rest (permutes, all-to-alls, chunk sorts, experts, unpermute) stays eager.
MOE_HOST_OPS_GRAPHED = MOE_HOST_OPS - (14 + 18 + 18 + 14)
# FP8 training with a hierarchical (DeepEP-style) dispatcher sends the dispatch-direction all-to-alls in FP8
# (the activation before the experts' up-projection forward, the activation gradient before their
# down-projection backward) and both combines in BF16: DeepSeek-V3 report sec. 3.3.3, "Low-Precision
# Communication"; the scales add 4 bytes per 128 values (1x128 tile scaling, sec. 3.3.2).
FP8_DISPATCH_BYTES = 1.0 + 4.0 / 128


def moe_host_ops(graphs: CudaGraphs, local_experts):
    """Host-issued operator calls of one MoE layer's forward: all of them eager, those outside the router and the
    dispatch preprocessing when those are graphed, none when the whole step is a compiled program."""
    if graphs == CudaGraphs.FULL:
        return 0.0 * local_experts
    fixed = MOE_HOST_OPS_GRAPHED if graphs == CudaGraphs.PARTIAL else MOE_HOST_OPS
    return fixed + MOE_HOST_OPS_PER_EXPERT * local_experts


@dataclass(frozen=True)
class Layer:
    """Per micro-batch times (s) and FLOPs of one layer on one chip."""

    fwd: np.ndarray
    bwd: np.ndarray
    wgrad: np.ndarray  # the weight-gradient GEMMs inside bwd (DualPipe's W)
    attn_fwd: np.ndarray
    selective_fwd: np.ndarray  # what selective recomputation repeats: core attention (MLA: + up-projections, norms)
    # what MLP recomputation repeats: the MLP's (MoE: router and experts') GEMMs and kernels, and an unfused
    # attention's core (its scores are not kept)
    mlp_fwd: np.ndarray
    op_fwd: np.ndarray  # what per-operator (torchtitan op) recomputation repeats: every second GEMM, the elementwise
    # what Recompute.QKV_CONTEXT repeats: the MLP's forward, the output projection and the layer's elementwise kernels
    qkv_context_fwd: np.ndarray
    flops_fwd: np.ndarray
    attn_flops_fwd: np.ndarray
    tp_comm: np.ndarray
    cp_comm: np.ndarray
    cp_fwd: np.ndarray  # the forward's share of cp_comm, which full recomputation repeats
    ep_comm: np.ndarray


class _Gemms:
    """Sums the forward, backward and weight-gradient times and forward FLOPs of a layer's GEMMs."""

    def __init__(self, kw: dict, zeros):
        self.kw, self.fwd, self.bwd, self.wgrad, self.flops = kw, zeros, zeros, zeros, zeros
        self.elems = (zeros, zeros, zeros)  # the GEMMs' input (m x k), output (m x n) and weight (n x k) elements

    def add(self, m, n, k, count=1.0, efficiency_scale=1.0):
        kw = dict(self.kw, efficiency=self.kw["efficiency"] * efficiency_scale)
        f, fl = compute.gemm_time(m, n, k, **kw)
        d, _ = compute.gemm_time(m, k, n, **kw)
        w, _ = compute.gemm_time(k, n, m, **kw)  # compute.gemm_fwd_bwd_time's three GEMMs, the weight gradient kept
        self.fwd = self.fwd + count * f
        self.bwd = self.bwd + count * (d + w)
        self.wgrad = self.wgrad + count * w
        self.flops = self.flops + count * fl
        self.elems = tuple(e + count * a for e, a in zip(self.elems, (m * k, m * n, n * k)))


def gemm_kwargs(chip, fam, x: dict) -> dict:
    return dict(peak=x["peak_gemm"], efficiency=x["gemm_eff"], tile=chip.tile, cores=chip.cores,
                bandwidth=chip.memory_bandwidth, memory_efficiency=fam.memory, operand_bytes=x["operand_bytes"])


def _attention_projections(g: _Gemms, model: Model, x: dict):
    """QKV (or MLA's low-rank down- and up-projections) and the output projection; returns the q/k and v
    head widths the attention core uses and the forward time of MLA's up-projections (0 without MLA)."""
    tp, T, h = x["tp"], x["T"], model.hidden
    up = 0.0
    if model.mla:
        a = model.mla
        if a.q_lora_rank:
            g.add(T, a.q_lora_rank, h)
        else:  # 0: queries projected at full rank (DeepSeek-V2-Lite)
            g.add(T, model.q_dim / tp, h)
        g.add(T, a.kv_lora_rank + a.qk_rope_head_dim, h)
        before = g.fwd
        if a.q_lora_rank:
            g.add(T, model.q_dim / tp, a.q_lora_rank)
        g.add(T, model.heads * (a.qk_nope_head_dim + a.v_head_dim) / tp, a.kv_lora_rank)
        up = g.fwd - before
        d_qk, d_v = a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim
    else:
        g.add(T, (model.q_dim + 2 * model.kv_dim) / tp, h)
        d_qk = d_v = model.d_head
    before = g.fwd
    g.add(T, h, model.attn_out_dim / tp)
    return d_qk, d_v, up, g.fwd - before


def _attention_core(model: Model, chip, fam, x: dict, d_qk, d_v, sliding: bool, software: Software):
    """(forward time, forward FLOPs, backward/forward time ratio) of softmax(QK^T)V: each chip's s/cp queries
    against the keys before them."""
    tp, cp, b, s = x["tp"], x["cp"], x["b"], model.seq_len
    s_kv, causal = (min(model.sliding_window, s), 1.0) if sliding else (s, 0.5)
    flops = compute.attention_core_flops(b, s / cp, s_kv, model.heads / tp, d_qk, d_v, causal)
    if software.flash_attention:
        fwd_slow, bwd_slow = compute.flash_kernel_slowdown(software.flash_kernel, chip.family)
        fill = compute.head_dim_fill(chip.family, chip.tile, d_qk, d_v)
        return (flops / (x["peak_attn"] * fam.attention * fill) * fwd_slow, flops,
                compute.FLASH_BACKWARD_FACTOR * bwd_slow / fwd_slow)
    # unfused attention (Megatron-LM before FlashAttention): QK^T over the whole s x s matrix (the causal
    # mask is applied afterwards), and the scores stream through HBM (Dao et al. 2022, sec. 2.2, Algorithm 0)
    issued = compute.attention_core_flops(b, s / cp, s_kv, model.heads / tp, d_qk, d_v, 1.0)
    scores = b * (s / cp) * s_kv * model.heads / tp
    t = (issued / (x["peak_attn"] * fam.attention)
         + compute.memory_time(scores * compute.unfused_score_bytes(model.dropout),
                               bandwidth=chip.memory_bandwidth, memory_efficiency=fam.memory))
    return t, flops, compute.UNFUSED_BACKWARD_FACTOR


def _op_recomputed_fwd(g: _Gemms, model: Model, x: dict, moe_layer: bool, elem_fwd):
    """Forward time torchtitan's per-operator selective checkpointing repeats in backward (Recompute.OP): its policy
    saves every matmul's output but every second one's in the block's forward order (wq, wk, wv, wo, then w1, w3, w2 of
    a SwiGLU MLP or up, down of a GeLU one: wk, wo and w3 or down are recomputed; torchtitan
    parallelisms/parallelize_llama.py _custom_policy, 9dec370), and no elementwise kernel's (norms, rotary, SiLU and
    product, residual adds). Deviation: an MLA or MoE layer's matmuls are counted as half of its GEMMs' forward."""
    if model.mla or moe_layer:
        return g.fwd / 2.0 + elem_fwd
    tp, T, h = x["tp"], x["T"], model.hidden
    op = _Gemms(g.kw, np.zeros_like(T))
    op.add(T, model.kv_dim / tp, h)  # wk
    op.add(T, h, model.attn_out_dim / tp)  # wo
    if model.mlp == Mlp.SWIGLU:
        op.add(T, model.ffn_hidden / tp, h)  # w3, the up projection
    else:
        op.add(T, h, model.ffn_hidden / tp)  # the down projection
    return op.fwd + elem_fwd


def _replicated(x: dict):
    """Where the tp ranks hold the same tokens at the MoE layer (no sequence parallelism) and the experts split like
    the attention (etp = tp): each rank routes all of them and computes its 1/tp of every expert, as a dense MLP."""
    return ~x["sp"] & (x["etp"] == x["tp"])


def _expert_tokens(x: dict):
    """Tokens of the micro-batch whose routed copies one rank's experts compute a share of: its own T / tp (sequence
    parallel) gathered over the etp ranks of its expert tensor-parallel group, or all T where replicated."""
    own = x["T"] / np.where(x["sp"], x["tp"], 1.0)
    return np.where(_replicated(x), own, own * x["etp"])


def _mlp(g: _Gemms, model: Model, cal: Calibration, x: dict, moe_layer: bool):
    """The dense MLP, or the router, routed and shared experts; returns the elements per token the
    elementwise kernels touch (activations and permutes). The busiest expert-parallel rank computes
    moe.load_factor times the balanced mean of routed tokens. The experts split etp ways (MoE Parallel Folding,
    Liu et al. 2025, arXiv:2504.14960): each of the etp ranks computes its 1/etp of every token its experts
    receive, etp x those of its own tp shard (`_expert_tokens`)."""
    tp, ep, etp, T, h = x["tp"], x["ep"], x["etp"], x["T"], model.hidden
    gated = 2 if model.mlp == Mlp.SWIGLU else 1
    if not moe_layer:
        g.add(T, model.ffn_hidden * gated / tp, h)
        g.add(T, h, model.ffn_hidden / tp)
        return memory.mlp_activation_elems(h, model.ffn_hidden, model.mlp)
    e = model.moe
    g.add(T, e.experts, h)  # router
    tokens_per_expert = _expert_tokens(x) * e.topk * ep / e.experts * e.load_factor
    g.add(tokens_per_expert, e.expert_ffn * gated / etp, h, count=e.experts / ep, efficiency_scale=cal.grouped_gemm)
    g.add(tokens_per_expert, h, e.expert_ffn / etp, count=e.experts / ep, efficiency_scale=cal.grouped_gemm)
    shared = e.shared_ffn or e.shared_experts * e.expert_ffn
    # per token of the micro-batch, split by tp in _elementwise_time: the rank's routed copies' activations (1/etp
    # of each) and permutes (whole rows)
    share = _expert_tokens(x) * tp / T
    elems = e.topk * (memory.mlp_activation_elems(h, e.expert_ffn, model.mlp) / etp + 4 * h) * share
    if shared:
        g.add(T, shared * gated / tp, h)
        g.add(T, h, shared / tp)
        elems = elems + memory.mlp_activation_elems(h, shared, model.mlp)
    return elems


def _elementwise_time(model: Model, chip, fam, cal: Calibration, x: dict, act_elems):
    """Forward time of the norms, residual adds, activation and rotary kernels: two norms (read+write h), two
    residual adds (read 2h, write h) replicated unless sequence parallel; the rest split by tp."""
    h, tp = model.hidden, x["tp"]
    replicated = 10.0 * h / np.where(x["sp"], tp, 1.0)
    sharded = (act_elems + 2.0 * (model.q_dim + model.kv_dim)) / tp
    return compute.memory_time(x["T"] * (replicated + sharded) * memory.ACT_BYTES * cal.elementwise_traffic,
                               bandwidth=chip.memory_bandwidth, memory_efficiency=fam.memory)


def _mlp_elementwise_time(model: Model, chip, fam, cal: Calibration, x: dict, act_elems):
    """The MLP's share of `_elementwise_time`: its norm (read+write h, replicated unless sequence parallel) and
    its activation kernels (split by tp)."""
    h, tp = model.hidden, x["tp"]
    elems = 2.0 * h / np.where(x["sp"], tp, 1.0) + act_elems / tp
    return compute.memory_time(x["T"] * elems * memory.ACT_BYTES * cal.elementwise_traffic,
                               bandwidth=chip.memory_bandwidth, memory_efficiency=fam.memory)


def _tp_comm(model: Model, system: System, cal: Calibration, x: dict, moe_layer: bool):
    """Tensor parallel: 2 all-reduces (or all-gather + reduce-scatter with sp) forward, 2 backward
    (Shoeybi et al. 2019, Fig. 4; Korthikanti et al. 2022, sec. 4.2.2). An MoE layer's MLP half is the expert
    tensor-parallel gather and scatter around its experts instead (`_ep_comm`), but where the tokens are
    replicated over tp, whose experts' partial outputs are all-reduced as a dense MLP's."""
    tp, act_bytes = x["tp"], x["T"] * model.hidden * memory.ACT_BYTES
    ar = comm.collective_time(Collective.ALL_REDUCE, act_bytes, tp, 1, system, cal)
    agrs = (comm.collective_time(Collective.ALL_GATHER, act_bytes, tp, 1, system, cal)
            + comm.collective_time(Collective.REDUCE_SCATTER, act_bytes, tp, 1, system, cal))
    halves = np.where(_replicated(x), 4.0, 2.0) if moe_layer else 4.0
    return halves * np.where(x["sp"], agrs, ar)


def _cp_comm(model: Model, system: System, cal: Calibration, x: dict, attn_fwd, attn_bwd_factor, d_qk, d_v,
             mode: ContextParallel):
    """(exposed context-parallel time of a forward and backward, of a forward alone) per layer and micro-batch.

    RING (ring attention, Liu et al. 2023; Megatron-Core): K and V chunks go round the ring forward, K, V and
    their gradients backward, hidden behind the attention compute where it is longer. ALLGATHER (PyTorch's
    context_parallel, ContextParallel.ALLGATHER): the all-gather of K and V repeated to every query head shows
    where it outlasts the first of the cp SDPA calls (each 1/cp of the attention); backward gathers again, and of
    its cp fp32 dK/dV passes to the next rank (tp ranks on) each hides behind the next step but the last."""
    tp, cp = x["tp"], x["cp"]
    if mode == ContextParallel.RING:
        kv_bytes = x["b"] * model.seq_len * 2 * model.kv_dim * memory.ACT_BYTES / tp  # all chunks of K and V
        ring = comm.collective_time(Collective.ALL_GATHER, kv_bytes, cp, tp, system, cal)
        fwd = np.maximum(ring - attn_fwd, 0.0)
        return fwd + np.maximum(2.0 * ring - attn_bwd_factor * attn_fwd, 0.0), fwd
    kv_bytes = x["b"] * model.seq_len * model.heads / tp * (d_qk + d_v) * memory.ACT_BYTES
    gather = comm.collective_time(Collective.ALL_GATHER, kv_bytes, cp, tp, system, cal)
    step_fwd = attn_fwd / cp
    step_bwd = attn_bwd_factor * step_fwd
    grads = np.where(cp > 1, comm.p2p_time(kv_bytes / cp * FP32_BYTES / memory.ACT_BYTES, tp, system, cal), 0.0)
    fwd = np.maximum(gather - step_fwd, 0.0)
    bwd = np.maximum(gather - step_bwd, 0.0) + (cp - 1.0) * np.maximum(grads - step_bwd, 0.0) + grads
    return fwd + bwd, fwd


def _ep_comm(model: Model, system: System, cal: Calibration, x: dict, dispatcher: Dispatcher = Dispatcher.ALLTOALL):
    """Expert parallel: dispatch and combine all-to-all forward, their gradients backward (Lepikhin et al.
    2020), each for the busiest rank's load_factor x the mean tokens. Group-limited models are dispatched
    hierarchically (comm.dispatch_time), FP8 payload in the dispatch direction when training in FP8; a fused
    (flex) dispatcher sends a token once per destination rank, the all-to-all dispatcher once per routed expert."""
    e = model.moe
    tokens = x["T"] / np.where(x["sp"], x["tp"], 1.0) * e.load_factor
    stride = x["etp"]  # the expert-parallel group's ranks lie etp apart (Megatron-Core's expert rank order)
    limited = dict(groups=e.groups, topk_groups=e.topk_groups, experts=e.experts,
                   per_rank=dispatcher == Dispatcher.FLEX)
    combine = comm.dispatch_time(tokens, model.hidden * memory.ACT_BYTES, e.topk, x["ep"], stride, system, cal,
                                 **limited)
    gather = _etp_comm(model, system, cal, x)
    if not (e.groups and e.topk_groups) or not np.any(x["fp8"]):
        return 4.0 * combine + gather
    dispatch_bytes = np.where(x["fp8"], FP8_DISPATCH_BYTES, memory.ACT_BYTES) * model.hidden
    dispatch = comm.dispatch_time(tokens, dispatch_bytes, e.topk, x["ep"], stride, system, cal, **limited)
    return 2.0 * (combine + dispatch) + gather


def _etp_comm(model: Model, system: System, cal: Calibration, x: dict):
    """The expert tensor-parallel group's all-gather of the tokens its experts received and the reduce-scatter of
    their outputs, forward, and the reverse pair backward (Megatron-Core MoEAlltoAllTokenDispatcher: gather and
    reduce-scatter over the expert tensor-parallel group after the dispatch and before the combine); none where the
    tokens are replicated over tp."""
    e = model.moe
    nbytes = _expert_tokens(x) * e.topk * e.load_factor * model.hidden * memory.ACT_BYTES
    pair = (comm.collective_time(Collective.ALL_GATHER, nbytes, x["etp"], 1, system, cal)
            + comm.collective_time(Collective.REDUCE_SCATTER, nbytes, x["etp"], 1, system, cal))
    return np.where(_replicated(x), 0.0, 2.0 * pair)


def layer_times(model: Model, system: System, cal: Calibration, x: dict, moe_layer: bool, sliding: bool,
                software: Software) -> Layer:
    """One layer of the given kind (dense or MoE MLP; full or sliding-window attention) for the layouts in x."""
    chip = system.chip
    fam = cal.for_chip(chip)
    T = x["T"]
    g = _Gemms(gemm_kwargs(chip, fam, x), np.zeros_like(T))
    d_qk, d_v, up_fwd, proj_fwd = _attention_projections(g, model, x)
    attn_fwd, attn_flops, attn_bwd_factor = _attention_core(model, chip, fam, x, d_qk, d_v, sliding, software)
    before_mlp = g.fwd
    act_elems = _mlp(g, model, cal, x, moe_layer)
    elem_fwd = _elementwise_time(model, chip, fam, cal, x, act_elems)
    mlp_fwd = g.fwd - before_mlp + _mlp_elementwise_time(model, chip, fam, cal, x, act_elems)
    if not software.flash_attention:  # MLP recomputation keeps no unfused scores (memory.layer_activation_bytes)
        mlp_fwd = mlp_fwd + attn_fwd
    overhead = KERNELS_PER_LAYER * cal.op_overhead_s
    fwd = g.fwd + attn_fwd + elem_fwd + overhead / 3.0
    if moe_layer:
        # the token dispatcher copies the per-expert token counts to the host once per MoE layer (all-to-all
        # split sizes; Megatron-Core MoEAlltoAllTokenDispatcher), so the host cannot run ahead of the device:
        # the layer's forward takes at least the host time to issue its operators
        host_ops = moe_host_ops(software.graphs_on(chip.family), model.moe.experts / x["ep"])
        fwd = np.maximum(fwd, host_ops * cal.moe_host_op_s)
    bwd = g.bwd + attn_bwd_factor * attn_fwd + 2.0 * elem_fwd + overhead * 2.0 / 3.0
    if software.fp8_cast_passes:  # torchao float8's cast kernels (compute.fp8_cast_bytes), full recomputation repeats
        # under FSDP2's float8 all-gather each rank casts only its shard of the weights (x["fsdp"] of them)
        weight_cast_share = x["fsdp"] if software.fp8_allgather else 1.0
        cast_fwd, cast_bwd = (np.where(x["fp8"], compute.memory_time(b, bandwidth=chip.memory_bandwidth,
                                                                     memory_efficiency=fam.memory), 0.0)
                              for b in compute.fp8_cast_bytes(*g.elems[:2], g.elems[2] / weight_cast_share))
        fwd, bwd = fwd + cast_fwd, bwd + cast_bwd
    ep_comm = _ep_comm(model, system, cal, x, software.dispatcher) if moe_layer else np.zeros_like(T)
    # selective recomputation repeats the core attention (Korthikanti et al. 2022 sec. 4.2); for an MLA model
    # DeepSeek-V3's recipe instead (sec. 3.2.3, 3.3.3): the up-projections, the norms and the SwiGLU outputs
    # (flash attention's backward then runs on the recomputed Q, K, V), bounded here by the layer's elementwise
    # forward
    selective = up_fwd + elem_fwd if model.mla else attn_fwd
    op_fwd = _op_recomputed_fwd(g, model, x, moe_layer, elem_fwd)
    qkv_context = proj_fwd + (g.fwd - before_mlp) + elem_fwd  # the output projection, the MLP's GEMMs, every kernel
    cp_comm, cp_fwd = _cp_comm(model, system, cal, x, attn_fwd, attn_bwd_factor, d_qk, d_v, software.context_parallel)
    return Layer(fwd, bwd, g.wgrad, attn_fwd, selective, mlp_fwd, op_fwd, qkv_context, g.flops + attn_flops,
                 attn_flops, _tp_comm(model, system, cal, x, moe_layer), cp_comm, cp_fwd, ep_comm)
