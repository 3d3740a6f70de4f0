"""What searches of one model on hardware variants can share.

A co-design sweep searches the same model on the same number of chips many times, on
hardware that differs only in its speeds (HBM bandwidth, peak FLOP/s, link bandwidths and
latencies), its HBM capacity, its price or its power. None of those changes which layouts
are candidates (the degree and batch rules read the model, the chip count, the node size and
the data types the chip has) or how many bytes a layout holds per chip (weights, gradients,
optimizer states and activations are counted from the model and the layout; capacity only
decides what fits). So the candidates and their memory are computed once, by the first
search; a later search evaluates step times only for the layouts that fit its capacity, and
picks the same layout a full search would (the others cannot be chosen while any layout fits).

Step times bound each other, less what a compute window hides: a variant at least as fast as
another in every respect (HBM bandwidth, every peak and measured matmul ceiling, every link's
bandwidth, no link's latency higher) never gives a layout a longer compute, bubble, optimizer
step or exposed tensor/context/expert-parallel communication. The step itself is not monotone:
the data-parallel collectives and the pipeline's send/recv hide behind a micro-batch's compute
(and DualPipe's bubble shrinks by the weight-gradient work it fills), so faster compute can
expose more of them than it saves (llama3-8b on 1,024 DGX B200 chips: 11,296 layouts a step
longer with BF16 peak 2x than with 1.5x). So a variant keeps `floor`, its step times less those
parts; the floors of the faster variants searched before are lower bounds of this one's step
times; the search evaluates the layouts with the lowest bounds first, and then only those whose
bound can still beat the best score found; none that could be the best is skipped.

The reuse checks itself: the memory the later search computes for the layouts it evaluates
must equal the first search's, bit for bit, and no step time it computes may fall below its
bound; where either fails (a term that reads a field assumed not to matter, or a step time that
is not monotone) the search is redone in full and `mismatches` counts it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from ..model.strategy import LayoutBatch, Schedule

# Fields that change step times, capacity, price or power but neither the candidates nor the bytes per chip.
CHIP_FIELDS = ("id", "name", "memory", "memory_bandwidth", "power", "mamf", "mamf_peaks", "sources", "notes")
SYSTEM_FIELDS = ("id", "name", "price_per_hour", "sources", "notes")
TIER_FIELDS = ("bandwidth", "latency")


@dataclass(frozen=True)
class SharedLayouts:
    """The candidates of one (model, chips, node, search space) and the memory of the valid ones."""

    batch: LayoutBatch  # the candidates that passed every rule but memory and the chip's data types
    rejected: dict  # what the rules rejected
    considered: int
    dtypes: dict  # data type -> candidates of that type that passed the rules (the chip decides which it can train)
    memory: np.ndarray | None = None  # bytes per chip of each valid layout (after the schedule and dtype rules)


MAX_BOUNDS = 8  # step-time arrays kept per entry (the variants searched last)


def speeds(system) -> tuple:
    """Every number of a variant that makes steps faster when larger (latencies negated)."""
    chip = system.chip
    return (chip.memory_bandwidth, *(v or 0.0 for _, v in sorted(chip.peak_flops.items())),
            *(v or 0.0 for _, v in sorted(chip.mamf.items())),
            *(chip.measured_mamf_fraction(d) or 0.0 for d in sorted(chip.mamf)),  # a family fit's share (for_chip)
            *(t.bandwidth for t in system.tiers), *(-t.latency for t in system.tiers))


def at_least_as_fast(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x >= y for x, y in zip(a, b))


def floor(res: dict, schedule: np.ndarray) -> np.ndarray:
    """Seconds: a lower bound of each layout's step time on every variant at most as fast as the one `res`
    (simulate.training.evaluate's arrays) is of: the step less its parts that a compute window hides, which
    can grow as compute gets faster (exposed data-parallel and pipeline communication, DualPipe's bubble)."""
    parts = res["time_parts"]
    hidden = parts["comm/dp"] + parts["comm/pp"] + np.where(schedule == Schedule.DUALPIPE, parts["bubble"], 0.0)
    return np.asarray(res["step_time_s"], dtype=float) - hidden


@dataclass(frozen=True)
class Bound:
    """Lower bounds of the step time of every valid layout on the variants at most as fast as one (its `floor`
    where it was evaluated)."""

    speeds: tuple
    calibration: str
    step: np.ndarray


@dataclass
class SearchShare:
    """A small cache of SharedLayouts, passed explicitly to the searches that may share (never global)."""

    capacity: int = 4
    entries: OrderedDict = field(default_factory=OrderedDict)
    hits: int = 0
    misses: int = 0
    mismatches: int = 0
    bounds: dict = field(default_factory=dict)  # key -> [Bound]
    evaluated: int = 0  # layouts whose step time the searches computed

    def key(self, model, system, chips, space, allow_idle, software) -> str:
        chip = system.chip
        shape_chip = replace(chip, **{f: None for f in CHIP_FIELDS if f not in ("id", "name")},
                             id="", name="", peak_flops={d: None for d in sorted(chip.peak_flops)})
        tiers = tuple(replace(t, **{f: 0.0 for f in TIER_FIELDS}) for t in system.tiers)
        shape = replace(system, **{f: None for f in SYSTEM_FIELDS if f not in ("id", "name")}, id="", name="",
                        chip=shape_chip, tiers=tiers)
        return repr((model, shape, int(chips), space, bool(allow_idle), software))

    def get(self, key: str) -> SharedLayouts | None:
        hit = self.entries.get(key)
        if hit is None:
            self.misses += 1
            return None
        self.hits += 1
        self.entries.move_to_end(key)
        return hit

    def put(self, key: str, value: SharedLayouts) -> None:
        self.entries[key] = value
        self.entries.move_to_end(key)
        while len(self.entries) > self.capacity:
            old, _ = self.entries.popitem(last=False)
            self.bounds.pop(old, None)

    def forget(self, key: str) -> None:
        self.mismatches += 1
        self.entries.pop(key, None)
        self.bounds.pop(key, None)

    def bound(self, key: str, system, cal) -> np.ndarray | None:
        """The tightest known lower bound of each valid layout's step time on `system`, or None."""
        mine, tag = speeds(system), repr(cal)
        refs = [b.step for b in self.bounds.get(key, []) if b.calibration == tag and at_least_as_fast(b.speeds, mine)]
        if not refs:
            return None
        return np.maximum.reduce(refs) if len(refs) > 1 else refs[0]

    def add_bound(self, key: str, system, cal, index, floors, inherited, size: int) -> None:
        """Remember this variant's bounds (its `floor` at `index`, the inherited bound elsewhere)."""
        arr = np.zeros(size) if inherited is None else inherited.copy()
        arr[index] = floors
        self.evaluated += int(np.size(index))
        kept = self.bounds.setdefault(key, [])
        kept.append(Bound(speeds(system), repr(cal), arr))
        del kept[:-MAX_BOUNDS]
