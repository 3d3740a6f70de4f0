"""Model FLOPs per trained token (PaLM's 6N + 12 L H Q T) and the FLOPs each recomputation repeats: what MFU
and HFU divide by (simulate/training.py)."""

from __future__ import annotations

import numpy as np

from ..cost import params
from ..model.strategy import Recompute
from ..model.workload import Model


def _attention_flops_per_token(model: Model) -> float:
    """Attention-score FLOPs per token, forward + backward, without the causal half.

    PaLM's 12 L H Q T for MHA (Chowdhery et al. 2022, App. B), written 6 L T (q_dim + attn_out_dim)
    so MLA's different query and value widths count; sliding-window layers see the window, not T.
    The multi-token-prediction modules count as layers."""
    s_eff = model.seq_len
    if model.sliding_share:
        share = model.sliding_share
        s_eff = (1 - share) * model.seq_len + share * min(model.sliding_window, model.seq_len)
    return 6.0 * (model.layers + model.mtp_layers) * s_eff * (model.q_dim + model.attn_out_dim)


def _selective_flops_per_token(model: Model) -> float:
    """FLOPs per token selective recomputation repeats: the attention scores' forward (Korthikanti et al. 2022);
    for an MLA model DeepSeek-V3's recipe, the forward of the up-projections (2 FLOPs per weight, every layer)."""
    if not model.mla:
        return _attention_flops_per_token(model) / 3.0
    a = model.mla
    up = a.q_lora_rank * model.q_dim + a.kv_lora_rank * model.heads * (a.qk_nope_head_dim + a.v_head_dim)
    return 2.0 * up * (model.layers + model.mtp_layers)


def _mlp_flops_per_token(model: Model) -> float:
    """FLOPs per token MLP recomputation repeats: the forward of the MLP's weights a token passes (2 per weight;
    MoE layers: router, top-k routed and shared experts)."""
    return 2.0 * params.mlp_matmul_params_per_token(model)


def _op_flops_per_token(model: Model) -> float:
    """FLOPs per token torchtitan's per-operator recomputation repeats (simulate.layer._op_recomputed_fwd): the forward
    of every second matmul of a block, wk, wo and the MLP's w3 (SwiGLU) or down projection (GeLU); an MLA or MoE
    model's as half of its GEMMs' forward."""
    if model.mla or model.moe:
        return params.matmul_params_per_token(model)
    per_layer = model.hidden * (model.kv_dim + model.attn_out_dim + model.ffn_hidden)
    return 2.0 * per_layer * (model.layers + model.mtp_layers)


def model_flops_per_token(model: Model) -> float:
    """Model FLOPs per trained token: 6N + 12 L H Q T (PaLM, Chowdhery et al. 2022, App. B).

    N counts the weights in GEMMs a token passes (routed experts: top-k of them), the logit layer and the
    multi-token-prediction modules included; attention scores are counted without the causal half, as PaLM does.
    """
    n = params.matmul_params_per_token(model) + params.mtp_matmul_params_per_token(model)
    return 6.0 * n + _attention_flops_per_token(model)


def recompute_flops_per_token(model: Model, recompute, flash_attention: bool):
    """FLOPs per token each layout's recomputation repeats (what HFU adds to MFU's), per Recompute value (array)."""
    mlp = _mlp_flops_per_token(model) + (0.0 if flash_attention else _attention_flops_per_token(model) / 3.0)
    # QKV_CONTEXT: the MLP's and the output projection's forward (2 FLOPs per weight, every layer)
    qkv_context = mlp + 2.0 * model.hidden * model.attn_out_dim * (model.layers + model.mtp_layers)
    # QKV: those and the attention core's forward (the context is not kept)
    qkv = qkv_context + (_selective_flops_per_token(model) if flash_attention else 0.0)
    return np.select([recompute == Recompute.FULL, recompute == Recompute.SELECTIVE, recompute == Recompute.MLP,
                      recompute == Recompute.OP, recompute == Recompute.QKV_CONTEXT, recompute == Recompute.QKV],
                     [model_flops_per_token(model) / 3.0, _selective_flops_per_token(model), mlp,
                      _op_flops_per_token(model), qkv_context, qkv], 0.0)
