"""Where a step's time and a chip's memory go: stacked bars of the breakdowns."""

from __future__ import annotations

from ...units import GiB
from .common import COLORS, Chart, matplotlib_figure


def breakdown_figure(results, labels=None, name: str = "breakdown") -> Chart:
    """Stacked bars of the step-time parts (s) and the per-chip memory parts (GiB) of one or more TrainResults."""
    rs = list(results) if isinstance(results, (list, tuple)) else [results]
    labels = list(labels) if labels else ([r.layout.describe().split(" mb=")[0] for r in rs] if len(rs) == 1
                                          else [f"#{i}" for i in range(1, len(rs) + 1)])
    fig = matplotlib_figure((10.0, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    x = list(range(len(rs)))
    width = 0.6 if len(rs) > 1 else 0.4
    parts = [k for k in rs[0].time_breakdown_s if any(r.time_breakdown_s.get(k, 0) > 0 for r in rs)]
    bottom = [0.0] * len(rs)
    for k in parts:
        vals = [r.time_breakdown_s.get(k, 0.0) for r in rs]
        ax1.bar(x, vals, width, bottom=bottom, label=k, color=COLORS.get(k, "#999999"))
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax1.set_ylabel("time per optimizer step (s)")
    ax1.set_title("step time by part", fontsize=10)
    h, lab = ax1.get_legend_handles_labels()  # legend top-down in the order the stack is drawn
    ax1.legend(h[::-1], lab[::-1], fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    bottom = [0.0] * len(rs)
    for k in rs[0].memory_breakdown_bytes:
        vals = [r.memory_breakdown_bytes.get(k, 0.0) / GiB for r in rs]
        color = COLORS["optimizer_mem"] if k == "optimizer" else COLORS.get(k, "#999999")
        ax2.bar(x, vals, width, bottom=bottom, label=k, color=color)
        bottom = [b + v for b, v in zip(bottom, vals)]
    caps = [r.memory_capacity_bytes / GiB for r in rs]
    if len(set(caps)) == 1:
        ax2.axhline(caps[0], color="#C00000", ls="--", lw=1)
        ax2.text(-0.75, caps[0], f"capacity {caps[0]:.0f} GiB", color="#C00000", va="bottom", fontsize=8)
    else:  # systems side by side: each bar's own capacity
        ax2.hlines(caps, [i - width / 2 for i in x], [i + width / 2 for i in x], color="#C00000", ls="--", lw=1.2,
                   label="capacity")
    ax2.set_ylabel("memory per chip, busiest stage (GiB)")
    ax2.set_ylim(0, max(max(bottom), max(caps)) * 1.12)
    ax2.set_title("memory per chip by part", fontsize=10)
    h, lab = ax2.get_legend_handles_labels()  # legend top-down in the order the stack is drawn
    ax2.legend(h[::-1], lab[::-1], fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    for ax in (ax1, ax2):
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=8, rotation=0 if len(rs) > 1 else 0)
        ax.set_xlim(-0.8, len(rs) - 0.2)
        ax.set_xlabel("layout" if len(rs) == 1 else "layout (rank)")
        ax.grid(axis="y", alpha=0.3)
    r0 = rs[0]
    title = f"{r0.model.label} on {r0.chips:,} {r0.system.chip.id} chips: where the step time and memory go"
    fig.suptitle(title, fontsize=11)
    layouts = "; ".join(f"{lab}: {r.layout.describe()}" for lab, r in zip(labels, rs)) if len(rs) > 1 else r0.layout.describe()
    cap_text = (f"Parts sum to the step time and to the memory per chip (Korthikanti et al. 2022 activations). "
                f"Layout {layouts}.")
    return Chart(name, title, fig, cap_text)
