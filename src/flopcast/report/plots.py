"""Figures of flopcast's results, drawn with matplotlib (an optional dependency: `flopcast[report]`).

Each builder takes flopcast's own result objects (api.TrainResult, capacity.PlanOutcome,
serving.ServingResult, reliability.Goodput, ...) and returns a `Chart`: a matplotlib Figure
with a stable file name, a title and a caption. Nothing here recomputes a cost; the few
numbers derived for drawing (the pipeline schedule, the roofline counts) say where they come from.

matplotlib is imported inside the functions, never at module import, so flopcast's core and
this module's schedule generator work without it. Figures are `matplotlib.figure.Figure`
objects rendered by the Agg (PNG) and SVG backends: no pyplot, no screen, no global state.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass, replace

from ..errors import FlopcastError
from ..units import DAY, GiB, HOUR

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


def _thousands():
    from matplotlib.ticker import FuncFormatter

    def fmt(v, _):
        if abs(v) >= 1e6:
            return f"{v / 1e6:,.4g}M"
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"

    return FuncFormatter(fmt)


def _tflops():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v / 1e12:,.10g}")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "figure"


def _cost_axis(results) -> tuple[str, callable]:
    """Cost in USD where every result has a price, else chip-hours (the plan's convention)."""
    if all(r.cost_usd is not None for r in results):
        return "cost to train (USD)", lambda r: r.cost_usd
    return "chip-hours to train (chip-h, no price)", lambda r: r.chip_hours


def _log_axis(ax, which: str = "y") -> None:
    """Log scale with plain numbers (1, 2, 5, 10, 20 ...) instead of 10^k mantissa labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    axis.set_major_locator(LogLocator(base=10))
    axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))


def _log2_chips(ax, chips):
    ax.set_xscale("log", base=2)
    ax.set_xticks(chips)
    ax.set_xticklabels([f"{c:,}" for c in chips], rotation=45, ha="right", fontsize=8)
    from matplotlib.ticker import NullLocator

    ax.xaxis.set_minor_locator(NullLocator())


# ---------------------------------------------------------------- a. scaling curves


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
        ax1.set_ylabel("time to train (days)")
        _log_axis(ax1)
        ax1.legend(fontsize=8)
    else:
        ax1.plot(chips, [r.tokens_per_s for r in rs], "o-", color=CYCLE[0])
        ax1.set_ylabel("throughput (tokens/s)")
    ax2.plot(chips, [100 * r.mfu for r in rs], "o-", color=CYCLE[2])
    ax2.set_ylabel("MFU (%)")
    ax2.set_ylim(0, max(100 * r.mfu for r in rs) * 1.2)
    if all(r.tokens for r in rs):
        label, cost = _cost_axis(rs)
        ax3.plot(chips, [cost(r) for r in rs], "o-", color=CYCLE[1])
        ax3.set_ylabel(label)
        ax3.yaxis.set_major_formatter(_thousands())
    else:
        ax3.plot(chips, [r.tokens_per_s_per_chip for r in rs], "o-", color=CYCLE[1])
        ax3.set_ylabel("throughput per chip (tokens/s)")
    for ax in (ax1, ax2, ax3):
        _log2_chips(ax, chips)
        ax.set_xlabel("cluster size (chips)")
        ax.grid(alpha=0.3)
    r0 = rs[0]
    title = f"{r0.model.label} on {r0.system.id}: scaling with cluster size"
    fig.suptitle(title, fontsize=11)
    cap = ("Best layout that fits at each cluster size (flopcast's search). MFU per PaLM App. B; "
           "'with failures' adds checkpoints, lost work and restarts (Daly 2006; Llama 3 failure rate).")
    return Chart(name, title, fig, cap)


# ---------------------------------------------------------------- b. time and memory breakdown


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


# ---------------------------------------------------------------- c. pipeline schedule


@dataclass(frozen=True)
class PipelineOp:
    """One forward or backward pass of one micro-batch through one model chunk on one stage (seconds)."""

    stage: int
    kind: str  # "forward" | "backward"
    micro_batch: int
    chunk: int  # model chunk (virtual stage index on this rank), 0 .. v-1
    start: float
    end: float
    recv_start: float | None = None  # the p2p transfer this pass waited for, on the receiving stage
    recv_end: float | None = None


@dataclass(frozen=True)
class PipelineSchedule:
    kind: str  # 1f1b | interleaved | gpipe
    stages: int  # p
    micro_batches: int  # m
    chunks: int  # v
    ops: tuple

    @property
    def makespan_s(self) -> float:
        return max(o.end for o in self.ops)

    @property
    def busy_s(self) -> float:
        return sum(o.end - o.start for o in self.ops)

    @property
    def idle_s(self) -> float:
        """Stage-seconds not computing between the step's start and its last pass, summed over stages."""
        return self.stages * self.makespan_s - self.busy_s

    @property
    def bubble_fraction(self) -> float:
        """Idle over the ideal (busy) time: (p - 1) / (v m) with no p2p cost (Narayanan et al. 2021, sec. 2.2)."""
        return self.idle_s / self.busy_s


SCHEDULES = ("1f1b", "interleaved", "gpipe")


def schedule_order(kind: str, p: int, m: int, v: int, rank: int) -> list:
    """The order of passes on pipeline rank `rank`: a list of ("forward"|"backward", micro-batch, chunk).

    gpipe: all m forwards, then all m backwards (Huang et al. 2019, GPipe, sec. 2.2).
    1f1b: p - rank - 1 warm-up forwards, then one forward and one backward alternately, then the
    remaining backwards (PipeDream-Flush; Narayanan et al. 2021, Megatron-LM, SC'21, sec. 2.2.1, Fig. 4 top).
    interleaved: each rank holds v model chunks; forwards go in groups of p micro-batches through
    chunk 0, 1, ..., v-1, backwards through chunks v-1, ..., 0; warm-up of 2 (p - rank - 1) + (v - 1) p
    passes (Narayanan et al. 2021, sec. 2.2.2, Fig. 4 bottom; Megatron-LM's
    forward_backward_pipelining_with_interleaving). Needs m to be a multiple of p.
    """
    if kind == "gpipe":
        return [("forward", i, 0) for i in range(m)] + [("backward", i, 0) for i in range(m)]
    if kind == "1f1b":
        fwd = [(i, 0) for i in range(m)]
        bwd = fwd
        warm = min(p - rank - 1, m)
    elif kind == "interleaved":
        if m % p:
            raise FlopcastError(f"the interleaved schedule needs the micro-batches ({m}) to be a multiple of pp ({p}) "
                                "(Narayanan et al. 2021, sec. 2.2.2)")
        groups = range(m // p)
        fwd = [(g * p + i, c) for g in groups for c in range(v) for i in range(p)]
        bwd = [(g * p + i, c) for g in groups for c in reversed(range(v)) for i in range(p)]
        warm = min(2 * (p - rank - 1) + (v - 1) * p, m * v)
    else:
        raise FlopcastError(f"unknown pipeline schedule {kind!r}; valid: {', '.join(SCHEDULES)}")
    ops = [("forward", *fwd[k]) for k in range(warm)]
    f, b = warm, 0
    while b < len(bwd):
        if f < len(fwd):
            ops.append(("forward", *fwd[f]))
            f += 1
        ops.append(("backward", *bwd[b]))
        b += 1
    return ops


def pipeline_schedule(kind: str, p: int, m: int, v: int = 1, *, t_forward: float = 1.0, t_backward: float = 2.0,
                      t_p2p: float = 0.0) -> PipelineSchedule:
    """Timed passes of one optimizer step: each rank runs its `schedule_order` as soon as the pass it
    depends on has finished on the neighbouring stage and its activations (or gradients) arrived.

    t_forward, t_backward: seconds of one micro-batch's forward / backward on one stage (all v
    chunks together; a chunk takes 1/v of them); t_p2p: seconds of one send/recv between stages.
    With t_p2p = 0 the idle time is exactly (p - 1)/(v m) of the busy time for all three schedules
    (Narayanan et al. 2021, sec. 2.2.1-2.2.2; GPipe: (p - 1)/m, Huang et al. 2019, sec. 2.3).
    """
    if p < 1 or m < 1 or v < 1:
        raise FlopcastError(f"pipeline schedule needs pp, micro-batches and vp >= 1, got {p}, {m}, {v}")
    if kind != "interleaved":
        v = 1
    tf, tb = t_forward / v, t_backward / v
    orders = [schedule_order(kind, p, m, v, r) for r in range(p)]
    done: dict = {}
    free, ptr, ops = [0.0] * p, [0] * p, []
    last = p * v - 1
    left = sum(len(o) for o in orders)
    while left:
        progressed = False
        for r in range(p):
            while ptr[r] < len(orders[r]):
                kind_, mb, c = orders[r][ptr[r]]
                j = c * p + r  # virtual stage: chunk c of rank r
                if kind_ == "forward":
                    dep = ("forward", mb, j - 1) if j > 0 else None
                else:
                    dep = ("backward", mb, j + 1) if j < last else ("forward", mb, j)
                if dep is not None and dep not in done:
                    break
                ready, recv = 0.0, (None, None)
                if dep is not None:
                    ready = done[dep]
                    if dep[2] % p != r:  # the neighbour's output travels one p2p hop
                        recv = (ready, ready + t_p2p)
                        ready += t_p2p
                start = max(free[r], ready)
                end = start + (tf if kind_ == "forward" else tb)
                done[(kind_, mb, j)] = end
                free[r] = end
                ops.append(PipelineOp(r, kind_, mb, c, start, end, *recv))
                ptr[r] += 1
                left -= 1
                progressed = True
        if not progressed:
            raise FlopcastError(f"pipeline schedule {kind} deadlocks for pp={p}, m={m}, vp={v}")
    return PipelineSchedule(kind, p, m, v, tuple(ops))


@dataclass(frozen=True)
class StageTimes:
    """Per-micro-batch seconds of the busiest pipeline stage of one TrainResult."""

    p: int
    m: int
    v: int
    schedule: str
    t_forward: float
    t_backward: float
    t_p2p: float


def stage_times(result, calibration=None) -> StageTimes:
    """Forward, backward and p2p seconds per micro-batch on the busiest stage, from the result's breakdown.

    Per micro-batch the busiest stage computes (compute + recompute + comm/tp,cp,ep + imbalance) / m
    seconds: the t_max whose (p - 1)/v multiple is the model's `bubble` part. Forward is a third of
    that without recomputation, backward the rest (the backward pass does twice the forward's FLOPs,
    Narayanan et al. 2021, sec. 3.3; recomputation runs before the backward). The p2p time is
    cost/comm.p2p_time of one micro-batch's boundary activations, as simulate/training.py charges it.
    """
    from ..cost import comm
    from ..cost.memory import ACT_BYTES
    from ..model.strategy import label

    lay, model = result.layout, result.model
    m = lay.microbatches
    t = result.time_breakdown_s
    per_step = sum(t.get(k, 0.0) for k in ("compute", "recompute", "comm/tp", "comm/cp", "comm/ep", "imbalance"))
    t_mb = per_step / m
    t_f = (t_mb - t.get("recompute", 0.0) / m) / 3.0
    p2p = 0.0
    if lay.pp > 1:
        if calibration is None:
            from .. import catalog

            calibration = catalog.calibration()
        tokens = lay.micro_batch * model.seq_len / lay.cp
        sp = lay.sequence_parallel and lay.tp > 1
        nbytes = tokens * model.hidden * ACT_BYTES / (lay.tp if sp else 1)
        p2p = float(comm.p2p_time(nbytes, lay.tp * lay.cp * lay.dp, result.system, calibration))
    return StageTimes(lay.pp, m, lay.vp, label(lay.schedule), t_f, t_mb - t_f, p2p)


def _shown_micro_batches(p: int, m: int, v: int, kind: str, max_passes: int = 3000) -> int:
    """Micro-batches drawn: the full step when small, else enough for warm-up, steady state and drain."""
    if kind == "interleaved":
        groups = max(1, min(m // p, 2, max_passes // (2 * p * p * v) or 1))
        return groups * p
    return max(1, min(m, 2 * p, max(p, max_passes // (2 * p))))


def pipeline_figure(result, calibration=None, name: str = "pipeline") -> Chart:
    """Gantt chart of one optimizer step per pipeline stage under 1F1B, interleaved and GPipe."""
    st = stage_times(result, calibration)
    p, v_cfg = st.p, st.v
    v_int = v_cfg if v_cfg > 1 else 2
    kinds = [("1f1b", 1), ("interleaved", v_int), ("gpipe", 1)]
    fig = matplotlib_figure((10.5, 1.2 + 3 * (0.9 + 0.16 * p)))
    axes = fig.subplots(3, 1, sharex=True)
    m_shown = _shown_micro_batches(p, st.m, v_int, "interleaved")  # the same micro-batches in every panel
    longest = 0.0
    for ax, (kind, v) in zip(axes, kinds):
        s = pipeline_schedule(kind, p, m_shown, v, t_forward=st.t_forward, t_backward=st.t_backward, t_p2p=st.t_p2p)
        span = s.makespan_s
        # thousands of bars: rasterized inside the SVG (an embedded image) to keep the page small
        for r in range(p):
            ax.broken_barh([(0, span)], (r - 0.45, 0.9), color=COLORS["idle"], lw=0, rasterized=True)
        for kind_ in ("forward", "backward"):
            for r in range(p):
                bars = [(o.start, o.end - o.start) for o in s.ops if o.stage == r and o.kind == kind_]
                ax.broken_barh(bars, (r - 0.4, 0.8), facecolors=COLORS[kind_], edgecolor="white", lw=0.3,
                               rasterized=True)
        if st.t_p2p > 0:
            for r in range(p):
                recv = [(o.recv_start, o.recv_end - o.recv_start) for o in s.ops if o.stage == r and o.recv_start is not None]
                ax.broken_barh(recv, (r + 0.3, 0.12), facecolors=COLORS["p2p"], lw=0, rasterized=True)
        ax.set_ylim(p - 0.5, -0.5)
        ax.set_yticks(range(p))
        ax.set_yticklabels([str(r) for r in range(p)], fontsize=7 if p <= 16 else 5)
        ax.set_ylabel("pipeline stage (rank)")
        longest = max(longest, span)
        if kind == "gpipe":
            ax.set_xlabel("time since the step's first forward pass (s)")
        mine = kind == st.schedule and (v == v_cfg or kind != "interleaved")
        full = (p - 1) / (v * st.m)
        head = {"1f1b": "1F1B", "gpipe": "GPipe"}.get(kind, f"interleaved, vp={v}")
        ax.set_title(f"{head}{'  (this configuration)' if mine else ''}: {m_shown} of {st.m} micro-batches drawn; "
                     f"idle {100 * s.bubble_fraction:.1f}% of busy here, (p-1)/(v m) = {100 * full:.2f}% for the full step",
                     fontsize=8.5, loc="left")
    axes[0].set_xlim(0, longest)  # shared: the panels compare the schedules' step times
    from matplotlib.patches import Patch

    handles = [Patch(color=COLORS["forward"], label="forward"), Patch(color=COLORS["backward"], label="backward (+ recompute)"),
               Patch(color=COLORS["idle"], label="idle (bubble)")]
    if st.t_p2p > 0:
        handles.append(Patch(color=COLORS["p2p"], label="p2p receive"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    r0 = result
    title = f"pipeline schedule of one step: pp={p}, {st.m} micro-batches, {r0.model.label} on {r0.system.chip.id}"
    fig.suptitle(title, fontsize=11)
    cap = (f"Per micro-batch on the busiest stage: forward {st.t_forward * 1e3:.1f} ms, backward "
           f"{st.t_backward * 1e3:.1f} ms (2x forward plus recompute), p2p {st.t_p2p * 1e3:.2f} ms. "
           "1F1B and interleaved after Narayanan et al. 2021 (Megatron-LM, SC'21, sec. 2.2); GPipe after "
           "Huang et al. 2019. Idle time with no p2p cost is (p-1)/(v m) of the busy time.")
    return Chart(name, title, fig, cap)


# ---------------------------------------------------------------- d. Pareto front


def pareto_figure(outcome, name: str = "pareto") -> Chart:
    """Cluster size vs time-to-train vs cost of a capacity.PlanOutcome (pareto, deadline or budget)."""
    pts = [p for p in outcome.points if p.result is not None]
    if not pts:
        raise FlopcastError("no cluster size gave a layout that fits: nothing to plot")
    front = {id(p) for p in outcome.frontier} if outcome.frontier else set()
    label, cost = _cost_axis([p.result for p in pts])
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
    _log2_chips(ax1, chips)
    _log_axis(ax1)
    ax1.set_xlabel("cluster size (chips)")
    ax1.set_ylabel("time to train (days)")
    ax2.scatter([d for d, o in zip(days, on) if not o], [c for c, o in zip(costs, on) if not o], color="#999999", zorder=3)
    fr = sorted((d, c, n) for d, c, n, o in zip(days, costs, chips, on) if o)
    if fr:
        ax2.plot([f[0] for f in fr], [f[1] for f in fr], "o-", color=CYCLE[3], zorder=4)
    for d, c, n in zip(days, costs, chips):
        ax2.annotate(f"{n:,}", (d, c), textcoords="offset points", xytext=(4, 4), fontsize=7)
    _log_axis(ax2, "x")
    ax2.set_xlabel("time to train (days)")
    ax2.set_ylabel(label)
    ax2.yaxis.set_major_formatter(_thousands())
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


# ---------------------------------------------------------------- e. serving latency vs throughput


def serving_figure(points, slo_ttft_s: float | None = None, slo_tpot_s: float | None = None, title: str = "",
                   marked_qps: float | None = None, name: str = "serving") -> Chart:
    """Latency against throughput from serving.simulate runs: points = [(offered requests/s, ServingResult)]."""
    pts = sorted(points, key=lambda x: x[0])
    fig = matplotlib_figure((10.5, 3.9))
    ax1, ax2 = fig.subplots(1, 2)
    tput = [r.output_tokens_per_s for _, r in pts]
    for key, style, lab in (("p50", "o-", "p50"), ("p90", "s--", "p90")):
        ax1.plot(tput, [r.e2e_s[key] for _, r in pts], style, color=CYCLE[0] if key == "p50" else CYCLE[3],
                 label=f"end-to-end latency {lab}")
    ax1.set_xlabel("achieved throughput (output tokens/s)")
    ax1.set_ylabel("request latency (s)")
    ax1.set_ylim(bottom=0)
    ax1.legend(fontsize=8)
    qps = [q for q, _ in pts]
    ax2.plot(qps, [r.ttft_s["p90"] * 1e3 for _, r in pts], "o-", color=CYCLE[1], label="TTFT p90")
    ax2.plot(qps, [r.tpot_s["p90"] * 1e3 if r.tpot_s["p90"] is not None else math.nan for _, r in pts], "s-",
             color=CYCLE[2], label="TPOT p90")
    if slo_ttft_s:
        ax2.axhline(slo_ttft_s * 1e3, color=CYCLE[1], ls=":", lw=1, label=f"TTFT target {slo_ttft_s * 1e3:.0f} ms")
    if slo_tpot_s:
        ax2.axhline(slo_tpot_s * 1e3, color=CYCLE[2], ls=":", lw=1, label=f"TPOT target {slo_tpot_s * 1e3:.0f} ms")
    if marked_qps:
        ax2.axvline(marked_qps, color="black", lw=0.8, ls="--", label=f"this run: {marked_qps:.3g} requests/s")
    ax2.set_xlabel("offered load (requests/s, Poisson arrivals)")
    ax2.set_ylabel("latency (ms)")
    _log_axis(ax2)
    ax2.legend(fontsize=7)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3, which="both")
    title = title or "serving: latency against throughput"
    fig.suptitle(title, fontsize=11)
    cap = ("Discrete-event simulation (flopcast serve) at each offered load: continuous batching after Orca "
           "(Yu et al. 2022) and vLLM (Kwon et al. 2023) unless stated. Latency rises steeply where the replica saturates.")
    return Chart(name, title, fig, cap)


def serving_sweep(deployment, config, rates, *, requests: int = 200, input_tokens="512", output_tokens="128",
                  seed: int = 0) -> list:
    """[(requests/s, ServingResult)] from serving.simulate with the same seed at each Poisson rate."""
    import numpy as np

    from ..simulate import serving as S

    cost = S.IterationCost.of(deployment, max(config.chunk_tokens if config.scheduler == S.Scheduler.CHUNKED
                                              else config.max_batched_tokens, config.max_seqs) + 1)
    out = []
    for q in rates:
        reqs = S.poisson_requests(q, np.random.default_rng(seed), n=requests, input_tokens=input_tokens,
                                  output_tokens=output_tokens)
        out.append((q, S.simulate(deployment, reqs, config, seed=seed, cost=cost)))
    return out


# ---------------------------------------------------------------- f. roofline


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
    from ..cost import inference as inf

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

    from ..cost import inference as inf

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
    ax.yaxis.set_major_formatter(_tflops())
    ax.xaxis.set_major_formatter(_thousands())
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


# ---------------------------------------------------------------- g. goodput


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
    _log_axis(ax2)
    ax2.legend(fontsize=8)
    for ax in (ax1, ax2):
        _log2_chips(ax, chips)
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


# ---------------------------------------------------------------- compare and generic


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


def _per_system_panels(results: dict, nothing: str):
    """The systems with a result (others map to a reason), and a figure of three panels, one bar per system."""
    ok = {k: v for k, v in results.items() if not isinstance(v, str)}
    if not ok:
        raise FlopcastError(f"{nothing}: nothing to plot")
    fig = matplotlib_figure((10.5, 3.9))
    return ok, list(ok), fig, fig.subplots(1, 3), list(range(len(ok)))


def _system_axes(axes, names) -> None:
    """One bar per system on each axis: the system names as ticks."""
    for ax in axes:
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=8, rotation=20, ha="right")
        ax.set_xlabel("system")
        ax.grid(axis="y", alpha=0.3)


def _not_shown(results: dict) -> str:
    """The systems a comparison could not place, with why (results map a name to a result or a reason)."""
    missing = [f"{k}: {v}" for k, v in results.items() if isinstance(v, str)]
    return " Not shown: " + "; ".join(missing) if missing else ""


def compare_figure(results: dict, name: str = "compare") -> Chart:
    """Time to train, MFU and cost of the best layout on each system: {system id: TrainResult or why not}."""
    ok, names, fig, (ax1, ax2, ax3), x = _per_system_panels(results, "no system gave a layout that fits")
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
    _system_axes((ax1, ax2, ax3), names)
    r0 = next(iter(ok.values()))
    title = f"{r0.model.label} on {r0.chips:,} chips of each system"
    fig.suptitle(title, fontsize=11)
    return Chart(name, title, fig, "Best layout on each system (flopcast compare)." + _not_shown(results))


def figures_compare(results: dict) -> list:
    """The figures of `flopcast compare`: side-by-side bars and the step/memory breakdown per system."""
    ok = {k: v for k, v in results.items() if not isinstance(v, str)}
    charts = [compare_figure(results)]
    if ok:
        charts.append(breakdown_figure(list(ok.values()), labels=list(ok), name="compare-breakdown"))
    return charts


# ---------------------------------------------------------------- claims


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
    _log2_chips(ax, sorted(chips_all))
    _log_axis(ax, "y")
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
        _log2_chips(ax, sorted(chips_all))
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


# ---------------------------------------------------------------- serving compare


def serving_compare_figure(points: dict, name: str = "compare-serving") -> Chart:
    """Capacity at the SLOs, cost per million output tokens and TPOT p90 per system (compare --serve)."""
    ok, names, fig, (ax1, ax2, ax3), x = _per_system_panels(points, "no system meets the SLOs")
    ax1.bar(x, [p.qps for p in ok.values()], 0.6, color=CYCLE[0])
    ax1.set_ylabel("requests/s at the SLOs")
    _log_axis(ax1, "y")
    costs = [p.result.cost_per_million_output_tokens_usd for p in ok.values()]
    ax2.bar(x, [math.nan if c is None else c for c in costs], 0.6, color=CYCLE[1])
    for i, c in enumerate(costs):
        if c is None:
            ax2.text(i, 0, "n/a\n(no price)", ha="center", va="bottom", fontsize=7)
    ax2.set_ylabel("cost per million output tokens (USD)")
    if any(c for c in costs if c):
        _log_axis(ax2, "y")
    ax3.bar(x, [1e3 * (p.result.tpot_s["p90"] or math.nan) for p in ok.values()], 0.6, color=CYCLE[2])
    ax3.set_ylabel("TPOT p90 (ms)")
    _system_axes((ax1, ax2, ax3), names)
    first = next(iter(ok.values()))
    title = f"{first.deployment.model.label} served on each system at the same SLOs"
    fig.suptitle(title, fontsize=11)
    return Chart(name, title, fig, "flopcast compare --serve." + _not_shown(points))
