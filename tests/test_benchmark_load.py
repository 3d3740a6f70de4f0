"""Serving rows replayed as their benchmark ran: closed-loop clients, static shapes, the load columns."""

import math

import numpy as np
import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.errors import FlopcastError
from flopcast.model.efficiency import MEMORY_CEILING
from flopcast.simulate import serving as S
from flopcast.simulate.serving.simulation import Simulation
from flopcast.validate import benchmark as vb
from flopcast.validate.inference import validate_inference


def _neuron(system="trn2.3xlarge", model="llama3-8b"):
    return inf.deployment(catalog.load_model(model), catalog.load_system(system), chips=1, tp=1,
                          efficiency=inf.PRIORS["neuronx-v3"])


def _gpu():
    return inf.deployment(catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge"), chips=1, tp=1,
                          efficiency=inf.PRIORS["gpu"])


def test_one_client_sends_one_request_at_a_time():
    d = _gpu()
    r = S.closed_loop(d, 1, [512] * 5, [64] * 5)
    assert r.completed == 5 and r.mean_in_system == pytest.approx(1.0)
    # each request alone: TTFT is its own prefill pass, the next request sent when it finished
    pre = float(inf.step_time(d, 512, 1, 512, 512 * 513 / 2)[0])
    assert r.ttft_s["p50"] == pytest.approx(pre, rel=1e-9)
    assert r.throughput_requests_per_s == pytest.approx(1.0 / r.mean_e2e_s, rel=1e-6)


def test_closed_loop_keeps_c_requests_in_the_system_littles_law():
    d = _gpu()
    rng = np.random.default_rng(3)
    n = 400
    r = S.closed_loop(d, 16, rng.integers(400, 600, n), rng.integers(100, 140, n))
    assert r.completed == n
    assert r.mean_in_system == pytest.approx(16, rel=0.05)
    assert r.throughput_requests_per_s * r.mean_e2e_s == pytest.approx(16, rel=0.05)  # L = lambda W


def test_duration_stops_sending_and_every_request_sent_finishes():
    r = S.closed_loop(_gpu(), 4, [256] * 1000, [32] * 1000, duration_s=1.0)
    assert 4 < r.requests < 1000 and r.completed == r.requests


def test_fast_forwarded_decode_equals_step_by_step(monkeypatch):
    d = _neuron()
    rng = np.random.default_rng(0)
    i, o = rng.integers(1350, 1651, 96), rng.integers(230, 271, 96)
    for config in (S.ServingConfig(max_seqs=8), S.ServingConfig(max_seqs=8, static_batch=8, static_seq_len=4096)):
        fast = S.closed_loop(d, 8, i, o, config)
        monkeypatch.setattr(Simulation, "decode_run", lambda self, rep: 1)
        slow = S.closed_loop(d, 8, i, o, config)
        monkeypatch.undo()
        assert fast.iterations == slow.iterations
        for key in ("mean", "p50", "p99"):
            assert fast.ttft_s[key] == pytest.approx(slow.ttft_s[key], rel=1e-9)
            assert fast.tpot_s[key] == pytest.approx(slow.tpot_s[key], rel=1e-9)


def test_static_shapes_pad_the_batch_and_the_prompt():
    d = _neuron()
    live = S.closed_loop(d, 1, [1500] * 5, [250] * 5, S.ServingConfig(max_seqs=32))
    static = S.closed_loop(d, 1, [1500] * 5, [250] * 5, S.ServingConfig(max_seqs=32, static_batch=32,
                                                                          static_seq_len=4096))
    assert static.tpot_s["mean"] > 1.3 * live.tpot_s["mean"]  # 32 rows over 4,096 KV positions each step
    assert static.ttft_s["mean"] > live.ttft_s["mean"]  # the prompt padded to its 2,048-token bucket
    sim = Simulation(d, S.Requests(np.zeros(1), np.array([1]), np.array([1])),
                     S.ServingConfig(static_seq_len=4096), None, 0, False)
    assert [sim.prefill_tokens(t) for t in (1, 100, 129, 1500, 2048, 4000, 5000)] == [128, 128, 256, 2048, 2048,
                                                                                      4096, 5000]
    gpu = Simulation(_gpu(), S.Requests(np.zeros(1), np.array([1]), np.array([1])),
                     S.ServingConfig(static_seq_len=4096), None, 0, False)
    assert gpu.prefill_tokens(1500) == 1500  # dynamic shapes: no padding


