"""Lower bounds of a layout's seconds per token, and of every layout a degree row expands into, for the
branch-and-bound search (plan/bounded.py). Each is a sum of pieces of simulate.training.evaluate's step, every
one no more than the step's:

    step >= (m + (pp - 1) / v_max) (W + E) / pp + D + overhead,

W the work of one micro-batch in every layer and both edges (forward, backward, recomputation, exposed
tensor- and context-parallel communication; step_bounds.microbatch_work_s), E its exposed expert-parallel
all-to-all (in full, less the share an overlapping schedule can hide), m the micro-batches per step, v_max the
most virtual stages the row may run (no bubble term where DualPipe runs), D the exposed data-parallel
communication at the longest compute window (step_bounds.dp_comm_floor_s). For a row, each piece is its least
over the row's recomputation, sequence-parallel, dtype, schedule and sharding choices (the least of each
recomputation choice's sum). W, E and the window are cached per WORK_FIELDS combination in a WorkTable shared by
the searches of one planner across cluster sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..cost import pipeline
from ..model.strategy import MODERN_SOFTWARE, LayoutBatch, Schedule, Software, virtual_stages
from ..model.system import Dtype
from ..simulate import step_bounds, training
from .rules import PIPELINE_EDGE_SLOTS
from .streamed import Pruning

WORK_FIELDS = ("tp", "cp", "micro_batch", "sequence_parallel", "recompute", "dtype", "ep", "etp")
PARTS = ("work", "compute", "a2a")  # what the WorkTable holds per key (step_bounds.microbatch_work_s)
SLACK = 1e-6  # relative tolerance of the bound against rounding (balanced_stage's eps, float sums)


@dataclass
class WorkTable:
    """W, compute window and all-to-all (microbatch_work_s) per WORK_FIELDS combination, computed once per model,
    system and calibration."""

    model: object
    system: object
    cal: object
    software: Software = MODERN_SOFTWARE
    known: dict = field(default_factory=dict)
    lowest: dict = field(default_factory=dict)

    def parts(self, keys: list[tuple]) -> np.ndarray:
        """(W, compute window, all-to-all) of each key (step_bounds.microbatch_work_s), one row per key."""
        todo = sorted({k for k in keys if k not in self.known})
        if todo:
            cols = dict(zip(WORK_FIELDS, (np.array(c, dtype=np.int64) for c in zip(*todo))))
            one = np.ones(len(todo), dtype=np.int64)
            lb = LayoutBatch(pp=one, dp=one, vp=one, global_batch=cols["micro_batch"], sharding=0 * one,
                             schedule=one * int(Schedule.ONE_F_ONE_B), **cols)
            got = step_bounds.microbatch_work_s(self.model, self.system, lb, self.cal, self.software)
            w = np.stack([np.asarray(got[k], dtype=float) for k in PARTS], axis=1)
            self.known.update(zip(todo, map(tuple, w.tolist())))
        return np.array([self.known[k] for k in keys], dtype=float).reshape(-1, len(PARTS))

    def work(self, keys: list[tuple]) -> np.ndarray:
        return self.parts(keys)[:, 0]

    def of(self, lb: LayoutBatch) -> np.ndarray:
        """(W, compute window, all-to-all) of every layout in lb, one row per layout."""
        distinct, inverse = combinations([np.asarray(getattr(lb, f), dtype=np.int64) for f in WORK_FIELDS])
        return self.parts(list(map(tuple, distinct.tolist())))[inverse]  # (Python ints, as keys)

    def least(self, combos: list[tuple], ch, trainable: tuple) -> np.ndarray:
        """For each (tp, cp, micro-batch, ep, etp) and recomputation choice, the least W, the largest compute
        window and the least all-to-all over the sp and dtype choices (every combination computed in one
        evaluation): shape (combos, recomputation choices, 3)."""
        tag = (ch.sequence_parallel, ch.recompute, trainable)
        todo = [c for c in combos if (c, tag) not in self.lowest]
        if todo:
            keys = [[(tp, cp, mb, int(sp), int(rc), int(d), ep, etp) for sp in ch.sequence_parallel
                     if sp == 0 or tp > 1 for d in trainable] for tp, cp, mb, ep, etp in todo for rc in ch.recompute]
            w = self.parts([k for ks in keys for k in ks])
            at, rows = 0, []
            for ks in keys:
                part = w[at:at + len(ks)]
                rows.append((part[:, 0].min(), part[:, 1].max(), part[:, 2].min()) if ks else (np.inf, 0.0, np.inf))
                at += len(ks)
            got = np.array(rows, dtype=float).reshape(len(todo), len(ch.recompute), len(PARTS))
            self.lowest.update(((c, tag), g) for c, g in zip(todo, got))
        return np.stack([self.lowest[(c, tag)] for c in combos]).reshape(len(combos), len(ch.recompute), len(PARTS))


DENSE = 1 << 22  # values (and combinations) counted in an array of this many places at most, else sorted


def combinations(cols: list) -> tuple[np.ndarray, np.ndarray]:
    """(distinct, inverse): the distinct combinations of the integer columns' values, one row each, ascending in the
    columns' order (what np.unique of a key packing them gives), and the row of each element's combination. Each
    column's values and then their combinations are numbered by counting where the counts fit DENSE places, in a
    pass over the elements each rather than a sort of them; by sorting where they do not."""
    n = len(cols[0]) if cols else 0
    values, codes = [], []
    for c in cols:
        if n and c.min() >= 0 and c.max() < DENSE:
            seen = np.zeros(int(c.max()) + 1, dtype=bool)
            seen[c] = True
            values.append(np.flatnonzero(seen))
            codes.append((np.cumsum(seen) - 1)[c])
        else:
            v, code = np.unique(c, return_inverse=True)
            values.append(v)
            codes.append(code.reshape(-1))
    radix = 1
    for v in values:
        radix *= max(len(v), 1)
    if radix >= 1 << 62:  # too many to number in one integer: the rows themselves sorted
        distinct, inverse = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
        return distinct, inverse.reshape(-1)
    key = np.zeros(n, dtype=np.int64)
    for v, code in zip(values, codes):  # one integer per combination, the first column the most significant
        key = key * len(v) + code
    if radix <= DENSE:
        seen = np.zeros(radix, dtype=bool)
        seen[key] = True
        uniq, inverse = np.flatnonzero(seen), (np.cumsum(seen) - 1)[key]
    else:
        uniq, inverse = np.unique(key, return_inverse=True)
        inverse = inverse.reshape(-1)
    out, rest = [], uniq
    for v in reversed(values):
        out.append(v[rest % len(v)])
        rest = rest // len(v)
    return np.stack(out[::-1], axis=1) if out else np.zeros((len(uniq), 0), dtype=np.int64), inverse


def _groups(base: np.ndarray, cols: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(first row, map from rows to groups) of the distinct values of base's columns `cols`, one integer per
    combination (np.unique on rows sorts slowly)."""
    key, radix = np.zeros(len(base), dtype=np.int64), 1
    for col in cols:
        values, code = base[:, col], base[:, col]
        top = int(values.max()) + 1
        if radix * top >= 2**62:  # pinned values too large to pack: number them instead
            values, code = np.unique(values, return_inverse=True)
            top = len(values)
        key, radix = key * top + code.reshape(-1), radix * top
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _row_work(table: WorkTable, base: np.ndarray, ch, trainable: tuple) -> np.ndarray:
    """WorkTable.least of each base row (tp, cp, pp, dp, gb, mb, ep, etp) over its recompute, sp and dtype choices."""
    first, inverse = _groups(base, (0, 1, 5, 6, 7))
    combos = [tuple(c) for c in base[first][:, [0, 1, 5, 6, 7]].tolist()]
    return table.least(combos, ch, trainable)[inverse]


