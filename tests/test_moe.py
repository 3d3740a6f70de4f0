"""Mixture-of-experts training as frontier runs do it: DualPipe and combined 1F1B, group-limited dispatch, load
imbalance, shared experts, interleaved dense/MoE layers, multi-token prediction; checked against DeepSeek-V3."""

import dataclasses
import json

import pytest

import flopcast
from flopcast import catalog
from flopcast.cli import main
from flopcast.cost import comm, params, pipeline
from flopcast.model.strategy import Layout, LayoutBatch, Recompute, Schedule, Sharding
from flopcast.model.system import Dtype
from flopcast.plan import search
from flopcast.simulate import training

# DeepSeek-V3 technical report (arXiv:2412.19437) Table 1: 2.664M H800 GPU-hours of pre-training for 14.8T tokens
DEEPSEEK_GPU_HOURS_PER_T = 2.664e6 / 14.8
DEEPSEEK_LAYOUT = dict(tp=1, pp=16, dp=128, ep=64, dtype="fp8", global_batch=15360)  # sec. 3.2, 4.2


@pytest.mark.parametrize("name, total, active", [
    ("deepseek-v3", 671e9, 37e9),  # report: 671B total, 37B activated (our active count adds the input embedding)
    ("qwen3-235b-a22b", 235e9, 22e9),  # Qwen3 technical report Table 2
    ("llama4-maverick", 400e9, 17e9),  # Meta, "The Llama 4 herd": 400B total, 17B active
])
def test_moe_params_match_published_totals(name, total, active):
    m = catalog.load_model(name)
    assert params.total_params(m) == pytest.approx(total, rel=0.01)
    assert params.active_params(m) == pytest.approx(active, rel=0.03)


def test_interleaved_and_mtp_layers_are_counted():
    maverick = catalog.load_model("llama4-maverick")
    assert (maverick.moe_layers, maverick.dense_layers) == (24, 24)  # interleave_moe_layer_step 2
    ds = catalog.load_model("deepseek-v3")
    # the 14B MTP module of the report holds its own copy of the embedding and head in the checkpoint
    assert params.mtp_params(ds) + 2 * ds.vocab * ds.hidden == pytest.approx(14e9, rel=0.05)
    no_mtp = dataclasses.replace(ds, mtp_layers=0)
    assert training.model_flops_per_token(ds) > training.model_flops_per_token(no_mtp)


def test_pipeline_formulas_by_hand():
    # DualPipe (DeepSeek-V3 Table 2): (PP/2 - 1)(F&B + B - 3W) = 3 x (3 + 2 - 3) with pp 8
    assert pipeline.bubble_time(Schedule.DUALPIPE, 8.0, 1.0, 9.0, 3.0, 2.0, 1.0) == pytest.approx(6.0)
    assert pipeline.bubble_time(Schedule.ONE_F_ONE_B, 8.0, 1.0, 2.0, 3.0, 2.0, 1.0) == pytest.approx(14.0)
    # 5 s of all-to-all on 1/1.2 of the SMs, then the rest of 10 s of compute at full speed
    assert pipeline.overlapped_stage_time(10.0, 5.0, 1.2) == pytest.approx(5.0 + 10.0 - 5.0 / 1.2)
    assert pipeline.overlapped_stage_time(10.0, 20.0, 1.2) == pytest.approx(20.0)
    assert pipeline.overlapped_stage_time(10.0, 0.0, 1.2) == pytest.approx(10.0)
    assert comm.expected_distinct(4, 8) == pytest.approx(4 * (1 - 0.75**8))


