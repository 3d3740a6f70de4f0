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
