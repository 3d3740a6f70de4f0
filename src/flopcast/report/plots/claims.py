"""The figures of `flopcast claims`: time to train, scaling, generation ratios, Graviton speed-ups."""

from __future__ import annotations

import math

from ...errors import FlopcastError
from .bars import bar_figure
from .common import CYCLE, Chart, log2_chips_axis, log_axis, matplotlib_figure


def claims_time_to_train_figure(series: dict, name: str = "claims-time-to-train") -> Chart:
    """Expected days to train (with failures) against chips, Trainium2 and Trainium1, with the 'weeks' line."""
    fig = matplotlib_figure((7.5, 4.2))
    ax = fig.subplots()
    chips_all = set()
    for i, key in enumerate(("trainium2", "trainium1")):
        pts = [p for p in series.get(key, []) if p.get("fits") and p.get("expected_days") is not None]
        if not pts:
            continue
        xs = [p["chips"] for p in pts]
        chips_all.update(xs)
        ax.plot(xs, [p["expected_days"] for p in pts], marker="o", color=CYCLE[i], label=f"{key}, with failures")
        ax.plot(xs, [p["ideal_days"] for p in pts], ls="--", color=CYCLE[i], alpha=0.6, label=f"{key}, ideal")
    if not chips_all:
        raise FlopcastError("no cluster size fits: nothing to plot")
    limit = series.get("threshold_days")
    if limit:
        ax.axhline(limit, color="#444", lw=1, ls=":")
        ax.text(min(chips_all), limit * 1.05, f"'weeks': under {limit:.0f} days", fontsize=8, color="#444")
    log2_chips_axis(ax, sorted(chips_all))
    log_axis(ax, "y")
    ax.set_xlabel("cluster size (chips)")
    ax.set_ylabel("time to train (days)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    title = "~300B GPT at 20 tokens per parameter: Trainium2 vs Trainium1"
    fig.suptitle(title, fontsize=11)
    return Chart(name, title, fig, "Best layout at each size; expected time includes failures, checkpoints and restarts.")


def claims_scaling_figure(series: dict, name: str = "claims-scaling") -> Chart:
    """Tokens/s per chip and MFU from one instance to the largest cluster: weak and strong scaling."""
    fig = matplotlib_figure((10.0, 3.9))
    ax1, ax2 = fig.subplots(1, 2)
    chips_all = set()
    for i, key in enumerate(("weak", "strong")):
        pts = [p for p in series.get(key, []) if p.get("fits")]
        if not pts:
            continue
        xs = [p["chips"] for p in pts]
        chips_all.update(xs)
        label = "weak (fixed batch per chip)" if key == "weak" else "strong (fixed global batch)"
        ax1.plot(xs, [p["tokens_per_s_per_chip"] for p in pts], marker="o", color=CYCLE[i], label=label)
        ax2.plot(xs, [100 * p["mfu"] for p in pts], marker="o", color=CYCLE[i], label=label)
    if not chips_all:
        raise FlopcastError("no cluster size fits: nothing to plot")
    for ax in (ax1, ax2):
        log2_chips_axis(ax, sorted(chips_all))
        ax.set_xlabel("cluster size (chips)")
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    ax1.set_ylabel("throughput (tokens/s per chip)")
    ax2.set_ylabel("MFU (%)")
    ax1.legend(fontsize=8)
    title = "~300B GPT on Trainium2: scaling from one instance to the UltraCluster"
    fig.suptitle(title, fontsize=11)
    return Chart(name, title, fig, "Sizes where no layout fits are left out.")


def claims_ratio_figure(points: list, claimed: float | None = 4.0, name: str = "claims-trn2-vs-trn1") -> Chart:
    """Trainium2 over Trainium1 tokens/s per chip for each model, with the announced factor."""
    chart = bar_figure(name, "Trainium2 / Trainium1 training throughput at equal chip count",
                       [f"{p['model']} ({p['params_b']:.0f}B)" for p in points],
                       {"flopcast": [p["ratio"] for p in points]}, "speed-up (x, tokens/s per chip)",
                       caption="Each chip at its own best layout.")
    if claimed:
        ax = chart.figure.axes[0]
        ax.axhline(claimed, color="#444", ls=":", lw=1)
        ax.text(-0.4, claimed * 1.02, f"announced {claimed:g}x", fontsize=8, color="#444")
    return chart


def claims_graviton_figure(points: list, name: str = "claims-graviton") -> Chart:
    """Graviton4 over Graviton3 speed-ups per case (model, weights, batch, prefill/decode), per basis,
    as horizontal bars with the announced 1.3x and the 1.75x bandwidth ratio marked."""
    bases = sorted({p["basis"] for p in points})
    cases = []
    for p in points:
        key = (p["model"], p["weights"], p["batch"], p["phase"])
        if key not in cases:
            cases.append(key)
    value = {(p["model"], p["weights"], p["batch"], p["phase"], p["basis"]): p["speedup"]
             for p in points if p.get("fits", True)}
    fig = matplotlib_figure((8.0, 1.2 + 0.28 * len(cases) * max(1, len(bases)) ** 0.5))
    ax = fig.subplots()
    h = 0.8 / max(1, len(bases))
    for i, b in enumerate(bases):
        ys = [k + (i - (len(bases) - 1) / 2) * h for k in range(len(cases))]
        vals = [value.get(c + (b,)) for c in cases]
        ax.barh(ys, [math.nan if v is None else v for v in vals], h, color=CYCLE[i], label=f"basis: {b}")
        for y, v in zip(ys, vals):
            if v is None:
                ax.text(0.02, y, "does not fit", va="center", fontsize=7)
    ax.set_yticks(range(len(cases)))
    ax.set_yticklabels([f"{m} {w} batch {b} {ph}" for m, w, b, ph in cases], fontsize=7)
    ax.invert_yaxis()
    for v, text in ((1.3, "announced 1.3x"), (1.75, "bandwidth 1.75x")):
        ax.axvline(v, color="#444", ls=":", lw=1)
        ax.text(v, -0.9, text, fontsize=7, color="#444", ha="center")
    ax.set_xlabel("Graviton4 / Graviton3 speed-up (x)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    title = "Graviton4 vs Graviton3 serving speed-up"
    fig.suptitle(title, fontsize=11)
    return Chart(name, title, fig, "basis 'socket': one whole socket each; 'equal_cores': the same number of cores.")


def figures_claims(series: dict) -> list:
    """The figures of `flopcast claims` from its result's series."""
    charts = []
    if series.get("time_to_train"):
        charts.append(claims_time_to_train_figure(series["time_to_train"]))
    if series.get("scaling"):
        charts.append(claims_scaling_figure(series["scaling"]))
    if series.get("trn2_vs_trn1"):
        charts.append(claims_ratio_figure(series["trn2_vs_trn1"]))
    if series.get("graviton_speedups"):
        charts.append(claims_graviton_figure(series["graviton_speedups"]))
    return charts
