"""torchao float8 as torchtitan runs it: tensorwise dynamic scaling casts every linear's input, weight and grad_output
in separate memory-bound kernels (an amax pass and a cast writing both layouts), counted as torchao's roofline counts
them; Transformer Engine (Megatron) fuses its casts and is not charged. FSDP2's float8 all-gather, where a row states
it, casts the weights on the shard and gathers the linears in 1 byte."""

import dataclasses

import numpy as np
import pytest

from flopcast import catalog
from flopcast.cost import comm, compute
from flopcast.errors import FlopcastError
from flopcast.model.strategy import MODERN_SOFTWARE, Layout, LayoutBatch, Recompute, Sharding
from flopcast.model.system import Dtype
from flopcast.simulate import layer, training
from flopcast.validate import training as vt

TORCHAO = dataclasses.replace(MODERN_SOFTWARE, fp8_cast_passes=True)


def test_one_linear_moves_what_torchaos_roofline_counts():
    # by hand, one linear of M x K input and N x K weight (roofline_utils.get_tensor_memory_traffic_ovhd_s,
    # tensorwise): input amax 2 B + cast read 2 B, write 2 x 1 B; weight amax 2 + forward cast 3 + backward cast 3;
    # grad_output like the input
    m, k, n = 16384.0, 4096.0, 14336.0
    fwd, bwd = compute.fp8_cast_bytes(m * k, m * n, n * k)
    assert fwd == pytest.approx((2 + 2 + 2) * m * k + (2 + 3) * n * k)
    assert bwd == pytest.approx((2 + 2 + 2) * m * n + 3 * n * k)


def _layer(software, dtype):
    model, system, cal = catalog.load_model("llama3-8b"), catalog.load_system("grand-teton-h100"), catalog.calibration()
    lay = Layout(tp=1, pp=1, dp=8, cp=1, micro_batch=2, global_batch=16, recompute=Recompute.OP,
                 sharding=Sharding.ZERO3, sequence_parallel=False, dtype=dtype)
    c = training._context(model, system, LayoutBatch.of([lay]), cal, software, True)
    return model, system, cal, layer.layer_times(model, system, cal, c.x, False, False, software)


def test_an_fp8_llama_layer_pays_its_cast_passes_at_memory_bandwidth():
    model, system, cal, plain = _layer(MODERN_SOFTWARE, Dtype.FP8)
    *_, cast = _layer(TORCHAO, Dtype.FP8)
    h, f, T = model.hidden, model.ffn_hidden, 2.0 * model.seq_len
    qkv = model.q_dim + 2 * model.kv_dim
    inputs = T * (h + model.q_dim + h + f)  # QKV, output projection, gate and up (one input), down
    outputs = T * (qkv + h + 2 * f + h)
    weights = h * qkv + model.q_dim * h + 3 * h * f
    fam = cal.for_chip(system.chip)

    def t(nbytes):
        return compute.memory_time(nbytes, bandwidth=system.chip.memory_bandwidth, memory_efficiency=fam.memory)

    assert float(cast.fwd[0] - plain.fwd[0]) == pytest.approx(t(6 * inputs + 5 * weights), rel=1e-9)
    assert float(cast.bwd[0] - plain.bwd[0]) == pytest.approx(t(6 * outputs + 3 * weights), rel=1e-9)
    assert 0.05 < float(cast.fwd[0] + cast.bwd[0]) / float(plain.fwd[0] + plain.bwd[0]) - 1.0 < 0.25


def test_bf16_layers_cast_nothing():
    *_, plain = _layer(MODERN_SOFTWARE, Dtype.BF16)
    *_, cast = _layer(TORCHAO, Dtype.BF16)
    assert np.array_equal(cast.fwd, plain.fwd) and np.array_equal(cast.bwd, plain.bwd)


def test_torchtitan_rows_cast_in_separate_kernels_and_megatron_rows_do_not():
    row = {"source": "x", "source_locator": "", "notes": "", "date": "2024-12-26"}
    assert vt.software_of({**row, "framework": "torchtitan"}).fp8_cast_passes
    assert not vt.software_of({**row, "framework": "megatron"}).fp8_cast_passes
    assert not MODERN_SOFTWARE.fp8_cast_passes


# FSDP2's float8 all-gather (torchao enable_fsdp_float8_all_gather, torchao/float8/fsdp_utils.py): the weights are
# cast on each rank's shard and gathered in 1 byte; the output head and embedding stay bf16
GATHER = dataclasses.replace(TORCHAO, fp8_allgather=True)


