"""`flopcast deploy`: the cheapest deployment per system at the SLOs (parse, call flopcast.api, render)."""

from __future__ import annotations

import csv

import click

from ..limits import click_type
from .. import api
from ..errors import FlopcastError
from ..progress import Progress
from .options import calibration_option
from .render import echo_json


def _money(v) -> str:
    return "n/a" if v is None else f"{v:.3f} USD"


def _point_line(p) -> str:
    r = p.result
    return (f"{p.candidate.label}: {p.qps:,.1f} req/s on {p.instances} instance(s), "
            f"{p.output_tokens_per_s_per_chip:,.0f} output tok/s per chip, TTFT p50 {r.ttft_s['p50'] * 1e3:,.0f} ms, "
            f"TPOT p50 {r.tpot_s['p50'] * 1e3:,.1f} ms, {_money(p.cost_per_million_output_tokens_usd)} "
            f"per M output tokens ({p.chip_hours_per_million_output_tokens:.3f} chip-h)")


def _system_lines(o) -> list[str]:
    lines = [f"{o.system.id}: {o.considered} candidates, {len(o.simulated)} simulated"
             + (f"; pruned: {', '.join(f'{v} {k}' for k, v in o.pruned.items())}" if o.pruned else "")]
    if o.best is None:
        return lines + [f"  no deployment: {o.reason}"]
    lines.append(f"  best      {_point_line(o.best)}")
    if o.verified is not None:
        v = o.verified
        unit = "units" if o.best.to_dict()["disaggregated"] else "replicas"
        lines.append(f"  checked   one instance simulated whole ({o.best.candidate.replicas_per_instance} {unit}, "
                     f"least-loaded routing) at {o.best.qps:,.1f} req/s: {v.slo_attainment:.0%} of requests within "
                     f"the SLOs over {v.requests:,} requests")
    if o.baseline is not None:
        lines.append(f"  baseline  {_point_line(o.baseline)}")
    lines.append("  Pareto front (output tok/s per chip vs TPOT p50):")
    lines += [f"    {_point_line(p)}" for p in o.pareto]
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
@click.option("--input-tokens", default="512", show_default=True, help="N, uniform:LO:HI or lognormal:MEAN:SIGMA.")
@click.option("--output-tokens", default="128", show_default=True, help="N, uniform:LO:HI or lognormal:MEAN:SIGMA.")
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
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None,
              help="Write every simulated deployment to this CSV.")
def deploy(model, hardware, slo_ttft, slo_tpot, qps, find_capacity, input_tokens, output_tokens, weights, kv_dtype,
           disaggregate, requests, seed, calibration, as_json, emit, csv_path):
    """Search how to deploy MODEL on each system: replicas x TP x weight/KV format x max batch, and prefill/decode
    pools apart (xPyD), pruned by the
    roofline, simulated, ranked by cost per million output tokens at the SLOs."""
    if find_capacity and qps is not None:
        raise FlopcastError("--find-capacity ranks each system at its capacity; leave out --qps")
    with Progress("deploying", unit="simulations", enabled=not as_json) as bar:
        res = api.deploy(model, hardware, slo_ttft=slo_ttft, slo_tpot=slo_tpot, qps=qps, input_tokens=input_tokens,
                         output_tokens=output_tokens, weights=weights, kv_dtype=kv_dtype, requests=requests,
                         seed=seed, calibration=calibration, progress=bar, disaggregate=disaggregate)
    if csv_path:
        _write_csv(csv_path, res.rows())
    if as_json:
        out = res.to_dict()
        if emit:
            out["launch"] = {k: v.render() for k, v in res.launches().items()}
        echo_json(out)
        return
    cfg = res.config
    click.echo(f"{res.model.label}: SLO TTFT {cfg.slo_ttft_s * 1e3:,.0f} ms, TPOT {cfg.slo_tpot_s * 1e3:,.0f} ms "
               f"(90% of requests), {input_tokens} in / {output_tokens} out tokens"
               + (f", {qps:g} req/s" if qps else ", each at its capacity"))
    for o in res.systems.values():
        click.echo("\n".join(_system_lines(o)))
    if emit:
        for launch in res.launches().values():
            click.echo("\n" + launch.render().rstrip())
