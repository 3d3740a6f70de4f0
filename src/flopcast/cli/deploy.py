"""`flopcast deploy`: the cheapest deployment per system at the SLOs (parse, call flopcast.api, render)."""

from __future__ import annotations

import csv

import click

from ..limits import click_type
from .. import api
from ..errors import FlopcastError
from ..progress import Progress
from ..report.text_table import Column, render
from .options import calibration_option, output_path, report_options
from .render import echo, echo_json, emit_report


def _reports():
    from ..report import figures  # matplotlib only when a report is asked for

    return figures


_POINTS = [Column("", text=True), Column("req/s", ",.1f"), Column("inst", ",d"), Column("tok/s/chip", ",.0f"),
           Column("TTFT ms", ",.0f"), Column("TPOT ms", ",.1f"), Column("USD/M tok", ",.3f"),
           Column("chip-h/M tok", ",.3f"), Column("deployment", text=True, below=True)]


def _point_row(role: str, p) -> list:
    """One deployment: its rate, instances, output tokens/s per chip, p50 latencies, cost per million output
    tokens (in dollars and chip-hours)."""
    r = p.result
    ms = lambda s: None if s is None else s * 1e3  # noqa: E731  (no TPOT when every output is one token)
    return [role, p.qps, p.instances, p.output_tokens_per_s_per_chip, ms(r.ttft_s["p50"]), ms(r.tpot_s["p50"]),
            p.cost_per_million_output_tokens_usd, p.chip_hours_per_million_output_tokens, p.candidate.label]


def _system_lines(o) -> list[str]:
    lines = [f"{o.system.id}: {o.considered} candidates, {len(o.simulated)} simulated"
             + (f"; pruned: {', '.join(f'{v} {k}' for k, v in o.pruned.items())}" if o.pruned else "")]
    if o.budget_note:
        lines.append(f"  note: {o.budget_note}")
    lines += _unsimulated_lines(o)
    if o.best is None:
        return lines + [f"  no deployment: {o.reason}"]
    rows = [_point_row("best", o.best)] + ([_point_row("baseline", o.baseline)] if o.baseline is not None else [])
    rows += [_point_row("Pareto" if k == 0 else "", p) for k, p in enumerate(o.pareto)]
    lines += render(_POINTS, rows, indent="  ")
    lines.append("  (latencies p50; tok/s/chip and USD/M tok count output tokens; Pareto: the front of output tok/s "
                 "per chip vs TPOT)")
    lines += _interval_lines(o)
    if o.verified is not None:
        v = o.verified
        unit = "units" if o.best.to_dict()["disaggregated"] else "replicas"
        lines.append(f"  checked: one instance simulated whole ({o.best.candidate.replicas_per_instance} {unit}, "
                     f"least-loaded routing) at {o.best.qps:,.1f} req/s: {v.slo_attainment:.0%} of requests within "
                     f"the SLOs over {v.requests:,} requests")
    return lines


def _interval_lines(o) -> list[str]:
    """The best deployment's prediction interval: its capacity found again at each end of the serving interval."""
    b, iv = o.bounds, o.interval
    if not b:
        return [f"  interval: {o.interval_note}"] if o.interval_note else []
    span = lambda k, f: "n/a" if not b.get(k) else f"{f(b[k][0])}-{f(b[k][1])}"  # noqa: E731
    cost = ("cost_per_million_output_tokens_usd", lambda v: f"${v:,.3f}") if o.system.price_per_hour is not None \
        else ("chip_hours_per_million_output_tokens", lambda v: f"{v:,.3f} chip-h")
    return [f"  best, {iv.label} interval (capacity simulated again at x{iv.low:.2f} and x{iv.high:.2f} engine speed, "
            f"{iv.kind}): {span('qps', lambda v: f'{v:,.1f}')} req/s, "
            f"{span('output_tokens_per_s_per_chip', lambda v: f'{v:,.0f}')} tok/s/chip, {span(*cost)} /M tok"]


def _unsimulated_lines(o) -> list[str]:
    """The candidates the work budget left unsimulated, ranked on their roofline bounds (a capacity at most, so a
    cost at least)."""
    ranked = o.unsimulated_dicts()
    if not ranked:
        return []
    unit = "USD" if o.system.price_per_hour is not None else "chip-h"
    lines = [f"  not simulated ({len(o.unsimulated)}), ranked on the roofline (capacity at most, cost at least):"]
    for u in ranked:
        cost = next(v for k, v in u.items() if k.endswith("_at_least"))
        lines.append(f"    {u['roofline_bound_qps']:,.3g} req/s a replica, {cost:,.3g} {unit}/M tok: {u['label']}")
    return lines


