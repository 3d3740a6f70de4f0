"""Serving sweeps: the `serving:` block, one deployment search per scenario, rows equal to `flopcast deploy`."""

import textwrap

import pytest

from flopcast import api
from flopcast.errors import FlopcastError
from flopcast.sweep import hardware, spec, table

# inf2.xlarge (one Inferentia2) keeps each deployment search under a second
SERVE = """
name: serve-tiny
models: [llama3-8b]
systems: [inf2.xlarge]
what_if:
  memory_bandwidth: [1x, 2x]
serving:
  slo_ttft: 2s
  slo_tpot: [50ms, 1ms]
  weights: bf16
  kv_dtype: bf16
  requests: 100
"""


def _file(tmp_path, text, name="serve.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_serving_block_expands_and_is_checked(tmp_path):
    s = spec.read(_file(tmp_path, SERVE))
    assert len(s.scenarios) == 2 * 2
    assert {x.serve.slo_tpot_s for x in s.scenarios} == {0.05, 0.001}
    assert all(x.chips is None and x.objective == "cost_at_slo" for x in s.scenarios)
    assert len({x.id for x in s.scenarios}) == 4
    bad = {
        "serving:\n  slo_ttft: 2s\n  slo_tpot: 50ms\n  slo_ttf: 1s\n": "did you mean 'slo_ttft'",
        "serving:\n  slo_ttft: 2s\n": "slo_tpot",
        "serving:\n  slo_ttft: 2 parsecs\n  slo_tpot: 50ms\n": "serving.slo_ttft '2 parsecs' is not a number",
        "serving:\n  slo_ttft: 2s\n  slo_tpot: 50ms\n  weights: fp7\n": "serving.weights 'fp7' is not a known format",
        "serving:\n  slo_ttft: 2s\n  slo_tpot: 50ms\n  kv_dtype: [bf16, fp5]\n":
            "serving.kv_dtype 'fp5' is not a known KV-cache type",
        "serving:\n  slo_ttft: 2s\n  slo_tpot: 50ms\n  output_tokens: lognormal:5\n": "serving.output_tokens",
        "serving:\n  slo_ttft: 2s\n  slo_tpot: 50ms\nchips: 8\n": "'chips' is a training field",
        "serving:\n  slo_ttft: 2s\n  slo_tpot: 50ms\nobjective: cost\n": "'objective' is a training field",
        "": "field 'chips' is missing",
    }
    for text, words in bad.items():
        with pytest.raises(FlopcastError, match=words):
            spec.read(_file(tmp_path, "models: [llama3-8b]\nsystems: [inf2.xlarge]\n" + text))


def test_serving_rows_equal_deploy_and_resume(tmp_path):
    f, out = _file(tmp_path, SERVE), tmp_path / "serve.csv"
    run = api.sweep(f, out, workers=1)
    assert run.counts == {"ok": 2, "misses the SLOs": 2}
    for row in run.rows:
        if row["slo_tpot_s"] == 0.001:  # no deployment reaches 1 ms per token: the row says so
            assert row["status"] == "misses the SLOs" and "misses the SLOs alone" in row["error"]
            assert row["cost_per_million_output_tokens_usd"] is None
            continue
        system = hardware.variant(row["system"], {"memory_bandwidth": row["what_if.memory_bandwidth"]})
        ref = api.deploy("llama3-8b", system, slo_ttft="2s", slo_tpot="50ms", weights="bf16", kv_dtype="bf16",
                         requests=100).to_dict()["systems"][system.id]["best"]
        assert row["status"] == "ok" and row["deployment"] == ref["label"]
        assert row["cost_per_million_output_tokens_usd"] == ref["cost_per_million_output_tokens_usd"]
        assert row["replica_capacity_qps"] == ref["replica_capacity_qps"] and row["tpot_p90_s"] == ref["tpot_s"]["p90"]
    fast, slow = sorted((r for r in run.rows if r["status"] == "ok"), key=lambda r: -r["memory_bandwidth_si"])
    assert fast["output_tokens_per_s_per_chip"] >= slow["output_tokens_per_s_per_chip"]  # decode is bandwidth-bound
    back = table.read(out)
    assert [r["status"] for r in back] == [r["status"] for r in run.rows]
    again = api.sweep(f, out, workers=1)
    assert again.ran == 0 and again.skipped == 4


def test_serving_report_draws_cost_per_token(tmp_path):
    from flopcast.sweep import figures

    rows = [{"status": "ok", "model": "m", "system": "s", "chips": None, "objective": "cost_at_slo",
             "slo_ttft_s": 2.0, "slo_tpot_s": 0.05, "input_tokens": "512", "output_tokens": "128", "qps": None,
             "what_if.memory_bandwidth": f"{b}x", "memory_bandwidth_si": b * 1e12, "what_if.peak_flops.bf16": f"{p}x",
             "peak_flops.bf16_si": p * 1e14, "output_tokens_per_s_per_chip": 100.0 * b,
             "cost_per_million_output_tokens_usd": 10.0 / b, "chip_hours_per_million_output_tokens": 1.0 / b}
            for b in (1, 2) for p in (1, 2)]
    es = [e for _, e in figures.elasticities(rows, "memory_bandwidth")]
    assert es == pytest.approx([-1.0, -1.0])  # chip time per token halves with twice the bandwidth
    assert figures.elasticities(rows, "peak_flops.bf16") and all(
        e == pytest.approx(0.0) for _, e in figures.elasticities(rows, "peak_flops.bf16"))
    heat = figures.heatmap_figures(rows)
    assert len(heat) == 1 and "USD per million output tokens" in heat[0].title