def _dp_least(model, table: WorkTable, base: np.ndarray, ch, trainable: tuple, windows: np.ndarray) -> np.ndarray:
    """The least exposed data-parallel communication of each base row over its shardings, at each of its
    compute windows (rows x recomputation choices), computed once per (tp, cp, pp, dp, mb, ep, etp) with the
    group's longest windows and fewest micro-batches (more micro-batches never expose less: ZeRO-3 gathers for
    every one), on layouts with the fewest stage layers and one stage held (vp 1, 1F1B: the least parameters)."""
    floor = _DpFloor(model, table, base, ch, trainable, windows)
    return floor.of_groups(np.arange(floor.n_groups))[floor.inverse]


class _DpFloor:
    """_dp_least's groups and their aggregates over every base row, the floor computed for the groups asked for."""

    def __init__(self, model, table: WorkTable, base: np.ndarray, ch, trainable: tuple, windows: np.ndarray):
        self.model, self.table, self.base, self.trainable = model, table, base, trainable
        self.first, self.inverse = _groups(base, (0, 1, 2, 3, 5, 6, 7))
        self.n_groups = len(self.first)
        self.gb = np.full(self.n_groups, np.iinfo(np.int64).max)
        np.minimum.at(self.gb, self.inverse, base[:, 4])
        self.window = np.zeros((self.n_groups, windows.shape[1]))
        np.maximum.at(self.window, self.inverse, windows)
        self.shardings = np.array([int(s) for s in ch.sharding], dtype=np.int64)

    def of_groups(self, groups: np.ndarray) -> np.ndarray:
        """The floor of each group in `groups` (groups x recomputation choices)."""
        n_g, n_s = len(groups), len(self.shardings)
        g = np.repeat(groups, n_s)  # (group, sharding) flattened
        rows = self.base[self.first[g]]
        one = np.ones(len(g), dtype=np.int64)
        rep = LayoutBatch(tp=rows[:, 0], cp=rows[:, 1], pp=rows[:, 2], dp=rows[:, 3], global_batch=self.gb[g],
                          micro_batch=rows[:, 5], ep=rows[:, 6], etp=rows[:, 7], vp=one,
                          schedule=one * int(Schedule.ONE_F_ONE_B), recompute=0 * one, sequence_parallel=0 * one,
                          dtype=one * int(self.trainable[0]), sharding=np.tile(self.shardings, n_g))
        least = step_bounds.dp_comm_floor_s(self.model, self.table.system, rep, self.table.cal, self.window[g].T,
                                            self.table.software)
        return least.T.reshape(n_g, n_s, -1).min(axis=1)