def test_moe_kernel_costs_only_on_static_shape_engines():
    m = catalog.load_model("qwen3-30b-a3b")
    eff = inf.PRIORS["neuronx-v3"]
    neuron = inf.deployment(m, catalog.load_system("trn2.3xlarge"), chips=1, tp=1, efficiency=eff)
    blocks = float(inf.roofline.moe_block_time(neuron, 2048))
    e = m.moe
    # every rank runs every block: 512 token rows gathered, read and written back, and its expert's weights (I split
    # over the 4 ranks), each physical core of the LNC=2 pair moving half, or issuing its transfers if longer
    per_block = max(inf.roofline.moe_block_transfers(neuron) * eff.moe_transfer_s,
                    (3 * 512 * m.hidden * 2 + 3 * m.hidden * (e.expert_ffn / 4) * 2) / 2 / eff.moe_block_bytes_per_s)
    n = np.ceil((2048 * e.topk - (e.experts - 1)) / 512) + e.experts - 1
    assert blocks == pytest.approx(m.moe_layers * n * per_block)
    assert float(inf.roofline.moe_block_time(neuron, 1)) == pytest.approx(m.moe_layers * e.topk
                                                                         * eff.moe_expert_overhead_s)
    gpu = inf.deployment(m, catalog.load_system("p5.48xlarge"), chips=1, tp=1, efficiency=eff)
    assert float(inf.roofline.moe_block_time(gpu, 2048)) == 0.0
    assert "moe/blocks" not in inf.step_time(_neuron(), 2048, 1, 2048, 2048)[1]  # dense model: no such part


@pytest.mark.parametrize("cells, word", [({"load": "burst"}, "load"), ({"load": "concurrency"}, "concurrency"),
                                         ({"load": "rate"}, "request_rate_per_s"),
                                         ({"load": "synchronous", "statistic": "p42"}, "statistic"),
                                         ({"load": "throughput", "server_batch": "0"}, "server_batch")])
def test_bad_load_cells_are_one_line_errors(cells, word):
    with pytest.raises(FlopcastError, match=word):
        vb.load_of(cells, 1)


def test_load_columns_read():
    load, notes = vb.load_of({"load": "throughput", "server_batch": "8", "max_seq_len": "4096",
                              "statistic": "p50", "load_tool": "guidellm"}, 8)
    assert (load.load, load.clients, load.server_batch, load.statistic) == (vb.Load.THROUGHPUT, 8, 8,
                                                                            vb.Statistic.P50)
    assert any("8 closed-loop clients" in n for n in notes)
    assert vb.load_of({"load": ""}, 4) == (None, []) and vb.load_of({"load": "batch"}, 4)[0] is None
    rate, _ = vb.load_of({"load": "rate", "request_rate_per_s": "2.5", "duration_s": "10"}, 1)
    assert rate.rate_per_s == 2.5 and rate.duration_s == 10


def test_a_guidellm_row_without_load_columns_runs_as_the_serving_readme_states():
    """The shared more_inference_runs.csv states no load columns; its README says a guidellm row of batch 1 is a
    synchronous run and a larger batch a throughput run keeping the server's compiled batch in flight."""
    engine = {"engine": "vLLM + optimum-neuron, guidellm 0.1.0"}
    sync, notes = vb.load_of(engine, 1)
    assert (sync.load, sync.clients, sync.server_batch) == (vb.Load.SYNCHRONOUS, 1, 0)
    assert any("guidellm synchronous run" in n for n in notes)
    full, notes = vb.load_of(engine, 32)
    assert (full.load, full.clients, full.server_batch) == (vb.Load.THROUGHPUT, 32, 32)
    assert vb.load_of({"engine": "TGI", "load_tool": "guidellm"}, 4)[0].load == vb.Load.THROUGHPUT
    assert vb.load_of({"engine": "transformers-neuronx"}, 8) == (None, [])  # no tool named: one static batch
    assert vb.load_of({**engine, "load": "batch"}, 8) == (None, [])  # a stated load wins


def test_more_inference_runs_every_row_simulated_as_it_ran():
    res = validate_inference("more_inference_runs")
    ok = [r for r in res["rows"] if r["status"] == "ok"]
    assert res["summary"]["n_skipped"] == 0 and len(ok) == 64 + 36
    # the guidellm rows simulated under their load; optimum-neuron's static-batch rows (di-23 to di-40) on the
    # shapes they compiled
    how = ("simulated as the benchmark ran", "static batch on compiled shapes")
    assert all(any(a.startswith(how) for a in r["assumed"]) for r in ok)
    assert sum(any(a.startswith(how[1]) for a in r["assumed"]) for r in ok) == 36


def test_every_load_column_is_documented_and_in_the_shipped_file():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "validation"
    readme = (root / "README.md").read_text()
    header = (root / "more_inference_runs.csv").read_text().splitlines()[0].split(",")
    for col in vb.LOAD_COLUMNS:
        assert f"| {col}" in readme or f", {col} |" in readme or f"{col}, " in readme, col
        assert col in header, col


