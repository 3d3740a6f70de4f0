"""The simulation work budget (simulate/serving/budget.py): runs stop when it is spent, searches say what it cut."""

from __future__ import annotations

import numpy as np
import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.plan import deploy as D
from flopcast.simulate import serving as S


@pytest.fixture(scope="module")
def h100():
    return inf.deployment(catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge"), chips=1)


def test_parts_charge_their_parents():
    top = S.WorkBudget(900)
    third = top.part(3)
    assert third.total == 300
    third.charge(250)
    assert (top.spent, top.left, third.left) == (250, 650, 50)
    half = top.part(2)  # of what is left
    assert half.total == 325
    top.charge(700)
    assert top.exhausted and half.exhausted  # a part never outlives its parent
    half.mark_cut()
    assert half.cut and top.cut and not third.cut


def test_a_run_stops_when_its_budget_is_spent_and_charges_what_it_did(h100):
    reqs = S.poisson_requests(8.0, np.random.default_rng(0), n=2000, input_tokens="512", output_tokens="256")
    free = S.WorkBudget(1e12)
    whole = S.simulate(h100, reqs, S.ServingConfig(), budget=free)
    assert not free.cut  # an iteration is a step run ahead (STEP_WORK) or an event (EVENT_WORK); a request REQUEST_WORK
    assert whole.iterations * S.STEP_WORK < free.spent - S.REQUEST_WORK * 2000 < whole.iterations * S.EVENT_WORK
    small = S.WorkBudget(free.spent / 4)
    with pytest.raises(S.BudgetSpent):
        S.simulate(h100, reqs, S.ServingConfig(), budget=small)
    assert small.cut and small.total <= small.spent < 0.3 * free.spent


def test_capacity_cut_short_is_a_verified_lower_bound(h100):
    cfg = S.ServingConfig(slo_ttft_s=2.0, slo_tpot_s=0.05)
    free = S.WorkBudget(1e12)
    q_full, r_full = S.find_capacity(h100, cfg, requests=200, iterations=6, budget=free)
    budget = S.WorkBudget(free.spent / 2)
    q, r = S.find_capacity(h100, cfg, requests=200, iterations=6, budget=budget)
    assert budget.cut and 0 < q < q_full
    assert r.slo_attainment >= S.ATTAINMENT  # the rate returned was simulated and met the SLOs
    assert r_full.slo_attainment >= S.ATTAINMENT


def test_deploy_within_its_budget_says_what_was_cut():
    m, s = catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge")
    slo = S.ServingConfig(slo_ttft_s=2.0, slo_tpot_s=0.05)
    budget = S.WorkBudget(400_000)
    o = D.deploy(m, s, slo, weights=("bf16",), kv_dtypes=("bf16",), max_seqs=(128, 256), requests=200,
                 budget=budget)
    assert budget.cut and o.budget["cut"] and "cut the search" in o.budget_note
    assert budget.spent < 1.5 * budget.total  # at most the runs in flight pass it, by a check interval
    assert o.best is not None  # the best-bounded candidates are simulated first
    assert sum(v for k, v in o.pruned.items() if "budget" in k) >= 1


def test_deploy_shortens_the_first_runs_rather_than_simulate_nothing():
    """Loose targets and long answers: full capacity runs cost more than the whole budget; the best-bounded candidate
    still runs, on shorter runs, and the note says how short."""
    m, s = catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge")
    o = D.deploy(m, s, S.ServingConfig(slo_ttft_s=60.0, slo_tpot_s=1.0), output_tokens="4000", weights=("fp8",),
                 kv_dtypes=("fp8",), max_seqs=(256,), requests=100, disaggregate=False,
                 budget=S.WorkBudget(500_000))
    assert o.best is not None and len(o.simulated) == 1
    assert "with runs of at most" in o.budget_note
    assert o.best.result.requests <= int(o.budget_note.split("at most ")[1].split(" ")[0].replace(",", ""))


def test_long_outputs_past_the_budget_are_ranked_on_the_roofline():
    """200,000-token answers: a capacity run spans 8 SLO horizons (~22 hours of arrivals) stepped every ~20 ms; no
    candidate's first runs fit a small budget, so none is started and they are listed cheapest bound first."""
    m, s = catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge")
    budget = S.WorkBudget(200_000)
    o = D.deploy(m, s, S.ServingConfig(slo_ttft_s=2.0, slo_tpot_s=0.05), output_tokens="200000", weights=("fp8",),
                 kv_dtypes=("fp8",), max_seqs=(256,), disaggregate=False, budget=budget)
    assert o.best is None and not o.simulated and o.unsimulated and "ranked on the roofline" in o.reason
    costs = [cost for _, cost in o.unsimulated]
    assert costs == sorted(costs)
    ranked = o.unsimulated_dicts()
    assert ranked[0]["roofline_bound_qps"] == o.unsimulated[0][0].bound_qps
    assert budget.spent <= budget.total  # nothing was started past what it could pay for


def test_a_full_batch_with_a_queue_sums_its_steps_to_the_next_finish(h100, monkeypatch):
    """A burst: the batch is full (max_seqs) and prompts wait; until a decoder finishes nothing can join, so the
    steps are summed in closed form (Simulation.decode_run): the same answer as one step at a time, for far less
    work."""
    from flopcast.simulate.serving.simulation import Simulation

    reqs = S.poisson_requests(1e6, np.random.default_rng(0), n=400, input_tokens="512", output_tokens="2000")
    cfg = S.ServingConfig(max_seqs=32)
    summed = S.WorkBudget(1e12)
    fast = S.simulate(h100, reqs, cfg, budget=summed)
    monkeypatch.setattr(Simulation, "decode_run", lambda self, rep: 1)
    stepped = S.WorkBudget(1e12)
    slow = S.simulate(h100, reqs, cfg, budget=stepped)
    assert fast.iterations == slow.iterations and fast.completed == slow.completed == 400
    assert fast.e2e_s["p90"] == pytest.approx(slow.e2e_s["p90"], rel=1e-9)
    assert fast.throughput_requests_per_s == pytest.approx(slow.throughput_requests_per_s, rel=1e-9)
    assert summed.spent < stepped.spent / 5
