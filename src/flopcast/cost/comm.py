"""Collective communication time: an alpha-beta model per fabric tier.

A group of n ranks, `stride` apart in rank order, spans the fabric's tiers
innermost first. The algorithm follows the topology: within one tier a ring
(bandwidth term 2(g-1)/g S / B for all-reduce, Thakur et al. 2005; Patarasuk &
Yuan 2009), across tiers the hierarchical scheme NCCL and the Neuron runtime use
(reduce-scatter inside, all-reduce of the 1/g shard across, all-gather inside).
Latency is (g-1) hops on rings and tori (one step below a tier's `mesh_below`: a mesh, as the Neuron runtime
runs small collectives); through switches log2(g) rounds for all-reduce
(NCCL's double binary tree, Sanders et al. 2009) but n-1 ring steps for all-gather and reduce-scatter,
which NCCL runs only as rings (NCCL docs, "Collective Operations"; Thakur et al. 2005): one ring over all
n ranks, each step paying the latency of the tier it crosses.
Bandwidths are per chip per direction; tiers flagged scale_out use the scale-out
efficiency, the others the scale-up efficiency. Works on floats and numpy arrays.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from ..model.system import System, Tier, Topology


class Collective(IntEnum):
    ALL_REDUCE = 0
    REDUCE_SCATTER = 1
    ALL_GATHER = 2
    ALL_TO_ALL = 3


def _members(system: System, n, stride):
    """Group members inside one domain of each tier, innermost first (the last equals n)."""
    n = np.asarray(n, dtype=float)
    stride = np.asarray(stride, dtype=float)
    out = []
    for i, tier in enumerate(system.tiers):
        if i == len(system.tiers) - 1:
            out.append(n)
        else:
            out.append(np.clip(np.floor(tier.size / stride), 1.0, n))
    return out


def _topology_factor(tier: Tier, g):
    """Share of a tier's per-chip bandwidth a group of g ranks can drive."""
    if tier.topology in (Topology.TORUS2D, Topology.TORUS3D) and tier.dims:
        dims = np.cumprod(tier.dims)
        used = np.ones_like(np.asarray(g, dtype=float))
        for d in dims[:-1]:
            used = used + (g > d)
        return used / len(tier.dims)
    return np.ones_like(np.asarray(g, dtype=float))


def _latency_rounds(tier: Tier, g, tree: bool = True):
    """Sequential steps: log2(g) through switches (a tree; g - 1 when the collective is a ring);
    on a torus, a ring per dimension (sum of d - 1)."""
    g = np.asarray(g, dtype=float)
    if tier.topology == Topology.SWITCH and not tree:
        return np.maximum(g - 1.0, 0.0)
    if tier.topology == Topology.SWITCH:
        return np.ceil(np.log2(np.maximum(g, 1.0)))
    if tier.topology in (Topology.TORUS2D, Topology.TORUS3D) and tier.dims:
        rounds = np.zeros_like(g)
        remaining = g
        for d in tier.dims:
            take = np.minimum(remaining, d)
            rounds = rounds + take - 1.0
            remaining = remaining / take
        return rounds + np.maximum(remaining - 1.0, 0.0)
    return g - 1.0


def tier_bandwidth(tier: Tier, calibration) -> float:
    eff = calibration.scaleout_efficiency if tier.scale_out else calibration.scaleup_efficiency
    return tier.bandwidth * eff


def collective_time(kind: Collective, nbytes, n, stride, system: System, calibration):
    """Seconds for one collective over n ranks `stride` apart.

    nbytes is the full buffer per rank: the all-reduce input, the reduce-scatter
    input, the all-gather output, the all-to-all send buffer.
    """
    nbytes = np.asarray(nbytes, dtype=float)
    n = np.asarray(n, dtype=float)
    members = _members(system, n, stride)
    total = np.zeros(np.broadcast(nbytes, n, np.asarray(stride)).shape)
    prev = np.ones_like(n)
    if kind == Collective.ALL_TO_ALL:
        lat = np.zeros_like(total)
        for tier, mem in zip(system.tiers, members):
            share = (mem - prev) / np.maximum(n, 1.0)  # data whose destination first differs at this tier
            bw = tier_bandwidth(tier, calibration) * _topology_factor(tier, mem)
            total = np.maximum(total, nbytes * share / bw)
            lat = np.where(mem > prev, tier.latency * _latency_rounds(tier, mem), lat)
            prev = mem
        return np.where(n > 1, total + lat, 0.0)
    factor = 2.0 if kind == Collective.ALL_REDUCE else 1.0
    tree = kind == Collective.ALL_REDUCE
    for tier, mem in zip(system.tiers, members):
        g = mem / prev
        size = nbytes / prev
        bw = tier_bandwidth(tier, calibration) * _topology_factor(tier, g)
        rounds = _latency_rounds(tier, g, tree=tree)
        if tier.topology == Topology.SWITCH and not tree:
            # one ring over all n ranks: of its n - 1 steps, those from one domain of the tier inside into the
            # next cross this tier (n/prev - n/mem of them), every other step stays inside and pays the inner
            # latency (NCCL's ring model, src/graph/tuning.cc: (nsteps - nInterSteps) x intraLat + nInterSteps
            # x interLat), so a ring across nodes takes n - 1 steps, not the sum of per-tier rings' g - 1
            rounds = n / prev - n / mem
        if tier.mesh_below > 0:
            # below the tier's mesh threshold every rank writes its chunks straight to every other: one step
            # whatever the ranks (Neuron docs, "Intra-node Collective Communications": Mesh, O(1) latency, the
            # runtime's choice under 1 MB; Ring O(N) "fallback only"); the bytes still cross the same links
            rounds = np.where(size < tier.mesh_below, 1.0, rounds)
        step = factor * ((g - 1.0) / g * size / bw + rounds * tier.latency)
        total = total + np.where(g > 1.0, step, 0.0)
        prev = mem
    return total


