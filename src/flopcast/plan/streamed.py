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

    def add(self, lb: LayoutBatch, res: dict, score: np.ndarray) -> None:
        """Merge one evaluated chunk (the next `lb.size` layouts of the exhaustive order)."""
        position = self.valid + np.arange(lb.size)
        self.valid += lb.size
        fits = np.asarray(res["fits"], dtype=bool)
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
        """Indices (in exhaustive order) of the best `keep` fitting layouts and of the smallest footprint."""
        idx = np.nonzero(fits)[0]
        best = idx[np.lexsort((position[idx], score[idx]))[:self.keep]]
        smallest = np.array([int(np.argmin(memory))]) if memory.size else np.array([], dtype=int)
        both = np.union1d(best, smallest)
        return both[np.argsort(position[both], kind="stable")]

    def outcome(self) -> tuple[LayoutBatch, dict, np.ndarray]:
        """(kept layouts, their results, the fitting ones' indices best first)."""
        fits = np.asarray(self.results["fits"], dtype=bool)
        idx = np.nonzero(fits)[0]
        return self.batch, self.results, idx[np.argsort(self.score[idx], kind="stable")]


def best_of(pieces: Iterable[LayoutBatch], evaluate: Callable[[LayoutBatch], dict],
            score: Callable[[dict], np.ndarray], keep: int, chunk: int, progress=None) -> Kept:
    """The best `keep` fitting layouts (and the smallest footprint) of the valid layouts `pieces` yields in the
    exhaustive order, each evaluated `chunk` layouts at a time."""
    kept = Kept(max(1, int(keep)))
    for lb in pieces:
        for start in range(0, lb.size, chunk):
            piece = lb.take(slice(start, min(start + chunk, lb.size))) if lb.size > chunk else lb
            res = evaluate(piece)
            kept.add(piece, res, np.asarray(score(res), dtype=float))
            if progress is not None:
                progress.update(piece.size)
    return kept
