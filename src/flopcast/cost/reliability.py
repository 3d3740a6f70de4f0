"""Failures, checkpoints, restarts and stragglers: the expected wall time of a training run.

The closed form. A run needs W seconds of fault-free work (the ideal time, inflated by
stragglers). Chips fail at a constant rate each; the job fails at N times that rate
(lambda = 1/M, M the job's mean time between interruptions). Every `interval` seconds of
work the job writes a checkpoint, blocking for delta seconds. On a failure the job is
detected, waits for a replacement chip (a hot spare, else a repair), relaunches and
loads the last checkpoint (restart R, itself interruptible), and redoes the work since
that checkpoint.

- Interval: Young 1974 (CACM 17(9), "A first order approximation to the optimum
  checkpoint interval"): tau = sqrt(2 delta M); Daly 2006 (FGCS 22(3), "A higher order
  estimate of the optimum checkpoint interval for restart dumps", eq. 37):
  tau = sqrt(2 delta M) [1 + sqrt(delta/(2M))/3 + delta/(18M)] - delta for delta < 2M, else M.
- Expected time of one segment of w seconds (work + checkpoint) with exponential
  failures, non-interruptible downtime D and interruptible restart R (Daly 2006 eq. 13,
  the complete model): E = e^(lambda R) (1/lambda + D) (e^(lambda w) - 1). To first
  order in w/M this is the textbook model: w + (w/M)(w/2 + R + D) per segment, i.e.
  lost work ~ tau/2 + restart per failure and checkpoint overhead delta/tau.
- Stragglers: a synchronous step ends when the slowest of N chips does. With per-chip
  step times ~ Normal(mu, (cv mu)^2), E[max] = mu (1 + cv E[Z_(N:N)]), E[Z_(N:N)] by
  Blom's approximation (Blom 1958, "Statistical Estimates and Transformed
  Beta-Variables", eq. for the expected order statistic Phi^-1((i - 3/8)/(N + 1/4)));
  it grows like sqrt(2 ln N) (Gumbel 1958, extreme-value asymptotics).

All functions work on floats and numpy arrays (broadcast over ideal time and chips).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from enum import Enum

import numpy as np

from ..errors import FlopcastError
from ..units import DAY, GIGA, HOUR, TERA
from .memory import OPTIMIZER_BYTES, WEIGHT_BYTES
from .stats import expected_max_std_normal, norm_ppf, poisson_cdf  # noqa: F401 (norm_ppf: part of this API)

# Llama 3 (Dubey et al. 2024, arXiv:2407.21783) sec. 3.3.4 and Table 5: 419 unexpected
# interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs.
LLAMA3_UNEXPECTED_INTERRUPTIONS = 419
LLAMA3_PLANNED_INTERRUPTIONS = 47  # same section: automated maintenance (firmware upgrades, ...)
LLAMA3_DAYS = 54
LLAMA3_GPUS = 16_384
LLAMA3_MTBF_CHIP_HOURS = LLAMA3_GPUS * LLAMA3_DAYS * 24 / LLAMA3_UNEXPECTED_INTERRUPTIONS  # ~50,677 h

CHECKPOINT_BYTES_PER_PARAM = WEIGHT_BYTES + OPTIMIZER_BYTES  # 16-bit weights + fp32 master + Adam m, v

EULER_GAMMA = 0.5772156649015329
NEVER_S = 1e12  # ~32,000 years: an expected wall time past this is reported as never finishing


class FailureLaw(str, Enum):
    """Time-to-failure of one chip."""

    EXPONENTIAL = "exponential"
    WEIBULL = "weibull"


@dataclass(frozen=True)
class Storage:
    """Where checkpoints go: aggregate bandwidth of the store, and per node of the client."""

    name: str
    write_bps: float  # bytes/s, whole file system
    load_bps: float  # bytes/s, whole file system
    per_node_bps: float  # bytes/s one node can push to or pull from it
    source: str


# Assumption: a node reaches storage at 100 Gbit/s (its front-end network, not the
# collective fabric). Not measured; settable through checkpoint_write_bps / load_bps.
PER_NODE_STORAGE_BPS = 100e9 / 8

STORAGES = {
    "fsx-lustre": Storage(
        "Amazon FSx for Lustre (PERSISTENT_2, 1,000 MB/s per TiB, ~1,000 TiB provisioned)",
        write_bps=1.0 * TERA, load_bps=1.0 * TERA, per_node_bps=PER_NODE_STORAGE_BPS,
        source="AWS FSx for Lustre user guide, 'Managing throughput capacity': PERSISTENT_2 "
               "offers 125-1,000 MB/s/TiB and throughput = capacity x that rate; the 1,000 TiB "
               "size is an assumption"),
    "tectonic": Storage(
        "Meta Tectonic-class distributed file system (2 TB/s sustained)",
        write_bps=2.0 * TERA, load_bps=2.0 * TERA, per_node_bps=PER_NODE_STORAGE_BPS,
        source="Llama 3 paper (arXiv:2407.21783) sec. 3.3.1: Tectonic, 240 PB on 7,500 "
               "servers, 2 TB/s sustained and 7 TB/s peak; the sustained figure is used"),
}


def storage_for(system) -> Storage:
    """Default checkpoint store for a system: FSx for Lustre on AWS instances, else a
    Tectonic-class file system. Assumption: the system id tells the cloud (EC2 names
    such as trn2.48xlarge, p5.48xlarge, trn2-ultraserver)."""
    sid = getattr(system, "id", str(system))
    aws = sid.startswith(("trn", "inf", "p4", "p5", "p6", "g5", "g6")) or "." in sid
    return STORAGES["fsx-lustre" if aws else "tectonic"]


@dataclass(frozen=True)
class GoodputAssumptions:
    """What the expected (with faults) time-to-train assumes. SI units; each default's source in NOTES."""

    mtbf_chip_hours: float = LLAMA3_MTBF_CHIP_HOURS
    failure_law: FailureLaw = FailureLaw.EXPONENTIAL
    weibull_shape: float = 1.0
    detection_s: float = 120.0
    restart_s: float = 480.0
    checkpoint_write_bps: float | None = None  # aggregate; None: the system's default store
    checkpoint_load_bps: float | None = None
    async_checkpoint: bool = False
    snapshot_bps_per_chip: float = 25 * GIGA
    spares: int | None = None  # None: a spare is always at hand
    repair_s: float = 4 * HOUR
    planned_interval_s: float | None = None  # None: no planned maintenance
    planned_downtime_s: float = 0.0
    interval_s: float | None = None  # None: Daly's optimum
    cv: float = 0.0  # stragglers beyond what the calibrated efficiencies already hold (see NOTES)
    storage: str = ""  # what the bandwidths describe (filled by for_system)

    def __post_init__(self):
        check_assumptions(self)

    @classmethod
    def for_system(cls, system, chips: int, base: "GoodputAssumptions | None" = None) -> "GoodputAssumptions":
        """Fill the checkpoint bandwidths left as None from the system's default store:
        min(store aggregate, nodes x per-node bandwidth)."""
        a = base or cls()
        st = storage_for(system)
        nodes = max(1, math.ceil(chips / max(1, getattr(system, "chips_per_node", 1))))
        w = a.checkpoint_write_bps or min(st.write_bps, nodes * st.per_node_bps)
        r = a.checkpoint_load_bps or min(st.load_bps, nodes * st.per_node_bps)
        label = a.storage or (st.name if not (a.checkpoint_write_bps and a.checkpoint_load_bps) else "given")
        return replace(a, checkpoint_write_bps=w, checkpoint_load_bps=r, storage=label)

    def describe(self) -> dict:
        """Each assumption with its value (SI) and where it comes from."""
        return {f.name: {"value": _plain(getattr(self, f.name)), "source": NOTES.get(f.name, "")}
                for f in fields(self) if f.name != "storage"} | {"storage": {"value": self.storage, "source": ""}}


