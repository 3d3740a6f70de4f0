"""Attention on a systolic array (cost.compute.head_dim_fill) and MaxText's save_qkv_proj-like policy
(Recompute.QKV): a 128-wide head fills half of a 256x256 MXU (TPU v6e, TPU7x) and all of a 128x128 one (TPU v4/v5,
Trainium); the qkv policy keeps the layer input, Q, K and V and recomputes the attention core with the rest."""

import dataclasses

import pytest

from flopcast import catalog
from flopcast.cost import compute
from flopcast.cost.memory import layer_activation_bytes
from flopcast.emit import maxtext
from flopcast.model.strategy import Layout, LayoutBatch, Recompute, Sharding
from flopcast.simulate import flops, training

S, B = 8192, 4


@pytest.fixture
def llama():
    return catalog.load_model("llama3-70b")


@pytest.mark.parametrize("family, tile, d_qk, d_v, want", [
    ("tpu", (256, 256), 128, 128, 0.5),  # v6e / TPU7x MXU, Llama's 128-wide heads
    ("tpu", (256, 256), 256, 256, 1.0),  # Gemma 3's 256-wide heads fill it
    ("tpu", (128, 128), 128, 128, 1.0),  # v4 / v5 MXU
    ("tpu", (256, 256), 192, 128, (192 + 128) / (192 / 0.75 + 128 / 0.5)),  # MLA: 192 of 256 rows, 128 of 256 cols
    ("trainium", (128, 128), 64, 64, 0.5),
    ("nvidia-blackwell", (256, 256), 128, 128, 1.0),  # a GPU's tile is a kernel's block, not an array
])
def test_head_dim_fill_by_hand(family, tile, d_qk, d_v, want):
    assert compute.head_dim_fill(family, tile, d_qk, d_v) == pytest.approx(want, rel=1e-12)


def test_attention_core_takes_twice_as_long_on_a_256_wide_array(llama, monkeypatch):
    """The same chip with a 128x128 tile runs Llama's attention core in half the time of its 256x256 self; the GEMMs'
    tile efficiency is unchanged at these sizes (multiples of 256)."""
    system, cal = catalog.system_for("tpu7x"), catalog.calibration()
    small = dataclasses.replace(system, chip=dataclasses.replace(system.chip, tile=(128, 128)))
    lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=64, micro_batch=B, global_batch=256, recompute=Recompute.NONE,
                                 sharding=Sharding.ZERO3, sequence_parallel=False)])
    seen = []
    orig = training.layer_times
    monkeypatch.setattr(training, "layer_times", lambda *a, **k: seen.append(orig(*a, **k)) or seen[-1])
    training.evaluate(llama, system, lay, cal)
    training.evaluate(llama, small, lay, cal)
    big, little = seen
    assert big.attn_fwd[0] == pytest.approx(2.0 * little.attn_fwd[0], rel=1e-12)
    assert (big.fwd - big.attn_fwd)[0] == pytest.approx((little.fwd - little.attn_fwd)[0], rel=1e-12)


def test_qkv_keeps_input_q_k_v_only(llama):
    """2 bytes x (h + q + 2 kv) a token: qkv_context's without the attention output and flash attention's statistics
    (its forward is recomputed)."""
    m, h = llama, llama.hidden
    kw = dict(s=S, b=1, t=1, sp=False, moe_layer=False)
    got = layer_activation_bytes(m, recompute=Recompute.QKV, **kw)
    assert got == pytest.approx(S * 2.0 * (h + m.q_dim + 2 * m.kv_dim), rel=1e-12)
    assert layer_activation_bytes(m, recompute=Recompute.FULL, **kw) < got < layer_activation_bytes(
        m, recompute=Recompute.QKV_CONTEXT, **kw)


def test_qkv_recomputes_the_attention_core_on_top_of_qkv_context(llama):
    system, cal = catalog.system_for("tpu7x"), catalog.calibration()

    def run(rc):
        lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=64, micro_batch=B, global_batch=256, recompute=rc,
                                     sharding=Sharding.ZERO3, sequence_parallel=False)])
        return training.evaluate(llama, system, lay, cal)["time_parts"]["recompute"][0]
    qkvc, qkv, selective = (run(r) for r in (Recompute.QKV_CONTEXT, Recompute.QKV, Recompute.SELECTIVE))
    assert qkv == pytest.approx(qkvc + selective, rel=1e-9)  # selective repeats exactly the attention core
    extra = (flops.recompute_flops_per_token(llama, Recompute.QKV, True)
             - flops.recompute_flops_per_token(llama, Recompute.QKV_CONTEXT, True))
    assert extra == pytest.approx(flops.recompute_flops_per_token(llama, Recompute.SELECTIVE, True), rel=1e-12)


def test_qkv_emits_maxtexts_save_qkv_proj(llama):
    system = catalog.system_for("tpu7x")
    lay = Layout(tp=1, pp=1, dp=64, micro_batch=B, global_batch=256, recompute=Recompute.QKV,
                 sharding=Sharding.ZERO3, sequence_parallel=False)
    assert "remat_policy=save_qkv_proj" in maxtext.maxtext(llama, system, lay).text
