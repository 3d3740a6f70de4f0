"""The fastest layout on a cluster without evaluating every candidate: branch and bound over the degree rows.

The exhaustive search (plan/search.py) expands every (tp, cp, pp, dp, global batch, micro-batch, ep) row into
every schedule, recomputation, sharding, sequence-parallel and dtype choice and evaluates them all (about two
million layouts for a 70B model on a large Trainium2 cluster). Here each row first gets a lower bound of its
layouts' seconds per token (plan/bounds.py: the least work, exposed all-to-all and data-parallel communication
its choices can have). Rows are expanded and evaluated in increasing order of their bound until the next bound
exceeds the best score found among the layouts that fit: no row skipped could have held a better layout (branch
and bound, Land and Doig 1960). Ties are broken as the exhaustive search breaks them (its candidate order), so
the answer is the same layout. The bound checks itself: a layout whose evaluated step falls below its bound
makes the search return None and the caller searches exhaustively.

Memory stays a slice's: a round's rows are expanded SLICE_LAYOUTS candidates at a time, evaluated EVAL_LAYOUTS
at a time, and only the best fitting layout and the smallest footprint are kept between them (plan/streamed.Kept,
by their position in the exhaustive order), which is all a caller reads. Only the throughput objective is pruned
(the planner's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.strategy import MODERN_SOFTWARE, LayoutBatch, Software
from ..model.system import Dtype
from ..simulate import training
from . import results
from . import search as S
from . import streamed
# re-exported: the planner, forecast, claims and validate take the bounds' table and checks from here
from .bounds import SLACK, RowBounds, WorkTable, layout_bounds

FIRST_ROWS = 64  # rows expanded in the first round; each later round doubles
SLICE_LAYOUTS = 1 << 19  # candidates expanded at once (a round's rows a slice at a time)
EVAL_LAYOUTS = 1 << 16  # layouts evaluated at once
MEMORY_FIRST = 4096  # layouts in a slice from which their memory is checked before their step time


@dataclass
class _Found:
    """What the search has found so far: the best fitting layout and the smallest footprint (kept by their
    position in the exhaustive order), the best score, the counts."""

    kept: streamed.Kept
    best: float = np.inf
    evaluated: int = 0  # layouts past the bound: evaluated, or ruled out by memory alone
    reached: bool = False  # a fitting layout at least as fast as `best` started (the cutoff) was found
    closest: tuple | None = None  # (bytes, position, layout) the smallest of those memory alone ruled out

    def note_unfit(self, lb: LayoutBatch, key: np.ndarray, nbytes: np.ndarray) -> None:
        tied = np.nonzero(nbytes == nbytes.min())[0]  # the smallest, then the first in the exhaustive order: the
        # first of np.lexsort((key, nbytes)) without sorting a slice (which it is, but where nbytes has a NaN)
        i = int(tied[np.argmin(key[tied])]) if tied.size else int(np.lexsort((key, nbytes))[0])
        if self.closest is None or (nbytes[i], key[i]) < self.closest[:2]:
            self.closest = (float(nbytes[i]), int(key[i]), lb.take(np.array([i])))


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


# Candidates up to which the exhaustive search is cheaper than the bounded one (whose bounds cost more than
# evaluating a few thousand layouts): of the shipped training rows' 138 searches, the 124 of at most 3,000
# candidates took 3.2 s bounded and 1.2 s exhaustive (at load 6); the next smallest has 144,000 (from there the
# exhaustive search takes 1.5-17x the bounded one's time)
EXHAUSTIVE_UP_TO = 3000


def candidate_count(model, system, chips: int, space: S.SearchSpace, allow_idle: bool = True) -> int:
    """Candidates past the degree and batch rules (each base row's expansions): the work an exhaustive search of
    `space` would judge, counted without expanding them."""
    base, pairs, ch, _ = S._passing_base(model, system, chips, space, allow_idle)
    return 0 if base is None else len(base) * len(pairs) * ch.per_schedule_pair


def best_search(model, system, chips: int, cal, space: S.SearchSpace, allow_idle: bool = True,
                software: Software = MODERN_SOFTWARE) -> S.SearchOutcome:
    """The throughput search's outcome for its best layout (or, where none fits, its smallest footprint; the rules'
    counts where no candidate is valid): exhaustive up to EXHAUSTIVE_UP_TO candidates, else bounded, and
    exhaustive where the bound fails or no candidate is left. The same layout either way: search()'s best, and
    where nothing fits the bounded search has pruned nothing (no score to prune with) and kept the smallest
    footprint by exhaustive position (_Found.note_unfit, streamed.Kept), as the exhaustive search does."""
    out = None
    if candidate_count(model, system, chips, space, allow_idle) > EXHAUSTIVE_UP_TO:
        out = search(model, system, chips, cal, space, WorkTable(model, system, cal, software), allow_idle, software)
    if out is None or not out.batch.size:
        out = S.search(model, system, chips, cal, space, allow_idle=allow_idle, software=software, keep=1)
    return out


def search_many(model, system, cal, table: WorkTable, cases: list, allow_idle: bool = True,
                software: Software = MODERN_SOFTWARE) -> list:
    """search() of each (chips, space, cutoff) case of one model and system, run in lockstep: each round's
    layouts of every case are evaluated together (one call instead of one per case; a layout's numbers do not
    depend on the others it is evaluated with), so each outcome is search()'s."""
    lanes = [_Lane(model, system, chips, space, table, allow_idle, cutoff, software) for chips, space, cutoff in cases]
    while True:
        work = [(lane, lane.next_round()) for lane in lanes if lane.active]
        pieces = [(lane, lb.take(slice(i, i + EVAL_LAYOUTS)), key[i:i + EVAL_LAYOUTS], lower[i:i + EVAL_LAYOUTS])
                  for lane, got in work if got is not None for lb, key, lower in [got]
                  for i in range(0, lb.size, EVAL_LAYOUTS)]
        if not pieces:
            return [lane.outcome(cal) for lane in lanes]
        group, size = [], 0
        for piece in pieces + [None]:  # evaluated EVAL_LAYOUTS at a time, the lanes' pieces together
            if group and (piece is None or size + piece[1].size > EVAL_LAYOUTS):
                lb = LayoutBatch.concat([p[1] for p in group]) if len(group) > 1 else group[0][1]
                res, at = training.evaluate(model, system, lb, cal, software=software), 0
                for lane, part, key, lower in group:
                    lane.absorb(part, key, lower, results.take(res, slice(at, at + part.size)))
                    at += part.size
                group, size = [], 0
            if piece is not None:
                group.append(piece)
                size += piece[1].size


