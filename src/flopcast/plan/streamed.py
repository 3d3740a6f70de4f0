"""The best layouts of a search whose candidates do not fit in memory at once: evaluated a chunk at a time, keeping
only what the caller reads.

The exhaustive search (plan/search.py) holds every valid layout and every result array at once: for DeepSeek-V3
on its default cluster 8.2 million layouts, 0.9 GB of layouts alone and over 2 GiB with their results. A caller
that reads only the best `keep` layouts (the forecast, the planner, `search --top`) and, where none fits, the one
with the smallest footprint gets them here: each chunk's best `keep` fitting layouts by (score, position in the
exhaustive order) and its smallest footprint (the first, as np.argmin takes it) are merged into those kept so
far, so the answer is the exhaustive search's, ties broken alike (a layout's numbers do not depend on the others
it is evaluated with), and peak memory is a chunk's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from ..model.strategy import LayoutBatch
from . import results


@dataclass
class Kept:
    """The layouts kept so far: their batch, results, scores and positions in the exhaustive order."""

    keep: int
    batch: LayoutBatch | None = None
    results: dict | None = None
    score: np.ndarray | None = None
    position: np.ndarray | None = None
    valid: int = 0
    fit: int = 0
    checked: int = 0  # layouts whose memory was computed: valid, or fewer past a Pruning's budget
    broken: bool = False  # a pruned search's bound or memory proved wrong (Pruning): its answer is not to be used

    def add(self, lb: LayoutBatch, res: dict, score: np.ndarray, position: np.ndarray | None = None,
            count: bool = True) -> None:
        """Merge one evaluated chunk: the next `lb.size` layouts of the exhaustive order, or those at `position`
        in it (a branch-and-bound search's, in any order); count=False: the caller counts valid and fit."""
        position = self.valid + np.arange(lb.size) if position is None else np.asarray(position, dtype=np.int64)
        fits = np.asarray(res["fits"], dtype=bool)
        if count:
            self.valid += lb.size
            self.checked += lb.size
            self.fit += int(np.count_nonzero(fits))
        pick = self._pick(score, fits, np.asarray(res["memory_bytes"], dtype=float), position)
        lb, res, score, position = lb.take(pick), results.take(res, pick), score[pick], position[pick]
        if self.batch is not None:
            lb, res = LayoutBatch.concat([self.batch, lb]), results.concat([self.results, res])
            score, position = np.concatenate([self.score, score]), np.concatenate([self.position, position])
            pick = self._pick(score, np.asarray(res["fits"], dtype=bool), np.asarray(res["memory_bytes"],
                                                                                     dtype=float), position)
            lb, res, score, position = lb.take(pick), results.take(res, pick), score[pick], position[pick]
        self.batch, self.results, self.score, self.position = lb, res, score, position

    def _pick(self, score, fits, memory, position) -> np.ndarray:
        """Indices (in exhaustive order) of the best `keep` fitting layouts and of the smallest footprint (the first
        in that order, as np.argmin takes it there)."""
        idx = np.nonzero(fits)[0]
        best = idx[np.lexsort((position[idx], score[idx]))[:self.keep]]
        smallest = np.lexsort((position, memory))[:1]
        both = np.union1d(best, smallest)
        return both[np.argsort(position[both], kind="stable")]

    def threshold(self) -> float:
        """The `keep`-th best score kept (inf while fewer fit): a layout scoring above it cannot be kept."""
        if self.batch is None:
            return np.inf
        scores = np.sort(self.score[np.asarray(self.results["fits"], dtype=bool)])
        return float(scores[self.keep - 1]) if scores.size >= self.keep else np.inf

    def partial(self) -> int | None:
        """The layouts whose memory was computed where a budget left some unchecked, else None (fit is exact)."""
        return self.checked if self.checked < self.valid else None

    def outcome(self) -> tuple[LayoutBatch, dict, np.ndarray]:
        """(kept layouts, their results, the fitting ones' indices best first)."""
        fits = np.asarray(self.results["fits"], dtype=bool)
        idx = np.nonzero(fits)[0]
        return self.batch, self.results, idx[np.argsort(self.score[idx], kind="stable")]


@dataclass(frozen=True)
class Pruning:
    """What lets best_of skip evaluating most layouts with the same answer: each layout's memory (the same
    formulas as the evaluation's, so the same fits and counts) and a lower bound of its score. Only the fitting
    layouts whose bound is at most the `keep`-th best score so far are evaluated; the smallest footprint, where
    nothing fits, is evaluated at the end. An evaluated layout scoring below its bound, or whose fit differs,
    marks the outcome broken (the caller then evaluates every layout)."""

    memory: Callable[[LayoutBatch], np.ndarray]
    capacity: float
    lower: Callable[[LayoutBatch, float], np.ndarray]  # (layouts, the score above which a cheaper bound will do)
    # memory checks past which (once some layout fits) a chunk's bound is judged first and only the layouts it
    # keeps have their memory computed: the same best layouts, but `fit` then counts only the checked ones
    budget: int | None = None


def best_of(pieces: Iterable[LayoutBatch], evaluate: Callable[[LayoutBatch], dict],
            score: Callable[[dict], np.ndarray], keep: int, chunk: int, progress=None,
            pruning: Pruning | None = None) -> Kept:
    """The best `keep` fitting layouts (and the smallest footprint) of the valid layouts `pieces` yields in the
    exhaustive order, each evaluated `chunk` layouts at a time (with `pruning`, only those that can be kept)."""
    kept, closest = Kept(max(1, int(keep))), None
    for lb in pieces:
        for start in range(0, lb.size, chunk):
            piece = lb.take(slice(start, min(start + chunk, lb.size))) if lb.size > chunk else lb
            if pruning is None:
                res = evaluate(piece)
                kept.add(piece, res, np.asarray(score(res), dtype=float))
            else:
                closest = _pruned(kept, piece, evaluate, score, pruning, closest)
                if kept.broken:
                    return kept
            if progress is not None:
                progress.update(piece.size)
    if pruning is not None and not kept.fit and closest is not None:  # nothing fits: the smallest footprint
        res = evaluate(closest[2])
        kept.add(closest[2], res, np.asarray(score(res), dtype=float), position=np.array([closest[1]]), count=False)
    return kept


def _pruned(kept: Kept, piece: LayoutBatch, evaluate, score, pruning: Pruning, closest):
    """best_of's step for one chunk with pruning; returns the smallest footprint so far (bytes, position, layout)."""
    if pruning.budget is not None and kept.checked >= pruning.budget and kept.fit:
        _bound_first(kept, piece, evaluate, score, pruning)
        return closest  # some layout fits: the smallest footprint is not needed
    nbytes = np.asarray(pruning.memory(piece), dtype=float)
    fits = nbytes <= pruning.capacity
    position = kept.valid + np.arange(piece.size)
    kept.valid += piece.size
    kept.checked += piece.size
    kept.fit += int(np.count_nonzero(fits))
    i = _smallest(nbytes)
    if closest is None or (nbytes[i], position[i]) < closest[:2]:
        closest = (float(nbytes[i]), int(position[i]), piece.take(np.array([i])))
    idx, lower = np.nonzero(fits)[0], np.empty(0)
    if idx.size:
        above = kept.threshold() * (1 + 1e-12)
        lower = np.asarray(pruning.lower(piece.take(idx), above), dtype=float)
        chosen = lower <= above
        idx, lower = idx[chosen], lower[chosen]
    _evaluate_kept(kept, piece, idx, lower, position, evaluate, score)
    return closest


def _bound_first(kept: Kept, piece: LayoutBatch, evaluate, score, pruning: Pruning) -> None:
    """_pruned's step past the memory budget: every layout's bound first, then the memory of only those it keeps
    (a layout is kept where it fits and its bound is at most the threshold, in either order: the same answer)."""
    position = kept.valid + np.arange(piece.size)
    kept.valid += piece.size
    above = kept.threshold() * (1 + 1e-12)
    lower = np.asarray(pruning.lower(piece, above), dtype=float)
    idx = np.nonzero(lower <= above)[0]
    if idx.size:
        fits = np.asarray(pruning.memory(piece.take(idx)), dtype=float) <= pruning.capacity
        kept.checked += idx.size
        kept.fit += int(np.count_nonzero(fits))
        idx = idx[fits]
    _evaluate_kept(kept, piece, idx, lower[idx], position, evaluate, score)


def _evaluate_kept(kept: Kept, piece: LayoutBatch, idx, lower, position, evaluate, score) -> None:
    """Evaluate the chunk's layouts at `idx` (fitting, bound `lower`) and keep the best; a score below its bound
    or a layout that does not fit after all marks the outcome broken."""
    if not idx.size:
        return
    sub = piece.take(idx)
    res = evaluate(sub)
    s = np.asarray(score(res), dtype=float)
    if (s < lower).any() or not np.asarray(res["fits"], dtype=bool).all():
        kept.broken = True
        return
    kept.add(sub, res, s, position=position[idx], count=False)


def _smallest(nbytes: np.ndarray) -> int:
    """The index of the smallest footprint of a chunk, the first of equals: np.lexsort((position, nbytes))[0]
    for positions in increasing order (NaN sorts last), without sorting the chunk."""
    return 0 if np.isnan(nbytes).all() else int(np.nanargmin(nbytes))
