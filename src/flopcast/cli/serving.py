"""`flopcast infer` and `flopcast serve`: parse, call cost/inference and simulate/serving, render.

No formulas here. Errors are FlopcastError; the main group turns them into one line and exit 2.
"""

from __future__ import annotations

import click

from ..limits import click_type
from .. import api
from ..report.text_table import Column, figures, fold, render
from ..units import GiB
from .options import calibration_option, report_options
from .render import echo_json, emit_report
from .render import num as _num


def _reports():
    from ..report import figures  # the figures load matplotlib only when a report is asked for

    return figures


def _money(v):
    return "n/a (no price)" if v is None else f"{v:.3f} USD"


def _ms(v):
    return "n/a" if v is None else f"{v * 1e3:.2f} ms"


_common = [
    click.argument("model"),
    click.option("--hardware", "-H", required=True,
                 help="System or chip name, or a file (e.g. c8g.16xlarge, inf2.48xlarge, p5.48xlarge)."),
    click.option("--chips", "-n", type=click_type("chips"), default=None,
                 help="Chips (sockets for CPUs) in use; default: the instance's."),
    click.option("--tp", type=click_type("tp"), default=None,
                 help="Tensor-parallel degree in chips; default: all chips in use."),
    click.option("--threads", type=click_type("threads"), default=None, help="CPU threads; default: all cores in use."),
    click.option("--pp", type=click_type("pp"), default=None,
                 help="Pipeline stages per replica, each of --tp chips (default 1)."),
    click.option("--ep", type=click_type("ep"), default=None,
                 help="MoE models: 1, or --tp to split the experts over the replica's chips (attention "
                      "data-parallel)."),
    click.option("--weights", default=None,
                 help="Weight format: bf16, fp16, fp8, int8, int4, awq-int4, q4_0, q4_k_m, q8_0, q3_k, ..."),
    click.option("--kv-dtype", default=None, help="KV-cache type: bf16, fp16, fp8, int8, q8_0, q4_0."),
    calibration_option,
    click.option("--speculative", default=None, help="Speculative decoding: draft, eagle, medusa or mtp."),
    click.option("--spec-tokens", type=int, default=None,
                 help="Tokens drafted per step (default per method: 4; mtp 1)."),
    click.option("--acceptance", type=float, default=None,
                 help="Acceptance rate per drafted token "
                      "(default per method: draft 0.7, eagle 0.75, medusa 0.6, mtp 0.85)."),
]


def _apply(fn):
    for dec in reversed(_common):
        fn = dec(fn)
    return fn


@click.command()
@_apply
@click.option("--batch", type=click_type("max_batch"), default=1, show_default=True, help="Concurrent sequences.")
@click.option("--input-tokens", type=click_type("input_tokens"), default=512, show_default=True,
              help="Prompt tokens per request.")
@click.option("--output-tokens", type=click_type("output_tokens"), default=128, show_default=True,
              help="Generated tokens per request.")
