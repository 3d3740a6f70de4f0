"""Memory per chip: weights, gradients, optimizer states, activations.

Activations follow Korthikanti et al. 2022 (arXiv:2205.05198), Table 2 and sec. 4,
generalised term by term to GQA, SwiGLU, MoE and fused (flash) attention, which
keeps no s^2 score matrix (Dao et al. 2022). Works on floats and numpy arrays.
"""

from __future__ import annotations

import numpy as np

from ..model.strategy import Recompute, Schedule, Sharding
from ..model.workload import Mlp, Model
from ..units import GiB

ACT_BYTES = 2  # 16-bit activations
WEIGHT_BYTES = 2  # 16-bit weights used by the GEMMs
GRAD_BYTES = 4  # fp32 gradient accumulation buffer (Megatron main_grad; Narayanan et al. 2021 sec. 5)
OPTIMIZER_BYTES = 12  # fp32 master weights + Adam m and v (Rajbhandari et al. 2020, ZeRO, sec. 3.1)
# Assumption: runtime context, communication buffers and allocator fragmentation per chip.
# Not fitted; users override with reserve_bytes.
RESERVE_BYTES = 2 * GiB


def mlp_activation_elems(h, ffn, mlp: Mlp):
    """Sharded (split by tp) elements per token stored by one MLP: GeLU in and out (Korthikanti 8sbh+8sbh
    in bytes), or SwiGLU's gate and up outputs and their product."""
    return (3.0 if mlp == Mlp.SWIGLU else 2.0) * ffn


def layer_activation_bytes(m: Model, s, b, t, *, sp, recompute, moe_layer: bool, flash: bool = True, fp8=False,
                           quantized_bytes=1.0):
    """Activation bytes one layer keeps for backward, per micro-batch, on one chip.

    s is the sequence chunk on this chip (seq / cp), b the micro-batch, t the tp degree.
    With flash=False, dropout and MHA/GeLU this is exactly Korthikanti Table 2:
    sbh (10 + 24/t + 5as/(ht)) without sp, sbh (34/t + 5as/(ht)) with sp, 2sbh/t with full recompute.
    With fp8 (array or bool) the inputs of the FP8 GEMMs are kept as their one-byte quantized copies
    (Transformer Engine saves the quantized input for the weight-gradient GEMM: TE documentation, "Low
    precision training / Performance considerations / Memory usage"): the QKV input, the dense MLP's
    input, the attention output (projection input) and the MLP's second-GEMM input; an MoE layer's
    router reads its input in 16 bits, its experts' permuted inputs and second-GEMM inputs are FP8.
    quantized_bytes (array or float): bytes per element of those copies, 1 for FP8/INT8, 0.5625 for NVFP4.
    """
    h = m.hidden
    mask = 1.0 if m.dropout else 0.0  # one byte per element (Korthikanti: sbh per dropout mask)
    # replicated across tp unless sequence parallel: two norm inputs, QKV input, MLP input, two dropout masks
    replicated_bytes = ACT_BYTES * 4 * h + 2 * mask * h
    if moe_layer:
        e = m.moe
        shared_ffn = e.shared_ffn or e.shared_experts * e.expert_ffn
        mlp_elems = e.topk * (h + mlp_activation_elems(h, e.expert_ffn, m.mlp)) + (
            mlp_activation_elems(h, shared_ffn, m.mlp) if shared_ffn else 0.0
        )
    else:
        mlp_elems = mlp_activation_elems(h, m.ffn_hidden, m.mlp)
    # sharded: Q, K, V, the attention output (projection input) and the MLP's intermediates
    sharded_bytes = ACT_BYTES * (m.q_dim + 2 * m.kv_dim + m.attn_out_dim + mlp_elems)
    # bytes saved by keeping the FP8 GEMMs' inputs at one byte instead of ACT_BYTES
    if moe_layer:
        fp8_replicated = h
        fp8_sharded = m.attn_out_dim + e.topk * (h + e.expert_ffn) + shared_ffn
    else:
        fp8_replicated = 2 * h
        fp8_sharded = m.attn_out_dim + m.ffn_hidden
    if np.any(fp8):  # (skipped when no layout computes in FP8: the search's hot path)
        one_byte = np.where(fp8, ACT_BYTES - quantized_bytes, 0.0)
        replicated_bytes = replicated_bytes - one_byte * fp8_replicated
        sharded_bytes = sharded_bytes - one_byte * fp8_sharded
    per_token = np.where(sp, (replicated_bytes + sharded_bytes) / t, replicated_bytes + sharded_bytes / t)
    scores = 0.0 if flash else 5.0 * m.heads * s / t  # softmax out 2, dropout mask 1, dropout out 2 (bytes)
    stats = 4.0 * 2 * m.heads / t if flash else 0.0  # flash attention keeps fp32 row max and sum
    keep_scores = np.where(recompute == Recompute.NONE, scores, 0.0)
    full = s * b * ACT_BYTES * h / np.where(sp, t, 1)
    partial = s * b * (per_token + keep_scores + stats)
    return np.where(recompute == Recompute.FULL, full, partial)


def inflight_factor(pp, vp, m, schedule):
    """Micro-batches' worth of one stage's activations the busiest (first) stage holds.

    1F1B: min(p, m) (Narayanan et al. 2021 sec. 2.2); interleaved: x (1 + (p-1)/(p v))
    (Korthikanti et al. 2022 sec. 4.2.3); GPipe: all m.
    """
    base = np.minimum(pp, m)
    inter = base * (1.0 + (pp - 1.0) / (pp * vp))
    return np.where(schedule == Schedule.GPIPE, m, np.where(schedule == Schedule.INTERLEAVED, inter, base))


def state_bytes(params_dense, params_expert, dp, ep, sharding, *, dtype_weight_bytes=WEIGHT_BYTES):
    """(weights, gradients, optimizer) bytes per chip for the params a chip owns before dp sharding.

    ZeRO stages (Rajbhandari et al. 2020): 1 shards optimizer states over dp, 2 also
    gradients, 3 also weights. Expert weights are sharded over the dp/ep ranks that replicate them.
    """
    edp = np.maximum(dp / ep, 1)
    def shard(x_dense, x_expert, stage):
        on = sharding >= stage
        return np.where(on, x_dense / dp + x_expert / edp, x_dense + x_expert)
    weights = shard(params_dense * dtype_weight_bytes, params_expert * dtype_weight_bytes, Sharding.ZERO3)
    grads = shard(params_dense * GRAD_BYTES, params_expert * GRAD_BYTES, Sharding.ZERO2)
    optim = shard(params_dense * OPTIMIZER_BYTES, params_expert * OPTIMIZER_BYTES, Sharding.ZERO1)
    return weights, grads, optim


def logits_bytes(tokens, vocab, t):
    """The fp32 softmax the vocab-parallel cross-entropy keeps for backward on the last stage:
    4 bytes per token per vocab entry / tp (Megatron-LM `vocab_parallel_cross_entropy`; the
    gradient is written in place)."""
    return 4.0 * tokens * vocab / t
