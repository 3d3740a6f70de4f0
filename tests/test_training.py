"""The training step model: breakdowns sum, monotone in hardware, vectorized equals scalar."""

import dataclasses

import numpy as np
import pytest

import flopcast
from flopcast import catalog
from flopcast.cost import pipeline
from flopcast.model.strategy import LayoutBatch
from flopcast.model.system import Dtype
from flopcast.plan import search
from flopcast.simulate import training

GPT3 = dict(model="gpt3-175b", hardware="dgx-a100-80gb", chips=1024, tp=8, pp=16, micro_batch=1,
            global_batch=1536, recompute="full", sharding="zero1", sequence_parallel=True, schedule="1f1b")


def test_breakdowns_sum_to_totals():
    r = flopcast.train(**GPT3)
    assert sum(r.time_breakdown_s.values()) == pytest.approx(r.step_time_s, rel=1e-9)
    assert sum(r.memory_breakdown_bytes.values()) == pytest.approx(r.memory_bytes, rel=1e-9)


def test_gpt3_on_1024_a100_is_of_the_right_order():
    r = flopcast.train(**GPT3)
    assert r.fits
    assert r.memory_bytes < 80e9
    # Narayanan et al. 2021 measured 140 TFLOP/s per GPU (their counting) on this layout
    assert 90 < r.model_tflops_per_chip < 200


def _with_chip(system, **changes):
    return dataclasses.replace(system, chip=dataclasses.replace(system.chip, **changes))


