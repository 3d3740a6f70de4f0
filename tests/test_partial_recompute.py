"""MLP recomputation (Megatron-Core --recompute-modules mlp, AXLearn's default remat policy): the MLP's
intermediates are not kept and its forward runs again in backward; attention's activations are kept."""

import dataclasses

import numpy as np
import pytest

import flopcast
from flopcast import catalog
from flopcast.cost import params
from flopcast.cost.memory import layer_activation_bytes
from flopcast.emit import megatron
from flopcast.model.strategy import Layout, LayoutBatch, Recompute, Sharding
from flopcast.model.system import Dtype
from flopcast.plan import search as search_mod
from flopcast.simulate import flops, training


@pytest.fixture
def gpt():
    return dataclasses.replace(catalog.load_model("gpt3-175b"), dropout=True)  # Korthikanti's Table 2 model


@pytest.mark.parametrize("t", [1, 8])
def test_mlp_recompute_drops_the_gelu_input_and_output_of_table2(gpt, t):
    """Korthikanti et al. 2022 sec. 4.1: the MLP keeps 2sbh (first linear's input), 8sbh (GeLU input), 8sbh
    (second linear's input) and sbh (dropout mask); recomputing the MLP keeps its input and the mask, so the
    layer drops 16sbh/t from sbh (10 + 24/t + 5as/(ht)) without sequence parallelism. With attention unfused,
    MLP recomputation as AXLearn's default remat policy saves it (q, k, v, context, output projection) keeps
    no scores either: their 5as/(ht) is recomputed from Q and K."""
    s, b, h, a = 2048, 1, gpt.hidden, gpt.heads
    table2 = layer_activation_bytes(gpt, s, b, t, sp=False, recompute=Recompute.NONE, moe_layer=False, flash=False)
    assert table2 == pytest.approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t)), rel=1e-9)
    got = layer_activation_bytes(gpt, s, b, t, sp=False, recompute=Recompute.MLP, moe_layer=False, flash=False)
    assert got == pytest.approx(s * b * h * (10 + 8 / t), rel=1e-9)


def test_mlp_recompute_of_unfused_attention_repeats_its_scores():
    """Without fused attention, MLP recomputation repeats the attention core's forward too (its scores are not
    kept); with flash attention it repeats the MLP alone. The hardware FLOPs count the repeated attention."""
    m, system, cal = catalog.load_model("llama2-7b"), catalog.system_for("p5.48xlarge"), catalog.calibration()
    lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=8, micro_batch=4, global_batch=32, recompute=Recompute.MLP,
                                 sharding=Sharding.ZERO3, sequence_parallel=False)])
    fused = training.evaluate(m, system, lay, cal)
    unfused = training.evaluate(m, system, lay, cal, software=dataclasses.replace(training.MODERN_SOFTWARE,
                                                                                  flash_attention=False))
    assert unfused["time_parts"]["recompute"][0] > 1.2 * fused["time_parts"]["recompute"][0]

    def rec_flops_per_token(res):
        return (res["hfu"][0] - res["mfu"][0]) * res["peak_flops"][0] * res["chips"][0] / res["tokens_per_s"][0]
    extra = rec_flops_per_token(unfused) - rec_flops_per_token(fused)
    assert extra == pytest.approx(flops._attention_flops_per_token(m) / 3, rel=1e-6)


def test_mlp_recompute_holds_between_none_and_full():
    m = catalog.load_model("llama3-70b")
    kw = dict(s=8192, b=1, t=1, sp=False, moe_layer=False)
    none, mlp, full = (layer_activation_bytes(m, recompute=r, **kw) for r in (Recompute.NONE, Recompute.MLP,
                                                                               Recompute.FULL))
    assert full < mlp < none
    fp8 = layer_activation_bytes(m, recompute=Recompute.MLP, fp8=True, **kw)
    assert 0 < fp8 < mlp  # the attention GEMMs' inputs are still kept quantized


def test_moe_layer_recomputing_its_experts_keeps_no_expert_activations():
    m = catalog.load_model("mixtral-8x7b")
    kw = dict(s=4096, b=1, t=1, sp=False, moe_layer=True)
    none = layer_activation_bytes(m, recompute=Recompute.NONE, **kw)
    mlp = layer_activation_bytes(m, recompute=Recompute.MLP, **kw)
    dense_like = layer_activation_bytes(m, recompute=Recompute.MLP, **{**kw, "moe_layer": False})
    assert mlp == pytest.approx(dense_like)  # attention's and the MLP input only, as in a dense layer
    assert mlp < none / 3


