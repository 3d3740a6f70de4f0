"""Run a sweep: resolve its models and hardware once, hand the scenarios to an executor in groups that
share a layout search, stream the rows into a journal as they finish, and write the table.

The forecast itself is passed in (`forecast`: flopcast.api.train, `resolve_model`:
flopcast.api.resolve_model; `serve`: one system's deployment search as `flopcast deploy --json` prints it),
so this layer depends on nothing above it and a sweep's rows are exactly what `flopcast train` (or
`flopcast deploy`) prints for the same scenario.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..cost.params import total_params
from ..errors import FlopcastError
from ..plan.shared import SearchShare, speeds
from ..units import fmt_duration
from . import executors, hardware, table
from . import serving as sv
from .spec import Scenario, Sweep

TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022 (Chinchilla): ~20 training tokens per parameter, as `train` assumes
TASKS_PER_WORKER = 4  # groups are split so that each worker gets about this many tasks (load balance)
MIN_GROUP = 8  # scenarios per task at least, where a group has them (the first search of a task is the full one)
MAX_GROUP = 256  # scenarios per task at most


@dataclass(frozen=True)
class Item:
    """One scenario as a worker receives it: its hardware resolved (or why it could not be)."""

    scenario: Scenario
    system: object  # flopcast System, or None with `problem`
    tokens: float
    resolved: dict  # what-if knob -> SI value on this system
    problem: str | None = None


@dataclass(frozen=True)
class Task:
    """Scenarios of one model, system and chip count: their searches share candidates and memory."""

    model: object  # flopcast Model
    items: tuple


@dataclass(frozen=True)
class SweepRun:
    """What a sweep did: every row of its scenarios (grid order), and how many were run now."""

    sweep: Sweep
    rows: tuple
    out: Path | None
    ran: int
    skipped: int
    seconds: float
    engine: str
    workers: int
    counts: dict = field(default_factory=dict)

    @property
    def scenarios_per_s(self) -> float:
        return self.ran / self.seconds if self.seconds > 0 else math.inf

    def to_dict(self) -> dict:
        return {"sweep": self.sweep.name, "file": self.sweep.path, "scenarios": len(self.sweep.scenarios),
                "ran": self.ran, "skipped": self.skipped, "seconds": self.seconds,
                "scenarios_per_s": None if not self.seconds else self.scenarios_per_s, "engine": self.engine,
                "workers": self.workers, "status": dict(self.counts),
                "out": None if self.out is None else str(self.out)}


def evaluate(task: Task, forecast: Callable, serve: Callable | None = None) -> list:
    """The rows of one task (runs in a worker): each scenario's forecast, or its error as a row."""
    if task.items and task.items[0].scenario.serve is not None:
        return [_serving_row(task.model, it, serve) for it in task.items]
    shared = SearchShare()
    rows = []
    # the fastest variants first: their step times bound the slower ones' (plan/shared.py)
    items = sorted(task.items, key=lambda it: tuple(-x for x in speeds(it.system)) if it.system else ())
    for it in items:
        s = it.scenario
        row = table.key_columns(s, it.system, it.resolved)
        if it.problem:
            row.update(table.error_columns("invalid", it.problem))
            rows.append(row)
            continue
        try:
            result = forecast(task.model, it.system, s.chips, tokens=it.tokens, seq_len=s.seq_len,
                              objective=s.objective, shared=shared, **dict(s.layout))
            row.update(table.result_columns(result.to_dict()))
        except FlopcastError as exc:
            row.update(table.error_columns("invalid", executors.error_text(exc)))
        except Exception as exc:  # one scenario's bug is its row, not the sweep's end
            row.update(table.error_columns("failed", executors.error_text(exc)))
        rows.append(row)
    return rows


def _serving_row(model, it: Item, serve: Callable | None) -> dict:
    """One serving scenario's row: the deployment search on its (what-if) system, or why there is none."""
    row = table.key_columns(it.scenario, it.system, it.resolved)
    if it.problem:
        return {**row, **table.error_columns("invalid", it.problem)}
    if serve is None:
        return {**row, **table.error_columns("failed", "this sweep was run without a serving forecast")}
    try:
        row.update(sv.result_columns(serve(model, it.system, it.scenario.serve)))
    except FlopcastError as exc:
        row.update(table.error_columns("invalid", executors.error_text(exc)))
    except Exception as exc:  # one scenario's bug is its row, not the sweep's end
        row.update(table.error_columns("failed", executors.error_text(exc)))
    return row


def _models(sweep: Sweep, resolve_model: Callable) -> dict:
    out = {}
    for ref in dict.fromkeys(s.model for s in sweep.scenarios):
        try:
            out[ref] = resolve_model(ref)
        except FlopcastError as exc:
            raise FlopcastError(f"sweep file {sweep.path}: models: {exc}") from None
    return out