@click.option("--prefix-tokens", type=click_type("input_tokens"), default=None,
              help="Prefix caching: tokens at the start of every prompt shared and already cached (vLLM APC).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@report_options
def infer(model, hardware, chips, tp, threads, pp, ep, weights, kv_dtype, calibration, speculative, spec_tokens,
          acceptance,
          batch, input_tokens, output_tokens, prefix_tokens, as_json,
          html, png):
    """Latency, throughput, memory and cost of one batch of requests (per-operator roofline)."""
    res = api.infer(model, hardware, chips=chips, tp=tp, threads=threads, weights=weights, kv_dtype=kv_dtype,
                    batch=batch, input_tokens=input_tokens, output_tokens=output_tokens, calibration=calibration,
                    speculative=speculative, spec_tokens=spec_tokens, acceptance=acceptance, ep=ep, pp=pp,
                    prefix_tokens=prefix_tokens or 0)
    d, r, notes = res.deployment, res.prediction, list(res.assumptions)
    emit_report(html, png, lambda: _reports().infer_report(d, r, input_tokens, output_tokens))
    if as_json:
        echo_json(res.to_dict())
        return
    b = r.bounds()

    def within(key, show):
        return f"  ({r.interval.label}: {show(b[key][0])} to {show(b[key][1])})" if key in b else ""

    head = (f"{d.model.label} on {d.system.id}: {d.chips * d.replicas} chip(s), tp {d.tp}"
            + (f", pp {d.pp}" if d.pp > 1 else "") + (f", ep {d.ep}" if d.ep > 1 else "")
            + (f", {d.threads} threads" if d.threads else "")
            + f", weights {d.weights.name} ({d.weights.bits:.3g} bit/weight), engine family {d.family}")
    lines = fold(head) + [f"batch {batch}, {input_tokens} input tokens, {output_tokens} output tokens"]
    lines += figures(_infer_rows(d, r, within, input_tokens + output_tokens))
    lines += fold("  decode step: " + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in r.decode_breakdown_s.items()
                                                if v > 0))
    lines += ["assumptions:"] + [f for a in notes for f in fold(f"  - {a}")]
    click.echo("\n".join(lines))


def _infer_rows(d, r, within, tokens: int) -> list[list]:
    """The figures of `flopcast infer`: latencies, throughputs, memory, the batch that fits, the cost."""
    mem = r.memory_bytes
    fits = "" if r.fits else "(DOES NOT FIT)"
    cost = (["cost per million output tokens", *_usd(r.cost_per_million_output_tokens_usd),
             within("cost_per_million_output_tokens_usd", _money)] if r.fits
            else ["cost per million output tokens", "n/a", "", "(the deployment does not fit in memory)"])
    return [
        ["time to first token", *_msu(r.ttft_s), within("ttft_s", _ms)],
        ["time per output token", *_msu(r.tpot_s), within("tpot_s", _ms)],
        ["decode per stream", f"{r.decode_tokens_per_s_per_stream:,.1f}", "tokens/s",
         within("decode_tokens_per_s_per_stream", lambda v: f"{v:,.1f}")],
        ["decode total", f"{r.output_tokens_per_s_total * d.replicas:,.1f}", "tokens/s", f"({d.replicas} replica(s))"],
        ["prefill", f"{r.prefill_tokens_per_s:,.0f}", "tokens/s", f"(compute; TTFT adds "
         f"{d.efficiency.request_overhead_s * 1e3:.1f} ms per request of engine overhead)"],
        ["end-to-end latency", f"{r.e2e_s:,.3f}", "s", ""],
        ["memory per replica", f"{sum(mem.values()) / GiB:,.2f}", "GiB",
         f"weights {mem['weights'] / GiB:.2f} GiB + KV cache {mem['kv_cache'] / GiB:.2f} GiB + other "
         f"{mem['other'] / GiB:.2f} GiB, of {r.memory_capacity_bytes / GiB:.1f} GiB {fits}".strip()],
        ["largest batch that fits", f"{r.max_batch:,}", "sequences", f"at {tokens:,} tokens"],
        cost,
    ]


def _usd(v) -> list[str]:
    """[value, unit] of a cost in dollars: ['0.483', 'USD'], or ['n/a', '(no price)']."""
    return ["n/a", "(no price)"] if v is None else [f"{v:,.3f}", "USD"]


def _msu(v) -> list[str]:
    """[value, unit] of a time in milliseconds."""
    return ["n/a", ""] if v is None else [f"{v * 1e3:,.2f}", "ms"]


def _p50_range(b: dict, key: str, interval) -> str:
    e = (b.get(key) or {}).get("p50")
    return f"  ({interval.label}, p50: {_ms(e[0])} to {_ms(e[1])})" if e else ""


@click.command()
@_apply
@click.option("--prefix-tokens", type=click_type("input_tokens"), default=None,
              help="Prefix caching: tokens at the start of every prompt shared and already cached (vLLM APC).")
