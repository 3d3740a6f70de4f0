"""Parameter counts of a decoder-only transformer.

Dense attention + MLP per layer as in Narayanan et al. 2021 (arXiv:2104.04473) sec. 5.1
(12 h^2 per layer for MHA with a 4h GeLU MLP), generalised to GQA (Ainslie et al. 2023),
SwiGLU (Shazeer 2020), MoE (Fedus et al. 2021) and MLA (DeepSeek-AI 2024, arXiv:2405.04434).
Biases and norm weights are counted (2h per norm); they are <0.1% of any catalog model.
"""

from __future__ import annotations

from ..model.workload import Mlp, Model


def attention_params(m: Model) -> float:
    """Weights of one attention block's projections (MLA: with its two low-rank norms)."""
    h = m.hidden
    if m.mla:
        a = m.mla
        qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim
        r = a.q_lora_rank  # 0: queries projected at full rank (DeepSeek-V2-Lite: q_lora_rank null)
        q = h * r + r + r * m.heads * qk_head if r else h * m.heads * qk_head
        kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank
        kv += a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim)
        out = m.heads * a.v_head_dim * h
        return q + kv + out
    return h * (m.q_dim + 2 * m.kv_dim) + m.q_dim * h


def mla_latent_params(m: Model) -> float:
    """Weights of one MLA block's down-projections to the latents every head shares, with their norms: the query
    latent (h x q_lora_rank; none when queries are projected at full rank) and the compressed KV with the RoPE key
    (h x (kv_lora_rank + qk_rope_head_dim)). No head split can shard them, so tensor-parallel engines replicate them
    on every rank (NxD Inference's DeepSeek-V3 contrib model: q_a_proj and kv_a_proj_with_mqa are plain nn.Linear
    beside ColumnParallel q_b_proj/kv_b_proj; vLLM and SGLang make them ReplicatedLinear). 0 without MLA."""
    if not m.mla:
        return 0.0
    a, h = m.mla, m.hidden
    r = a.q_lora_rank
    return (h * r + r if r else 0.0) + h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank


def mlp_params(h: int, ffn: int, mlp: Mlp) -> float:
    """One MLP (or one expert): 2 matrices for GeLU, 3 for SwiGLU."""
    return (3 if mlp == Mlp.SWIGLU else 2) * h * ffn


def moe_params(m: Model) -> tuple[float, float]:
    """(routed expert weights, always-active weights: router + shared experts) of one MoE layer."""
    e = m.moe
    routed = e.experts * mlp_params(m.hidden, e.expert_ffn, m.mlp)
    shared_ffn = e.shared_ffn or e.shared_experts * e.expert_ffn
    always = m.hidden * e.experts + (mlp_params(m.hidden, shared_ffn, m.mlp) if shared_ffn else 0)
    return routed, always


def layer_params(m: Model, moe_layer: bool) -> float:
    """All weights of one layer: two norms (weight + bias, 2h each), attention, MLP or MoE."""
    p = attention_params(m) + 4 * m.hidden
    if moe_layer:
        routed, always = moe_params(m)
        return p + routed + always
    return p + mlp_params(m.hidden, m.ffn_hidden, m.mlp)


def embedding_params(m: Model) -> float:
    """Input embedding + output layer (counted once when tied) + final norm."""
    return m.vocab * m.hidden * (1 if m.tied_embeddings else 2) + m.hidden


def total_params(m: Model) -> float:
    """The model's weights as published: the multi-token-prediction modules not counted (DeepSeek-V3
    reports 671B without its 14B MTP module); `mtp_params` gives those."""
    moe = m.moe_layers * layer_params(m, True) if m.moe_layers else 0.0
    return m.dense_layers * layer_params(m, False) + moe + embedding_params(m)


def mtp_layer_params(m: Model) -> float:
    """One multi-token-prediction module without the embedding and output head it shares (DeepSeek-V3 sec. 2.2):
    the 2h -> h projection M_k, two RMSNorms of its inputs (h each) and one transformer block, MoE where the
    model's last layers are."""
    return 2 * m.hidden * m.hidden + 2 * m.hidden + layer_params(m, m.moe_layers > 0)


def mtp_params(m: Model) -> float:
    """Weights the multi-token-prediction modules add in training (0 without them)."""
    return m.mtp_layers * mtp_layer_params(m)


def active_params(m: Model) -> float:
    """Weights one token touches: routed experts count topk of E."""
    if not m.moe:
        return total_params(m)
    routed, _ = moe_params(m)
    inactive = routed * (1 - m.moe.topk / m.moe.experts)
    return total_params(m) - m.moe_layers * inactive


def matmul_params_per_token(m: Model) -> float:
    """Weights in GEMMs a token passes through: active params less the input embedding and norms.

    The N of the 6N FLOPs-per-token rule (Kaplan et al. 2020, sec. 2.1), with the
    output (logit) layer counted as PaLM does (Chowdhery et al. 2022, App. B).
    """
    return active_params(m) - m.vocab * m.hidden * (0 if m.tied_embeddings else 1) - m.hidden * (4 * m.layers + 1)


def mtp_matmul_params_per_token(m: Model) -> float:
    """GEMM weights each trained token passes through in the multi-token-prediction modules: per module its
    projection, its block's active weights and the shared output head (DeepSeek-V3 sec. 2.2)."""
    if not m.mtp_layers:
        return 0.0
    block = layer_params(m, m.moe_layers > 0) - 4 * m.hidden
    if m.moe_layers:
        routed, _ = moe_params(m)
        block -= routed * (1 - m.moe.topk / m.moe.experts)
    return m.mtp_layers * (2 * m.hidden * m.hidden + block + m.vocab * m.hidden)


def mlp_matmul_params_per_token(m: Model) -> float:
    """GEMM weights of the MLPs a token passes through, every layer: the dense MLP, or an MoE layer's router,
    top-k routed experts and shared experts."""
    dense = m.dense_layers * mlp_params(m.hidden, m.ffn_hidden, m.mlp)
    if not m.moe_layers:
        return dense
    e = m.moe
    routed, always = moe_params(m)
    return dense + m.moe_layers * (routed * e.topk / e.experts + always)
