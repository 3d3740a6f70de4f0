"""Commands `flopcast search`, `flopcast plan` and `flopcast compare`: render what flopcast.plan computes."""

from __future__ import annotations

import time

import click

from ..limits import check, click_type
from .. import api, catalog
from ..errors import FlopcastError
from ..plan import capacity
from ..plan import search as search_mod
from ..progress import Progress
from ..units import DAY, parse_count, parse_duration
from .options import layout_from, layout_options, report_options, seconds
from .options import tokens as parse_tokens
from .render import echo_json, emit_report


def _reports():
    from ..report import figures  # the figures load matplotlib only when a report is asked for

    return figures


def _batch_range(text):
    if not text:
        return None
    try:
        lo, hi = (int(v) for v in text.split(":"))
    except ValueError:
        raise FlopcastError(f"--batch-range {text!r}: write MIN:MAX in sequences, e.g. 512:4096") from None
    if lo < 1 or hi < lo:
        raise FlopcastError(f"--batch-range {text!r}: need 1 <= MIN <= MAX")
    return (lo, hi)


def _space(kw, dtypes=None, batch_range=None):
    layout = layout_from(kw)
    if dtypes:
        if "dtype" in layout:
            raise FlopcastError("give either --dtype (pinned) or --dtypes (searched), not both")
        dtypes = [d.strip() for d in dtypes.split(",") if d.strip()]
    return api.layout_space(**layout, dtypes=dtypes, batch_range=_batch_range(batch_range))


def _fmt_rejected(rejected: dict) -> list[str]:
    return [f"  {v:>12,}  {k}" for k, v in sorted(rejected.items(), key=lambda kv: -kv[1])]


def _na(value, reason, fmt):
    return fmt(value) if value is not None else f"n/a ({reason})"


@click.command("search")
@click.argument("model")
@click.option("--hardware", "-H", required=True, help="System (e.g. trn2.48xlarge, p5.48xlarge, dgx-a100-80gb).")
@click.option("--chips", "-n", type=click_type("chips"), required=True, help="Chips in the cluster (the search may leave some idle).")
@click.option("--top", "top", type=click_type("top"), default=10, show_default=True, help="How many layouts to print.")
@click.option("--objective", type=click.Choice(["throughput", "cost", "energy"]), default="throughput",
              show_default=True, help="What the ranking minimises per token: time, dollars or joules.")
@click.option("--dtypes", help="Compute dtypes to search over, comma-separated (e.g. bf16,fp8); default bf16.")
@click.option("--batch-range", help="Global batch range in sequences, MIN:MAX (default: 0.5x..2x the model's customary batch).")
@click.option("--tokens", help="Training tokens for time-to-train (e.g. 300B, 1.5T, chinchilla).")
@click.option("--no-idle", is_flag=True, help="Use every chip (tp x pp x dp x cp = chips).")
@layout_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@report_options
def search(model, hardware, chips, top, objective, dtypes, batch_range, tokens, no_idle, as_json, seq_len, html, png,
           **kw):
    """Evaluate every valid layout of MODEL on CHIPS chips; print the best, and what each rule rejected.

    Any layout option pins that field; the rest are searched.
    """
    m = api.resolve_model(model, seq_len)
    system = api.resolve_system(hardware)
    if chips < 1:
        raise FlopcastError(f"--chips must be a positive integer, got {chips}")
    if chips > system.max_chips:
        raise FlopcastError(f"{system.id} scales to {system.max_chips} chips; --chips {chips} is more")
    if top < 1:
        raise FlopcastError(f"--top must be positive, got {top}")
    space = _space(kw, dtypes, batch_range)
    n_tokens = parse_tokens(tokens, m) if tokens else None
    cal = catalog.calibration()
    t0 = time.perf_counter()
    with Progress("searching layouts", enabled=not as_json) as bar:
        out = search_mod.search(m, system, chips, cal, space, objective, allow_idle=not no_idle, progress=bar)
    wall = time.perf_counter() - t0
    rows = [api.result_from(m, system, chips, out.batch, out.results, int(i), cal, n_tokens, "searched")
            for i in out.order[:top]]
    rate = out.considered / wall if wall > 0 else float("inf")
    emit_report(html, png, lambda: _reports().search_report(rows, f"flopcast search: {m.label} on {chips:,} "
                                                                  f"{system.chip.id} chips ({system.id})"))
    if as_json:
        echo_json({
            "model": m.label, "hardware": system.id, "chips": chips, "objective": objective,
            "candidates": out.considered, "valid": out.batch.size, "fit": out.n_fit,
            "wall_s": wall, "candidates_per_s": rate, "rejected": out.rejected,
            "top": [r.to_dict() for r in rows],
        })
        return
    click.echo(f"{m.label} on {chips:,} {system.chip.id} chips ({system.id}), objective {objective}")
    click.echo(f"{out.considered:,} candidates evaluated in {wall:.2f} s ({rate:,.0f}/s); "
               f"{out.batch.size:,} valid, {out.n_fit:,} fit in memory")
    if rows:
        head = f"{'#':>3} {'step s':>9} {'tok/s/chip':>11} {'MFU %':>6} {'GiB/chip':>9} "
        head += f"{'days':>8} {'w/faults':>8} " if n_tokens else ""
        head += f"{'idle':>5}  layout"
        click.echo(head)
        for k, r in enumerate(rows, 1):
            line = (f"{k:>3} {r.step_time_s:>9.3f} {r.tokens_per_s_per_chip:>11,.0f} "
                    f"{100 * r.mfu:>6.1f} {r.memory_gib:>9.1f} ")
            line += f"{r.time_to_train_s / DAY:>8.1f} {r.expected.expected_s / DAY:>8.1f} " if n_tokens else ""
            line += f"{r.idle_chips:>5}  {r.layout.describe()}"
            click.echo(line)
    else:
        click.echo("no layout fits")
    if out.rejected:
        click.echo("rejected (by the first rule each candidate broke):")
        for line in _fmt_rejected(out.rejected):
            click.echo(line)


