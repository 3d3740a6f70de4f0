"""Operator times by roofline with a GEMM-shape efficiency.

time = max(FLOPs / (peak x efficiency x quantisation), bytes / (bandwidth x efficiency))
(Williams et al. 2009, "Roofline"). Quantisation is the fraction of the chip's
native tiles and of its last wave a GEMM fills (NVIDIA "Matrix Multiplication
Background" guide, tile and wave quantisation). Every function takes floats or
numpy arrays.
"""

from __future__ import annotations

import numpy as np

from ..model.strategy import FlashKernel


def tile_efficiency(m, n, tile: tuple[int, int], cores: int):
    """Useful fraction of the work a GEMM with an m x n output issues on `cores` engines of tile tm x tn."""
    tm, tn = tile
    tiles_m = np.ceil(m / tm)
    tiles_n = np.ceil(n / tn)
    filled = (m * n) / (tiles_m * tm * tiles_n * tn)
    tiles = tiles_m * tiles_n
    waves = np.ceil(tiles / cores)
    return filled * tiles / (waves * cores)


def gemm_time(m, n, k, *, peak, efficiency, tile, cores, bandwidth, memory_efficiency, operand_bytes):
    """Seconds for one (m x k) @ (k x n) GEMM. Returns (time, flops)."""
    flops = 2.0 * m * n * k
    t_compute = flops / (peak * efficiency * tile_efficiency(m, n, tile, cores))
    t_memory = (m * k + k * n + m * n) * operand_bytes / (bandwidth * memory_efficiency)
    return np.maximum(t_compute, t_memory), flops


def gemm_fwd_bwd_time(m, n, k, **kw):
    """Forward GEMM and its two backward GEMMs (data gradient m x k, weight gradient k x n).

    Backward = 2x forward FLOPs (Narayanan et al. 2021, sec. 5.1).
    Returns (forward time, backward time, forward flops).
    """
    t_fwd, flops = gemm_time(m, n, k, **kw)
    t_dgrad, _ = gemm_time(m, k, n, **kw)
    t_wgrad, _ = gemm_time(k, n, m, **kw)
    return t_fwd, t_dgrad + t_wgrad, flops


def attention_core_flops(b, s_q, s_kv, heads, d_qk, d_v, causal_fraction):
    """Forward FLOPs of softmax(QK^T)V for `heads` heads: 2 s_q s_kv (d_qk + d_v) per head and sequence.

    causal_fraction is the share of the score matrix a causal mask keeps (1/2 for a
    full causal sequence, Dao 2023 FlashAttention-2 sec. 3.1).
    """
    return 2.0 * b * s_q * s_kv * heads * (d_qk + d_v) * causal_fraction


FLASH_BACKWARD_FACTOR = 2.5  # FlashAttention-2 backward issues 5 matmuls to the forward's 2 (Dao 2023, sec. 3.2)
# Time of a fused attention kernel's forward and backward relative to FlashAttention-2's (the fitted efficiency's
# kernel). FlashAttention in Triton: Dao 2023 (FlashAttention-2, arXiv:2307.08691) sec. 4.1 measures on A100 80GB
# SXM4 (sequences 512-16k, head dim 64 and 128, with and without the causal mask) FA2 "around 1.3-1.5x faster than
# FlashAttention in Triton in the forward pass and around 2x faster in the backward pass": the range's middle 1.4
# and 2.0, on the chip family measured. Elsewhere (no comparison of the two kernels on Hopper or later GPUs is
# published) the kernel is taken as fast as FlashAttention-2.
TRITON_FLASH_SLOWDOWN = {"nvidia-ampere": (1.4, 2.0)}


def flash_kernel_slowdown(kernel: FlashKernel, family: str) -> tuple[float, float]:
    """(forward, backward) time of a fused attention kernel over FlashAttention-2's on a chip family."""
    if kernel == FlashKernel.TRITON:
        return TRITON_FLASH_SLOWDOWN.get(family, (1.0, 1.0))
    return 1.0, 1.0


