"""The roofline of a replica: each operator of prefill and decode at its arithmetic intensity."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ...errors import FlopcastError
from .common import (
    CYCLE,
    Chart,
    matplotlib_figure,
    tflops_formatter,
    thousands_formatter,
)


@dataclass(frozen=True)
class RooflinePoint:
    """One forward pass of a replica, per chip: FLOP, bytes and seconds as cost/inference.step_time counts them."""

    label: str
    phase: str  # prefill | decode
    batch: int
    flops: float  # per chip
    bytes: float  # per chip
    time_s: float  # the pass, communication and per-layer overhead included

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP/byte."""
        return self.flops / self.bytes

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.time_s


_OPS = ("attention/qkv", "attention/core", "attention/out", "mlp", "logits")


def _counts(d, fn, *args) -> tuple[float, float, float]:
    """(FLOPs, bytes, seconds) of one pass of deployment `d`. Every operator of cost/inference.step_time
    is max(FLOPs / compute rate, bytes / memory rate); letting one rate go to infinity leaves the other
    term, so the counts are exactly those step_time uses (no second copy of the formulas)."""
    big = 1e12
    t, _ = fn(d, *args)
    e = d.efficiency
    fast_memory = replace(d, efficiency=replace(e, memory=e.memory * big, thread_weights_per_cycle=e.thread_weights_per_cycle * big))
    fast_compute = replace(d, efficiency=replace(e, compute=e.compute * big))
    _, pm = fn(fast_memory, *args)
    _, pc = fn(fast_compute, *args)
    flops = sum(float(pm[k]) for k in _OPS) * d.compute_rate
    nbytes = sum(float(pc[k]) for k in _OPS) * d.memory_rate
    return flops, nbytes, float(t)


def roofline_points(d, *, input_tokens: int = 512, output_tokens: int = 128, decode_batches=(1, 8, 64),
                    prefill_batches=(1,)) -> list:
    """Prefill and decode operating points of deployment `d` per chip (decode at context I + O/2)."""
    from ...cost import inference as inf

    out = []
    for phase, fn, batches in (("prefill", inf.prefill_time, prefill_batches), ("decode", inf.decode_time, decode_batches)):
        for b in batches:
            arg = input_tokens if phase == "prefill" else input_tokens + output_tokens / 2.0
            f, nb, t = _counts(d, fn, b, arg)
            out.append(RooflinePoint(f"{phase} b={b}", phase, int(b), f / d.tp, nb / d.tp, t))
    return out


def roofline_figure(deployment, points, name: str = "roofline") -> Chart:
    """A chip's roofline (peak FLOP/s and memory bandwidth from the catalog) with prefill and decode points."""
    import numpy as np

    from ...cost import inference as inf

    d = deployment
    chip = d.system.chip
    try:
        peak = chip.peak(d.compute_dtype)
    except FlopcastError:
        peak = chip.peak(type(d.compute_dtype)["FP32"])
    bw = inf.instance_bandwidth(d.system, 1) if d.is_cpu else chip.memory_bandwidth
    reached_peak, reached_bw = d.compute_rate / d.tp, d.memory_rate / d.tp
    xs = [p.intensity for p in points]
    lo, hi = min(xs + [peak / bw]) / 4, max(xs + [peak / bw]) * 4
    x = np.logspace(math.log10(lo), math.log10(hi), 200)
    fig = matplotlib_figure((7.5, 4.6))
    ax = fig.subplots()
    ax.plot(x, np.minimum(peak, bw * x), color="black", lw=1.5,
            label=f"{chip.name}: {peak / 1e12:,.0f} TFLOP/s {d.compute_dtype.name.lower()}, {bw / 1e12:.2f} TB/s")
    ax.plot(x, np.minimum(reached_peak, reached_bw * x), color="#777777", lw=1, ls="--",
            label=f"reached by {d.family} (efficiency {d.efficiency.compute:.2f} compute, {d.efficiency.memory:.2f} memory)")
    ax.axvline(peak / bw, color="#BBBBBB", lw=0.8, ls=":")
    ax.text(peak / bw, peak * 1.15, f"ridge {peak / bw:,.0f} FLOP/B", fontsize=7, ha="center")
    for phase, color, marker in (("prefill", CYCLE[3], "s"), ("decode", CYCLE[0], "o")):
        ps = [p for p in points if p.phase == phase]
        ax.plot([p.intensity for p in ps], [p.flops_per_s for p in ps], marker, color=color, ms=7, label=phase, ls="-",
                lw=0.8)
        for k, p in enumerate(ps):
            ax.annotate(f"b={p.batch}", (p.intensity, p.flops_per_s), textcoords="offset points",
                        xytext=(5, -11 if k % 2 == 0 else 6), fontsize=7, color=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(min(p.flops_per_s for p in points) / 3, peak * 2.5)
    ax.yaxis.set_major_formatter(tflops_formatter())
    ax.xaxis.set_major_formatter(thousands_formatter())
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attained compute per chip (TFLOP/s)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
    title = f"roofline: {d.model.label} on {d.system.id} (tp {d.tp}, {d.weights.name} weights)"
    fig.suptitle(title, fontsize=11)
    cap = ("Roofline model after Williams, Waterman & Patterson 2009 (CACM): attained = min(peak, bandwidth x intensity). "
           "Points are one prefill pass and one decode step per batch, FLOP and bytes as flopcast's per-operator model "
           "counts them, time including tensor-parallel communication and per-layer overhead.")
    return Chart(name, title, fig, cap)