def test_group_limited_dispatch_crosses_fewer_nodes():
    system, cal = catalog.load_system("hgx-h800"), catalog.calibration()
    plain = comm.dispatch_time(4096.0, 7168 * 2, 8, 64.0, 1.0, system, cal)
    limited = comm.dispatch_time(4096.0, 7168 * 2, 8, 64.0, 1.0, system, cal, groups=8, topk_groups=4)
    assert limited < 0.6 * plain  # ~3.2 remote nodes per token instead of 7 remote copies
    inside = dict(groups=8, topk_groups=4)
    assert comm.dispatch_time(4096.0, 7168 * 2, 8, 8.0, 1.0, system, cal, **inside) == pytest.approx(
        comm.dispatch_time(4096.0, 7168 * 2, 8, 8.0, 1.0, system, cal))  # one node: nothing to deduplicate


def _deepseek(schedule, **kw):
    return flopcast.train("deepseek-v3", hardware="hgx-h800", chips=2048, schedule=schedule, **{**DEEPSEEK_LAYOUT,
        **kw})


def test_deepseek_v3_dualpipe_within_15pct_of_reported_gpu_hours():
    r = _deepseek("dualpipe")
    gpu_hours_per_t = 1e12 / r.tokens_per_s_per_chip / 3600
    assert gpu_hours_per_t == pytest.approx(DEEPSEEK_GPU_HOURS_PER_T, rel=0.15)
    parts = r.time_breakdown_s
    assert parts["comm/ep"] > 0 and parts["bubble"] > 0
    assert sum(parts.values()) == pytest.approx(r.step_time_s)
    # the same layout without overlap: the all-to-all is exposed and the bubble is 1F1B's (about 10% slower
    # with the shipped calibration; the margin moves with the fitted Hopper GEMM efficiency)
    plain = _deepseek("1f1b")
    assert plain.step_time_s > 1.05 * r.step_time_s
    assert plain.time_breakdown_s["comm/ep"] > 2 * parts["comm/ep"]
    assert plain.time_breakdown_s["bubble"] > parts["bubble"]


def _layout(**kw):
    base = dict(tp=1, pp=16, dp=128, ep=64, micro_batch=1, global_batch=15360, recompute=Recompute.SELECTIVE,
                sharding=Sharding.ZERO2, sequence_parallel=False, dtype=Dtype.FP8, schedule=Schedule.DUALPIPE)
    return Layout(**{**base, **kw})


def test_overlap_schedules_memory_and_scalar_vector_agreement():
    m, s, cal = catalog.load_model("deepseek-v3"), catalog.load_system("hgx-h800"), catalog.calibration()
    layouts = [_layout(), _layout(schedule=Schedule.ONE_F_ONE_B), _layout(schedule=Schedule.ONE_F_ONE_B_OVERLAP, vp=2),
               _layout(schedule=Schedule.INTERLEAVED, vp=2), _layout(schedule=Schedule.ONE_F_ONE_B_OVERLAP)]
    batch = training.evaluate(m, s, LayoutBatch.of(layouts), cal)
    for i, lay in enumerate(layouts):
        one = training.evaluate(m, s, LayoutBatch.of([lay]), cal)
        assert one["step_time_s"][0] == pytest.approx(batch["step_time_s"][i], rel=1e-12)
        assert one["memory_bytes"][0] == pytest.approx(batch["memory_bytes"][i], rel=1e-12)
    w = batch["memory_parts"]["weights"]
    assert w[0] == pytest.approx(2 * w[1])  # DualPipe keeps two copies of its stages' parameters
    act = batch["memory_parts"]["activations"]
    assert act[4] > act[1]  # combined 1F1B holds one more micro-batch in flight
    step = batch["step_time_s"]
    assert step[2] < step[3] and step[4] < step[1]  # hiding the all-to-all pays


def test_overlap_costs_nothing_without_an_all_to_all():
    m, s, cal = catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge"), catalog.calibration()
    lay = Layout(tp=1, pp=4, dp=2, micro_batch=1, global_batch=64, dtype=Dtype.BF16)
    r = training.evaluate(m, s, LayoutBatch.of([lay, dataclasses.replace(lay, schedule=Schedule.ONE_F_ONE_B_OVERLAP)]),
                          cal)
    assert r["step_time_s"][1] == pytest.approx(r["step_time_s"][0])


