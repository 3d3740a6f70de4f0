"""The degree and batch rows of a layout search, (tp, cp, pp, dp, global batch, micro-batch, ep), as arrays.

Every (tp, cp, pp, global batch, micro-batch) choice gets the data-parallel degrees that use the chips left,
room = chips // (tp cp pp): the largest divisor of the micro-batches per replica (global batch / micro-batch)
that fits in room, and the largest power of two that divides it and fits (only room itself when no chip may
idle; [room] when the micro-batch does not divide the global batch); for MoE models etp x ep must divide
tp x cp x dp. Rows come in the order of the nested loops tp, cp, pp, global batch, micro-batch, dp
(ascending), ep, etp, which the search's tie-breaking relies on.
"""

from __future__ import annotations

import functools

import numpy as np

from .rules import EP_RULE


def _prime_factors(n: int) -> dict[int, int]:
    """{prime: exponent} of n >= 1 by trial division up to the square root of what is left, so a power of
    two (a usual batch) takes a handful of steps; n is at most flopcast.limits' global batch (1e9)."""
    out: dict[int, int] = {}
    d = 2
    while d * d <= n:
        while n % d == 0:
            out[d] = out.get(d, 0) + 1
            n //= d
        d += 1 if d == 2 else 2
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


@functools.lru_cache(maxsize=4096)
def divisor_tuple(n: int) -> tuple[int, ...]:
    """Every divisor of n, ascending, from its prime factorisation; memoised: a search asks for the same few batches
    per micro-batch thousands of times."""
    divs = [1]
    for p, k in _prime_factors(n).items():
        divs = [d * p**e for d in divs for e in range(k + 1)]
    return tuple(sorted(divs))


def _divisors(n: int) -> np.ndarray:
    return np.array(divisor_tuple(n), dtype=np.int64)


def _grid(ch) -> dict:
    """Every (tp, cp, pp, global batch, micro-batch) in loop order, as flat arrays."""
    axes = [np.array(a, dtype=np.int64) for a in (ch.tp, ch.cp, ch.pp, ch.global_batch, ch.micro_batch)]
    flat = [g.ravel() for g in np.meshgrid(*axes, indexing="ij")]
    return dict(zip(("tp", "cp", "pp", "gb", "mb"), flat))


def _largest_divisor(per_dp: np.ndarray, room: np.ndarray, allow_idle: bool) -> np.ndarray:
    """The largest divisor of per_dp that is at most room (room itself without idle chips; 0 where none)."""
    out = np.zeros(per_dp.shape, dtype=np.int64)
    live = per_dp > 0
    if not live.any():
        return out
    if not allow_idle:
        return np.where(live & (per_dp % np.maximum(room, 1) == 0), room, 0)
    values, inverse = np.unique(per_dp[live], return_inverse=True)
    lists = [_divisors(int(n)) for n in values]
    table = np.full((len(values), max(len(d) for d in lists)), np.iinfo(np.int64).max)
    for j, d in enumerate(lists):
        table[j, :len(d)] = d
    divs = table[inverse.reshape(-1)]  # each choice's divisors, ascending, padded with the largest integer
    k = np.count_nonzero(divs <= room[live][:, None], axis=1)  # 1 always divides: k >= 1
    out[live] = divs[np.arange(len(k)), k - 1]
    return out


def _dp_choices(g: dict, chips: int, allow_idle: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(grid index, dp) pairs in loop order, and the grid's room (chips // (tp cp pp))."""
    room = chips // (g["tp"] * g["cp"] * g["pp"])
    per_dp = np.where(g["gb"] % g["mb"] == 0, g["gb"] // g["mb"], 0)
    dmax = _largest_divisor(per_dp, np.maximum(room, 1), allow_idle)
    first = np.where(dmax > 0, dmax, room)  # no divisor fits (or the micro-batch does not divide): room itself
    pow2 = np.where(dmax > 0, 2 ** np.floor(np.log2(np.maximum(dmax, 1))).astype(np.int64), 0)
    second_ok = allow_idle & (dmax > 0) & (pow2 != dmax) & (per_dp % np.maximum(pow2, 1) == 0) & (pow2 >= 1)
    live = room >= 1
    idx = np.arange(room.size)
    i = np.concatenate([idx[live & second_ok], idx[live]])
    dp = np.concatenate([pow2[live & second_ok], first[live]])
    order = np.lexsort((dp, i))  # by grid index, then dp ascending (the power of two is the smaller)
    return i[order], dp[order], room


def base_rows(model, chips: int, space, ch, allow_idle: bool, tally) -> np.ndarray:
    """(tp, cp, pp, dp, global batch, micro-batch, ep, etp) rows, int64 (n, 8); tallies the rows no chip count
    allows and the expert degrees that do not divide the ranks."""
    g = _grid(ch)
    n_other = len(ch.vp) * len(ch.schedule) * ch.per_schedule_pair
    if space.dp:
        i = np.repeat(np.arange(g["tp"].size), len(space.dp))
        dp = np.tile(np.array(space.dp, dtype=np.int64), g["tp"].size)
    else:
        i, dp, room = _dp_choices(g, chips, allow_idle)
        short = int(np.count_nonzero(room < 1))
        if short:
            tally.reject("more chips than the cluster has", short)
    return _expert_pairs(model, space, ch, g, i, dp, n_other, tally)


def _expert_pairs(model, space, ch, g: dict, i: np.ndarray, dp: np.ndarray, n_other: int, tally) -> np.ndarray:
    """Each (grid, dp) pair times its (ep, etp) degrees in ch.ep x ch.etp order: etp = 1 only where tp > 1 (with
    tp = 1 it is the default, 0); for MoE models etp x ep must divide tp x cp x dp (unless the space pins ep)."""
    tp, ranks = g["tp"][i], g["tp"][i] * g["cp"][i] * dp
    pairs = [(e, t) for e in ch.ep for t in ch.etp]
    keep = np.ones((dp.size, len(pairs)), dtype=bool)
    offered = np.zeros(dp.size, dtype=np.int64)  # the pairs each row's tp allows before the divisibility rule
    for j, (e, t) in enumerate(pairs):
        listed = np.ones(dp.size, dtype=bool) if (space.etp or t != 1) else tp > 1
        keep[:, j] = listed
        offered += listed
        if model.moe and not space.ep:
            keep[:, j] &= ranks % (e * np.where(t > 0, t, tp)) == 0
    dropped = int((offered - keep.sum(axis=1)).sum())
    if dropped:
        tally.reject(EP_RULE, dropped * n_other)
    r, j = np.nonzero(keep)  # row-major: each (grid, dp) pair's (ep, etp) in order
    gi = i[r]
    ep = np.array([p[0] for p in pairs], dtype=np.int64)[j]
    etp = np.array([p[1] for p in pairs], dtype=np.int64)[j]
    return np.stack([g["tp"][gi], g["cp"][gi], g["pp"][gi], dp[r], g["gb"][gi], g["mb"][gi], ep, etp], axis=1)