def _systems(sweep: Sweep) -> dict:
    """(system, what-if) -> (System or None, resolved SI values, problem)."""
    bases = {}
    for ref in dict.fromkeys(s.system for s in sweep.scenarios):
        try:
            bases[ref] = hardware.variant(ref, {})
        except FlopcastError as exc:
            raise FlopcastError(f"sweep file {sweep.path}: systems: {exc}") from None
    out = {}
    for key in dict.fromkeys((s.system, s.what_if) for s in sweep.scenarios):
        ref, what_if = key
        try:
            resolved = {k: hardware.resolve(bases[ref], k, v) for k, v in what_if}
            out[key] = (hardware.variant(ref, dict(what_if)) if what_if else bases[ref], resolved, None)
        except FlopcastError as exc:
            out[key] = (None, {}, executors.error_text(exc))
    return out


def tasks(sweep: Sweep, todo: list, resolve_model: Callable, workers: int) -> list:
    """The scenarios still to run, as tasks of scenarios that share a search."""
    models, systems = _models(sweep, resolve_model), _systems(sweep)
    groups: dict = {}
    for s in todo:
        system, resolved, problem = systems[(s.system, s.what_if)]
        model = models[s.model]
        tokens = s.tokens or (s.tokens_per_param or TOKENS_PER_PARAM) * total_params(model)
        item = Item(s, system, tokens, resolved, problem)
        groups.setdefault((s.model, s.system, s.chips, s.seq_len, s.layout, s.serve is None), []).append(item)
    size = max(MIN_GROUP, min(MAX_GROUP, math.ceil(len(todo) / max(1, workers * TASKS_PER_WORKER))))
    out = []
    for (ref, *_, training), items in groups.items():
        # a deployment search takes seconds and shares nothing with another: one per task balances the load
        chunk = math.ceil(len(items) / math.ceil(len(items) / size)) if training else 1  # even parts
        for i in range(0, len(items), chunk):
            out.append(Task(models[ref], tuple(items[i:i + chunk])))
    return out


def _existing(out: Path | None, resume: bool) -> dict:
    if out is None or not resume:
        return {}
    rows = {r.get("scenario_id"): r for r in table.read(out)}
    rows.update({r.get("scenario_id"): r for r in table.read_journal(out)})
    return {k: r for k, r in rows.items() if r.get("status") in table.DONE}


def run_sweep(sweep: Sweep, *, resolve_model: Callable, forecast: Callable, serve: Callable | None = None, out=None,
              engine="local", workers: int | None = None, address: str | None = None, resume: bool = True,
              progress=None) -> SweepRun:
    """Run the scenarios not already in `out` (all of them with resume=False); write `out` (.parquet/.csv)."""
    engine = executors.Engine.parse(engine)
    out_path = table.check_out(out) if out is not None else None
    done = _existing(out_path, resume)
    todo = [s for s in sweep.scenarios if s.id not in done]
    n_workers = workers or executors.default_workers()
    work = tasks(sweep, todo, resolve_model, n_workers)
    journal = table.journal_path(out_path) if out_path is not None else None
    new: dict = {}
    start = time.perf_counter()
    if progress is not None:
        progress.add_total(len(todo))
    fn = functools.partial(evaluate, forecast=forecast, serve=serve)
    with (journal.open("a", encoding="utf-8") if journal else _NoFile()) as log:
        for outcome in executors.run(work, fn, engine=engine, workers=workers, address=address):
            rows = outcome.value if outcome.ok else _failed(work[outcome.index], outcome.error)
            for r in rows:
                new[r["scenario_id"]] = r
                log.write(json.dumps({k: table.clean(v) for k, v in r.items()}, allow_nan=False, default=str) + "\n")
            log.flush()
            _tick(progress, len(rows), len(new), len(todo), start, sweep.name)
    seconds = time.perf_counter() - start
    rows = [{**done, **new}[s.id] for s in sweep.scenarios if s.id in done or s.id in new]
    cols = table.columns(rows)
    rows = tuple({c: table.clean(r.get(c)) for c in cols} for r in rows)
    if out_path is not None:
        table.write(out_path, list(rows))
        journal.unlink(missing_ok=True)
    counts = {k: sum(1 for r in rows if r.get("status") == k) for k in table.STATUSES}
    return SweepRun(sweep, rows, out_path, len(new), len(done), seconds, engine.value, n_workers,
                    {k: v for k, v in counts.items() if v})


def _failed(task: Task, error: str) -> list:
    rows = []
    for it in task.items:
        row = table.key_columns(it.scenario, it.system, it.resolved)
        row.update(table.error_columns("failed", error))
        rows.append(row)
    return rows


def _tick(progress, n: int, done: int, total: int, start: float, name: str) -> None:
    if progress is None:
        return
    elapsed = time.perf_counter() - start
    if done and done < total:
        eta = elapsed / done * (total - done)
        progress.note(f"sweep {name}: ETA {fmt_duration(eta)}")
    progress.update(n)


class _NoFile:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def write(self, text):
        return None

    def flush(self):
        return None
