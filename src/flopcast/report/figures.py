"""The reports the commands write with `--html FILE` / `--png DIR`, assembled from their results; and
`build_report`, all of flopcast's figures of one training scenario and one serving deployment.

No formulas here: the numbers come from flopcast.api, plan, simulate and cost; the figures from
report/plots.py; the page from report/html.py.
"""

from __future__ import annotations

import math
from dataclasses import replace

from .. import catalog
from ..plan import forecast
from ..errors import FlopcastError
from ..units import DAY, GiB
from .html import Report

DEFAULT_SERVE_MODEL = "llama3-8b"
DEFAULT_SERVE_SYSTEM = "trn2.48xlarge"
DEFAULT_SERVE_CHIPS = 1
SCALING_FACTORS = (1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8)  # cluster sizes drawn, relative to --chips


def _fmt(v, unit="", digits=3):
    if v is None:
        return "n/a"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "n/a"
    return f"{v:,.{digits}g} {unit}".strip()


# ---------------------------------------------------------------- training


def train_table(r) -> tuple[list, list]:
    """(header, rows) summarising one forecast.TrainResult, every number with its unit."""
    rows = [
        ("layout", r.layout.describe()),
        ("chips (used / allocated)", f"{r.chips_used:,} / {r.chips:,}"),
        ("step time", f"{r.step_time_s:.3f} s"),
        ("throughput", f"{r.tokens_per_s:,.0f} tokens/s ({r.tokens_per_s_per_chip:,.1f} per chip)"),
        ("MFU / HFU", f"{100 * r.mfu:.1f}% / {100 * r.hfu:.1f}%"),
        ("memory per chip", f"{r.memory_gib:.1f} GiB of {r.memory_capacity_bytes / GiB:.0f} GiB"
         + ("" if r.fits else " (does not fit)")),
    ]
    if r.tokens:
        rows += [
            ("tokens", f"{r.tokens:.3g}"),
            ("time to train (ideal)", f"{r.time_to_train_s / DAY:.1f} days"),
            ("time to train with failures",
             f"{r.expected.expected_s / DAY:.1f} days (goodput {100 * r.expected.goodput:.1f}%)"),
            ("chip-hours", f"{r.chip_hours:,.0f} chip-h"),
            ("cost", f"{r.cost_usd:,.0f} USD" if r.cost_usd is not None
             else f"n/a ({r.why_missing().get('cost', '')})"),
        ]
    return ["quantity", "value"], rows


def train_figures(r) -> list:
    from . import plots

    charts = [plots.breakdown_figure(r)]
    if r.layout.pp > 1:
        charts.append(plots.pipeline_figure(r))
    return charts


def train_report(r, title: str | None = None) -> Report:
    """The report `flopcast train --html/--png` writes: summary, breakdowns and the pipeline schedule."""
    header, rows = train_table(r)
    rep = Report(title or f"flopcast train: {r.model.label} on {r.chips:,} {r.system.chip.id} chips ({r.system.id})",
                 f"calibration: {r.calibration_basis}")
    text = "" if r.layout.pp > 1 else "No pipeline parallelism (pp = 1): no pipeline schedule to draw."
    rep.add("Training configuration", text, header=header, rows=rows, figures=train_figures(r))
    return rep


def search_report(rows, title: str) -> Report:
    """The report of `flopcast search`: the top layouts as a table and as side-by-side breakdowns."""
    from . import plots

    rep = Report(title)
    if not rows:
        return rep.add("Layouts", "No layout fits.")
    top = rows[:8]
    table = [(f"#{k}", f"{r.step_time_s:.3f}", f"{r.tokens_per_s_per_chip:,.0f}", f"{100 * r.mfu:.1f}",
              f"{r.memory_gib:.1f}", r.layout.describe()) for k, r in enumerate(rows, 1)]
    rep.add("Best layouts", header=["#", "step (s)", "tokens/s per chip", "MFU (%)", "memory (GiB/chip)", "layout"],
            rows=table, figures=[plots.breakdown_figure(top, name="search-breakdown")])
    if rows[0].layout.pp > 1:
        rep.add("Pipeline schedule of the best layout", figures=[plots.pipeline_figure(rows[0])])
    return rep


