"""Scaling curves: throughput, MFU and cost against cluster size."""

from __future__ import annotations

from ...errors import FlopcastError
from ...units import DAY
from .common import (
    CYCLE,
    Chart,
    cost_axis,
    log2_chips_axis,
    log_axis,
    matplotlib_figure,
    thousands_formatter,
)


def band(ax, chips, results, key: str, color, scale: float = 1.0) -> bool:
    """Shade the prediction interval of figure `key` (api.TrainResult.bounds) across the cluster sizes; False
    (nothing drawn) when a result has no interval."""
    ends = [r.bounds().get(key) for r in results]
    if not all(ends):
        return False
    level = results[0].interval.label
    ax.fill_between(chips, [lo * scale for lo, _ in ends], [hi * scale for _, hi in ends], color=color, alpha=0.18,
                    linewidth=0, label=f"{level} interval")
    return True


def scaling_figure(results, name: str = "scaling") -> Chart:
    """Time-to-train, MFU and cost against cluster size, one point per api.TrainResult."""
    rs = sorted((r for r in results if r is not None), key=lambda r: r.chips)
    if not rs:
        raise FlopcastError("no training result to plot: no cluster size gave a layout that fits")
    fig = matplotlib_figure((10.5, 3.6))
    ax1, ax2, ax3 = fig.subplots(1, 3)
    chips = [r.chips for r in rs]
    if all(r.tokens for r in rs):
        ax1.plot(chips, [r.time_to_train_s / DAY for r in rs], "o-", color=CYCLE[0], label="ideal")
        ax1.plot(chips, [r.expected.expected_s / DAY for r in rs], "s--", color=CYCLE[3], label="with failures")
        band(ax1, chips, rs, "expected_time_to_train_s", CYCLE[3], 1 / DAY)
        ax1.set_ylabel("time to train (days)")
        log_axis(ax1)
        ax1.legend(fontsize=8)
    else:
        ax1.plot(chips, [r.tokens_per_s for r in rs], "o-", color=CYCLE[0])
        band(ax1, chips, rs, "tokens_per_s", CYCLE[0])
        ax1.set_ylabel("throughput (tokens/s)")
    ax2.plot(chips, [100 * r.mfu for r in rs], "o-", color=CYCLE[2])
    if band(ax2, chips, rs, "mfu", CYCLE[2], 100.0):
        ax2.legend(fontsize=8)
    ax2.set_ylabel("MFU (%)")
    ax2.set_ylim(0, max(100 * (r.bounds().get("mfu") or (0, r.mfu))[1] for r in rs) * 1.2)
    if all(r.tokens for r in rs):
        label, cost = cost_axis(rs)
        ax3.plot(chips, [cost(r) for r in rs], "o-", color=CYCLE[1])
        band(ax3, chips, rs, "cost_usd" if rs[0].cost_usd is not None else "chip_hours", CYCLE[1])
        ax3.set_ylabel(label)
        ax3.yaxis.set_major_formatter(thousands_formatter())
    else:
        ax3.plot(chips, [r.tokens_per_s_per_chip for r in rs], "o-", color=CYCLE[1])
        band(ax3, chips, rs, "tokens_per_s_per_chip", CYCLE[1])
        ax3.set_ylabel("throughput per chip (tokens/s)")
    for ax in (ax1, ax2, ax3):
        log2_chips_axis(ax, chips)
        ax.set_xlabel("cluster size (chips)")
        ax.grid(alpha=0.3)
    r0 = rs[0]
    title = f"{r0.model.label} on {r0.system.id}: scaling with cluster size"
    fig.suptitle(title, fontsize=11)
    cap = ("Best layout that fits at each cluster size (flopcast's search). MFU per PaLM App. B; "
           "'with failures' adds checkpoints, lost work and restarts (Daly 2006; Llama 3 failure rate).")
    if r0.interval is not None:
        cap += (f" Shaded: the {r0.interval.label} prediction interval of a {r0.interval.kind} forecast "
                "(leave-one-source-out errors, uncertainty.yaml).")
    return Chart(name, title, fig, cap)