NOTES = {
    "mtbf_chip_hours": "Llama 3 (arXiv:2407.21783) sec. 3.3.4: 419 unexpected interruptions in 54 days on "
                       "16,384 H100s -> 16,384 x 54 x 24 / 419 = 50,677 chip-hours per interruption",
    "failure_law": "exponential (constant hazard) by default; Weibull: per-chip shape k, same mean",
    "weibull_shape": "Weibull shape k (k < 1: infant mortality); only with failure_law=weibull",
    "detection_s": "assumption: 2 min for health checks / watchdogs to notice a hang or crash "
                   "(PyTorch's default NCCL timeout, 10 min, is the slow upper bound)",
    "restart_s": "assumption: 8 min to relaunch, initialise collectives and warm up (compile caches, "
                 "data loader); the checkpoint load is added separately from the load bandwidth",
    "checkpoint_write_bps": "aggregate bytes/s to the checkpoint store: min(store, nodes x 100 Gbit/s per node); "
                            "see Storage sources",
    "checkpoint_load_bps": "aggregate bytes/s from the checkpoint store, as for writes",
    "async_checkpoint": "off: the job blocks for the whole write; on: only for the snapshot to host memory, "
                        "and a failure before the write lands rolls back one more interval",
    "snapshot_bps_per_chip": "assumption: 25 GB/s device-to-host per chip (about half of PCIe Gen5 x16)",
    "spares": "hot spares: None = always one at hand (managed clusters replace nodes automatically); "
              "0 = every failure waits for repair_s",
    "repair_s": "assumption: 4 h to repair or replace a failed chip's node when no spare is left",
    "planned_interval_s": "planned maintenance every this many wall-clock seconds (Llama 3: 47 in 54 days); "
                          "None = none",
    "planned_downtime_s": "extra downtime per planned stop beyond checkpoint write and restart",
    "interval_s": "checkpoint interval in seconds of work; None = Daly 2006 optimum",
    "cv": "per-chip step-time coefficient of variation added for stragglers; default 0 because the efficiencies "
          "are fitted on measured runs at scale, which already lost what stragglers cost them (e.g. 0.02 adds a "
          "2% per-chip spread on top)",
}


