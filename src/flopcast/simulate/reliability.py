"""Monte-Carlo of a whole training run with failures, checkpoints, restarts, spares and maintenance.

The timeline of one trial (the same as the closed form in cost/reliability.py assumes):
- UP from checkpointed progress c0 at time t0: cycles of `interval` s of work and a
  checkpoint that blocks `block` s (async: the checkpoint is durable `lag` s later).
- A failure at t: the work since the last durable checkpoint is lost; the job stalls for
  detection and until a replacement chip is at hand (spare m is the chip freed by
  repairing failure m - S, `repair_s` after it failed), then restarts (relaunch + load),
  and a failure during the restart starts it over. Failures that land while the job is
  stalled (detection, wait, planned stop) are absorbed by that interruption.
- Planned maintenance (optional) at every multiple of P s of wall clock while UP:
  checkpoint (full write), downtime, restart; no work lost.
- Failure times: the job's failures are the superposition of N chips' failure processes.
  Exponential: exactly a Poisson process of rate N/MTBF. Weibull (shape k, scale so the
  mean is the MTBF): chips start new at t=0 and the superposition is taken as the
  nonhomogeneous Poisson process of rate N h(t) (Grigelionis 1963 / Palm-Khintchine:
  superposed sparse renewal processes tend to Poisson); the renewal of the few replaced
  chips is neglected.

Two paths that give the same numbers from the same draws: `simulate_engine` runs each
trial through the discrete-event engine (simulate/events.py), `simulate` steps all trials
at once as numpy arrays, one event per trial per step (fast). Each trial draws from its own
generator, spawned from the seed (numpy SeedSequence), so results do not depend on the path
or on how many trials run.
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass

import numpy as np

from ..cost.reliability import FailureLaw, GoodputAssumptions, Plan, expected_time, plan
from ..errors import FlopcastError
from ..limits import LIMITS
from ..units import HOUR, fmt_duration
from .events import Engine

UP, RESTART, DONE = 0, 1, 2
# bounded work: ~10 s of the vectorized path (2-4 million events/s on one core); arrays stay under ~1 GiB
MAX_EVENTS = 20_000_000
# and a step handles one event of every unfinished trial, 0.1-0.5 ms whatever their number, so the events of one
# trial (its interruptions) are capped too: ~10 s at most (1 trial of 116,000 events took 31 s; fuzz seed 701)
MAX_STEPS = 30_000
MAX_TRIALS = int(LIMITS["trials"].high)  # the command line's bound (limits.py): set-up cost and memory per trial
HIST_CHUNK = 64  # the spares' ring of failure times starts this long a trial and doubles as a trial's failures need
PARTS = ("stragglers", "checkpoint", "lost_work", "detection", "repair_wait", "restart", "planned")


@dataclass(frozen=True)
class SimResult:
    """Per-trial outcomes (arrays of length trials) and their summary. Seconds unless named."""

    wall_s: np.ndarray
    interruptions: np.ndarray  # failures that interrupted the job + planned stops
    failures: np.ndarray
    lost_chip_hours: np.ndarray
    breakdown_s: dict  # part -> array per trial; parts sum to wall_s - ideal_s
    ideal_s: float
    chips: int
    interval_s: float
    seed: int
    events: int  # simulated events (failures, restarts, planned stops, finishes, absorbed failures)
    elapsed_s: float

    @property
    def trials(self) -> int:
        return len(self.wall_s)

    def percentile(self, q) -> float:
        return float(np.percentile(self.wall_s, q))

    @property
    def mean_s(self) -> float:
        return float(self.wall_s.mean())

    @property
    def ci95_s(self) -> float | None:
        """Half-width of the 95% confidence interval of the mean wall time; None from one trial."""
        return float(1.96 * self.wall_s.std(ddof=1) / math.sqrt(self.trials)) if self.trials > 1 else None

    @property
    def goodput(self) -> float:
        return self.ideal_s / self.mean_s

    @property
    def events_per_s(self) -> float | None:
        return self.events / self.elapsed_s if self.elapsed_s > 0 else None

    def summary(self) -> dict:
        unavailable = {}
        if self.ci95_s is None:
            unavailable["wall_s.ci95"] = "one trial gives no confidence interval; run 2 or more"
        if self.events_per_s is None:
            unavailable["events_per_s"] = "the run took too little time to measure"
        return {"unavailable": unavailable,
            "trials": self.trials, "seed": self.seed, "ideal_s": self.ideal_s,
            "wall_s": {"mean": self.mean_s, "ci95": self.ci95_s, "p10": self.percentile(10),
                       "p50": self.percentile(50), "p90": self.percentile(90)},
            "goodput": self.goodput, "interruptions": float(self.interruptions.mean()),
            "failures": float(self.failures.mean()), "lost_chip_hours": float(self.lost_chip_hours.mean()),
            "interval_s": self.interval_s, "breakdown_s": {k: float(v.mean()) for k, v in self.breakdown_s.items()},
            "events": self.events, "events_per_s": self.events_per_s, "elapsed_s": self.elapsed_s,
        }


# --------------------------------------------------------------------------- failure draws

class FailureTimes:
    """One trial's sorted wall-clock failure times, drawn in chunks from its own generator."""

    def __init__(self, rng: np.random.Generator, rate: float, a: GoodputAssumptions, chips: int, chunk: int):
        self.rng, self.rate, self.a, self.chips, self.chunk = rng, rate, a, chips, chunk
        self._cum = 0.0  # unit-rate exponential clock

    def next_chunk(self) -> np.ndarray:
        e = self.rng.exponential(1.0, self.chunk)
        s = self._cum + np.cumsum(e)
        self._cum = float(s[-1])
        if self.a.failure_law == FailureLaw.WEIBULL:
            # cumulative hazard of N new chips: N (t/eta)^k, eta = MTBF / Gamma(1 + 1/k)
            k = self.a.weibull_shape
            eta = self.a.mtbf_chip_hours * HOUR / math.gamma(1 + 1 / k)
            return eta * (s / self.chips) ** (1 / k)
        return s / self.rate


