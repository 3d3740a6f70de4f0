"""Deployment search (plan/deploy.py): replicas x TP x formats, pruned by the roofline, simulated, ranked."""

import json

import pytest

from flopcast import api, catalog
from flopcast.cli import main
from flopcast.plan import deploy as D
from flopcast.simulate import serving as S

SLO = S.ServingConfig(slo_ttft_s=2.0, slo_tpot_s=0.05)


@pytest.fixture(scope="module")
def p5():
    """`flopcast deploy llama3-8b --hardware p5.48xlarge --slo-ttft 2s --slo-tpot 50ms` (every format, max batch and
    xPyD unit it searches by default)."""
    return api.deploy("llama3-8b", "p5.48xlarge", slo_ttft="2s", slo_tpot="50ms").systems["p5.48xlarge"]


def test_multi_replica_beats_one_tp8_replica_on_p5(p5):
    best, base = p5.best, p5.baseline
    assert base.candidate.tp == 8 and base.candidate.replicas_per_instance == 1
    assert best.candidate.replicas_per_instance > 1
    assert best.cost_per_million_output_tokens_usd < 0.8 * base.cost_per_million_output_tokens_usd
    # the whole instance, its replicas behind the router, holds the summed capacity
    assert p5.verified is not None and p5.verified.slo_attainment >= 0.9
    # the simulated capacity stays under the (widened) roofline bound that pruned the rest
    assert all(p.replica_qps <= p.candidate.bound_qps for p in p5.simulated)
    assert best in p5.pareto


def test_trn2_does_not_copy_the_kv_cache_over_64_cores():
    o = D.deploy(catalog.load_model("llama3-8b"), catalog.load_system("trn2.48xlarge"), SLO,
                 weights=("bf16",), kv_dtypes=("bf16",), max_seqs=(256,), requests=200)
    assert o.baseline.deployment.kv_replication == 8  # TP over 64 logical cores, 8 KV heads
    assert o.best.candidate.tp < 16
    assert o.best.chip_hours_per_million_output_tokens < o.baseline.chip_hours_per_million_output_tokens


def test_roofline_prunes_what_cannot_fit_or_meet_the_slo():
    m, s = catalog.load_model("llama3-70b"), catalog.load_system("p5.48xlarge")
    ok, why = D.roofline_bound(m, s, D.Candidate(1, "bf16", "bf16", 256, 8, 1), 512, 128, SLO)
    assert ok is None and why == "does not fit"  # 141 GB of weights on one 80 GB H100
    c, d = D.roofline_bound(m, s, D.Candidate(8, "bf16", "bf16", 256, 1, 1), 512, 128, SLO)
    assert c.bound_qps > 0 and c.bound_batch >= 1 and d.tp == 8
    tight = S.ServingConfig(slo_ttft_s=2.0, slo_tpot_s=0.001)
    assert D.roofline_bound(m, s, D.Candidate(8, "bf16", "bf16", 256, 1, 1), 512, 128, tight)[1] == \
        "misses the SLOs alone"


def test_qps_rents_whole_instances(p5):
    c = p5.best.candidate
    inst, served, usd, _ = D._costs(p5.system, c, p5.best.replica_qps, 128, 3 * p5.best.qps)
    assert inst == 3 and served == pytest.approx(3 * p5.best.qps)
    assert usd == pytest.approx(p5.best.cost_per_million_output_tokens_usd, rel=0.05)


def test_cli_deploy_json_and_errors(capsys, tmp_path):
    out = tmp_path / "d.csv"
    assert main(["deploy", "llama3-8b", "--hardware", "c8g.16xlarge", "--slo-ttft", "10s", "--slo-tpot", "200ms",
                 "--weights", "q4_0", "--requests", "50", "--json", "--csv", str(out)]) == 0
    d = json.loads(capsys.readouterr().out)["systems"]["c8g.16xlarge"]
    assert d["best"]["replicas_per_instance"] == 1 and d["best"]["weights"] == "q4_0"
    assert d["budget"]["work_units"] == D.DEPLOY_WORK and 0 < d["budget"]["spent_units"]  # one system: its whole share
    assert (d["budget_note"] is None) == (not d["budget"]["cut"])
    assert out.read_text().startswith("system,")
    assert main(["deploy", "llama3-8b", "--hardware", "r8g.5xlarge"]) == 2
    assert "valid r8g sizes" in capsys.readouterr().err
    assert main(["deploy", "llama3-8b", "--hardware", "p5.48xlarge", "--qps", "5", "--find-capacity"]) == 2
    assert main(["deploy", "llama3-8b", "--hardware", "p5.48xlarge", "--weights", "q9_9"]) == 2
    assert api.deploy  # the command's API function


def test_cli_deploy_text_fits_and_lines_up(capsys):
    from test_text_output import misaligned, too_wide

    assert main(["deploy", "llama3-8b", "--hardware", "c8g.16xlarge", "--slo-ttft", "10s", "--slo-tpot", "200ms",
                 "--weights", "q4_0", "--requests", "50"]) == 0
    text = capsys.readouterr().out
    assert "best" in text and "Pareto" in text
    assert not too_wide(text) and not misaligned(text), (too_wide(text), misaligned(text)[:3])


def test_the_best_deployment_carries_its_interval_each_end_simulated(p5):
    """Each end of the serving interval gets its own capacity search: a slower engine serves less, a faster more, and
    the cost per token moves the other way; the point itself lies inside."""
    b, best, iv = p5.bounds, p5.best, p5.interval
    assert iv is not None and iv.low < 1 < iv.high and not p5.interval_note
    lo, hi = b["qps"]
    assert lo < best.qps < hi
    lo_c, hi_c = b["cost_per_million_output_tokens_usd"]
    assert lo_c < best.cost_per_million_output_tokens_usd < hi_c
    # queues and the TPOT target are not linear in speed, but capacity moves with it
    assert hi / best.qps > 1.1 and best.qps / lo > 1.1
    d = api.deployment.outcome_dict(p5)
    assert d["best"]["qps_low"] == lo and d["best"]["cost_per_million_output_tokens_usd_high"] == hi_c
    assert d["interval"]["kind"] == iv.kind


def test_an_interval_whose_work_budget_is_spent_is_unavailable_not_guessed(p5):
    from flopcast.plan import deploy_interval as ends
    from flopcast.simulate.serving.budget import WorkBudget

    cost = lambda *a: D._costs(p5.system, *a)  # noqa: E731
    b, why = ends.ends(p5.system, p5.best, ("512", "128"), SLO, None, 300, 0, p5.interval, cost, D.capacity,
                        WorkBudget(10))
    assert b == {} and "budget" in why
    b, why = ends.ends(p5.system, p5.best, ("512", "128"), SLO, None, 300, 0, None, cost, D.capacity)
    assert b == {} and why