@click.option("--qps", type=click_type("qps"), default=None, help="Poisson arrival rate, requests/s (not with --trace)")
@click.option("--requests", type=click_type("requests"), default=None,
              help="Number of requests (default: 500 at a fixed --qps; 400 per trial rate with --find-capacity, "
                   "as `compare --serve`)")
@click.option("--duration", default=None, help="Simulate arrivals for this long (e.g. 60s, 10min)")
@click.option("--input-tokens", default="512", show_default=True, help="N, uniform:LO:HI or lognormal:MEAN:SIGMA")
@click.option("--output-tokens", default="128", show_default=True, help="N, uniform:LO:HI or lognormal:MEAN:SIGMA")
@click.option("--trace", default=None, help="CSV with arrival_s,input_tokens,output_tokens and optionally "
              "prefix_tokens (per request, the cached shared prefix of its prompt)")
@click.option("--scheduler", default="continuous", show_default=True,
              help="Batching: static, continuous or chunked-prefill.")
@click.option("--slo-ttft", default="1s", show_default=True, help="Time-to-first-token target.")
@click.option("--slo-tpot", default="50ms", show_default=True, help="Time-per-output-token target.")
@click.option("--seed", type=click_type("seed"), default=0, show_default=True,
              help="Random seed of arrivals and lengths.")
@click.option("--replicas", type=click_type("replicas"), default=1, show_default=True,
              help="Replicas behind the router.")
@click.option("--router", default="least-loaded", show_default=True,
              help="Routing over replicas: least-loaded or round-robin.")
@click.option("--find-capacity", is_flag=True, help="Find the highest QPS with >= 90% of requests meeting both SLOs.")
@click.option("--disaggregate", default=None, metavar="PxD",
              help="Prefill and decode apart: P prefill and D decode replicas (e.g. 1x3), the KV cache sent between.")
@click.option("--prefill-tp", type=click_type("tp"), default=None,
              help="With --disaggregate: chips per prefill replica (default --tp, else what fits one instance).")
@click.option("--decode-tp", type=click_type("tp"), default=None,
              help="With --disaggregate: chips per decode replica (default --tp, else what fits one instance).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with unit-suffixed keys.")
@report_options
def serve(model, hardware, chips, tp, threads, pp, ep, weights, kv_dtype, calibration, speculative, spec_tokens,
          acceptance,
          prefix_tokens, qps, requests, duration, input_tokens,
          output_tokens, trace, scheduler, slo_ttft, slo_tpot, seed, replicas, router, find_capacity, disaggregate,
          prefill_tp, decode_tp, as_json, html, png):
    """Discrete-event simulation of serving: TTFT/TPOT/latency percentiles, throughput, SLOs, cost."""
    out = api.serve(model, hardware, chips=chips, tp=tp, threads=threads, weights=weights, kv_dtype=kv_dtype, qps=qps,
                    requests=requests, duration=duration, input_tokens=input_tokens, output_tokens=output_tokens,
                    trace=trace, scheduler=scheduler, slo_ttft=slo_ttft, slo_tpot=slo_tpot, seed=seed,
                    replicas=replicas, router=router, find_capacity=find_capacity, calibration=calibration,
                    speculative=speculative, spec_tokens=spec_tokens, acceptance=acceptance,
                    disaggregate=disaggregate, prefill_tp=prefill_tp, decode_tp=decode_tp, ep=ep, pp=pp, **(
                        {"prefix_tokens": prefix_tokens} if prefix_tokens is not None else {}))
    d, cfg, res, capacity, notes = out.deployment, out.config, out.result, out.capacity_qps, list(out.assumptions)
    b, interval = out.bounds, out.interval
    center = out.qps or res.arrival_rate_per_s or 1.0  # the curve spans 1/4x..2x this run's load
    emit_report(html, png, lambda: _reports().serve_report(
        out.target, cfg, rates=_reports().load_rates(center), requests=min(requests or 500, 300),
        input_tokens=input_tokens, output_tokens=output_tokens, seed=seed, marked_qps=center))
    if as_json:
        echo_json(out.to_dict())
        return
    stages = f", pp {d.pp}" if d.pp > 1 else ""
    head = (f"{d.model.label}: {replicas} replica{'' if replicas == 1 else 's'} of {d.chips} {d.system.chip.id} "
            f"chip{'' if d.chips == 1 else 's'} each (tp {d.tp}{stages}) on {d.system.id}, {d.weights.name}, "
            f"{d.family}, {cfg.scheduler.value} batching")
    if out.disaggregated is not None:
        head = f"{d.model.label} on {d.system.id}: {out.disaggregated.label}, {d.weights.name}, {d.family}"
    lines = fold(head) + figures(_serve_rows(res, cfg, capacity, qps, b, interval))
    lines += [""] + _latency_table(res, b, interval) + [""]
    lines += ["assumptions:"] + [f for a in notes for f in fold(f"  - {a}")]
    click.echo("\n".join(lines))


