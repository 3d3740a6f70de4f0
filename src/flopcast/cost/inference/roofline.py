"""One forward pass by per-operator roofline: each operator takes max(FLOPs / compute rate, bytes / memory rate).

Williams et al. 2009, "Roofline"; prefill is then compute-bound, decode bandwidth-bound (Pope et al.
2022, "Efficiently Scaling Transformer Inference", sec. 2-3), and the attention core of decode reads
the whole KV cache. Tensor parallelism adds two all-reduces per layer (Megatron, Shoeybi et al. 2019,
sec. 3) timed by cost/comm.collective_time.
"""

from __future__ import annotations

import math

import numpy as np

from .. import params as P
from ..comm import Collective, collective_time, dispatch_time, p2p_time
from .engines import STATIC_SHAPE_FAMILIES
from .formats import effective_context
from .replica import NEURON_LOGICAL_CORES, Deployment


def _op(flops, nbytes, d: Deployment):
    return np.maximum(flops / d.compute_rate, nbytes / d.memory_rate)


def _mlp_weights(d: Deployment, tokens, copies: int = 1):
    """(weights streamed, weights each token multiplies) of all MLPs for a pass over `tokens` tokens.

    MoE: a batch touches E (1 - (1 - k/E)^tokens) experts per layer in expectation
    (uniform routing), so decode weight traffic grows with the batch. `copies`: chips that each stream their own
    copy of the dense MLPs and shared experts (expert parallelism), the routed experts streamed once."""
    m = d.model
    dense = m.dense_layers * P.mlp_params(m.hidden, m.ffn_hidden, m.mlp)
    if not m.moe:
        return dense * copies + 0 * tokens, dense
    routed, always = P.moe_params(m)
    e = m.moe
    touched = 1.0 - (1.0 - e.topk / e.experts) ** np.maximum(tokens, 1.0)
    streamed = dense * copies + m.moe_layers * (always * copies + routed * touched)
    per_token = dense + m.moe_layers * (always + routed * e.topk / e.experts)
    return streamed, per_token


def step_time(d: Deployment, new_tokens, seqs, kv_tokens, attn_pairs):
    """Seconds of one forward pass (a batch iteration) of the replica -> (time, breakdown).

    new_tokens: tokens computed in the pass (prompt tokens + one per decoding sequence);
    seqs: sequences producing a logit row; kv_tokens: KV-cache tokens read (summed over
    sequences); attn_pairs: query-key pairs scored (sum over sequences of q x kv).
    Expert parallelism (d.expert_parallel): each of the ep chips streams its own copy of every weight but the
    routed experts, there is no tensor-parallel all-reduce, and each MoE layer dispatches and combines the chip's
    tokens / ep tokens to their top-k experts (comm.dispatch_time, hierarchical for group-limited routers).
    The breakdown's parts sum to the total."""
    m = d.model
    new_tokens = np.asarray(new_tokens, dtype=float)
    wb = d.weights.bits / 8.0
    act = 2.0  # bytes per activation element (bf16)
    h = m.hidden
    qkv = m.layers * h * (m.q_dim
                          + 2 * m.kv_dim) if not m.mla else m.layers * (P.attention_params(m) - m.attn_out_dim * h)
    qkv += d.copied_params  # MLA's latent down-projections per rank; K/V projections repeated to MHA
    out = m.layers * m.attn_out_dim * h
    copies = d.ep if d.expert_parallel else 1
    mlp_stream, mlp_per_token = _mlp_weights(d, new_tokens, copies)
    logits = m.vocab * h
    parts = {
        "attention/qkv": _op(2 * qkv * new_tokens, copies * qkv * wb + act * new_tokens * (h + m.q_dim
            + 2 * m.kv_dim) * m.layers, d),
        "attention/core": _op(2.0 * m.layers * (m.q_dim + m.attn_out_dim) * np.asarray(attn_pairs, dtype=float),
                              d.kv_bytes_per_token * np.asarray(kv_tokens, dtype=float), d),
        "attention/out": _op(2 * out * new_tokens, copies * out * wb + act * new_tokens * 2 * h * m.layers, d),
        "mlp": _op(2 * mlp_per_token * new_tokens, mlp_stream * wb + act * new_tokens * 2 * h * m.layers, d),
        "logits": _op(2 * logits * np.asarray(seqs, dtype=float), copies * logits * d.weights.logits_bits / 8.0, d),
    }
    if d.expert_parallel:
        e = m.moe
        a2a = dispatch_time(new_tokens / d.ep, h * act, e.topk, d.ep, 1, d.system, d.calibration, groups=e.groups,
                            topk_groups=e.topk_groups)
        parts["comm/tp"] = 0.0 * new_tokens
        parts["comm/ep"] = 2.0 * m.moe_layers * a2a  # dispatch and combine
    elif d.tp > 1 and not d.is_cpu:
        ar = collective_time(Collective.ALL_REDUCE, new_tokens * h * act, d.tp, 1, d.system, d.calibration)
        parts["comm/tp"] = 2.0 * m.layers * ar
    else:
        parts["comm/tp"] = 0.0 * new_tokens
    # pipeline: the pass's activations sent from each stage to the next (GPipe, Huang et al. 2019)
    parts["comm/pp"] = ((d.pp - 1) * p2p_time(new_tokens * h * act, d.tp, d.system, d.calibration) if d.pp > 1
                        else 0.0 * new_tokens)
    parts["overhead"] = m.layers * d.efficiency.layer_overhead_s + 0.0 * new_tokens
    if uses_moe_blocks(d):
        parts["moe/blocks"] = moe_block_time(d, new_tokens, seqs)
    total = sum(parts.values())
    return total, parts


