"""Pipeline schedules (1F1B, interleaved, GPipe): the passes of each stage in time, and their drawing."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import FlopcastError
from .common import COLORS, Chart, matplotlib_figure


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
    from ...cost import comm
    from ...cost.memory import ACT_BYTES
    from ...model.strategy import label

    lay, model = result.layout, result.model
    m = lay.microbatches
    t = result.time_breakdown_s
    per_step = sum(t.get(k, 0.0) for k in ("compute", "recompute", "comm/tp", "comm/cp", "comm/ep", "imbalance"))
    t_mb = per_step / m
    t_f = (t_mb - t.get("recompute", 0.0) / m) / 3.0
    p2p = 0.0
    if lay.pp > 1:
        if calibration is None:
            from ... import catalog

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