def _stage_layers(model, pp, v):
    """Layers on the busiest stage's chunks (training._stage_times)."""
    return np.where(v > 1, np.ceil(model.layers / (pp * v)) * v, np.ceil(model.layers / pp))


def _pair_limits(model, pp: np.ndarray, m: np.ndarray, pairs: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over each row's schedule pairs that pass the rules (pp v <= layers + 2, vp > 1 only with pp > 1, DualPipe with
    an even pp > 1 and an even number of at least 2 pp micro-batches m): (pp - 1) / v_max, the least bubble in
    stage times (0 where DualPipe runs); the most stage layers any has; whether any overlaps the all-to-all."""
    vmax, layers, overlap = np.ones(pp.shape), _stage_layers(model, pp, np.ones(pp.shape)), np.zeros(pp.shape, bool)
    dual = np.zeros(pp.shape, bool)
    for v, sc in pairs:
        eff = float(virtual_stages(np.array([sc]), np.array([float(v)]))[0])
        usable = (pp * eff <= model.layers + PIPELINE_EDGE_SLOTS) & ((eff == 1) | (pp > 1))
        if sc == Schedule.DUALPIPE:
            usable &= (pp % 2 == 0) & (pp > 1) & (m % 2 == 0) & (m >= 2 * pp)
            dual |= usable
        vmax = np.where(usable, np.maximum(vmax, eff), vmax)
        layers = np.where(usable, np.maximum(layers, _stage_layers(model, pp, np.full(pp.shape, eff))), layers)
        if sc in (Schedule.DUALPIPE, Schedule.ONE_F_ONE_B_OVERLAP):
            overlap |= usable
    return np.where(dual, 0.0, (pp - 1.0) / vmax), layers, overlap


def _exposed_a2a(table: WorkTable, a2a, pp, m, overlapped) -> np.ndarray:
    """The least comm/ep per micro-batch over the layers: in full, but for the paired share of an overlapping
    schedule's micro-batches, where at most a2a / slowdown of it hides (pipeline.overlapped_stage_time)."""
    paired = np.where(overlapped, np.maximum(m - pp, 0.0) / np.maximum(m, 1.0), 0.0)  # pipeline.paired_share
    return a2a * (1.0 - paired / pipeline.overlap_compute_factor(table.system.chip))