def _plain(v):
    return v.value if isinstance(v, Enum) else v


# upper bounds of the assumptions (SI): a day of detection or restart, a year of repair, cv 10 (a per-chip
# spread of 1,000%), 1e9 chip-hours (114,000 years) per interruption, 1 PB/s of checkpoint bandwidth
_BOUNDS = {"mtbf_chip_hours": 1e9, "weibull_shape": 100.0, "detection_s": DAY, "restart_s": DAY, "repair_s": 365 * DAY,
           "planned_downtime_s": 30 * DAY, "cv": 10.0, "checkpoint_write_bps": 1e15, "checkpoint_load_bps": 1e15,
           "snapshot_bps_per_chip": 1e13, "planned_interval_s": 1e4 * 365 * DAY, "interval_s": 1e4 * 365 * DAY}
_ZERO_OK = ("detection_s", "restart_s", "repair_s", "planned_downtime_s", "cv")


def check_assumptions(a: GoodputAssumptions) -> None:
    for name, high in _BOUNDS.items():
        v = getattr(a, name)
        if v is None:
            continue
        zero_ok = name in _ZERO_OK
        if (not isinstance(v, (int, float, np.floating)) or isinstance(v, bool) or not math.isfinite(v) or v < 0
                or (v == 0 and not zero_ok) or v > high):
            valid = "zero or more" if zero_ok else "a positive number"
            raise FlopcastError(f"{name} must be {valid}, at most {high:g}, got {v!r}")
    if a.spares is not None and (isinstance(a.spares, bool) or not isinstance(a.spares, (int, np.integer))
                                 or not 0 <= a.spares <= 10**7):
        raise FlopcastError(f"spares must be a whole number of spare chips from 0 to 10,000,000, got {a.spares!r}")
    if not isinstance(a.failure_law, FailureLaw):
        raise FlopcastError(f"failure_law must be one of {', '.join(f.value for f in FailureLaw)}, got {a.failure_law!r}")


