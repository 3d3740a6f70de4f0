"""Pipeline schedules: the bubble, and how much of a stage's expert-parallel all-to-all hides behind compute.

Works on floats and numpy arrays. t is the busiest stage's time for one micro-batch (forward, backward and
recomputation, with their exposed communication); p the pipeline degree, v the virtual stages per rank, m the
micro-batches of a step.

- 1F1B, GPipe, interleaved (Narayanan et al. 2021 sec. 2.2): bubble (p - 1) / v x t.
- Combined 1F1B (Megatron-Core developer guide, "Combined 1F1B: Expert-Parallel All-to-All Overlap",
  --overlap-moe-expert-parallel-comm): 1F1B's bubble; in steady state a forward and a backward of two
  micro-batches run as one unit, the all-to-alls of each behind the other's compute.
- DualPipe (DeepSeek-V3 technical report, arXiv:2412.19437, sec. 3.2.1 and Table 2): bubble
  (p/2 - 1)(F&B + B - 3W) with F&B the time of a forward and a backward chunk run together, B a backward
  chunk, W its weight-gradient part; two copies of the parameters, p + 1 micro-batches of activations.
"""

from __future__ import annotations

import numpy as np

from ..model.strategy import Schedule

# Streaming multiprocessors the all-to-all kernels occupy while they overlap compute: DeepSeek-V3 dedicates 20
# of the H800's 132 SMs to communication (report sec. 3.2.2), as DeepEP's dispatch/combine kernels do
# (deepseek-ai/DeepEP README, Buffer.set_num_sms(24) in its example; 20 in the report). Chips whose collectives
# run on separate engines (Trainium's collective DMA, TPU ICI) lose none.
COMM_SMS = 20


def overlap_compute_factor(chip) -> float:
    """How much slower compute runs while the all-to-all kernels hold their SMs: cores / (cores - COMM_SMS) on
    NVIDIA GPUs (chip.cores counts SMs there), 1 elsewhere."""
    if chip.family.startswith("nvidia") and chip.cores > COMM_SMS:
        return chip.cores / (chip.cores - COMM_SMS)
    return 1.0


def paired_share(schedule, pp, m):
    """Share of a stage's micro-batches whose forward runs merged with another's backward.

    Combined 1F1B and DualPipe pair every steady-state forward with a backward; the p warm-up forwards and
    p cool-down backwards of a rank run alone (with p = 1, the first forward and the last backward).
    Deviation: DualPipe's warm-up is shorter on the middle ranks; the first rank's p is used for all.
    """
    overlapped = (schedule == Schedule.DUALPIPE) | (schedule == Schedule.ONE_F_ONE_B_OVERLAP)
    return np.where(overlapped, np.maximum(m - pp, 0.0) / np.maximum(m, 1.0), 0.0)


def overlapped_stage_time(compute, a2a, slowdown):
    """Time of a merged forward+backward unit: while the all-to-all runs (a2a seconds) the compute proceeds on
    the SMs it leaves (at 1 / slowdown of full speed), then at full speed: a2a + max(compute - a2a / slowdown, 0).
    With no all-to-all it is the compute; with a long one, the all-to-all."""
    return a2a + np.maximum(compute - a2a / slowdown, 0.0)


def bubble_time(schedule, pp, v, t, fb_pair, b_chunk, w_chunk):
    """Idle time of the busiest rank per step.

    t: the busiest stage's time per micro-batch; fb_pair: a forward and a backward chunk run together
    (DualPipe's F&B); b_chunk: a backward chunk (with its exposed communication); w_chunk: its weight-gradient
    part (DeepSeek-V3 Table 2)."""
    standard = (pp - 1.0) / v * t
    dual = np.maximum(pp / 2.0 - 1.0, 0.0) * np.maximum(fb_pair + b_chunk - 3.0 * w_chunk, 0.0)
    return np.where(schedule == Schedule.DUALPIPE, dual, standard)


def balanced_stage(L: int, pp, layer_time, t_embed, t_logits, t_avg):
    """The busiest stage's time per micro-batch when whole layers are placed so that the first stage (with the
    embedding) and the last (with the logits and loss) take fewer: the smallest T at which the stages hold all
    L layers, (pp - 2) floor(T / t) + floor((T - t_embed) / t) + floor((T - t_logits) / t) >= L, t the
    layer time. T lies within one layer time above the average stage time t_avg; it is one of the
    candidates k t, k t + t_embed, k t + t_logits just above t_avg."""
    t = np.maximum(layer_time, 1e-30)
    eps = 1e-9

    def held(T):
        return ((pp - 2.0) * np.floor(T / t + eps) + np.maximum(np.floor((T - t_embed) / t + eps), 0.0)
                + np.maximum(np.floor((T - t_logits) / t + eps), 0.0))

    best = np.full(np.shape(t_avg), np.inf)
    for offset in (0.0, t_embed, t_logits):
        k = np.ceil((t_avg - offset) / t - eps)
        for extra in (0.0, 1.0):
            T = (k + extra) * t + offset
            best = np.where((T >= t_avg - eps * t) & (held(T) >= L), np.minimum(best, T), best)
    return best