def p2p_time(nbytes, stride, system: System, calibration):
    """Seconds to send nbytes to the rank `stride` places away (pipeline send/recv)."""
    nbytes = np.asarray(nbytes, dtype=float)
    stride = np.asarray(stride, dtype=float)
    out = np.zeros(np.broadcast(nbytes, stride).shape)
    done = np.zeros(out.shape, dtype=bool)
    for tier in system.tiers:
        inside = (stride < tier.size) & ~done
        t = nbytes / tier_bandwidth(tier, calibration) + tier.latency
        out = np.where(inside, t, out)
        done |= inside
    last = system.tiers[-1]
    return np.where(done, out, nbytes / tier_bandwidth(last, calibration) + last.latency)


def expected_distinct(candidates, picks):
    """Expected number of distinct bins `picks` uniform draws land in among `candidates` bins:
    D (1 - (1 - 1/D)^k) (the occupancy problem; Feller 1968, ch. II.11)."""
    d = np.maximum(np.asarray(candidates, dtype=float), 1.0)
    return d * (1.0 - (1.0 - 1.0 / d) ** picks)


def expected_ranks(experts, n, topk):
    """Expected number of distinct ranks a token's topk experts (distinct, drawn uniformly from `experts` spread
    evenly over n ranks) lie on: n (1 - C(E - E/n, k) / C(E, k)), the hypergeometric chance that a rank holds none
    of them. Works on arrays of n."""
    n = np.maximum(np.asarray(n, dtype=float), 1.0)
    none = np.ones_like(n)
    for i in range(int(topk)):
        none = none * np.maximum(experts - experts / n - i, 0.0) / (experts - i)
    return n * (1.0 - none)


def dispatch_time(tokens, token_bytes, topk, n, stride, system: System, calibration, *, groups=0, topk_groups=0,
                  experts=0, per_rank=False):
    """Seconds for one MoE dispatch (or combine) all-to-all of `tokens` tokens, each to `topk` experts spread
    evenly over n expert-parallel ranks `stride` apart.

    Without a group limit every (token, expert) pair is one message (Megatron-Core's all-to-all dispatcher), the
    plain all-to-all of `collective_time`; with per_rank (a fused DeepEP/HybridEP dispatch, model.strategy.
    Dispatcher.FLEX) every (token, destination rank) pair is, expected_ranks of the `experts` per token. With
    group-limited routing (each token's experts in at most `topk_groups` of `groups` contiguous expert groups, so
    on at most topk_groups x max(1, nodes / groups) nodes: node-limited routing, DeepSeek-V3 sec. 2.1.2) across
    nodes the dispatch is hierarchical, as DeepSeek-V3 runs it
    (report sec. 3.2.2, DeepEP): a token crosses the scale-out network once per distinct remote node, then
    NVLink forwards it to the ranks of that node holding its experts; both legs run at once, so the time is the
    slower one. Distinct nodes per token: the occupancy expectation of topk draws among min(nodes, limit) nodes,
    of which a share (nodes - 1) / nodes is remote by symmetry. The innermost tier's domain is the node.
    """
    copies = expected_ranks(experts, n, topk) if per_rank and experts else topk
    plain = collective_time(Collective.ALL_TO_ALL, tokens * copies * token_bytes, n, stride, system, calibration)
    if not (groups and topk_groups) or len(system.tiers) < 2:
        return plain
    n = np.asarray(n, dtype=float)
    members = _members(system, n, stride)
    per_node = members[0]
    nodes = np.maximum(n / per_node, 1.0)
    limit = topk_groups * np.maximum(1.0, nodes / groups)
    distinct = expected_distinct(np.minimum(nodes, limit), topk)
    remote = distinct * (nodes - 1.0) / nodes
    inner = system.tiers[0]
    intra = tokens * topk * token_bytes * (per_node - 1.0) / np.maximum(per_node, 1.0)
    t_intra = intra / (tier_bandwidth(inner, calibration) * _topology_factor(inner, per_node))
    total, lat, prev = t_intra, np.where(per_node > 1, inner.latency * _latency_rounds(inner, per_node), 0.0), per_node
    for tier, mem in zip(system.tiers[1:], members[1:]):
        share = (mem - prev) / np.maximum(n - per_node, 1.0)  # remote nodes whose domain first differs here
        bw = tier_bandwidth(tier, calibration) * _topology_factor(tier, mem)
        total = np.maximum(total, tokens * remote * share * token_bytes / bw)
        lat = np.where(mem > prev, lat + tier.latency * _latency_rounds(tier, mem / prev), lat)
        prev = mem
    hierarchical = np.where(n > 1, total + lat, 0.0)
    return np.where(nodes > 1, hierarchical, plain)
