"""The deployment search: output tokens/s per chip against TPOT of every simulated deployment, per system."""

from __future__ import annotations

from ...errors import FlopcastError
from .common import CYCLE, Chart, matplotlib_figure


def _kind(p) -> str:
    d = p.to_dict()
    if d["disaggregated"]:
        return "disaggregated (xPyD)"
    if d["ep"] > 1:
        return "expert parallel"
    if d["pp"] > 1:
        return "pipeline"
    return "tensor parallel replicas"


def deploy_figure(outcomes, slo_tpot_s: float | None = None, name: str = "deploy") -> Chart:
    """One panel per system (plan.deploy.DeployOutcome): each simulated deployment at its capacity, the Pareto front
    joined, the best and the one-replica-per-instance baseline marked."""
    shown = [o for o in outcomes if o.simulated]
    if not shown:
        raise FlopcastError("no deployment was simulated: nothing to plot")
    fig = matplotlib_figure((5.2 * len(shown), 3.9))
    axes = fig.subplots(1, len(shown), squeeze=False)[0]
    kinds = ["tensor parallel replicas", "disaggregated (xPyD)", "expert parallel", "pipeline"]
    timed = lambda p: p is not None and p.result.tpot_s["p50"] is not None  # noqa: E731  (one-token outputs: none)
    for ax, o in zip(axes, shown):
        for i, kind in enumerate(kinds):
            pts = [p for p in o.simulated if _kind(p) == kind and timed(p)]
            if pts:
                ax.scatter([p.result.tpot_s["p50"] * 1e3 for p in pts], [p.output_tokens_per_s_per_chip for p in pts],
                           color=CYCLE[i], label=kind, zorder=3)
        front = sorted(filter(timed, o.pareto), key=lambda p: p.result.tpot_s["p50"])
        ax.plot([p.result.tpot_s["p50"] * 1e3 for p in front], [p.output_tokens_per_s_per_chip for p in front], "-",
                color="#777777", lw=1, label="Pareto front")
        for p, mark, lab in ((o.best, "*", "best (cost per token)"), (o.baseline, "x", "one replica per instance")):
            if timed(p):
                ax.scatter([p.result.tpot_s["p50"] * 1e3], [p.output_tokens_per_s_per_chip], marker=mark, s=140,
                           color="black", label=lab, zorder=4)
        if slo_tpot_s:
            ax.axvline(slo_tpot_s * 1e3, color="black", ls=":", lw=1, label=f"TPOT target {slo_tpot_s * 1e3:.0f} ms")
        ax.set_title(o.system.id, fontsize=10)
        ax.set_xlabel("TPOT p50 at capacity (ms)")
        ax.set_ylabel("output tokens/s per chip")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    title = "deployment search: throughput per chip against TPOT"
    fig.suptitle(title, fontsize=11)
    cap = ("Each point is one simulated deployment (flopcast deploy) at the highest Poisson rate at which 90% of "
           "requests meet both SLO targets; disaggregated units after DistServe (Zhong et al. 2024).")
    return Chart(name, title, fig, cap)
