"""Serving curves: latency against throughput over arrival rates; serving capacity per system."""

from __future__ import annotations

import math

from .bars import not_shown, per_system_panels, system_axes
from .common import CYCLE, Chart, log_axis, matplotlib_figure


def serving_figure(points, slo_ttft_s: float | None = None, slo_tpot_s: float | None = None, title: str = "",
                   marked_qps: float | None = None, name: str = "serving", band=None) -> Chart:
    """Latency against throughput from serving.simulate runs: points = [(offered requests/s, ServingResult)];
    band = [(requests/s, slow ServingResult, fast ServingResult)] from serving_band, shaded when given."""
    pts = sorted(points, key=lambda x: x[0])
    fig = matplotlib_figure((10.5, 3.9))
    ax1, ax2 = fig.subplots(1, 2)
    tput = [r.output_tokens_per_s for _, r in pts]
    for key, style, lab in (("p50", "o-", "p50"), ("p90", "s--", "p90")):
        ax1.plot(tput, [_scaled(r.e2e_s[key]) for _, r in pts], style, color=CYCLE[0] if key == "p50" else CYCLE[3],
                 label=f"end-to-end latency {lab}")
    label = _bands(ax1, ax2, tput, band, dict(pts))
    ax1.set_xlabel("achieved throughput (output tokens/s)")
    ax1.set_ylabel("request latency (s)")
    ax1.set_ylim(bottom=0)
    ax1.legend(fontsize=8)
    qps = [q for q, _ in pts]
    ax2.plot(qps, [_scaled(r.ttft_s["p90"], 1e3) for _, r in pts], "o-", color=CYCLE[1], label="TTFT p90")
    ax2.plot(qps, [_scaled(r.tpot_s["p90"], 1e3) for _, r in pts], "s-", color=CYCLE[2], label="TPOT p90")
    if slo_ttft_s:
        ax2.axhline(slo_ttft_s * 1e3, color=CYCLE[1], ls=":", lw=1, label=f"TTFT target {slo_ttft_s * 1e3:.0f} ms")
    if slo_tpot_s:
        ax2.axhline(slo_tpot_s * 1e3, color=CYCLE[2], ls=":", lw=1, label=f"TPOT target {slo_tpot_s * 1e3:.0f} ms")
    if marked_qps:
        ax2.axvline(marked_qps, color="black", lw=0.8, ls="--", label=f"this run: {marked_qps:.3g} requests/s")
    ax2.set_xlabel("offered load (requests/s, Poisson arrivals)")
    ax2.set_ylabel("latency (ms)")
    log_axis(ax2)
    ax2.legend(fontsize=7)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3, which="both")
    title = title or "serving: latency against throughput"
    fig.suptitle(title, fontsize=11)
    cap = ("Discrete-event simulation (flopcast serve) at each offered load: continuous batching after Orca "
           "(Yu et al. 2022) and vLLM (Kwon et al. 2023) unless stated. Latency rises steeply where the replica "
           "saturates.")
    if label:
        cap += (f" Shaded: the {label} prediction interval, the same requests simulated with every batch iteration "
                "at the slow and at the fast end of the forecast's interval.")
    return Chart(name, title, fig, cap)


def _scaled(value, scale: float = 1.0) -> float:
    """A latency percentile to plot: None (no request finished at that rate, e.g. all rejected) is a gap."""
    return math.nan if value is None else value * scale


