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
from .config import ServingConfig
from .iteration import IterationCost
from .metrics import ServingResult, summarize
from .requests import Requests
from .simulation import ARRIVAL, Simulation

MAX_CLIENTS = 100_000


class ClosedLoop(Simulation):
    """Simulation whose arrivals are not given up front: request k + C is sent when a request leaves."""

    replicas_independent = False  # a finish sends the next request, which may go to any replica

    def __init__(self, d, reqs, config, cost, seed, record, speed, clients: int, until_s: float):
        super().__init__(d, reqs, config, cost, seed, record, speed)
        self.clients = min(clients, self.n)
        self.until = until_s  # no request is sent at or after this time (the benchmark's duration)
        self.sent = 0

    def begin(self) -> None:
        for _ in range(self.clients):
            self.send(0.0)

    def send(self, now: float) -> None:
        r = self.sent
        self.sent += 1
        self.arr[r] = now
        self.engine.at(now, partial(self.arrive_closed, r), ARRIVAL)

    def arrive_closed(self, r: int, e: Engine):
        return self.admit(r, e.now)

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
