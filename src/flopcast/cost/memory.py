"""Memory per chip: weights, gradients, optimizer states, activations.

Activations follow Korthikanti et al. 2022 (arXiv:2205.05198), Table 2 and sec. 4,
generalised term by term to GQA, SwiGLU, MoE and fused (flash) attention, which
keeps no s^2 score matrix (Dao et al. 2022). Works on floats and numpy arrays.
"""

from __future__ import annotations

import numpy as np

from ..model.strategy import Recompute, Schedule, Sharding
from ..model.system import Dtype
from ..model.workload import Mlp, Model
from ..units import GiB

ACT_BYTES = 2  # 16-bit activations
WEIGHT_BYTES = 2  # 16-bit weights used by the GEMMs
GRAD_BYTES = 4  # fp32 gradient accumulation buffer (Megatron main_grad; Narayanan et al. 2021 sec. 5)
OPTIMIZER_BYTES = 12  # fp32 master weights + Adam m and v (Rajbhandari et al. 2020, ZeRO, sec. 3.1)
# Assumption: runtime context, communication buffers and allocator fragmentation per chip.
# Not fitted; users override with reserve_bytes.
RESERVE_BYTES = 2 * GiB


def fits(memory_bytes, chip):
    """Whether a layout fits: its bytes per chip (the runtime reserve counted in them) at most the chip's HBM. The
    one rule the forecast, the searches and the claims decide by; a float or an array of them."""
    return memory_bytes <= chip.memory


def mlp_activation_elems(h, ffn, mlp: Mlp):
    """Sharded (split by tp) elements per token stored by one MLP: GeLU in and out (Korthikanti 8sbh+8sbh
    in bytes), or SwiGLU's gate and up outputs and their product."""
    return (3.0 if mlp == Mlp.SWIGLU else 2.0) * ffn


def _attention_elems(m: Model):
    """Sharded elements per token of Q, K, V and the attention output (MLA: per head, after the up-projections)."""
    if not m.mla:
        return m.q_dim + 2 * m.kv_dim + m.attn_out_dim
    a = m.mla
    return m.q_dim + m.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim) + m.attn_out_dim