class _Lane:
    """One cluster size's bounded search, advanced a slice at a time: rows in increasing order of their bound,
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
        # the rows in increasing order of their bound, bounded as far as the search reaches
        self.rows = RowBounds(model, table, self.base, ch, self.pairs, trainable)
        self.found = _Found(streamed.Kept(1), best=np.inf if cutoff is None else float(cutoff))
        self.start, self.take, self.pending = 0, FIRST_ROWS, np.zeros(0, dtype=np.int64)

    def next_round(self):
        """(layouts, their keys, their lower bounds) of the next slice of rows with any layout left to evaluate,
        or None (the search is over)."""
        bound, found = self.rows.bound, self.found
        per_slice = max(1, SLICE_LAYOUTS // max(self.n_exp, 1))
        while self.active:
            if not self.pending.size:
                order = self.rows.order(self.start + self.take)
                if self.start >= len(order) or bound[order[self.start]] > found.best * (1 + 1e-12):
                    self.active = False
                    break
                self.pending = order[self.start:self.start + self.take]
                self.start, self.take = self.start + self.take, self.take * 2
            rows, self.pending = self.pending[:per_slice], self.pending[per_slice:]
            rows = rows[bound[rows] <= found.best * (1 + 1e-12)]
            got = _promising(self.model, self.system, self.table, self.software, self.base, rows, self.pairs,
                             self.ch, self.n_exp, found) if rows.size else None
            if got is not None:
                return got
        return None

    def absorb(self, lb, key, lower, res) -> None:
        """Take evaluated layouts; a step below its bound ends the search (outcome None)."""
        if self.broken:
            return
        found = self.found
        per_token = 1.0 / np.asarray(res["tokens_per_s"], dtype=float)
        if (per_token < lower).any():
            self.active, self.broken = False, True
            return
        fits = np.asarray(res["fits"], dtype=bool)
        if fits.any() and float(per_token[fits].min()) <= found.best:
            found.best, found.reached = float(per_token[fits].min()), True
        found.kept.add(lb, res, per_token, position=key)

    def outcome(self, cal) -> S.SearchOutcome | Beyond | None:
        if self.base is None or not len(self.base) or self.broken:
            return None
        if self.cutoff is not None and not self.found.reached:  # every row that could reach it evaluated: none
            return Beyond(float(self.cutoff))
        found, kept = self.found, self.found.kept
        if not kept.fit and found.closest is not None:  # nothing fits: the caller shows the layout that comes closest
            _, key, lb = found.closest
            res = training.evaluate(self.model, self.system, lb, cal, software=self.software)
            kept.add(lb, res, 1.0 / np.asarray(res["tokens_per_s"], dtype=float), position=np.array([key]))
        if kept.batch is None:
            return None
        lb, res, order = kept.outcome()
        rejected = dict(self.tally.rejected)
        if found.evaluated - kept.fit:  # evaluated, or ruled out by memory alone
            rejected["does not fit in memory"] = found.evaluated - kept.fit
        pruned = len(self.base) * self.n_exp - found.evaluated
        if pruned > 0:
            rejected["bound: cannot beat the best layout found"] = pruned
        # where nothing fits every layout past the rules was judged: `valid` counts them (the smallest footprint's
        # message names it)
        return S.SearchOutcome(lb, res, order, self.tally.considered, rejected, valid=None if kept.fit else
                               found.evaluated, fit=kept.fit, evaluated=found.evaluated)


def _promising(model, system, table, software, base, rows, pairs, ch, n_exp, found: _Found):
    """Expand base[rows] and keep the layouts that pass the remaining rules, whose bound can beat the best found
    and, in a large slice, that fit in memory: (layouts, keys in the exhaustive order, lower bounds), or None
    where none is left."""
    lb, local = _valid_expansion(model, system, base[rows], pairs, ch)
    if not lb.size:
        return None
    key = rows[local // n_exp].astype(np.int64) * n_exp + local % n_exp  # position in the exhaustive batch
    cut = found.best * (1 + 1e-12)
    if np.isinf(cut) and lb.size >= MEMORY_FIRST:
        # nothing found yet to prune with, so every layout is promising (its bound is finite): memory first, and
        # the bounds of those that fit only (of a large MoE's slices few do: 82K of the 10.8M layouts that
        # `plan llama4-maverick -H p5.48xlarge --pareto` checked)
        found.evaluated += lb.size
        got = _fitting(model, system, table, software, lb, key, found)
        return None if got is None else (*got, layout_bounds(model, table, got[0]))
    # a layout bounded above the best found without its data-parallel floor is pruned with it as well: the floor
    # (the bound's costliest piece) only for the others
    lower = layout_bounds(model, table, lb, above=cut)
    promising = np.nonzero(lower <= cut)[0]
    if not promising.size:
        return None
    lb, key, lower = lb.take(promising), key[promising], lower[promising]
    found.evaluated += lb.size
    if lb.size < MEMORY_FIRST:
        return lb, key, lower
    got = _fitting(model, system, table, software, lb, key, found, lower)
    return got


def _fitting(model, system, table, software, lb, key, found: _Found, *more):
    """The layouts of lb that fit in memory, their keys (and the rows of `more` at them), or None where none does;
    the others noted (`_Found.note_unfit`). Where few layouts fit (a model large for the cluster) most of a slice
    would be evaluated only to be found too big: memory first, at a fraction of the step time's work (the same
    formulas; the slack keeps every layout the full evaluation could call fitting)."""
    nbytes = training.memory_bytes(model, system, lb, table.cal, software=software)
    room = nbytes <= system.chip.memory * (1 + 1e-9)
    if room.all():
        return (lb, key, *more)
    found.note_unfit(lb.take(np.nonzero(~room)[0]), key[~room], nbytes[~room])
    if not room.any():
        return None
    at = np.nonzero(room)[0]
    return (lb.take(at), key[room], *(m[room] for m in more))


def _valid_expansion(model, system, rows: np.ndarray, pairs: list, ch) -> tuple[LayoutBatch, np.ndarray]:
    """The candidates of base `rows` (S._expand's, in its order) that pass the expanded rules and the chip's data
    types, and their indices in S._expand(rows, pairs, ch): the rules judged on the expansion's grid (row x pair
    x recompute x sharding x sp x dtype) from each axis's values and only the valid candidates built, as the
    exhaustive search's S._valid_slices does (the rules are elementwise: the same verdicts as on the expansion)."""
    pair_arr = np.array(pairs, dtype=np.int64)
    axes = [np.array([int(v) for v in vs], dtype=np.int64) for vs in (ch.recompute, ch.sharding,
                                                                      ch.sequence_parallel, ch.dtype)]
    shape = (len(rows), len(pairs), *map(len, axes))
    local = S.grid_verdicts(model, system, rows, pair_arr, axes, {})
    r, p, rc, sh, sp, dt = np.unravel_index(local, shape)
    b = rows[r]
    return LayoutBatch(tp=b[:, 0], cp=b[:, 1], pp=b[:, 2], dp=b[:, 3], global_batch=b[:, 4], micro_batch=b[:, 5],
                       ep=b[:, 6], etp=b[:, 7], vp=pair_arr[p, 0], schedule=pair_arr[p, 1], recompute=axes[0][rc],
                       sharding=axes[1][sh], sequence_parallel=axes[2][sp], dtype=axes[3][dt]), local
