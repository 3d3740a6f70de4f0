"""A closed-loop load: C clients, each sending its next request when the previous one has finished.

This is how guidellm's synchronous (C = 1), concurrent and throughput profiles, llmperf
(`--num-concurrent-requests`) and vLLM's benchmark_serving with `--max-concurrency` drive a server:
the offered load follows the server's speed, so the number of requests in the system stays at C
(Little's law), unlike an open-loop rate (requests.poisson_requests), whose queue grows without bound
past capacity. All C clients start at time 0, as the tools do; the run's figures cover every request,
the start-up wave included, or, with `counted_until_s`, only those finished by then: guidellm 0.1 cancels
the requests still in flight when its --max-seconds end (scheduler/base.py `_submit_task_coroutine`:
`asyncio.wait_for(..., timeout=end_time - now)` returns None, which is not recorded), so its latencies and
rates are those of the requests that finished inside the benchmark (its `duration` runs from the first
recorded request's start to the last one's end, core/result.py).
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

import numpy as np

from ...cost import inference as inf
from ...errors import FlopcastError
from ..events import Engine
from .config import Scheduler, ServingConfig
from .iteration import IterationCost
from .metrics import ServingResult, summarize
from .requests import Requests
from .simulation import ARRIVAL, Simulation

MAX_CLIENTS = 100_000
LOOKAHEAD_REPLICAS = 64  # replicas up to which a closed loop bounds the next arrival (ClosedLoop.horizon: O(replicas))


class ClosedLoop(Simulation):
    """Simulation whose arrivals are not given up front: request k + C is sent when a request leaves.

    A request arrives only when one finishes, so several replicas may run decode steps ahead of the event queue up
    to the earliest time any other replica could finish one (`horizon`): a step that finishes none changes only its
    own replica (Simulation.run_ahead)."""

    replicas_independent = False  # a finish sends the next request, which may go to any replica

    def __init__(self, d, reqs, config, cost, seed, record, speed, clients: int, until_s: float):
        super().__init__(d, reqs, config, cost, seed, record, speed)
        self.clients = min(clients, self.n)
        self.until = until_s  # no request is sent at or after this time (the benchmark's duration)
        self.sent = 0
        self.in_flight = 0  # requests sent whose arrival event has not run yet
        # a new request's first decode step comes after its prefill, its finish at least this many steps after it
        self.min_left = min(self.out, default=1) - 1
        # the bound holds for replicas that prefill and decode (continuous or static batching), each decode step of
        # which takes at least step_floor (no speculation), while no request can finish at its prefill (min_left)
        self.looks_ahead = (1 < len(self.replicas) <= LOOKAHEAD_REPLICAS and self.spec is None
                            and config.scheduler in (Scheduler.CONTINUOUS, Scheduler.STATIC) and self.min_left >= 1)
        self._floor = None

    def begin(self) -> None:
        for _ in range(self.clients):
            self.send(0.0)

    def send(self, now: float) -> None:
        r = self.sent
        self.sent += 1
        self.in_flight += 1
        self.arr[r] = now
        self.engine.at(now, partial(self.arrive_closed, r), ARRIVAL)

    def arrive_closed(self, r: int, e: Engine):
        self.in_flight -= 1
        return self.admit(r, e.now)

    @property
    def step_floor(self) -> float:
        """Seconds that every decode step takes at least: the least over its possible rows n of dense[n] + the
        logit layer streamed (IterationCost.time: the logits and attention terms are at least that and 0)."""
        if self._floor is None:
            cost, rows = self.cost, max(self.max_seqs, self.static_batch)
            self._floor = min(cost.dense[n] + cost.logit_bytes_s for n in range(1, min(rows, len(cost.dense) - 1) + 1))
        return self._floor

    def horizon(self, rep) -> float:
        """A time before which no request can be sent, so none can arrive at `rep`: the earliest at which another
        replica could finish one. A busy replica finishes none before its iteration ends (pend_end); one whose
        iteration's decode steps are known (pend_step) none before the step of its first decoder's finish, nor of a
        request it has yet to admit (min_left steps after its prefill), each step at least step_floor long; an idle
        one none before a request arrives. -inf while a sent request has not arrived or after a preemption (a
        preempted request, prefilled again, may finish at its prefill)."""
        if not self.looks_ahead or self.in_flight:
            return -math.inf
        out = math.inf
        for b in self.replicas:
            if b.preemptions:
                return -math.inf
            if b is rep or not b.busy:
                continue
            end = b.pend_end
            if b.pend_step >= 0:
                first = b.pend_step + self.min_left
                if b.fin and b.fin[0][0] < first:
                    first = b.fin[0][0]
                steps = first - b.pend_step
                if steps > 0:  # less a margin for the rounding of the sum of the steps' ends
                    span = steps * self.step_floor
                    end += span - 4 * (steps + 2) * math.ulp(end + span)
            if end < out:
                out = end
        return out

    def released(self, r: int, now: float) -> None:
        if self.sent < self.n and now < self.until:
            self.send(now)


def closed_loop(d: inf.Deployment, clients: int, input_tokens, output_tokens, config: ServingConfig = ServingConfig(),
                *, duration_s: float = math.inf, seed: int = 0, cost: IterationCost | None = None,
                speed: float = 1.0, counted_until_s: float = math.inf) -> ServingResult:
    """Up to `len(input_tokens)` requests (token counts per request, in sending order) from `clients` closed-loop
    clients through `config.replicas` replicas of `d`, none sent after `duration_s` (every one sent finishes);
    latency percentiles and throughput over the requests sent that finished by `counted_until_s` (all of them by
    default), as simulate() gives them."""
    if not 1 <= clients <= MAX_CLIENTS:
        raise FlopcastError(f"concurrency must be between 1 and {MAX_CLIENTS:,} clients, got {clients}")
    inp = np.asarray(input_tokens, dtype=np.int64)
    out = np.maximum(1, np.asarray(output_tokens, dtype=np.int64))
    if len(inp) == 0 or len(inp) != len(out):
        raise FlopcastError("a closed-loop run needs at least one request, with as many output as input lengths")
    if inf.kv_capacity_tokens(d) < 1:
        raise FlopcastError(f"{d.model.label} in {d.weights.name} does not fit in {d.system.id} with tp {d.tp}: "
                            "no memory left for a KV cache; use more chips or a smaller --weights format")
    reqs = Requests(np.zeros(len(inp)), inp, out)
    sim = ClosedLoop(d, reqs, config, cost, seed, False, speed, clients, duration_s)
    sim.run()
    k = sim.sent
    o = sim.outcome()
    done = o.done_s[:k]
    if counted_until_s < math.inf:  # a request finished after the tool stopped counting is a request never recorded
        done = [t if t <= counted_until_s else math.nan for t in done]
    o = replace(o, first_s=o.first_s[:k], done_s=done, rejected=o.rejected[:k])
    return summarize(d, Requests(np.asarray(sim.arr[:k], dtype=float), inp[:k], out[:k]), config, o)