# ----------------------------------------------------------------------------------- formulas

def failure_rate_per_chip(mtbf_chip_hours):
    """Failures per chip-second: 1 / (MTBF in chip-hours x 3600)."""
    return 1.0 / (np.asarray(mtbf_chip_hours, dtype=float) * HOUR)


def checkpoint_bytes(model) -> float:
    """Bytes of one full checkpoint: parameters x (16-bit weights + fp32 master and Adam m, v),
    the 2 + 12 bytes per parameter of Rajbhandari et al. 2020 (ZeRO) sec. 3.1 (cost/memory.py).
    Gradients are not saved."""
    from .params import total_params

    return float(total_params(model)) * CHECKPOINT_BYTES_PER_PARAM


def straggler_factor(chips, cv):
    """Expected synchronous step-time inflation: 1 + cv x E[max of N standard normals] (see module doc)."""
    return 1.0 + np.asarray(cv, dtype=float) * expected_max_std_normal(chips)


def young_interval(delta, mtbf):
    """Young 1974: tau = sqrt(2 delta M) (seconds of work between checkpoints)."""
    return np.sqrt(2.0 * np.asarray(delta, dtype=float) * mtbf)


def daly_interval(delta, mtbf):
    """Daly 2006 eq. 37: sqrt(2 delta M)[1 + (1/3)sqrt(delta/2M) + (1/9)(delta/2M)] - delta for delta < 2M, else M."""
    delta, mtbf = np.asarray(delta, dtype=float), np.asarray(mtbf, dtype=float)
    x = delta / (2.0 * mtbf)
    tau = np.sqrt(2.0 * delta * mtbf) * (1 + np.sqrt(x) / 3 + x / 9) - delta
    return np.where(delta < 2 * mtbf, tau, mtbf)


def _expm1_over(x):
    """(e^x - 1)/x, 1 at x = 0."""
    x = np.asarray(x, dtype=float)
    safe = np.where(x == 0, 1.0, x)
    return np.where(np.abs(x) < 1e-12, 1.0 + x / 2, np.expm1(safe) / safe)


def _excess(x):
    """(e^x - 1 - x)/x: the expected time lost in failed tries per second of segment."""
    x = np.asarray(x, dtype=float)
    safe = np.where(x == 0, 1.0, x)
    return np.where(np.abs(x) < 1e-5, x / 2 + x * x / 6, (np.expm1(safe) - safe) / safe)


def segment_parts(w, lam, down, restart):
    """Expected extra seconds (beyond w) to complete a segment of w seconds under exponential
    failures of rate lam: Daly 2006 complete model split into its parts.
    Returns (failures, lost_work, restart_time, down_time); w + their times = e^(lam R)(1/lam + D)(e^(lam w) - 1)."""
    x, y = lam * w, lam * restart
    fails_w = x * _expm1_over(x)  # failed tries of the segment, e^(lam w) - 1
    lost = w * _excess(x)  # time in those tries: n/lam - w
    restart_time = fails_w * restart * _expm1_over(y)  # restarts incl. interrupted ones: n (e^(lam R) - 1)/lam
    fails = fails_w * np.exp(y)  # each failure of the work, plus those that interrupt restarts
    return fails, lost, restart_time, fails * down


