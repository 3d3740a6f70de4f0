"""The lockstep least-squares solver: right optimum, bounds kept, problems independent of each other."""

import numpy as np

from flopcast.validate import lockstep


def _problem(rows, free, lo=-5.0, hi=5.0, p=2):
    return lockstep.Problem(rows=np.array(rows), free=np.array(free), u0=np.zeros(p), prior=np.zeros(p),
                            prior_scale=np.full(p, 1e-6), lo=np.full(p, lo), hi=np.full(p, hi))


# residual rows r_i(theta) = log(a * x_i^b / y_i) with y from a = 2, b = 0.5: linear in log a and b
X = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
Y = 2.0 * X ** 0.5


def _residuals(theta, owners):
    a, b = theta[0], np.log(theta[1])  # theta[1] = exp(b') : b enters through its log
    return np.log(a[None, :] * X[:, None] ** b[None, :] / Y[:, None])


def test_recovers_a_known_optimum():
    sol = lockstep.solve([_problem(range(5), [0, 1])], _residuals)[0]
    assert np.allclose(np.exp(sol.u[0]), 2.0, rtol=1e-3)
    assert np.allclose(sol.u[1], 0.5, atol=1e-3)  # theta[1] = exp(u[1]); log(theta[1]) = u[1] = b
    assert sol.cost < 1e-8


def test_bounds_hold_and_fixed_parameters_stay():
    capped = lockstep.solve([_problem(range(5), [0, 1], hi=np.log(1.5))], _residuals)[0]
    assert np.exp(capped.u[0]) <= 1.5 + 1e-12  # a wants 2: it stops at its bound
    assert capped.cost > 1e-4
    only_a = lockstep.solve([_problem(range(5), [0])], _residuals)[0]
    assert only_a.u[1] == 0.0  # b not freed: it stays at its start


def test_problems_solved_together_equal_solved_alone():
    together = lockstep.solve([_problem(range(5), [0, 1]), _problem([0, 1, 2], [0, 1]), _problem(range(5), [0])],
                              _residuals)
    alone = [lockstep.solve([p], _residuals)[0] for p in (_problem(range(5), [0, 1]), _problem([0, 1, 2], [0, 1]),
                                                           _problem(range(5), [0]))]
    for t, a in zip(together, alone):
        assert np.allclose(t.u, a.u) and t.passes == a.passes


def _rosenbrock(theta, owners):
    """Rosenbrock's valley in log space (u = log theta): residuals 10 (u1 - u0^2) and 1 - u0, a fit whose
    Levenberg-Marquardt path rejects many steps."""
    u = np.log(theta)
    return np.vstack([10.0 * (u[1] - u[0] ** 2), 1.0 - u[0]])


def test_speculative_candidates_give_the_same_fit_in_fewer_passes():
    def problem(start):
        return lockstep.Problem(rows=np.array([0, 1]), free=np.array([0, 1]), u0=np.array(start),
                                prior=np.zeros(2), prior_scale=np.full(2, 1e-6), lo=np.full(2, -5.0),
                                hi=np.full(2, 5.0))
    calls = {}

    def counted(n):
        def residuals(theta, owners):
            calls[n] = calls.get(n, 0) + 1
            return _rosenbrock(theta, owners)
        return residuals
    starts = ([-1.2, 1.0], [2.0, -1.0])
    plain = lockstep.solve([problem(s) for s in starts], counted(1))
    fast = lockstep.solve([problem(s) for s in starts], counted(4), speculate=4)
    for a, b in zip(plain, fast):  # bit for bit: the same points evaluated, the same decisions taken
        assert np.array_equal(a.u, b.u) and a.cost == b.cost and a.passes == b.passes
        assert np.array_equal(a.row_residuals, b.row_residuals)
    assert all(np.allclose(s.u, 1.0, atol=1e-2) for s in plain)  # the valley's minimum, u = (1, 1)
    assert calls[4] < calls[1]  # the rejected steps' successors were evaluated in the passes before
