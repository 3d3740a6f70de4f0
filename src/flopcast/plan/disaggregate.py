"""Disaggregated candidates of the deployment search: P prefill and D decode replicas per unit, units per instance.

A unit of P prefill replicas (TP t_p) and D decode replicas (TP t_d) takes P t_p + D t_d chips; units that divide
the instance's chips fill it, and the KV cache crosses the instance's scale-up fabric (NVLink, NeuronLink); units
of whole-instance replicas (P + D instances, up to SPLIT_INSTANCES) send it over the scale-out network (EFA). The
roofline bound of a unit is the slower pool (DistServe, Zhong et al. 2024, sec. 3-4: each pool is sized for its
phase, and the unit's rate is the lesser of the two):

    q_max = min(P / t_prefill, D / (O x t_decode(b) / b))      (the colocated bound is 1 / (t_prefill + O t_decode/b))

widened by deploy.BOUND_SLACK, with t_prefill, t_decode and b from the colocated candidate of the same TP and formats
(deploy.roofline_bound). At the best P:D ratio the two bounds per chip are equal; what disaggregation gains (decode
steps no longer stall behind prefills) only the simulation shows, so the units compete with the colocated candidates
in the same branch and bound. The formats and max batch are the best-bounded colocated candidate's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..cost.inference.transfer import Placement
from ..simulate import serving as S
from . import candidates as D

SPLIT_UNITS = 8  # replicas per unit at most (P + D), e.g. 1P7D
SPLIT_INSTANCES = 4  # instances per unit at most when each replica fills an instance (the KV cache over the network)


@dataclass(frozen=True)
class SplitCandidate(D.Candidate):
    """A disaggregated unit: `tp` is the decode replicas' TP; replicas_per_instance counts units per instance."""

    prefill_replicas: int = 1
    decode_replicas: int = 1
    prefill_tp: int = 1

    @property
    def label(self) -> str:
        share = (f"{self.replicas_per_instance} x {self.prefill_replicas}P{self.decode_replicas}D per instance"
                 if self.replicas_per_instance else
                 f"{self.prefill_replicas}P{self.decode_replicas}D over {self.instances_per_replica} instances")
        return (f"{share} (prefill TP{self.prefill_tp}, decode TP{self.tp}), weights {self.weights}, KV "
                f"{self.kv_dtype}, max batch {self.max_seqs}")


def _per_tp(bounded: list) -> dict:
    """tp -> (candidate, deployment) in the formats and max batch of the best-bounded colocated candidate (one
    instance, tensor parallel only)."""
    bounded = [(c, d) for c, d in bounded if c.pp == 1 and c.ep == 1 and c.instances_per_replica == 1]
    if not bounded:
        return {}
    per_chip = lambda x: x[0].bound_qps / x[0].tp
    top = max(bounded, key=per_chip)[0]
    fmt = (top.weights, top.kv_dtype, top.max_seqs)
    return {c.tp: (c, d) for c, d in bounded
            if (c.weights, c.kv_dtype, c.max_seqs) == fmt}


def split_candidates(system, bounded: list) -> list:
    """[(SplitCandidate with its bound, Disaggregated)] for every unit that divides an instance (distinct ratios)."""
    n = system.chips_per_node
    if system.chip.kind == "cpu":
        return []
    per_tp = _per_tp(bounded)
    out, seen = [], set()
    for tp_p, (cp, dp) in sorted(per_tp.items()):
        for tp_d, (cd, dd) in sorted(per_tp.items()):
            for p in range(1, SPLIT_UNITS):
                for q in range(1, SPLIT_UNITS + 1 - p):
                    chips = p * tp_p + q * tp_d
                    g = math.gcd(p, q)
                    key = (tp_p, tp_d, p // g, q // g)
                    if n % chips or key in seen:
                        continue
                    seen.add(key)
                    bound = D.BOUND_SLACK * min(p / cp.prefill_s, q / cd.decode_s)
                    c = SplitCandidate(tp_d, cd.weights, cd.kv_dtype, cd.max_seqs, n // chips, 1, bound_qps=bound,
                                       bound_batch=cd.bound_batch, prefill_s=cp.prefill_s, decode_s=cd.decode_s,
                                       prefill_replicas=p, decode_replicas=q, prefill_tp=tp_p)
                    out.append((c, S.disaggregated(dp, dd, p, q, Placement.SAME_INSTANCE)))
    return out + _instance_units(system, per_tp.get(n))


def _instance_units(system, whole) -> list:
    """Units whose replicas each fill an instance (models too large to split finer): P + D instances, the KV cache
    over the scale-out network."""
    if whole is None or system.max_chips < 2 * system.chips_per_node:
        return []
    c0, d0 = whole
    out = []
    for p in range(1, SPLIT_INSTANCES):
        for q in range(1, SPLIT_INSTANCES + 1 - p):
            if math.gcd(p, q) > 1 or (p + q) * system.chips_per_node > system.max_chips:
                continue
            bound = D.BOUND_SLACK * min(p / c0.prefill_s, q / c0.decode_s)
            c = SplitCandidate(c0.tp, c0.weights, c0.kv_dtype, c0.max_seqs, 0, p + q, bound_qps=bound,
                               bound_batch=c0.bound_batch, prefill_s=c0.prefill_s, decode_s=c0.decode_s,
                               prefill_replicas=p, decode_replicas=q, prefill_tp=c0.tp)
            out.append((c, S.disaggregated(d0, d0, p, q, Placement.ACROSS_INSTANCES)))
    return out


def verify_split(p, workload, config, requests: int, seed: int, budget=None):
    """One instance of a disaggregated deployment simulated whole: all its units' prefill replicas as one pool and
    their decode replicas as the other, at the units' summed capacity. None for one unit per instance."""
    c, pd = p.candidate, p.deployment
    k = c.replicas_per_instance
    if k <= 1:
        return None
    whole = S.disaggregated(pd.prefill, pd.decode, pd.prefill_replicas * k, pd.decode_replicas * k, pd.placement)
    cfg = replace(config, max_seqs=c.max_seqs, replicas=1)
    q = p.replica_qps * k
    n = int(D.run_requests(q, config, S.median_output(workload[1], seed), requests))
    reqs = S.poisson_requests(q, np.random.default_rng(seed), n=n, input_tokens=workload[0],
                              output_tokens=workload[1])
    return S.simulate_any(whole, reqs, cfg, seed=seed, budget=budget)