def layout_bounds(model, table: WorkTable, lb: LayoutBatch, above: float = np.inf) -> np.ndarray:
    """A lower bound of the seconds per token of every layout in lb: the row bound with the layout's own
    recomputation, sp, dtype, schedule, virtual stages and sharding. Layouts already bounded above `above`
    without their data-parallel communication keep that cheaper bound (it is not computed for them)."""
    f = {k: getattr(lb, k).astype(float) for k in ("pp", "dp", "global_batch", "micro_batch", "vp")}
    work, window, a2a = table.of(lb).T
    v = virtual_stages(lb.schedule, f["vp"])
    m = f["global_batch"] / (f["dp"] * f["micro_batch"])
    overlapped = (lb.schedule == Schedule.DUALPIPE) | (lb.schedule == Schedule.ONE_F_ONE_B_OVERLAP)
    per_stage = (work + _exposed_a2a(table, a2a, f["pp"], m, overlapped)) / f["pp"]
    bubble = np.where(lb.schedule == Schedule.DUALPIPE, 0.0, (f["pp"] - 1.0) / v)
    scale = (1.0 - SLACK) / (f["global_batch"] * model.seq_len)
    out = ((m + bubble) * per_stage + table.cal.step_overhead_s) * scale
    todo = np.nonzero(out <= above)[0]
    if todo.size:
        sub = lb if todo.size == lb.size else lb.take(todo)
        window = (_stage_layers(model, f["pp"], v) * window / model.layers)[todo]
        out[todo] += step_bounds.dp_comm_floor_s(model, table.system, sub, table.cal, window,
                                                 table.software) * scale[todo]
    return out


def row_bounds(model, table: WorkTable, base: np.ndarray, ch, pairs: list, trainable: tuple) -> np.ndarray:
    """A lower bound of the seconds per token of every layout each base row expands into: the least over the
    recomputation choices of

        step >= (m + (pp - 1) / v_max) (W + E) / pp + D + overhead,

    W, E the least work and exposed all-to-all over the row's other choices, D the least exposed data-parallel
    communication over its shardings at the longest compute window any choice gives (more window hides more,
    step_bounds.dp_comm_floor_s)."""
    rows = RowBounds(model, table, base, ch, pairs, trainable)
    rows.order(len(base))
    return rows.bound