def spare_wait(rate, wait_budget, spares):
    """Expected wait for a replacement per failure with `spares` hot spares, repairs taking
    wait_budget seconds after detection, failures a Poisson process of `rate` per second.
    The replacement for failure m is the spare freed by repairing failure m - S (FIFO), so the
    wait is (wait_budget - G)^+ with G ~ Gamma(S, rate): E = r P(Pois(r rate) >= S) - (S/rate) P(Pois >= S + 1)."""
    rate = np.asarray(rate, dtype=float)
    if spares is None:
        return np.zeros_like(rate)
    r = max(float(wait_budget), 0.0)
    if spares == 0:
        return np.full_like(rate, r)
    mu = rate * r
    ge_s = 1 - poisson_cdf(spares - 1, mu)
    ge_s1 = 1 - poisson_cdf(spares, mu)
    return np.maximum(r * ge_s - spares / np.maximum(rate, 1e-300) * ge_s1, 0.0)


# ----------------------------------------------------------------------------------- result

@dataclass(frozen=True)
class Goodput:
    """Ideal vs expected wall time of a run. breakdown_s sums to expected_s - ideal_s."""

    ideal_s: float
    expected_s: float
    goodput: float  # ideal / expected
    interval_s: float  # seconds of work between checkpoints
    interruptions: float  # expected failures + planned stops
    lost_chip_hours: float  # (expected - ideal) x chips
    breakdown: dict  # seconds: stragglers, checkpoint, lost_work, detection, repair_wait, restart, planned
    chips: int = 0
    checkpoint_bytes: float = 0.0
    checkpoint_block_s: float = 0.0  # the job blocks this long per checkpoint
    checkpoint_write_s: float = 0.0
    checkpoint_load_s: float = 0.0
    job_mtbf_s: float = 0.0
    straggler_factor: float = 1.0
    assumptions: GoodputAssumptions = field(default_factory=GoodputAssumptions)
    restart_total_s: float = 0.0  # relaunch + checkpoint load: a failure during it starts it over

    @property
    def finishes(self) -> bool:
        """Whether the run ends in expectation (all of them, for arrays)."""
        return bool(np.all(np.isfinite(self.expected_s)))

    def never_finishes_reason(self) -> str:
        """Why the run never finishes ('' when it does)."""
        if self.finishes:
            return ""
        from ..units import fmt_duration

        mtbf, restart = float(np.min(self.job_mtbf_s)), float(np.max(self.restart_total_s))
        if mtbf <= restart:
            return (f"never finishes: the job is interrupted every {fmt_duration(mtbf)} on average, sooner than a "
                    f"restart takes ({fmt_duration(restart)}), so most restarts fail; use more reliable chips "
                    "(--mtbf-chip-hours) or fewer of them")
        return (f"never finishes: interrupted every {fmt_duration(mtbf)} on average, it almost never completes a "
                f"checkpoint interval of {fmt_duration(float(np.max(self.interval_s)))} of work; checkpoint more "
                "often (--interval)")

    def to_dict(self) -> dict:
        if not self.finishes:
            reason = self.never_finishes_reason()
            return {"finishes": False, "ideal_s": self.ideal_s, "ideal_days": self.ideal_s / DAY,
                    "expected_s": None, "expected_days": None, "goodput": 0.0, "interval_s": self.interval_s,
                    "chips": self.chips, "job_mtbf_s": self.job_mtbf_s, "restart_s": self.restart_total_s,
                    "unavailable": {"expected_s": reason}, "assumptions": self.assumptions.describe()}
        return {"finishes": True,
            "ideal_s": self.ideal_s, "expected_s": self.expected_s,
            "ideal_days": self.ideal_s / DAY, "expected_days": self.expected_s / DAY,
            "goodput": self.goodput, "interval_s": self.interval_s, "interruptions": self.interruptions,
            "lost_chip_hours": self.lost_chip_hours, "breakdown_s": dict(self.breakdown), "chips": self.chips,
            "checkpoint_bytes": self.checkpoint_bytes, "checkpoint_block_s": self.checkpoint_block_s,
            "checkpoint_write_s": self.checkpoint_write_s, "checkpoint_load_s": self.checkpoint_load_s,
            "job_mtbf_s": self.job_mtbf_s, "straggler_factor": self.straggler_factor,
            "assumptions": self.assumptions.describe(),
        }


