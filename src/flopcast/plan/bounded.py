"""The fastest layout on a cluster without evaluating every candidate: branch and bound over the degree rows.

The exhaustive search (plan/search.py) expands every (tp, cp, pp, dp, global batch, micro-batch, ep) row into
every schedule, recomputation, sharding, sequence-parallel and dtype choice and evaluates them all (about two
million layouts for a 70B model on a large Trainium2 cluster). Here each row first gets a lower bound of its
layouts' seconds per token, from quantities that do not depend on the cluster:

    step >= m W / pp + (pp - 1) / v_max W / pp + overhead,   W = simulate.training.microbatch_work_s,

W the least work of one micro-batch over the row's recomputation, sequence-parallel and dtype choices, m the
micro-batches per step, v_max the most virtual stages the row may run (no bubble term where DualPipe is
allowed). Rows are expanded and evaluated in increasing order of their bound until the next bound exceeds the
best score found among the layouts that fit: no row skipped could have held a better layout (branch and bound,
Land and Doig 1960). Ties are broken as the exhaustive search breaks them (its candidate order), so the answer
is the same layout. The bound checks itself: a layout whose evaluated step falls below its row's bound makes
the search return None and the caller searches exhaustively.

Only the throughput objective is pruned (the planner's); W is cached per (tp, cp, micro-batch, sp, recompute,
dtype, ep) in a WorkTable shared by the searches of one planner across cluster sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.strategy import MODERN_SOFTWARE, LayoutBatch, Schedule, Software, virtual_stages
from ..model.system import Dtype
from ..simulate import training
from . import results
from . import search as S

WORK_FIELDS = ("tp", "cp", "micro_batch", "sequence_parallel", "recompute", "dtype", "ep", "etp")
WORK_BITS = (14, 7, 20, 1, 2, 5, 9, 5)  # 63 bits packing one layout's WORK_FIELDS (wider values: np.unique)
FIRST_ROWS = 64  # rows expanded in the first round; each later round doubles
MEMORY_FIRST = 4096  # layouts in a round from which their memory is checked before their step time
SLACK = 1e-6  # relative tolerance of the bound against rounding (balanced_stage's eps, float sums)


@dataclass
class WorkTable:
    """W (microbatch_work_s) per WORK_FIELDS combination, computed once per model, system and calibration."""

    model: object
    system: object
    cal: object
    software: Software = MODERN_SOFTWARE
    known: dict = field(default_factory=dict)
    lowest: dict = field(default_factory=dict)

    def work(self, keys: list[tuple]) -> np.ndarray:
        todo = sorted({k for k in keys if k not in self.known})
        if todo:
            cols = dict(zip(WORK_FIELDS, (np.array(c, dtype=np.int64) for c in zip(*todo))))
            one = np.ones(len(todo), dtype=np.int64)
            lb = LayoutBatch(pp=one, dp=one, vp=one, global_batch=cols["micro_batch"], sharding=0 * one,
                             schedule=one * int(Schedule.ONE_F_ONE_B), **cols)
            w = training.microbatch_work_s(self.model, self.system, lb, self.cal, self.software)
            self.known.update(zip(todo, np.asarray(w, dtype=float).tolist()))
        return np.array([self.known[k] for k in keys])

    def of(self, lb: LayoutBatch) -> np.ndarray:
        """W of every layout in lb."""
        cols = [getattr(lb, f).astype(np.int64) for f in WORK_FIELDS]
        key = np.zeros(lb.size, dtype=np.int64)
        small = all(c.min(initial=0) >= 0 and c.max(initial=0) < (1 << bits) for c, bits in zip(cols, WORK_BITS))
        for c, bits in zip(cols, WORK_BITS):  # one integer per combination (the fields are small counts)
            if small:
                key = (key << bits) | c
            else:
                values, code = np.unique(c, return_inverse=True)
                key = key * len(values) + code.reshape(-1)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        distinct = list(map(tuple, np.stack([c[first] for c in cols], axis=1).tolist()))  # Python ints, as keys
        return self.work(distinct)[inverse.reshape(-1)]

    def least(self, combos: list[tuple], ch, trainable: tuple) -> np.ndarray:
        """The least W of each (tp, cp, micro-batch, ep, etp) over the recomputation, sp and dtype choices (the
        W of every combination computed in one evaluation)."""
        tag = (ch.sequence_parallel, ch.recompute, trainable)
        todo = [c for c in combos if (c, tag) not in self.lowest]
        if todo:
            keys = [[(tp, cp, mb, int(sp), int(rc), int(d), ep, etp) for sp in ch.sequence_parallel
                     if sp == 0 or tp > 1 for rc in ch.recompute for d in trainable] for tp, cp, mb, ep, etp in todo]
            w = self.work([k for ks in keys for k in ks])
            at = 0
            for c, ks in zip(todo, keys):
                self.lowest[(c, tag)] = float(np.min(w[at:at + len(ks)])) if ks else np.inf
                at += len(ks)
        return np.array([self.lowest[(c, tag)] for c in combos])


def _row_work(table: WorkTable, base: np.ndarray, ch, trainable: tuple) -> np.ndarray:
    """The least W of each base row (tp, cp, pp, dp, gb, mb, ep, etp) over its recompute, sp and dtype choices."""
    key, radix = np.zeros(len(base), dtype=np.int64), 1
    for col in (0, 1, 5, 6, 7):  # one integer per distinct (tp, cp, mb, ep, etp): np.unique on rows sorts slowly
        values, code = base[:, col], base[:, col]
        top = int(values.max()) + 1
        if radix * top >= 2**62:  # pinned values too large to pack: number them instead
            values, code = np.unique(values, return_inverse=True)
            top = len(values)
        key, radix = key * top + code.reshape(-1), radix * top
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    combos = [tuple(c) for c in base[first][:, [0, 1, 5, 6, 7]].tolist()]
    return table.least(combos, ch, trainable)[inverse.reshape(-1)]


def _bubble_factor(model, pp: np.ndarray, pairs: list) -> np.ndarray:
    """(pp - 1) / v_max of each row: the least bubble, in stage times, any of its schedule pairs can have."""
    if any(sc == Schedule.DUALPIPE for _, sc in pairs):
        return np.zeros(pp.shape)
    vmax = np.ones(pp.shape)
    for v, sc in pairs:
        eff = float(virtual_stages(np.array([sc]), np.array([float(v)]))[0])
        usable = (pp * eff <= model.layers) & ((eff == 1) | (pp > 1))
        vmax = np.where(usable, np.maximum(vmax, eff), vmax)
    return (pp - 1.0) / vmax


def layout_bounds(model, table: WorkTable, lb: LayoutBatch) -> np.ndarray:
    """A lower bound of the seconds per token of every layout in lb: the row bound with the layout's own
    recomputation, sp, dtype and virtual stages."""
    f = {k: getattr(lb, k).astype(float) for k in ("pp", "dp", "global_batch", "micro_batch", "vp")}
    per_stage = table.of(lb) / f["pp"]
    v = virtual_stages(lb.schedule, f["vp"])
    bubble = np.where(lb.schedule == Schedule.DUALPIPE, 0.0, (f["pp"] - 1.0) / v)
    m = f["global_batch"] / (f["dp"] * f["micro_batch"])
    step = (m + bubble) * per_stage + table.cal.step_overhead_s
    return step * (1.0 - SLACK) / (f["global_batch"] * model.seq_len)


def row_bounds(model, table: WorkTable, base: np.ndarray, ch, pairs: list, trainable: tuple) -> np.ndarray:
    """A lower bound of the seconds per token of every layout each base row expands into."""
    pp, dp, gb, mb = (base[:, i].astype(float) for i in (2, 3, 4, 5))
    per_stage = _row_work(table, base, ch, trainable) / pp
    m = gb / (dp * mb)
    step = m * per_stage + _bubble_factor(model, pp, pairs) * per_stage + table.cal.step_overhead_s
    return step * (1.0 - SLACK) / (gb * model.seq_len)


@dataclass
class _Found:
    """The layouts evaluated so far: batches, results, their keys in the exhaustive order, row bounds."""

    batches: list = field(default_factory=list)
    results: list = field(default_factory=list)
    keys: list = field(default_factory=list)
    best: float = np.inf
    evaluated: int = 0
    reached: bool = False  # a fitting layout at least as fast as `best` started (the cutoff) was found
    unfit: list = field(default_factory=list)  # (layouts, keys) memory alone ruled out, not evaluated


def cannot_fit(model, system, chips: int, dtypes=(Dtype.BF16,)) -> bool:
    """True where no layout of `model` in these compute dtypes fits on `chips` chips: every parameter's weight,
    gradient and optimizer states are held at least once (cost/memory.state_bytes_per_param; ZeRO-3 at most
    divides them over the chips, Rajbhandari et al. 2020), so the busiest chip holds at least the average,
    params x state bytes / chips, besides the runtime reserve every layout keeps."""
    from ..cost import memory
    from ..cost.params import total_params

    per_param = min(float(sum(memory.state_bytes_per_param(Dtype(int(d))))) for d in dtypes)
    return total_params(model) * per_param / chips + memory.RESERVE_BYTES > system.chip.memory


@dataclass(frozen=True)
class Beyond:
    """No layout on the cluster reaches the cutoff: every one needs at least `s_per_token` (a lower bound)."""

    s_per_token: float


def floor_s_per_token_chip(model, system, space: S.SearchSpace, table: WorkTable) -> float:
    """A lower bound of seconds per token x chips of any layout on any cluster size: step >= m W / pp, and
    dp pp <= chips / (tp cp), so seconds per token >= W tp cp / (chips micro-batch seq)."""
    ch = S._choices(model, system, 32, space)  # cp up to 32: every cluster's choices or more
    trainable = [d for d in ch.dtype if not S.training_dtype_problem(system.chip, Dtype(int(d)))]
    keys = [(tp, cp, mb, int(sp), int(rc), int(d), ep, etp) for tp in ch.tp for cp in ch.cp for mb in ch.micro_batch
            for sp in ch.sequence_parallel if sp == 0 or tp > 1 for rc in ch.recompute for d in trainable
            for ep in ch.ep for etp in ch.etp]
    if not keys:
        return 0.0
    w = table.work(keys)
    scale = np.array([k[0] * k[1] / (k[2] * model.seq_len) for k in keys])
    return float(np.min(w * scale)) * (1.0 - SLACK)


def search(model, system, chips: int, cal, space: S.SearchSpace, table: WorkTable, allow_idle: bool = True,
           software: Software = MODERN_SOFTWARE, cutoff: float | None = None) -> S.SearchOutcome | Beyond | None:
    """The throughput search's outcome with the same best layout as search.search, evaluating only the rows
    whose bound can beat it; None where the bound proves wrong (the caller then searches in full).

    cutoff (seconds per token): look only for layouts at least that fast; Beyond where none fits below it
    (the same best layout where one does)."""
    return search_many(model, system, cal, table, [(chips, space, cutoff)], allow_idle, software)[0]


def search_many(model, system, cal, table: WorkTable, cases: list, allow_idle: bool = True,
                software: Software = MODERN_SOFTWARE) -> list:
    """search() of each (chips, space, cutoff) case of one model and system, run in lockstep: each round's
    layouts of every case are evaluated together (one call instead of one per case; a layout's numbers do not
    depend on the others it is evaluated with), so each outcome is search()'s."""
    lanes = [_Lane(model, system, chips, space, table, allow_idle, cutoff, software) for chips, space, cutoff in cases]
    while True:
        work = [(lane, lane.next_round()) for lane in lanes if lane.active]
        work = [(lane, got) for lane, got in work if got is not None]
        if not work:
            return [lane.outcome(cal) for lane in lanes]
        batches = [lb for _, (lb, _, _) in work]
        lb = LayoutBatch.concat(batches)
        res = training.evaluate(model, system, lb, cal, software=software)
        at = 0
        for lane, (part, key, lower) in work:
            lane.absorb(part, key, lower, results.take(res, slice(at, at + part.size)))
            at += part.size