def test_load_imbalance_and_capacity_slow_the_busiest_rank():
    m, s, cal = catalog.load_model("qwen3-30b-a3b"), catalog.load_system("p5.48xlarge"), catalog.calibration()
    lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=16, ep=16, micro_batch=1, global_batch=64, dtype=Dtype.BF16)])
    base = training.evaluate(m, s, lay, cal)
    for moe in (dataclasses.replace(m.moe, imbalance=1.3), dataclasses.replace(m.moe, capacity_factor=1.25)):
        r = training.evaluate(dataclasses.replace(m, moe=moe), s, lay, cal)
        assert r["step_time_s"][0] > base["step_time_s"][0]
        assert r["time_parts"]["comm/ep"][0] > base["time_parts"]["comm/ep"][0]
        assert r["memory_parts"]["activations"][0] > base["memory_parts"]["activations"][0]


def test_search_chooses_among_the_overlapping_schedules_for_moe_only():
    m, s, cal = catalog.load_model("deepseek-v3"), catalog.load_system("hgx-h800"), catalog.calibration()
    space = search.SearchSpace(tp=(1,), pp=(16,), ep=(64,), micro_batch=(1,), global_batch=(15360,),
                               dtype=(Dtype.FP8,), sharding=(Sharding.ZERO2,), sequence_parallel=(0,))
    out = search.search(m, s, 2048, cal, space)
    assert {Schedule.DUALPIPE, Schedule.ONE_F_ONE_B_OVERLAP} <= set(out.batch.schedule.tolist())
    dense, _, _ = search.candidates(catalog.load_model("llama3-8b"), s, 16, search.SearchSpace(pp=(2,)))
    assert Schedule.DUALPIPE not in set(dense.schedule.tolist())