MOE_BLOCK_TOKENS = 512  # B: neuronx_distributed's DEFAULT_BLOCK_SIZE (modules/moe/model_utils.py)
MOE_BLOCK_ROWS_MOVED = 3  # per block: its token rows gathered in, and the output rows read and written to accumulate


def moe_blocks(tokens, experts, topk):
    """Blocks one MoE layer's blockwise kernel runs for `tokens` tokens routed top-k over `experts` local experts.

    neuronx_distributed ExpertMLPsV2.forward_blockwise (SDK 2.26-2.29): N = ceil((T k - (E - 1)) / B) + E - 1, the
    worst case of E - 1 experts holding one token each, at most T k; the kernel "loops over all blocks, without
    considering they are padded or non-padded" (NKI library, blockwise MM kernels; skip_dma off by default)."""
    tk = np.asarray(tokens, dtype=float) * topk
    return np.minimum(np.ceil(np.maximum(tk - (experts - 1), 0.0) / MOE_BLOCK_TOKENS) + experts - 1, tk)


def runs_blockwise(tokens, per_sequence, topk, experts):
    """Whether a pass runs the blockwise kernel (ExpertMLPsV2.forward, inference): a token-generation pass (one
    token per sequence) never does (selective loading or all experts); a context-encoding or speculation pass does
    when it loads every expert (T k / E >= 1, else selective loading) and fills a block (T k >= B, else all experts
    at once: "more efficient to run all_experts instead of blockwise")."""
    tk = np.asarray(tokens, dtype=float) * topk
    return (np.asarray(per_sequence, dtype=float) > 1.0) & (tk >= experts) & (tk >= MOE_BLOCK_TOKENS)


MOE_TILE = 128  # the kernel's tile: SBUF partitions (nki-library moe_cte_utils.TILE_SIZE)
MOE_BLOCK_FIXED_TRANSFERS = 2  # a block's token indices (dma_transpose) and its expert id
MOE_BLOCK_ROW_TRANSFERS = 4  # per 128-row tile: hidden rows gathered, expert affinities, old output rows, store


