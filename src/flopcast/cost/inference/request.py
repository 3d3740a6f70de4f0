"""A request of fixed shape: TTFT, TPOT, throughput, memory and cost; the CPU thread sweep."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...errors import FlopcastError
from ..uncertainty import SERVING_KEYS, Interval, serving_interval, with_bounds
from .cpu import instance_bandwidth
from .engines import calibration_hardware
from .footprint import max_batch, memory
from .replica import Deployment, compute_peak
from .roofline import decode_time, decode_window, prefill_time


@dataclass(frozen=True)
class InferenceResult:
    deployment: Deployment
    batch: int
    input_tokens: int
    output_tokens: int
    ttft_s: float
    tpot_s: float
    prefill_s: float
    e2e_s: float
    decode_tokens_per_s_per_stream: float
    output_tokens_per_s_total: float  # one replica
    prefill_tokens_per_s: float
    memory_bytes: dict
    memory_capacity_bytes: float
    fits: bool
    max_batch: int
    cost_per_million_output_tokens_usd: float | None
    decode_breakdown_s: dict
    prefill_breakdown_s: dict
    assumptions: tuple = ()
    interval: Interval | None = None  # the prediction interval of this kind of forecast (cost/uncertainty.py)

    def bounds(self) -> dict:
        """key -> (low, high) of the headline figures under the prediction interval; {} without one."""
        i, d = self.interval, self._dict()
        if i is None:
            return {}
        speeds = ("decode_tokens_per_s_per_stream", "output_tokens_per_s_total", "prefill_tokens_per_s")
        return {k: (i.speed(d[k]) if k in speeds else i.time(d[k])) for k in SERVING_KEYS if d.get(k) is not None}

    def to_dict(self) -> dict:
        return with_bounds(self._dict(), self.bounds(), self.interval)

    def _dict(self) -> dict:
        d = self.deployment
        return {
            "model": d.model.label, "hardware": d.system.id, "chips": d.chips * d.replicas, "tp": d.tp, "pp": d.pp,
            "ep": d.ep,
            "replicas": d.replicas, "threads": d.threads or None, "weights": d.weights.name,
            "engine_family": d.family, "batch": self.batch, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens, "ttft_s": self.ttft_s, "tpot_s": self.tpot_s,
            "prefill_s": self.prefill_s, "e2e_latency_s": self.e2e_s,
            "decode_tokens_per_s_per_stream": self.decode_tokens_per_s_per_stream,
            "output_tokens_per_s_total": self.output_tokens_per_s_total * d.replicas,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "memory_bytes": self.memory_bytes, "memory_capacity_bytes": self.memory_capacity_bytes,
            "fits": self.fits, "max_batch": self.max_batch,
            "cost_per_million_output_tokens_usd": self.cost_per_million_output_tokens_usd,
            "decode_breakdown_s": self.decode_breakdown_s, "prefill_breakdown_s": self.prefill_breakdown_s,
            "assumptions": list(self.assumptions),
        }


def predict(d: Deployment, batch: int, input_tokens: int, output_tokens: int,
            prefix_tokens: int = 0, fitted_hardware: dict | None = None) -> InferenceResult:
    """TTFT, TPOT, throughput, memory and cost of `batch` requests of fixed shape on one replica.

    TPOT is the decode step at the mean KV window of the request (decode_window). prefix_tokens: a prefix every
    prompt shares, already cached (prefix caching): not prefilled, its KV held once. fitted_hardware: the
    calibration's family -> chips map (engines.calibration_hardware), read from its file when None; a caller
    predicting many cases reads it once."""
    if batch < 1:
        raise FlopcastError(f"--batch must be a positive integer, got {batch}")
    if input_tokens < 0 or output_tokens < 1:
        raise FlopcastError("--input-tokens must be >= 0 and --output-tokens >= 1")
    if prefix_tokens < 0:
        raise FlopcastError(f"--prefix-tokens must be >= 0, got {prefix_tokens}")
    cached = min(prefix_tokens, max(0, input_tokens - 1))
    t_pre, pre_parts = prefill_time(d, batch, input_tokens, cached)
    t_pre = float(t_pre)
    ttft = t_pre + d.efficiency.request_overhead_s
    t_dec, dec_parts = decode_time(d, batch, decode_window(d, input_tokens, output_tokens))
    tpot = float(t_dec)
    total = batch / tpot
    price = d.price_per_hour
    mem, cap = memory(d, batch, input_tokens + output_tokens, cached)
    fits = sum(mem.values()) <= cap
    # a deployment that does not fit serves nothing: no cost per token
    cost = None if price is None or not fits else price / 3600.0 / (total * d.replicas) * 1e6
    notes = list(d.assumptions)
    if cached:
        notes.append(f"prefix caching: the first {cached} prompt tokens of every request are cached (not prefilled; "
                     "their KV blocks held once, as vLLM's automatic prefix caching shares them)")
    if not fits:
        notes.append(f"does not fit: needs {sum(mem.values()) / 2**30:.1f} GiB of {cap / 2**30:.1f} GiB")
    return InferenceResult(
        d, batch, input_tokens, output_tokens, ttft, tpot, t_pre, ttft + (output_tokens - 1) * tpot,
        1.0 / tpot, total, batch * max(input_tokens, 1) / t_pre, mem, cap, fits,
        max_batch(d, input_tokens + output_tokens, cached), cost,
        {k: float(v) for k, v in dec_parts.items()}, {k: float(v) for k, v in pre_parts.items()}, tuple(notes),
        deployment_interval(d, fitted_hardware))


def deployment_interval(d: Deployment, fitted_hardware: dict | None = None) -> Interval | None:
    """The prediction interval of a serving forecast of deployment `d` (cost/uncertainty.py): its kind from the chip,
    the engine family and the families' fitted hardware (`fitted_hardware`, default the shipped calibration's)."""
    hw = calibration_hardware() if fitted_hardware is None else fitted_hardware
    return serving_interval(d.system.chip.id, d.family, hw, bool(d.model.moe))


def thread_sweep(d: Deployment, threads, context: float = 64.0):
    """Decode tokens/s at batch 1 for each thread count (CPUs): rises to the bandwidth roof."""
    out = []
    for n in np.atleast_1d(threads):
        out.append(1.0 / float(decode_time(replace(d, threads=int(n)), 1, context)[0]))
    return np.array(out)


def graviton4_assumptions(d: Deployment) -> list[str]:
    """What a prediction for a CPU without measured rows rests on."""
    chip = d.system.chip
    bw = instance_bandwidth(d.system, d.tp)
    return [
        f"no measured {chip.id} runs: {d.family} efficiencies fitted on Graviton3/3E rows of inference_runs.csv",
        f"compute: {d.threads} threads x {compute_peak(chip, d.compute_dtype) / chip.cores / 1e9:.0f} "
        f"G{d.compute_dtype.label}-OP/s "
        f"per core (chip peak_flops / cores) x {d.efficiency.compute:.3f}",
        f"bandwidth: {d.efficiency.thread_weights_per_cycle:.2f} weights/cycle per thread x {d.weights.bits:g} bits "
        f"x {(chip.clock or 0) / 1e9:.2f} GHz = {d.thread_bandwidth / 1e9:.1f} GB/s per thread, "
        f"saturating at {d.efficiency.memory:.2f} x {bw / 1e9:.1f} GB/s (instance memory bandwidth)",
    ] + ([f"{d.tp} sockets: the bandwidth of all of them, assuming NUMA-aware placement (llama.cpp --numa distribute) "
        "and no traffic between sockets; --tp 1 runs one replica per socket instead"]
         if d.tp > 1 else [])
