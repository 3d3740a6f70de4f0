"""What architects read from a sweep: sensitivity (elasticity of training time to each swept hardware number),
heatmaps of time over two swept numbers, and the time/cost Pareto front per model; as one HTML page.

Elasticity is d ln t / d ln x between neighbouring swept values of one knob x with everything else of
the scenario the same (its best layout found anew at each point), t the time per trained token (the
step time over the tokens of a step: the best layouts of two points may differ in global batch, so
their step times alone do not compare): -1 means the time falls in proportion (the knob is the
bottleneck), 0 that the knob does not matter there. In a serving sweep t is the chip time per output token
at the SLOs (1 / output tokens/s per chip of the best deployment) and the heatmaps show the cost per million
output tokens. Nothing here recomputes a forecast; every number is read from the rows.
"""

from __future__ import annotations

import math
import statistics

from ..report.html import Report
from ..report.plots import CYCLE, Chart, matplotlib_figure
from ..units import DAY, fmt
from .hardware import KNOBS

SERVING_KEYS = ("slo_ttft_s", "slo_tpot_s", "input_tokens", "output_tokens", "qps")

MAX_PANELS = 6


def _ok(rows) -> list:
    return [r for r in rows if r.get("status") == "ok" and (r.get("step_time_s") or _serving(r))]


def _serving(r: dict) -> bool:
    return bool(r.get("output_tokens_per_s_per_chip"))


def _time(r: dict) -> float:
    """Time per token: per trained token (training), chip time per output token at the SLOs (serving)."""
    return 1.0 / (r["output_tokens_per_s_per_chip"] if _serving(r) else r["tokens_per_s"])


def knobs(rows) -> list:
    """The swept what-if knobs (more than one value among the rows), in the file's order."""
    out = []
    for col in rows[0] if rows else {}:
        if col.startswith("what_if."):
            key = col.split(".", 1)[1]
            if len({r.get(col) for r in rows}) > 1:
                out.append(key)
    return out


def _context(r: dict, skip: tuple) -> tuple:
    """Everything that names a scenario, but the knobs in `skip`."""
    keys = ("model", "system", "chips", "tokens", "seq_len", "objective", "layout_pins", *SERVING_KEYS)
    wi = tuple(sorted((k, r[k]) for k in r if k.startswith("what_if.") and k.split(".", 1)[1] not in skip))
    return tuple(r.get(k) for k in keys) + wi


def elasticities(rows, knob: str) -> list:
    """(model, elasticity) for each pair of neighbouring values of `knob`, everything else equal."""
    groups: dict = {}
    for r in _ok(rows):
        x = r.get(f"{knob}_si")
        if x:
            groups.setdefault(_context(r, (knob,)), []).append((x, _time(r), r["model"]))
    out = []
    for pts in groups.values():
        pts.sort()
        for (x1, t1, m), (x2, t2, _) in zip(pts, pts[1:]):
            if x2 > x1:
                out.append((m, (math.log(t2) - math.log(t1)) / (math.log(x2) - math.log(x1))))
    return out


def sensitivity_table(rows) -> tuple[list, list]:
    header = ["knob", "model", "pairs", "median d ln t / d ln x", "min", "max"]
    body = []
    for k in knobs(rows):
        by_model: dict = {}
        for m, e in elasticities(rows, k):
            by_model.setdefault(m, []).append(e)
        for m, es in by_model.items():
            body.append([k, m, len(es), f"{statistics.median(es):+.3f}", f"{min(es):+.3f}", f"{max(es):+.3f}"])
    return header, body


