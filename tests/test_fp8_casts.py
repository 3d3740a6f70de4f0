"""torchao float8 as torchtitan runs it: tensorwise dynamic scaling casts every linear's input, weight and grad_output
in separate memory-bound kernels (an amax pass and a cast writing both layouts), counted as torchao's roofline counts
them; Transformer Engine (Megatron) fuses its casts and is not charged."""

import dataclasses

import numpy as np
import pytest

from flopcast import catalog
from flopcast.cost import compute
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
