"""Mechanisms behind the serving holdout (validation/published_inference_runs.csv), each checked without the
measured figures: what the source ran, read from its code or its row, changes the prediction in the stated way."""

import csv
from dataclasses import replace

import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.errors import FlopcastError
from flopcast.validate import benchmark as vb
from flopcast.validate import inference as vi
from flopcast.validate import training as vt

HOLDOUT = vt.VALIDATION_DIR / "published_inference_runs.csv"


def _rows():
    with open(HOLDOUT, newline="") as f:
        return list(csv.DictReader(f))


def test_mistral_v02_rows_attend_to_the_whole_context():
    # The Neuron tables ran Mistral-7B-Instruct-v0.2, whose config has no sliding window (sliding_window: null);
    # v0.1's 4,096-token window would cap the KV each decode step reads at an 8,192-token context.
    v02 = [r for r in _rows() if "Mistral-7B-Instruct-v0.2" in r["notes"]]
    assert len(v02) == 8 and {r["model"] for r in v02} == {"mistral-7b-v0.2"}
    old, new = catalog.load_model("mistral-7b"), catalog.load_model("mistral-7b-v0.2")
    assert old.sliding_window and not new.sliding_window
    assert (old.layers, old.hidden, old.kv_heads, old.ffn_hidden) == (new.layers, new.hidden, new.kv_heads,
                                                                      new.ffn_hidden)
    system = catalog.load_system("inf2.48xlarge")
    t_old, _ = inf.decode_time(inf.deployment(old, system), 8, 16384)
    t_new, _ = inf.decode_time(inf.deployment(new, system), 8, 16384)
    assert float(t_new) > 1.2 * float(t_old)
    t_old, _ = inf.decode_time(inf.deployment(old, system), 8, 2048)
    t_new, _ = inf.decode_time(inf.deployment(new, system), 8, 2048)
    assert float(t_new) == pytest.approx(float(t_old))  # inside the window the two are the same model


def _row(run_id):
    return next(r for r in _rows() if r["run_id"] == run_id)


def test_a_prompt_pads_to_the_context_buckets_the_server_compiled():
    # NxD Inference tutorial for Llama-3.1-405B: --context-encoding-buckets 2048 4096 10240 12288, seq-len 12800;
    # the 10,000-token prompt runs the 10,240 graph, not the default power-of-two bucket (capped at 12,800)
    row = _row("pt-2")
    assert vb.context_buckets(row) == (2048, 4096, 10240, 12288)
    d, b, i, o, _ = vi.configure(row)
    stated, _ = vb.load_of(row, b)
    default, _ = vb.load_of({**row, "context_buckets": ""}, b)
    ttft = [vb.simulate_row(d, load, b, i, o).ttft_s["p50"] for load in (stated, default)]
    # the pass's dense work scales with the tokens (10,240 / 12,800) and its attention with their square
    assert (10240 / 12800) ** 2 < ttft[0] / ttft[1] < 0.85
    assert "context-encoding buckets 2048 4096 10240 12288" in vb.describe(stated)


@pytest.mark.parametrize("cell", ["ten", "0 512", "512 999999999"])
def test_bad_context_buckets_name_what_is_valid(cell):
    with pytest.raises(FlopcastError, match="context_buckets .* is not valid; valid: prompt lengths"):
        vb.context_buckets({"context_buckets": cell})


def test_repacked_q4_0_prompts_run_the_aarch64_gemm_kernels():
    # pg-1 states llama.cpp repacked its Q4_0 weights at load (the CPU_AARCH64 buffer); the interleaved-block GEMM
    # kernels evaluate prompts 263.05 / 150.64 times the vec_dot kernel the llama.cpp fit rests on (PR 5780)
    row = _row("pg-1")
    assert "repack" in row["engine"].lower() and row["weights"] == "q4_0"
    d, b, i, o, notes = vi.configure(row)
    plain, _, _, _, _ = vi.configure({**row, "engine": "llama.cpp"})
    assert d.gemm_speedup == pytest.approx(263.05 / 150.64) and plain.gemm_speedup == 1.0
    assert any("repacked" in n for n in notes)
    fast, slow = (float(inf.prefill_time(x, b, i)[0]) for x in (d, plain))
    assert 1.5 < slow / fast <= 263.05 / 150.64 + 1e-9  # a 14-token prompt of an 8B model is compute-bound
    # decode streams the weights: the kernel does not change the bandwidth-bound step
    assert float(inf.decode_time(d, 1, 64)[0]) == pytest.approx(float(inf.decode_time(plain, 1, 64)[0]), rel=0.02)
    # the interleaved formats as stored, and only on a CPU with the int8 matrix instructions the gain was measured on
    system, model = catalog.load_system("r8g.16xlarge"), catalog.load_model("llama3-8b")
    assert inf.deployment(model, system, weights="q4_0_4_8").gemm_speedup > 1.0
    assert inf.deployment(model, system, weights="q4_0").gemm_speedup == 1.0
    no_i8mm = replace(system, chip=replace(system.chip, isa=("neon", "dotprod")))  # a Graviton2-like core
    assert inf.deployment(model, no_i8mm, weights="q4_0_4_8").gemm_speedup == 1.0
