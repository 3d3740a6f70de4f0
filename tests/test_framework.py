"""A row's training framework decides how its ZeRO-3 gathers parameters: DeepSpeed per tensor with a 5e7-parameter
prefetch bucket, PyTorch FSDP / Megatron-Core / XLA FSDP one block ahead. Keyed on what the row names, not on
its source."""

import math

import pytest

from flopcast import catalog
from flopcast.model.strategy import Layout, LayoutBatch, Recompute, Sharding
from flopcast.model.system import Dtype
from flopcast.simulate import training
from flopcast.validate import training as vt

ROW = {"source": "some-2024-paper", "source_locator": "Table 3", "notes": ""}


@pytest.mark.parametrize("cells, expected", [
    ({"framework": "DeepSpeed 0.14"}, "deepspeed"),
    ({"notes": "trained with PyTorch FSDP (full shard)"}, "fsdp"),
    ({"source_locator": "MaxText benchmark_runner"}, "maxtext"),
    ({}, ""),
])
def test_framework_named_in_a_cell(cells, expected):
    assert vt.framework_of({**ROW, **cells}) == expected


def test_the_framework_column_wins_over_the_notes():
    assert vt.framework_of({**ROW, "framework": "deepspeed", "notes": "compared with FSDP"}) == "deepspeed"


def test_deepspeed_limits_the_zero3_prefetch_whatever_the_date():
    modern = vt.software_of({**ROW, "date": "2024-06-01", "framework": "deepspeed"})
    assert modern.flash_attention  # the date still decides the rest of the software
    assert modern.zero3_prefetch_params == pytest.approx(5e7)
    assert modern.zero3_gathers_per_layer > 1
    fsdp_2021 = vt.software_of({**ROW, "date": "2021-04-09", "framework": "fsdp"})
    assert not fsdp_2021.flash_attention
    assert math.isinf(fsdp_2021.zero3_prefetch_params) and fsdp_2021.zero3_gathers_per_layer == 1


def test_axlearn_fuji_attention_is_unfused_before_its_flash_variant():
    """AXLearn's fuji configurations gained fused attention on 4 June 2024 (apple/axlearn#506): a fuji figure
    dated before runs XLA's unfused attention; other frameworks of that date keep FlashAttention."""
    axlearn = {**ROW, "framework": "axlearn"}
    assert not vt.software_of({**axlearn, "date": "2024-06-03"}).flash_attention
    assert vt.software_of({**axlearn, "date": "2024-06-04"}).flash_attention
    assert vt.software_of({**ROW, "date": "2024-06-03", "framework": "megatron"}).flash_attention
    assert vt.software_of({**axlearn, "source": "fuji-comment"}).flash_attention  # undated: today's software


def test_axlearn_rows_are_dated_by_the_commit_of_their_comment():
    cases, _ = vt.load_cases("more_training_runs")
    fuji = {c.run_id: c for c in cases if c.source == "axlearn-fuji-code-comment"}
    assert {r for r, c in fuji.items() if not c.software.flash_attention} == {"d-1", "d-2", "d-3", "d-4", "d-5",
                                                                               "d-10"}


def test_deepspeed_zero3_exposes_more_of_its_gathers_than_fsdp():
    model, system, cal = catalog.load_model("gpt3-175b"), catalog.system_for("a100-80gb"), catalog.calibration()
    lay = Layout(tp=1, pp=1, dp=512, micro_batch=2, global_batch=1024, recompute=Recompute.FULL,
                 sharding=Sharding.ZERO3, sequence_parallel=False, dtype=Dtype.BF16)

    def comm(framework):
        sw = vt.software_of({**ROW, "date": "2024-06-01", "framework": framework})
        res = training.evaluate(model, system, LayoutBatch.of([lay]), cal, software=sw)
        return float(res["time_parts"]["comm/dp"][0])
    assert comm("deepspeed") > comm("fsdp") >= 0.0


