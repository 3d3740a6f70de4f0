"""Side-by-side comparison of the best layout on each system."""

from __future__ import annotations

import math

from ...units import DAY
from .bars import not_shown, per_system_panels, system_axes
from .breakdowns import breakdown_figure
from .common import CYCLE, Chart


def compare_figure(results: dict, name: str = "compare") -> Chart:
    """Time to train, MFU and cost of the best layout on each system: {system id: TrainResult or why not}."""
    ok, names, fig, (ax1, ax2, ax3), x = per_system_panels(results, "no system gave a layout that fits")
    have_tokens = all(r.tokens for r in ok.values())
    if have_tokens:
        ax1.bar([i - 0.2 for i in x], [r.time_to_train_s / DAY for r in ok.values()], 0.4, color=CYCLE[0], label="ideal")
        ax1.bar([i + 0.2 for i in x], [r.expected.expected_s / DAY for r in ok.values()], 0.4, color=CYCLE[3],
                label="with failures")
        ax1.set_ylabel("time to train (days)")
        ax1.legend(fontsize=7)
    else:
        ax1.bar(x, [r.tokens_per_s for r in ok.values()], 0.6, color=CYCLE[0])
        ax1.set_ylabel("throughput (tokens/s)")
    ax2.bar(x, [100 * r.mfu for r in ok.values()], 0.6, color=CYCLE[2])
    ax2.set_ylabel("MFU (%)")
    costs = [r.cost_usd for r in ok.values()]
    if have_tokens and any(c is not None for c in costs):
        ax3.bar(x, [math.nan if c is None else c for c in costs], 0.6, color=CYCLE[1])
        for i, c in enumerate(costs):
            if c is None:
                ax3.text(i, 0, "n/a\n(no price)", ha="center", va="bottom", fontsize=7)
        ax3.set_ylabel("cost to train (USD)")
    elif have_tokens:
        ax3.bar(x, [r.chip_hours for r in ok.values()], 0.6, color=CYCLE[1])
        ax3.set_ylabel("chip-hours to train (chip-h)")
    else:
        ax3.bar(x, [r.memory_gib for r in ok.values()], 0.6, color=CYCLE[1])
        ax3.set_ylabel("memory per chip (GiB)")
    system_axes((ax1, ax2, ax3), names)
    r0 = next(iter(ok.values()))
    title = f"{r0.model.label} on {r0.chips:,} chips of each system"
    fig.suptitle(title, fontsize=11)
    return Chart(name, title, fig, "Best layout on each system (flopcast compare)." + not_shown(results))


def figures_compare(results: dict) -> list:
    """The figures of `flopcast compare`: side-by-side bars and the step/memory breakdown per system."""
    ok = {k: v for k, v in results.items() if not isinstance(v, str)}
    charts = [compare_figure(results)]
    if ok:
        charts.append(breakdown_figure(list(ok.values()), labels=list(ok), name="compare-breakdown"))
    return charts