def sensitivity_figure(rows) -> Chart | None:
    header, body = sensitivity_table(rows)
    if not body:
        return None
    models = list(dict.fromkeys(b[1] for b in body))
    ks = list(dict.fromkeys(b[0] for b in body))
    fig = matplotlib_figure((8.0, 0.6 + 0.45 * len(ks) * max(1, len(models)) ** 0.5))
    ax = fig.subplots()
    height = 0.8 / len(models)
    for j, m in enumerate(models):
        vals = {b[0]: float(b[3]) for b in body if b[1] == m}
        ys = [i + j * height for i, k in enumerate(ks) if k in vals]
        ax.barh(ys, [vals[k] for k in ks if k in vals], height=height, color=CYCLE[j % len(CYCLE)], label=m)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(ks))])
    ax.set_yticklabels(ks, fontsize=8)
    ax.axvline(0, color="#333333", lw=0.8)
    ax.axvline(-1, color="#999999", lw=0.8, ls="--")
    ax.set_xlabel("elasticity of time per token, d ln t / d ln x (median over the swept pairs)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="x")
    cap = ("t is the time per trained token (step time / tokens per step), or in a serving sweep the chip time per "
           "output token at the SLOs. -1 (dashed): t falls in proportion to the "
           "knob (the bottleneck); 0: the knob does not matter. Each pair of neighbouring swept values with "
           "everything else equal, the best layout found anew at each.")
    return Chart("sweep-sensitivity", "Sensitivity of time per token to each swept hardware number", fig, cap)


def _metric(rows) -> tuple[str, str, callable]:
    if all(_serving(r) for r in rows):
        if all(r.get("cost_per_million_output_tokens_usd") for r in rows):
            return ("cost_per_million_output_tokens_usd", "USD per million output tokens at the SLOs",
                    lambda r: r["cost_per_million_output_tokens_usd"])
        return ("chip_hours_per_million_output_tokens", "chip-hours per million output tokens at the SLOs",
                lambda r: r["chip_hours_per_million_output_tokens"])
    if all(r.get("time_to_train_s") for r in rows):
        return "time_to_train_days", "time to train (days)", lambda r: r["time_to_train_s"] / DAY
    return "step_time_s", "step time (s)", lambda r: r["step_time_s"]


def heatmap_figures(rows) -> list:
    """Per (model, system), heatmaps of time (and of cost where every cell has a price) over the two knobs with
    the most values, at the largest chip count, every other knob at its first value."""
    ok = _ok(rows)
    ks = sorted(knobs(ok), key=lambda k: -len({r[f"what_if.{k}"] for r in ok}))[:2]
    if len(ks) < 2:
        return []
    kx, ky = ks
    first = {c: ok[0].get(c) for c in ok[0] if c.startswith("what_if.") and c.split(".", 1)[1] not in ks}
    first.update({c: ok[0].get(c) for c in ("tokens", "seq_len", "objective", "layout_pins", *SERVING_KEYS)})
    out = []
    for model, system in list(dict.fromkeys((r["model"], r["system"]) for r in ok))[:MAX_PANELS]:
        sel = [r for r in ok if r["model"] == model and r["system"] == system and all(r.get(c) == v for c,
            v in first.items())]
        if not sel:
            continue
        chips = max(r["chips"] or 0 for r in sel)
        sel = [r for r in sel if (r["chips"] or 0) == chips]
        title = f"{model} on {system}, {chips:,} chips" if chips else f"{model} on {system}"
        name, label, value = _metric(sel)
        out.append(_heatmap(sel, kx, ky, title, label, value, "cost" if name.endswith("tokens_usd") else "time"))
        if all(r.get("cost_usd") is not None for r in sel) and not _serving(sel[0]):
            out.append(_heatmap(sel, kx, ky, title, "cost to train (USD)", lambda r: r["cost_usd"], "cost"))
    return [c for c in out if c is not None]


def _heatmap(rows, kx, ky, title, label, value, what: str = "time") -> Chart | None:
    xs = sorted({r[f"{kx}_si"] for r in rows})
    ys = sorted({r[f"{ky}_si"] for r in rows})
    if len(xs) < 2 or len(ys) < 2:
        return None
    grid = [[math.nan] * len(xs) for _ in ys]
    for r in rows:
        grid[ys.index(r[f"{ky}_si"])][xs.index(r[f"{kx}_si"])] = value(r)
    fig = matplotlib_figure((6.5, 4.2))
    ax = fig.subplots()
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis_r")
    finite = [v for row in grid for v in row if v == v]
    mid = (min(finite) + max(finite)) / 2 if finite else 0.0
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            if v == v:  # light cells (short times, viridis reversed) get dark text
                ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7,
                        color="black" if v < mid else "white")
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([_tick(kx, x) for x in xs], fontsize=8, rotation=30)
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels([_tick(ky, y) for y in ys], fontsize=8)
    ax.set_xlabel(kx)
    ax.set_ylabel(ky)
    fig.colorbar(im, ax=ax, label=label)
    name = f"sweep-heatmap-{what}-" + title.split(",")[0]
    heading = label[:1].upper() + label[1:]
    return Chart(name, f"{heading}: {title}", fig, "Each cell is one scenario with its best layout; "
                 "blank cells had no layout that fits or failed.")