def test_a_2021_row_naming_its_framework_keeps_the_2021_software_rules():
    """MT-NLG (January 2022, Megatron-DeepSpeed) names Megatron: its blank cells are still searched without
    sequence parallelism, and recompute none or full, as the software of its date allowed."""
    cases, _ = vt.load_cases("calibration_runs")
    mt_nlg = [c for c in cases if c.source == "MT-NLG-2022"]
    assert mt_nlg
    for c in mt_nlg:
        assert c.space.sequence_parallel == (0,)
        assert not c.software.flash_attention


def test_a_csv_with_the_framework_column_is_read(tmp_path):
    """The declared training schema knows the column (validation/README.md documents it)."""
    from flopcast.validate.rows import TRAINING

    TRAINING.check_header(["run_id", "framework"], "test.csv")  # raises on an unknown column
    f = tmp_path / "fw.csv"
    f.write_text("run_id,source,model,layers,hidden,heads,seq_len,hardware,chips,global_batch,dtype,framework,"
                 "measured_tokens_per_s_per_chip\n"
                 "x,s,gpt3-175b,96,12288,96,2048,dgx-a100-80gb,1024,1536,bf16,megatron,100\n")
    from flopcast import api

    res = api.validate(str(f))
    assert res.to_dict()["summary"]["n_ok"] == 1


def test_a_stated_attention_cell_overrides_the_date(tmp_path):
    """The `attention` column (fused / unfused) says what the run's launch script used; neuronx-nemo-megatron's
    scripts of Neuron 2.13-2.15 offer no fused attention, and state full (Llama) or selective (GPT)
    recomputation."""
    cases, _ = vt.load_cases("more_training_runs")
    neuron = {c.run_id: c for c in cases if c.source == "Neuron-trn1-trn1_trn1n_nlp_data"}
    assert {r for r, c in neuron.items() if not c.software.flash_attention} == {"d-15", "d-16", "d-17"}
    assert neuron["d-16"].space.recompute == (Recompute.FULL,)
    assert neuron["d-15"].space.recompute == (Recompute.SELECTIVE,)
    lines = open("validation/more_training_runs.csv", newline="").read().splitlines()
    row = next(line for line in lines if line.startswith("d-16,"))
    (tmp_path / "runs.csv").write_text("\n".join([lines[0], row.replace(",unfused", ",maybe")]) + "\n")
    _, skipped = vt.load_cases(str(tmp_path / "runs.csv"))
    assert any("attention 'maybe'" in k.reason for k in skipped)


def test_unfused_attention_is_slower_and_holds_its_scores():
    import dataclasses
    model, system, cal = catalog.load_model("llama2-7b"), catalog.system_for("trn1"), catalog.calibration()
    lay = LayoutBatch.of([Layout(tp=4, pp=1, dp=64, micro_batch=1, global_batch=1024, recompute=Recompute.NONE,
                                 sharding=Sharding.ZERO1, dtype=Dtype.BF16)])
    fused = training.evaluate(model, system, lay, cal)
    unfused = training.evaluate(model, system, lay, cal,
                                software=dataclasses.replace(training.MODERN_SOFTWARE, flash_attention=False))
    assert unfused["step_time_s"][0] > fused["step_time_s"][0]
    assert unfused["memory_parts"]["activations"][0] > fused["memory_parts"]["activations"][0]


