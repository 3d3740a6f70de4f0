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

The reuse checks itself: the memory the later search computes for the layouts it evaluates
must equal the first search's, bit for bit; where it does not (a memory term that reads one
of the fields assumed not to matter) the search is redone in full and `mismatches` counts it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from ..model.strategy import LayoutBatch

# Fields that change step times, capacity, price or power but neither the candidates nor the bytes per chip.
CHIP_FIELDS = ("id", "name", "memory", "memory_bandwidth", "power", "mamf", "sources", "notes")
SYSTEM_FIELDS = ("id", "name", "price_per_hour", "sources", "notes")
TIER_FIELDS = ("bandwidth", "latency")


@dataclass(frozen=True)
class SharedLayouts:
    """The candidates of one (model, chips, node, search space) and the memory of the valid ones."""

    batch: LayoutBatch  # as `candidates` returned it
    rejected: dict  # what `candidates` rejected
    considered: int
    memory: np.ndarray | None = None  # bytes per chip of each valid layout (after the schedule and dtype rules)


@dataclass
class SearchShare:
    """A small cache of SharedLayouts, passed explicitly to the searches that may share (never global)."""

    capacity: int = 4
    entries: OrderedDict = field(default_factory=OrderedDict)
    hits: int = 0
    misses: int = 0
    mismatches: int = 0

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
            self.entries.popitem(last=False)

    def forget(self, key: str) -> None:
        self.mismatches += 1
        self.entries.pop(key, None)