def _kept_elems(m: Model, moe_layer: bool, recipe: bool, etp=1.0, mlp_recomputed: bool = False,
                named_remat: bool = False):
    """(replicated, sharded, replicated FP8-able, sharded FP8-able) elements per token one layer keeps.

    Replicated across tp unless sequence parallel: the two norm inputs, the QKV (MLA: latent down-projection)
    input and the MLP input (Korthikanti Table 2). Sharded: Q, K, V, the attention output and the MLP's
    intermediates. MLA keeps its latents c_Q and c_KV with the RoPE key before and after their norms, and Q
    (nope + rope), K (nope + rope), V and O per head (DeepSeek-AI 2024, arXiv:2405.04434 sec. 2.1.2).
    recipe: DeepSeek-V3's selective recomputation (report sec. 3.2.3 and 3.3.3): the RMSNorms and MLA
    up-projections are recomputed in backward (only the norms' inputs and the latents are kept, not Q, K, V),
    and a SwiGLU expert keeps its two inputs (in FP8 under FP8 training) and recomputes its output.
    The routed experts' terms carry the busiest rank's load factor; per token of the tp group they keep etp copies
    of the permuted input (each of the etp ranks holds every token its experts receive) and one of the expert's
    intermediates (split etp ways), so divided by tp like the rest: (etp h + ffn terms) / tp.
    mlp_recomputed: the MLP (MoE: router, routed and shared experts) is recomputed from its input in backward
    (Megatron-Core --recompute-modules mlp / moe), so it keeps none of its intermediates; its input stays (one
    of the replicated terms), in 16 bits, as the checkpoint's input.
    named_remat (with mlp_recomputed): a JAX checkpoint policy keeps only its named tensors and the layer's input
    (the scan carry): MaxText's save_dot_with_context_except_mlp (maxtext_utils.py, configs/base.yml) and AXLearn's
    build_remat_spec save Q, K, V (query_proj, key_proj, value_proj), the attention output (context, with flash
    attention's log-sum-exp) and the output projection (out_proj); the norms, their outputs (the QKV and MLP inputs)
    and the residual sum are recomputed from them, and no quantized copy of a GEMM input is kept (the names hold
    16-bit values). So replicated: the layer input and out_proj; sharded: Q, K, V and the context."""
    h = m.hidden
    rep, rep_fp8 = 4.0 * h, (h if moe_layer else 2.0 * h)
    attn = _attention_elems(m)
    if m.mla:
        a = m.mla
        latent = a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim
        rep, rep_fp8 = rep + 2.0 * latent, rep_fp8 + a.q_lora_rank + a.kv_lora_rank
        if recipe:
            rep, rep_fp8, attn = 2.0 * h + latent, 0.0, m.attn_out_dim
    if mlp_recomputed and named_remat and not m.mla:
        return 2.0 * h, attn, 0.0, 0.0
    if mlp_recomputed:
        return rep, attn, rep_fp8 - (0.0 if moe_layer else h), m.attn_out_dim
    if not moe_layer:
        return rep, attn + mlp_activation_elems(h, m.ffn_hidden, m.mlp), rep_fp8, m.attn_out_dim + m.ffn_hidden
    e = m.moe
    shared = e.shared_ffn or e.shared_experts * e.expert_ffn
    if recipe and m.mlp == Mlp.SWIGLU:
        routed = routed_fp8 = e.topk * e.load_factor * (etp * h + 2.0 * e.expert_ffn)
        return rep, attn + routed + 2.0 * shared, rep_fp8, m.attn_out_dim + routed_fp8 + 2.0 * shared
    routed = e.topk * e.load_factor * (etp * h + mlp_activation_elems(h, e.expert_ffn, m.mlp))
    routed_fp8 = e.topk * e.load_factor * (etp * h + e.expert_ffn)
    shared_elems = mlp_activation_elems(h, shared, m.mlp) if shared else 0.0
    return rep, attn + routed + shared_elems, rep_fp8, m.attn_out_dim + routed_fp8 + shared


def _op_kept_bytes(m: Model, t, sp):
    """Bytes per token a dense layer keeps under torchtitan's per-operator checkpointing (Recompute.OP): the saved
    outputs of every other matmul (Q, V, the MLP's first projection), of flash attention and of the reduce-scatter
    after the MLP, and the block's input; the rest (K, the projections wo and w3, the norms, SiLU, products) is
    recomputed. Replicated (split by tp under sp): the block input and the MLP output; sharded: Q, V, the attention
    output, the MLP's first projection. Deviation: 16-bit throughout (Float8 linears' scales not counted)."""
    rep = 2.0 * m.hidden
    shd = m.q_dim + m.kv_dim + m.attn_out_dim + m.ffn_hidden
    return ACT_BYTES * np.where(sp, (rep + shd) / t, rep + shd / t)


def _qkv_context_kept_bytes(m: Model, t, sp):
    """Bytes per token a layer keeps under Recompute.QKV_CONTEXT: its input (replicated, split by tp under sp), Q,
    K, V and the attention output (sharded), in 16 bits; flash attention's statistics are counted by the caller."""
    return ACT_BYTES * np.where(sp, (m.hidden + _attention_elems(m)) / t, m.hidden + _attention_elems(m) / t)


def _qkv_kept_bytes(m: Model, t, sp):
    """Bytes per token a layer keeps under Recompute.QKV: `_qkv_context_kept_bytes` without the attention output."""
    return _qkv_context_kept_bytes(m, t, sp) - ACT_BYTES * m.attn_out_dim / t


def deepseek_recipe(m: Model, recompute):
    """Where selective recomputation follows DeepSeek-V3's recipe (MLA models), per layout."""
    return (recompute == Recompute.SELECTIVE) & bool(m.mla)


