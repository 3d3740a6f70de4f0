"""serve --find-capacity's 80% interval: the capacity searched again at each end of the serving interval's engine
speed (api/serving._capacity_ends), the rates at each end's capacity beside it."""

import json

from flopcast import api
from flopcast.api import serving as sv
from flopcast.cli import main


def test_capacity_is_found_again_at_each_end_and_holds_the_point(monkeypatch):
    r = api.serve("llama3-8b", "p5.48xlarge", chips=1, find_capacity=True, requests=200)
    lo, hi = r.bounds["capacity_qps"]
    iv = r.interval
    assert iv.low < 1 < iv.high
    # a slower engine serves fewer requests at the same SLOs, a faster one more; not in proportion (queues, TPOT)
    assert lo < r.capacity_qps < hi
    clo, chi = r.bounds["cost_per_million_output_tokens_usd"]
    assert clo < r.result.cost_per_million_output_tokens_usd < chi
    d = r.to_dict()
    assert d["capacity_qps_low"] == lo and d["capacity_qps_high"] == hi
    assert "each end's engine speed" in " ".join(r.assumptions)


def test_an_end_whose_budget_runs_out_is_unavailable(monkeypatch):
    monkeypatch.setattr(sv, "CAPACITY_END_WORK", 10)
    r = api.serve("llama3-8b", "p5.48xlarge", chips=1, find_capacity=True, requests=200)
    assert r.bounds == {} and "unavailable" in " ".join(r.assumptions)


def test_the_json_of_serve_find_capacity_carries_the_capacity_interval(capsys):
    assert main(["serve", "llama3-8b", "-H", "p5.48xlarge", "--chips", "1", "--find-capacity", "--requests", "200",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["capacity_qps_low"] < d["capacity_qps"] < d["capacity_qps_high"]


def test_compare_serve_carries_the_best_deployments_capacity_interval():
    r = api.compare("llama3-8b", "p5.48xlarge", serve=True, weights="bf16", kv_dtype="bf16")
    p = r.to_dict()["systems"]["p5.48xlarge"]
    assert p["capacity_qps_low"] < p["capacity_qps"] < p["capacity_qps_high"]
    assert p["cost_per_million_output_tokens_usd_low"] < p["cost_per_million_output_tokens_usd"] \
        < p["cost_per_million_output_tokens_usd_high"]