def plan_report(out, title: str) -> Report:
    """The report of `flopcast plan`: size/time/cost points, the frontier, scaling and goodput curves."""
    from . import plots

    pts = [p for p in out.points if p.result is not None]
    rep = Report(title)
    table = [(f"{p.nodes:,}", f"{p.chips:,}",
              f"{p.result.time_to_train_s / DAY:.1f}" if p.result else "n/a",
              _fmt(p.result.cost_usd, "USD", 4) if p.result else "n/a",
              f"{100 * p.result.mfu:.1f}" if p.result else "n/a",
              p.result.layout.describe() if p.result else p.reason) for p in out.points]
    rep.add("Cluster sizes searched", header=["nodes", "chips", "days", "cost", "MFU (%)", "layout"], rows=table,
            figures=[plots.pareto_figure(out)] if pts else [])
    if pts:
        rep.add("Scaling", figures=[plots.scaling_figure([p.result for p in pts])])
        rows = [(p.chips, p.result, p.result.expected) for p in pts if p.result.expected is not None]
        if rows:
            rep.add("Goodput with failures", figures=[plots.goodput_figure(rows)])
    return rep


def reliability_report(result, g, sim) -> Report:
    from . import plots

    rep = Report(f"flopcast reliability: {result.model.label} on {g.chips:,} {result.system.chip.id} chips")
    rows = [("ideal", f"{g.ideal_s / DAY:.2f} days"), ("expected with failures", f"{g.expected_s / DAY:.2f} days"),
            ("goodput", f"{100 * g.goodput:.1f}%"), ("interruptions", f"{g.interruptions:,.0f}"),
            ("checkpoint interval", f"{g.interval_s / 60:.1f} min"),
            ("Monte-Carlo p50 / p90", f"{sim.percentile(50) / DAY:.2f} / {sim.percentile(90) / DAY:.2f} days")]
    return rep.add("Failures, checkpoints and restarts", header=["quantity", "value"], rows=rows,
                   figures=[plots.goodput_breakdown_figure(g, sim)])


def reliability_sweep_report(rows, title: str) -> Report:
    """rows: [(chips, TrainResult, Goodput)]."""
    from . import plots

    table = [(f"{n:,}", f"{g.ideal_s / DAY:.2f}", f"{g.expected_s / DAY:.2f}", f"{100 * g.goodput:.1f}",
              r.layout.describe()) for n, r, g in rows]
    return Report(title).add("Goodput against cluster size",
                             header=["chips", "ideal (days)", "expected (days)", "goodput (%)", "layout"],
                             rows=table, figures=[plots.goodput_figure(rows)])


# ---------------------------------------------------------------- serving


def infer_report(d, r, input_tokens: int, output_tokens: int) -> Report:
    """The report of `flopcast infer`: the roofline with this batch's prefill and decode and a batch sweep."""
    from . import plots

    batches = sorted({1, r.batch} | {b for b in (4, 16, 64, 256) if b <= max(1, r.max_batch)})
    pts = plots.roofline_points(d, input_tokens=input_tokens, output_tokens=output_tokens, decode_batches=batches,
                                prefill_batches=sorted({1, r.batch}))
    rows = [("time to first token", f"{r.ttft_s * 1e3:.2f} ms"), ("time per output token", f"{r.tpot_s * 1e3:.2f} ms"),
            ("decode throughput", f"{r.output_tokens_per_s_total * d.replicas:,.1f} tokens/s"),
            ("memory per replica",
             f"{sum(r.memory_bytes.values()) / GiB:.2f} GiB of {r.memory_capacity_bytes / GiB:.1f} GiB")]
    rep = Report(f"flopcast infer: {d.model.label} on {d.system.id} (tp {d.tp}, batch {r.batch})")
    return rep.add("Operating points on the roofline", header=["quantity", "value"], rows=rows,
                   figures=[plots.roofline_figure(d, pts)])


