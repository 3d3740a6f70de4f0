"""The Pareto front of a plan: time against cost of every layout that fits."""

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


def pareto_figure(outcome, name: str = "pareto") -> Chart:
    """Cluster size vs time-to-train vs cost of a capacity.PlanOutcome (pareto, deadline or budget)."""
    pts = [p for p in outcome.points if p.result is not None]
    if not pts:
        raise FlopcastError("no cluster size gave a layout that fits: nothing to plot")
    front = {id(p) for p in outcome.frontier} if outcome.frontier else set()
    label, cost = cost_axis([p.result for p in pts])
    fig = matplotlib_figure((10.5, 4.0))
    ax1, ax2 = fig.subplots(1, 2)
    chips = [p.chips for p in pts]
    days = [p.result.time_to_train_s / DAY for p in pts]
    costs = [cost(p.result) for p in pts]
    on = [id(p) in front for p in pts]
    ax1.plot(chips, days, "-", color="#999999", lw=1)
    ax1.scatter([c for c, o in zip(chips, on) if not o], [d for d, o in zip(days, on) if not o], color="#999999",
                label="searched", zorder=3)
    ax1.scatter([c for c, o in zip(chips, on) if o], [d for d, o in zip(days, on) if o], color=CYCLE[3],
                label="on the frontier", zorder=4)
    log2_chips_axis(ax1, chips)
    log_axis(ax1)
    ax1.set_xlabel("cluster size (chips)")
    ax1.set_ylabel("time to train (days)")
    ax2.scatter([d for d, o in zip(days, on) if not o], [c for c, o in zip(costs, on) if not o], color="#999999", zorder=3)
    fr = sorted((d, c, n) for d, c, n, o in zip(days, costs, chips, on) if o)
    if fr:
        ax2.plot([f[0] for f in fr], [f[1] for f in fr], "o-", color=CYCLE[3], zorder=4)
    for d, c, n in zip(days, costs, chips):
        ax2.annotate(f"{n:,}", (d, c), textcoords="offset points", xytext=(4, 4), fontsize=7)
    log_axis(ax2, "x")
    ax2.set_xlabel("time to train (days)")
    ax2.set_ylabel(label)
    ax2.yaxis.set_major_formatter(thousands_formatter())
    if outcome.chosen is not None and outcome.chosen.result is not None:
        ch = outcome.chosen
        ax1.scatter([ch.chips], [ch.result.time_to_train_s / DAY], s=160, facecolors="none", edgecolors="black",
                    label=f"answer ({outcome.kind})", zorder=5)
        ax2.scatter([ch.result.time_to_train_s / DAY], [cost(ch.result)], s=160, facecolors="none",
                    edgecolors="black", zorder=5)
    ax1.legend(fontsize=8)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    r0 = pts[0].result
    title = f"{r0.model.label} on {r0.system.id}: cluster size, time to train and cost"
    fig.suptitle(title, fontsize=11)
    cap = ("Each point is the fastest layout that fits on that many chips (whole nodes, idle chips paid for). "
           "A size is on the frontier when no other is both as fast and as cheap. Labels: chips.")
    return Chart(name, title, fig, cap)
