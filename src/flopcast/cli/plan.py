"""Commands `flopcast search`, `flopcast plan` and `flopcast compare`: render what flopcast.plan computes."""

from __future__ import annotations

import click

from ..limits import click_type
from .. import api
from ..progress import Progress
from ..units import DAY, fmt_count
from .options import (calibration_option, check_executor, csv_option, cuda_graphs_option, dispatcher_option,
                      economics_options, executor_options, layout_from, layout_options, report_options)
from .render import echo, echo_json, emit_report, write_csv
from .render import num as _num
from ..report.text_table import Column, render, sideways


def _reports():
    from ..report import figures  # the figures load matplotlib only when a report is asked for

    return figures


def _fmt_rejected(rejected: dict) -> list[str]:
    rows = [[v, k] for k, v in sorted(rejected.items(), key=lambda kv: -kv[1])]
    return render([Column("candidates", ",d"), Column("rule", text=True)], rows, indent="  ", header=False)


def _na(value, reason, fmt):
    return fmt(value) if value is not None else f"n/a ({reason})"


@click.command("search")
@click.argument("model")
@click.option("--hardware", "-H", required=True, help="System (e.g. trn2.48xlarge, p5.48xlarge, dgx-a100-80gb).")
@click.option("--chips", "-n", type=click_type("chips"), required=True,
              help="Chips in the cluster (the search may leave some idle).")
@click.option("--top", "top", type=click_type("top"), default=10, show_default=True, help="How many layouts to print.")
@click.option("--objective", type=click.Choice(["throughput", "cost", "energy"]), default="throughput",
              show_default=True, help="What the ranking minimises per token: time, dollars or joules.")
@click.option("--dtypes", help="Compute dtypes to search over, comma-separated (e.g. bf16,fp8); default bf16.")
@click.option("--batch-range",
              help="Global batch range in sequences, MIN:MAX (default: 0.5x..2x the model's customary batch).")
@click.option("--tokens", help="Training tokens for time-to-train (e.g. 300B, 1.5T, chinchilla).")
@click.option("--no-idle", is_flag=True, help="Use every chip (tp x pp x dp x cp = chips).")
@layout_options
@cuda_graphs_option
@dispatcher_option
@calibration_option
@csv_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@report_options
def search(model, hardware, chips, top, objective, dtypes, batch_range, tokens, no_idle, calibration, csv_path, as_json,
           seq_len, html, png, cuda_graphs, dispatcher, **kw):
    """Evaluate every valid layout of MODEL on CHIPS chips; print the best, and what each rule rejected.

    Any layout option pins that field; the rest are searched.
    """
    with Progress("searching layouts", enabled=not as_json) as bar:
        out = api.search(model, hardware, chips, top=top, objective=objective, dtypes=dtypes, batch_range=batch_range,
                         tokens=tokens, allow_idle=not no_idle, seq_len=seq_len, calibration=calibration,
                         progress=bar, cuda_graphs=cuda_graphs, dispatcher=dispatcher, **layout_from(kw))
    write_csv(csv_path, out)
    m, system, rows, n_tokens = out.model, out.system, out.top, out.tokens
    emit_report(html, png, lambda: _reports().search_report(rows, f"flopcast search: {m.label} on {chips:,} "
                                                                  f"{system.chip.id} chips ({system.id})"))
    if as_json:
        echo_json(out.to_dict())
        return
    echo(f"{m.label} on {chips:,} {system.chip.id} chips ({system.id}), objective {objective}")
    echo(f"{out.candidates:,} candidates evaluated in {out.wall_s:.2f} s ({out.candidates_per_s:,.0f}/s); "
               f"{out.valid:,} valid, {out.fit:,} fit in memory")
    if rows:
        for line in _search_table(rows, n_tokens):
            echo(line)
    else:
        echo("no layout fits")
    if out.rejected:
        echo("rejected (by the first rule each candidate broke):")
        for line in _fmt_rejected(out.rejected):
            echo(line)


