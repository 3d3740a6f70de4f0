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

from ..cost.reliability import FailureLaw, GoodputAssumptions, Plan, plan
from ..errors import FlopcastError
from ..units import HOUR
from .events import Engine

UP, RESTART, DONE = 0, 1, 2
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
    def ci95_s(self) -> float:
        """Half-width of the 95% confidence interval of the mean wall time."""
        return float(1.96 * self.wall_s.std(ddof=1) / math.sqrt(self.trials)) if self.trials > 1 else float("inf")

    @property
    def goodput(self) -> float:
        return self.ideal_s / self.mean_s

    @property
    def events_per_s(self) -> float:
        return self.events / self.elapsed_s if self.elapsed_s > 0 else float("inf")

    def summary(self) -> dict:
        return {
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


def _chunk(p: Plan, a: GoodputAssumptions) -> int:
    """Failures to draw at a time: ~1.3x the expected count over the run, at least 64."""
    from ..cost.reliability import expected_time

    g = expected_time(float(p.work_s), 1, 0.0, GoodputAssumptions(mtbf_chip_hours=a.mtbf_chip_hours, cv=0))
    span = max(float(p.work_s) * 1.5, g.expected_s)
    return int(max(64, 1.3 * span * float(p.rate) + 4 * math.sqrt(span * float(p.rate) + 1)))


def _streams(p: Plan, a: GoodputAssumptions, chips: int, trials: int, seed: int) -> list[FailureTimes]:
    children = np.random.SeedSequence(seed).spawn(trials)
    size = _chunk(p, a)
    return [FailureTimes(np.random.default_rng(c), float(p.rate), a, chips, size) for c in children]


def _check(trials, seed):
    if not isinstance(trials, (int, np.integer)) or trials < 1:
        raise FlopcastError(f"trials must be a positive whole number, got {trials!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise FlopcastError(f"seed must be a whole number, 0 or more, got {seed!r}")


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
        self.parts["repair_wait"] += begin - t - self.a.detection_s
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
        eng.run()
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
    ft = np.stack([s.next_chunk() for s in streams])  # (trials, K) failure times
    rows = np.arange(trials)
    fi = np.zeros(trials, dtype=np.int64)
    state = np.full(trials, UP)
    c0 = np.zeros(trials)
    t0 = np.zeros(trials)
    end = np.full(trials, float(finish_elapsed(0.0, p)))  # UP: finish time; RESTART: restart end
    rstart = np.zeros(trials)
    P = a.planned_interval_s
    nxt_planned = np.full(trials, P if P else np.inf)
    S = a.spares
    hist = np.zeros((trials, max(S or 0, 1)))
    nrep = np.zeros(trials, dtype=np.int64)
    parts = {k: np.zeros(trials) for k in PARTS}
    fails = np.zeros(trials)
    planned_stops = np.zeros(trials)
    wall = np.full(trials, np.nan)
    events = 0
    det, rep = a.detection_s, a.repair_s

    def ensure(idx_needed):
        nonlocal ft
        while np.any(idx_needed >= ft.shape[1]):
            ft = np.concatenate([ft, np.stack([s.next_chunk() for s in streams])], axis=1)

    while True:
        act = state != DONE
        if not act.any():
            break
        ensure(fi[act])
        tf = ft[rows, np.minimum(fi, ft.shape[1] - 1)]
        up = state == UP
        t_other = np.where(up, np.minimum(end, nxt_planned), end)
        is_fail = act & (tf <= t_other)
        is_finish = act & up & ~is_fail & (end <= nxt_planned)
        is_planned = act & up & ~is_fail & ~is_finish
        is_restarted = act & (state == RESTART) & ~is_fail
        events += int(act.sum())

        # failures
        if is_fail.any():
            f = is_fail
            t = tf
            fails += f
            fu = f & up
            j, kept = durable_at(t - t0, c0, p)
            parts["checkpoint"] += np.where(fu, j * p.block_s, 0)
            parts["lost_work"] += np.where(fu, (t - t0) - (kept - c0) - j * p.block_s, 0)
            c0 = np.where(fu, kept, c0)
            parts["restart"] += np.where(f & ~up, t - rstart, 0)
            if S is None:
                ready = t
            elif S == 0:
                ready = t + rep
            else:
                old = hist[rows, nrep % S]
                ready = np.where(nrep < S, t, old + rep)
                hist[rows[f], (nrep % S)[f]] = t[f]
            nrep += f
            begin = np.maximum(t + det, ready)
            parts["detection"] += np.where(f, det, 0)
            parts["repair_wait"] += np.where(f, begin - t - det, 0)
            fi += f
            rstart = np.where(f, begin, rstart)
        # planned stops
        if is_planned.any():
            g = is_planned
            t = nxt_planned
            blocked, prog = progress_at(t - t0, c0, p)
            parts["checkpoint"] += np.where(g, blocked, 0)
            parts["planned"] += np.where(g, p.write_s + a.planned_downtime_s, 0)
            planned_stops += g
            c0 = np.where(g, prog, c0)
            rstart = np.where(g, t + p.write_s + a.planned_downtime_s, rstart)
        # into RESTART: absorb failures while stalled
        into = is_fail | is_planned
        if into.any():
            state = np.where(into, RESTART, state)
            end = np.where(into, rstart + p.restart_s, end)
            while True:
                ensure(fi[into])
                absorbed = into & (ft[rows, np.minimum(fi, ft.shape[1] - 1)] < rstart)
                if not absorbed.any():
                    break
                fi += absorbed
                events += int(absorbed.sum())
        # planned clock moves past any stop that fell while not UP (the engine skips those)
        # restarts done -> UP
        if is_restarted.any():
            r = is_restarted
            now = end
            parts["restart"] += np.where(r, p.restart_s, 0)
            state = np.where(r, UP, state)
            t0 = np.where(r, now, t0)
            end = np.where(r, now + finish_elapsed(c0, p), end)
        # finishes
        if is_finish.any():
            d = is_finish
            parts["checkpoint"] += np.where(d, n_checkpoints(c0, p) * p.block_s, 0)
            wall = np.where(d, end, wall)
            state = np.where(d, DONE, state)
        if P:
            # the next planned stop after the current time of each trial (stops while down are skipped)
            now_t = np.where(is_fail, tf, np.where(is_planned, nxt_planned, np.where(is_restarted, t0, nxt_planned)))
            nxt_planned = np.where(act & (is_fail | is_planned | is_restarted),
                                   np.maximum(nxt_planned, P * (np.floor(now_t / P) + 1)), nxt_planned)

    elapsed = _time.perf_counter() - started
    parts["stragglers"] = np.full(trials, float(p.work_s) - ideal_time_s)
    return SimResult(wall, fails + planned_stops, fails, (wall - ideal_time_s) * chips / HOUR, parts,
                     float(ideal_time_s), int(chips), float(p.interval_s), int(seed), events, elapsed)