def moe_block_transfers(d: Deployment) -> float:
    """DMA transfers one physical NeuronCore issues per block of the blockwise MoE context-encoding kernel.

    Counted from the kernel's published source (nki-library@d2ad3a5 experimental/moe/forward/bwmm_shard_on_H.py,
    blockwise_mm_baseline_shard_hidden; neuronx-distributed's SDK 2.26-2.28 `_call_shard_hidden_kernel` runs the
    compiler's closed kernel of that name at LNC=2, taken to issue the same; at LNC=1 the same loop on one core,
    assumed): every block loads its token
    indices and expert id (2); per 128-row tile of the B-token block it gathers the hidden rows, loads the expert
    affinities (POST_SCALE, the default), gathers the old output rows and stores the new ones (4 x B / 128); it
    loads the expert's gate/up weights in ceil(H_shard / 128) row tiles and its down weights in ceil(I_tp / 128),
    and exchanges the gate and up partial sums with the other core once per 128-wide I tile (2 x ceil(I_tp / 128),
    `sendrecv`, LNC=2 only). DeepSeek-V3 at TP 64 (H 7,168, I_tp 32): 2 + 16 + 28 + 1 + 2 = 49."""
    m, chip = d.model, d.system.chip
    lnc = max(1, chip.cores // NEURON_LOGICAL_CORES.get(chip.id, chip.cores))
    ranks = d.shards // d.ep if d.expert_parallel else d.shards
    i_tiles = math.ceil(m.moe.expert_ffn / max(ranks, 1) / MOE_TILE)
    exchanges = 2 * i_tiles if lnc > 1 else 0
    return (MOE_BLOCK_FIXED_TRANSFERS + MOE_BLOCK_ROW_TRANSFERS * MOE_BLOCK_TOKENS / MOE_TILE
            + math.ceil(m.hidden / lnc / MOE_TILE) + i_tiles + exchanges)


def moe_block_seconds(d: Deployment) -> float:
    """Seconds of one block of the blockwise MoE context-encoding kernel on one rank: a DMA roofline.

    Each rank (logical NeuronCore) runs every block: tensor parallelism splits the experts' intermediate dimension
    (I / ranks), not the blocks. The kernel at LNC=2 splits the hidden dimension over the logical core's physical
    cores ("blockwise_mm_baseline_shard_hidden", NKI library experimental/moe/forward/bwmm_shard_on_H.py: each of
    the LNC shards gathers its H / LNC columns of the block's B token rows, loads that slice of the expert's gate/up
    [H, 2 I_tp] and down [I_tp, H] weights, and reads and writes back its slice of the output rows), so one physical
    core moves (3 B H x 2 + 3 H I_tp x w) / LNC bytes a block. A block takes the longer of moving those bytes at the
    release's `moe_block_bytes_per_s` and issuing its moe_block_transfers at the release's `moe_transfer_s` each:
    "the kernel is limited by how fast transfers can be issued, not by how fast HBM can deliver bytes" when its
    transfers are many and small (Neuron docs, "How to identify and reduce inefficient DMA transfers"; each transfer
    pays descriptor setup, synchronization and semaphore-to-start latency, ~1,300 ns, "Guideline to Avoid
    Under-Utilizing DMA Bandwidth"). Under expert parallelism a chip holds whole experts, I split over its own cores
    only."""
    m, chip, eff = d.model, d.system.chip, d.efficiency
    lnc = max(1, chip.cores // NEURON_LOGICAL_CORES.get(chip.id, chip.cores))
    ranks = d.shards // d.ep if d.expert_parallel else d.shards
    i_tp = m.moe.expert_ffn / max(ranks, 1)
    moved = MOE_BLOCK_ROWS_MOVED * MOE_BLOCK_TOKENS * m.hidden * 2.0 + 3.0 * m.hidden * i_tp * d.weights.bits / 8.0
    return max(moe_block_transfers(d) * eff.moe_transfer_s, moved / lnc / eff.moe_block_bytes_per_s)


def moe_block_time(d: Deployment, new_tokens, seqs=None):
    """Seconds the static-shape engine's MoE kernels add to a pass of `new_tokens` tokens over `seqs` sequences.

    A context-encoding pass that runs the blockwise kernel (runs_blockwise) costs moe_blocks x moe_block_seconds
    a MoE layer (NKI library "MoE CTE Kernel": tokens pre-assigned to blocks by token_position_to_id, results
    accumulated across blocks); under expert parallelism each rank runs its E / ep experts' blocks of its T / ep
    tokens' routed copies. Any other pass (decode, small speculation) runs each expert its tokens touch once, each
    with `moe_expert_overhead_s`. seqs None: one sequence (a prompt). Other engines: 0."""
    t = np.asarray(new_tokens, dtype=float)
    if not uses_moe_blocks(d):
        return 0.0 * t
    m, eff = d.model, d.efficiency
    e = m.moe
    per_seq = t if seqs is None else t / np.maximum(np.asarray(seqs, dtype=float), 1.0)
    ep = d.ep if d.expert_parallel else 1
    blocks = moe_blocks(t / ep, e.experts // ep, e.topk)
    touched = e.experts * (1.0 - (1.0 - e.topk / e.experts) ** np.maximum(t, 1.0))  # as _mlp_weights
    block_s = moe_block_seconds(d) if eff.moe_block_bytes_per_s > 0 else 0.0
    return m.moe_layers * np.where(runs_blockwise(t / ep, per_seq, e.topk, e.experts // ep), blocks * block_s,
                                   touched * eff.moe_expert_overhead_s)


def uses_moe_blocks(d: Deployment) -> bool:
    """Whether the deployment's MoE kernels carry a fixed cost per block (prefill) or per expert run (decode)."""
    eff = d.efficiency
    return (bool(d.model.moe) and d.family in STATIC_SHAPE_FAMILIES
            and (eff.moe_block_bytes_per_s > 0 or eff.moe_expert_overhead_s > 0))


def prefill_time(d: Deployment, batch, input_tokens, cached_tokens=0):
    """Seconds to prefill `batch` prompts of `input_tokens` (causal: I^2/2 pairs each), pass only.

    cached_tokens: the first tokens of every prompt already in the KV cache (automatic prefix caching, vLLM
    APC / SGLang RadixAttention): not computed again; the I - P new tokens still attend to them. An engine without
    a fused causal attention kernel (d.whole_square) scores the whole square and masks it afterwards."""
    b = np.asarray(batch, dtype=float)
    i = np.maximum(np.asarray(input_tokens, dtype=float), 1.0)
    p = np.minimum(np.asarray(cached_tokens, dtype=float), i - 1.0)
    new = i - p
    ctx = effective_context(d.model, i)
    pairs = new * (ctx + effective_context(d.model, p)) / 2.0  # I ctx / 2 uncached; (I - P)(I + P) / 2 with P cached
    if d.whole_square:  # no fused causal kernel: every new token scored against every key, the mask applied after
        pairs = new * ctx
    return step_time(d, b * new, b, b * ctx, b * pairs)


def decode_time(d: Deployment, batch, context):
    """Seconds per output token of one decode step of `batch` sequences, each attending to `context` tokens.

    With speculative decoding (d.speculation): the verification pass over k+1 tokens per sequence plus k
    drafter steps, over the expected tokens per pass (speculation.py); the breakdown gains `draft`."""
    b = np.asarray(batch, dtype=float)
    c = effective_context(d.model, np.maximum(np.asarray(context, dtype=float), 1.0))
    spec = d.speculation
    if spec is None:
        return step_time(d, b, b, b * c, b * c)
    n = b * (spec.k + 1)
    t, parts = step_time(d, n, n, b * c, b * c * (spec.k + 1))
    plain, _ = step_time(d, b, b, b * c, b * c)
    parts = dict(parts, draft=spec.k * spec.drafter_fraction(d.model) * plain)
    e = spec.expected_tokens
    parts = {k: v / e for k, v in parts.items()}
    return sum(parts.values()), parts


def decode_window(d: Deployment, input_tokens, output_tokens):
    """KV tokens each sequence's decode step reads, averaged over the O steps of a request of fixed shape.

    Engines with dynamic shapes (llama.cpp, TGI/vLLM paged attention) read the live context, I + O/2
    on average (attention cost is linear in it). Neuron engines run a decode graph compiled for a fixed
    KV length, here the request's sequence length I + O: every step reads and scores the whole window and
    masks the unused part ("every decode step reads ceil(max_model_len / block_size) KV blocks per request
    from HBM regardless of the request's actual position ... the DMA traffic is real", Neuron docs, vLLM
    Neuron "Decode Context-Length Bucketing")."""
    if d.family in STATIC_SHAPE_FAMILIES:
        return input_tokens + output_tokens
    return input_tokens + output_tokens / 2.0
