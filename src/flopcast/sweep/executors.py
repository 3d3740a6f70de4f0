"""Run independent tasks on local processes or as Ray tasks; results stream back as they finish.

    for out in run(tasks, fn, engine="local", workers=2):
        out.index, out.value, out.error      # one Outcome per task, in the order they finish

`fn(task)` must be a picklable (module-level) function. A task that raises becomes an Outcome
with its error (the sweep, the folds, the claims go on); a worker that dies fails the tasks it
held, not the run. `batch` tasks travel together (one submission, one Ray task), which keeps
scheduling overhead small for tasks of a few milliseconds.

Engines: `local` (the default) runs in this process for one worker and on a process pool for
more; `ray` runs on a Ray cluster (`address`, e.g. "auto" or "ray://host:10001"; none starts a
local cluster of `workers` CPUs). Ray is optional (`pip install 'flopcast[ray]'`) and imported
only here, only when asked for.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from enum import Enum

from ..errors import FlopcastError

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
MISSING_RAY = "the ray engine needs Ray: pip install 'flopcast[ray]'"


class Engine(str, Enum):
    LOCAL = "local"
    RAY = "ray"

    @classmethod
    def parse(cls, text) -> Engine:
        if isinstance(text, cls):
            return text
        try:
            return cls(str(text).strip().lower())
        except ValueError:
            raise FlopcastError(f"unknown engine {text!r}; valid: {', '.join(e.value for e in cls)}") from None


@dataclass(frozen=True)
class Outcome:
    """What one task gave: its value, or the one-line error that stopped it."""

    index: int
    value: object = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def error_text(exc: BaseException) -> str:
    """A task's error on one line: a FlopcastError's sentence, else the exception's type and message."""
    text = str(exc) if isinstance(exc, FlopcastError) else f"{type(exc).__name__}: {exc}"
    return " ".join(_ANSI.sub("", text).split())


def apply(fn: Callable, items: Sequence) -> list:
    """fn over (index, task) pairs in a worker: [(index, value, error)], one failure never stopping the rest."""
    out = []
    for index, task in items:
        try:
            out.append((index, fn(task), None))
        except Exception as exc:  # a failed task is a result, not a lost run
            out.append((index, None, error_text(exc)))
    return out


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def _chunks(tasks: Sequence, batch: int) -> list:
    pairs = list(enumerate(tasks))
    return [pairs[i:i + batch] for i in range(0, len(pairs), batch)]


def run(tasks: Sequence, fn: Callable, *, engine: str | Engine = Engine.LOCAL, workers: int | None = None,
        address: str | None = None, batch: int = 1) -> Iterator[Outcome]:
    """One Outcome per task, as each finishes (see the module docstring)."""
    engine = Engine.parse(engine)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise FlopcastError(f"workers must be a positive integer, got {workers!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise FlopcastError(f"batch must be a positive integer, got {batch!r}")
    if address is not None and engine != Engine.RAY:
        raise FlopcastError("an address is for the ray engine; add engine='ray' (--engine ray)")
    chunks = _chunks(tasks, batch)
    if engine == Engine.RAY:
        yield from _run_ray(chunks, fn, workers, address)
        return
    workers = workers or default_workers()
    if workers == 1 or len(chunks) <= 1:
        for chunk in chunks:
            yield from (Outcome(*r) for r in apply(fn, chunk))
        return
    yield from _run_pool(chunks, fn, workers)


def _run_pool(chunks: list, fn: Callable, workers: int) -> Iterator[Outcome]:
    with ProcessPoolExecutor(max_workers=min(workers, len(chunks))) as pool:
        pending = {pool.submit(apply, fn, chunk): chunk for chunk in chunks}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    chunk = pending.pop(future)
                    try:
                        results = future.result()
                    except BrokenProcessPool as exc:
                        results = [(i, None, f"worker process died ({error_text(exc)})") for i, _ in chunk]
                    yield from (Outcome(*r) for r in results)
        finally:
            for future in pending:
                future.cancel()


def _run_ray(chunks: list, fn: Callable, workers: int | None, address: str | None) -> Iterator[Outcome]:
    try:
        import ray
    except ImportError:
        raise FlopcastError(MISSING_RAY) from None
    started = not ray.is_initialized()
    if started:
        try:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=workers or default_workers(), include_dashboard=False, log_to_driver=False)
        except Exception as exc:  # Ray raises a bare Exception when its node times out during start-up
            raise FlopcastError(f"cannot start or reach a Ray cluster{' at ' + address if address else ''}: "
                                f"{error_text(exc)}") from None
    try:
        remote = ray.remote(num_cpus=1, max_retries=1)(apply)
        fn_ref = ray.put(fn)
        pending = {remote.remote(fn_ref, chunk): chunk for chunk in chunks}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                chunk = pending.pop(ref)
                try:
                    results = ray.get(ref)
                except Exception as exc:  # a Ray task or worker failure fails the chunk's tasks, not the run
                    results = [(i, None, f"ray task failed ({error_text(exc)})") for i, _ in chunk]
                yield from (Outcome(*r) for r in results)
    finally:
        if started:
            ray.shutdown()