@pytest.mark.parametrize("change", ["bandwidth", "peak", "links"])
def test_better_hardware_is_never_slower(change):
    model = catalog.load_model("llama2-70b")
    system = catalog.load_system("p5.48xlarge")
    cal = catalog.calibration()
    lb, _, _ = search.candidates(model, system, 64, search.SearchSpace(dtype=(Dtype.BF16, Dtype.FP8)))
    lb = lb.take(np.arange(0, lb.size, max(1, lb.size // 3000)))
    if change == "bandwidth":
        better = _with_chip(system, memory_bandwidth=system.chip.memory_bandwidth * 2)
    elif change == "peak":
        better = _with_chip(system, peak_flops={k: v * 2 for k, v in system.chip.peak_flops.items()})
    else:
        better = dataclasses.replace(system, tiers=tuple(dataclasses.replace(t, bandwidth=t.bandwidth * 2)
                                                         for t in system.tiers))
    base = training.evaluate(model, system, lb, cal)["step_time_s"]
    fast = training.evaluate(model, better, lb, cal)["step_time_s"]
    assert np.all(fast <= base * (1 + 1e-12))


def test_vectorized_equals_scalar_on_sampled_layouts():
    model = catalog.load_model("mixtral-8x7b")
    system = catalog.load_system("p5.48xlarge")
    cal = catalog.calibration()
    lb, _, _ = search.candidates(model, system, 128, search.SearchSpace(dtype=(Dtype.BF16, Dtype.FP8)))
    rng = np.random.default_rng(0)
    idx = rng.choice(lb.size, size=40, replace=False)
    batch = training.evaluate(model, system, lb, cal)
    for i in idx:
        one = training.evaluate(model, system, LayoutBatch.of([lb.layout(int(i))]), cal)
        for key in ("step_time_s", "memory_bytes", "tokens_per_s", "mfu"):
            assert one[key][0] == pytest.approx(batch[key][i], rel=1e-12), key
        for part, v in one["time_parts"].items():
            assert v[0] == pytest.approx(np.broadcast_to(batch["time_parts"][part], batch["step_time_s"].shape)[i],
                                         rel=1e-12, abs=1e-15), part


def test_recompute_trades_time_for_memory():
    base = dict(GPT3, recompute="none")
    none = flopcast.train(**base)
    full = flopcast.train(**dict(base, recompute="full"))
    assert full.step_time_s > none.step_time_s
    assert full.memory_breakdown_bytes["activations"] < none.memory_breakdown_bytes["activations"]


def test_zero_stages_shrink_memory():
    mems = [flopcast.train(**dict(GPT3, sharding=s)).memory_bytes for s in ("none", "zero1", "zero2", "zero3")]
    assert mems == sorted(mems, reverse=True)


def test_layout_that_does_not_fit_is_a_result():
    r = flopcast.train("llama3-405b", hardware="p5.48xlarge", chips=8, tp=8, pp=1, micro_batch=1, global_batch=8,
                       recompute="none", sharding="none")
    assert not r.fits
    assert r.to_dict()["fits"] is False


def test_moe_and_cp_and_interleaving_run():
    r = flopcast.train("deepseek-v3", hardware="hgx-h800", chips=2048, tp=1, pp=16, ep=64, vp=2, micro_batch=1,
                       global_batch=4096, dtype="fp8")
    assert r.time_breakdown_s["comm/ep"] > 0 and r.step_time_s > 0
    r = flopcast.train("llama3-8b", hardware="p5.48xlarge", chips=16, tp=2, pp=1, cp=8, micro_batch=1,
                       global_batch=16, seq_len=131072)
    assert r.time_breakdown_s["comm/cp"] >= 0 and r.layout.cp == 8


def test_balanced_pipeline_stage_places_whole_layers_around_the_embedding_and_logits():
    # 94 layers of time 1 on 8 stages, logits worth 2 layers: 12 per middle stage, 10 on the last -> 12;
    # an even split puts ceil(94 / 8) = 12 layers and the logits on the last stage -> 14
    assert pipeline.balanced_stage(94, np.array([8.0]), np.array([1.0]), np.array([0.0]), np.array([2.0]),
                                    np.array([96.0 / 8]))[0] == pytest.approx(12.0)
    # 32 layers on 4 stages with light edges: nothing to move, one layer plus an edge on the last stage
    assert pipeline.balanced_stage(32, np.array([4.0]), np.array([1.0]), np.array([0.1]), np.array([0.1]),
                                    np.array([32.2 / 4]))[0] == pytest.approx(8.1)


def test_uneven_pipeline_split_only_with_software_that_has_it():
    from flopcast.model.strategy import ERA_2021_SOFTWARE, MODERN_SOFTWARE
    from flopcast.validate.training import software_of

    model, system = catalog.load_model("qwen3-235b-a22b"), catalog.load_system("gb200-nvl72")
    out = search.search(model, system, 256, catalog.calibration(),
                        search.SearchSpace(tp=(1,), pp=(8,), ep=(32,), vp=(3,), micro_batch=(1,),
                                           global_batch=(8192,), dtype=(Dtype.BF16,)))
    lb = LayoutBatch.of([out.batch.layout(int(out.order[0]))])
    cal = catalog.calibration()
    even = training.evaluate(model, system, lb, cal, software=dataclasses.replace(MODERN_SOFTWARE,
                                                                                   uneven_pipeline_split=False))
    uneven = training.evaluate(model, system, lb, cal, software=MODERN_SOFTWARE)
    assert uneven["time_parts"]["imbalance"][0] < even["time_parts"]["imbalance"][0]
    assert uneven["step_time_s"][0] < even["step_time_s"][0]
    # by source date: even before Megatron Core 0.9.0 (24 Oct 2024), 2021-era before May 2022
    assert not software_of({"source": "x", "source_locator": "2024-09-09"}).uneven_pipeline_split
    assert software_of({"source": "x", "source_locator": "2025-05-08"}).uneven_pipeline_split
    assert software_of({"source": "x-2021"}) == ERA_2021_SOFTWARE


def test_context_parallel_ranks_shard_the_weights_states_with_the_data_parallel_ones():
    # Megatron-Core's distributed optimizer and torchtitan's FSDP shard over dp x cp (the ranks holding the same
    # weights): dp 4 x cp 2 holds the states of dp 8, and its gradients are reduced over the same 8 ranks
    model, system, cal = catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge"), catalog.calibration()
    from flopcast.model.strategy import Layout, Sharding

    def run(dp, cp, sharding):
        lb = LayoutBatch.of([Layout(tp=1, dp=dp, cp=cp, micro_batch=1, global_batch=dp, sharding=sharding)])
        return training.evaluate(model, system, lb, cal)

    for sharding in (Sharding.ZERO1, Sharding.ZERO3):
        a, b = run(4, 2, sharding), run(8, 1, sharding)
        for part in ("weights", "grads", "optimizer"):
            assert a["memory_parts"][part][0] == pytest.approx(b["memory_parts"][part][0])
    assert run(1, 8, Sharding.ZERO3)["time_parts"]["comm/dp"][0] > 0