def _days(s: float) -> str:
    return f"{s / DAY:,.1f} days"


def _search_table(rows, n_tokens) -> list[str]:
    cols = [Column("#", "d"), Column("step s", ",.3f"), Column("tok/s/chip", ",.0f"), Column("MFU %", ",.1f"),
            Column("GiB/chip", ",.1f")]
    cols += [Column("days", ",.1f"), Column("w/faults days", ",.1f")] if n_tokens else []
    cols += [Column("idle chips", ",d"), Column("layout", text=True)]
    body = []
    for k, r in enumerate(rows, 1):
        days = [r.time_to_train_s / DAY, r.expected.expected_s / DAY] if n_tokens else []
        body.append([k, r.step_time_s, r.tokens_per_s_per_chip, 100 * r.mfu, r.memory_gib, *days, r.idle_chips,
                     r.layout.describe()])
    return render(cols, body)


_POINT_COLUMNS = [Column("", text=True), Column("nodes", ",d"), Column("chips", ",d"), Column("days", ",.1f"),
                  Column("w/faults days", ",.1f"), Column("cost USD", ",.0f"), Column("MFU %", ".1f"),
                  Column("batch", ",d"), Column("", text=True), Column("idle", ",d"),
                  Column("layout", text=True)]


def _point_row(p, chosen) -> list:
    """One cluster size: `->` marks the chosen one, `*` a batch at its cap; a size that fails says why."""
    mark = "->" if chosen is not None and p is chosen else ""
    r = p.result
    if r is None:
        return [mark, p.nodes, p.chips, None, None, None, None, None, "", None, p.reason]
    return [mark, p.nodes, p.chips, r.time_to_train_s / DAY, p.expected_s / DAY, r.cost_usd, 100 * r.mfu,
            r.layout.global_batch, "*" if p.batch_limited else "", r.idle_chips, r.layout.describe(short=True)]


def _answer_lines(out) -> list[str]:
    """The answer first: time with faults, cost, energy of the chosen size, then the alternatives."""
    c = out.chosen
    r = c.result
    cost = f"${r.cost_usd:,.0f}" if r.cost_usd is not None else f"cost n/a ({r.why_missing().get('cost', '')})"
    energy = f"{r.energy_kwh / 1e3:,.0f} MWh" if r.energy_kwh is not None else "energy n/a"
    rule = "cheapest that meets the deadline" if out.kind == "deadline" else "fastest within the budget"
    b, level = r.bounds(), (f"{100 * r.interval.level:.0f}%" if r.interval is not None else "")
    if "expected_time_to_train_s" in b:  # the prediction interval, as `train` prints it
        lo, hi = b["expected_time_to_train_s"]
        days = f"{_days(c.expected_s)} with faults ({level}: {lo / DAY:,.1f}-{hi / DAY:,.1f})"
    else:
        days = f"{_days(c.expected_s)} with faults"
    if "cost_usd" in b and r.cost_usd is not None:
        cost += f" ({level}: ${b['cost_usd'][0]:,.0f}-${b['cost_usd'][1]:,.0f})"
    lines = [f"answer ({rule}): {c.chips:,} chips ({c.nodes:,} nodes), {days}, {_days(r.time_to_train_s)} without; "
             f"{cost}, {energy}"]
    if r.bill is not None and r.bill.cost_usd is not None:
        lines.append(f"  price {r.bill.rates.price_per_hour_usd:,.2f} USD/h per node ({r.bill.rates.price_kind}); "
                     f"downtime and re-done work ${r.bill.cost_breakdown_usd['downtime_and_rework']:,.0f}")
    for label, p in (("fastest", out.fastest), ("smallest", out.smallest)):
        if p is not None and p is not c:
            pc = f"${p.cost_usd:,.0f}" if p.cost_usd is not None else "cost n/a"
            lines.append(f"  {label}: {p.chips:,} chips, {_days(p.expected_s)} with faults, {pc}")
    lines.append(f"  layout: {r.layout.describe()}")
    if c.batch_limited:
        lines.append(f"  the global batch is at its cap ({out.batch_cap:,} sequences, {out.batch_cap_reason}): "
                     "the batch, not the hardware, limits scaling; --max-global-batch raises it")
    return lines