def _write_csv(path: str, rows: list[dict]) -> None:
    if not rows:
        raise FlopcastError(f"nothing to write to {path}: no deployment was simulated")
    fields = list(dict.fromkeys(k for r in rows for k in r))
    try:
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
    except OSError as exc:
        raise FlopcastError(f"cannot write {path}: {exc.strerror or exc}") from None
    click.echo(f"wrote {path} ({len(rows)} deployments)", err=True)


@click.command()
@click.argument("model")
@click.option("--hardware", "-H", required=True, help="Systems, comma-separated (e.g. p5.48xlarge,trn2.48xlarge).")
@click.option("--slo-ttft", default="2s", show_default=True, help="Time-to-first-token target.")
@click.option("--slo-tpot", default="50ms", show_default=True, help="Time-per-output-token target.")
@click.option("--qps", type=click_type("qps"), default=None,
              help="Serve this request rate (whole instances); default: each at its capacity.")
@click.option("--find-capacity", is_flag=True, help="Rank at capacity (the default when --qps is not given).")
@click.option("--input-tokens", default=None, help="N, uniform:LO:HI or lognormal:MEAN:SIGMA (default 512).")
@click.option("--output-tokens", default=None, help="N, uniform:LO:HI or lognormal:MEAN:SIGMA (default 128).")
@click.option("--trace", default=None,
              help="CSV with arrival_s,input_tokens,output_tokens: request lengths drawn from it (arrivals Poisson).")
@click.option("--weights", default=None,
              help="Weight formats to search, comma-separated (default bf16,fp8; q4_0,q8_0 on CPUs).")
@click.option("--kv-dtype", default=None,
              help="KV-cache formats to search, comma-separated (default bf16,fp8; fp16 on CPUs).")
@click.option("--disaggregate/--no-disaggregate", default=True, show_default=True,
              help="Consider prefill and decode replicas apart (xPyD units within an instance) too.")
@click.option("--requests", type=click_type("requests"), default=300, show_default=True,
              help="Requests per simulation (at least).")
@click.option("--seed", type=click_type("seed"), default=0, show_default=True, help="Random seed of the arrivals.")
@calibration_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@click.option("--emit", is_flag=True,
              help="Print the launch command of each system's best deployment (vLLM; llama-server on CPUs).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None, callback=output_path,
              help="Write every simulated deployment to this CSV.")
@report_options
def deploy(model, hardware, slo_ttft, slo_tpot, qps, find_capacity, input_tokens, output_tokens, trace, weights,
           kv_dtype, disaggregate, requests, seed, calibration, as_json, emit, csv_path, html, png):
    """Search how to deploy MODEL on each system: replicas x TP x weight/KV format x max batch, and prefill/decode
    pools apart (xPyD), pruned by the
    roofline, simulated, ranked by cost per million output tokens at the SLOs."""
    if find_capacity and qps is not None:
        raise FlopcastError("--find-capacity ranks each system at its capacity; leave out --qps")
    if trace and (input_tokens is not None or output_tokens is not None):
        raise FlopcastError("--trace gives the request lengths; leave out --input-tokens and --output-tokens")
    with Progress("deploying", unit="simulations", enabled=not as_json) as bar:
        res = api.deploy(model, hardware, slo_ttft=slo_ttft, slo_tpot=slo_tpot, qps=qps, input_tokens=input_tokens,
                         output_tokens=output_tokens, weights=weights, kv_dtype=kv_dtype, requests=requests,
                         seed=seed, calibration=calibration, progress=bar, disaggregate=disaggregate, trace=trace)
    if csv_path:
        _write_csv(csv_path, res.rows())
    emit_report(html, png, lambda: _reports().deploy_report(res))
    if as_json:
        out = res.to_dict()
        if emit:
            out["launch"] = {k: v.render() for k, v in res.launches().items()}
        echo_json(out)
        return
    cfg = res.config
    echo(f"{res.model.label}: SLO TTFT {cfg.slo_ttft_s * 1e3:,.0f} ms, TPOT {cfg.slo_tpot_s * 1e3:,.0f} ms "
         f"(90% of requests), {res.workload_label}"
               + (f", {qps:g} req/s" if qps else ", each at its capacity"))
    for o in res.systems.values():
        echo("\n".join(_system_lines(o)))
    if emit:
        for launch in res.launches().values():
            click.echo("\n" + launch.render().rstrip())