def test_prefix_caching_in_infer_cuts_prefill_and_kv():
    d = _gpu()
    plain = inf.predict(d, 16, 2048, 128)
    cached = inf.predict(d, 16, 2048, 128, prefix_tokens=1536)
    assert inf.predict(d, 16, 2048, 128, prefix_tokens=0) == plain
    # 3/4 of the prompt cached: the GEMM work of prefill falls to 1/4; attention still spans the whole prompt
    assert 0.2 < cached.prefill_s / plain.prefill_s < 0.45
    kv = plain.memory_bytes["kv_cache"] / 16 / (2048 + 128)
    assert cached.memory_bytes["kv_cache"] == pytest.approx(kv * (16 * (2048 + 128 - 1536) + 1536))
    assert cached.max_batch > 2 * plain.max_batch
    assert cached.tpot_s == plain.tpot_s  # decode reads the whole context either way
    assert any("prefix caching" in a for a in cached.assumptions)


def test_trace_prefix_column_caches_each_request(tmp_path):
    d = _gpu()
    rows = ["arrival_s,input_tokens,output_tokens,prefix_tokens"]
    rows += [f"{0.05 * k:.3f},2048,64,{1024 if k % 2 else 0}" for k in range(60)]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    notes = []
    reqs = S.read_trace(tmp_path / "t.csv", notes)
    assert reqs.prefix_tokens.tolist()[:4] == [0, 1024, 0, 1024] and any("25.0%" in n for n in notes)
    with_prefix = S.simulate(d, reqs)
    without = S.simulate(d, S.Requests(reqs.arrival_s, reqs.input_tokens, reqs.output_tokens))
    assert with_prefix.ttft_s["mean"] < without.ttft_s["mean"]
    # one prefix for every request from the trace equals the config's --prefix-tokens
    same = S.Requests(reqs.arrival_s, reqs.input_tokens, reqs.output_tokens, np.full(60, 512))
    a = S.simulate(d, same)
    b = S.simulate(d, S.Requests(reqs.arrival_s, reqs.input_tokens, reqs.output_tokens),
                   S.ServingConfig(prefix_tokens=512))
    assert a.ttft_s == b.ttft_s and a.tpot_s == b.tpot_s


def test_serving_plot_shades_the_interval():
    from flopcast.cost.uncertainty import Interval
    from flopcast.report import plots

    d = _gpu()
    config = S.ServingConfig()
    assert plots.serving_band(d, config, [2.0], None) == []
    i = Interval(0.8, 0.7, 1.3, "serving/own/dense", 10)
    band = plots.serving_band(d, config, [2.0, 8.0], i, requests=40)
    for _, slow, fast in band:
        assert slow.e2e_s["p50"] > fast.e2e_s["p50"]
    pytest.importorskip("matplotlib")
    pts = plots.serving_sweep(d, config, [2.0, 8.0], requests=40)
    chart = plots.serving_figure(pts, band=band)
    assert "Shaded: the 80% prediction interval" in chart.caption


def test_the_serving_plots_band_holds_its_line_where_latency_is_not_monotone_in_speed():
    """An overloaded engine's median can lie outside both ends' runs (fuzz seed 2701, case 10531): the band spans
    the central run too, as the figure's printed interval does; a percentile no run reached is a gap."""
    from types import SimpleNamespace

    from flopcast.report.plots import serving as sp

    def run(p50, p90):
        return SimpleNamespace(e2e_s={"p50": p50}, ttft_s={"p90": p90}, tpot_s={"p90": p90})

    class Axes:
        def __init__(self):
            self.fills = []

        def fill_between(self, x, lo, hi, **kw):
            self.fills.append((list(lo), list(hi)))

    ax1, ax2 = Axes(), Axes()
    band = [(1.0, run(1.82, 2.0), run(1.18, 1.0)), (2.0, run(None, None), run(None, None))]
    centers = {1.0: run(1.97, 3.0), 2.0: run(None, None)}
    assert sp._bands(ax1, ax2, [10.0, 20.0], band, centers) == "80%"
    (lo, hi), = ax1.fills
    assert lo[0] == 1.18 and hi[0] == 1.97 and math.isnan(lo[1]) and math.isnan(hi[1])
    assert ax2.fills[0][1][0] == 3000.0  # TTFT p90 in ms, the central run's


def test_serving_fit_on_both_files_guard():
    s = validate_inference("inference")["summary"]
    assert s["n_ok"] == 151 and s["n_skipped"] == 0
    # measured 13.7% in sample (median 10.3%, bias +1.8%) with the shipped parameters fitted on both files
    assert s["mape_pct"] <= 14.2
    assert abs(s["bias_pct"]) <= 10.0
    assert s["by_hardware"]["trainium2"]["mape_pct"] <= 25.0  # 19.1%: it missed by 2-70x before (README)
    assert s["by_hardware"]["inferentia2"]["mape_pct"] <= 25.0  # 10.7%