def _point_dict(p: capacity.PlanPoint) -> dict:
    d = {"nodes": p.nodes, "chips": p.chips}
    if p.result is None:
        d["reason"] = p.reason
        return d
    r = p.result.to_dict()
    d.update({k: r[k] for k in ("time_to_train_s", "time_to_train_days", "expected_time_to_train_days", "goodput",
                                "cost_usd", "chip_hours", "energy_kwh",
                                "mfu", "step_time_s", "tokens_per_s", "idle_chips", "layout", "unavailable")})
    return d


def _point_line(p: capacity.PlanPoint) -> str:
    if p.result is None:
        return f"{p.nodes:>7,} {p.chips:>9,}  {p.reason}"
    r = p.result
    cost = f"${r.cost_usd:,.0f}" if r.cost_usd is not None else "n/a"
    return (f"{p.nodes:>7,} {p.chips:>9,} {r.time_to_train_s / DAY:>9.1f} {r.expected.expected_s / DAY:>11.1f} "
            f"{cost:>16} {100 * r.mfu:>6.1f} {r.idle_chips:>7,}  {r.layout.describe()}")


def _parsed(parser, text: str, option: str, example: str, unit_required: bool = False) -> float:
    t = text.strip()
    if unit_required and t.replace(".", "", 1).lstrip("+-").isdigit():
        raise FlopcastError(f"{option} {text!r} needs a unit: write e.g. {example}")
    try:
        v = parser(t)
    except ValueError:
        raise FlopcastError(f"{option} {text!r}: write e.g. {example}") from None
    if not v > 0:
        raise FlopcastError(f"{option} must be positive, got {text!r}")
    return check({"--deadline": "deadline_s", "--budget": "budget_usd"}[option], v, label=option)


