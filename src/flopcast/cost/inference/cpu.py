"""The CPU threads model: memory bandwidth that `n` threads reach on an instance.

Bandwidth is threads x r, r = weights one thread dequantises per cycle x bytes per weight x clock,
saturating smoothly at the instance's achievable bandwidth: b(n) = nr R / sqrt((nr)^2 + R^2)
(a p=2 soft minimum; it fits the llama.cpp thread sweep of PR 11917 within 6%). A partial
instance gets the bandwidth its system entry states (memory_bandwidth).
"""

from __future__ import annotations

import numpy as np

from ...model.system import System

# llama.cpp's aarch64 GEMM kernels over interleaved Q4_0 blocks (formats Q4_0_4x4 / 4x8 / 8x8, llama.cpp PR 5780,
# merged 2024-07, ggml-aarch64.c; since PR 9921, 2024-11, a Q4_0 model is repacked into them when it loads, the
# "CPU_AARCH64" buffer of the log; ggml_aarch64_get_optimal_repack_type takes 8x8 with 256-bit SVE and i8mm, 4x8 with
# i8mm, 4x4 with dotprod). Their measured gain on prompt evaluation: Graviton3, r7g.16xlarge, 64 threads,
# llama-2-7b Q4_0, a 16-token prompt: 150.64 tokens/s with the 2024-03 mainline's vec_dot kernel, 263.05 with the
# GEMM kernels (PR 5780, comment of 2024-03-09). The fitted llama.cpp compute efficiency rests on the first figure
# (inference_runs.csv i1, the same mainline run), so a repacked engine runs its GEMMs this much faster.
REPACKED_GEMM_SPEEDUP = 263.05 / 150.64
REPACKED_FORMATS = ("q4_0_4_4", "q4_0_4_8", "q4_0_8_8")  # the interleaved formats as stored (before PR 9921)


def repacked_gemm(weights: str | None, engine: str | None, system: System) -> bool:
    """Whether llama.cpp multiplies the prompt through the interleaved-Q4_0 GEMM kernels: a CPU with the int8
    matrix instructions (i8mm, which the measured gain above ran on) whose weights are stored interleaved, or Q4_0
    weights that the engine states it repacks at load."""
    chip = system.chip
    if chip.kind != "cpu" or "i8mm" not in chip.isa:
        return False
    name = (weights or "").strip().lower()
    return name in REPACKED_FORMATS or (name == "q4_0" and "repack" in (engine or "").lower())


def cpu_bandwidth(threads, thread_bandwidth, roof):
    """Bytes/s `threads` threads stream: n r R / sqrt((n r)^2 + R^2), monotone, -> R (a p=2 soft min)."""
    nr = np.asarray(threads, dtype=float) * thread_bandwidth
    return nr * roof / np.sqrt(nr * nr + roof * roof)


def instance_bandwidth(system: System, sockets: int) -> float:
    """Memory bandwidth of `sockets` sockets of a CPU instance (a partial instance: its stated share)."""
    if system.memory_bandwidth:
        return system.memory_bandwidth * sockets / system.chips_per_node
    return system.chip.memory_bandwidth * sockets