def _evaluate(recompute, model="llama3-70b", hardware="p5.48xlarge", chips=64, **layout):
    m, system = catalog.load_model(model), catalog.system_for(hardware)
    base = dict(tp=8, pp=1, dp=chips // 8, micro_batch=1, global_batch=chips // 8 * 4, sharding=Sharding.ZERO1,
                sequence_parallel=True)
    lay = Layout(**{**base, **layout, "recompute": recompute})
    return training.evaluate(m, system, LayoutBatch.of([lay]), catalog.calibration()), m


def test_mlp_recompute_repeats_the_mlp_forward_only():
    parts = {r: _evaluate(r)[0]["time_parts"]["recompute"][0] for r in (Recompute.MLP, Recompute.FULL)}
    res, m = _evaluate(Recompute.MLP)
    mlp_flops = 2 * params.mlp_matmul_params_per_token(m)
    layer_flops = mlp_flops + 2 * m.layers * params.attention_params(m) + flops._attention_flops_per_token(m) / 3
    mlp_share = mlp_flops / layer_flops
    assert 0 < parts[Recompute.MLP] < parts[Recompute.FULL]
    # GEMM-bound: the recomputed time is about the MLP's share of the layers' forward FLOPs
    assert parts[Recompute.MLP] / parts[Recompute.FULL] == pytest.approx(mlp_share, rel=0.15)
    # hardware FLOPs count the repeated MLP forward: 2 FLOPs per MLP weight per token
    rec_flops = (res["hfu"][0] - res["mfu"][0]) * res["peak_flops"][0] * res["chips"][0] / res["tokens_per_s"][0]
    assert rec_flops == pytest.approx(2 * params.mlp_matmul_params_per_token(m), rel=1e-6)


def test_the_search_takes_mlp_recompute_when_memory_rules_out_none():
    """Llama 3 70B on 64 GB200 in FP8 with FSDP at micro-batch 2 (Megatron-Bridge 25.11): without recomputation
    it needs far more than 186 GB a GPU; with the MLP recomputed it fits and beats full recomputation."""
    m, system = catalog.load_model("llama3-70b"), catalog.system_for("gb200")
    space = search_mod.SearchSpace(tp=(1,), pp=(1,), dp=(64,), cp=(1,), micro_batch=(2,), global_batch=(256,),
                                   sharding=(Sharding.ZERO3,), dtype=(Dtype.FP8,))
    out = search_mod.search(m, system, 64, catalog.calibration(), space)
    fits = {Recompute(int(r)) for r in out.batch.recompute[out.order]}
    assert Recompute.NONE not in fits and Recompute.MLP in fits
    assert out.batch.layout(int(out.order[0])).recompute == Recompute.MLP
    without = search_mod.search(m, system, 64, catalog.calibration(),
                                dataclasses.replace(space, recompute=(Recompute.NONE, Recompute.SELECTIVE,
                                                                      Recompute.FULL)))
    best = out.results["tokens_per_s"][out.order[0]]
    assert without.results["tokens_per_s"][without.order[0]] < best


def test_megatron_launch_names_the_recomputed_module():
    m = catalog.load_model("llama3-70b")
    s, _, _ = megatron._settings(m, Layout(tp=8, dp=8, global_batch=64, recompute=Recompute.MLP))
    assert s["recompute_granularity"] == "selective" and s["recompute_modules"] == "mlp"
    moe = catalog.load_model("mixtral-8x7b")
    s, _, _ = megatron._settings(moe, Layout(tp=8, dp=8, global_batch=64, recompute=Recompute.MLP))
    assert s["recompute_modules"] == "moe"


def test_train_accepts_mlp_recompute():
    r = flopcast.train(model="llama3-70b", hardware="p5.48xlarge", chips=64, tp=8, pp=1, micro_batch=1,
                       global_batch=64, recompute="mlp", sharding="zero1")
    assert r.layout.recompute == Recompute.MLP
    assert np.isfinite(r.step_time_s)