class _Lane:
    """One cluster size's bounded search, advanced a round at a time: rows in increasing order of their bound,
    64 rows first and twice as many each later round, until the next bound exceeds the best found."""

    def __init__(self, model, system, chips: int, space: S.SearchSpace, table: WorkTable, allow_idle: bool,
                 cutoff: float | None, software: Software):
        self.model, self.system, self.table, self.cutoff, self.software = model, system, table, cutoff, software
        base, self.pairs, ch, tally = S._passing_base(model, system, chips, space, allow_idle)
        self.ch, self.tally = ch, tally
        self.active, self.broken, self.base = True, False, None
        trainable = tuple(d for d in ch.dtype if not S.training_dtype_problem(system.chip, Dtype(int(d))))
        self.n_exp = len(self.pairs) * ch.per_schedule_pair
        if base is None or not trainable:  # the outcome is None: the caller searches in full
            self.active = False
            return
        tally.considered += len(base) * self.n_exp  # the rows past the rules (those it ruled out are counted)
        self.base = base
        self.bound = row_bounds(model, table, self.base, ch, self.pairs, trainable)
        self.order = np.argsort(self.bound, kind="stable")
        self.found = _Found(best=np.inf if cutoff is None else float(cutoff))
        self.start, self.take = 0, FIRST_ROWS

    def next_round(self):
        """(layouts, their keys, their lower bounds) of the next round with any layout left to evaluate, or None
        (the search is over)."""
        bound, order, found = self.bound, self.order, self.found
        while self.start < len(order) and bound[order[self.start]] <= found.best * (1 + 1e-12):
            stop = self.start + self.take
            chosen = order[self.start:stop]
            chosen = chosen[bound[chosen] <= found.best * (1 + 1e-12)]
            self.start, self.take = stop, self.take * 2
            got = _promising(self.model, self.system, self.table, self.software, self.base, chosen, self.pairs,
                             self.ch, self.n_exp, found)
            if got is not None:
                return got
        self.active = False
        return None

    def absorb(self, lb, key, lower, res) -> None:
        """Take a round's evaluated layouts; a step below its bound ends the search (outcome None)."""
        found = self.found
        per_token = 1.0 / np.asarray(res["tokens_per_s"], dtype=float)
        if (per_token < lower).any():
            self.active, self.broken = False, True
            return
        fits = np.asarray(res["fits"], dtype=bool)
        if fits.any() and float(per_token[fits].min()) <= found.best:
            found.best, found.reached = float(per_token[fits].min()), True
        found.batches.append(lb)
        found.results.append(res)
        found.keys.append(key)

    def outcome(self, cal) -> S.SearchOutcome | Beyond | None:
        if self.base is None or not len(self.base) or self.broken:
            return None
        if self.cutoff is not None and not self.found.reached:  # every row that could reach it evaluated: none
            return Beyond(float(self.cutoff))
        found = self.found
        if found.unfit and not any(np.asarray(r["fits"], dtype=bool).any() for r in found.results):
            for lb, key in found.unfit:  # nothing fits: the caller shows the layout that comes closest
                found.batches.append(lb)
                found.results.append(training.evaluate(self.model, self.system, lb, cal, software=self.software))
                found.keys.append(key)
            found.unfit = []
        if not self.found.batches:
            return None
        return _outcome(self.found, self.tally, self.ch, len(self.base) * self.n_exp)