@dataclass(frozen=True)
class Plan:
    """The derived quantities both the closed form and the simulator use (SI, arrays allowed)."""

    work_s: object  # fault-free seconds incl. stragglers
    rate: object  # job failures per second
    interval_s: object
    block_s: object  # blocking seconds per checkpoint
    lag_s: object  # async: seconds after the block until the checkpoint is durable
    write_s: object
    load_s: object
    restart_s: object  # relaunch + load: interruptible
    straggler: object


def plan(ideal_time_s, chips, checkpoint_bytes, a: GoodputAssumptions) -> Plan:
    """Resolve the assumptions into the run's timings (vectorized over ideal time and chips)."""
    if a.checkpoint_write_bps is None or a.checkpoint_load_bps is None:
        a = replace(a, checkpoint_write_bps=a.checkpoint_write_bps or STORAGES["fsx-lustre"].write_bps,
                    checkpoint_load_bps=a.checkpoint_load_bps or STORAGES["fsx-lustre"].load_bps)
    ideal = np.asarray(ideal_time_s, dtype=float)
    n = np.asarray(chips, dtype=float)
    if np.any(ideal <= 0) or np.any(n < 1) or checkpoint_bytes < 0:
        raise FlopcastError("ideal time and chips must be positive and checkpoint bytes not negative")
    strag = straggler_factor(n, a.cv)
    work = ideal * strag
    rate = n * failure_rate_per_chip(a.mtbf_chip_hours)
    write = checkpoint_bytes / a.checkpoint_write_bps
    load = checkpoint_bytes / a.checkpoint_load_bps
    block = checkpoint_bytes / (n * a.snapshot_bps_per_chip) if a.async_checkpoint else write + 0 * n
    lag = write + 0 * n if a.async_checkpoint else 0 * n
    tau = a.interval_s if a.interval_s is not None else daly_interval(np.maximum(block, 1e-9), 1.0 / rate)
    tau = np.minimum(np.maximum(tau, lag), work)  # async: at most one write in flight
    return Plan(work, rate, tau + 0 * n, block, lag, write + 0 * n, load + 0 * n, a.restart_s + load + 0 * n, strag)


def expected_time(ideal_time_s, chips, checkpoint_bytes, assumptions: GoodputAssumptions | None = None) -> Goodput:
    """Expected wall time with faults, checkpoints, restarts and stragglers (module doc).

    Sync checkpoints with exponential faults and no planned maintenance: exact (Daly 2006
    complete model, summed over ceil(W/tau) - 1 full segments and the last partial one).
    Async: each failure of the work also loses the write lag (first order). Spares: the wait
    per failure from spare_wait, at the failure rate per wall-clock second (3 fixed-point
    iterations; first order: it overestimates the wait when spares run short often, since
    no failures arrive while the job waits). Planned stops every P s of running time cost a
    write + downtime + restart each. Weibull faults: the closed form uses the mean rate only
    (the simulator draws the time-varying hazard).
    Works on arrays of ideal_time_s and chips (fields of the result are then arrays).
    """
    a = assumptions or GoodputAssumptions()
    p = plan(ideal_time_s, chips, checkpoint_bytes, a)
    with np.errstate(over="ignore", invalid="ignore"):  # e^(lam w) past 1e308: the run never finishes (below)
        return _expected(ideal_time_s, chips, checkpoint_bytes, a, p)