def saturation_qps(d, input_tokens: int = 512, output_tokens: int = 128) -> float:
    """Requests/s one replica of `d` sustains at its largest batch (up to 256), from cost/inference.predict."""
    from ..cost import inference as inf

    b = max(1, min(inf.max_batch(d, input_tokens + output_tokens), 256))
    r = inf.predict(d, b, input_tokens, output_tokens)
    # each request costs its share of a prefill pass and `output_tokens` decode steps shared by b sequences
    return max(b / (r.prefill_s + output_tokens * r.tpot_s), 1e-3)


def serve_report(d, config, *, rates, requests: int, input_tokens="512", output_tokens="128", seed: int = 0,
                 marked_qps: float | None = None, title: str | None = None) -> Report:
    """The report of `flopcast serve`: latency against throughput over Poisson request rates."""
    from . import plots

    pts = plots.serving_sweep(d, config, rates, requests=requests, input_tokens=input_tokens,
                              output_tokens=output_tokens, seed=seed)
    band = plots.serving_band(d, config, rates, _serving_interval(d), requests=requests, input_tokens=input_tokens,
                              output_tokens=output_tokens, seed=seed)
    rows = [(f"{q:.3g}", f"{r.output_tokens_per_s:,.0f}", _fmt(r.ttft_s["p90"] and r.ttft_s["p90"] * 1e3, "ms"),
             _fmt(r.tpot_s["p90"] and r.tpot_s["p90"] * 1e3, "ms"), _fmt(r.e2e_s["p50"], "s"),
             f"{100 * r.slo_attainment:.0f}") for q, r in pts]
    if hasattr(d, "prefill"):  # disaggregated (simulate/serving/disagg.Disaggregated)
        head = f"{d.prefill.model.label} on {d.prefill.system.id}, {d.label}, {d.prefill.weights.name}"
    else:
        head = (f"{d.model.label} on {config.replicas} x {d.system.id} replica(s), tp {d.tp}, {d.weights.name}, "
                f"{config.scheduler.value} batching")
    rep = Report(title or f"flopcast serve: {head}")
    return rep.add("Latency against throughput",
                   f"{requests} requests per rate, input {input_tokens} and output {output_tokens} tokens, seed "
                   f"{seed}.",
                   header=["offered (requests/s)", "output tokens/s", "TTFT p90", "TPOT p90", "e2e p50", "SLO met (%)"],
                   rows=rows, figures=[plots.serving_figure(pts, config.slo_ttft_s, config.slo_tpot_s, title=head,
                                                            marked_qps=marked_qps, band=band)])


def _serving_interval(d):
    """The prediction interval of a serving forecast of deployment d (cost/uncertainty.py), or None."""
    from ..cost import inference as inf

    return inf.deployment_interval(d)


def deploy_report(res, title: str | None = None) -> Report:
    """The report of `flopcast deploy`: every simulated deployment per system, and the throughput/TPOT figure."""
    from . import plots

    cfg = res.config
    rows = []
    for sid, o in res.systems.items():
        for p in o.simulated:
            r = p.result
            rows.append((sid, p.candidate.label + (" (best)" if p is o.best else ""), f"{p.qps:,.1f}",
                         f"{p.output_tokens_per_s_per_chip:,.0f}",
                         _fmt(r.ttft_s["p50"] and r.ttft_s["p50"] * 1e3, "ms"),
                         _fmt(r.tpot_s["p50"] and r.tpot_s["p50"] * 1e3, "ms"),
                         _fmt(p.cost_per_million_output_tokens_usd, "USD"),
                         f"{p.chip_hours_per_million_output_tokens:.3f}"))
    head = (f"{res.model.label} at TTFT {cfg.slo_ttft_s * 1e3:,.0f} ms / TPOT {cfg.slo_tpot_s * 1e3:,.0f} ms "
            f"(90% of requests), {res.workload_label}")
    rep = Report(title or f"flopcast deploy: {head}")
    cuts = " ".join(f"{sid}: {o.budget_note}." for sid, o in res.systems.items() if o.budget_note)
    return rep.add("Simulated deployments", head + "." + (f" {cuts}" if cuts else ""),
                   header=["system", "deployment", "requests/s", "output tok/s per chip", "TTFT p50", "TPOT p50",
                           "per M output tokens", "chip-h per M"],
                   rows=rows, figures=[plots.deploy_figure(list(res.systems.values()), cfg.slo_tpot_s)])