@click.command("plan")
@click.argument("model")
@click.option("--hardware", "-H", required=True, help="System to size (whole nodes of it).")
@click.option("--tokens", default="chinchilla", show_default=True, help="Training tokens (e.g. 300B, 1.5T; chinchilla = 20 per parameter).")
@click.option("--deadline", help="Finish within this time (e.g. 30d, 12h): the smallest cluster that does.")
@click.option("--budget", help="Spend at most this many dollars (e.g. 2.5M): the fastest cluster that does.")
@click.option("--pareto", "frontier", is_flag=True, help="The frontier of cluster size, time to train and cost.")
@layout_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@report_options
def plan(model, hardware, tokens, deadline, budget, frontier, as_json, seq_len, html, png, **kw):
    """Size a cluster of HARDWARE for MODEL: from a deadline, a budget, or as a size/time/cost frontier."""
    if sum(x is not None and x is not False for x in (deadline, budget, frontier or None)) != 1:
        raise FlopcastError("give exactly one of --deadline, --budget or --pareto")
    m = api.resolve_model(model, seq_len)
    system = api.resolve_system(hardware)
    n_tokens = parse_tokens(tokens, m)
    space = _space(kw)
    cal = catalog.calibration()
    t0 = time.perf_counter()
    with Progress("planning", enabled=not as_json) as bar:
        if deadline:
            d = _parsed(parse_duration, deadline, "--deadline", "30d, 12h or 90min", unit_required=True)
            out = capacity.plan_deadline(m, system, n_tokens, d, cal, space, progress=bar)
            what = f"deadline {d / DAY:.1f} days"
        elif budget:
            b = _parsed(parse_count, budget, "--budget", "dollars such as 2.5M or 400000")
            out = capacity.plan_budget(m, system, n_tokens, b, cal, space, progress=bar)
            what = f"budget ${b:,.0f}"
        else:
            out = capacity.pareto(m, system, n_tokens, cal, space, progress=bar)
            what = "pareto frontier"
    wall = time.perf_counter() - t0
    emit_report(html, png, lambda: _reports().plan_report(out, f"flopcast plan: {m.label} on {system.id}, {what}"))
    if as_json:
        echo_json({
            "model": m.label, "hardware": system.id, "tokens": n_tokens, "kind": out.kind, "target": out.target,
            "searches": out.searches, "wall_s": wall,
            "chosen": None if out.chosen is None else out.chosen.result.to_dict(),
            "frontier": [_point_dict(p) for p in out.frontier],
            "points": [_point_dict(p) for p in out.points],
        })
        return
    click.echo(f"{m.label}, {n_tokens:.3g} tokens, on {system.id} ({system.chips_per_node} chips per node): {what}")
    click.echo(f"{out.searches} cluster sizes searched in {wall:.1f} s")
    click.echo(f"{'nodes':>7} {'chips':>9} {'days':>9} {'w/ faults':>11} {'cost USD':>16} {'MFU %':>6} "
               f"{'idle':>7}  layout")
    shown = out.frontier if out.kind == "pareto" else out.points
    for p in shown:
        mark = "  <-" if out.chosen is not None and p is out.chosen else ""
        click.echo(_point_line(p) + mark)
    if out.chosen is not None:
        r = out.chosen.result
        click.echo(f"answer: {out.chosen.nodes:,} nodes ({out.chosen.chips:,} chips), {r.time_to_train_s / DAY:.1f} days, "
                   + (f"${r.cost_usd:,.0f}" if r.cost_usd is not None else f"cost n/a ({r.why_missing().get('cost', '')})")
                   + f"; layout {r.layout.describe()}")
    elif out.kind == "pareto" and system.price_per_hour is None:
        click.echo(f"(no price for {system.id}: frontier uses chip-hours as the cost)")


@click.command("compare")
@click.argument("model")
@click.option("--hardware", "-H", required=True, help="Systems, comma-separated (e.g. trn1.32xlarge,trn2.48xlarge,p5.48xlarge).")
@click.option("--chips", "-n", type=click_type("chips"), default=None,
              help="Chips on each system (required for training; serving defaults to one instance).")
@click.option("--tokens", default="chinchilla", show_default=True, help="Training tokens (e.g. 300B, 1.5T; chinchilla = 20 per parameter).")
@layout_options
@click.option("--serve", "serving", is_flag=True,
              help="Compare serving instead of training: capacity at the SLOs and cost per million tokens.")