def _cli(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


LLAMA4_STYLE = """name: tiny interleaved MoE
layers: 8
hidden: 1024
heads: 8
kv_heads: 2
ffn_hidden: 4096
vocab: 32000
seq_len: 2048
mlp: swiglu
moe: {experts: 16, topk: 1, expert_ffn: 1024, shared_experts: 1, layer_freq: 2}
"""
SHARED_MTP = """name: tiny DeepSeek-style MoE
layers: 6
hidden: 1024
heads: 8
ffn_hidden: 4096
vocab: 32000
seq_len: 2048
mlp: swiglu
mtp_layers: 1
moe: {experts: 32, topk: 4, expert_ffn: 512, shared_experts: 2, dense_layers: 1, groups: 4, topk_groups: 2,
      capacity_factor: 1.25}
mla: {q_lora_rank: 256, kv_lora_rank: 128, qk_nope_head_dim: 64, qk_rope_head_dim: 32, v_head_dim: 64}
"""


@pytest.mark.parametrize("text, moe_layers", [(LLAMA4_STYLE, 4), (SHARED_MTP, 5)])
def test_moe_user_files_train_infer_and_serve(tmp_path, capsys, text, moe_layers):
    path = tmp_path / "model.yaml"
    path.write_text(text)
    m = catalog.load_model(str(path))
    assert m.moe_layers == moe_layers
    t = _cli(["train", str(path), "--hardware", "p5.48xlarge", "--chips", "16", "--ep", "8", "--global-batch", "64",
              "--json"], capsys)
    assert t["fits"] and t["step_time_s"] > 0
    i = _cli(["infer", str(path), "--hardware", "p5.48xlarge", "--json"], capsys)
    assert i["ttft_s"] > 0 and i["tpot_s"] > 0
    for ep in ("1", "8"):  # replicated, and the experts spread over the node's chips
        s = _cli(["serve", str(path), "--hardware", "p5.48xlarge", "--ep", ep, "--qps", "2", "--requests", "20",
                  "--json"], capsys)
        assert s["completed"] == 20 and s["ep"] == int(ep) and s["output_tokens_per_s"] > 0


def test_validation_rows_state_interleave_and_shared_experts():
    """Llama 4 Maverick's row states its interleave and shared expert (moe_layer_freq 2, moe_shared_experts 1): the
    row-built model has 24 MoE layers and about the published 400B parameters, not 48 MoE layers and twice that."""
    from flopcast.validate import training as vt
    cases = {c.run_id: c for c in vt.load_cases("validation/more_training_runs.csv")[0]}
    maverick, scout = cases["d-50"].model, cases["d-51"].model
    assert (maverick.moe_layers, maverick.dense_layers, maverick.moe.shared_experts) == (24, 24, 1)
    assert (scout.moe_layers, scout.moe.shared_experts) == (48, 1)
    assert params.total_params(maverick) == pytest.approx(400e9, rel=0.05)


# Expert tensor parallelism decoupled from the attention's (Megatron-Core --expert-tensor-parallel-size; MoE
# Parallel Folding, Liu et al. 2025, arXiv:2504.14960)
ETP_LAYOUT = dict(tp=4, pp=1, dp=4, ep=4, micro_batch=1, global_batch=64, sequence_parallel=True, recompute="none",
                  sharding="zero1", schedule="1f1b")


def test_etp_defaults_to_tp_and_splits_the_experts():
    m, hw = "mixtral-8x7b", "p5.48xlarge"
    default = flopcast.train(m, hardware=hw, chips=16, **ETP_LAYOUT, etp=0)
    same = flopcast.train(m, hardware=hw, chips=16, **ETP_LAYOUT, etp=4)
    assert default.layout.expert_tp == 4 and default.step_time_s == pytest.approx(same.step_time_s, rel=1e-12)
    whole = flopcast.train(m, hardware=hw, chips=16, **ETP_LAYOUT, etp=1)
    assert whole.layout.as_dict()["etp"] == 1 and "etp=1" in whole.layout.describe()
    # unsplit experts hold 4x the expert weights per chip (ZeRO-1 leaves weights whole)
    model = catalog.load_model(m)
    expert = params.moe_params(model)[0] * model.moe_layers  # routed parameters, all layers (bf16: 2 bytes each)
    gained = whole.memory_breakdown_bytes["weights"] - same.memory_breakdown_bytes["weights"]
    assert gained == pytest.approx(expert * 2 * (1 / 4 - 1 / 16), rel=1e-6)
    # with etp = tp the expert group gathers its tokens over tp; with etp = 1 there is nothing to gather
    assert same.time_breakdown_s["comm/ep"] > whole.time_breakdown_s["comm/ep"]


def test_etp_folds_ep_over_the_tp_ranks():
    """ep = 8 over a tp = 8 node with dp = 1 exists only with etp = 1 (etp x ep must divide tp x cp x dp)."""
    m, s = catalog.load_model("mixtral-8x7b"), catalog.load_system("p5.48xlarge")
    folded = Layout(tp=8, pp=1, dp=1, ep=8, etp=1, global_batch=8, sequence_parallel=True)
    rules = search.rules(m, s, LayoutBatch.of([folded, dataclasses.replace(folded, etp=0)]), 8, exact_chips=True)
    assert rules[search.EP_RULE].tolist() == [True, False]
    r = flopcast.train("mixtral-8x7b", hardware="p5.48xlarge", chips=8, tp=8, pp=1, ep=8, etp=1, global_batch=8,
                       sequence_parallel=True)
    assert r.layout.ep == 8 and r.layout.expert_tp == 1
    with pytest.raises(flopcast.FlopcastError, match="etp x ep divides tp x cp x dp"):
        flopcast.train("mixtral-8x7b", hardware="p5.48xlarge", chips=8, tp=8, pp=1, ep=8, etp=8, global_batch=8,
                       sequence_parallel=True, micro_batch=1, recompute="none", sharding="zero1", schedule="1f1b",
                       dtype="bf16", vp=1, cp=1)


def test_the_search_tries_etp_one_for_moe_and_the_emitters_state_it(capsys):
    m, s = catalog.load_model("mixtral-8x7b"), catalog.load_system("p5.48xlarge")
    lb, _, _ = search.candidates(m, s, 16, search.SearchSpace(tp=(4,), pp=(1,), global_batch=(64,)))
    assert {0, 1} <= set(lb.etp.tolist())
    dense, _, _ = search.candidates(catalog.load_model("llama3-8b"), s, 16, search.SearchSpace(tp=(4,)))
    assert set(dense.etp.tolist()) == {0}
    args = ["train", "mixtral-8x7b", "-H", "p5.48xlarge", "-n", "16", "--tp", "4", "--pp", "1", "--ep", "4",
            "--etp", "1", "--global-batch", "64", "--sequence-parallel"]
    assert main(args + ["--emit", "megatron"]) == 0
    assert "--expert-tensor-parallel-size 1" in capsys.readouterr().out
    assert main(args + ["--emit", "nemo"]) == 0
    assert "expert_tensor_parallel_size: 1" in capsys.readouterr().out
    assert main(["train", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", "--tp", "8", "--etp", "1"]) == 2
    assert "dense model" in capsys.readouterr().err


def test_validation_rows_state_etp(tmp_path):
    from flopcast.validate import training as vt
    cases, skipped = vt.load_cases("validation/moe_training_runs.csv")
    assert not skipped
    assert {c.run_id: c.space.etp for c in cases}["moe-10"] == (1,)


def test_the_all_to_all_is_exposed_unless_a_schedule_overlaps_it():
    """The token dispatcher's all-to-alls sit on the compute stream: the tensor-parallel overlap share does not hide
    them; only the overlapping schedules do."""
    m, s = catalog.load_model("qwen3-30b-a3b"), catalog.load_system("p5.48xlarge")
    lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=16, ep=16, micro_batch=1, global_batch=64, dtype=Dtype.BF16)])
    cal = catalog.calibration()
    parts = [training.evaluate(m, s, lay, dataclasses.replace(cal, tp_overlap=o))["time_parts"]["comm/ep"][0]
             for o in (0.0, 0.9)]
    assert parts[0] > 0 and parts[0] == pytest.approx(parts[1])


