"""The arrays simulate.training.evaluate returns for a LayoutBatch, taken and joined as the batch is
(LayoutBatch.take, LayoutBatch.concat): one value per layout, or one value shared by all of them (a scalar, or an
array that broadcasts), at the top level or in a dict of parts (`time_parts`, `memory_parts`)."""

from __future__ import annotations

import numpy as np


def _per_layout(res: dict):
    """A function making one of `res`'s values one per layout (broadcast to the layouts' shape)."""
    shape = np.shape(res["step_time_s"])
    return lambda v: np.broadcast_to(np.asarray(v), shape)


def _each(res: dict, fn) -> dict:
    return {k: ({kk: fn(k, kk, vv) for kk, vv in v.items()} if isinstance(v, dict) else fn(k, None, v))
            for k, v in res.items()}


def take(res: dict, index) -> dict:
    """The results of layouts `index` (an index array or a slice) of an evaluation."""
    full = _per_layout(res)
    return _each(res, lambda k, kk, v: full(v)[index])


def concat(results: list[dict]) -> dict:
    """Evaluations one after another, as LayoutBatch.concat joins their batches (the one evaluation itself where
    there is one)."""
    if len(results) == 1:
        return results[0]
    fulls = [_per_layout(r) for r in results]
    return _each(results[0], lambda k, kk, _: np.concatenate(
        [full(r[k] if kk is None else r[k][kk]) for full, r in zip(fulls, results)]))
