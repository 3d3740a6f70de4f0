"""The highest arrival rate a deployment serves within its SLOs (goodput), by bisection."""

from __future__ import annotations

import math

import numpy as np

from ...cost import inference as inf
from ...errors import FlopcastError
from .config import Scheduler, ServingConfig
from .iteration import IterationCost
from .requests import lengths, poisson_requests
from .disagg import Disaggregated, simulate_any


# Arrivals of a capacity run span this many SLO horizons (see find_capacity).
# share of requests that must meet both SLOs at capacity (goodput, DistServe, Zhong et al. 2024, sec. 2.2)
ATTAINMENT = 0.9
SPAN_HORIZONS = 4.0
# batch iterations one capacity search simulates in all (~4 us each: ~15 s); lenient targets at high rates
# would otherwise run 33 rates x 50,000 requests; a search that needs more stops with a message (never a
# silently low answer). Measured: llama3-8b on p5.48xlarge at TTFT 20 s / TPOT 1 s takes 1.2M iterations.
CAPACITY_BUDGET = 3_500_000


def find_capacity(d: inf.Deployment | Disaggregated, config: ServingConfig, *, requests: int = 400, input_tokens="512",
                  output_tokens="128", seed: int = 0, attainment: float = ATTAINMENT, iterations: int = 12,
                  max_requests: int = 50_000, start_qps: float = 0.5,
                  span_horizons: float = SPAN_HORIZONS):
    """Highest Poisson QPS whose SLO attainment (TTFT and TPOT both met) is >= `attainment`, by bisection.

    Goodput as in DistServe (Zhong et al. 2024, OSDI, sec. 2.2). A finite run at a rate the replica cannot sustain
    may still meet lenient SLOs (its burst drains before the targets expire), so each run lasts at least
    SPAN_HORIZONS x (TTFT target + median output x TPOT target) of arrivals, up to `max_requests`: a sustained
    overload then builds a backlog that breaks the TTFT target. `span_horizons` replaces SPAN_HORIZONS (a longer run
    exposes a slow backlog). `start_qps`: the first rate tried (doubled while it meets the SLOs); an upper bound
    from the roofline
    (plan/deploy.py) saves the doubling. Returns (qps, result at that qps); (0, None) when no rate meets the SLOs."""
    out_median = float(np.median(lengths(output_tokens, 256, np.random.default_rng(seed), "--output-tokens")))
    horizon = span_horizons * (config.slo_ttft_s + out_median * config.slo_tpot_s)

    budget = [CAPACITY_BUDGET]  # batch iterations left to simulate over the whole search (bounded work)

    def run(q):
        rng = np.random.default_rng(seed)
        n = int(min(max(requests, math.ceil(q * horizon)), max(requests, max_requests)))
        if budget[0] <= 0:
            raise FlopcastError(f"the capacity search at these targets (TTFT {config.slo_ttft_s:g} s, TPOT "
                                f"{config.slo_tpot_s:g} s) needs more than {CAPACITY_BUDGET:,} simulated batch "
                                "iterations (each rate runs for several SLO horizons); use tighter --slo-ttft / "
                                "--slo-tpot or simulate one --qps")
        reqs = poisson_requests(q, rng, n=n, input_tokens=input_tokens, output_tokens=output_tokens)
        out = simulate_any(d, reqs, config, seed=seed, cost=cost)
        budget[0] -= out.iterations
        return out

    cost = None if isinstance(d, Disaggregated) else IterationCost.of(d, max(
        config.chunk_tokens if config.scheduler == Scheduler.CHUNKED else config.max_batched_tokens,
        config.max_seqs) + 1)
    lo, hi = 0.0, float(start_qps)
    best = None
    r = run(hi)
    while r.slo_attainment >= attainment and hi < 1e6:
        lo, best = hi, r
        hi *= 2.0
        r = run(hi)
    if best is None:
        lo = 0.0
    for _ in range(iterations):
        mid = (lo + hi) / 2.0 if lo > 0 else hi / 2.0
        if mid < 1e-4:
            break
        r = run(mid)
        if r.slo_attainment >= attainment:
            lo, best = mid, r
        else:
            hi = mid
    return lo, best