def test_with_the_float8_gather_each_rank_casts_only_its_shard_of_the_weights():
    model, system, cal, plain = _layer(MODERN_SOFTWARE, Dtype.FP8)
    *_, cast = _layer(GATHER, Dtype.FP8)
    h, f, T = model.hidden, model.ffn_hidden, 2.0 * model.seq_len
    qkv = model.q_dim + 2 * model.kv_dim
    inputs, outputs = T * (h + model.q_dim + h + f), T * (qkv + h + 2 * f + h)
    shard = (h * qkv + model.q_dim * h + 3 * h * f) / 8  # FSDP over dp = 8
    fam = cal.for_chip(system.chip)

    def t(nbytes):
        return compute.memory_time(nbytes, bandwidth=system.chip.memory_bandwidth, memory_efficiency=fam.memory)

    assert float(cast.fwd[0] - plain.fwd[0]) == pytest.approx(t(6 * inputs + 5 * shard), rel=1e-9)
    assert float(cast.bwd[0] - plain.bwd[0]) == pytest.approx(t(6 * outputs + 3 * shard), rel=1e-9)


def _gather_bytes(software, dtype):
    model, system, cal = catalog.load_model("llama3-8b"), catalog.load_system("grand-teton-h100"), catalog.calibration()
    lay = Layout(tp=1, pp=1, dp=8, cp=1, micro_batch=2, global_batch=16, recompute=Recompute.OP,
                 sharding=Sharding.ZERO3, sequence_parallel=False, dtype=dtype)
    c = training._context(model, system, LayoutBatch.of([lay]), cal, software, True)
    stage_layers = np.full(1, float(model.layers))
    dense, _, _ = training._stage_params(c, stage_layers)
    return model, np.broadcast_to(training._fsdp_gather_bytes(c, stage_layers, dense), (1,))[0]


def test_the_float8_gather_sends_the_layers_in_one_byte_and_the_embedding_and_head_in_two():
    model, per_param = _gather_bytes(GATHER, Dtype.FP8)
    h, f = model.hidden, model.ffn_hidden
    linears = h * (model.q_dim + 2 * model.kv_dim) + model.q_dim * h + 3 * h * f  # QKV, output, gate, up, down
    norms = 4 * h  # two norms per layer (weight and bias, params.layer_params), gathered in bf16
    layers, edges = model.layers * linears, model.layers * norms + 2 * model.vocab * h  # and the embedding and head
    assert per_param == pytest.approx((1 * layers + 2 * edges) / (layers + edges), rel=1e-9)
    assert 1.1 < per_param < 1.2  # Llama 3 8B: 6.98 B of its 8.03 B parameters sit in the layers
    assert _gather_bytes(GATHER, Dtype.BF16)[1] == 2.0 and _gather_bytes(TORCHAO, Dtype.FP8)[1] == 2.0


def test_a_row_states_the_float8_gather_and_a_bad_value_is_refused():
    row = {"source": "x", "source_locator": "", "notes": "", "date": "2025-06-13", "framework": "torchtitan"}
    assert vt._row_software({**row, "fp8_allgather": "yes"}, ())[0].fp8_allgather
    assert not vt._row_software({**row, "fp8_allgather": ""}, ())[0].fp8_allgather
    with pytest.raises(FlopcastError, match="fp8_allgather 'maybe' is not one of yes, no"):
        vt._row_software({**row, "fp8_allgather": "maybe"}, ())


def test_an_exposed_fsdp_gather_of_an_fp8_layout_moves_those_bytes():
    # no overlap: the forward and backward gathers are the step's data-parallel time; the float8 gather sends
    # per_param bytes per dense parameter instead of 2, the reduce-scatter stays bf16
    model, system = catalog.load_model("llama3-8b"), catalog.load_system("grand-teton-h100")
    cal = dataclasses.replace(catalog.calibration(), zero3_overlap=0.0)
    lay = Layout(tp=1, pp=1, dp=8, cp=1, micro_batch=2, global_batch=16, recompute=Recompute.OP,
                 sharding=Sharding.ZERO3, sequence_parallel=False, dtype=Dtype.FP8)
    parts = {sw: training.evaluate(model, system, LayoutBatch.of([lay]), cal, software=sw)["time_parts"]
             for sw in (TORCHAO, GATHER)}
    dp = {sw: float(p["comm/dp"][0]) for sw, p in parts.items()}
    c = training._context(model, system, LayoutBatch.of([lay]), cal, GATHER, True)
    dense = float(training._stage_params(c, np.full(1, float(model.layers)))[0][0])
    _, per_param = _gather_bytes(GATHER, Dtype.FP8)

    def gather(nbytes):
        return comm.collective_time(comm.Collective.ALL_GATHER, nbytes, 8.0, 1.0, system, cal)

    assert dp[TORCHAO] - dp[GATHER] == pytest.approx(2 * (gather(2 * dense) - gather(per_param * dense)), rel=1e-9)
    assert dp[GATHER] < dp[TORCHAO]