@click.option("--qps", type=click_type("qps"), default=None, help="Serving: simulate this request rate instead of finding each capacity.")
@click.option("--input-tokens", default="512", show_default=True, help="Serving: N, uniform:LO:HI or lognormal:MEAN:SIGMA.")
@click.option("--output-tokens", default="128", show_default=True, help="Serving: N, uniform:LO:HI or lognormal:MEAN:SIGMA.")
@click.option("--weights", default=None, help="Serving: bf16, fp8, int8, q4_0, q8_0, ... (default bf16 on accelerators, q4_0 on CPUs).")
@click.option("--kv-dtype", default=None, help="Serving: KV-cache type (bf16, fp16, fp8, int8, q8_0, q4_0).")
@click.option("--scheduler", default="continuous", show_default=True, help="Serving: static | continuous | chunked-prefill.")
@click.option("--slo-ttft", default="1s", show_default=True, help="Serving: time-to-first-token target.")
@click.option("--slo-tpot", default="50ms", show_default=True, help="Serving: time-per-output-token target.")
@click.option("--requests", "n_requests", type=click_type("requests"), default=400, show_default=True, help="Serving: requests per simulation.")
@click.option("--seed", type=click_type("seed"), default=0, show_default=True, help="Serving: random seed of the arrivals.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@report_options
def compare(model, hardware, chips, tokens, as_json, seq_len, serving, qps, input_tokens, output_tokens, weights,
            kv_dtype, scheduler, slo_ttft, slo_tpot, n_requests, seed, html, png, **kw):
    """The best layout of MODEL on each system, side by side: time, MFU, chip-hours, energy, cost.

    With --serve: each system serving MODEL at the same SLOs, by cost per million output tokens
    (e.g. flopcast compare llama3-8b -H c7g.16xlarge,c8g.16xlarge,inf2.48xlarge,p5.48xlarge --serve)."""
    systems = [api.resolve_system(h.strip()) for h in hardware.split(",") if h.strip()]
    if not systems:
        raise FlopcastError("--hardware: name at least one system")
    if serving:
        _compare_serving(model, systems, chips, kw, qps, input_tokens, output_tokens, weights, kv_dtype, scheduler,
                         slo_ttft, slo_tpot, n_requests, seed, as_json, html, png)
        return
    serving_only = {"--weights": weights, "--kv-dtype": kv_dtype, "--qps": qps}
    given = [k for k, v in serving_only.items() if v is not None]
    if given:
        raise FlopcastError(f"{', '.join(given)} apply to serving; add --serve, or leave them out to compare training")
    if chips is None:
        raise FlopcastError("--chips is required to compare training (the chips on each system)")
    if chips < 1:
        raise FlopcastError(f"--chips must be a positive integer, got {chips}")
    m = api.resolve_model(model, seq_len)
    n_tokens = parse_tokens(tokens, m)
    with Progress("comparing systems", enabled=not as_json) as bar:
        out = capacity.compare(m, systems, chips, n_tokens, catalog.calibration(), _space(kw), progress=bar)
    emit_report(html, png, lambda: _reports().compare_report(
        out, f"flopcast compare: {m.label} on {chips:,} chips of {', '.join(out)}"))
    if as_json:
        echo_json({"workload": "train", "model": m.label, "chips": chips, "tokens": n_tokens,
                   "systems": {k: (v.to_dict() if not isinstance(v, str) else {"error": v}) for k, v in out.items()}})
        return
    click.echo(f"{m.label}, {n_tokens:.3g} tokens, {chips:,} chips each")
    names = list(out)
    w = max(18, *(len(n) for n in names))
    rows = [("time to train", lambda r: f"{r.time_to_train_s / DAY:.1f} days"),
            ("with faults", lambda r: f"{r.expected.expected_s / DAY:.1f} days ({100 * r.expected.goodput:.0f}%)"),
            ("MFU", lambda r: f"{100 * r.mfu:.1f} %"),
            ("chip-hours", lambda r: f"{r.chip_hours:,.0f}"),
            ("energy kWh", lambda r: _na(r.energy_kwh, "no power", lambda v: f"{v:,.0f}")),
            ("cost USD", lambda r: _na(r.cost_usd, "no price", lambda v: f"${v:,.0f}")),
            ("idle chips", lambda r: f"{r.idle_chips:,}"),
            ("layout", lambda r: r.layout.describe())]
    click.echo(f"{'':<14} " + " ".join(f"{n:>{w}}" for n in names))
    for label, f in rows:
        cells = [(f(v) if not isinstance(v, str) else "n/a") for v in out.values()]
        if label == "layout":
            click.echo("layouts:")
            for n, v in out.items():
                click.echo(f"  {n}: {v.layout.describe() if not isinstance(v, str) else v}")
            continue
        click.echo(f"{label:<14} " + " ".join(f"{c:>{w}}" for c in cells))
    for n, v in out.items():
        if isinstance(v, str):
            click.echo(f"{n}: {v}")
        else:
            for k, why in v.why_missing().items():
                if k in ("energy", "cost"):
                    click.echo(f"{n}: {k} n/a: {why}")


def _compare_serving(model, systems, chips, kw, qps, input_tokens, output_tokens, weights, kv_dtype, scheduler,
                     slo_ttft, slo_tpot, n_requests, seed, as_json, html=None, png=None):
    from ..simulate import serving as S

    layout = {k: v for k, v in layout_from(kw).items() if k != "tp"}
    if layout:
        raise FlopcastError(f"{', '.join('--' + k.replace('_', '-') for k in layout)} describe a training layout; "
                            "with --serve only --chips, --tp, --weights and --kv-dtype set the deployment")
    if qps is not None and not qps > 0:
        raise FlopcastError(f"--qps must be a positive request rate, got {qps}")
    if n_requests < 10:
        raise FlopcastError(f"--requests must be at least 10, got {n_requests}")
    m = catalog.load_model(model)
    cfg = S.ServingConfig(scheduler=S.parse_choice(S.Scheduler, scheduler, "--scheduler"),
                          slo_ttft_s=seconds(slo_ttft, "--slo-ttft"), slo_tpot_s=seconds(slo_tpot, "--slo-tpot"))
    with Progress("simulating serving", unit="systems", enabled=not as_json) as bar:
        out = capacity.compare_serving(m, systems, cfg, chips=chips, tp=kw.get("tp"), weights=weights,
                                       kv_dtype=kv_dtype, qps=qps, requests=n_requests, input_tokens=input_tokens,
                                       output_tokens=output_tokens, seed=seed, progress=bar)
    emit_report(html, png, lambda: _reports().compare_serving_report(
        out, f"flopcast compare --serve: {m.label} on {', '.join(out)}"))
    head = {"workload": "serve", "model": m.label, "scheduler": cfg.scheduler.value, "slo_ttft_s": cfg.slo_ttft_s,
            "slo_tpot_s": cfg.slo_tpot_s, "slo_attainment_target": 0.9, "input_tokens": input_tokens,
            "output_tokens": output_tokens}
    if as_json:
        echo_json({**head, "systems": {k: (v.to_dict() if not isinstance(v, str) else {"error": v})
                                       for k, v in out.items()}})
        return
    load = (f"each at its capacity (highest request rate with >= 90% of requests meeting TTFT <= "
            f"{cfg.slo_ttft_s * 1e3:.0f} ms and TPOT <= {cfg.slo_tpot_s * 1e3:.0f} ms)" if qps is None
            else f"at {qps:g} requests/s")
    click.echo(f"{m.label} served, {input_tokens} input / {output_tokens} output tokens, "
               f"{cfg.scheduler.value} batching, {load}")
    ok = {k: v for k, v in out.items() if not isinstance(v, str)}
    priced = [k for k, v in ok.items() if v.result.cost_per_million_output_tokens_usd is not None]
    best = min(priced, key=lambda k: ok[k].result.cost_per_million_output_tokens_usd) if priced else None
    names = list(out)
    w = max(18, *(len(n) for n in names))

    def cell(name, f):
        v = out[name]
        return "n/a" if isinstance(v, str) else f(v)

    rows = [("deployment", lambda p: f"{p.deployment.tp * p.deployment.replicas} chip(s), {p.deployment.weights.name}"),
            ("capacity req/s" if qps is None else "offered req/s", lambda p: f"{p.qps:.3g}"),
            ("served req/s", lambda p: f"{p.result.throughput_requests_per_s:.3g}"),
            ("output tok/s", lambda p: f"{p.result.output_tokens_per_s:,.0f}"),
            ("TTFT p90", lambda p: f"{1e3 * p.result.ttft_s['p90']:.0f} ms" if p.result.ttft_s['p90'] is not None else "n/a"),
            ("TPOT p90", lambda p: f"{1e3 * p.result.tpot_s['p90']:.1f} ms" if p.result.tpot_s['p90'] is not None else "n/a"),
            ("SLO met", lambda p: f"{100 * p.result.slo_attainment:.0f} %"),
            ("price/hour", lambda p: _na(p.deployment.price_per_hour, "no price", lambda v: f"${v:.2f}")),
            ("$/M out tok", lambda p: _na(p.result.cost_per_million_output_tokens_usd, "no price", lambda v: f"${v:.3f}")),
            ("$/M tokens", lambda p: _na(p.result.cost_per_million_tokens_usd, "no price", lambda v: f"${v:.4f}"))]
    click.echo(f"{'':<14} " + " ".join(f"{n:>{w}}" for n in names))
    for label, f in rows:
        click.echo(f"{label:<14} " + " ".join(f"{cell(n, f)[:w]:>{w}}" for n in names))
    for n, v in out.items():
        if isinstance(v, str):
            click.echo(f"{n}: {v}")
    if best is not None:
        click.echo(f"cheapest per output token: {best} (${ok[best].result.cost_per_million_output_tokens_usd:.3f} "
                   "per million output tokens)")
    for n, v in ok.items():
        for note in v.deployment.assumptions:
            click.echo(f"{n}: {note}")