# Chip families whose matrix unit is a weight-stationary systolic array: the catalog's tile is the array (the RHS
# tile, contraction x output columns), not a kernel's chosen block as on GPUs, whose flash kernels pick CTA tiles per
# head dimension. TPU MXU 128x128, 256x256 on v6e (the Scaling Book, jax-ml/scaling-book tpus.md, Appendix B: the
# weights, the RHS, fill the 128x128 array, and on v6e's 256x256 array "the dimensions of your tensors needs to be
# twice as large to utilize the MXU fully"); Trainium's 128x128 PE array.
SYSTOLIC_FAMILIES = frozenset({"tpu", "trainium", "inferentia"})


def head_dim_fill(family: str, tile: tuple[int, int], d_qk, d_v):
    """Share of a systolic array's multipliers a fused attention kernel's matmuls use: S = Q K^T contracts over the
    q/k head dimension (the array's rows), O = P V writes v-head-dimension columns (the array's columns), each padded
    to whole arrays; each of the backward's matmuls puts a head dimension on one side of the array too (the
    contraction of dP = dO V^T, the output columns of dV = P^T dO, dQ = dS K and dK = dS^T Q), so on a square array
    the forward's fill holds for it. The two forward matmuls' FLOPs weigh d_qk and d_v. 1 outside SYSTOLIC_FAMILIES."""
    if family not in SYSTOLIC_FAMILIES:
        return 1.0
    rows, cols = tile
    fill_qk = d_qk / (np.ceil(d_qk / rows) * rows)
    fill_pv = d_v / (np.ceil(d_v / cols) * cols)
    return (d_qk + d_v) / (d_qk / fill_qk + d_v / fill_pv)


# standard attention backward: 4 matmuls to the forward's 2, scores read back, not recomputed
UNFUSED_BACKWARD_FACTOR = 2.0


def unfused_score_bytes(dropout: bool) -> float:
    """HBM bytes per score element that standard (unfused) attention moves in its forward pass:
    write QK^T, softmax read and write, PV reads the probabilities (2 bytes each, 16-bit), plus the
    dropout mask (1) and dropped-out probabilities (2) -- Dao et al. 2022, sec. 2.2, Algorithm 0."""
    return 8.0 + (3.0 if dropout else 0.0)


def memory_time(nbytes, *, bandwidth, memory_efficiency):
    """Seconds to stream `nbytes` through HBM at the achievable bandwidth."""
    return nbytes / (bandwidth * memory_efficiency)


# torchao float8 training with tensorwise dynamic scaling (torchao/float8/float8_linear.py, the casts
# hp_tensor_to_float8_dynamic in float8_scaling_utils.py), bytes moved per element as torchao's own roofline counts
# them (torchao/testing/float8/roofline_utils.py, get_tensor_memory_traffic_ovhd_s, tensorwise, not fused with the
# previous op): an input or grad_output takes an amax pass (read bf16, 2 B) and one cast that reads bf16 and writes
# the row- and column-major fp8 copies its two GEMMs need (2 + 2 x 1 B); a weight takes the amax pass and a cast in
# the forward and another in the backward (2 + 3 + 3 B).
FP8_CAST_ACTIVATION_BYTES = 6.0
FP8_CAST_WEIGHT_FWD_BYTES = 5.0
FP8_CAST_WEIGHT_BWD_BYTES = 3.0


def fp8_cast_bytes(input_elems, output_elems, weight_elems):
    """(forward, backward) bytes the separate fp8 cast kernels of a layer's linears move (FP8_CAST_*): the inputs'
    and weights' forward casts, the grad_outputs' and weights' backward casts."""
    fwd = FP8_CAST_ACTIVATION_BYTES * input_elems + FP8_CAST_WEIGHT_FWD_BYTES * weight_elems
    bwd = FP8_CAST_ACTIVATION_BYTES * output_elems + FP8_CAST_WEIGHT_BWD_BYTES * weight_elems
    return fwd, bwd
