"""Plans met on the expected time with faults and its full cost; cost and energy with their parts; the batch
grid that reaches the critical batch."""

import json
import math

import pytest

from flopcast import api
from flopcast.cli import main
from flopcast.cost import economics
from flopcast.plan import batch, capacity


def test_bill_charges_downtime_and_splits_energy():
    r = economics.Rates(10.0, "user", 500.0, "user", 1000.0, 1.2, "user")
    b = economics.bill(chips=16, instances=1, ideal_s=3600.0, expected_s=7200.0, rates=r)
    assert b.cost_usd == pytest.approx(20.0)
    assert b.cost_breakdown_usd == pytest.approx({"compute": 10.0, "downtime_and_rework": 10.0})
    e = b.energy_breakdown_kwh
    assert e["chips"] == pytest.approx(16 * 0.5 * 2) and e["host_and_network"] == pytest.approx(2.0)
    assert e["cooling_and_facility"] == pytest.approx(0.2 * (16 + 2))
    assert b.energy_kwh == pytest.approx(sum(e.values()))


def test_user_price_power_and_pue_replace_the_catalog():
    kw = dict(chips=8, tp=8, pp=1, micro_batch=1, global_batch=8, tokens="10B")
    base = api.train("llama2-7b", "p5.48xlarge", **kw)
    mine = api.train("llama2-7b", "p5.48xlarge", price_per_hour=2 * base.bill.rates.price_per_hour_usd,
                     power_w=1400.0, pue=1.0, **kw)
    assert mine.cost_usd == pytest.approx(2 * base.cost_usd)
    assert mine.bill.rates.power_basis == "user" and mine.bill.energy_breakdown_kwh["cooling_and_facility"] == 0
    assert mine.bill.energy_breakdown_kwh["chips"] == pytest.approx(2 * base.bill.energy_breakdown_kwh["chips"])
    with pytest.raises(Exception, match="pue"):
        api.train("llama2-7b", "p5.48xlarge", pue=0.5, **kw)


def test_critical_batch_grows_as_loss_falls_and_grid_is_dense():
    assert batch.critical_batch_tokens(70e9, 15e12) > batch.critical_batch_tokens(7e9, 1e12)
    # Llama 3 405B trained at 16M tokens; the rule gives the same order
    assert 5e6 < batch.critical_batch_tokens(405e9, 15.6e12) < 3.2e7
    grid, cap, why = batch.batch_grid(api.resolve_model("llama3-70b"), 15e12)
    assert max(grid) == cap and "critical batch" in why
    assert all(b2 / b1 <= 1.34 for b1, b2 in zip(grid, grid[1:]))  # no gaps a cluster size falls into
    assert batch.batch_grid(api.resolve_model("llama3-70b"), 15e12, max_global_batch=4096)[1] == 4096


def test_deadline_holds_the_time_with_faults_and_picks_the_cheapest():
    p = api.plan("llama2-7b", "p5.48xlarge", tokens="300B", deadline="10d")
    out = p.outcome
    ok = [q for q in out.points if q.result is not None and q.expected_s <= 10 * 86400]
    assert out.chosen.expected_s <= 10 * 86400
    assert out.chosen.cost_usd == min(q.cost_usd for q in ok)
    assert out.fastest.expected_s == min(q.expected_s for q in ok)
    assert out.smallest.nodes == min(q.nodes for q in ok)
    # every smaller size searched misses the deadline with faults, and every size is a round one
    assert all(q.expected_s > 10 * 86400 for q in out.points if q.nodes < out.smallest.nodes)
    assert all(q.nodes in capacity.round_sizes(2 ** int(math.log2(q.nodes)), 2 * q.nodes) for q in out.points)


def test_round_sizes_step_an_eighth_of_the_power_of_two_below():
    assert capacity.round_sizes(1024, 2048) == [1024 + 128 * k for k in range(9)]
    assert capacity.round_sizes(4, 8) == [4, 5, 6, 7, 8]  # small clusters: every count
    assert capacity.round_sizes(4096, 6250) == list(range(4096, 6250, 512)) + [6250]  # a system's largest kept
    lo, hi = capacity._bisect(1024, 2048, lambda n: n < 1300)
    assert (lo, hi) == (1280, 1408)


