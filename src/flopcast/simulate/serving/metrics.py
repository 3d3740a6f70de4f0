"""What a serving run measured: latency percentiles, throughput, SLO attainment, cost per token."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...cost import inference as inf
from .config import ServingConfig
from .requests import Requests


@dataclass(frozen=True)
class Outcome:
    """The raw record of a run: per request, when its first token came and when it finished (nan: never)."""

    first_s: list
    done_s: list
    rejected: list
    iterations: int
    preemptions: int
    in_system_area: float  # integral of requests in the system over time (request-seconds)
    last_change_s: float  # time of the last change of that count
    events: tuple = ()


@dataclass(frozen=True)
class ServingResult:
    requests: int
    completed: int
    rejected: int
    ttft_s: dict  # p50/p90/p99
    tpot_s: dict
    e2e_s: dict
    makespan_s: float
    throughput_requests_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    slo_attainment: float
    cost_per_million_output_tokens_usd: float | None
    cost_per_million_tokens_usd: float | None
    iterations: int
    preemptions: int
    mean_in_system: float  # time-average requests in the system (Little's L)
    arrival_rate_per_s: float
    mean_e2e_s: float
    events: tuple = field(default=(), compare=False, repr=False)  # (time, kind, rid) when recorded

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "events"}


def _pct(x) -> dict:
    if len(x) == 0:
        return {"p50": None, "p90": None, "p99": None, "mean": None}
    q = np.percentile(x, [50, 90, 99])
    return {"p50": float(q[0]), "p90": float(q[1]), "p99": float(q[2]), "mean": float(np.mean(x))}


def _pcts(*xs) -> list[dict]:
    """[_pct(x) for x in xs]; samples of one length in one call of np.percentile along their rows (each row's order
    statistics and interpolation are its own: the same floats)."""
    n = len(xs[0])
    if n == 0 or any(len(x) != n for x in xs):
        return [_pct(x) for x in xs]
    q = np.percentile(np.vstack(xs), [50, 90, 99], axis=1)
    return [{"p50": float(q[0, j]), "p90": float(q[1, j]), "p99": float(q[2, j]), "mean": float(np.mean(x))}
            for j, x in enumerate(xs)]


def summarize(d: inf.Deployment, reqs: Requests, config: ServingConfig, o: Outcome) -> ServingResult:
    """Latency percentiles, rates, SLO attainment and cost of a run from its outcome."""
    first, done = np.array(o.first_s), np.array(o.done_s)
    arr, out = reqs.arrival_s, reqs.output_tokens
    ok = ~np.isnan(done)
    ttft = first[ok] - arr[ok]
    e2e = done[ok] - arr[ok]
    multi = ok & (out > 1)
    tpot = (done[multi] - first[multi]) / (out[multi] - 1)
    tpot_all = np.zeros(len(arr))
    tpot_all[multi] = tpot
    t0 = float(arr[0]) if len(arr) else 0.0
    makespan = float(np.nanmax(done) - t0) if ok.any() else 0.0
    toks = float(out[ok].sum())
    all_toks = toks + float(reqs.input_tokens[ok].sum())
    meets = ok & (first - arr <= config.slo_ttft_s) & (tpot_all <= config.slo_tpot_s)
    cpm, cpm_all = _costs_per_million(d, config, makespan, toks, all_toks)
    span = o.last_change_s - t0
    ttft_s, tpot_s, e2e_s = _pcts(ttft, tpot, e2e)
    return ServingResult(
        requests=len(arr), completed=int(ok.sum()), rejected=int(sum(o.rejected)),
        ttft_s=ttft_s, tpot_s=tpot_s, e2e_s=e2e_s, makespan_s=makespan,
        throughput_requests_per_s=ok.sum() / makespan if makespan else 0.0,
        output_tokens_per_s=toks / makespan if makespan else 0.0,
        total_tokens_per_s=all_toks / makespan if makespan else 0.0,
        slo_attainment=float(meets.sum() / len(arr)) if len(arr) else 0.0,
        cost_per_million_output_tokens_usd=cpm, cost_per_million_tokens_usd=cpm_all,
        iterations=o.iterations, preemptions=o.preemptions,
        mean_in_system=o.in_system_area / span if span > 0 else 0.0,
        arrival_rate_per_s=(len(arr) - 1) / float(arr[-1] - arr[0]) if len(arr) > 1 and arr[-1] > arr[0] else 0.0,
        mean_e2e_s=float(e2e.mean()) if len(e2e) else 0.0, events=o.events)


def _costs_per_million(d: inf.Deployment, config: ServingConfig, makespan_s: float, output_tokens: float,
                       all_tokens: float) -> tuple[float | None, float | None]:
    """USD per million output tokens and per million tokens (prompt + output) of `config.replicas` replicas."""
    price = d.price_per_hour
    hours = makespan_s / 3600.0
    replicas_price = None if price is None else price / d.replicas * config.replicas
    cpm = None if replicas_price is None or output_tokens == 0 else replicas_price * hours / (output_tokens / 1e6)
    cpm_all = None if replicas_price is None or all_tokens == 0 else replicas_price * hours / (all_tokens / 1e6)
    return cpm, cpm_all
