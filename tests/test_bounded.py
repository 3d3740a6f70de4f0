"""Bounded work (issue 16): every loop a user controls has a cap or a closed form; a run that never
finishes says so instead of being simulated forever."""

import json
import time

import pytest

from flopcast.cost.reliability import GoodputAssumptions, expected_time
from flopcast.errors import FlopcastError
from flopcast.simulate import reliability as R


def test_a_job_interrupted_faster_than_it_restarts_never_finishes():
    a = GoodputAssumptions(mtbf_chip_hours=10)  # 1,024 chips: one interruption every ~35 s, restarts of 8 min
    g = expected_time(30 * 86400, 1024, 1e12, a)
    assert not g.finishes and g.expected_s == float("inf") and g.goodput == 0
    assert "never finishes" in g.never_finishes_reason() and "restart" in g.never_finishes_reason()
    d = g.to_dict()
    assert d["expected_s"] is None and d["unavailable"]["expected_s"].startswith("never finishes")
    json.dumps(d, allow_nan=False)
    started = time.perf_counter()
    with pytest.raises(FlopcastError, match="never finishes"):
        R.simulate(30 * 86400, 1024, 1e12, a, trials=1000)
    assert time.perf_counter() - started < 2


def test_an_interval_past_the_job_mtbf_never_finishes():
    a = GoodputAssumptions(mtbf_chip_hours=50_000, interval_s=1e11)  # no checkpoint in 30 days of work
    g = expected_time(30 * 86400, 16384, 1e12, a)
    assert not g.finishes and "checkpoint" in g.never_finishes_reason()


def test_monte_carlo_past_the_event_cap_is_refused_with_the_closed_form():
    a = GoodputAssumptions(mtbf_chip_hours=5000)
    g = expected_time(200 * 86400, 16384, 1e12, a)
    assert g.finishes and g.interruptions * 1000 > R.MAX_EVENTS and g.interruptions < R.MAX_STEPS
    started = time.perf_counter()
    with pytest.raises(FlopcastError, match=r"past the cap .*use at most [\d,]+ trials .*closed form"):
        R.simulate(200 * 86400, 16384, 1e12, a, trials=1000)
    assert time.perf_counter() - started < 2


def test_monte_carlo_past_the_step_cap_is_refused_whatever_the_trials():
    """Fuzz seed 701, case 873: one trial of ~116,000 events stepped one event at a time for 31 s of CPU."""
    a = GoodputAssumptions(mtbf_chip_hours=1)
    g = expected_time(40_000 * 3600, 1, 1e9, a)
    assert g.finishes and g.interruptions * 1 < R.MAX_EVENTS and g.interruptions > R.MAX_STEPS
    started = time.perf_counter()
    with pytest.raises(FlopcastError, match=r"past the cap of [\d,]+ a trial .*; the closed form alone answers this"):
        R.simulate(40_000 * 3600, 1, 1e9, a, trials=1)
    assert time.perf_counter() - started < 2
    assert R.simulate(100 * 3600, 1, 1e9, a, trials=2).events > 0  # ~100 interruptions: run as before


@pytest.mark.parametrize("trials, seed", [(0, 0), (10**7, 0), (True, 0), (2.5, 0), (10, -1), (10, 2**63)])
def test_trials_and_seed_are_bounded(trials, seed):
    with pytest.raises(FlopcastError):
        R.simulate(86400, 64, 1e11, GoodputAssumptions(), trials=trials, seed=seed)


@pytest.mark.parametrize("field, value", [("cv", 1e30), ("mtbf_chip_hours", float("inf")), ("restart_s", -1),
                                          ("spares", 10**30), ("interval_s", float("nan")), ("detection_s", 1e30)])
def test_assumptions_are_finite_and_bounded(field, value):
    with pytest.raises(FlopcastError, match=field):
        GoodputAssumptions(**{field: value})


def test_one_trial_gives_strict_json_and_no_negative_parts():
    sim = R.simulate(20 * 86400, 1024, 1e12, GoodputAssumptions(spares=2), trials=1)
    s = sim.summary()
    assert s["wall_s"]["ci95"] is None and "wall_s.ci95" in s["unavailable"]
    json.dumps(s, allow_nan=False)
    sim = R.simulate(20 * 86400, 1024, 1e12, GoodputAssumptions(spares=2), trials=50)
    assert all((v >= 0).all() for v in sim.breakdown_s.values())
