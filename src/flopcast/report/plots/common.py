"""What every figure shares: the Chart record, a pyplot-free matplotlib Figure, colors, axis formatters, slugs."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from ...errors import FlopcastError

MISSING_MATPLOTLIB = "plots need matplotlib: pip install 'flopcast[report]'"
PNG_DPI = 110

# one color per concept, the same in every figure
COLORS = {
    "compute": "#4C72B0", "recompute": "#8FAADC", "comm/tp": "#DD8452", "comm/cp": "#E8A87C",
    "comm/ep": "#C44E52", "comm/pp": "#937860", "comm/dp": "#DA8BC3", "bubble": "#BBBBBB",
    "imbalance": "#8C8C8C", "optimizer": "#55A868", "overhead": "#CCB974",
    "weights": "#4C72B0", "grads": "#DD8452", "optimizer_mem": "#55A868", "activations": "#C44E52",
    "other": "#8C8C8C", "forward": "#4C72B0", "backward": "#DD8452", "p2p": "#222222", "idle": "#EEEEEE",
}
CYCLE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974"]


def matplotlib_figure(figsize=(8.0, 4.0)):
    """A fresh matplotlib Figure (not registered with pyplot), or the one-line FlopcastError."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise FlopcastError(MISSING_MATPLOTLIB) from None
    return Figure(figsize=figsize, layout="constrained")


@dataclass(frozen=True)
class Chart:
    """One figure: `name` is its stable file stem (letters, digits, dashes)."""

    name: str
    title: str
    figure: object  # matplotlib.figure.Figure
    caption: str = ""

    def svg(self) -> str:
        """The figure as an SVG document (text kept as text, ids stable across runs)."""
        import matplotlib

        buf = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": self.name}):
            self.figure.savefig(buf, format="svg", dpi=PNG_DPI, metadata={"Date": None})
        return buf.getvalue()

    def write_png(self, path, dpi: int = PNG_DPI) -> None:
        self.figure.savefig(path, format="png", dpi=dpi, metadata={"Software": None})


def thousands_formatter():
    from matplotlib.ticker import FuncFormatter

    def fmt(v, _):
        if abs(v) >= 1e6:
            return f"{v / 1e6:,.4g}M"
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"

    return FuncFormatter(fmt)


def tflops_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v / 1e12:,.10g}")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "figure"


def cost_axis(results) -> tuple[str, callable]:
    """Cost in USD where every result has a price, else chip-hours (the plan's convention)."""
    if all(r.cost_usd is not None for r in results):
        return "cost to train (USD)", lambda r: r.cost_usd
    return "chip-hours to train (chip-h, no price)", lambda r: r.chip_hours


def log_axis(ax, which: str = "y") -> None:
    """Log scale with plain numbers (1, 2, 5, 10, 20 ...) instead of 10^k mantissa labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    axis.set_major_locator(LogLocator(base=10))
    axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))


def log2_chips_axis(ax, chips):
    ax.set_xscale("log", base=2)
    ax.set_xticks(chips)
    ax.set_xticklabels([f"{c:,}" for c in chips], rotation=45, ha="right", fontsize=8)
    from matplotlib.ticker import NullLocator

    ax.xaxis.set_minor_locator(NullLocator())
