"""The serving fit's memo: a row's compared figures at an engine efficiency, reused wherever the efficiency fields
its prediction read hold the same values.

Every residual evaluation of the serving fit (validate/inference._fit_family) predicts every row of a family, the
rows with a benchmark load by the closed-loop simulation (validate/benchmark.py). Most evaluations move few of the
fields a row reads: a finite-difference Jacobian column moves one free parameter, which a dense row's MoE kernel
never reads nor a simulated row the per-request overhead (the static batch's), and a cross-validation fold starts
from the full fit, so its first evaluations meet the full fit's last ones. A prediction is deterministic and reads
the efficiency only through its fields, so a prediction that read the fields S gives the same figures at any
efficiency with the same values of S, whatever the other fields hold. Each entry therefore stores the fields its
prediction read (recorded by a subclass whose every field read is noted; `dataclasses.replace`, `asdict` and the
generated `__eq__`/`__hash__` read each field through it, so a copy's values are traced too) with their values; a
lookup compares exactly those values (float equality: the same bits), so the fit's steps and its result are those
of predicting every row afresh.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields

from ..cost.inference import EngineEfficiency
from ..errors import FlopcastError

FIELDS = tuple(f.name for f in fields(EngineEfficiency))
_FIELD_SET = frozenset(FIELDS)


def traced(eff: EngineEfficiency) -> tuple[EngineEfficiency, set]:
    """(a copy of eff whose field reads, and those of its copies, are recorded; the set they are recorded in)."""
    reads: set = set()

    def read(self, name):
        if name in _FIELD_SET:
            reads.add(name)
        elif name == "__dict__":  # every field at once (copy, pickle, vars)
            reads.update(FIELDS)
        return object.__getattribute__(self, name)

    cls = type("TracedEngineEfficiency", (EngineEfficiency,), {"__getattribute__": read, "__slots__": ()})
    return cls(**{n: getattr(eff, n) for n in FIELDS}), reads


def _row_key(family: str, row: dict) -> tuple:
    return family, tuple((k, v if isinstance(v, str) or v is None else repr(v)) for k, v in row.items())


@dataclass(frozen=True)
class RowMemo:
    """(family, row) -> {fields read: {their values: the row's compared figures}}; counts `predicted` and `reused`."""

    entries: dict = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)

    def compare(self, family: str, row: dict, eff: EngineEfficiency, compare) -> list[dict]:
        """compare([row], {family: eff}) (validate/inference._compare), from the memo when a prediction that read
        the same values was made; the returned figures are shared, not to be changed."""
        by_reads = self.entries.setdefault(_row_key(family, row), {})
        for names, results in by_reads.items():
            hit = results.get(tuple(getattr(eff, n) for n in names))
            if hit is not None:
                self.counts["reused"] += 1
                return hit
        copy, reads = traced(eff)
        out = compare([row], {family: copy})
        names = tuple(sorted(reads))
        by_reads.setdefault(names, {})[tuple(getattr(eff, n) for n in names)] = out
        self.counts["predicted"] += 1
        return out


@dataclass(frozen=True)
class FitCache:
    """What the fits of one calibration share: each family's fit by its rows (a cross-validation fold that leaves a
    family's rows unchanged reuses it), the memo of row predictions, and each row's deployment at the priors (its
    engine family and chip: which fit it belongs to)."""

    fits: dict = field(default_factory=dict)  # (family, its rows' source/run_id) -> fitted EngineEfficiency
    rows: RowMemo = field(default_factory=RowMemo)
    deployments: dict = field(default_factory=dict)  # row -> its deployment at the priors, None when it has none

    def deployment(self, row: dict, configure):
        """configure(row, {})'s deployment (validate/inference.configure), or None where the row cannot be built."""
        key = _row_key("", row)
        if key not in self.deployments:
            try:
                self.deployments[key] = configure(row, {})[0]
            except (FlopcastError, KeyError, ValueError):
                self.deployments[key] = None
        return self.deployments[key]
