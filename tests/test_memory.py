"""Activation memory against Korthikanti et al. 2022, Table 2."""

import dataclasses

import pytest

from flopcast import catalog
from flopcast.cost.memory import layer_activation_bytes
from flopcast.model.strategy import Recompute


@pytest.fixture
def gpt():
    m = catalog.load_model("gpt3-175b")
    return dataclasses.replace(m, dropout=True)  # Table 2 is for GPT with dropout


@pytest.mark.parametrize("t", [1, 4, 8])
def test_table2_no_parallel_tricks(gpt, t):
    s, b, h, a = 2048, 1, gpt.hidden, gpt.heads
    expected = s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    got = layer_activation_bytes(gpt, s, b, t, sp=False, recompute=Recompute.NONE, moe_layer=False, flash=False)
    assert got == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("t", [2, 8])
def test_table2_sequence_parallel(gpt, t):
    s, b, h, a = 2048, 2, gpt.hidden, gpt.heads
    expected = s * b * h / t * (34 + 5 * a * s / h)
    got = layer_activation_bytes(gpt, s, b, t, sp=True, recompute=Recompute.NONE, moe_layer=False, flash=False)
    assert got == pytest.approx(expected, rel=1e-9)


def test_table2_selective_and_full(gpt):
    s, b, h, t = 2048, 1, gpt.hidden, 8
    sel = layer_activation_bytes(gpt, s, b, t, sp=True, recompute=Recompute.SELECTIVE, moe_layer=False, flash=False)
    assert sel == pytest.approx(34 * s * b * h / t)
    full = layer_activation_bytes(gpt, s, b, t, sp=True, recompute=Recompute.FULL, moe_layer=False, flash=False)
    assert full == pytest.approx(2 * s * b * h / t)


def test_gqa_keeps_less_than_mha():
    l2 = catalog.load_model("llama2-70b")
    mha = dataclasses.replace(l2, kv_heads=l2.heads)
    args = dict(s=4096, b=1, t=8, sp=True, recompute=Recompute.NONE, moe_layer=False)
    assert layer_activation_bytes(l2, **args) < layer_activation_bytes(mha, **args)