def test_cuda_graphs_remove_the_router_and_preprocessing_host_calls():
    from flopcast.model.strategy import MODERN_SOFTWARE, CudaGraphs
    from flopcast.simulate import layer
    m, s, cal = catalog.load_model("qwen3-30b-a3b"), catalog.load_system("dgx-b200"), catalog.calibration()
    lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=8, ep=8, micro_batch=1, global_batch=64, dtype=Dtype.BF16)])
    eager = training.evaluate(m, s, lay, cal)
    graphed, compiled = (training.evaluate(m, s, lay, cal, software=dataclasses.replace(MODERN_SOFTWARE, cuda_graphs=g))
                         for g in (CudaGraphs.PARTIAL, CudaGraphs.FULL))
    # one micro-batch of 4,096 tokens on 16 local experts is host-bound: each MoE layer's forward waits for the host
    saved = m.moe_layers * (layer.MOE_HOST_OPS - layer.MOE_HOST_OPS_GRAPHED) * cal.moe_host_op_s * eager["microbatches"]
    assert eager["step_time_s"][0] - graphed["step_time_s"][0] == pytest.approx(saved[0], rel=1e-6)
    # a compiled step issues no operator from the host: faster still, and no longer host-bound
    assert compiled["step_time_s"][0] < graphed["step_time_s"][0]
    assert layer.moe_host_ops(CudaGraphs.FULL, 16.0) == 0.0


