"""Reliability figures: goodput against cluster size, and where the lost time goes."""

from __future__ import annotations

from ...errors import FlopcastError
from ...units import DAY, HOUR
from .common import CYCLE, Chart, log2_chips_axis, log_axis, matplotlib_figure


def goodput_figure(rows, name: str = "goodput") -> Chart:
    """Goodput and time-to-train with failures against cluster size: rows = [(chips, TrainResult, Goodput)]."""
    rows = sorted(rows, key=lambda x: x[0])
    if not rows:
        raise FlopcastError("no cluster size gave a layout that fits: nothing to plot")
    fig = matplotlib_figure((10.5, 3.8))
    ax1, ax2 = fig.subplots(1, 2)
    chips = [n for n, _, _ in rows]
    ax1.plot(chips, [100 * g.goodput for _, _, g in rows], "o-", color=CYCLE[2])
    ax1.set_ylabel("goodput (ideal / expected time, %)")
    ax1.set_ylim(min(100 * g.goodput for _, _, g in rows) - 5, 100.5)
    ax2.plot(chips, [g.ideal_s / DAY for _, _, g in rows], "o-", color=CYCLE[0], label="ideal")
    ax2.plot(chips, [g.expected_s / DAY for _, _, g in rows], "s--", color=CYCLE[3], label="expected with failures")
    ax2.set_ylabel("time to train (days)")
    log_axis(ax2)
    ax2.legend(fontsize=8)
    for ax in (ax1, ax2):
        log2_chips_axis(ax, chips)
        ax.set_xlabel("cluster size (chips)")
        ax.grid(alpha=0.3)
    r0 = rows[0][1]
    a = rows[0][2].assumptions
    title = f"{r0.model.label} on {r0.system.id}: goodput against cluster size"
    fig.suptitle(title, fontsize=11)
    cap = (f"One interruption per {a.mtbf_chip_hours:,.0f} chip-hours (Llama 3 paper, sec. 3.3.4), checkpoint "
           "interval after Daly 2006, restart and lost work per failure (flopcast reliability).")
    return Chart(name, title, fig, cap)


def goodput_breakdown_figure(g, sim=None, name: str = "goodput-breakdown") -> Chart:
    """Where the time beyond the ideal goes (closed form, hours), and the Monte-Carlo spread of wall time (days)."""
    fig = matplotlib_figure((10.5, 3.8))
    ax1, ax2 = fig.subplots(1, 2)
    keys = [k for k, v in g.breakdown.items()]
    vals = [g.breakdown[k] / HOUR for k in keys]
    ax1.barh(keys, vals, color=CYCLE[3])
    ax1.invert_yaxis()
    ax1.set_ylabel("cause (closed form)")
    ax1.set_xlabel("time lost beyond the ideal (hours)")
    ax1.set_title(f"closed form: goodput {100 * g.goodput:.1f}%", fontsize=10)
    ax1.grid(axis="x", alpha=0.3)
    if sim is not None:
        ax2.hist(sim.wall_s / DAY, bins=40, color=CYCLE[0], alpha=0.85)
        ax2.axvline(g.expected_s / DAY, color=CYCLE[3], ls="--", label="closed-form expectation")
        ax2.axvline(g.ideal_s / DAY, color="black", ls=":", label="ideal")
        ax2.set_xlabel("wall time to train (days)")
        ax2.set_ylabel(f"Monte-Carlo trials (of {sim.trials:,})")
        ax2.legend(fontsize=8)
    else:
        ax2.bar(["ideal", "expected"], [g.ideal_s / DAY, g.expected_s / DAY], color=[CYCLE[0], CYCLE[3]])
        ax2.set_ylabel("time to train (days)")
    ax2.grid(alpha=0.3)
    title = f"failures, checkpoints and restarts on {g.chips:,} chips"
    fig.suptitle(title, fontsize=11)
    cap = "Expected time with failures (Daly 2006 complete model) beside the Monte-Carlo distribution of the same run."
    return Chart(name, title, fig, cap)
