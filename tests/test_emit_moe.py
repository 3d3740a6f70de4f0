"""The MoE run-time choices a forecast assumes reach the Megatron-LM and Megatron-Bridge launch configurations: the
CUDA-graph capture, combined 1F1B's all-to-all overlap (DualPipe said instead of dropped) and the dispatcher of a
node-spanning group-limited router; every flag and key is one the framework's source defines (tests/data/emit)."""

from dataclasses import replace

import pytest
import yaml

import flopcast
from flopcast import catalog, emit
from flopcast.model.strategy import CudaGraphs, Layout, Schedule, Sharding
from flopcast.model.system import Dtype

from test_emit import BRIDGE_KEYS, MEGATRON_FLAGS, megatron_args

# 512 H100 (8 a node): deepseek-v3's expert-parallel group of 64 spans 8 nodes; qwen3-30b-a3b's of 8 one node
WIDE = Layout(tp=1, pp=8, dp=64, ep=64, etp=1, micro_batch=1, global_batch=1024, sharding=Sharding.ZERO1,
              dtype=Dtype.FP8, schedule=Schedule.ONE_F_ONE_B_OVERLAP)
NODE = Layout(tp=1, pp=1, dp=8, ep=8, etp=1, micro_batch=1, global_batch=64, sharding=Sharding.ZERO1)


def launch(framework, model, layout, graphs=None):
    return emit.training(framework, catalog.load_model(model), catalog.system_for("p5.48xlarge"), layout,
                         graphs=graphs)


def bridge_model(r):
    doc = yaml.safe_load(r.text)
    assert {f"model.{k}" for k in doc["model"]} <= BRIDGE_KEYS, {f"model.{k}" for k in doc["model"]} - BRIDGE_KEYS
    return doc["model"]


@pytest.mark.parametrize("graphs, impl, scope", [
    (CudaGraphs.NONE, None, None), (CudaGraphs.PARTIAL, "transformer_engine", "moe_router moe_preprocess"),
    (CudaGraphs.FULL, "local", "full_iteration"),
])
def test_cuda_graph_capture_is_emitted(graphs, impl, scope):
    args = megatron_args(launch("megatron", "qwen3-30b-a3b", NODE, graphs).text)
    assert set(args) <= MEGATRON_FLAGS, set(args) - MEGATRON_FLAGS
    assert args.get("--cuda-graph-impl") == impl and args.get("--cuda-graph-scope") == scope
    mdl = bridge_model(launch("nemo", "qwen3-30b-a3b", NODE, graphs))
    assert mdl.get("cuda_graph_impl") == impl
    if graphs == CudaGraphs.FULL:  # Megatron-Bridge's perf recipes: cuda_graph_impl local, modules full_iteration
        assert mdl["cuda_graph_modules"] == "full_iteration" and "cuda_graph_scope" not in mdl
    else:
        assert mdl.get("cuda_graph_scope") == (scope.split() if scope else None)


@pytest.mark.parametrize("schedule", [Schedule.ONE_F_ONE_B, Schedule.ONE_F_ONE_B_OVERLAP, Schedule.DUALPIPE])
def test_all_to_all_overlap_follows_the_schedule(schedule):
    layout = replace(WIDE, schedule=schedule)
    r = launch("megatron", "deepseek-v3", layout)
    args = megatron_args(r.text)
    assert set(args) <= MEGATRON_FLAGS, set(args) - MEGATRON_FLAGS
    overlapped = schedule != Schedule.ONE_F_ONE_B
    assert ("--overlap-moe-expert-parallel-comm" in args) == overlapped
    assert ("--delay-wgrad-compute" in args) == overlapped
    assert any(n.startswith("schedule dualpipe") for n in r.no_equivalent) == (schedule == Schedule.DUALPIPE)
    assert bridge_model(launch("nemo", "deepseek-v3", layout)).get("overlap_moe_expert_parallel_comm") == (
        True if overlapped else None)


def test_dispatcher_is_deepep_where_the_forecast_dispatched_hierarchically():
    wide = megatron_args(launch("megatron", "deepseek-v3", WIDE).text)
    assert wide["--moe-token-dispatcher-type"] == "flex" and wide["--moe-enable-deepep"] is True
    assert wide["--expert-model-parallel-size"] == "64" and wide["--expert-tensor-parallel-size"] == "1"
    mdl = bridge_model(launch("nemo", "deepseek-v3", WIDE))
    assert (mdl["moe_token_dispatcher_type"], mdl["moe_flex_dispatcher_backend"]) == ("flex", "deepep")
    inside = replace(WIDE, ep=8)  # the group of 8 stays in one node: plain all-to-all
    for model, layout in (("deepseek-v3", inside), ("qwen3-30b-a3b", NODE)):  # qwen3: no group limit
        args = megatron_args(launch("megatron", model, layout).text)
        assert args["--moe-token-dispatcher-type"] == "alltoall" and "--moe-enable-deepep" not in args


def test_a_forecast_launches_with_the_capture_it_assumed():
    layout = dict(tp=1, pp=1, dp=8, ep=8, etp=1, micro_batch=1, global_batch=64, recompute="none", sharding="zero1",
                  sequence_parallel=False, dtype="bf16", schedule="1f1b-overlap", cp=1, vp=1)
    r = flopcast.train("qwen3-30b-a3b", "p5.48xlarge", 8, cuda_graphs="partial", **layout)
    args = megatron_args(r.launch("megatron").text)
    assert args["--cuda-graph-impl"] == "transformer_engine" and "--overlap-moe-expert-parallel-comm" in args
    eager = flopcast.train("qwen3-30b-a3b", "p5.48xlarge", 8, **layout)  # a GPU's default: eager
    assert "--cuda-graph-impl" not in megatron_args(eager.launch("megatron").text)


@pytest.mark.parametrize("framework, hardware, layout", [
    ("neuron", "trn2.48xlarge", Layout(tp=4, pp=1, dp=16, ep=8, etp=4, micro_batch=1, global_batch=64,
                                       schedule=Schedule.ONE_F_ONE_B_OVERLAP)),
    ("maxtext", "tpu-v5p-pod", Layout(tp=1, pp=1, dp=64, ep=8, micro_batch=1, global_batch=64,
                                      schedule=Schedule.ONE_F_ONE_B_OVERLAP)),
])
def test_frameworks_without_the_overlap_say_so(framework, hardware, layout):
    r = emit.training(framework, catalog.load_model("qwen3-30b-a3b"), catalog.system_for(hardware), layout)
    assert any(n.startswith("schedule 1f1b-overlap") for n in r.no_equivalent), r.no_equivalent