def _expected(ideal_time_s, chips, checkpoint_bytes, a: GoodputAssumptions, p: Plan) -> Goodput:
    tau = p.interval_s
    n_full = np.maximum(np.ceil(p.work_s / tau - 1e-9) - 1, 0)
    w_last = np.maximum(p.work_s - n_full * tau, 0.0)
    seg = tau + p.block_s
    wall_rate = p.rate
    for _ in range(3 if a.spares not in (None, 0) else 1):
        wait = spare_wait(wall_rate, a.repair_s - a.detection_s, a.spares)
        down = a.detection_s + wait
        f1, l1, r1, d1 = segment_parts(seg, p.rate, down, p.restart_s)
        f2, l2, r2, d2 = segment_parts(w_last, p.rate, down, p.restart_s)
        fails = n_full * f1 + f2
        fails_work = n_full * (f1 * np.exp(-p.rate * p.restart_s)) + f2 * np.exp(-p.rate * p.restart_s)
        lost = n_full * l1 + l2 + fails_work * p.lag_s
        restart = n_full * r1 + r2
        downtime = n_full * d1 + d2
        ckpt = n_full * p.block_s
        base = p.work_s + ckpt + lost + restart + downtime
        wall_rate = fails / base
    planned = 0.0 * base
    n_planned = 0.0 * base
    if a.planned_interval_s:
        # a stop falls due every P s of wall clock, but only while the job runs (work,
        # checkpoints, lost work); each costs a full write + downtime (planned) and a restart
        n_planned = (p.work_s + ckpt + lost) / a.planned_interval_s
        planned = n_planned * (p.write_s + a.planned_downtime_s)
        restart = restart + n_planned * p.restart_s
    expected = base + planned + n_planned * p.restart_s
    ideal = np.asarray(ideal_time_s, dtype=float)
    finishes = (p.rate * p.restart_s < 1) & np.isfinite(expected) & (expected < NEVER_S)
    expected = np.where(finishes, expected, np.inf)
    zero = np.zeros(np.shape(expected))  # broadcasts a scalar part to the shape of the result
    det_share = np.where(down > 0, a.detection_s / np.where(down > 0, down, 1), 0)
    breakdown = {
        "stragglers": p.work_s - ideal, "checkpoint": ckpt, "lost_work": lost,
        "detection": downtime * det_share, "repair_wait": downtime * (1 - det_share),
        "restart": restart, "planned": planned,
    }
    chips_arr = np.asarray(chips)
    scalar = np.ndim(expected) == 0
    cast = (lambda v: float(v)) if scalar else (lambda v: v)
    return Goodput(
        ideal_s=cast(ideal + zero), expected_s=cast(expected), goodput=cast(ideal / expected),
        interval_s=cast(tau), interruptions=cast(np.where(finishes, fails + n_planned, np.inf)),
        lost_chip_hours=cast((expected - ideal) * chips_arr / HOUR),
        breakdown={k: cast(np.where(finishes, np.maximum(v, 0.0), np.inf) + zero)
                   for k, v in breakdown.items()},
        chips=int(chips_arr) if scalar else chips_arr, checkpoint_bytes=float(checkpoint_bytes),
        checkpoint_block_s=cast(p.block_s), checkpoint_write_s=cast(p.write_s), checkpoint_load_s=cast(p.load_s),
        job_mtbf_s=cast(1.0 / p.rate), straggler_factor=cast(p.straggler), assumptions=a,
        restart_total_s=cast(p.restart_s),
    )


def goodput_for(result, assumptions: GoodputAssumptions | None = None) -> Goodput:
    """Expected (with faults) time-to-train of a TrainResult (flopcast.api.train): its ideal
    time_to_train_s on the chips its layout uses, the checkpoint of its model, and the
    checkpoint bandwidths of its system's default store where the assumptions leave them None."""
    if not getattr(result, "tokens", None):
        raise FlopcastError("goodput needs a token budget: pass tokens (--tokens) to train")
    chips = int(result.layout.chips)
    a = GoodputAssumptions.for_system(result.system, chips, assumptions)
    return expected_time(result.time_to_train_s, chips, checkpoint_bytes(result.model), a)
