"""Serving simulator: event ordering, determinism, Little's law, SLOs, memory and preemption."""

import numpy as np
import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.errors import FlopcastError
from flopcast.simulate import serving as S
from flopcast.simulate.events import Engine


@pytest.fixture(scope="module")
def h100():
    return inf.deployment(catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge"), chips=1, tp=1)


def _reqs(q, n=600, seed=0, i="uniform:128:512", o="uniform:64:256"):
    return S.poisson_requests(q, np.random.default_rng(seed), n=n, input_tokens=i, output_tokens=o)


def test_engine_orders_by_time_then_priority_then_sequence():
    e = Engine()
    seen = []
    e.at(2.0, lambda e: seen.append("t2"))
    e.at(1.0, lambda e: seen.append("arrival"), priority=S.ARRIVAL)
    e.at(1.0, lambda e: seen.append("end-a"), priority=S.END)
    e.at(1.0, lambda e: seen.append("end-b"), priority=S.END)
    e.run()
    assert seen == ["end-a", "end-b", "arrival", "t2"]
    with pytest.raises(ValueError):
        e.at(0.5, lambda e: None)


def test_same_seed_same_events(h100):
    a = S.simulate(h100, _reqs(10, n=200, seed=3), record=True)
    b = S.simulate(h100, _reqs(10, n=200, seed=3), record=True)
    c = S.simulate(h100, _reqs(10, n=200, seed=4), record=True)
    assert a.events == b.events and a == b
    assert a.events != c.events


def test_littles_law_on_a_steady_run(h100):
    r = S.simulate(h100, _reqs(8, n=3000))
    assert r.completed == 3000
    assert r.mean_in_system == pytest.approx(r.arrival_rate_per_s * r.mean_e2e_s, rel=0.05)


def test_slo_attainment_falls_as_qps_rises(h100):
    cfg = S.ServingConfig(slo_ttft_s=0.5, slo_tpot_s=0.02)
    att = [S.simulate(h100, _reqs(q, n=400), cfg).slo_attainment for q in (2, 10, 20, 40, 80)]
    assert all(a >= b for a, b in zip(att, att[1:]))
    assert att[0] > 0.9 and att[-1] < 0.5


@pytest.mark.parametrize("sched", list(S.Scheduler))
def test_every_scheduler_completes_all(h100, sched):
    r = S.simulate(h100, _reqs(5, n=200), S.ServingConfig(scheduler=sched))
    assert r.completed == 200 and r.ttft_s["p50"] > 0 and r.tpot_s["p50"] > 0


def test_static_batching_has_worse_ttft_than_continuous(h100):
    st = S.simulate(h100, _reqs(5, n=300), S.ServingConfig(scheduler=S.Scheduler.STATIC))
    co = S.simulate(h100, _reqs(5, n=300), S.ServingConfig(scheduler=S.Scheduler.CONTINUOUS))
    assert st.ttft_s["p90"] > co.ttft_s["p90"]


@pytest.mark.parametrize("sched", [S.Scheduler.CONTINUOUS, S.Scheduler.CHUNKED])
def test_kv_memory_limit_preempts_and_still_completes(sched):
    d = inf.deployment(catalog.load_model("llama2-7b"), catalog.load_system("inf2.xlarge"), weights="bf16")
    cap = inf.kv_capacity_tokens(d)
    reqs = S.poisson_requests(50, np.random.default_rng(0), n=80, input_tokens="512", output_tokens="2000")
    assert 80 * 2512 > 2 * cap
    r = S.simulate(d, reqs, S.ServingConfig(scheduler=sched))
    assert r.preemptions > 0 and r.completed == 80


def test_replicas_and_router(h100):
    one = S.simulate(h100, _reqs(30, n=400), S.ServingConfig(replicas=1))
    two = S.simulate(h100, _reqs(30, n=400), S.ServingConfig(replicas=2, routing=S.Routing.ROUND_ROBIN))
    assert two.ttft_s["p90"] <= one.ttft_s["p90"]


def test_find_capacity_brackets_the_slo(h100):
    cfg = S.ServingConfig(slo_ttft_s=0.5, slo_tpot_s=0.02)
    q, r = S.find_capacity(h100, cfg, requests=200, iterations=6)
    assert q > 0 and r.slo_attainment >= 0.9
    above = S.simulate(h100, S.poisson_requests(q * 2, np.random.default_rng(0), n=200, input_tokens="512",
                                                output_tokens="128"), cfg)
    assert above.slo_attainment < 0.9


def test_trace_and_length_parsing(tmp_path):
    rng = np.random.default_rng(0)
    assert list(S.lengths("7", 3, rng)) == [7, 7, 7]
    u = S.lengths("uniform:10:20", 1000, rng)
    assert u.min() >= 10 and u.max() <= 20
    ln = S.lengths("lognormal:300:0.5", 20000, rng)
    assert ln.mean() == pytest.approx(300, rel=0.05)
    with pytest.raises(FlopcastError, match="--output-tokens"):
        S.lengths("normal:1:2", 3, rng, "--output-tokens")
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,input_tokens,output_tokens\n0.5,100,10\n0.1,200,20\n")
    notes = []
    t = S.read_trace(p, notes)
    assert list(t.arrival_s) == [0.1, 0.5] and list(t.input_tokens) == [200, 100]
    assert notes == ["trace rows sorted by arrival_s: 2 of 2 were out of order"]
    p.write_text("arrival_s,input_tokens,output_tokens\n0.1,100,10\n0.5,200,20\n")
    notes = []
    S.read_trace(p, notes)
    assert notes == []
    p.write_text("when,in\n1,2\n")
    with pytest.raises(FlopcastError, match="--trace"):
        S.read_trace(p)


def test_cli_infer_and_serve():
    from click.testing import CliRunner

    from flopcast.cli import cli as group

    run = CliRunner().invoke
    r = run(group, ["infer", "llama3-8b", "--hardware", "c8g.16xlarge", "--weights", "q4_0"])
    assert r.exit_code == 0 and "tokens/s" in r.output and "graviton4" in r.output
    r = run(group, ["serve", "llama3-8b", "--hardware", "p5.48xlarge", "--chips", "1", "--qps", "5",
                    "--requests", "50", "--json"])
    assert r.exit_code == 0 and '"slo_attainment"' in r.output
    r = run(group, ["serve", "llama3-8b", "--hardware", "p5.48xlarge", "--qps", "5", "--scheduler", "fifo"])
    assert isinstance(r.exception, FlopcastError) and "--scheduler" in str(r.exception)


def test_capacity_is_sustainable_under_lenient_slos(h100):
    """With SLOs a finite burst could meet, capacity still stops where the backlog grows."""
    cfg = S.ServingConfig(slo_ttft_s=30.0, slo_tpot_s=1.0)
    q, r = S.find_capacity(h100, cfg, requests=100, iterations=6, max_requests=20_000)
    assert 0 < q < 1e5
    # at the capacity the replica keeps up: completions per second match arrivals per second
    assert r.throughput_requests_per_s > 0.8 * r.arrival_rate_per_s


def test_compare_serving_cli_ranks_by_cost(capsys):
    import json

    from flopcast.cli import main

    rc = main(["compare", "llama3-8b", "--hardware", "c7g.16xlarge,p5.48xlarge", "--serve", "--chips", "1",
               "--requests", "60", "--slo-ttft", "20s", "--slo-tpot", "1s", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["workload"] == "serve"
    systems = out["systems"]
    assert set(systems) == {"c7g.16xlarge", "p5.48xlarge"}
    for v in systems.values():
        assert v["capacity_qps"] > 0 and v["slo_attainment"] >= 0.9
        assert v["cost_per_million_output_tokens_usd"] > 0
    # one H100 out-serves one Graviton3 socket on an 8B model
    assert systems["p5.48xlarge"]["capacity_qps"] > systems["c7g.16xlarge"]["capacity_qps"]


def test_compare_serving_rejects_training_options(capsys):
    from flopcast.cli import main

    assert main(["compare", "llama3-8b", "--hardware", "p5.48xlarge", "--serve", "--pp", "2"]) == 2
    assert "--pp" in capsys.readouterr().err
    assert main(["compare", "llama3-8b", "--hardware", "p5.48xlarge", "--weights", "q4_0", "--chips", "8"]) == 2
    assert main(["compare", "llama3-8b", "--hardware", "p5.48xlarge", "--serve", "--weights", "q9_9"]) == 2


@pytest.mark.parametrize("system", ["inf2.48xlarge", "p5.48xlarge"])
def test_decoders_read_what_infer_predicts(system):
    """The simulator's decode step reads what infer's roofline reads: the live context on dynamic-shape
    engines, the whole KV window on static-shape (Neuron) ones."""
    d = inf.deployment(catalog.load_model("llama3-8b"), catalog.load_system(system), chips=2, tp=2)
    # 16 requests at once, short prompts, long answers: one prefill, then 16 decoders whose KV reads matter
    reqs = S.Requests(np.zeros(16), np.full(16, 256), np.full(16, 4096))
    sim = S.simulate(d, reqs, S.ServingConfig())
    pred = inf.predict(d, 16, 256, 4096)
    assert sim.tpot_s["p50"] == pytest.approx(pred.tpot_s, rel=0.03)


def test_percentiles_of_samples_of_one_length_in_one_call_are_each_sample_s():
    """metrics._pcts: one np.percentile along the rows of the stacked samples, the same floats as one call each."""
    from flopcast.simulate.serving import metrics

    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 10, 101, 400):
        xs = [rng.lognormal(0.0, 2.0, n), np.round(rng.lognormal(0.0, 1.0, n), 1), rng.exponential(1e-3, n)]
        assert metrics._pcts(*xs) == [metrics._pct(x) for x in xs]
    odd = [rng.random(5), rng.random(4), np.array([])]
    assert metrics._pcts(*odd) == [metrics._pct(x) for x in odd]
