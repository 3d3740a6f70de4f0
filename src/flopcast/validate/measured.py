"""Every published kind of measured training figure, converted to tokens per second per chip.

Sources report throughput as tokens/s, step time, sequences/s, model TFLOP/s per chip (under a named
FLOP-counting convention), MFU (under a convention), or the time a token budget took. Each converts to the
one figure flopcast compares, tokens per second per chip, by its own function below; validation/README.md
("Measured figures") documents the columns. The model's dimensions enter only through the FLOP conventions.
"""

from __future__ import annotations

import enum
import math

from ..cost import params
from ..errors import FlopcastError
from ..model.system import Chip, Dtype
from ..model.workload import Model
from ..simulate.training import model_flops_per_token

TOKENS = "measured_tokens_per_s_per_chip"
STEP_TIME = "measured_step_time_s"
SEQUENCES = "measured_sequences_per_s"
TFLOPS = "measured_model_tflops_per_chip"
MFU = "measured_mfu"
TIME_TO_TRAIN = "measured_time_to_train_s"
CONVENTION = "measured_flops_convention"
TRAIN_TOKENS = "train_tokens"
# in the order a row's figure is looked for: the first non-blank one is compared
KINDS = (TOKENS, STEP_TIME, SEQUENCES, TFLOPS, MFU, TIME_TO_TRAIN)


class FlopsConvention(enum.Enum):
    """How a source counted a training token's FLOPs."""

    SIX_N = "6n"  # 6 x the weights in GEMMs a token passes (Kaplan et al. 2020, sec. 2.1; logits included)
    PALM = "6n+attention"  # 6N + 12 L H Q T, attention without the causal half (Chowdhery et al. 2022, App. B)
    MAXTEXT = "maxtext"  # 6N + the attention score FLOPs halved for causality (MaxText calculate_tflops_training_per_device)


_CONVENTION_NAMES = {"6n": FlopsConvention.SIX_N, "6n+attention": FlopsConvention.PALM,
                     "palm": FlopsConvention.PALM, "maxtext": FlopsConvention.MAXTEXT}


def parse_convention(text: str) -> FlopsConvention:
    key = (text or "").strip().lower().replace(" ", "")
    if key not in _CONVENTION_NAMES:
        raise FlopcastError(f"{CONVENTION} {text!r} is not a known FLOP convention; valid: "
                            f"{', '.join(_CONVENTION_NAMES)}")
    return _CONVENTION_NAMES[key]


def flops_per_token(model: Model, convention: FlopsConvention) -> float:
    """Training FLOPs per token under a source's convention (forward and backward)."""
    six_n = 6.0 * params.matmul_params_per_token(model)
    if convention == FlopsConvention.SIX_N:
        return six_n
    attention = model_flops_per_token(model) - six_n  # PaLM's 12 L H Q T (non-causal)
    if convention == FlopsConvention.PALM:
        return six_n + attention
    # MaxText: 4 B S^2 heads head_dim per layer forward (QK^T and AV), x3 for backward, halved: causal mask
    return six_n + attention / 2.0


def from_step_time(step_time_s: float, global_batch: int, seq_len: int, chips: int) -> float:
    """Tokens/s/chip of a step of global_batch sequences of seq_len tokens taking step_time_s on chips."""
    return global_batch * seq_len / step_time_s / chips


def from_sequences_per_s(sequences_per_s: float, seq_len: int, chips: int) -> float:
    """Tokens/s/chip of a job processing sequences_per_s sequences (all chips together) of seq_len tokens."""
    return sequences_per_s * seq_len / chips


def from_model_tflops(tflops_per_chip: float, model: Model, convention: FlopsConvention) -> float:
    """Tokens/s/chip of a chip reaching tflops_per_chip model TFLOP/s counted under convention."""
    return tflops_per_chip * 1e12 / flops_per_token(model, convention)


def from_mfu(mfu: float, model: Model, convention: FlopsConvention, chip: Chip, dtype: Dtype) -> float:
    """Tokens/s/chip at model FLOPs utilisation mfu (a fraction) of the chip's dense peak in dtype."""
    return mfu * chip.peak(dtype) / flops_per_token(model, convention)


def from_time_to_train(time_s: float, tokens: float, chips: int) -> float:
    """Tokens/s/chip of a job that trained on `tokens` tokens in time_s on chips."""
    return tokens / time_s / chips


def _number(row: dict, col: str) -> float | None:
    s = (row.get(col) or "").strip()
    if not s:
        return None
    percent = s.endswith("%")
    try:
        v = float(s.rstrip("%"))
    except ValueError:
        raise FlopcastError(f"{col} {s!r} is not a number") from None
    if not math.isfinite(v) or v <= 0:
        raise FlopcastError(f"{col} must be a positive number, got {s}")
    return v / 100.0 if percent else v


def stated_kind(row: dict) -> str | None:
    """The first measured column the row fills, or None."""
    return next((k for k in KINDS if (row.get(k) or "").strip()), None)


def tokens_per_s_per_chip(row: dict, model: Model, chip: Chip, dtype: Dtype | None) -> tuple[float, str]:
    """(tokens/s/chip, how it follows) from the row's measured figure; FlopcastError naming what is missing.

    global_batch and seq_len come from the row (seq_len from its model when blank); dtype is the row's stated
    data type for MFU (None when blank: MFU then needs it). MFU is a fraction, or a percentage with "%";
    a bare number above 1 is read as a percentage."""
    kind = stated_kind(row)
    if kind is None:
        raise FlopcastError(f"no measured figure: fill one of {', '.join(KINDS)}")
    v = _number(row, kind)
    chips = int(float(row["chips"]))
    seq = model.seq_len
    if kind == TOKENS:
        return v, kind
    if kind == STEP_TIME:
        gb = _number(row, "global_batch")
        if gb is None:
            raise FlopcastError(f"{STEP_TIME} needs global_batch (sequences per step) to give tokens/s")
        return from_step_time(v, int(gb), seq, chips), f"{kind}: global_batch x seq_len / step / chips"
    if kind == SEQUENCES:
        return from_sequences_per_s(v, seq, chips), f"{kind}: sequences/s x seq_len / chips"
    if kind == TIME_TO_TRAIN:
        tokens = _number(row, TRAIN_TOKENS)
        if tokens is None:
            raise FlopcastError(f"{TIME_TO_TRAIN} needs {TRAIN_TOKENS} (the tokens trained in that time)")
        return from_time_to_train(v, tokens, chips), f"{kind}: {TRAIN_TOKENS} / time / chips"
    if not (row.get(CONVENTION) or "").strip():
        raise FlopcastError(f"{kind} needs {CONVENTION} (one of {', '.join(_CONVENTION_NAMES)})")
    conv = parse_convention(row[CONVENTION])
    if kind == TFLOPS:
        return from_model_tflops(v, model, conv), f"{kind}: TFLOP/s / FLOPs per token ({conv.value})"
    if dtype is None:
        raise FlopcastError(f"{MFU} needs dtype (the peak it is a fraction of)")
    mfu = v / 100.0 if v > 1 else v
    return from_mfu(mfu, model, conv, chip, dtype), f"{kind}: MFU x {dtype.name} peak / FLOPs per token ({conv.value})"
