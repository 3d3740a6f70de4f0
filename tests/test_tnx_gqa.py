"""transformers-neuronx turns a GQA model into MHA when the ranks do not divide its KV heads (GQA.REPLICATED_HEADS,
cost/inference/replica.Deployment.kv_heads_as_query_heads): every query head gets its own KV head and K/V projection;
NxD Inference / optimum-neuron and GPU engines replicate the KV heads to one a rank."""

from dataclasses import replace

import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.cost.inference.footprint import replica_weight_bytes


def _deploy(model, system, chips, engine, family):
    return inf.deployment(catalog.load_model(model), catalog.load_system(system), chips=chips, tp=chips,
                          engine=engine, efficiency=inf.PRIORS[family])


def test_llama3_70b_on_trainium1_holds_two_kv_heads_a_rank():
    tnx = _deploy("llama3-70b", "trn1.32xlarge", 16, "transformers-neuronx (SDK 2.18.1)", "transformers-neuronx")
    nxd = _deploy("llama3-70b", "trn1.32xlarge", 16, "optimum-neuron", "neuronx")
    assert tnx.shards == nxd.shards == 32
    assert tnx.kv_heads_as_query_heads and not nxd.kv_heads_as_query_heads
    assert tnx.kv_replication == 8.0  # 64 query heads over 32 ranks: 2 KV heads a rank for the model's 8
    assert nxd.kv_replication == 4.0  # one KV head a rank
    # the repeated K/V projections: 2 x 80 layers x 8,192 x 128 x (64 - 8) weights; one KV head a rank: (32 - 8)
    assert tnx.attention_copies_params == pytest.approx(2 * 80 * 8192 * 128 * 56)
    assert nxd.copied_params == pytest.approx(2 * 80 * 8192 * 128 * 24)
    assert any("REPLICATED_HEADS" in a for a in tnx.assumptions)


def test_padded_query_heads_set_the_kv_heads_on_inferentia2():
    # 32 query heads over 24 ranks are padded to 48; the 8 KV heads are repeated to those 48
    d = _deploy("llama3-8b", "inf2.48xlarge", 12, "transformers-neuronx (SDK 2.18.1)", "transformers-neuronx")
    assert d.shards == 24 and d.kv_replication == 6.0
    # Q and O padded by 16 heads, K and V to 48 heads from 8
    assert d.attention_copies_params == pytest.approx(32 * 4096 * 128 * (2 * 16 + 2 * 40))


def test_divisible_kv_heads_and_mha_models_are_unchanged():
    mha = _deploy("llama2-13b", "trn1.32xlarge", 16, "transformers-neuronx (SDK 2.18.0)", "transformers-neuronx")
    assert not mha.kv_heads_as_query_heads and mha.kv_replication == 1.6  # 40 heads padded to 64
    assert mha.attention_copies_params == pytest.approx(40 * 5120 * 128 * 4 * 24)  # Q, K, V, O of 24 padded heads
    one_chip = _deploy("llama3-8b", "inf2.48xlarge", 2, "transformers-neuronx (SDK 2.18.1)", "transformers-neuronx")
    assert one_chip.shards == 4 and not one_chip.kv_heads_as_query_heads and one_chip.kv_replication == 1.0
    assert one_chip.copied_params == 0.0
    gpu = inf.deployment(catalog.load_model("llama3-70b"), catalog.load_system("p5.48xlarge"), chips=8, tp=8,
                         efficiency=inf.PRIORS["gpu"])
    assert gpu.kv_replication == 1.0 and gpu.copied_params == 0.0


def test_decode_reads_the_repeated_cache_and_weights():
    tnx = _deploy("llama3-70b", "trn1.32xlarge", 16, "transformers-neuronx (SDK 2.18.1)", "transformers-neuronx")
    nxd = replace(tnx, family="neuronx")  # the same rates, the other engines' GQA rule
    _, p_tnx = inf.decode_time(tnx, 4, 4096)
    _, p_nxd = inf.decode_time(nxd, 4, 4096)
    core = float(p_tnx["attention/core"]) / float(p_nxd["attention/core"])
    assert core == pytest.approx(2.0, rel=0.01)  # twice the KV bytes a rank, bandwidth-bound
    # Q + K + V weights: 64 + 2 x 64 heads' against 64 + 2 x 32 (one KV head a rank)
    assert float(p_tnx["attention/qkv"]) / float(p_nxd["attention/qkv"]) == pytest.approx(1.5, rel=0.01)
    assert replica_weight_bytes(tnx) - replica_weight_bytes(nxd) == pytest.approx(
        (tnx.copied_params - nxd.copied_params) * tnx.weights.bits / 8.0)


def test_nxd_converts_to_mha_when_the_ranks_do_not_divide_by_the_kv_heads():
    # optimum-neuron / NxD Inference gqa.py: 12 ranks, 8 KV heads (12 % 8 != 0) -> CONVERT_TO_MHA, 32 heads padded to 36
    d = _deploy("llama3-8b", "inf2.48xlarge", 6, "optimum-neuron", "neuronx")
    assert d.shards == 12 and d.kv_heads_as_query_heads and d.kv_replication == 4.5
    assert not _deploy("llama3-8b", "inf2.48xlarge", 12, "optimum-neuron", "neuronx").kv_heads_as_query_heads
