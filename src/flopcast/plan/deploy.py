"""Deployment search: how to serve a model on a system at the SLOs for the least cost per token.

Per system the candidates are tensor-parallel degree x weight format x KV-cache format x max batch
(vLLM's max_num_seqs), for MoE models expert parallel over each replica's chips, and disaggregated units of
prefill and decode replicas (plan/disaggregate.py), each replicated over the instance's chips (replicas per
instance = chips per instance // tp; a replica larger than an instance spans whole instances). Every candidate gets a
roofline bound first (cost/inference): it must fit and meet both SLOs alone, and its capacity is at most

    q_max = 1 / (t_prefill(I) + O x t_decode(b) / b),  b = the largest batch with t_decode(b) <= SLO_tpot

(a request needs its prefill and O decode steps shared with b - 1 others; prefill timed in a full 8192-token pass;
widened by BOUND_SLACK). Candidates are then simulated (simulate/serving, the discrete-event simulator, one replica,
Poisson arrivals, the highest steady rate by bisection) in ascending order of their bound on cost per token, until
the next bound is no better than the best simulated cost (branch and bound) or MAX_SIMULATIONS ran. An instance's
capacity is its replicas' sum: Poisson arrivals split at random over replicas stay Poisson, and least-loaded routing
does no worse than a random split.

Cost per million output tokens = price of the instances / output tokens they deliver at capacity (with
`qps`: whole instances enough for that rate). Systems without a price are ranked by chip-hours per
million output tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..cost import inference as inf
from ..errors import FlopcastError
from ..model.system import Dtype, System
from ..model.workload import Model
from ..simulate import serving as S
from ..simulate.serving.budget import BudgetSpent, WorkBudget
from ..simulate.serving.capacity import ATTAINMENT  # share of requests within both SLOs at capacity
from . import deploy_interval as ends
from . import deploy_work as work
from . import disaggregate as split
from .candidates import (BACKLOG_GROWTH, BOUND_SLACK, MAX_SIMULATIONS, MAX_UTILISATION, MAX_VERIFY_REQUESTS,
                         Candidate, burst_requests, run_requests, span_s)

MAX_SEQS = (32, 64, 128, 256)  # vLLM max_num_seqs choices (default 256)
PREFILL_TOKENS = 8192  # tokens of one prefill pass (vLLM max_num_batched_tokens default here)
ACCEL_WEIGHTS, ACCEL_KV = ("bf16", "fp8"), ("bf16", "fp8")
# simulation work one system's search may spend (simulate/serving/budget.py units, ~1 us of CPU each on this
# 2-core machine: ~7 s), SEARCH_SHARE of it on the candidates; api.deploy shares DEPLOY_WORK x DEPLOY_SYSTEMS over
# all the systems it is given (with start-up and the roofline bounds, ~1 s a system, a run stays near 15 s of CPU)
DEPLOY_WORK = 7_000_000
DEPLOY_SYSTEMS = 1.5
RANKED = 5  # candidates the budget left unsimulated listed (ranked on their roofline bounds)
SEARCH_SHARE = 0.75
CPU_WEIGHTS, CPU_KV = ("q4_0", "q8_0"), ("fp16",)


@dataclass(frozen=True)
class DeployPoint:
    """A simulated candidate at its capacity (or at the user's rate)."""

    candidate: Candidate
    deployment: object  # cost.inference.Deployment of one replica
    replica_qps: float  # capacity of one replica at the SLOs
    result: object  # simulate.serving.ServingResult of one replica at replica_qps
    instances: int  # instances the deployment rents (1 at capacity; enough for `qps` otherwise)
    qps: float  # requests/s the deployment serves
    cost_per_million_output_tokens_usd: float | None
    chip_hours_per_million_output_tokens: float
    output_tokens_per_s_per_chip: float

    def to_dict(self) -> dict:
        c, r = self.candidate, self.result
        return {"tp": c.tp, "pp": c.pp, "ep": c.ep, "weights": c.weights, "kv_dtype": c.kv_dtype,
                "max_seqs": c.max_seqs,
                "replicas_per_instance": c.replicas_per_instance, "instances_per_replica": c.instances_per_replica,
                "instances": self.instances, "qps": self.qps, "replica_capacity_qps": self.replica_qps,
                "roofline_bound_qps": c.bound_qps,
                "cost_per_million_output_tokens_usd": self.cost_per_million_output_tokens_usd,
                "chip_hours_per_million_output_tokens": self.chip_hours_per_million_output_tokens,
                "output_tokens_per_s_per_chip": self.output_tokens_per_s_per_chip,
                "ttft_s": r.ttft_s, "tpot_s": r.tpot_s, "e2e_s": r.e2e_s, "slo_attainment": r.slo_attainment,
                "disaggregated": (self.deployment.to_dict() if isinstance(self.deployment, S.Disaggregated)
                                  else None), "label": c.label}


@dataclass(frozen=True)
class DeployOutcome:
    system: System
    best: DeployPoint | None
    baseline: DeployPoint | None  # one replica over all the instance's chips, default formats
    simulated: tuple
    pareto: tuple  # simulated points no other beats on both throughput per chip and p50 TPOT
    considered: int
    pruned: dict = field(default_factory=dict)  # reason -> count
    reason: str = ""  # why there is no deployment
    verified: object = None  # ServingResult of the best's whole instance (all its replicas, routed) at its rate
    budget_note: str = ""  # what the work budget cut ("" when nothing)
    budget: dict = field(default_factory=dict)  # WorkBudget.to_dict() of the search
    unsimulated: tuple = ()  # (candidate, bound cost) the budget left unsimulated, cheapest bound first
    interval: object = None  # cost.uncertainty.Interval of the best's kind of serving forecast
    bounds: dict = field(default_factory=dict)  # key -> (low, high) of the best at each end (plan/deploy_interval)
    interval_note: str = ""  # why the best has no bounds ("" when it has)

    def unsimulated_dicts(self) -> list[dict]:
        """The unsimulated candidates ranked on the roofline: an upper bound on each replica's capacity and so a lower
        bound on its cost (USD or chip-hours per million output tokens, as the system is ranked)."""
        unit = ("cost_per_million_output_tokens_usd_at_least" if self.system.price_per_hour is not None
                else "chip_hours_per_million_output_tokens_at_least")
        return [{"label": c.label, "tp": c.tp, "pp": c.pp, "ep": c.ep, "weights": c.weights, "kv_dtype": c.kv_dtype,
                 "max_seqs": c.max_seqs, "roofline_bound_qps": c.bound_qps, unit: cost}
                for c, cost in self.unsimulated[:RANKED]]


def _chips(system: System) -> int:
    return system.chips_per_node


def _tp_choices(system: System) -> list[int]:
    n = _chips(system)
    if system.chip.kind == "cpu":
        return [t for t in range(1, n + 1) if n % t == 0]
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= n and n % t == 0] + [n]
    nodes = max(1, system.max_chips // n)
    tps += [n * k for k in (2, 4) if k <= nodes]  # replicas spanning whole instances (large models)
    return sorted(set(tps))


def _formats(system: System, weights, kv_dtypes) -> tuple[tuple, tuple]:
    cpu = system.chip.kind == "cpu"
    if weights is None:
        weights = CPU_WEIGHTS if cpu else tuple(w for w in ACCEL_WEIGHTS
                                                if w != "fp8" or system.chip.peak_flops.get(Dtype.FP8))
    if kv_dtypes is None:
        kv_dtypes = CPU_KV if cpu else ACCEL_KV
    return tuple(weights), tuple(kv_dtypes)


def candidates(system: System, weights=None, kv_dtypes=None, max_seqs=MAX_SEQS, model: Model | None = None
               ) -> list[Candidate]:
    """Every layout x format x max-batch combination for one instance type; for a MoE `model` each layout of more
    than one chip also as expert parallel (experts over its chips, attention data-parallel)."""
    ws, kvs = _formats(system, weights, kv_dtypes)
    n, out = _chips(system), []
    experts = model.moe.experts if model is not None and model.moe and system.chip.kind != "cpu" else 0
    for tp in _tp_choices(system):
        per, span = (n // tp, 1) if tp <= n else (0, tp // n)
        eps = [1] + ([tp] if experts and tp > 1 and experts % tp == 0 else [])
        for ep in eps:
            for w in ws:
                for kv in kvs:
                    out += [Candidate(tp, w, kv, b, per, span, ep=ep) for b in max_seqs]
    for tp, pp, per, span in _pp_layouts(system):
        out += [Candidate(tp, w, kv, b, per, span, pp=pp) for w in ws for kv in kvs for b in max_seqs]
    return out


def _pp_layouts(system: System) -> list[tuple[int, int, int, int]]:
    """(tp, pp, replicas per instance, instances per replica) of pipelines that fill one instance (tp x pp = its
    chips) or run one full-instance TP stage per instance over 2 or 4 instances (a model too large for one)."""
    n = _chips(system)
    if system.chip.kind == "cpu":
        return []
    nodes = max(1, system.max_chips // n)
    out = [(n // pp, pp, 1, 1) for pp in (2, 4) if n % pp == 0 and n // pp >= 1]
    return out + [(n, pp, 0, pp) for pp in (2, 4) if pp <= nodes]


def roofline_bound(model: Model, system: System, c: Candidate, n_in: int, n_out: int, config,
                   inference_calibration=None) -> tuple:
    """(candidate with its bound, deployment) or (None, reason) when the roofline rules it out."""
    d = inf.deployment(model, system, chips=c.tp * c.pp, tp=c.tp, weights=c.weights, kv_dtype=c.kv_dtype,
                       inference_calibration=inference_calibration, ep=c.ep, pp=c.pp)
    one = inf.predict(d, 1, n_in, n_out)
    if not one.fits:
        return None, "does not fit"
    if one.ttft_s > config.slo_ttft_s or one.tpot_s > config.slo_tpot_s:
        return None, "misses the SLOs alone"
    ve = d.virtual_engines  # a pipeline runs pp batches at once, each up to max_seqs in 1/pp of the KV cache
    cap = min(c.max_seqs, max(1, inf.max_batch(d, n_in + n_out) // ve))
    b = np.arange(1, cap + 1)
    t_dec, _ = inf.decode_time(d, b, inf.decode_window(d, n_in, n_out))
    ok = np.nonzero(np.asarray(t_dec) <= config.slo_tpot_s)[0]
    best = int(b[ok[-1]]) if len(ok) else 1
    k = max(1, PREFILL_TOKENS // max(n_in, 1))
    t_pre = float(inf.prefill_time(d, k, n_in)[0]) / k
    t_out = n_out * float(np.asarray(t_dec)[best - 1]) / best
    q = BOUND_SLACK * ve / (t_pre + t_out)
    return replace(c, bound_qps=q, bound_batch=best, prefill_s=t_pre, decode_s=t_out), d


def _costs(system: System, c: Candidate, replica_qps: float, out_tokens_per_request: float, qps: float | None):
    """(instances, qps served, USD per million output tokens or None, chip-hours per million output tokens)."""
    n = _chips(system)
    if qps is None:  # at capacity: one instance's replicas (or the instances one replica spans)
        instances = c.instances_per_replica
        served = replica_qps * max(c.replicas_per_instance, 1)
    else:
        replicas = math.ceil(qps / replica_qps)
        instances = (math.ceil(replicas / c.replicas_per_instance) if c.replicas_per_instance
                     else replicas * c.instances_per_replica)
        served = qps
    tokens_per_hour = served * out_tokens_per_request * 3600.0
    price = system.price_per_hour
    usd = None if price is None else instances * price / tokens_per_hour * 1e6
    return instances, served, usd, instances * n / tokens_per_hour * 1e6


def _key(system: System):
    return ((lambda p: p.cost_per_million_output_tokens_usd) if system.price_per_hour is not None
            else (lambda p: p.chip_hours_per_million_output_tokens))


def _bound_key(system: System, c: Candidate, n_out: float, qps):
    _, _, usd, ch = _costs(system, c, c.bound_qps, n_out, qps)
    return usd if system.price_per_hour is not None else ch


def _steady(d, cfg, q: float, workload, requests: int, seed: int, span_s: float, budget=None,
            most: int = MAX_VERIFY_REQUESTS, speed: float = 1.0):
    """(meets, result): one run at `q`; it meets when 90% of all requests and 90% of the last third of arrivals
    are within both SLOs and the last third's mean TTFT is no more than BACKLOG_GROWTH x the middle third's
    (+5% of the TTFT target): a rate beyond what the replica serves builds a backlog whose wait grows with time."""
    n = int(min(max(requests, math.ceil(q * span_s)), most))
    reqs = S.poisson_requests(q, np.random.default_rng(seed), n=n, input_tokens=workload[0], output_tokens=workload[1])
    o, res = S.run_any(d, reqs, cfg, seed=seed, budget=budget, speed=speed)
    first, done = np.array(o.first_s), np.array(o.done_s)
    arr, out = reqs.arrival_s, reqs.output_tokens
    tpot = np.where(out > 1, (done - first) / np.maximum(out - 1, 1), 0.0)
    meets = ~np.isnan(done) & (first - arr <= cfg.slo_ttft_s) & (tpot <= cfg.slo_tpot_s)
    tail = meets[2 * n // 3:]
    ttft = first - arr
    middle, late = np.nanmean(ttft[n // 3:2 * n // 3]), np.nanmean(ttft[2 * n // 3:])
    growing = late > BACKLOG_GROWTH * middle + 0.05 * cfg.slo_ttft_s
    return bool(meets.mean() >= ATTAINMENT and tail.mean() >= ATTAINMENT and not growing), res


def service_rate(d, cfg, workload, seed: int, budget=None, speed: float = 1.0) -> float:
    """Requests/s the replica completes when it never runs dry: a burst of 8 x max_seqs requests (at least 1,000)."""
    n = burst_requests(cfg.max_seqs)
    reqs = S.poisson_requests(1e6, np.random.default_rng(seed), n=n, input_tokens=workload[0],
                              output_tokens=workload[1])
    return S.simulate_any(d, reqs, cfg, seed=seed, budget=budget, speed=speed).throughput_requests_per_s


def capacity(d, cfg, start_qps: float, workload, requests: int, seed: int, iterations: int = 8, budget=None,
             most: int = MAX_VERIFY_REQUESTS, speed: float = 1.0):
    """Highest steady rate (see _steady) up to MAX_UTILISATION x the service rate, by bisection; (0, None) if none.

    Near a utilisation of 1 a finite run meets the SLOs at rates whose queue grows without bound in a longer
    one (llama3-8b, p5.48xlarge TP2: 64 req/s meets them over 4,300 requests, 28% over 17,000), so the rate
    is capped below the burst service rate. `budget` (simulate/serving/budget.py): when it runs out the bisection
    stops at the highest rate verified so far (a lower bound; budget.cut is set). `most`: requests per steady run
    at most (fewer than MAX_VERIFY_REQUESTS when the budget cannot pay for full runs). `speed`: every batch iteration
    that many times as fast (an end of the prediction interval, plan/deploy_interval.py)."""
    span = span_s(cfg, S.median_output(workload[1], seed))
    lo, best = 0.0, None
    try:
        hi = min(float(start_qps), MAX_UTILISATION * service_rate(d, cfg, workload, seed, budget, speed))
        ok, r = _steady(d, cfg, hi, workload, requests, seed, span, budget, most, speed)
        if ok:
            return hi, r
        for _ in range(iterations):
            mid = (lo + hi) / 2.0
            ok, r = _steady(d, cfg, mid, workload, requests, seed, span, budget, most, speed)
            if ok:
                lo, best = mid, r
            else:
                hi = mid
    except BudgetSpent:
        pass  # budget.cut is set; the rate verified last stands
    return lo, best


def _simulate(model, system, c: Candidate, d, workload, config, qps, requests, seed, budget=None,
              most: int = MAX_VERIFY_REQUESTS) -> DeployPoint | None:
    cfg = replace(config, max_seqs=c.max_seqs, replicas=1)
    q, res = capacity(d, cfg, c.bound_qps, workload, requests, seed, budget=budget, most=most)
    if res is None or q <= 0:
        return None
    out_per_req = res.output_tokens_per_s / max(res.throughput_requests_per_s, 1e-12)
    instances, served, usd, ch = _costs(system, c, q, out_per_req, qps)
    chips = instances * _chips(system)
    return DeployPoint(c, d, q, res, instances, served, usd, ch, served * out_per_req / chips)


def pareto_front(points) -> tuple:
    """Points that no other point beats on both output tokens/s per chip (higher) and p50 TPOT (lower)."""
    tpot = lambda p: p.result.tpot_s["p50"] or 0.0
    return tuple(sorted((p for p in points if not any(
        q is not p and q.output_tokens_per_s_per_chip >= p.output_tokens_per_s_per_chip and tpot(q) <= tpot(p)
        and (q.output_tokens_per_s_per_chip > p.output_tokens_per_s_per_chip or tpot(q) < tpot(p))
        for q in points)), key=lambda p: -p.output_tokens_per_s_per_chip))


def _bounded(model, system, n_in, n_out, config, weights, kv_dtypes, max_seqs, ic):
    """Candidates with their roofline bounds (and deployments), the count considered and the pruned reasons."""
    cands = candidates(system, weights, kv_dtypes, max_seqs, model)
    pruned, ok = {}, []
    for c in cands:
        try:
            bc, d = roofline_bound(model, system, c, n_in, n_out, config, ic)
        except FlopcastError as exc:
            bc, d = None, str(exc).split(";")[0]
        if bc is None:
            pruned[d] = pruned.get(d, 0) + 1
        else:
            ok.append((bc, d))
    return cands, ok, pruned


def deploy(model: Model, system: System, config, *, input_tokens="512", output_tokens="128", qps=None,
           weights=None, kv_dtypes=None, max_seqs=MAX_SEQS, requests: int = 300, seed: int = 0,
           progress=None, inference_calibration=None, disaggregate: bool = True,
           budget: WorkBudget | None = None) -> DeployOutcome:
    """The cheapest deployment of `model` on `system` at the SLOs of `config` (see the module doc); `disaggregate`:
    consider prefill and decode pools apart too (plan/disaggregate.py). `budget`: the simulation work the search may
    spend (default DEPLOY_WORK units); SEARCH_SHARE of it goes to the candidates, the rest to the baseline and the
    whole-instance check; what it cuts the outcome says (budget_note)."""
    n_in, n_out = S.median_lengths(input_tokens, output_tokens, seed)
    workload = (input_tokens, output_tokens)
    ic = inference_calibration
    budget = WorkBudget(DEPLOY_WORK) if budget is None else budget
    cands, ok, pruned = _bounded(model, system, n_in, n_out, config, weights, kv_dtypes, max_seqs, ic)
    if not ok:
        why = ", ".join(f"{v} {k}" for k, v in pruned.items())
        return DeployOutcome(system, None, None, (), (), len(cands), pruned,
                             f"no candidate survives the roofline ({why})")
    splits = split.split_candidates(system, ok) if disaggregate else []
    ok += splits
    ok.sort(key=lambda x: (_bound_key(system, x[0], n_out, qps), -x[0].max_seqs))
    if progress is not None:
        progress.add_total(min(len(ok), MAX_SIMULATIONS) + 1)
    run = lambda c, d, b, most: _simulate(model, system, c, d, workload, config, qps, requests, seed, b, most)
    lengths = work.output_lengths(output_tokens, requests, seed)
    size = lambda c: work.first_runs(c, config, n_out, requests, lengths)
    search = WorkBudget(budget.left * SEARCH_SHARE, budget)
    sims, best, cut = _branch_and_bound(system, ok[:MAX_SIMULATIONS], n_out, qps, (run, size, requests), search,
                                        pruned, progress)
    part = budget.part(2)
    base = _baseline(model, system, workload, config, qps, requests, seed, sims, ic, part, size)
    cut["baseline"] = base is None and part.cut
    ranked = tuple(sorted(((c, _bound_key(system, c, n_out, qps)) for c in cut["unsimulated"]),
                          key=lambda x: x[1]))
    if progress is not None:
        progress.update(1)
    considered = len(cands) + len(splits)
    if best is None:
        why = ("the work budget was spent before a candidate's rate was verified" if budget.cut
               else "no simulated candidate meets the SLOs at any rate")
        if ranked:
            why += (f"; ranked on the roofline (not simulated), the cheapest bound is {ranked[0][0].label} "
                    f"(a lower bound on its cost)")
        return DeployOutcome(system, None, base, tuple(sims), (), considered, pruned, why,
                             budget_note=_budget_note(budget, cut),
                             budget=budget.to_dict(), unsimulated=ranked)
    front = pareto_front(sims + ([base] if base is not None and base not in sims else []))
    try:
        checked = verify(model, system, best, workload, config, requests, seed, ic, budget.part(1))
    except BudgetSpent:
        checked, cut["check"] = None, True
    iv = ends.interval_of(best)
    bounds, why = ends.ends(system, best, workload, config, qps, requests, seed, iv, lambda *a: _costs(system, *a),
                            capacity)
    return DeployOutcome(system, best, base, tuple(sims), front, considered, pruned, verified=checked,
                         budget_note=_budget_note(budget, cut), budget=budget.to_dict(), unsimulated=ranked,
                         interval=iv, bounds=bounds, interval_note=why)


def _branch_and_bound(system, ok: list, n_out: float, qps, run, budget: WorkBudget, pruned: dict, progress):
    """Simulate (run[0](candidate, deployment, budget, most requests per run)) the candidates in ascending order of
    their bound until the next bound is no better than the best simulated cost or the budget is spent; each of the
    next three gets a third, a half and all of what is left. One whose first runs would take more (run[1](candidate):
    deploy_work.first_runs) is not started, unless none has been simulated yet: then its steady runs are shortened to
    what its share pays for after the burst, if that is at least run[2] requests. Returns (points, best,
    {"skipped": n, "stopped": n, "unsimulated": [candidates], ...})."""
    key, sims, best = _key(system), [], None
    cut = {"skipped": 0, "stopped": 0, "shortened": 0, "most": MAX_VERIFY_REQUESTS, "unsimulated": []}
    (simulate, size), min_run = run[:2], run[2]
    for i, (c, d) in enumerate(ok):
        part = budget.part(min(3, len(ok) - i))
        units, per_request, fixed = size(c)
        most = MAX_VERIFY_REQUESTS if units <= part.left else max(0, int((part.left - fixed) / per_request / 3))
        if best is not None and _bound_key(system, c, n_out, qps) >= key(best):
            _count(pruned, "bound no better than the best simulated")
        elif budget.exhausted or (most < MAX_VERIFY_REQUESTS and (sims or most < min_run)):
            _count(pruned, "not simulated: the work budget was spent")
            cut["skipped"] += 1
            cut["unsimulated"].append(c)
            budget.mark_cut()
        else:
            if most < MAX_VERIFY_REQUESTS:
                cut["shortened"], cut["most"] = cut["shortened"] + 1, most
                budget.mark_cut()
            p = simulate(c, d, part, most)
            cut["stopped"] += part.cut
            if p is None:
                _count(pruned, "the work budget ran out before a rate was verified" if part.cut
                       else "simulated: misses the SLOs at every rate")
            else:
                sims.append(p)
                best = p if best is None or key(p) < key(best) else best
        if progress is not None:
            progress.update(1)
    return sims, best, cut


def _count(pruned: dict, reason: str) -> None:
    pruned[reason] = pruned.get(reason, 0) + 1


def _budget_note(budget: WorkBudget, cut: dict) -> str:
    """What the work budget cut, in a sentence; "" when it cut nothing."""
    if not budget.cut:
        return ""
    parts = [f"{cut['skipped']} candidate(s) not simulated"] if cut["skipped"] else []
    if cut["shortened"]:
        parts.append(f"{cut['shortened']} capacity search(es) with runs of at most {cut['most']:,} requests")
    if cut["stopped"]:
        parts.append(f"{cut['stopped']} capacity search(es) stopped early (their rates are lower bounds)")
    parts += (["the baseline not simulated to a verified rate"] if cut.get("baseline") else []) + (
        ["the whole instance not checked"] if cut.get("check") else [])
    return (f"the simulation work budget ({budget.total:,.0f} units) cut the search: " + "; ".join(parts)
            + "; tighter SLOs, fewer formats (--weights, --kv-dtype) or fewer systems search less")


def verify(model, system, p: DeployPoint, workload, config, requests: int, seed: int, ic=None, budget=None):
    """One instance of the chosen deployment simulated whole: its replicas behind the least-loaded router at
    their summed capacity (the search simulated one replica and added them up). None when a replica spans
    instances (nothing to add up)."""
    c = p.candidate
    if isinstance(c, split.SplitCandidate):
        return split.verify_split(p, workload, config, requests, seed, budget)
    if c.replicas_per_instance <= 1:
        return None
    d = inf.deployment(model, system, chips=c.tp * c.pp * c.replicas_per_instance, tp=c.tp, weights=c.weights,
                       kv_dtype=c.kv_dtype, inference_calibration=ic, ep=c.ep, pp=c.pp)
    cfg = replace(config, max_seqs=c.max_seqs, replicas=c.replicas_per_instance)
    q = p.replica_qps * c.replicas_per_instance
    n = int(run_requests(q, config, S.median_output(workload[1], seed), requests))
    reqs = S.poisson_requests(q, np.random.default_rng(seed), n=n, input_tokens=workload[0],
                              output_tokens=workload[1])
    return S.simulate(d, reqs, cfg, seed=seed, budget=budget)


def _baseline(model, system, workload, config, qps, requests, seed, sims, ic=None, budget=None, size=None
              ) -> DeployPoint | None:
    """One replica over all the instance's chips in the default formats at max batch 256 (what compare --serve ran);
    None when it is not simulated: it does not fit or miss the SLOs alone, or its first runs (`size`,
    deploy_work.first_runs) would take more than `budget` has (the budget is then marked cut)."""
    n = _chips(system)
    w = "q4_0" if system.chip.kind == "cpu" else "bf16"
    kv = "fp16" if system.chip.kind == "cpu" else "bf16"
    c = Candidate(n, w, kv, config.max_seqs, 1, 1)
    for p in sims:
        pc = p.candidate
        same = (pc.tp, pc.pp, pc.ep, pc.weights, pc.kv_dtype, pc.max_seqs) == (n, 1, 1, w, kv, c.max_seqs)
        if type(pc) is Candidate and same:
            return p
    n_in, n_out = S.median_lengths(workload[0], workload[1], seed)
    try:
        bc, d = roofline_bound(model, system, c, n_in, n_out, config, ic)
    except FlopcastError:
        return None
    if bc is None:
        return None
    if size is not None and budget is not None and size(bc)[0] > budget.left:
        budget.mark_cut()
        return None
    return _simulate(model, system, bc, d, workload, config, qps, requests, seed, budget)
