"""The peaks a layout's GEMMs, attention and elementwise kernels run at, by number format (simulate/training.py)."""

from __future__ import annotations

import numpy as np

from ..model.system import Dtype

# Share of the linear-layer GEMM FLOPs a 4-bit recipe keeps in BF16: NVIDIA's NVFP4 pretraining recipe runs
# the forward, data-gradient and weight-gradient GEMMs of the linear layers in FP4 except about 16% of them
# (the 12B model's first two and last eight blocks), and keeps embeddings, the output head, attention and
# norms in BF16 (arXiv:2509.25149, sec. 4.1 "Linear layers in higher precision"); its MXFP4 comparison
# uses the same recipe. FP8 (Transformer Engine) and INT8 (AQT) recipes quantize every linear layer.
FP4_BF16_GEMM_SHARE = 0.16
QUANTIZED_CODES = np.array(sorted(d for d in Dtype if d.quantized))
GEMM_BYTES = np.array([d.gemm_bytes for d in Dtype])


def peaks(chip, dtypes: np.ndarray):
    """(nominal GEMM peak, effective GEMM peak, attention/elementwise peak) per layout; NaN where the chip
    lacks the dtype. The effective peak of a 4-bit recipe mixes in BF16 for FP4_BF16_GEMM_SHARE of the
    FLOPs (a harmonic mean: time adds up); the nominal peak is what MFU divides by. The effective GEMM and
    attention peaks run at the clock the chip sustains under its board power limit (Chip.clock_fraction)."""
    table = np.full(len(Dtype), np.nan)
    for d in Dtype:
        try:
            table[d] = chip.peak(d)
        except ValueError:
            pass
    nominal = table[dtypes]
    fp4 = (dtypes == Dtype.NVFP4) | (dtypes == Dtype.MXFP4)
    mixed = 1.0 / ((1.0 - FP4_BF16_GEMM_SHARE) / nominal + FP4_BF16_GEMM_SHARE / table[Dtype.BF16])
    attn = table[np.where(np.isin(dtypes, QUANTIZED_CODES), Dtype.BF16, dtypes)]
    clock = chip.clock_fraction()
    return nominal, np.where(fp4, mixed, nominal) * clock, attn * clock
