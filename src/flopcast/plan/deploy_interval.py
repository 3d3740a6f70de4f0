"""A deployment's prediction interval: its capacity at the SLOs found again with every batch iteration at the slow and
at the fast end of the serving interval of its kind (cost/uncertainty.py, leave-one-source-out errors), and the cost
per token and throughput per chip that follow from each end's capacity.

Capacity at the SLOs is not proportional to the iteration time (queues and the TPOT target cut in where they will), so
each end is its own bisection (plan/deploy.capacity), not the middle figure scaled. Each end's work is bounded
(INTERVAL_WORK units of simulate/serving/budget.py a system); when the budget cuts a bisection short that end is a
lower bound on its capacity and the interval is reported unavailable with the reason, never a guess.
"""

from __future__ import annotations

from dataclasses import replace

from ..cost import inference as inf
from ..simulate import serving as S
from ..simulate.serving.budget import WorkBudget

INTERVAL_WORK = 2_000_000  # both ends of one system's best deployment together (~2 s of CPU on 2 cores)
KEYS = ("replica_capacity_qps", "qps", "cost_per_million_output_tokens_usd", "chip_hours_per_million_output_tokens",
        "output_tokens_per_s_per_chip")


def interval_of(p):
    """The serving interval (cost.uncertainty.Interval) of a deployment point's kind, or None without one."""
    d = p.deployment.decode if isinstance(p.deployment, S.Disaggregated) else p.deployment
    return inf.deployment_interval(d)


def ends(system, p, workload, config, qps, requests: int, seed: int, interval, costs, capacity,
         budget=None) -> tuple[dict, str]:
    """({key: (low, high)} for KEYS, note): the point `p` (plan.deploy.DeployPoint) at each end of `interval`;
    `costs(candidate, replica_qps, output tokens per request, qps)` -> (instances, qps served, USD/M, chip-h/M) as
    plan/deploy ranks; `capacity`: plan.deploy.capacity (the same bisection the search ran). ({}, why) when there
    is no interval or the work budget cut an end."""
    if interval is None:
        return {}, "no interval: uncertainty.yaml has no serving kind for this deployment"
    budget = WorkBudget(INTERVAL_WORK) if budget is None else budget
    cfg = replace(config, max_seqs=p.candidate.max_seqs, replicas=1)
    chips = system.chips_per_node
    points = []
    for speed in (interval.low, interval.high):
        q, res = capacity(p.deployment, cfg, p.candidate.bound_qps * max(speed, 1.0), workload, requests, seed,
                          budget=budget, speed=speed)
        if budget.cut:
            return {}, "unavailable: the work budget of the interval's capacity runs was spent"
        if res is None or q <= 0:
            return {}, f"unavailable: at x{speed:.2f} engine speed no rate meets the SLOs"
        per_req = res.output_tokens_per_s / max(res.throughput_requests_per_s, 1e-12)
        instances, served, usd, ch = costs(p.candidate, q, per_req, qps)
        points.append({"replica_capacity_qps": q, "qps": served, "cost_per_million_output_tokens_usd": usd,
                       "chip_hours_per_million_output_tokens": ch,
                       "output_tokens_per_s_per_chip": served * per_req / (instances * chips)})
    out = {}
    for k in KEYS:  # the point itself inside: each end's bisection stops within its own tolerance
        vals = (points[0][k], points[1][k], getattr(p, "replica_qps" if k == "replica_capacity_qps" else k))
        out[k] = None if None in vals else (min(vals), max(vals))
    return out, ""


def with_ends(d: dict, bounds: dict) -> dict:
    """A point's dict with KEY_low and KEY_high after each key that has bounds."""
    out = {}
    for k, v in d.items():
        out[k] = v
        if bounds.get(k):
            out[f"{k}_low"], out[f"{k}_high"] = bounds[k]
    return out
