"""Expert-parallel MoE serving: experts split over the replica's chips, attention data-parallel, dispatch and
combine all-to-all per MoE layer, MLA's compressed KV cache held once (checked by hand)."""

import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.cost import params as P
from flopcast.cost.comm import tier_bandwidth
from flopcast.cost.inference.footprint import replica_weight_bytes, routed_expert_bytes
from flopcast.emit.engines import vllm_serve
from flopcast.errors import FlopcastError
from flopcast.plan import deploy as D


@pytest.fixture(scope="module")
def v3():
    return catalog.load_model("deepseek-v3")


@pytest.fixture(scope="module")
def h200():
    return catalog.system_for("p5en.48xlarge")


def _d(m, s, ep, tp=8):
    return inf.deployment(m, s, chips=tp, tp=tp, weights="fp8", kv_dtype="bf16", ep=ep)


def test_weights_experts_once_the_rest_on_every_chip(v3, h200):
    tp, ep = _d(v3, h200, 1), _d(v3, h200, 8)
    routed = v3.moe_layers * P.moe_params(v3)[0]  # 58 MoE layers x 256 experts x 3 x 7168 x 2048
    assert routed == 58 * 256 * 3 * 7168 * 2048
    assert routed_expert_bytes(ep) == routed  # fp8: one byte per weight
    whole = inf.weight_bytes(v3, ep.weights)
    # under TP each of the 8 ranks also holds MLA's latent down-projections whole (7 copies more than one model)
    latent = 7168 * 1536 + 1536 + 7168 * (512 + 64) + 512  # q_a_proj, its norm, kv_a_proj_with_mqa, its norm
    assert P.mla_latent_params(v3) == latent
    assert replica_weight_bytes(tp) == whole + 7 * 61 * latent
    assert replica_weight_bytes(ep) == pytest.approx(routed + 8 * (whole - routed))
    # each H200 holds 32 experts per layer and a full copy of the rest: under 141 GB
    assert replica_weight_bytes(ep) / 8 < h200.chip.memory


def test_mla_kv_cache_once_under_ep_copied_under_tp(v3, h200):
    tp, ep = _d(v3, h200, 1), _d(v3, h200, 8)
    latent = 61 * (512 + 64) * 2  # bytes per token: kv_lora_rank + RoPE key, 61 layers, bf16
    assert ep.kv_bytes_per_token == latent and tp.kv_bytes_per_token == 8 * latent
    assert inf.kv_capacity_tokens(ep) > 3 * inf.kv_capacity_tokens(tp)


def test_dispatch_and_combine_by_hand(v3, h200):
    """64 decoding sequences over EP8 within one node: each chip dispatches 8 tokens to 8 experts of 7168 bf16
    values; an all-to-all through NVSwitch sends 7/8 of its buffer at the tier's bandwidth, log2(8) latency
    rounds; dispatch and combine in each of the 58 MoE layers; no tensor-parallel all-reduce."""
    d = _d(v3, h200, 8)
    _, parts = inf.step_time(d, 64.0, 64.0, 64 * 600.0, 64 * 600.0)
    nv = h200.tiers[0]
    buf = 8 * 8 * 7168 * 2.0
    a2a = buf * 7 / 8 / tier_bandwidth(nv, d.calibration) + 3 * nv.latency
    assert float(parts["comm/ep"]) == pytest.approx(2 * 58 * a2a, rel=1e-9)
    assert float(parts["comm/tp"]) == 0.0
    # the attention weights are streamed by each of the 8 chips: 8 x the TP replica's bytes at the same rate
    tp = _d(v3, h200, 1)
    _, tparts = inf.step_time(tp, 1.0, 1.0, 600.0, 600.0)
    _, eparts = inf.step_time(d, 1.0, 1.0, 600.0, 600.0)
    assert float(eparts["attention/out"]) == pytest.approx(8 * float(tparts["attention/out"]), rel=0.05)


@pytest.mark.parametrize("model,system,ep", [("qwen3-235b-a22b", "trn2.48xlarge", 16),
                                             ("llama4-maverick", "p6-b200.48xlarge", 8),
                                             ("deepseek-v3", "p5en.48xlarge", 8)])
def test_moe_models_serve_expert_parallel(model, system, ep):
    m = catalog.load_model(model)
    d = inf.deployment(m, catalog.system_for(system), chips=ep, tp=ep, weights="fp8", ep=ep)
    r = inf.predict(d, 32, 1024, 256)
    assert r.fits and r.decode_breakdown_s["comm/ep"] > 0 and r.tpot_s > 0
    assert any("expert parallel over" in a for a in d.assumptions)


def test_ep_refuses_what_it_cannot_be(v3, h200):
    with pytest.raises(FlopcastError, match="mixture-of-experts"):
        inf.deployment(catalog.load_model("llama3-8b"), h200, chips=8, tp=8, ep=8)
    with pytest.raises(FlopcastError, match="--ep must be 1 or"):
        inf.deployment(v3, h200, chips=8, tp=8, ep=4, weights="fp8")


def test_deploy_searches_ep_for_moe_only(v3, h200):
    eps = {c.ep for c in D.candidates(h200, ("fp8",), ("bf16",), (64,), v3)}
    assert {1, 2, 4, 8} <= eps
    dense = D.candidates(h200, ("fp8",), ("bf16",), (64,), catalog.load_model("llama3-8b"))
    assert {c.ep for c in dense} == {1}
    c = next(c for c in D.candidates(h200, ("fp8",), ("bf16",), (64,), v3) if c.ep == 8)
    assert c.label.startswith("1 x EP8 per instance")


def test_launch_line(v3, h200):
    text = vllm_serve(_d(v3, h200, 8)).render()
    assert "--enable-expert-parallel" in text and "--data-parallel-size 8" in text
    assert "--tensor-parallel-size 1" in text
