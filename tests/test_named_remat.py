"""JAX's named checkpoint policies (MaxText remat_policy, AXLearn build_remat_spec): a layer keeps only the tensors
its policy names and its input; MaxText's qkv_context policy of the tpu-recipes Ironwood runs (Recompute.QKV_CONTEXT)
keeps the input, Q, K, V and attention's output and recomputes the norms, the output projection and the MLP."""

import dataclasses

import pytest

from flopcast import catalog
from flopcast.cost.memory import layer_activation_bytes
from flopcast.emit import maxtext
from flopcast.model.strategy import MODERN_SOFTWARE, Layout, LayoutBatch, Recompute, Sharding, default_named_remat
from flopcast.model.system import Dtype
from flopcast.plan import search as search_mod
from flopcast.simulate import flops, training
from flopcast.units import GiB
from flopcast.validate.training import software_of

S, B = 8192, 4  # tpu-recipes Ironwood 70B at 8k: per_device_batch_size 2, two JAX devices a chip
FLASH_STATS = 4.0 * 2  # fp32 row max and sum per head (memory.layer_activation_bytes)


@pytest.fixture
def llama():
    return catalog.load_model("llama3-70b")


def test_named_mlp_recompute_keeps_the_named_tensors_only(llama):
    """MaxText's save_dot_with_context_except_mlp (what flopcast's mlp emits for MaxText) saves query_proj,
    key_proj, value_proj, context and out_proj with the layer input: 2 bytes x (h + q + 2 kv + o + h) a token,
    without the two norm inputs and the QKV and MLP inputs PyTorch's autograd keeps (Megatron's 4h)."""
    m, h = llama, llama.hidden
    kw = dict(s=S, b=1, t=1, sp=False, moe_layer=False, recompute=Recompute.MLP)
    named = layer_activation_bytes(m, named_remat=True, **kw)
    by_hand = 2.0 * (h + m.q_dim + 2 * m.kv_dim + m.attn_out_dim + h) + FLASH_STATS * m.heads
    assert named == pytest.approx(S * by_hand, rel=1e-12)
    autograd = layer_activation_bytes(m, **kw)
    assert autograd - named == pytest.approx(S * 2.0 * 2 * h, rel=1e-12)  # 4h kept by autograd, 2h by the policy


def test_qkv_context_keeps_input_q_k_v_and_context(llama):
    m, h = llama, llama.hidden
    kw = dict(s=S, b=1, t=1, sp=False, moe_layer=False)
    got = layer_activation_bytes(m, recompute=Recompute.QKV_CONTEXT, **kw)
    assert got == pytest.approx(S * (2.0 * (h + m.q_dim + 2 * m.kv_dim + m.attn_out_dim) + FLASH_STATS * m.heads),
                                rel=1e-12)
    full = layer_activation_bytes(m, recompute=Recompute.FULL, **kw)
    mlp = layer_activation_bytes(m, recompute=Recompute.MLP, named_remat=True, **kw)
    assert full < got < mlp


def test_qkv_context_recomputes_the_output_projection_too(llama):
    """Its recomputation repeats the MLP's forward and the output projection's: more time and FLOPs than MLP
    recomputation by the projection's 2 h x o FLOPs a token and layer, less than full recomputation."""
    system, cal = catalog.system_for("tpu7x"), catalog.calibration()

    def run(rc):
        lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=64, micro_batch=B, global_batch=256, recompute=rc,
                                     sharding=Sharding.ZERO3, sequence_parallel=False)])
        return training.evaluate(llama, system, lay, cal)
    mlp, qkvc, full = (run(r) for r in (Recompute.MLP, Recompute.QKV_CONTEXT, Recompute.FULL))
    rec = [r["time_parts"]["recompute"][0] for r in (mlp, qkvc, full)]
    assert rec[0] < rec[1] < rec[2]
    extra = (flops.recompute_flops_per_token(llama, Recompute.QKV_CONTEXT, True)
             - flops.recompute_flops_per_token(llama, Recompute.MLP, True))
    assert extra == pytest.approx(2.0 * llama.hidden * llama.attn_out_dim * llama.layers, rel=1e-12)


def test_the_ironwood_70b_recipe_layout_fits_only_as_its_policy_keeps(llama):
    """The memory check at the recipe's layout (FSDP 64, 4 sequences of 8k a chip, 192 GiB): qkv_context fits;
    MLP recomputation does not, counted as PyTorch's autograd keeps it nor as a named policy that keeps out_proj;
    so the search had fallen back to full recomputation. On TPUs the search tries qkv_context."""
    system, cal = catalog.system_for("tpu7x"), catalog.calibration()

    def gib(rc, named):
        lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=64, micro_batch=B, global_batch=256, recompute=rc,
                                     sharding=Sharding.ZERO3, sequence_parallel=False, dtype=Dtype.BF16)])
        sw = dataclasses.replace(MODERN_SOFTWARE, named_remat=named)
        return training.memory_bytes(llama, system, lay, cal, software=sw)[0] / GiB
    assert gib(Recompute.QKV_CONTEXT, True) < system.chip.memory / GiB < gib(Recompute.MLP, True) < gib(
        Recompute.MLP, False)
    space = search_mod.SearchSpace(tp=(1,), pp=(1,), dp=(64,), cp=(1,), micro_batch=(B,), global_batch=(256,),
                                   sharding=(Sharding.ZERO3,), dtype=(Dtype.BF16,))
    out = search_mod.search(llama, system, 64, cal, space)
    assert out.batch.layout(int(out.order[0])).recompute == Recompute.QKV_CONTEXT


def test_frameworks_and_chips_that_recompute_by_names():
    assert default_named_remat("tpu") and not default_named_remat("nvidia-hopper")
    assert software_of({"framework": "maxtext"}).named_remat is True
    assert software_of({"framework": "axlearn"}).named_remat is True
    assert software_of({"framework": "megatron"}).named_remat is False
    assert MODERN_SOFTWARE.named_remat_on("tpu") and not MODERN_SOFTWARE.named_remat_on("nvidia-blackwell")


def test_maxtext_emits_the_policy_with_its_tensor_names(llama):
    system = catalog.system_for("tpu7x")
    lay = Layout(tp=1, pp=1, dp=64, micro_batch=B, global_batch=256, recompute=Recompute.QKV_CONTEXT,
                 sharding=Sharding.ZERO3, sequence_parallel=False)
    text = maxtext.maxtext(llama, system, lay).text
    assert "remat_policy=custom" in text
    for name in ("decoder_layer_input", "query_proj", "key_proj", "value_proj", "context"):
        assert f"{name}=device" in text