def _promising(model, system, table, software, base, rows, pairs, ch, n_exp, found: _Found):
    """Expand base[rows] and keep the layouts that pass the remaining rules, whose bound can beat the best found
    and, in a large round, that fit in memory: (layouts, keys in the exhaustive order, lower bounds), or None
    where none is left."""
    lb = S._expand(base[rows], pairs, ch)
    local = np.arange(lb.size)
    key = rows[local // n_exp].astype(np.int64) * n_exp + local % n_exp  # position in the exhaustive batch
    ok = np.ones(lb.size, dtype=bool)
    ok = S._apply(S.expanded_rules(model, lb.tp, lb.pp, lb.vp, lb.schedule, lb.sequence_parallel,
                                   S.micro_batches_of(lb), lb.recompute, lb.etp), ok, {})
    for d in np.unique(lb.dtype):
        if S.training_dtype_problem(system.chip, Dtype(int(d))):
            ok &= lb.dtype != d
    idx = np.nonzero(ok)[0]
    if not idx.size:
        return None
    lb, key = lb.take(idx), key[idx]
    lower = layout_bounds(model, table, lb)
    promising = np.nonzero(lower <= found.best * (1 + 1e-12))[0]
    if not promising.size:
        return None
    lb, key, lower = lb.take(promising), key[promising], lower[promising]
    found.evaluated += lb.size
    if lb.size >= MEMORY_FIRST:
        # where few layouts fit (a model large for the cluster) most of a round would be evaluated only to be
        # found too big: memory first, at a fraction of the step time's work (the same formulas; the slack
        # keeps every layout the full evaluation could call fitting)
        room = training.memory_bytes(model, system, lb, table.cal, software=software) <= system.chip.memory * (1 + 1e-9)
        if not room.all():
            found.unfit.append((lb.take(np.nonzero(~room)[0]), key[~room]))
            if not room.any():
                return None
            lb, key, lower = lb.take(np.nonzero(room)[0]), key[room], lower[room]
    return lb, key, lower


def _outcome(found: _Found, tally, ch, valid_before_rules: int) -> S.SearchOutcome:
    keys = np.concatenate(found.keys)
    back = np.argsort(keys, kind="stable")  # the exhaustive search's order, so ties break as there
    lb = LayoutBatch.concat(found.batches).take(back)
    res = results.take(results.concat(found.results), back)
    fits = np.asarray(res["fits"], dtype=bool)
    per_token = 1.0 / np.asarray(res["tokens_per_s"], dtype=float)
    idx = np.nonzero(fits)[0]
    order = idx[np.argsort(per_token[idx], kind="stable")]
    rejected = dict(tally.rejected)
    unfit = int((~fits).sum()) + sum(len(k) for _, k in found.unfit)  # evaluated, or ruled out by memory alone
    if unfit:
        rejected["does not fit in memory"] = unfit
    pruned = valid_before_rules - found.evaluated
    if pruned > 0:
        rejected["bound: cannot beat the best layout found"] = pruned
    return S.SearchOutcome(lb, res, order, tally.considered, rejected, valid=None, fit=int(fits.sum()),
                           evaluated=found.evaluated)