def layer_activation_bytes(m: Model, s, b, t, *, sp, recompute, moe_layer: bool, flash: bool = True, fp8=False,
                           quantized_bytes=1.0, etp=1.0, named_remat: bool = False):
    """Activation bytes one layer keeps for backward, per micro-batch, on one chip.

    s is the sequence chunk on this chip (seq / cp), b the micro-batch, t the tp degree.
    With flash=False, dropout and MHA/GeLU this is exactly Korthikanti Table 2:
    sbh (10 + 24/t + 5as/(ht)) without sp, sbh (34/t + 5as/(ht)) with sp, 2sbh/t with full recompute.
    With fp8 (array or bool) the inputs of the FP8 GEMMs are kept as their one-byte quantized copies
    (Transformer Engine saves the quantized input for the weight-gradient GEMM: TE documentation, "Low
    precision training / Performance considerations / Memory usage"): the QKV input, the dense MLP's
    input, the attention output (projection input) and the MLP's second-GEMM input; an MoE layer's
    router reads its input in 16 bits, its experts' permuted inputs and second-GEMM inputs are FP8.
    Selective recomputation of an MLA model follows DeepSeek-V3's recipe (`_kept_elems`); MLP recomputation
    keeps attention's activations (but an unfused attention's scores) and the MLP's input only.
    quantized_bytes (array or float): bytes per element of those copies, 1 for FP8/INT8, 0.5625 for NVFP4.
    etp (array or float): the experts' tensor-parallel degree (an MoE layer's routed terms, `_kept_elems`).
    named_remat: recomputation by a JAX checkpoint policy, which keeps only named tensors (`_kept_elems`).
    """
    h = m.hidden
    mask = 1.0 if m.dropout else 0.0  # one byte per element (Korthikanti: sbh per dropout mask)

    def per_token(recipe: bool, mlp_recomputed: bool = False):
        rep, shd, rep_fp8, shd_fp8 = _kept_elems(m, moe_layer, recipe, etp, mlp_recomputed,
                                                 named_remat and mlp_recomputed)
        replicated_bytes = ACT_BYTES * rep + 2 * mask * h
        sharded_bytes = ACT_BYTES * shd
        if np.any(fp8):  # (skipped when no layout computes in FP8: the search's hot path)
            one_byte = np.where(fp8, ACT_BYTES - quantized_bytes, 0.0)  # saved by keeping GEMM inputs quantized
            replicated_bytes = replicated_bytes - one_byte * rep_fp8
            sharded_bytes = sharded_bytes - one_byte * shd_fp8
        return np.where(sp, (replicated_bytes + sharded_bytes) / t, replicated_bytes + sharded_bytes / t)
    kept = per_token(False)
    if m.mla and np.any(recompute == Recompute.SELECTIVE):
        kept = np.where(deepseek_recipe(m, recompute), per_token(True), kept)
    if np.any(recompute == Recompute.MLP):
        kept = np.where(recompute == Recompute.MLP, per_token(False, True), kept)
    if np.any(recompute == Recompute.QKV_CONTEXT):
        kept = np.where(recompute == Recompute.QKV_CONTEXT, _qkv_context_kept_bytes(m, t, sp), kept)
    if np.any(recompute == Recompute.QKV):
        kept = np.where(recompute == Recompute.QKV, _qkv_kept_bytes(m, t, sp), kept)
    if np.any(recompute == Recompute.OP) and not (m.mla or moe_layer):
        kept = np.where(recompute == Recompute.OP, _op_kept_bytes(m, t, sp), kept)
    scores = 0.0 if flash else 5.0 * m.heads * s / t  # softmax out 2, dropout mask 1, dropout out 2 (bytes)
    # flash attention keeps fp32 row max and sum, except where its forward is recomputed (QKV)
    stats = np.where(recompute == Recompute.QKV, 0.0, 4.0 * 2 * m.heads / t if flash else 0.0)
    # MLP recomputation saves the q/k/v projections, the context and the output projection (AXLearn's default
    # remat policy, attention.build_remat_spec: save_only_these_names q_proj, k_proj, v_proj, context, o_proj), not
    # an unfused attention's scores, which its backward recomputes from Q and K
    keep_scores = np.where(recompute == Recompute.NONE, scores, 0.0)
    full = s * b * ACT_BYTES * h / np.where(sp, t, 1)
    partial = s * b * (kept + keep_scores + stats)
    return np.where(recompute == Recompute.FULL, full, partial)


