"""Grouped bars and per-system panels: the generic path for tables of numbers."""

from __future__ import annotations

import math

from ...errors import FlopcastError
from .common import CYCLE, Chart, matplotlib_figure


def bar_figure(name: str, title: str, categories, series: dict, ylabel: str, *, caption: str = "",
               log: bool = False, xlabel: str = "") -> Chart:
    """Grouped bars: one group per category, one bar per series (None = not available, drawn as 'n/a').

    The generic path for tables of numbers (e.g. claimed vs forecast): ylabel must carry the unit."""
    cats = list(categories)
    fig = matplotlib_figure((max(5.0, 1.2 + 0.9 * len(cats) * max(1, len(series)) ** 0.5), 3.8))
    ax = fig.subplots()
    n = max(1, len(series))
    w = 0.8 / n
    for i, (lab, vals) in enumerate(series.items()):
        xs = [k + (i - (n - 1) / 2) * w for k in range(len(cats))]
        vs = [math.nan if v is None else v for v in vals]
        ax.bar(xs, vs, w, label=lab, color=CYCLE[i % len(CYCLE)])
        for x_, v in zip(xs, vals):
            if v is None:
                ax.text(x_, 0, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels(cats, fontsize=8, rotation=20 if max(map(len, cats), default=0) > 12 else 0, ha="right"
                       if max(map(len, cats), default=0) > 12 else "center")
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)
    if len(series) > 1:
        ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=11)
    return Chart(name, title, fig, caption)


def per_system_panels(results: dict, nothing: str):
    """The systems with a result (others map to a reason), and a figure of three panels, one bar per system."""
    ok = {k: v for k, v in results.items() if not isinstance(v, str)}
    if not ok:
        raise FlopcastError(f"{nothing}: nothing to plot")
    fig = matplotlib_figure((10.5, 3.9))
    return ok, list(ok), fig, fig.subplots(1, 3), list(range(len(ok)))


def system_axes(axes, names) -> None:
    """One bar per system on each axis: the system names as ticks."""
    for ax in axes:
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=8, rotation=20, ha="right")
        ax.set_xlabel("system")
        ax.grid(axis="y", alpha=0.3)


def not_shown(results: dict) -> str:
    """The systems a comparison could not place, with why (results map a name to a result or a reason)."""
    missing = [f"{k}: {v}" for k, v in results.items() if isinstance(v, str)]
    return " Not shown: " + "; ".join(missing) if missing else ""
