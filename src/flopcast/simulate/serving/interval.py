"""A serving run's prediction interval: the same requests with every batch iteration at the slow and the fast
end of the deployment's interval (cost/uncertainty.py). Under load, latency is not proportional to the
iteration time (queues grow faster than service slows), so each end is simulated, not scaled; nor is it always
monotone in it (a slower engine may decode more requests a batch, fewer a step, a lower TPOT median), so each
figure's interval spans both ends and the run at the predicted speed, which lies between them."""

from __future__ import annotations

from ...cost import inference as inf
from .config import ServingConfig
from .requests import Requests
from .disagg import simulate_any

PERCENTILES = ("p50", "p90", "p99", "mean")
LATENCIES = ("ttft_s", "tpot_s", "e2e_s")
RATES = ("throughput_requests_per_s", "output_tokens_per_s", "total_tokens_per_s", "slo_attainment",
         "cost_per_million_output_tokens_usd", "cost_per_million_tokens_usd")


def _pair(*values):
    """(least, greatest) of a figure's runs; None when a run has none (an end without a TPOT)."""
    return None if any(v is None for v in values) else (min(values), max(values))


def bounds(d: inf.Deployment, reqs: Requests, config: ServingConfig, interval, seed: int = 0, budget=None,
           center=None) -> dict:
    """key -> (low, high), latency keys -> {percentile: (low, high)}; {} without an interval. `budget`: the work
    both runs may take (budget.WorkBudget); `center`: the run at the predicted speed (its result), inside the
    interval (seed 2701 of the fuzz campaign: a TPOT median above both ends' was printed outside its interval)."""
    if interval is None:
        return {}
    slow = simulate_any(d, reqs, config, seed=seed, speed=interval.low, budget=budget).to_dict()
    fast = simulate_any(d, reqs, config, seed=seed, speed=interval.high, budget=budget).to_dict()
    runs = [slow, fast] + ([center.to_dict()] if center is not None else [])
    out = {k: {p: _pair(*(r[k][p] for r in runs)) for p in PERCENTILES} for k in LATENCIES}
    out.update({k: _pair(*(r[k] for r in runs)) for k in RATES})
    return out


def with_bounds(d: dict, b: dict, interval) -> dict:
    """A run's dict with KEY_low and KEY_high after each key that has bounds, and the interval described."""
    out = {}
    for k, v in d.items():
        out[k] = v
        if k in LATENCIES and k in b:
            out[f"{k}_low"] = {p: (e[0] if e else None) for p, e in b[k].items()}
            out[f"{k}_high"] = {p: (e[1] if e else None) for p, e in b[k].items()}
        elif b.get(k):
            out[f"{k}_low"], out[f"{k}_high"] = b[k]
    out["interval"] = None if interval is None else interval.to_dict()
    return out