def _tick(knob: str, value: float) -> str:
    unit = KNOBS[knob].unit
    if not unit:
        return f"{value:,.0f}"
    if unit in ("s", "USD/h"):
        return f"{value:.3g} {unit}"
    return fmt(value, unit)


def pareto_front(points: list) -> list:
    """The points (x, y, ...) no other point beats on both x and y (lower is better), sorted by x."""
    front, best = [], math.inf
    for p in sorted(points, key=lambda p: (p[0], p[1])):
        if p[1] < best:
            front.append(p)
            best = p[1]
    return front


def pareto_figure(rows) -> Chart | None:
    ok = [r for r in _ok(rows) if r.get("time_to_train_s")]
    priced = all(r.get("cost_usd") is not None for r in ok)
    cost_key, cost_label = ("cost_usd", "cost (USD)") if priced else ("chip_hours",
                                                                      "chip-hours (not every system has a price)")
    ok = [r for r in ok if r.get(cost_key)]
    if not ok:
        return None
    fig = matplotlib_figure((8.0, 4.5))
    ax = fig.subplots()
    for j, model in enumerate(dict.fromkeys(r["model"] for r in ok)):
        pts = [(r["time_to_train_s"] / DAY, r[cost_key], r["system"], r["chips"]) for r in ok if r["model"] == model]
        color = CYCLE[j % len(CYCLE)]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=10, color=color, alpha=0.35)
        front = pareto_front(pts)
        ax.plot([p[0] for p in front], [p[1] for p in front], "o-", color=color, ms=4, label=f"{model} (front)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time to train (days, without failures)")
    ax.set_ylabel(cost_label)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    cap = ("Every scenario (faint) and, per model, the scenarios no other of that model beats on both time and "
           "cost (the front).")
    return Chart("sweep-pareto", "Time and cost per model: the Pareto front", fig, cap)


def report(run) -> Report:
    """The HTML report of a SweepRun."""
    rows = list(run.rows)
    rep = Report(f"Sweep {run.sweep.name}", f"{len(rows):,} scenarios from {run.sweep.path}")
    counts = ", ".join(f"{v:,} {k}" for k, v in run.counts.items())
    rep.add("Scenarios", f"{counts}. Results table: {run.out or 'not written'}.")
    header, body = sensitivity_table(rows)
    fig = sensitivity_figure(rows)
    rep.add("Sensitivity", "" if body else "No knob was swept over two or more values with everything else equal.",
            header=header if body else (), rows=body, figures=[fig] if fig else [])
    heat = heatmap_figures(rows)
    if heat:
        rep.add("Heatmaps", "Time (and cost, where the system has a price) over the two knobs swept over the most "
                "values.", figures=heat)
    front = pareto_figure(rows)
    if front:
        rep.add("Pareto front per model", figures=[front])
    return rep
