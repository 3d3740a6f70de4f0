"""Memory a replica holds: weights, KV cache and reserve; the batch and the KV tokens that fit."""

from __future__ import annotations

from .. import params as P
from .formats import effective_context, weight_bytes
from .replica import Deployment


RUNTIME_RESERVE = 0.05  # share of accelerator memory an engine keeps for runtime, activations and fragmentation
# (vLLM's default gpu_memory_utilization 0.9 keeps 10% incl. activations; 5% here plus activations below)
CPU_RESERVE_BYTES = 2 * 2**30  # CPUs: operating system and engine runtime per replica (assumption)


def reserve_bytes(d: Deployment) -> float:
    return CPU_RESERVE_BYTES if d.is_cpu else RUNTIME_RESERVE * d.memory_capacity


def routed_expert_bytes(d: Deployment) -> float:
    """Bytes of the routed experts of all MoE layers in the replica's weight format (0 for a dense model)."""
    m = d.model
    return 0.0 if not m.moe else m.moe_layers * P.moe_params(m)[0] * d.weights.bits / 8.0


def replica_weight_bytes(d: Deployment) -> float:
    """Bytes of weights the replica's chips hold together: the model once; under expert parallelism the routed
    experts once and everything else on each of the ep chips (Deployment.expert_parallel)."""
    w = weight_bytes(d.model, d.weights) + d.copied_params * d.weights.bits / 8.0
    if not d.expert_parallel:
        return w
    experts = routed_expert_bytes(d)
    return experts + (w - experts) * d.ep


def memory(d: Deployment, batch, context, shared_tokens: int = 0) -> tuple[dict, float]:
    """Bytes the replica holds: weights, KV cache of `batch` sequences of `context` tokens, other.

    shared_tokens: a prefix every sequence shares (prefix caching): its KV blocks are held once, not per sequence."""
    m = d.model
    weights = replica_weight_bytes(d)
    ctx = float(effective_context(m, context))
    shared = min(float(shared_tokens), ctx)
    kv = (float(batch) * (ctx - shared) + shared) * d.kv_bytes_per_token
    other = reserve_bytes(d) + 4.0 * batch * m.hidden * 2.0 * min(context, 4096)
    return {"weights": weights, "kv_cache": kv, "other": other}, d.memory_capacity


def max_batch(d: Deployment, context, shared_tokens: int = 0) -> int:
    """Largest batch whose KV cache for `context` tokens per sequence fits beside the weights (a shared prefix of
    `shared_tokens` held once)."""
    m = d.model
    ctx = float(effective_context(m, context))
    shared = min(float(shared_tokens), ctx)
    free = d.memory_capacity - reserve_bytes(d) - replica_weight_bytes(d) - shared * d.kv_bytes_per_token
    per_seq = (ctx - shared) * d.kv_bytes_per_token + 8.0 * m.hidden * min(context, 4096)
    return max(0, int(free // per_seq))


def kv_capacity_tokens(d: Deployment) -> int:
    """Tokens of KV cache the replica can hold beside its weights and reserve."""
    free = d.memory_capacity - reserve_bytes(d) - replica_weight_bytes(d)
    return max(0, int(free // d.kv_bytes_per_token))
