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


def test_mla_latent_projections_are_copied_on_every_tensor_parallel_rank():
    # NxD Inference's DeepSeek-V3 contrib model (neuronx-distributed-inference@4bcdc54, DeepseekV3Attention) makes
    # q_a_proj and kv_a_proj_with_mqa plain nn.Linear (every rank holds and runs them whole) beside the
    # ColumnParallel q_b_proj/kv_b_proj and RowParallel o_proj. At TP 64 that is 64 x 61 layers x 15.1 M weights
    # read by each decode step, 1.85 GB a rank; the row's decode gets slower by those bytes at the replica's rate.
    row = _row("pd-1")
    d, b, i, o, _ = vi.configure(row)
    assert d.shards == 64 and d.kv_replication == 64
    latent = 7168 * 1536 + 1536 + 7168 * 576 + 512
    assert d.latent_copies_params == 63 * 61 * latent
    flat = replace(d, model=replace(d.model, mla=None))  # a model without latents: no copies
    assert flat.latent_copies_params == 0
    t, parts = inf.decode_time(d, 1, i + o)
    one_copy = float(parts["attention/qkv"]) - d.latent_copies_params * 2 / d.memory_rate
    per_rank = 61 * latent * 2  # bytes each rank streams for its own copy
    assert per_rank == pytest.approx(1.847e9, rel=1e-3)
    assert 0 < one_copy < 0.1 * float(parts["attention/qkv"])  # the copies, not the shared weights, dominate
    # GQA/MHA models shard their projections: nothing is copied
    llama = inf.deployment(catalog.load_model("llama3-70b"), catalog.load_system("trn2.48xlarge"))
    assert llama.latent_copies_params == 0


def test_the_405b_row_counts_the_tokens_the_server_generated():
    # The 405B tutorial's llmperf command passes no --tokenizer, so the Neuron llmperf patch counted tokens with its
    # default hf-internal-testing/llama-tokenizer (Llama-2's) and divided the decode time by 1,785 - 1 of them; the
    # server generated llmperf's max_tokens, 1,500 Llama-3 tokens (the 70B tutorial, with --tokenizer, counts 1,501).
    row = _row("pt-2")
    assert int(row["output_tokens"]) == 1500
    assert float(row["measured_tpot_ms"]) == pytest.approx(37.929 * 1784 / 1499, abs=0.01)
    # the published end-to-end and TTFT p50s give the same per-token time
    assert float(row["measured_tpot_ms"]) == pytest.approx((70.096 - 2.44196) / 1499 * 1e3, rel=2e-3)
    # the prompt's Llama-3 length is an estimate; 8,400 and the counted 10,000 run the same 10,240-token graph
    d, b, i, o, _ = vi.configure(row)
    load, _ = vb.load_of(row, b)
    ttft = [vb.simulate_row(d, load, b, n, o).ttft_s["p50"] for n in (i, 10000)]
    assert i == 8400 and ttft[0] == pytest.approx(ttft[1], rel=1e-9)


def test_deepseek_v3s_context_blocks_on_sdk_228_are_bound_by_issuing_their_transfers():
    # The DeepSeek-V3 contrib (SDK 2.28) runs the shard-on-hidden blockwise kernel at TP 64: 49 DMA transfers a block
    # a physical core (roofline.moe_block_transfers) move 11.7 MB; at the core's 16 engines (SDK 2.28's prior) the
    # bytes take 32 us, so the block costs the transfers' issue time, at the rate and issue cost the fit took from
    # Trinity-Mini's rows (H 2,048: 32 transfers, 4.7 MB).
    d, *_ = vi.configure(_row("pd-1"))
    rf = inf.roofline
    assert d.efficiency.moe_block_bytes_per_s > 4 * inf.NEURON_DMA_ENGINE_BYTES_PER_S  # more than one engine's
    assert rf.moe_block_transfers(d) == 49
    assert rf.moe_block_seconds(d) == pytest.approx(49 * d.efficiency.moe_transfer_s)
    one_engine = replace(d.efficiency, moe_block_bytes_per_s=inf.NEURON_DMA_ENGINE_BYTES_PER_S)
    assert rf.moe_block_seconds(replace(d, efficiency=one_engine)) > 3 * rf.moe_block_seconds(d)  # as SDK 2.26's