def _bands(ax1, ax2, tput, band, centers=None) -> str | None:
    """Shade the interval of end-to-end p50 (against the central throughput) and of TTFT and TPOT p90 (against the
    offered load); returns the interval's label, or None when there is no band. Each rate's band spans its runs at
    both ends and, from `centers` (requests/s -> the run at the predicted speed), the central one, as a figure's
    interval does (simulate/serving/interval.bounds: an overloaded engine's latency is not always monotone in its
    speed), so the plotted line never leaves its band."""
    if not band:
        return None
    rows = sorted(band, key=lambda x: x[0])
    qps = [q for q, _, _ in rows]
    centers = centers or {}

    def ends(key, pct, scale=1.0):
        # a percentile no request reached (None) is a gap where no run has it, else left out
        vals = [[v for r in (a, b, centers.get(q)) if r is not None and (v := getattr(r, key)[pct]) is not None]
                for q, a, b in rows]
        lo = [min(vs) * scale if vs else math.nan for vs in vals]
        hi = [max(vs) * scale if vs else math.nan for vs in vals]
        return lo, hi

    ax1.fill_between(tput, *ends("e2e_s", "p50"), color=CYCLE[0], alpha=0.18, lw=0, label="80% interval (p50)")
    ax2.fill_between(qps, *ends("ttft_s", "p90", 1e3), color=CYCLE[1], alpha=0.18, lw=0)
    ax2.fill_between(qps, *ends("tpot_s", "p90", 1e3), color=CYCLE[2], alpha=0.18, lw=0)
    return "80%"


def serving_sweep(deployment, config, rates, *, requests: int = 200, input_tokens="512", output_tokens="128",
                  seed: int = 0) -> list:
    """[(requests/s, ServingResult)] from serving.simulate with the same seed at each Poisson rate."""
    import numpy as np

    from ...simulate import serving as S

    cost = None if isinstance(deployment, S.Disaggregated) else S.IterationCost.for_config(deployment, config)
    out = []
    for q in rates:
        reqs = S.poisson_requests(q, np.random.default_rng(seed), n=requests, input_tokens=input_tokens,
                                  output_tokens=output_tokens)
        out.append((q, S.simulate_any(deployment, reqs, config, seed=seed, cost=cost)))
    return out


def serving_band(deployment, config, rates, interval, *, requests: int = 200, input_tokens="512",
                 output_tokens="128", seed: int = 0) -> list:
    """[(requests/s, slow ServingResult, fast ServingResult)]: the sweep's requests with every batch iteration at
    the slow and the fast end of `interval` (cost/uncertainty.Interval); [] without one."""
    import numpy as np

    from ...simulate import serving as S

    if interval is None:
        return []
    out = []
    for q in rates:
        reqs = S.poisson_requests(q, np.random.default_rng(seed), n=requests, input_tokens=input_tokens,
                                  output_tokens=output_tokens)
        out.append((q, S.simulate(deployment, reqs, config, seed=seed, speed=interval.low),
                    S.simulate(deployment, reqs, config, seed=seed, speed=interval.high)))
    return out


def serving_compare_figure(points: dict, name: str = "compare-serving") -> Chart:
    """Capacity at the SLOs, cost per million output tokens and TPOT p90 per system (compare --serve)."""
    ok, names, fig, (ax1, ax2, ax3), x = per_system_panels(points, "no system meets the SLOs")
    ax1.bar(x, [p.qps for p in ok.values()], 0.6, color=CYCLE[0])
    ax1.set_ylabel("requests/s at the SLOs")
    log_axis(ax1, "y")
    costs = [p.result.cost_per_million_output_tokens_usd for p in ok.values()]
    ax2.bar(x, [math.nan if c is None else c for c in costs], 0.6, color=CYCLE[1])
    for i, c in enumerate(costs):
        if c is None:
            ax2.text(i, 0, "n/a\n(no price)", ha="center", va="bottom", fontsize=7)
    ax2.set_ylabel("cost per million output tokens (USD)")
    if any(c for c in costs if c):
        log_axis(ax2, "y")
    ax3.bar(x, [1e3 * (p.result.tpot_s["p90"] or math.nan) for p in ok.values()], 0.6, color=CYCLE[2])
    ax3.set_ylabel("TPOT p90 (ms)")
    system_axes((ax1, ax2, ax3), names)
    first = next(iter(ok.values()))
    title = f"{first.replica.model.label} served on each system at the same SLOs"
    fig.suptitle(title, fontsize=11)
    return Chart(name, title, fig, "flopcast compare --serve." + not_shown(points))