def inflight_factor(pp, vp, m, schedule):
    """Micro-batches' worth of one stage's activations the busiest (first) stage holds.

    1F1B: min(p, m) (Narayanan et al. 2021 sec. 2.2); interleaved: x (1 + (p-1)/(p v))
    (Korthikanti et al. 2022 sec. 4.2.3); GPipe: all m. DualPipe: p + 1 (DeepSeek-V3 report Table 2).
    Combined 1F1B runs the next micro-batch's forward while this one's backward is under way: one more than
    its 1F1B (or interleaved) count, bounded by m.
    """
    base = np.minimum(pp, m)
    inter = base * (1.0 + (pp - 1.0) / (pp * vp))
    plain = np.where(schedule == Schedule.GPIPE, m, np.where(schedule == Schedule.INTERLEAVED, inter, base))
    if not np.any(schedule >= Schedule.DUALPIPE):  # the search's hot path: no overlapping schedule
        return plain
    combined = np.minimum(np.where(vp > 1, inter, base) + 1.0, np.maximum(m, base))
    return np.where(schedule == Schedule.DUALPIPE, np.minimum(pp + 1.0, m),
                    np.where(schedule == Schedule.ONE_F_ONE_B_OVERLAP, combined, plain))


def state_bytes_per_param(dtype):
    """(weight, gradient, optimizer) bytes per parameter for a compute dtype (a Dtype or an array of them).

    Megatron-LM's table of bytes per parameter (README, "Distributed Optimizer"): fp16 params and grads 20
    (4 + 16/d distributed: the optimizer keeps fp32 main params and main grads besides Adam's m and v);
    bf16 params with fp32 grads 18 (6 + 12/d: fp32 main params, m, v); fp32 params and grads 16 (8 + 8/d:
    m and v only). FP8 runs keep bf16 params (Transformer Engine): as bf16. Deviation: for fp16 the
    distributed optimizer's 16 bytes are counted as optimizer state (its fp32 main grads included)."""
    dtype = np.asarray(dtype)
    fp32 = dtype <= Dtype.TF32
    fp16 = dtype == Dtype.FP16
    weight = np.where(fp32, 4.0, 2.0)
    grad = np.where(fp16, 2.0, 4.0)
    optimizer = np.where(fp16, 16.0, np.where(fp32, 8.0, 12.0))
    return weight, grad, optimizer


def state_bytes(params_dense, params_expert, dp, edp, sharding, *, dtype_weight_bytes=WEIGHT_BYTES,
                grad_bytes=GRAD_BYTES, optimizer_bytes=OPTIMIZER_BYTES):
    """(weights, gradients, optimizer) bytes per chip for the params a chip owns before dp sharding.

    ZeRO stages (Rajbhandari et al. 2020): 1 shards optimizer states over dp, 2 also
    gradients, 3 also weights. Expert weights are sharded over the edp expert-data-parallel ranks that
    replicate them. Bytes per parameter by dtype: state_bytes_per_param.
    """
    def shard(x_dense, x_expert, stage):
        on = sharding >= stage
        return np.where(on, x_dense / dp + x_expert / edp, x_dense + x_expert)
    weights = shard(params_dense * dtype_weight_bytes, params_expert * dtype_weight_bytes, Sharding.ZERO3)
    grads = shard(params_dense * grad_bytes, params_expert * grad_bytes, Sharding.ZERO2)
    optim = shard(params_dense * optimizer_bytes, params_expert * optimizer_bytes, Sharding.ZERO1)
    return weights, grads, optim


def logits_bytes(tokens, vocab, t, bytes_per_entry=4.0):
    """What the loss holds at its peak on the last stage, bytes_per_entry per token per vocab entry / tp: by
    default the fp32 softmax Megatron-LM's `vocab_parallel_cross_entropy` keeps for backward (the gradient is
    written in place); a framework's own figure is Software.loss_bytes_per_logit."""
    return bytes_per_entry * tokens * vocab / t
