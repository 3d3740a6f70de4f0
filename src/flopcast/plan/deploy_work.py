"""What a deployment candidate's capacity runs cost in simulation work (simulate/serving/budget.py units), estimated
in closed form before they run, so that the search (plan/deploy.py) starts only what its budget can pay for.

A run of n requests arriving at q req/s spans n / q seconds; while it has work the replica takes a decode step every
t seconds (the roofline's step at the candidate's bound batch: Candidate.decode_s = O t / b), each step at least one
token of one request, and the longest output O_max steps to its end alone. So the steps run ahead are about

    steps = min(n x O_mean, n / (q t)) + O_max

each STEP_WORK; every request costs REQUEST_WORK and about two events (its prefill and the decode step that waits
for it), EVENT_WORK each. A burst that measures the service rate (deploy.service_rate) sums its decode steps in
closed form between finishes (Simulation.decode_run): per request its arrival, its prefill, the summed run to its
finish and about one preemption, each an event. Measured (llama3-8b on p5.48xlarge, TP1 fp8, max batch 256, the
burst and a 300-request run at the bound, 512 in and 128 / 4,000 / 20,000 / lognormal:4000:1 out): estimated 0.25M,
0.25M, 0.41M, 0.31M units where the runs took 0.11M, 0.17M, 0.61M, 0.53M (within 2.3x either way); the
per-request count it replaced (20 + 1 + O / b, nothing for the span or the longest output) gave 0.18M, 0.25M,
1.27M, 0.22M."""

from __future__ import annotations

import numpy as np

from ..simulate import serving as S
from .candidates import burst_requests, run_requests

BURST_EVENTS = 4  # events per request of a burst: prefill, summed decode run, and a preemption with its re-prefill


def output_lengths(output_tokens, n: int, seed: int) -> tuple[float, float]:
    """(mean, longest) of n output lengths drawn as a run draws them."""
    o = S.lengths(output_tokens, max(int(n), 1), np.random.default_rng(seed), "--output-tokens")
    return float(np.mean(o)), float(np.max(o))


def step_s(c, n_out: float) -> float:
    """Seconds of one decode step at the candidate's bound batch (roofline)."""
    return c.decode_s * max(c.bound_batch, 1) / max(n_out, 1.0)


def per_request_units(c, q: float, n_out: float, o_mean: float) -> float:
    """Units per request of a steady run at q req/s (see the module doc), without the longest output's tail."""
    t = step_s(c, n_out)
    steps = o_mean if not q > 0 or not t > 0 else min(o_mean, 1.0 / (q * t))
    return S.REQUEST_WORK + 2 * S.EVENT_WORK + S.STEP_WORK * steps


def first_runs(c, config, n_out: float, requests: int, lengths: tuple[float, float]) -> tuple[float, float, float]:
    """(units, units per request, fixed units) of a capacity search's first two runs: the burst and the first steady
    rate (at most the bound); `lengths`: output_lengths of the workload."""
    o_mean, o_max = lengths
    burst = burst_requests(c.max_seqs) * (S.REQUEST_WORK + BURST_EVENTS * S.EVENT_WORK)
    per = per_request_units(c, c.bound_qps, n_out, o_mean)
    fixed = burst + S.STEP_WORK * o_max
    return fixed + run_requests(c.bound_qps, config, n_out, requests) * per, per, fixed
