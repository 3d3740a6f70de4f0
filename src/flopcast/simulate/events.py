"""A discrete-event engine: one heap keyed (time, priority, sequence).

The design of SimPy's scheduler (simpy.core.Environment): events at equal times run
by priority, then in the order they were scheduled; the clock and the random
generator belong to the engine instance, so two engines never share state and the
same seed gives the same events. A handler is a callable taking the engine; it may
schedule further events with `at`, or return them (as microsoft/vidur's events do):
an iterable of (time, handler, priority) successors, scheduled in the order given.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

Handler = Callable[["Engine"], None]


class Engine:
    def __init__(self, seed: int = 0):
        self.now = 0.0
        self._seed, self._rng = seed, None
        self._heap: list[tuple[float, int, int, Handler]] = []
        self._seq = 0
        self.processed = 0

    @property
    def rng(self) -> np.random.Generator:
        """The engine's random generator, seeded with its seed (made on first use: most runs draw nothing)."""
        if self._rng is None:
            self._rng = np.random.default_rng(self._seed)
        return self._rng

    def at(self, time: float, handler: Handler, priority: int = 0) -> None:
        """Schedule `handler` at absolute `time` (not before now). Lower priority runs first at equal times."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time} before now ({self.now})")
        heapq.heappush(self._heap, (time, priority, self._seq, handler))
        self._seq += 1

    def after(self, delay: float, handler: Handler, priority: int = 0) -> None:
        self.at(self.now + delay, handler, priority)

    def run(self, until: float = float("inf"), max_events: int | None = None) -> None:
        """Process events in (time, priority, sequence) order until the heap empties, `until`, or max_events."""
        heap, pop, push = self._heap, heapq.heappop, heapq.heappush
        while heap and heap[0][0] <= until:
            if max_events is not None and self.processed >= max_events:
                return
            time, _, _, handler = pop(heap)
            self.now = time
            self.processed += 1
            successors = handler(self)
            if successors:
                for at, then, priority in successors:  # at(), inlined
                    if at < self.now:
                        raise ValueError(f"cannot schedule at {at} before now ({self.now})")
                    push(heap, (at, priority, self._seq, then))
                    self._seq += 1
        if until != float("inf") and (not self._heap or self._heap[0][0] > until):
            self.now = max(self.now, until)

    @property
    def pending(self) -> int:
        return len(self._heap)

    @property
    def pending_events(self) -> list:
        """The heap itself (read only: truthy while any event is pending), for a hot loop's emptiness test."""
        return self._heap