def load_rates(center: float, factors=(0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)) -> list:
    return [center * f for f in factors]


# ---------------------------------------------------------------- flopcast report


def _scaling_nodes(chips: int, system) -> list:
    node = system.chips_per_node
    max_nodes = max(1, system.max_chips // node)
    base = max(1, math.ceil(chips / node))
    return sorted({min(max_nodes, max(1, round(base * f))) for f in SCALING_FACTORS})


def build_report(model=forecast.DEFAULT_MODEL, hardware=forecast.DEFAULT_SYSTEM, chips=None, *, tokens=None,
                 serve_model=DEFAULT_SERVE_MODEL, serve_hardware=DEFAULT_SERVE_SYSTEM, serve_chips=DEFAULT_SERVE_CHIPS,
                 requests: int = 300, scaling_chips=None, layout=None, progress=None,
                 calibration=None, economics=None) -> Report:
    """All of flopcast's figures for one training scenario and one serving deployment.

    scaling_chips: cluster sizes (chips, rounded up to whole nodes) of the scaling, Pareto and goodput
    curves; default 1/8x to 8x the job's chips. layout: layout fields pinned (as forecast.train takes them).
    calibration: a file `flopcast calibrate` wrote, replacing the shipped calibration of its kind (training or
    serving); None: the shipped ones. economics: the user's price_per_hour (USD per node-hour), power_w (per chip)
    and pue, replacing the catalog's in every training cost and energy (cost/economics.rates_for).
    """
    from ..cost import calibrations
    from ..cost import economics as economics_mod
    from ..cost import inference as inf
    from ..plan import capacity
    from ..simulate import serving as S
    from . import plots

    total = 5
    say = progress or (lambda step, total, text: None)  # progress(step, total, text) as each step starts
    m = forecast.resolve_model(model)
    system = forecast.resolve_system(hardware)
    n_tokens = tokens if tokens else forecast.default_tokens(m)
    rep = Report(f"flopcast report: {m.label} on {system.id}",
                 f"training {n_tokens:.3g} tokens; serving {serve_model} on {serve_hardware}")
    say(1, total, "training configuration (layout search)")
    layout = dict(layout or {})
    cal, engines = calibrations.pair(calibration)
    given = {k: v for k, v in (economics or {}).items() if v is not None}
    rates = economics_mod.rates_for(system, **given) if given else None
    r = forecast.train(m, system, chips, tokens=n_tokens, calibration=cal, **layout)
    if rates is not None:
        r = replace(r, rates=rates)
    header, rows = train_table(r)
    rep.add("Training configuration",
            f"The fastest layout that fits {m.label} on {r.chips:,} {system.chip.id} chips ({system.id}), "
            f"{n_tokens:.3g} training tokens." + ("" if r.layout.pp > 1 else " pp = 1: no pipeline schedule to draw."),
            header=header, rows=rows, figures=train_figures(r))

    node = system.chips_per_node
    nodes = (sorted({max(1, math.ceil(c / node)) for c in scaling_chips}) if scaling_chips
             else _scaling_nodes(r.chips, system))
    say(2, total, f"scaling and Pareto front ({len(nodes)} cluster sizes: "
                       f"{', '.join(f'{n * system.chips_per_node:,}' for n in nodes)} chips)")
    try:
        space = forecast.layout_space(**{k: v for k, v in layout.items() if k != "dp"})  # dp follows the cluster size
        out = capacity.pareto(m, system, n_tokens, cal, space, sizes=nodes, rates=rates)
    except FlopcastError as exc:
        rep.add("Scaling and cost", f"Not drawn: {exc}")
        out = None
    pts = [p for p in out.points if p.result is not None] if out else []
    if pts:
        rep.add("Scaling with cluster size", "Time to train, MFU and cost of the best layout at each cluster size.",
                figures=[plots.scaling_figure([p.result for p in pts])])
        rep.add("Pareto front: cluster size, time and cost", figures=[plots.pareto_figure(out)])
        say(3, total, "goodput with failures")
        rows_g = [(p.chips, p.result, p.result.expected) for p in pts]
        rep.add("Goodput against cluster size", figures=[plots.goodput_figure(rows_g)])
    else:
        say(3, total, "goodput with failures (skipped: no cluster size fits)")

    say(4, total, f"serving simulation ({serve_model} on {serve_hardware})")
    d = inf.deployment(catalog.load_model(serve_model), catalog.system_for(serve_hardware), chips=serve_chips,
                       calibration=cal, inference_calibration=engines)
    cfg = S.ServingConfig()
    q_sat = saturation_qps(d)
    srep = serve_report(d, cfg, rates=[q_sat * f for f in (0.1, 0.25, 0.5, 0.7, 0.85, 1.0, 1.2)], requests=requests)
    rep.sections += srep.sections
    say(5, total, "roofline")
    rrep = infer_report(d, inf.predict(d, 1, 512, 128), 512, 128)
    rep.sections += rrep.sections
    return rep


def compare_report(out: dict, title: str) -> Report:
    """The report of `flopcast compare` (training): side-by-side bars and breakdowns."""
    from . import plots

    rows = [(k, "n/a", "n/a", "n/a", v) if isinstance(v, str) else
            (k, f"{v.time_to_train_s / DAY:.1f}" if v.time_to_train_s else "n/a", f"{100 * v.mfu:.1f}",
             _fmt(v.cost_usd, "USD", 4), v.layout.describe()) for k, v in out.items()]
    return Report(title).add("Systems", header=["system", "days", "MFU (%)", "cost", "layout"], rows=rows,
                             figures=plots.figures_compare(out))


def compare_serving_report(out: dict, title: str) -> Report:
    """The report of `flopcast compare --serve`: capacity, cost per token and latency per system."""
    from . import plots

    rows = []
    for k, p in out.items():
        if isinstance(p, str):
            rows.append((k, "n/a", "n/a", "n/a", p))
            continue
        c = p.result.cost_per_million_output_tokens_usd
        rows.append((k, f"{p.qps:.3g}", "n/a (no price)" if c is None else f"{c:.3f}",
                     f"{1e3 * p.result.tpot_s['p90']:.1f}" if p.result.tpot_s["p90"] is not None else "n/a",
                     f"{p.chips} chip(s), {p.label}"))
    return Report(title).add("Systems", header=["system", "requests/s", "USD per M output tokens", "TPOT p90 (ms)",
                                                "deployment"], rows=rows,
                             figures=[plots.serving_compare_figure(out)])


def claims_report(result) -> Report:
    """The report of `flopcast claims`: the verdict table and the figures behind the estimates."""
    from . import plots

    rows = [(r.id, r.claim, _fmt(r.claimed, r.unit), _fmt(r.estimate, r.unit), r.verdict, r.why) for r in result.rows]
    rep = Report("flopcast claims: the Trainium2 and Graviton4 announcement, checked",
                 "every estimate is flopcast's own forecast; see `flopcast claims --json` for assumptions and sources")
    rep.add("Claims", header=["#", "claim", "announced", "flopcast", "verdict", "why"], rows=rows)
    rep.add("The figures behind the estimates", figures=plots.figures_claims(result.series))
    return rep
