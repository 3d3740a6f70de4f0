"""The highest arrival rate a deployment serves within its SLOs (goodput), by bisection."""

from __future__ import annotations

import math

import numpy as np

from ...cost import inference as inf
from .budget import BudgetSpent, WorkBudget
from .config import ServingConfig
from .iteration import IterationCost
from .requests import median_output, poisson_requests
from .disagg import Disaggregated, simulate_any


# Arrivals of a capacity run span this many SLO horizons (see find_capacity).
# share of requests that must meet both SLOs at capacity (goodput, DistServe, Zhong et al. 2024, sec. 2.2)
ATTAINMENT = 0.9
SPAN_HORIZONS = 4.0
# work one capacity search may simulate in all (budget.py units; ~1 us each here: ~10 s); lenient targets at high
# rates would otherwise run 33 rates x 50,000 requests. A search the budget cuts returns the highest rate it verified
# (a lower bound) and marks the budget cut. Measured: llama3-8b on p5.48xlarge at TTFT 20 s / TPOT 1 s takes 1.2M
# iterations.
CAPACITY_WORK = 10_000_000


def find_capacity(d: inf.Deployment | Disaggregated, config: ServingConfig, *, requests: int = 400, input_tokens="512",
                  output_tokens="128", seed: int = 0, attainment: float = ATTAINMENT, iterations: int = 12,
                  max_requests: int = 50_000, start_qps: float = 0.5,
                  span_horizons: float = SPAN_HORIZONS, budget: WorkBudget | None = None, speed: float = 1.0):
    """Highest Poisson QPS whose SLO attainment (TTFT and TPOT both met) is >= `attainment`, by bisection.

    Goodput as in DistServe (Zhong et al. 2024, OSDI, sec. 2.2). A finite run at a rate the replica cannot sustain
    may still meet lenient SLOs (its burst drains before the targets expire), so each run lasts at least
    SPAN_HORIZONS x (TTFT target + median output x TPOT target) of arrivals, up to `max_requests`: a sustained
    overload then builds a backlog that breaks the TTFT target. `span_horizons` replaces SPAN_HORIZONS (a longer run
    exposes a slow backlog). `start_qps`: the first rate tried (doubled while it meets the SLOs); an upper bound
    from the roofline
    (plan/deploy.py) saves the doubling. `budget`: the work the search may take (default CAPACITY_WORK units); when it
    runs out the search stops with the highest rate verified so far and budget.cut set. `speed`: every batch
    iteration that many times as fast (an end of the prediction interval).
    Returns (qps, result at that qps); (0, None) when no rate meets the SLOs (or none was verified in the budget)."""
    horizon = span_horizons * (config.slo_ttft_s + median_output(output_tokens, seed) * config.slo_tpot_s)
    budget = WorkBudget(CAPACITY_WORK) if budget is None else budget
    cost = None if isinstance(d, Disaggregated) else IterationCost.for_config(d, config)

    def run(q):
        n = int(min(max(requests, math.ceil(q * horizon)), max(requests, max_requests)))
        reqs = poisson_requests(q, np.random.default_rng(seed), n=n, input_tokens=input_tokens,
                                output_tokens=output_tokens)
        return simulate_any(d, reqs, config, seed=seed, cost=cost, budget=budget, speed=speed)

    state = {"lo": 0.0, "best": None}
    try:
        _bisect(run, state, float(start_qps), attainment, iterations)
    except BudgetSpent:
        pass  # the budget is marked cut; what was verified stands
    return state["lo"], state["best"]


def _bisect(run, state: dict, hi: float, attainment: float, iterations: int) -> None:
    """Double `hi` while it meets the SLOs, then bisect; state["lo"], state["best"]: the highest rate that met them
    and its result, kept current so that a run the budget stops leaves them valid."""
    r = run(hi)
    while r.slo_attainment >= attainment and hi < 1e6:
        state["lo"], state["best"] = hi, r
        hi *= 2.0
        r = run(hi)
    for _ in range(iterations):
        lo = state["lo"]
        mid = (lo + hi) / 2.0 if lo > 0 else hi / 2.0
        if mid < 1e-4:
            break
        r = run(mid)
        if r.slo_attainment >= attainment:
            state["lo"], state["best"] = mid, r
        else:
            hi = mid