def _serve_rows(res, cfg, capacity, qps, b, interval) -> list[list]:
    """The figures of `flopcast serve`: the load, the requests, the throughputs, SLO attainment, the cost."""
    rows = []
    if capacity is not None:
        span = b.get("capacity_qps")
        rows.append(["capacity at the SLOs", _num(capacity), "requests/s", f"(>= 90% of requests meet TTFT <= "
                     f"{cfg.slo_ttft_s * 1e3:.0f} ms and TPOT <= {cfg.slo_tpot_s * 1e3:.0f} ms"
                     + (f"; {interval.label}: {_num(span[0])} to {_num(span[1])})" if span else ")")])
    elif qps is not None:
        rows.append(["offered load", _num(qps), "requests/s", ""])
    rejected = f", {res.rejected} rejected (too long for KV memory)" if res.rejected else ""
    tokens = b.get("output_tokens_per_s")
    cost = b.get("cost_per_million_output_tokens_usd")
    rows += [
        ["requests", f"{res.completed:,}", "completed", f"of {res.requests:,}{rejected}"],
        ["throughput", _num(res.throughput_requests_per_s), "requests/s", ""],
        ["", f"{res.output_tokens_per_s:,.0f}", "output tokens/s",
         f"({interval.label}: {tokens[0]:,.0f} to {tokens[1]:,.0f})" if tokens else ""],
        ["", f"{res.total_tokens_per_s:,.0f}", "tokens/s", "(input + output)"],
        ["SLO attainment", f"{100 * res.slo_attainment:.1f}", "%", "of requests"],
        ["cost per million output tokens", *_usd(res.cost_per_million_output_tokens_usd),
         f"({interval.label}: {_money(cost[0])} to {_money(cost[1])})" if cost else ""],
        ["cost per million tokens", *_usd(res.cost_per_million_tokens_usd), "(input + output)"],
        ["simulated", f"{res.iterations:,}", "batch iterations", f"{res.preemptions:,} preemptions, "
                                                                 f"{res.makespan_s:,.1f} s"],
    ]
    return rows


_LATENCY = [Column("  latency ms", text=True), Column("p50", ",.2f"), Column("p90", ",.2f"), Column("p99", ",.2f"),
            Column("", text=True)]


def _latency_table(res, b, interval) -> list[str]:
    """TTFT, TPOT and end-to-end latency percentiles in milliseconds, the p50's interval beside them."""
    ms = lambda v: None if v is None else 1e3 * v
    rows = [[name, *(ms(d[k]) for k in ("p50", "p90", "p99")), _p50_range(b, key, interval).strip()]
            for name, d, key in (("  TTFT", res.ttft_s, "ttft_s"), ("  TPOT", res.tpot_s, "tpot_s"),
                                 ("  end-to-end", res.e2e_s, "e2e_s"))]
    return render(_LATENCY, rows)