def _chunk(p: Plan, a: GoodputAssumptions, trials: int) -> int:
    """Failures to draw at a time: ~1.3x the expected count over the run, at least 64."""
    from ..cost.reliability import expected_time

    g = expected_time(float(p.work_s), 1, 0.0, GoodputAssumptions(mtbf_chip_hours=a.mtbf_chip_hours, cv=0))
    span = max(float(p.work_s) * 1.5, g.expected_s)
    want = 1.3 * span * float(p.rate) + 4 * math.sqrt(span * float(p.rate) + 1)
    return int(min(max(64, want), MAX_EVENTS // max(trials, 1) + 64))


def _streams(p: Plan, a: GoodputAssumptions, chips: int, trials: int, seed: int) -> list[FailureTimes]:
    children = np.random.SeedSequence(seed).spawn(trials)
    size = _chunk(p, a, trials)
    return [FailureTimes(np.random.default_rng(c), float(p.rate), a, chips, size) for c in children]


def _check(trials, seed):
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or not 1 <= trials <= MAX_TRIALS:
        raise FlopcastError(f"trials must be a whole number from 1 to {MAX_TRIALS:,}, got {trials!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
        raise FlopcastError(f"seed must be a whole number from 0 to 2**63 - 1, got {seed!r}")


def _budget(ideal_time_s, chips, checkpoint_bytes, a: GoodputAssumptions, trials: int) -> None:
    """Refuse a run that never finishes or whose expected events (closed form) pass MAX_STEPS a trial or MAX_EVENTS
    in all."""
    g = expected_time(float(ideal_time_s), int(chips), float(checkpoint_bytes), a)
    if not g.finishes:
        raise FlopcastError(f"the run {g.never_finishes_reason()}")
    steps = g.interruptions + 2  # a trial's events: the vectorized path steps through them one at a time
    events = trials * steps
    if steps > MAX_STEPS or events > MAX_EVENTS:
        most = int(MAX_EVENTS // steps) if steps <= MAX_STEPS else 0
        fewer = f"use at most {most:,} trials" if most >= 1 else "the closed form alone answers this"
        raise FlopcastError(f"a Monte-Carlo of {trials:,} trials would simulate about {events:.2g} events "
                            f"({g.interruptions:,.0f} interruptions per run), past the cap of {MAX_STEPS:,} a trial "
                            f"and {MAX_EVENTS:,} in all; {fewer} (closed form: expected time-to-train "
                            f"{fmt_duration(g.expected_s)})")


def _past_cap(events: int) -> FlopcastError:
    return FlopcastError(f"the Monte-Carlo passed {MAX_EVENTS:,} events ({events:,}) before every trial finished; "
                         "use fewer trials (the closed form gives the expectation)")


# --------------------------------------------------------------------------- the timeline

def n_checkpoints(c0, p: Plan):
    """Checkpoints an UP period from progress c0 takes before it finishes (none at the end)."""
    return np.maximum(np.ceil((p.work_s - c0) / p.interval_s - 1e-9) - 1, 0)


def finish_elapsed(c0, p: Plan):
    """Seconds from the start of an UP period at progress c0 to the end of the run."""
    return (p.work_s - c0) + n_checkpoints(c0, p) * p.block_s


def durable_at(e, c0, p: Plan):
    """(durable checkpoints, progress they hold) e seconds into an UP period from c0."""
    cycle = p.interval_s + p.block_s
    j = np.clip(np.floor((e - p.lag_s) / cycle), 0, n_checkpoints(c0, p))
    return j, c0 + j * p.interval_s


def progress_at(e, c0, p: Plan):
    """(seconds spent blocked on checkpoints, progress) e seconds into an UP period: what a
    planned stop saves. A stop during a checkpoint keeps the work before it."""
    cycle = p.interval_s + p.block_s
    k = np.clip(np.floor(e / cycle), 0, n_checkpoints(c0, p))
    pos = e - k * cycle
    return k * p.block_s + np.maximum(pos - p.interval_s, 0), c0 + k * p.interval_s + np.minimum(pos, p.interval_s)


# --------------------------------------------------------------------------- engine path

class _Trial:
    """One trial on the event engine; handlers return nothing and schedule their successors."""

    def __init__(self, engine: Engine, stream: FailureTimes, p: Plan, a: GoodputAssumptions):
        self.e, self.stream, self.p, self.a = engine, stream, p, a
        self.times, self.fi = stream.next_chunk(), 0
        self.state, self.c0, self.t0, self.token, self.fail_token = UP, 0.0, 0.0, 0, 0
        self.restart_start = 0.0
        self.fail_history: list[float] = []  # times of failures that took a replacement
        self.parts = dict.fromkeys(PARTS, 0.0)
        self.failures = self.planned_stops = self.events = 0
        self.wall = None

    def _next_failure(self) -> float:
        while self.fi >= len(self.times):
            self.times = np.concatenate([self.times, self.stream.next_chunk()])
        return float(self.times[self.fi])

    def start(self):
        self._schedule_failure()
        self._up(0.0)
        if self.a.planned_interval_s:
            self.e.at(self.a.planned_interval_s, self.on_planned, priority=2)

    def _up(self, t):
        self.state, self.t0, self.token = UP, t, self.token + 1
        tok = self.token
        self.e.at(t + float(finish_elapsed(self.c0, self.p)), lambda e: self.on_finish(tok), priority=1)

    def _restart(self, t_begin):
        self.state, self.restart_start, self.token = RESTART, t_begin, self.token + 1
        tok = self.token
        self.e.at(t_begin + float(self.p.restart_s), lambda e: self.on_restarted(tok), priority=1)
        # failures while stalled are absorbed
        while self._next_failure() < t_begin:
            self.fi += 1
            self.events += 1
        self._schedule_failure()

    def _schedule_failure(self):
        self.fail_token += 1
        tok = self.fail_token
        self.e.at(self._next_failure(), lambda e: self.on_failure(e, tok), priority=0)

    def on_failure(self, e: Engine, token: int):
        if self.state == DONE or token != self.fail_token:
            return
        t = e.now
        self.fi += 1
        self.events += 1
        self.failures += 1
        if self.state == UP:
            j, kept = durable_at(t - self.t0, self.c0, self.p)
            self.parts["checkpoint"] += float(j * self.p.block_s)
            self.parts["lost_work"] += (t - self.t0) - float(kept - self.c0) - float(j * self.p.block_s)
            self.c0 = float(kept)
        else:
            self.parts["restart"] += t - self.restart_start
        m, s = len(self.fail_history), self.a.spares
        if s is None or m < s:
            ready = t  # a spare is at hand
        else:  # the chip freed by repairing failure m - s (s = 0: this chip's own repair)
            ready = (self.fail_history[m - s] if s else t) + self.a.repair_s
        self.fail_history.append(t)
        begin = max(t + self.a.detection_s, ready)
        self.parts["detection"] += self.a.detection_s
        self.parts["repair_wait"] += max(begin - t - self.a.detection_s, 0.0)
        self._restart(begin)

    def on_restarted(self, token):
        if token != self.token:
            return
        self.events += 1
        self.parts["restart"] += float(self.p.restart_s)
        self._up(self.e.now)

    def on_finish(self, token):
        if token != self.token:
            return
        self.events += 1
        self.parts["checkpoint"] += float(n_checkpoints(self.c0, self.p) * self.p.block_s)
        self.state, self.wall, self.token = DONE, self.e.now, self.token + 1

    def on_planned(self, e: Engine):
        if self.state == DONE:
            return
        P = self.a.planned_interval_s
        if self.state == UP:
            t = e.now
            self.events += 1
            self.planned_stops += 1
            blocked, prog = progress_at(t - self.t0, self.c0, self.p)
            self.parts["checkpoint"] += float(blocked)
            self.parts["planned"] += float(self.p.write_s) + self.a.planned_downtime_s
            self.c0 = float(prog)
            self._restart(t + float(self.p.write_s) + self.a.planned_downtime_s)
        e.at(e.now + P, self.on_planned, priority=2)


def simulate_engine(ideal_time_s: float, chips: int, checkpoint_bytes: float,
                    assumptions: GoodputAssumptions | None = None, trials: int = 100, seed: int = 0) -> SimResult:
    """The reference path: each trial on its own discrete-event engine (simulate/events.py)."""
    a, p, started, streams = _prepare(ideal_time_s, chips, checkpoint_bytes, assumptions, trials, seed)
    out = []
    for stream in streams:
        eng = Engine(seed)  # the trial's randomness comes from its stream; the engine's rng is unused
        tr = _Trial(eng, stream, p, a)
        tr.start()
        eng.run(max_events=MAX_EVENTS - sum(t.events for t in out))
        if tr.wall is None:
            raise _past_cap(sum(t.events for t in out) + tr.events)
        out.append(tr)
    elapsed = _time.perf_counter() - started
    parts = {k: np.array([t.parts[k] for t in out]) for k in PARTS}
    parts["stragglers"] = np.full(trials, float(p.work_s) - ideal_time_s)
    wall = np.array([t.wall for t in out])
    fails = np.array([t.failures for t in out], dtype=float)
    return SimResult(wall, fails + np.array([t.planned_stops for t in out]), fails,
                     (wall - ideal_time_s) * chips / HOUR, parts, float(ideal_time_s), int(chips),
                     float(p.interval_s), int(seed), int(sum(t.events for t in out)), elapsed)


def _prepare(ideal_time_s, chips, checkpoint_bytes, assumptions, trials, seed):
    """Checked inputs, the run's plan, the start time and one failure stream per trial."""
    _check(trials, seed)
    a = assumptions or GoodputAssumptions()
    _budget(ideal_time_s, chips, checkpoint_bytes, a, trials)
    p = _scalar_plan(ideal_time_s, chips, checkpoint_bytes, a)
    return a, p, _time.perf_counter(), _streams(p, a, chips, trials, seed)


def _scalar_plan(ideal_time_s, chips, checkpoint_bytes, a) -> Plan:
    p = plan(float(ideal_time_s), int(chips), float(checkpoint_bytes), a)
    return Plan(*(float(v) for v in (p.work_s, p.rate, p.interval_s, p.block_s, p.lag_s, p.write_s,
                                      p.load_s, p.restart_s, p.straggler)))


# --------------------------------------------------------------------------- vectorized path

def simulate(ideal_time_s: float, chips: int, checkpoint_bytes: float,
             assumptions: GoodputAssumptions | None = None, trials: int = 1000, seed: int = 0) -> SimResult:
    """All trials at once: each step handles the next event of every unfinished trial."""
    a, p, started, streams = _prepare(ideal_time_s, chips, checkpoint_bytes, assumptions, trials, seed)
    b = _Batch(a, p, streams)
    while b.step():
        pass
    elapsed = _time.perf_counter() - started
    b.parts["stragglers"] = np.full(trials, float(p.work_s) - ideal_time_s)
    return SimResult(b.wall, b.fails + b.planned_stops, b.fails, (b.wall - ideal_time_s) * chips / HOUR, b.parts,
                     float(ideal_time_s), int(chips), float(p.interval_s), int(seed), b.events, elapsed)


class _Batch:
    """The state of every trial as arrays, and one step: the next event of each unfinished trial."""

    def __init__(self, a: GoodputAssumptions, p: Plan, streams: list[FailureTimes]):
        n = len(streams)
        self.a, self.p, self.streams = a, p, streams
        self.ft = np.stack([s.next_chunk() for s in streams])  # (trials, K) failure times
        self.rows = np.arange(n)
        self.fi = np.zeros(n, dtype=np.int64)  # index of each trial's next failure
        self.state = np.full(n, UP)
        self.c0, self.t0, self.rstart = np.zeros(n), np.zeros(n), np.zeros(n)
        self.end = np.full(n, float(finish_elapsed(0.0, p)))  # UP: finish time; RESTART: restart end
        self.next_planned = np.full(n, a.planned_interval_s if a.planned_interval_s else np.inf)
        # times of the last S failures that took a spare (a ring of S a trial), grown as failures come: a trial sees
        # few failures, and S up to 10^7 spares for 1,000 trials was 80 GB up front (fuzz seed 2701, case 5540)
        self.hist = np.zeros((n, min(a.spares or 1, HIST_CHUNK)))
        self.nrep = np.zeros(n, dtype=np.int64)
        self.parts = {k: np.zeros(n) for k in PARTS}
        self.fails, self.planned_stops = np.zeros(n), np.zeros(n)
        self.wall = np.full(n, np.nan)
        self.events = self.steps = 0

    def _ensure(self, needed):
        while np.any(needed >= self.ft.shape[1]):
            self.ft = np.concatenate([self.ft, np.stack([s.next_chunk() for s in self.streams])], axis=1)

    def _next_failure(self):
        return self.ft[self.rows, np.minimum(self.fi, self.ft.shape[1] - 1)]

    def step(self) -> bool:
        """Advance every unfinished trial by one event; False when all are done."""
        act = self.state != DONE
        if not act.any():
            return False
        self._ensure(self.fi[act])
        tf = self._next_failure()
        up = self.state == UP
        is_fail = act & (tf <= np.where(up, np.minimum(self.end, self.next_planned), self.end))
        is_finish = act & up & ~is_fail & (self.end <= self.next_planned)
        is_planned = act & up & ~is_fail & ~is_finish
        is_restarted = act & (self.state == RESTART) & ~is_fail
        self.events += int(act.sum())
        self.steps += 1
        if self.events > MAX_EVENTS or self.steps > 2 * MAX_STEPS:
            raise _past_cap(self.events)
        planned_at = self.next_planned.copy()
        if is_fail.any():
            self._fail(is_fail, up, tf)
        if is_planned.any():
            self._planned(is_planned, planned_at)
        if (is_fail | is_planned).any():
            self._into_restart(is_fail | is_planned)
        if is_restarted.any():
            self._restarted(is_restarted)
        if is_finish.any():
            self._finish(is_finish)
        if self.a.planned_interval_s:
            self._advance_planned(act, is_fail, is_planned, is_restarted, tf, planned_at)
        return True

    def _fail(self, f, up, t):
        """Failures: work since the last durable checkpoint is lost; wait for detection and a spare."""
        p, a, parts = self.p, self.a, self.parts
        self.fails += f
        fu = f & up
        j, kept = durable_at(t - self.t0, self.c0, p)
        parts["checkpoint"] += np.where(fu, j * p.block_s, 0)
        parts["lost_work"] += np.where(fu, (t - self.t0) - (kept - self.c0) - j * p.block_s, 0)
        self.c0 = np.where(fu, kept, self.c0)
        parts["restart"] += np.where(f & ~up, t - self.rstart, 0)
        S = a.spares
        if S is None:
            ready = t
        elif S == 0:
            ready = t + a.repair_s
        else:
            self._grow_hist(int(self.nrep[f].max()) + 1)
            slot = np.minimum(self.nrep % S, self.hist.shape[1] - 1)  # the ring is whole (S) once any nrep >= S
            ready = np.where(self.nrep < S, t, self.hist[self.rows, slot] + a.repair_s)
            self.hist[self.rows[f], slot[f]] = t[f]
        self.nrep += f
        begin = np.maximum(t + a.detection_s, ready)
        parts["detection"] += np.where(f, a.detection_s, 0)
        parts["repair_wait"] += np.where(f, np.maximum(begin - t - a.detection_s, 0.0), 0)
        self.fi += f
        self.rstart = np.where(f, begin, self.rstart)

    def _grow_hist(self, needed: int) -> None:
        """At least min(S, needed) columns of the spares' ring; while it is shorter than S no trial has wrapped it."""
        want = min(self.a.spares, needed)
        if want > self.hist.shape[1]:
            cols = min(self.a.spares, max(want, 2 * self.hist.shape[1]))
            self.hist = np.concatenate([self.hist, np.zeros((len(self.hist), cols - self.hist.shape[1]))], axis=1)

    def _planned(self, g, t):
        """Planned stops: checkpoint (full write), downtime, then a restart; no work lost."""
        p, a = self.p, self.a
        blocked, prog = progress_at(t - self.t0, self.c0, p)
        self.parts["checkpoint"] += np.where(g, blocked, 0)
        self.parts["planned"] += np.where(g, p.write_s + a.planned_downtime_s, 0)
        self.planned_stops += g
        self.c0 = np.where(g, prog, self.c0)
        self.rstart = np.where(g, t + p.write_s + a.planned_downtime_s, self.rstart)

    def _into_restart(self, into):
        """Into RESTART; failures that land while the job is stalled are absorbed."""
        self.state = np.where(into, RESTART, self.state)
        self.end = np.where(into, self.rstart + self.p.restart_s, self.end)
        while True:
            self._ensure(self.fi[into])
            absorbed = into & (self._next_failure() < self.rstart)
            if not absorbed.any():
                break
            self.fi += absorbed
            self.events += int(absorbed.sum())

    def _restarted(self, r):
        now = self.end
        self.parts["restart"] += np.where(r, self.p.restart_s, 0)
        self.state = np.where(r, UP, self.state)
        self.t0 = np.where(r, now, self.t0)
        self.end = np.where(r, now + finish_elapsed(self.c0, self.p), self.end)

    def _finish(self, d):
        self.parts["checkpoint"] += np.where(d, n_checkpoints(self.c0, self.p) * self.p.block_s, 0)
        self.wall = np.where(d, self.end, self.wall)
        self.state = np.where(d, DONE, self.state)

    def _advance_planned(self, act, is_fail, is_planned, is_restarted, tf, planned_at):
        """The next planned stop after each trial's current time (stops that fall while it is down are skipped)."""
        P = self.a.planned_interval_s
        now = np.where(is_fail, tf, np.where(is_planned, planned_at, np.where(is_restarted, self.t0, planned_at)))
        moved = act & (is_fail | is_planned | is_restarted)
        self.next_planned = np.where(moved, np.maximum(self.next_planned, P * (np.floor(now / P) + 1)),
                                     self.next_planned)
