"""Search every layout at once: candidates as numpy arrays, named validity rules, one vectorized evaluation.

Loop in Python over nothing but the few degree combinations; everything else is
an array. Each rule is named and counts what it rejects, so "nothing fits" explains
itself.
"""

from __future__ import annotations

import math
from copy import deepcopy
from dataclasses import dataclass, field, replace

import numpy as np

from ..cost.memory import fits as fits_in
from ..model.efficiency import Calibration
from ..model.strategy import (LAYOUT_FIELDS, MODERN_SOFTWARE, LayoutBatch, Schedule, Sharding, Software,
                              searched_recompute, virtual_stages_allowed)
from ..model.system import Dtype, System
from ..model.workload import Model
from ..simulate import training
from .objectives import objective_score, step_score
# EP_RULE, ETP_RULE and rules are re-exported: the forecast names the rules a stated layout breaks; _apply,
# grid_verdicts and training_dtype_problem: the bounded search and the forecast judge with them
from .rules import (EP_RULE, ETP_RULE, INT8_TRAINING_FAMILIES, PIPELINE_SLOTS_RULE, _apply,  # noqa: F401
                    base_rules, expanded_rules, grid_verdicts, micro_batches_of, rules, training_dtype_problem)
from .rows import base_rows, divisor_tuple
from . import bounds, streamed
from .shared import SearchShare, SharedLayouts, floor


@dataclass(frozen=True)
class SearchSpace:
    """Pinned values (a tuple of one) or candidate lists for every layout field; None = flopcast's default range."""

    tp: tuple | None = None
    pp: tuple | None = None
    dp: tuple | None = None
    cp: tuple | None = None
    ep: tuple | None = None
    vp: tuple | None = None
    micro_batch: tuple | None = None
    global_batch: tuple | None = None
    recompute: tuple | None = None
    sharding: tuple | None = None
    sequence_parallel: tuple | None = None
    dtype: tuple | None = (Dtype.BF16,)
    schedule: tuple | None = None
    etp: tuple | None = None  # expert tensor-parallel degrees; 0 = the layout's tp
    batch_range: tuple | None = None  # (min, max) global batch in sequences when global_batch is free

    def pinned(self) -> dict:
        return {k: getattr(self, k) for k in LAYOUT_FIELDS if getattr(self, k) is not None}


@dataclass(frozen=True)
class SearchOutcome:
    batch: LayoutBatch  # every valid layout, evaluated
    results: dict  # arrays from training.evaluate
    order: np.ndarray  # indices of batch, best first (those that fit)
    considered: int
    rejected: dict = field(default_factory=dict)  # rule -> candidates it rejected
    valid: int | None = None  # layouts that passed every rule but memory, where `batch` holds only some of them
    fit: int | None = None  # layouts that fit, where `batch` holds only those that could be the best
    evaluated: int | None = None  # layouts judged past the bound, where memory alone ruled some out of `batch`
    checked: int | None = None  # layouts whose memory was computed (fit counts only these), where a budget left some

    @property
    def n_evaluated(self) -> int:
        return self.batch.size if self.evaluated is None else self.evaluated

    @property
    def n_fit(self) -> int:
        return int(self.order.size) if self.fit is None else self.fit

    @property
    def n_valid(self) -> int:
        return self.batch.size if self.valid is None else self.valid


def _pow2_upto(n: int) -> list[int]:  # 1, 2, 4, ... up to n
    return [2**i for i in range(int(math.log2(max(n, 1))) + 1)]


def _divisors(n: int) -> list[int]:  # every divisor of n, from its prime factorisation
    return list(divisor_tuple(n))


def default_global_batches(model: Model, lo: int | None = None, hi: int | None = None) -> list[int]:
    """Global batches (sequences) near the model's customary batch: powers of two within 0.5x..2x of it."""
    tokens = model.batch_tokens or 4e6  # 4M tokens when the model states none (Llama 2/3 scale)
    base = max(1, tokens / model.seq_len)
    lo = lo or max(1, int(base / 2))
    hi = hi or max(lo, int(base * 2))
    out = [b for b in _pow2_upto(hi) if lo <= b <= hi]
    mid = int(round(base))
    if lo <= mid <= hi:
        out.append(mid)
    return sorted(set(out)) or [max(1, int(base))]