def test_blank_cuda_graphs_is_the_frameworks_default_for_the_chip():
    """Unstated, a GPU run is eager (Megatron-Core's default) and a TPU or Trainium run is one compiled program (XLA,
    Neuron), so the MoE host floor applies only where operators are issued from the host."""
    from flopcast.model.strategy import MODERN_SOFTWARE, CudaGraphs, default_cuda_graphs
    assert MODERN_SOFTWARE.cuda_graphs is None
    assert MODERN_SOFTWARE.graphs_on("nvidia-hopper") == default_cuda_graphs("nvidia-blackwell") == CudaGraphs.NONE
    assert MODERN_SOFTWARE.graphs_on("tpu") == MODERN_SOFTWARE.graphs_on("trainium") == CudaGraphs.FULL
    m, s, cal = catalog.load_model("qwen3-30b-a3b"), catalog.load_system("tpu-v5p-pod"), catalog.calibration()
    lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=64, ep=8, micro_batch=1, global_batch=64, dtype=Dtype.BF16)])
    default = training.evaluate(m, s, lay, cal)["step_time_s"][0]
    eager = training.evaluate(m, s, lay, cal, software=dataclasses.replace(MODERN_SOFTWARE,
                                                                           cuda_graphs=CudaGraphs.NONE))
    assert default < eager["step_time_s"][0]


def test_cuda_graphs_switch_on_train_and_search(capsys):
    args = ["qwen3-30b-a3b", "-H", "dgx-b200", "-n", "8", "--tp", "1", "--pp", "1", "--ep", "8", "--micro-batch", "1",
            "--global-batch", "64", "--dtype", "bf16", "--recompute", "none", "--sharding", "zero1", "--json"]
    steps = {}
    for g in ("none", "partial", "full"):
        assert main(["train", *args, "--cuda-graphs", g]) == 0
        steps[g] = json.loads(capsys.readouterr().out)["step_time_s"]
    assert main(["train", *args]) == 0
    assert json.loads(capsys.readouterr().out)["step_time_s"] == steps["none"]  # a GPU's default: eager
    assert steps["none"] > steps["partial"] > steps["full"]
    assert main(["search", *args[:9], "--cuda-graphs", "partial", "--top", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["top"]
    assert main(["train", *args, "--cuda-graphs", "some"]) == 2
    assert "--cuda-graphs" in capsys.readouterr().err


def test_validation_rows_state_cuda_graphs(tmp_path):
    from flopcast.model.strategy import CudaGraphs
    from flopcast.validate import training as vt
    cases, _ = vt.load_cases("validation/moe_training_runs.csv")
    graphs = {c.run_id: c.software.graphs_on(c.system.chip.family) for c in cases}
    assert graphs["moe-11"] == CudaGraphs.PARTIAL and graphs["moe-14"] == graphs["moe-1"] == CudaGraphs.NONE
    text = open("validation/moe_training_runs.csv").read().replace(",partial,", ",sometimes,", 1)
    (tmp_path / "runs.csv").write_text(text)
    _, skipped = vt.load_cases(str(tmp_path / "runs.csv"))
    assert any("cuda_graphs 'sometimes'" in k.reason for k in skipped)


def test_validate_reports_moe_apart_from_dense_in_text_and_json(tmp_path, capsys):
    lines = open("validation/calibration_runs.csv").read().splitlines()
    dense = next(line for line in lines[1:] if line.split(",")[13] == "")  # moe_experts blank
    moe = next(line for line in lines[1:] if line.startswith("82,"))  # Qwen3-30B-A3B on 8 B200
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([lines[0], dense, moe]) + "\n")
    assert main(["validate", str(path), "--json"]) == 0
    kinds = json.loads(capsys.readouterr().out)["summary"]["by_kind"]
    assert kinds["dense"]["n"] == 1 and kinds["moe"]["n"] == 1
    assert main(["validate", str(path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("dense / MoE"))
    assert "dense" in line.split(":", 1)[1] and "moe" in line.split(":", 1)[1]
