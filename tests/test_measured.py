"""Each published kind of measured training figure converts to tokens/s/chip as a hand calculation does."""

import pytest

from flopcast import catalog
from flopcast.errors import FlopcastError
from flopcast.model.system import Dtype
from flopcast.validate import measured as ms
from flopcast.validate import training as vt

# a small SwiGLU model: N = L (4 h^2 + 3 h ffn) + V h = 2 (4*64^2 + 3*64*256) + 1000*64 = 195,072 GEMM weights
MODEL = catalog.model_from_dict("t", dict(layers=2, hidden=64, heads=4, ffn_hidden=256, vocab=1000, seq_len=128,
                                          mlp="swiglu"))
SIX_N = 6 * 195_072
ATTENTION = 12 * 2 * 64 * 128  # PaLM App. B: 12 L H Q T, H Q = hidden


def test_step_time():
    assert ms.from_step_time(10.0, 1024, 2048, 256) == pytest.approx(1024 * 2048 / 10 / 256)  # 819.2


def test_sequences_per_s():
    assert ms.from_sequences_per_s(100.0, 2048, 512) == pytest.approx(400.0)


def test_time_to_train():
    assert ms.from_time_to_train(86_400.0, 1e12, 1024) == pytest.approx(1e12 / 86_400 / 1024)  # 11,302.1


def test_flop_conventions():
    assert ms.flops_per_token(MODEL, ms.FlopsConvention.SIX_N) == SIX_N
    assert ms.flops_per_token(MODEL, ms.FlopsConvention.PALM) == SIX_N + ATTENTION
    assert ms.flops_per_token(MODEL, ms.FlopsConvention.MAXTEXT) == SIX_N + ATTENTION / 2
    assert ms.parse_convention("6N + attention") == ms.FlopsConvention.PALM
    with pytest.raises(FlopcastError, match="valid: 6n"):
        ms.parse_convention("hfu")


def test_model_tflops():
    assert ms.from_model_tflops(200.0, MODEL, ms.FlopsConvention.SIX_N) == pytest.approx(200e12 / SIX_N)


def test_mfu():
    h100 = catalog.load_chip("h100-sxm")
    want = 0.4 * h100.peak(Dtype.BF16) / (SIX_N + ATTENTION)
    assert ms.from_mfu(0.4, MODEL, ms.FlopsConvention.PALM, h100, Dtype.BF16) == pytest.approx(want)


ROW = {"run_id": "x", "source": "S-2024", "model": "my", "layers": "2", "hidden": "64", "heads": "4",
       "ffn_hidden": "256", "vocab": "1000", "seq_len": "128", "mlp": "swiglu", "hardware": "h100-sxm", "chips": "8",
       "global_batch": "64", "dtype": "bf16", "tp": "1", "pp": "1", "dp": "8", "micro_batch": "1"}


def test_a_row_of_each_kind_becomes_a_case_with_the_converted_figure():
    cases = {
        ms.STEP_TIME: ({ms.STEP_TIME: "0.5"}, 64 * 128 / 0.5 / 8),
        ms.SEQUENCES: ({ms.SEQUENCES: "160"}, 160 * 128 / 8),
        ms.TFLOPS: ({ms.TFLOPS: "100", ms.CONVENTION: "6n"}, 100e12 / SIX_N),
        ms.MFU: ({ms.MFU: "40%", ms.CONVENTION: "maxtext"},
                 0.4 * catalog.load_chip("h100-sxm").peak(Dtype.BF16) / (SIX_N + ATTENTION / 2)),
        ms.TIME_TO_TRAIN: ({ms.TIME_TO_TRAIN: "1000", ms.TRAIN_TOKENS: "8e9"}, 8e9 / 1000 / 8),
    }
    for kind, (cells, want) in cases.items():
        case = vt.case_of({**ROW, **cells})
        assert case.measured == pytest.approx(want), kind
        assert any("converted" in s for s in case.assumed)


def test_a_figure_that_lacks_what_it_needs_names_it():
    with pytest.raises(FlopcastError, match="needs measured_flops_convention"):
        vt.case_of({**ROW, ms.TFLOPS: "100"})
    with pytest.raises(FlopcastError, match="needs train_tokens"):
        vt.case_of({**ROW, ms.TIME_TO_TRAIN: "100"})
    with pytest.raises(FlopcastError, match="needs global_batch"):
        vt.case_of({**ROW, "global_batch": "", ms.STEP_TIME: "1"})