@dataclass(frozen=True)
class _Choices:
    """The values each layout field may take: the space's, else the defaults a practitioner would sweep."""

    tp: tuple
    cp: tuple
    pp: tuple
    vp: tuple
    micro_batch: tuple
    global_batch: tuple
    ep: tuple
    recompute: tuple
    sharding: tuple
    sequence_parallel: tuple
    dtype: tuple
    schedule: tuple
    etp: tuple

    @property
    def per_schedule_pair(self) -> int:
        """Candidates each (base row, vp/schedule pair) expands into: recompute x sharding x sp x dtype."""
        return len(self.recompute) * len(self.sharding) * len(self.sequence_parallel) * len(self.dtype)


def _choices(model: Model, system: System, chips: int, space: SearchSpace) -> _Choices:
    # the tensor-parallel degrees tried by default stay within a node (a TPU host); a stated tp may span a TPU
    # slice's ICI torus (system.tp_domain, the rule below): searched over the torus, the TPU rows of
    # more_training_runs.csv picked tp 16-64 and landed 20-40% below their measurements (MAPE on the training
    # files 12.2% -> 12.7%), so the ICI tensor-parallel cost is not trusted enough to choose it unasked
    node = system.chips_per_node
    if space.global_batch:
        gb_c = space.global_batch
    else:
        lo, hi = space.batch_range or (None, None)
        gb_c = tuple(default_global_batches(model, lo, hi))
    return _Choices(
        tp=space.tp or tuple(t for t in _pow2_upto(node) if t <= node),
        cp=space.cp or tuple(c for c in _pow2_upto(min(32, chips)) if model.seq_len // c >= 1024 or c == 1),
        pp=space.pp or tuple(p for p in range(1, min(model.layers, 128) + 1) if p <= 8 or p % 2 == 0),
        vp=space.vp or (1, 2, 3, 4, 6, 8),
        micro_batch=space.micro_batch or (1, 2, 4, 8),
        global_batch=gb_c,
        ep=space.ep or ((1,) if not model.moe else tuple(e for e in _pow2_upto(model.moe.experts))),
        recompute=space.recompute or searched_recompute(system.chip.family),
        sharding=space.sharding or tuple(Sharding),
        sequence_parallel=space.sequence_parallel or (1, 0),
        dtype=space.dtype or (Dtype.BF16,),
        # the all-to-all-overlapping schedules matter only where there is an expert-parallel all-to-all to hide
        schedule=space.schedule or ((Schedule.ONE_F_ONE_B, Schedule.INTERLEAVED)
                                    + ((Schedule.ONE_F_ONE_B_OVERLAP, Schedule.DUALPIPE) if model.moe else ())),
        # experts split like the attention (Megatron-Core's default) or not at all, their ep then folded over
        # the attention's tp ranks (MoE Parallel Folding, Liu et al. 2025, arXiv:2504.14960)
        etp=space.etp or ((0, 1) if model.moe else (0,)),
    )


class _Tally:
    """Candidates considered, and how many each rule rejected (in the order the rules first fire)."""

    def __init__(self):
        self.rejected: dict[str, int] = {}
        self.considered = 0

    def reject(self, rule: str, n: int) -> None:
        self.rejected[rule] = self.rejected.get(rule, 0) + n
        self.considered += n


def candidates(model: Model, system: System, chips: int, space: SearchSpace,
               allow_idle: bool = True) -> tuple[LayoutBatch, dict, int]:
    """Candidate layouts (arrays) that pass the degree and batch rules, how many candidates each rule
    rejected, and how many were considered in all."""
    base, pairs, ch, tally = _passing_base(model, system, chips, space, allow_idle)
    if base is None:
        return LayoutBatch.of([]), tally.rejected, tally.considered
    lb = _expand(base, pairs, ch)
    tally.considered += lb.size
    return lb, tally.rejected, tally.considered


def _passing_base(model: Model, system: System, chips: int, space: SearchSpace, allow_idle: bool):
    """(base rows that pass the degree and batch rules, (vp, schedule) pairs, choices, tally); base None when
    no candidate is left. Each base row stands for len(pairs) x ch.per_schedule_pair expanded candidates."""
    ch = _choices(model, system, chips, space)
    tally = _Tally()
    rows = _base_rows(model, chips, space, ch, allow_idle, tally)
    if not len(rows):
        return None, [], ch, tally
    base = np.array(rows, dtype=np.int64)
    pairs = _schedule_pairs(space, ch, len(base), tally)
    # the degree and batch rules, once per base row: each row stands for n_exp expanded candidates
    n_exp = len(pairs) * ch.per_schedule_pair
    ok = _apply(base_rules(model, system, *base.T, chips, exact_chips=False), np.ones(len(base), dtype=bool),
                tally.rejected, n_exp)
    tally.considered += int(np.count_nonzero(~ok)) * n_exp
    base = base[ok]
    if not len(base) or not pairs:
        return None, pairs, ch, tally
    return base, pairs, ch, tally


def _base_rows(model: Model, chips: int, space: SearchSpace, ch: _Choices, allow_idle: bool,
               tally: _Tally) -> np.ndarray:
    """(tp, cp, pp, dp, global batch, micro-batch, ep, etp) rows: every degree and batch choice with its dp
    degrees (plan/rows.py, vectorized; _dp_degrees is the rule for one choice)."""
    return base_rows(model, chips, space, ch, allow_idle, tally)


def _dp_degrees(room: int, gb: int, mb: int, allow_idle: bool) -> list[int]:
    """The dp degrees tried for `room` = chips // (tp cp pp): the largest and the largest power of two that
    divide the micro-batches per replica and fit (only `room` itself without idle chips); [room] when none
    divides; [] when room < 1."""
    if room < 1:
        return []
    per_dp = gb // mb if gb % mb == 0 else 0
    fitting = [d for d in divisor_tuple(per_dp) if d <= room] if per_dp else []
    if not allow_idle:
        fitting = [d for d in fitting if d == room]
    return sorted({max(fitting), 2 ** int(math.log2(max(fitting)))} & set(fitting)) if fitting else [room]


def _schedule_pairs(space: SearchSpace, ch: _Choices, n_base: int, tally: _Tally) -> list[tuple[int, int]]:
    """(vp, schedule) pairs: vp > 1 only interleaved or combined 1F1B, interleaved only with vp > 1 (unless the
    space pins them); the pairs left out are counted against the rule, for every base row and remaining choice."""
    pairs = [(v, int(sc)) for v in ch.vp for sc in ch.schedule
             if virtual_stages_allowed(sc, v, 2) or space.vp or space.schedule]
    dropped = (len(ch.vp) * len(ch.schedule) - len(pairs)) * n_base * ch.per_schedule_pair
    if dropped:
        tally.reject("vp > 1 only with the interleaved schedule, which needs pp > 1", dropped)
    return pairs


def _expand(base: np.ndarray, pairs: list, ch: _Choices) -> LayoutBatch:
    """Every base row x (vp, schedule) pair x recompute x sharding x sequence parallel x dtype, as arrays."""
    pair_arr = np.array(pairs, dtype=np.int64)
    grids = [np.arange(len(base)), np.arange(len(pairs)), np.array([int(r) for r in ch.recompute]),
             np.array([int(s) for s in ch.sharding]), np.array([int(s) for s in ch.sequence_parallel]),
             np.array([int(d) for d in ch.dtype])]
    flat = [g.ravel() for g in np.meshgrid(*grids, indexing="ij")]
    b = base[flat[0]]
    return LayoutBatch(tp=b[:, 0], cp=b[:, 1], pp=b[:, 2], dp=b[:, 3], global_batch=b[:, 4], micro_batch=b[:, 5],
                       ep=b[:, 6], etp=b[:, 7], vp=pair_arr[flat[1], 0], recompute=flat[2], sharding=flat[3],
                       sequence_parallel=flat[4], dtype=flat[5], schedule=pair_arr[flat[1], 1])


def rejection_summary(rejected: dict) -> str:
    """'rule: count; ...' with the rule that rejected most first."""
    return "; ".join(f"{k}: {v:,}" for k, v in sorted(rejected.items(), key=lambda kv: -kv[1]))


EXPAND_ROWS = 1 << 21  # expanded candidates judged at a time (bounded memory: ~14 int64 arrays of this length)


def _valid(model: Model, system: System, chips: int, space: SearchSpace, allow_idle: bool, passing=None):
    """The candidates that pass every rule but the chip's data types and memory: (batch, what each rule
    rejected, candidates considered, {dtype: layouts of that dtype}); the dtypes the chip cannot train in are
    left out of the batch (their counts are the chip's to name). The base rows are expanded and judged a slice
    at a time, so that memory stays bounded however many candidates a large MoE model has. `passing`:
    _passing_base's answer where the caller has it."""
    base, pairs, ch, tally = passing or _passing_base(model, system, chips, space, allow_idle)
    if base is None:
        return LayoutBatch.of([]), tally.rejected, tally.considered, {}
    dtypes: dict = {}
    kept = list(_valid_slices(model, system, base, pairs, ch, tally, dtypes))
    return LayoutBatch.concat(kept), tally.rejected, tally.considered, dtypes


def _valid_slices(model, system, base, pairs, ch, tally, dtypes: dict, progress=None):
    """The valid candidates of `base`, a slice of its rows at a time, in the exhaustive order (counting what the
    rules reject in tally and the layouts of each dtype in dtypes, as _valid says): the rules judged on _expand's
    grid (row x pair x recompute x sharding x sp x dtype) from each axis's values, only the valid ones built."""
    pair_arr = np.array(pairs, dtype=np.int64)
    axes = [np.array([int(v) for v in vs], dtype=np.int64) for vs in (ch.recompute, ch.sharding,
                                                                      ch.sequence_parallel, ch.dtype)]
    step = max(1, EXPAND_ROWS // (len(pairs) * ch.per_schedule_pair))
    for start in range(0, len(base), step):
        rows = base[start:start + step]
        shape = (len(rows), len(pairs), *map(len, axes))
        tally.considered += int(np.prod(shape))
        local = grid_verdicts(model, system, rows, pair_arr, axes, tally.rejected, dtypes)
        r, p, rc, sh, sp, dt = np.unravel_index(local, shape)
        b = rows[r]
        valid = LayoutBatch(tp=b[:, 0], cp=b[:, 1], pp=b[:, 2], dp=b[:, 3], global_batch=b[:, 4], micro_batch=b[:, 5],
                            ep=b[:, 6], etp=b[:, 7], vp=pair_arr[p, 0], schedule=pair_arr[p, 1], recompute=axes[0][rc],
                            sharding=axes[1][sh], sequence_parallel=axes[2][sp], dtype=axes[3][dt])
        if progress is not None:
            size = int(np.prod(shape))
            progress.add_total(size)
            progress.update(size - valid.size)
        yield valid


STREAM_ABOVE = EXPAND_ROWS  # candidates past which a search asked for its best `keep` layouts only streams them


def _streamed(model, system, cal, objective, progress, software, failures, keep, passing, budget) -> SearchOutcome:
    """search()'s outcome holding only the best `keep` fitting layouts and the smallest footprint (plan/streamed.py):
    the same layouts, order and counts, a chunk of the candidates in memory at a time; by throughput, only the
    layouts that fit and whose lower bound (plan/bounds.py) can be kept are evaluated."""
    base, pairs, ch, tally = passing
    if progress is not None:  # the candidates the degree and batch rules rejected
        progress.add_total(tally.considered)
        progress.update(tally.considered)
    before = deepcopy(tally)
    pruning = bounds.pruning(model, system, cal, software, budget) if objective == "throughput" else None
    for attempt, prune in enumerate([pruning, None] if pruning else [None]):  # a broken bound: every layout evaluated
        tally, dtypes, shown = deepcopy(before), {}, progress if attempt == 0 else None
        pieces = _valid_slices(model, system, base, pairs, ch, tally, dtypes, shown)
        kept = streamed.best_of(pieces, lambda lb: training.evaluate(model, system, lb, cal, software=software),
                                lambda res: objective_score(res, system, objective, failures), keep, CHUNK, shown,
                                pruning=prune)
        if not kept.broken:
            break
    rejected = dict(tally.rejected)
    for d, n in dtypes.items():
        why = training_dtype_problem(system.chip, Dtype(d))
        if why:
            rejected[why] = rejected.get(why, 0) + n
    if kept.batch is None:
        return SearchOutcome(LayoutBatch.of([]), {}, np.array([], dtype=int), tally.considered, rejected)
    if kept.fit < kept.checked:
        rejected["does not fit in memory"] = kept.checked - kept.fit
    lb, res, order = kept.outcome()
    return SearchOutcome(lb, res, order, tally.considered, rejected, kept.valid, kept.fit, checked=kept.partial())


def search(model: Model, system: System, chips: int, cal: Calibration, space: SearchSpace = SearchSpace(),
           objective: str = "throughput", allow_idle: bool = True, progress=None,
           software: Software = MODERN_SOFTWARE, shared: SearchShare | None = None,
           tokens: float | None = None, keep: int | None = None, memory_budget: int | None = None) -> SearchOutcome:
    """Evaluate every valid layout; order those that fit, best first.

    keep: the caller reads only the best `keep` layouts (and, where none fits, the smallest footprint): past
    STREAM_ABOVE candidates (and without `shared`) the outcome holds only those, its counts in valid and fit.

    `progress` (a flopcast.progress.Progress, optional) counts the candidates as they are judged;
    `software` is what the training stack can do (today's by default); `shared` (plan/shared.py) lets
    searches of hardware variants reuse the candidates and their memory (the same answer, less work); `tokens`
    is the budget objective time_with_failures needs; `memory_budget`: streamed.Pruning.budget."""
    failures = (model, tokens)
    key = shared.key(model, system, chips, space, allow_idle, software) if shared is not None else None
    hit = shared.get(key) if shared is not None else None
    if hit is None:
        passing = _passing_base(model, system, chips, space, allow_idle)
        base, pairs, ch, _ = passing
        if keep is not None and shared is None and base is not None and (
                len(base) * len(pairs) * ch.per_schedule_pair > STREAM_ABOVE):
            return _streamed(model, system, cal, objective, progress, software, failures, keep, passing, memory_budget)
        lb, rejected, considered, dtypes = _valid(model, system, chips, space, allow_idle, passing)
        entry = SharedLayouts(lb, dict(rejected), considered, dtypes)
    else:
        lb, rejected, considered, dtypes = hit.batch, dict(hit.rejected), hit.considered, hit.dtypes
    for d, n in dtypes.items():
        why = training_dtype_problem(system.chip, Dtype(d))
        if why:
            rejected[why] = rejected.get(why, 0) + n
    if progress is not None:
        progress.add_total(considered)
        progress.update(considered - lb.size)
    if lb.size == 0:
        return SearchOutcome(lb, {}, np.array([], dtype=int), considered, rejected)
    if hit is not None and hit.memory is not None and fits_in(hit.memory, system.chip).any():
        bound = shared.bound(key, system, cal)
        reused = _search_fitting(model, system, lb, hit.memory, cal, objective, considered, rejected, progress,
                                 software, bound, failures)
        if reused is not None:
            outcome, evaluated, floors = reused
            shared.add_bound(key, system, cal, evaluated, floors, bound, lb.size)
            return outcome
        shared.forget(key)
    res = _evaluate_chunked(model, system, lb, cal, progress, software)
    if shared is not None and (hit is None or hit.memory is None):
        shared.put(key, replace(hit or entry, memory=np.asarray(res["memory_bytes"], dtype=float)))
        shared.add_bound(key, system, cal, np.arange(lb.size), floor(res, lb.schedule), None, lb.size)
    fits = res["fits"]
    if (~fits).any():
        rejected["does not fit in memory"] = int((~fits).sum())
    score = objective_score(res, system, objective, failures)
    idx = np.nonzero(fits)[0]
    order = idx[np.argsort(score[idx], kind="stable")]
    return SearchOutcome(lb, res, order, considered, rejected)


PRUNE_PROBE = 256  # layouts evaluated first, those with the lowest lower bound, to find an incumbent


def _search_fitting(model, system, lb, memory, cal, objective, considered, rejected, progress, software, bound,
                    failures=None):
    """A search that evaluates only the layouts whose known memory fits (SearchShare; some must fit: where none
    does, the smallest footprint is shown, which needs every layout), and of those, where a lower bound of each
    layout's step time is known (the floors of variants at least as fast in every respect, plan/shared.py), only
    those whose bound could beat the best exact score of the most promising ones.
    (outcome, evaluated indices, their floors), or None where the memory it computes differs from the
    known one or a step time falls below its bound (then the reuse was wrong and the caller searches in full)."""
    fit = np.nonzero(fits_in(memory, system.chip))[0]
    keep = fit
    if bound is not None:
        lower = step_score(np.maximum(bound[fit], 1e-300), lb, fit, model, system, objective, failures)
        probe = fit[np.argpartition(lower, PRUNE_PROBE)[:PRUNE_PROBE]] if fit.size > PRUNE_PROBE else fit
        probe_res = training.evaluate(model, system, lb.take(probe), cal, software=software)
        incumbent = float(np.min(objective_score(probe_res, system, objective, failures)))
        # the probe is kept too: were its exact steps below their bounds (a part of the floor not monotone in
        # the speeds), the check below sees it and the caller searches in full, instead of an empty answer
        keep = np.union1d(fit[lower <= incumbent * (1 + 1e-9)], probe)
    sub = lb.take(keep)
    res = _evaluate_chunked(model, system, sub, cal, None, software)
    step = np.asarray(res["step_time_s"], dtype=float)
    if not np.array_equal(np.asarray(res["memory_bytes"], dtype=float), memory[keep]):
        return None
    if bound is not None and (step < bound[keep] * (1 - 1e-9)).any():
        return None
    if progress is not None:
        progress.update(lb.size)
    if fit.size < lb.size:
        rejected["does not fit in memory"] = int(lb.size - fit.size)
    score = objective_score(res, system, objective, failures)
    order = np.argsort(score, kind="stable")
    return (SearchOutcome(sub, res, order, considered, rejected, valid=lb.size, fit=int(fit.size)), keep,
            floor(res, sub.schedule))


CHUNK = 262_144


def _evaluate_chunked(model, system, lb, cal, progress, software=MODERN_SOFTWARE):
    """training.evaluate over `lb` in chunks of CHUNK layouts (bounded memory), into one set of arrays."""
    if lb.size <= CHUNK:
        out = training.evaluate(model, system, lb, cal, software=software)
        if progress is not None:
            progress.update(lb.size)
        return out
    out = None
    n = lb.size
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        piece = training.evaluate(model, system, lb.take(slice(start, stop)), cal, software=software)
        if out is None:
            out = _allocate(piece, n)
        _fill(out, piece, start, stop)
        if progress is not None:
            progress.update(stop - start)
    return out


def _allocate(piece: dict, n: int) -> dict:
    def empty(v):
        return np.empty(n, dtype=np.result_type(v))

    return {k: ({kk: empty(vv) for kk, vv in v.items()} if isinstance(v, dict) else empty(v)) for k, v in piece.items()}


def _fill(out: dict, piece: dict, start: int, stop: int) -> None:
    for k, v in piece.items():
        if isinstance(v, dict):
            for kk, vv in v.items():
                out[k][kk][start:stop] = vv
        else:
            out[k][start:stop] = v
