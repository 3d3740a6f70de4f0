"""Rows a user could write are predicted: blank dtype searched, blank architecture cells filled and said,
the source's date read from a date column or the locator before a bare year in the source id."""

import datetime as dt

from flopcast import catalog
from flopcast.model.system import Dtype
from flopcast.validate import training as vt

ROW = {"run_id": "x", "source": "Someone-2021", "model": "my-model", "layers": "24", "hidden": "2048", "heads": "16",
       "seq_len": "2048", "mlp": "gelu", "hardware": "h100-sxm", "chips": "8", "global_batch": "64", "dtype": "",
       "measured_tokens_per_s_per_chip": "1000"}


def test_date_column_then_locator_then_source_id():
    assert vt.source_date(ROW) == dt.date(2021, 1, 1)
    row = {**ROW, "source_locator": "[source date: 2023-06-02] repo@abc123:README.md L3"}
    assert vt.source_date(row) == dt.date(2023, 6, 2)
    assert vt.source_date({**row, "date": "2024-02-29"}) == dt.date(2024, 2, 29)


def test_blank_dtype_is_searched_with_fp8_only_where_the_chip_and_the_date_allow():
    h100 = catalog.system_for("h100-sxm")
    assert vt.dtypes_of({**ROW, "source": "Someone-2021"}, h100) == (Dtype.BF16,)  # before FP8 training existed
    assert vt.dtypes_of({**ROW, "source": "Someone-2024"}, h100) == (Dtype.BF16, Dtype.FP8)
    a100 = catalog.system_for("a100-80gb")  # no FP8 units
    assert vt.dtypes_of({**ROW, "source": "Someone-2024"}, a100) == (Dtype.BF16,)
    assert vt.dtypes_of({**ROW, "dtype": "fp8"}, a100) == (Dtype.FP8,)  # a stated cell is kept
    case = vt.case_of({**ROW, "source": "Someone-2024"})
    assert "dtype" in case.chosen and set(case.space.dtype) == {Dtype.BF16, Dtype.FP8}


def test_blank_architecture_cells_come_from_a_relative_or_a_default_and_are_said():
    gpt = catalog.load_model("gpt3-175b")
    row = {**ROW, "layers": "90", "hidden": str(gpt.hidden), "heads": str(gpt.heads), "dtype": "bf16"}
    model, said = vt.model_and_assumptions(row)
    assert model.vocab == gpt.vocab and model.kv_heads == gpt.heads
    assert any("vocab" in s and "same hidden and heads" in s for s in said)
    odd = {**row, "hidden": "1000", "heads": "10", "mlp": "swiglu"}
    model, said = vt.model_and_assumptions(odd)
    assert model.vocab == vt.DEFAULT_VOCAB and model.kv_heads == 10
    assert model.ffn_hidden == 2816  # 8 x 1000 / 3 = 2667, rounded up to a multiple of 256
    assert len(said) == 3 and all("default" in s for s in said)


def test_the_relative_of_a_row_is_the_one_of_its_stated_size():
    # Llama 2 7B and Llama 3 8B share 32 layers of 4096 x 32 heads; a row of 8.0B parameters is Llama 3 8B
    llama3 = catalog.load_model("llama3-8b")
    row = {**ROW, "model": "My 8B", "layers": "32", "hidden": "4096", "heads": "32", "mlp": "swiglu",
           "dtype": "bf16"}
    model, said = vt.model_and_assumptions({**row, "params_b": "8.0"})
    assert (model.kv_heads, model.ffn_hidden, model.vocab) == (llama3.kv_heads, llama3.ffn_hidden, llama3.vocab)
    assert any("llama3-8b" in s for s in said)
    model, said = vt.model_and_assumptions({**row, "params_b": "6.7"})
    assert model.vocab == catalog.load_model("llama2-7b").vocab


def test_a_row_without_dimensions_names_what_it_lacks():
    rows = vt.run_validation([vt.VALIDATION_DIR / "more_training_runs.csv"], catalog.calibration())
    skipped = [r for r in rows if r.status == "skipped"]
    assert all("lacks layers, hidden, heads" in r.reason for r in skipped)
    assert len(rows) - len(skipped) >= 48


def test_short_names_name_the_shipped_files():
    assert [p.name for p in vt.resolve_files("training")] == ["calibration_runs.csv", "more_training_runs.csv"]
    assert [p.name for p in vt.resolve_files("more_inference_runs")] == ["more_inference_runs.csv"]
    assert vt.resolve_files("my_runs.csv")[0].name == "my_runs.csv"  # a path is a path
    cases, skipped = vt.load_cases("training")
    assert len(cases) + len(skipped) == 140