@click.command("plan")
@click.argument("model")
@click.option("--hardware", "-H", required=True, help="System to size (whole nodes of it).")
@click.option("--tokens", default="chinchilla", show_default=True,
              help="Training tokens (e.g. 300B, 1.5T; chinchilla = 20 per parameter).")
@click.option("--deadline",
              help="Finish within this time with faults (e.g. 30d, 12h): the cheapest cluster that does.")
@click.option("--budget",
              help="Spend at most this many dollars (e.g. 2.5M), downtime included: the fastest cluster that does.")
@click.option("--pareto", is_flag=True, help="The frontier of cluster size, time to train and cost.")
@click.option("--max-global-batch", type=int, default=None,
              help="Largest global batch (sequences) to search [default: the model's critical batch].")
@layout_options
@economics_options
@calibration_option
@csv_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@executor_options
@report_options
def plan(model, hardware, tokens, deadline, budget, pareto, max_global_batch, price_per_hour, power_w, pue,
         calibration, csv_path, as_json, seq_len, engine, address, workers, html, png, **kw):
    """Size a cluster of HARDWARE for MODEL: from a deadline, a budget, or as a size/time/cost frontier."""
    check_executor(engine, address)
    with Progress("planning", enabled=not as_json) as bar:
        res = api.plan(model, hardware, tokens=tokens, deadline=deadline, budget=budget, pareto=pareto,
                       seq_len=seq_len, calibration=calibration, progress=bar, max_global_batch=max_global_batch,
                       price_per_hour=price_per_hour, power_w=power_w, pue=pue, engine=engine, workers=workers,
                       address=address, **layout_from(kw))
    write_csv(csv_path, res)
    m, system, n_tokens, out, what, wall = res.model, res.system, res.tokens, res.outcome, res.what, res.wall_s
    emit_report(html, png, lambda: _reports().plan_report(out, f"flopcast plan: {m.label} on {system.id}, {what}"))
    if as_json:
        echo_json(res.to_dict())
        return
    echo(f"{m.label}, {fmt_count(n_tokens)} tokens, on {system.id} "
               f"({system.chips_per_node} chips per node): {what}")
    if out.chosen is not None:
        for line in _answer_lines(out):
            echo(line)
    elif out.kind == "pareto" and out.points and all(p.cost_usd is None for p in out.points):
        echo(f"(no price for {system.id}: frontier uses chip-hours as the cost)")
    ruled_out = f" ({out.bounded} more provably miss the deadline by a bound)" if out.bounded else ""
    echo(f"{out.searches} cluster sizes searched{ruled_out} in {wall:.1f} s; -> = the answer, * = at the batch cap")
    shown = out.frontier if out.kind == "pareto" else out.points
    for line in render(_POINT_COLUMNS, [_point_row(p, out.chosen) for p in shown]):
        echo(line)


@click.command("compare")
@click.argument("model")
@click.option("--hardware", "-H", required=True,
              help="Systems, comma-separated (e.g. trn1.32xlarge,trn2.48xlarge,p5.48xlarge).")
@click.option("--chips", "-n", type=click_type("chips"), default=None,
              help="Chips on each system (required for training; serving defaults to one instance).")
@click.option("--tokens", default="chinchilla", show_default=True,
              help="Training tokens (e.g. 300B, 1.5T; chinchilla = 20 per parameter).")
@layout_options
@click.option("--serve", is_flag=True,
              help="Compare serving instead of training: capacity at the SLOs and cost per million tokens.")
@click.option("--qps", type=click_type("qps"), default=None,
              help="Serving: simulate this request rate instead of finding each capacity.")
@click.option("--input-tokens", default="512", show_default=True,
              help="Serving: N, uniform:LO:HI or lognormal:MEAN:SIGMA.")