def test_triton_flash_attention_runs_at_dao_2023s_ratios_to_flashattention_2():
    """FlashAttention in Triton (MPT's attn_impl triton) against FlashAttention-2 on A100, Dao 2023 sec. 4.1: FA2
    1.3-1.5x faster in the forward pass, about 2x in the backward; the scores stay out of memory either way. Only
    A100 is measured, so on Hopper the two kernels take the same time."""
    import dataclasses

    import numpy as np

    from flopcast.model.strategy import FlashKernel
    from flopcast.simulate import layer

    model, chip, cal = catalog.load_model("llama2-7b"), catalog.system_for("a100-80gb").chip, catalog.calibration()
    fam = cal.for_chip(chip)
    x = {"tp": np.array([1.0]), "cp": np.array([1.0]), "b": np.array([2.0]), "peak_attn": 312e12}
    triton = dataclasses.replace(training.MODERN_SOFTWARE, flash_kernel=FlashKernel.TRITON)
    args = (model, chip, fam, x, model.d_head, model.d_head, False)
    fa2_fwd, fa2_flops, fa2_ratio = layer._attention_core(*args, training.MODERN_SOFTWARE)
    tri_fwd, tri_flops, tri_ratio = layer._attention_core(*args, triton)
    assert tri_flops == pytest.approx(fa2_flops)
    assert tri_fwd[0] == pytest.approx(1.4 * fa2_fwd[0])
    assert tri_fwd[0] * tri_ratio == pytest.approx(2.0 * fa2_fwd[0] * fa2_ratio)
    hopper = catalog.system_for("h100-sxm").chip  # measured on A100 only: elsewhere as fast as FlashAttention-2
    assert layer._attention_core(model, hopper, fam, x, model.d_head, model.d_head, False, triton)[0][0] == \
        pytest.approx(layer._attention_core(model, hopper, fam, x, model.d_head, model.d_head, False,
                                            training.MODERN_SOFTWARE)[0][0])
    system = catalog.system_for("a100-80gb")
    lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=8, micro_batch=1, global_batch=64, recompute=Recompute.FULL,
                                 sharding=Sharding.ZERO3, dtype=Dtype.BF16)])
    fast, slow = (training.evaluate(model, system, lay, cal, software=s) for s in (training.MODERN_SOFTWARE, triton))
    assert slow["step_time_s"][0] > fast["step_time_s"][0]
    assert slow["memory_parts"]["activations"][0] == fast["memory_parts"]["activations"][0]


def test_llm_foundry_rows_state_the_triton_kernel_of_their_benchmark_script():
    """llm-foundry's scripts/train/benchmarking/submit_benchmarks.py defaults --attn_impl to triton (300cc5c5,
    061f2c7c) and sweep.sh, which reproduces the tables, passes none: both files' LLM Foundry rows say triton."""
    from flopcast.model.strategy import FlashKernel

    for name, prefix in (("calibration_runs", "LLMFoundry-MPT"), ("published_training_runs", "LLMFoundry-MPT-A100")):
        cases, _ = vt.load_cases(name)
        foundry = [c for c in cases if c.source.startswith(prefix)]
        assert foundry and all(c.software.flash_kernel == FlashKernel.TRITON for c in foundry)
        assert all(c.software.flash_kernel == FlashKernel.FA2 for c in cases if not c.source.startswith(prefix))


def test_torchtitan_holds_its_fp32_loss_copy():
    """torchtitan's loss_fn casts the logits to fp32 before cross_entropy (train.py at 9dec370), so its loss holds 12
    bytes per token and vocab entry at its peak, not Megatron's in-place 4: the 8B FSDP 8 row's memory."""
    import dataclasses

    cases, _ = vt.load_cases("published_training_runs")
    row = next(c for c in cases if c.run_id == "p-21")
    assert row.software.loss_bytes_per_logit == 12.0
    assert all(c.software.loss_bytes_per_logit == 4.0 for c in cases if not c.source.startswith("torchtitan"))
    lay = LayoutBatch.of([Layout(tp=1, pp=1, dp=8, micro_batch=2, global_batch=16, recompute=Recompute.OP,
                                 sharding=Sharding.ZERO3, dtype=Dtype.BF16)])
    cal = catalog.calibration()
    titan = training.evaluate(row.model, row.system, lay, cal, software=row.software)
    megatron = training.evaluate(row.model, row.system, lay, cal,
                                 software=dataclasses.replace(row.software, loss_bytes_per_logit=4.0))
    extra = titan["memory_bytes"][0] - megatron["memory_bytes"][0]
    assert extra == pytest.approx(8.0 * 2 * row.model.seq_len * row.model.vocab)
    # benchmarks/llama3_h100_202412_torchtitan.md Table 1, FSDP + torch.compile: 77.0 GiB (60.8 without the copy)
    assert titan["memory_bytes"][0] / 2**30 == pytest.approx(77.0, rel=0.03)
