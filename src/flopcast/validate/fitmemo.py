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

A prediction made anew simulates its row's benchmark only where no earlier run of the row read the same numbers
(RowRuns): a run reads the efficiency only through its iteration costs, and a Neuron MoE row reads the family's
per-release fields whole while its run uses one release's values, so a column moving another release's (or a cost
that does not bind) needs no new run.
"""

from __future__ import annotations

import math
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


def _same(a: float, b: float) -> bool:
    """a and b are the same float (0.0 and -0.0 are not)."""
    return a == b and (a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b))


def _scalars(cost) -> tuple:
    return (len(cost.dense), cost.logit_flop_s, cost.logit_bytes_s, cost.attn_pair_s, cost.attn_kv_s, cost.speed)


@dataclass(frozen=True)
class RowRuns:
    """What a fit keeps of one row between its predictions: what the row alone decides (its deployment's choices, its
    benchmark load, its measured cells: `once`), and its simulated benchmark runs
    (validate/benchmark.simulate_row), each with the numbers it read: the
    iteration costs (simulate/serving/iteration.IterationCost: its scalars and the entries of its table that were
    computed) and the replica's KV capacity. A run reads its deployment's efficiency only through these (the events,
    their order and every time follow from them and the row), so a run whose numbers are the same gives the same
    result; a Jacobian column whose parameter moves no number a row's simulation reads (a release's MoE block cost
    the row's release does not use, a DMA transfer's cost where the block rate binds) reuses it. A run that timed a
    pass longer than its table apart (inf.step_time, not the table) is not kept."""

    runs: list = field(default_factory=list)  # (kv capacity, _scalars, computed table entries, result)
    counts: Counter = field(default_factory=Counter)
    tokens: set = field(default_factory=set)  # the table entries its runs computed: the next run's prefetch
    row_only: dict = field(default_factory=dict)

    def once(self, name: str, fn, *args):
        """fn(*args), computed for the row's first prediction (the same row and arguments: the same answer; an
        error is raised again each time)."""
        if name not in self.row_only:
            self.row_only[name] = fn(*args)
        return self.row_only[name]

    def find(self, cost, capacity: int):
        """The result of a kept run that read the same numbers as `cost` gives (computing its entries), or None."""
        scalars = _scalars(cost)
        for cap, sc, entries, result in self.runs:
            if cap == capacity and all(map(_same, sc, scalars)) and all(_same(cost.dense[n], v) for n, v in entries):
                self.counts["simulation reused"] += 1
                return result
        return None

    def add(self, cost, capacity: int, result) -> None:
        self.counts["simulated"] += 1
        entries = tuple(dict.items(cost.dense))
        self.tokens.update(n for n, _ in entries)
        if not cost.dense.past:
            self.runs.append((capacity, _scalars(cost), entries, result))


def _row_key(family: str, row: dict) -> tuple:
    return family, tuple((k, v if isinstance(v, str) or v is None else repr(v)) for k, v in row.items())


@dataclass(frozen=True)
class RowMemo:
    """(family, row) -> {fields read: {their values: the row's compared figures}}; counts `predicted` and `reused`."""

    entries: dict = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    simulations: dict = field(default_factory=dict)  # (family, row) -> its RowRuns

    def compare(self, family: str, row: dict, eff: EngineEfficiency, compare) -> list[dict]:
        """compare([row], {family: eff}) (validate/inference._compare), from the memo when a prediction that read
        the same values was made; the returned figures are shared, not to be changed. A prediction made simulates
        the row's benchmark only where no earlier run of it read the same numbers (RowRuns)."""
        key = _row_key(family, row)
        by_reads = self.entries.setdefault(key, {})
        for names, results in by_reads.items():
            hit = results.get(tuple(getattr(eff, n) for n in names))
            if hit is not None:
                self.counts["reused"] += 1
                return hit
        copy, reads = traced(eff)
        runs = self.simulations.get(key)
        if runs is None:
            runs = self.simulations[key] = RowRuns(counts=self.counts)
        out = compare([row], {family: copy}, runs=runs)
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