@click.option("--output-tokens", default="128", show_default=True,
              help="Serving: N, uniform:LO:HI or lognormal:MEAN:SIGMA.")
@click.option("--weights", default=None,
              help="Serving: bf16, fp8, int8, q4_0, q8_0, ... (default bf16 on accelerators, q4_0 on CPUs).")
@click.option("--kv-dtype", default=None, help="Serving: KV-cache type (bf16, fp16, fp8, int8, q8_0, q4_0).")
@click.option("--scheduler", default="continuous", show_default=True,
              help="Serving: static | continuous | chunked-prefill.")
@click.option("--slo-ttft", default="1s", show_default=True, help="Serving: time-to-first-token target.")
@click.option("--slo-tpot", default="50ms", show_default=True, help="Serving: time-per-output-token target.")
@click.option("--requests", type=click_type("requests"), default=400, show_default=True,
              help="Serving: requests per simulation.")
@click.option("--seed", type=click_type("seed"), default=0, show_default=True,
              help="Serving: random seed of the arrivals.")
@economics_options
@calibration_option
@csv_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@report_options
def compare(model, hardware, chips, tokens, as_json, seq_len, serve, qps, input_tokens, output_tokens, weights,
            kv_dtype, scheduler, slo_ttft, slo_tpot, requests, seed, calibration, csv_path, html, png,
            price_per_hour, power_w, pue, **kw):
    """The best layout of MODEL on each system, side by side: time, MFU, chip-hours, energy, cost.

    With --serve: each system serving MODEL at the same SLOs, by cost per million output tokens
    (e.g. flopcast compare llama3-8b -H c7g.16xlarge,c8g.16xlarge,inf2.48xlarge,p5.48xlarge --serve)."""
    label, unit = ("simulating serving", "systems") if serve else ("comparing systems", "candidates")
    with Progress(label, unit=unit, enabled=not as_json) as bar:
        res = api.compare(model, hardware, chips, tokens=tokens, serve=serve, qps=qps, input_tokens=input_tokens,
                          output_tokens=output_tokens, weights=weights, kv_dtype=kv_dtype, scheduler=scheduler,
                          slo_ttft=slo_ttft, slo_tpot=slo_tpot, requests=requests, seed=seed, seq_len=seq_len,
                          calibration=calibration, progress=bar, price_per_hour=price_per_hour, power_w=power_w,
                          pue=pue, **layout_from(kw))
    write_csv(csv_path, res)
    if serve:
        emit_report(html, png, lambda: _reports().compare_serving_report(
            res.systems, f"flopcast compare --serve: {res.model.label} on {', '.join(res.systems)}"))
    else:
        emit_report(html, png, lambda: _reports().compare_report(
            res.systems, f"flopcast compare: {res.model.label} on {chips:,} chips of {', '.join(res.systems)}"))
    if as_json:
        echo_json(res.to_dict())
    elif serve:
        _print_serving(res)
    else:
        _print_training(res)


def _print_training(res) -> None:
    m, n_tokens, chips, out = res.model, res.tokens, res.chips, res.systems
    echo(f"{m.label}, {fmt_count(n_tokens)} tokens, {chips:,} chips each")
    rows = [("time to train days", lambda r: f"{r.time_to_train_s / DAY:,.1f}"),
            ("with faults days", lambda r: f"{r.expected.expected_s / DAY:,.1f}"),
            ("goodput %", lambda r: f"{100 * r.expected.goodput:.0f}"),
            ("MFU %", lambda r: f"{100 * r.mfu:.1f}"),
            ("chip-hours", lambda r: f"{r.chip_hours:,.0f}"),
            ("energy kWh", lambda r: "n/a" if r.energy_kwh is None else f"{r.energy_kwh:,.0f}"),
            ("cost USD", lambda r: "n/a" if r.cost_usd is None else f"{r.cost_usd:,.0f}"),
            ("price USD/h per node", lambda r: _price(r.bill.rates)),
            ("idle chips", lambda r: f"{r.idle_chips:,}")]
    table = [(label, [f(v) if not isinstance(v, str) else "n/a" for v in out.values()]) for label, f in rows]
    for line in sideways("", list(out), table):
        echo(line)
    echo("layouts:")
    for n, v in out.items():
        echo(f"  {n}: {v.layout.describe() if not isinstance(v, str) else v}")
        for note in () if isinstance(v, str) else [x for x in v.notes if x.startswith("layout searched")]:
            echo(f"    {note}")
    for n, v in out.items():
        if isinstance(v, str):
            echo(f"{n}: {v}")
        else:
            for k, why in v.why_missing().items():
                if k in ("energy", "cost"):
                    echo(f"{n}: {k} n/a: {why}")