class RowBounds:
    """row_bounds of a search's base rows and their increasing order (np.argsort(bound, kind="stable")'s), D (the
    costliest piece) computed only for the rows the search reaches. A row's bound is at least its bound without D
    (`cheap`), so once every row whose cheap bound is at most x has its D, those of them whose bound is at most x
    are the first rows of the order, in its order: no other row can come before them."""

    FIRST = 4096  # rows given their D at first; each later extension twice as many

    def __init__(self, model, table: WorkTable, base: np.ndarray, ch, pairs: list, trainable: tuple):
        pp, dp, gb, mb = (base[:, i].astype(float)[:, None] for i in (2, 3, 4, 5))
        work, window, a2a = _row_work(table, base, ch, trainable).transpose(2, 0, 1)  # each rows x recomputation
        m = gb / (dp * mb)
        bubble, stage_layers, overlapped = _pair_limits(model, pp[:, 0], base[:, 4] // (base[:, 3] * base[:, 5]),
                                                        pairs)
        per_stage = (work + _exposed_a2a(table, a2a, pp, m, overlapped[:, None])) / pp
        self.partial = (m + bubble[:, None]) * per_stage
        self.overhead, self.tokens = table.cal.step_overhead_s, gb[:, 0] * model.seq_len
        self.floor = _DpFloor(model, table, base, ch, trainable, stage_layers[:, None] * window / model.layers)
        cheap = self._bound(self.partial + 0.0 + self.overhead)  # (+ 0.0: D's place in the sum)
        self.by_cheap = np.argsort(cheap, kind="stable")
        self.cheap = cheap[self.by_cheap]
        self.bound = np.full(len(base), np.nan)
        self.dp = np.full((self.floor.n_groups, self.partial.shape[1]), np.nan)
        self.done, self.batch, self._order = 0, self.FIRST, np.zeros(0, dtype=np.int64)

    def _bound(self, step: np.ndarray, rows=slice(None)) -> np.ndarray:
        return step.min(axis=1) * (1.0 - SLACK) / self.tokens[rows]

    def order(self, n: int) -> np.ndarray:
        """At least the first n rows of the order (all of them where there are fewer)."""
        while len(self._order) < n and self.done < len(self.bound):
            self._extend()
        return self._order

    def _extend(self) -> None:
        """D for the next rows by their cheap bound (those tied with the last included), and the order they give."""
        end = min(self.done + self.batch, len(self.bound))
        self.batch *= 2
        x = self.cheap[end - 1] if end < len(self.bound) else np.inf
        if np.isnan(x):  # (rows without a finite bound sort last either way)
            end, x = len(self.bound), np.inf
        elif end < len(self.bound):
            end = int(np.searchsorted(self.cheap, x, side="right"))
        new = self.by_cheap[self.done:end]
        groups = np.unique(self.floor.inverse[new])
        groups = groups[np.isnan(self.dp[groups, 0])]
        if groups.size:
            self.dp[groups] = self.floor.of_groups(groups)
        self.bound[new] = self._bound(self.partial[new] + self.dp[self.floor.inverse[new]] + self.overhead, new)
        self.done = end
        known = np.arange(len(self.bound)) if end == len(self.bound) else np.sort(self.by_cheap[:end])
        if end < len(self.bound):
            known = known[self.bound[known] <= x]
        self._order = known[np.argsort(self.bound[known], kind="stable")]


def cannot_fit(model, system, chips: int, dtypes=(Dtype.BF16,)) -> bool:
    """True where no layout of `model` in these compute dtypes fits on `chips` chips: every parameter's weight,
    gradient and optimizer states are held at least once (cost/memory.state_bytes_per_param; ZeRO-3 at most
    divides them over the chips, Rajbhandari et al. 2020), so the busiest chip holds at least the average,
    params x state bytes / chips, besides the runtime reserve every layout keeps."""
    from ..cost import memory
    from ..cost.params import total_params

    per_param = min(float(sum(memory.state_bytes_per_param(Dtype(int(d))))) for d in dtypes)
    return total_params(model) * per_param / chips + memory.RESERVE_BYTES > system.chip.memory


def pruning(model, system, cal, software: Software = MODERN_SOFTWARE, budget: int | None = None) -> Pruning:
    """What lets a streamed throughput search (plan/streamed.best_of) evaluate only the layouts that can be its
    best: each layout's memory (training.memory_bytes, the evaluation's formulas) and its lower bound."""
    table = WorkTable(model, system, cal, software)
    return Pruning(lambda lb: training.memory_bytes(model, system, lb, cal, software=software), system.chip.memory,
                   lambda lb, above: layout_bounds(model, table, lb, above), budget)