def test_moe_block_rate_prior_is_one_dma_engine():
    # without Neuron MoE rows the block rate stays at its prior: one DMA engine's 27.2 GB/s (Neuron docs) for each
    # physical core, which moves its H / LNC slice of the block's rows and weights (a release from
    # NEURON_SPREAD_RELEASE on: the core's 16 engines, tests/test_moe_blocks.py)
    for fam in inf.STATIC_SHAPE_FAMILIES:
        assert inf.PRIORS[fam].moe_block_bytes_per_s == inf.NEURON_DMA_ENGINE_BYTES_PER_S == 27.2e9
    m = catalog.load_model("qwen3-235b-a22b")
    d = inf.deployment(m, catalog.load_system("trn2.48xlarge"), chips=16, tp=16, efficiency=inf.PRIORS["neuronx-v3"])
    per_block = float(inf.roofline.moe_block_time(d, 2048)) / m.moe_layers / inf.roofline.moe_blocks(2048, 128, 8)
    moved = 3 * 512 * 4096 * 2 + 3 * 4096 * (1536 / 64) * 2  # rows and weights of one rank (I / 64 ranks)
    assert per_block == pytest.approx(moved / 2 / 27.2e9)  # 0.24 ms a block at hidden 4,096: bandwidth-bound
    assert per_block > inf.roofline.moe_block_transfers(d) * inf.NEURON_DMA_TRANSFER_S  # 37 transfers, 48 us


def test_neuroncore_v3_without_rows_takes_v2_software_and_its_own_hardware():
    """A family without rows: software (per-layer, per-request, MoE kernel rates) from its kind's fitted engines,
    hardware fractions from its chip's own facts x the share of their chips' fractions those engines reach."""
    assert _neuron().family == "neuronx-v3"
    assert inf.deployment(catalog.load_model("llama3-8b"), catalog.load_system("inf2.48xlarge")).family == "neuronx"
    v2 = inf.EngineEfficiency(0.1, 0.45, 50e-6, 6e-3, 0.0, 4e-4, 4e-6, compute_basis=0.5, memory_basis=0.75)
    trn2 = catalog.load_chip("trainium2")
    eff, note = inf.family_efficiency({"neuronx": v2, "gpu": inf.PRIORS["gpu"]}, "neuronx-v3", trn2,
                                      catalog.calibration())
    assert (eff.layer_overhead_s, eff.request_overhead_s, eff.moe_block_bytes_per_s, eff.moe_expert_overhead_s) == \
        pytest.approx((v2.layer_overhead_s, v2.request_overhead_s, v2.moe_block_bytes_per_s, v2.moe_expert_overhead_s))
    own = inf.hardware_fractions(trn2, catalog.calibration())
    assert own == (1.0, MEMORY_CEILING)  # no training runs of its own, no measured matmul ceiling
    assert eff.compute == pytest.approx(own[0] * 0.1 / 0.5) and eff.memory == pytest.approx(own[1] * 0.45 / 0.75)
    assert eff.compute > v2.compute and "neuronx" in note and "own fractions" in note


def test_rate_loads_are_open_loop_constant_for_guidellm_poisson_otherwise():
    d = _gpu()
    cells = {"load": "rate", "request_rate_per_s": "4", "duration_s": "20"}
    constant, _ = vb.load_of({**cells, "load_tool": "guidellm"}, 1)
    poisson, _ = vb.load_of({**cells, "load_tool": "vllm-bench"}, 1)
    a = vb.simulate_row(d, constant, 1, 512, 64)
    b = vb.simulate_row(d, poisson, 1, 512, 64)
    assert a.requests == b.requests == 80
    assert a.arrival_rate_per_s == pytest.approx(4.0, rel=1e-9)  # even gaps of 0.25 s
    assert a.ttft_s["p99"] <= b.ttft_s["p99"]  # bursts queue; even gaps do not
    f = vb.figures(a, constant, 512)
    assert f["tpot_ms"] == pytest.approx(a.tpot_s["mean"] * 1e3)
    assert f["ttft_ms"] == pytest.approx(a.ttft_s["mean"] * 1e3)


def test_the_serving_schema_declares_every_load_column():
    """validate/benchmark.py reads these columns; the declared serving schema must know each (else a row that
    states its load is refused as having an unknown column)."""
    from flopcast.validate import benchmark, inference

    assert set(benchmark.LOAD_COLUMNS) <= set(inference.SERVING.columns)


def test_published_inference_runs_every_row_predicted_and_held_out():
    from flopcast.validate.rows import SHIPPED

    res = validate_inference("published_inference_runs")
    assert res["summary"]["n_skipped"] == 0
    assert {r["run_id"] for r in res["rows"] if r["status"] == "ok"} >= {"pt-1", "pt-2", "pi-inf2-1", "pi-trn1-40"}
    assert "published_inference_runs.csv" not in SHIPPED["inference"]  # the holdout stays out of the fit
