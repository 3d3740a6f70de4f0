"""Many bounded least-squares fits solved in lockstep, sharing one evaluation of the model per pass.

Cross-validation refits the same parameters once per left-out source; each fit is a small nonlinear
least-squares problem whose cost is dominated by evaluating the training model on every row. Here each
pass evaluates every row once, for every problem's current point and its finite-difference
perturbations at once (the model takes arrays of parameters: one column per point), and each problem
takes a Levenberg-Marquardt step (Levenberg 1944; Marquardt 1963; Nocedal & Wright, Numerical
Optimization, 2nd ed., sec. 10.3) on its own rows. Bounds are kept by fixing the parameters that sit on a
bound with the gradient pushing outward and clipping the step (a projected step, as in trust-region
reflective methods' active set; Branch, Coleman & Li 1999).

Parameters are fitted in log space (u = log theta): they are positive efficiencies and times whose
plausible ranges span decades, and the priors are Gaussian in log space.

A pass costs the model's evaluation about as much for a few columns as for many, and most passes of these fits
are rejected steps, after which the next point is known before the pass runs: u + the step at five times the
damping, from the same Jacobian. `solve(speculate=n)` evaluates with each candidate the n - 1 candidates its
rejections would propose next and takes them in turn while the fit rejects: the same points, residuals and
decisions as one candidate a pass, in fewer passes (speculative execution of the solver's own branch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

STEP = 1e-3  # finite-difference step in log space (0.1% of the parameter)
FTOL = 1e-4  # stop when an accepted step lowers the cost by less than this fraction
XTOL = 1e-5  # stop when the step moves no parameter by more than this (log space)
MAX_PASSES = 60
REJECT_DAMPING = 5.0  # a rejected step multiplies the damping by this
MAX_DAMPING = 1e8  # past it the fit stops


@dataclass(frozen=True)
class Problem:
    """One fit: which rows it uses, which parameters it frees, the Gaussian prior in log space."""

    rows: np.ndarray  # indices of the residual rows this fit uses
    free: np.ndarray  # indices of the parameters it fits; the others stay at u0
    u0: np.ndarray  # (P,) start, log space
    prior: np.ndarray  # (P,) log prior centres
    prior_scale: np.ndarray  # (P,) weight / width of each prior residual
    lo: np.ndarray  # (P,) log lower bounds
    hi: np.ndarray  # (P,) log upper bounds


@dataclass
class _State:
    problem: Problem
    candidate: np.ndarray
    u: np.ndarray | None = None
    cost: float = np.inf
    jac: np.ndarray | None = None
    resid: np.ndarray | None = None
    lam: float = 1e-2
    done: bool = False
    passes: int = 0


@dataclass(frozen=True)
class Solution:
    u: np.ndarray  # (P,) fitted point, log space
    cost: float  # half the sum of squared residuals (rows and priors)
    row_residuals: np.ndarray  # the rows' residuals at u
    passes: int


def _columns(st: _State) -> tuple[np.ndarray, np.ndarray]:
    """The points this problem needs evaluated: its candidate, then one perturbation per free parameter
    (backward where a forward step would cross the upper bound). Returns (points (P, 1 + F), signed steps)."""
    p = st.problem
    u = st.candidate
    steps = np.where(u[p.free] + STEP > p.hi[p.free], -STEP, STEP)
    pts = np.repeat(u[:, None], 1 + len(p.free), axis=1)
    pts[p.free, 1 + np.arange(len(p.free))] += steps
    return pts, steps


def _update(st: _State, r_cols: np.ndarray, steps: np.ndarray) -> None:
    """Accept or reject the candidate from its evaluated columns; propose the next one."""
    p = st.problem
    st.passes += 1
    u = st.candidate
    r_rows = r_cols[:, 0]
    jac_rows = (r_cols[:, 1:] - r_rows[:, None]) / steps[None, :]
    r_prior = p.prior_scale[p.free] * (u[p.free] - p.prior[p.free])
    resid = np.concatenate([r_rows, r_prior])
    jac = np.vstack([jac_rows, np.diag(p.prior_scale[p.free])])
    cost = 0.5 * float(resid @ resid)
    if not np.isfinite(cost):
        cost = np.inf
    if cost < st.cost:
        gain = (st.cost - cost) / cost if np.isfinite(st.cost) and cost > 0 else np.inf
        st.u, st.cost, st.jac, st.resid = u, cost, jac, resid
        st.lam = max(st.lam / 3.0, 1e-9)
        if gain < FTOL:
            st.done = True
    else:
        st.lam *= REJECT_DAMPING
        if st.lam > MAX_DAMPING:
            st.done = True
    if st.u is None:  # the start itself could not be evaluated
        st.done = True
    if st.passes >= MAX_PASSES:
        st.done = True
    if not st.done:
        _propose(st)


def _propose(st: _State) -> None:
    p = st.problem
    g = st.jac.T @ st.resid
    a = st.jac.T @ st.jac
    uf = st.u[p.free]
    blocked = ((uf <= p.lo[p.free] + 1e-12) & (g > 0)) | ((uf >= p.hi[p.free] - 1e-12) & (g < 0))
    keep = ~blocked
    step = np.zeros_like(uf)
    if keep.any():
        ak = a[np.ix_(keep, keep)]
        damp = st.lam * np.diag(np.diag(ak)) + 1e-12 * np.eye(int(keep.sum()))
        step[keep] = np.linalg.solve(ak + damp, -g[keep])
    new = st.u.copy()
    new[p.free] = np.clip(uf + step, p.lo[p.free], p.hi[p.free])
    if np.max(np.abs(new - st.u), initial=0.0) < XTOL:
        st.done = True
    st.candidate = new


def _candidates(st: _State, speculate: int) -> list[np.ndarray]:
    """The candidate to evaluate and up to speculate - 1 more: those successive rejections would propose (the
    same _propose on the same accepted point, Jacobian and residuals, the damping raised as _update raises it)."""
    out = [st.candidate]
    if st.u is None:  # no accepted point yet: a rejection ends the fit
        return out
    probe = replace(st)
    while len(out) < speculate and probe.passes + len(out) < MAX_PASSES:
        probe.lam *= REJECT_DAMPING
        if probe.lam > MAX_DAMPING:
            break
        _propose(probe)
        if probe.done:
            break
        out.append(probe.candidate)
    return out


def solve(problems: list[Problem], residuals: Callable[[np.ndarray, np.ndarray], np.ndarray],
          progress: Callable[[int], None] | None = None, speculate: int = 1) -> list[Solution]:
    """Fit every problem. residuals(theta, owners) takes parameter columns (P, K) and the index of the problem
    each column belongs to (K,), and returns the rows' residuals (N, K) (each column's on its own: a column's
    numbers may not depend on the others); each pass calls it once with the columns of every unfinished problem.
    speculate: candidates evaluated per problem and pass (the module's note); the solutions do not depend on it."""
    states = [_State(p, p.u0.copy()) for p in problems]
    while True:
        live = [i for i, s in enumerate(states) if not s.done]
        if not live:
            break
        blocks = [(i, _columns(replace(states[i], candidate=c))) for i in live
                  for c in _candidates(states[i], speculate)]
        theta = np.exp(np.concatenate([pts for _, (pts, _) in blocks], axis=1))
        owners = np.concatenate([np.full(pts.shape[1], i) for i, (pts, _) in blocks])
        r = residuals(theta, owners)
        start = 0
        for i, (pts, steps) in blocks:
            s, k = states[i], pts.shape[1]
            # a speculative candidate is taken only while it is the one the fit would evaluate next
            if not s.done and np.array_equal(s.candidate, pts[:, 0]):
                _update(s, r[s.problem.rows, start:start + k], steps)
            start += k
        if progress:
            progress(len(live))
    out = []
    for s in states:
        u = s.u if s.u is not None else s.problem.u0
        n = len(s.problem.rows)
        rr = s.resid[:n] if s.resid is not None else np.full(n, np.nan)
        out.append(Solution(u, s.cost, rr, s.passes))
    return out
