"""The MoE token dispatcher: Megatron-Core's all-to-all dispatcher sends a token once per routed expert, a fused
(flex: DeepEP, HybridEP) one once per destination rank; validation rows state theirs, the launch configs carry it."""

import math

import numpy as np
import pytest

import flopcast
from flopcast import catalog, emit
from flopcast.cost import calibrations, comm
from flopcast.errors import FlopcastError
from flopcast.model.strategy import Dispatcher, Layout, Sharding
from flopcast.validate import training as vt

from test_emit import megatron_args

QWEN_EP8 = dict(tp=1, pp=1, dp=8, cp=1, ep=8, etp=1, vp=1, micro_batch=2, global_batch=64, recompute="none",
                sharding="zero1", sequence_parallel=False, dtype="bf16", schedule="1f1b")


def test_expected_ranks_by_hand():
    # 8 of 128 experts over 8 ranks of 16: a rank holds none of them with probability C(112, 8) / C(128, 8)
    none = math.comb(112, 8) / math.comb(128, 8)
    assert comm.expected_ranks(128, 8, 8) == pytest.approx(8 * (1 - none))
    assert comm.expected_ranks(128, 128, 8) == pytest.approx(8.0)  # one expert a rank: every expert its own rank
    assert comm.expected_ranks(128, 1, 8) == pytest.approx(1.0)
    assert np.allclose(comm.expected_ranks(128, np.array([8.0, 128.0]), 8), [8 * (1 - none), 8.0])


def test_flex_sends_a_token_once_per_rank():
    cal = calibrations.training()
    system = catalog.system_for("p5.48xlarge")
    args = (4096.0, 2048 * 2, 8, 8.0, 1.0, system, cal)
    per_expert = comm.dispatch_time(*args, experts=128)
    per_rank = comm.dispatch_time(*args, experts=128, per_rank=True)
    latency = comm.dispatch_time(1e-9, 1, 8, 8.0, 1.0, system, cal, experts=128)  # the bandwidth-free part
    assert (per_rank - latency) / (per_expert - latency) == pytest.approx(comm.expected_ranks(128, 8, 8) / 8, rel=1e-6)


def test_the_dispatcher_changes_the_forecast_and_its_launch():
    a2a = flopcast.train("qwen3-30b-a3b", "p5.48xlarge", 8, **QWEN_EP8)
    flex = flopcast.train("qwen3-30b-a3b", "p5.48xlarge", 8, dispatcher="flex", **QWEN_EP8)
    assert flex.time_breakdown_s["comm/ep"] < 0.7 * a2a.time_breakdown_s["comm/ep"]  # 5.3 of 8 copies
    assert flex.step_time_s < a2a.step_time_s
    assert megatron_args(flex.launch("megatron").text)["--moe-token-dispatcher-type"] == "flex"
    assert megatron_args(a2a.launch("megatron").text)["--moe-token-dispatcher-type"] == "alltoall"
    dense = flopcast.train("llama3-8b", "p5.48xlarge", 8, tp=8, pp=1, micro_batch=1, global_batch=8)
    dense_flex = flopcast.train("llama3-8b", "p5.48xlarge", 8, tp=8, pp=1, micro_batch=1, global_batch=8,
                                dispatcher="flex")
    assert dense_flex.step_time_s == dense.step_time_s  # no all-to-all to change


def test_bridge_names_the_flex_backend():
    layout = Layout(tp=1, pp=1, dp=8, ep=8, etp=1, micro_batch=1, global_batch=64, sharding=Sharding.ZERO1)
    r = emit.training("nemo", catalog.load_model("qwen3-30b-a3b"), catalog.system_for("p5.48xlarge"), layout,
                      dispatcher=Dispatcher.FLEX)
    assert "moe_token_dispatcher_type: flex" in r.text and "moe_flex_dispatcher_backend: deepep" in r.text


@pytest.mark.parametrize("cell, expected", [("", Dispatcher.ALLTOALL), ("alltoall", Dispatcher.ALLTOALL),
                                            ("DeepEP", Dispatcher.FLEX), ("hybridep", Dispatcher.FLEX),
                                            ("flex", Dispatcher.FLEX)])
def test_rows_state_their_dispatcher(cell, expected):
    assert vt.dispatcher_of({"dispatcher": cell}) == expected


def test_a_bad_dispatcher_cell_is_one_sentence():
    with pytest.raises(FlopcastError, match="dispatcher 'nccl' is not one of alltoall, flex, deepep, hybridep"):
        vt.dispatcher_of({"dispatcher": "nccl"})
    with pytest.raises(FlopcastError, match="dispatcher"):
        flopcast.train("qwen3-30b-a3b", "p5.48xlarge", 8, dispatcher="nccl", **QWEN_EP8)