def test_plan_json_answer_has_cost_parts_and_the_batch_cap(capsys):
    argv = ["plan", "llama2-7b", "-H", "p5.48xlarge", "--tokens", "300B", "--deadline", "10d", "--json"]
    assert main(argv) in (0, None)
    d = json.loads(capsys.readouterr().out)
    a = d["answer"]
    assert a["chosen"]["expected_time_to_train_days"] <= 10 and a["chosen"]["cost_usd"] > 0
    assert set(a["chosen"]["cost_breakdown_usd"]) == {"compute", "downtime_and_rework"}
    assert a["batch_cap_sequences"] > 0 and {"fastest", "smallest"} <= set(a)


def test_price_power_and_pue_apply_to_reliability_and_report(capsys):
    kw = dict(tokens="10B", trials=20, tp=8, pp=1, micro_batch=1, global_batch=8)
    base = api.reliability("llama2-7b", "p5.48xlarge", 8, **kw)
    mine = api.reliability("llama2-7b", "p5.48xlarge", 8, price_per_hour=2 * base.train.bill.rates.price_per_hour_usd,
                           pue=1.0, **kw)
    assert mine.train.cost_usd == pytest.approx(2 * base.train.cost_usd)
    assert mine.train.bill.energy_breakdown_kwh["cooling_and_facility"] == 0
    argv = ["reliability", "llama2-7b", "-H", "p5.48xlarge", "-n", "8", "--tokens", "10B", "--trials", "20",
            "--tp", "8", "--pp", "1", "--price", "100", "--json"]
    assert main(argv) in (0, None)
    assert json.loads(capsys.readouterr().out)["train"]["price_per_hour_usd"] == 100
    for command in ("reliability", "report"):
        try:
            main([command, "--help"])
        except SystemExit:
            pass
        assert "--price" in capsys.readouterr().out


def test_compare_and_reliability_text_name_the_price_kind(capsys):
    """A system with no on-demand price is costed at its Capacity Block rate, and the text says so."""
    assert main(["compare", "llama2-7b", "-H", "trn2.48xlarge,p5.48xlarge", "--chips", "16", "--tokens", "10B",
                 "--tp", "8", "--pp", "1", "--micro-batch", "1", "--global-batch", "16"]) in (0, None)
    out = capsys.readouterr().out
    assert "capacity-block" in out and "on-demand" in out
    assert main(["reliability", "llama2-7b", "-H", "trn2.48xlarge", "--chips", "16", "--tokens", "10B",
                 "--trials", "10", "--tp", "8", "--pp", "1", "--micro-batch", "1", "--global-batch", "16"]) in (0, None)
    out = capsys.readouterr().out
    assert "USD/h per instance (capacity-block)" in out and "MWh with faults" in out


def test_one_default_token_budget_everywhere(capsys):
    """train, compare and reliability default to 20 tokens per parameter of the model asked for (not only for
    the built-in scenario), as plan does with 'chinchilla'."""
    lay = ["--tp", "8", "--pp", "1", "--micro-batch", "1", "--global-batch", "8"]
    want = api.default_tokens(api.resolve_model("llama2-7b"))
    got = {}
    for cmd in (["train", "llama2-7b", "-H", "p5.48xlarge", "--chips", "8"],
                ["compare", "llama2-7b", "-H", "p5.48xlarge", "--chips", "8"],
                ["reliability", "llama2-7b", "-H", "p5.48xlarge", "--chips", "8", "--trials", "5"]):
        assert main(cmd + lay + ["--json"]) in (0, None)
        d = json.loads(capsys.readouterr().out)
        got[cmd[0]] = d.get("tokens") or (d.get("train") or {}).get("tokens")
    assert got == {"train": want, "compare": want, "reliability": want}
    assert api.args.tokens("chinchilla", api.resolve_model("llama2-7b")) == want


def test_budget_prices_no_run_that_never_finishes(monkeypatch):
    """A size whose run never finishes (faults faster than restarts) has no cost: within no budget, never compared
    with one (a fuzzed system file gave `TypeError: '<=' between NoneType and float`)."""
    real = economics.bill

    def bill(chips, instances, ideal_s, expected_s, rates):
        b = real(chips, instances, ideal_s, expected_s, rates)
        return b if instances == 1 else economics.Bill(None, {}, None, {}, rates)

    monkeypatch.setattr(economics, "bill", bill)
    p = api.plan("llama2-7b", "p5.48xlarge", tokens="20B", budget="1M")
    assert p.outcome.chosen.nodes == 1 and p.outcome.chosen.cost_usd is not None
    monkeypatch.setattr(economics, "bill", lambda c, i, a, e, rates: economics.Bill(None, {}, None, {}, rates))
    with pytest.raises(Exception, match="finishes training"):
        api.plan("llama2-7b", "p5.48xlarge", tokens="20B", budget="1M")