def _price(rates) -> str:
    """'35.76 capacity-block': the hourly price and its kind (the Capacity Block rate where no on-demand one is
    published)."""
    return "n/a" if rates.price_per_hour_usd is None else f"{rates.price_per_hour_usd:,.2f} {rates.price_kind}"


def _print_serving(res) -> None:
    m, cfg, qps, out = res.model, res.config, res.qps, res.systems
    input_tokens, output_tokens = res.input_tokens, res.output_tokens
    load = (f"each at its capacity (highest request rate with >= 90% of requests meeting TTFT <= "
            f"{cfg.slo_ttft_s * 1e3:.0f} ms and TPOT <= {cfg.slo_tpot_s * 1e3:.0f} ms)" if qps is None
            else f"at {qps:g} requests/s")
    echo(f"{m.label} served, {input_tokens} input / {output_tokens} output tokens, "
               f"{cfg.scheduler.value} batching, {load}")
    ok = {k: v for k, v in out.items() if not isinstance(v, str)}
    priced = [k for k, v in ok.items() if v.result.cost_per_million_output_tokens_usd is not None]
    best = min(priced, key=lambda k: ok[k].result.cost_per_million_output_tokens_usd) if priced else None
    ms = lambda s: None if s is None else 1e3 * s
    rows = [("deployment", lambda p: p.label),
            ("capacity req/s" if qps is None else "offered req/s", lambda p: _num(p.qps)),
            *([("80% capacity req/s", lambda p: "n/a" if not p.capacity_bounds else
                f"{_num(p.capacity_bounds[0])}-{_num(p.capacity_bounds[1])}")] if qps is None else []),
            ("served req/s", lambda p: _num(p.result.throughput_requests_per_s)),
            ("output tok/s", lambda p: f"{p.result.output_tokens_per_s:,.0f}"),
            ("TTFT p90 ms", lambda p: _num(ms(p.result.ttft_s["p90"]))),
            ("TPOT p90 ms", lambda p: _num(ms(p.result.tpot_s["p90"]))),
            ("SLO met %", lambda p: f"{100 * p.result.slo_attainment:.0f}"),
            ("price USD/h", lambda p: _na(p.deployment.price_per_hour, "no price", lambda v: f"{v:,.2f}")),
            ("USD/M out tok", lambda p: _na(p.result.cost_per_million_output_tokens_usd, "no price",
                                            lambda v: f"{v:,.3f}")),
            ("USD/M tokens", lambda p: _na(p.result.cost_per_million_tokens_usd, "no price", lambda v: f"{v:,.4f}"))]
    table = [(label, ["n/a" if isinstance(v, str) else f(v) for v in out.values()]) for label, f in rows]
    for line in sideways("", list(out), table):
        echo(line)
    for n, v in out.items():
        if isinstance(v, str):
            echo(f"{n}: {v}")
    if best is not None:
        echo(f"cheapest per output token: {best} (${ok[best].result.cost_per_million_output_tokens_usd:.3f} "
                   "per million output tokens)")
    for n, v in ok.items():
        if v.budget_note:
            echo(f"{n}: {v.budget_note}")
        for note in v.replica.assumptions:
            echo(f"{n}: {note}")

