"""`flopcast reliability`: failures, checkpoints and goodput of a training run (closed form and Monte-Carlo)."""

from __future__ import annotations

import click

from ..errors import FlopcastError
from ..limits import click_type
from .. import api
from ..report.text_table import Column, render
from ..units import DAY, HOUR, fmt, fmt_count, fmt_duration
from .options import calibration_option, economics_options, layout_from, layout_options, report_options
from .render import echo, echo_json, emit_report


def _reports():
    from ..report import figures  # the figures load matplotlib only when a report is asked for

    return figures


@click.command("reliability")
@click.argument("model", default=api.DEFAULT_MODEL)
@click.option("--hardware", "-H", default=api.DEFAULT_SYSTEM, show_default=True, help="System name or file.")
@click.option("--chips", "-n", type=click_type("chips"), default=None,
              help="Chips in the cluster (default: 64 instances of the default system, else one).")
@layout_options
@click.option("--tokens", default=None, help="Training tokens, e.g. 6T; default 20 per parameter.")
@click.option("--trials", type=click_type("trials"), default=1000, show_default=True, help="Monte-Carlo trials.")
@click.option("--seed", type=click_type("seed"), default=0, show_default=True)
@click.option("--mtbf-chip-hours", type=click_type("mtbf_chip_hours"), default=None,
              help="Chip-hours per interruption (default: Llama 3's 50,677).")
@click.option("--checkpoint-write-gbps", type=click_type("checkpoint_write_gbps"), default=None,
              help="Aggregate checkpoint write bandwidth, GB/s.")
@click.option("--checkpoint-load-gbps", type=click_type("checkpoint_load_gbps"), default=None,
              help="Aggregate checkpoint load bandwidth, GB/s.")
@click.option("--async-checkpoint/--no-async-checkpoint", default=None, help="Only the snapshot to host memory blocks.")
@click.option("--restart-minutes", type=click_type("restart_minutes"), default=None,
              help="Relaunch + collective init + warm-up (default 8).")
@click.option("--spares", type=click_type("spares"), default=None,
              help="Hot-spare chips (default: always one at hand).")
@click.option("--interval", default=None, help="Checkpoint interval (work time), e.g. 20min; default Young/Daly.")
@click.option("--cv", type=click_type("cv"), default=None,
              help="Extra per-chip step-time coefficient of variation for stragglers, e.g. 0.02 (default 0: the "
                   "calibration, fitted on measured runs at scale, already holds their cost).")
@click.option("--sweep-chips", default=None, help="Comma-separated cluster sizes, e.g. 1024,8192,16384,65536,100000.")
@calibration_option
@economics_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@report_options
def reliability(model, hardware, chips, tokens, trials, seed, mtbf_chip_hours, checkpoint_write_gbps,
                checkpoint_load_gbps, async_checkpoint, restart_minutes, spares, interval, cv, sweep_chips, calibration,
                price_per_hour, power_w, pue, as_json, html, png, seq_len, **kw):
    """Expected time-to-train with failures, checkpoints and restarts: Monte-Carlo beside the closed form."""
    out = api.reliability(model, hardware, chips, tokens=tokens, trials=trials, seed=seed, sweep_chips=sweep_chips,
                          seq_len=seq_len, mtbf_chip_hours=mtbf_chip_hours, checkpoint_write_gbps=checkpoint_write_gbps,
                          checkpoint_load_gbps=checkpoint_load_gbps, async_checkpoint=async_checkpoint,
                          restart_minutes=restart_minutes, spares=spares, interval=interval, cv=cv,
                          calibration=calibration, price_per_hour=price_per_hour, power_w=power_w, pue=pue,
                          **layout_from(kw))
    if sweep_chips:
        _sweep(out, as_json, html, png)
        return
    result, g, sim = out.train, out.goodput, out.monte_carlo
    if sim is None and (html or png):
        raise FlopcastError(f"no report: the Monte-Carlo did not run ({out.monte_carlo_unavailable})")
    emit_report(html, png, lambda: _reports().reliability_report(result, g, sim))
    if as_json:
        echo_json(out.to_dict())
        return
    if sim is None:
        _print_closed_form(result, g, out.monte_carlo_unavailable)
        return
    _print_one(result, g, sim)


def _print_closed_form(result, g, why: str):
    """The closed form alone, when the Monte-Carlo was not run (the run never finishes, or past its cap)."""
    e = echo
    e(f"{result.model.label} on {g.chips:,} {result.system.chip.id} chips ({result.system.id}), "
      f"{fmt_count(result.tokens)} tokens, layout {_layout(result)}")
    e(f"ideal time-to-train {fmt_duration(g.ideal_s)}; job MTBF {fmt_duration(g.job_mtbf_s)}; restart "
      f"{fmt_duration(g.restart_total_s)} (relaunch + checkpoint load)")
    _print_bill(result)
    if g.finishes:
        e(f"expected time-to-train (closed form) {fmt_duration(g.expected_s)}; goodput {g.goodput:.1%}; "
          f"{g.interruptions:,.0f} interruptions")
        e(f"Monte-Carlo not run: {why}")
    else:
        e(f"expected time-to-train: {g.never_finishes_reason()}")
        e("Monte-Carlo not run: a run that never finishes cannot be simulated")
    e("")
    _print_assumptions(g.assumptions, g)


def _print_one(result, g, sim):
    a = g.assumptions
    e = echo
    e(f"{result.model.label} on {g.chips:,} {result.system.chip.id} chips ({result.system.id}), "
      f"{fmt_count(result.tokens)} tokens, layout {_layout(result)}")
    e(f"ideal time-to-train {fmt_duration(g.ideal_s)}; job MTBF {fmt_duration(g.job_mtbf_s)}; "
      f"checkpoint {fmt(g.checkpoint_bytes, 'B')} (write {fmt_duration(g.checkpoint_write_s)}, "
      f"load {fmt_duration(g.checkpoint_load_s)}, blocks {fmt_duration(g.checkpoint_block_s)}); "
      f"interval {fmt_duration(g.interval_s)} of work ({'set' if a.interval_s else 'Daly 2006'})")
    _print_bill(result)
    e("")
    for line in render(_SIDE_BY_SIDE, _side_by_side(g, sim)):
        e(line)
    e(f"(simulated {sim.events:,} events in {sim.elapsed_s:.2f} s, seed {sim.seed})")
    e("")
    _print_assumptions(a, g)


def _print_bill(result):
    """Cost and energy of the expected run (the closed form's time: downtime and re-done work included)."""
    missing, rates = result.why_missing(), result.bill.rates
    if result.cost_usd is None:
        echo(f"cost n/a: {missing.get('cost', 'no price')}")
    else:
        echo(f"cost ${result.cost_usd:,.0f} with faults, at {rates.price_per_hour_usd:,.2f} USD/h per instance "
             f"({rates.price_kind})")
    if result.energy_kwh is None:
        echo(f"energy n/a: {missing.get('energy', 'no power')}")
    else:
        echo(f"energy {result.energy_kwh / 1e3:,.0f} MWh with faults (chips, host and network, PUE {rates.pue:.2f})")


_SIDE_BY_SIDE = [Column("", text=True), Column("closed form", decimal=False), Column("Monte-Carlo", decimal=False),
                 Column("", text=True)]


def _side_by_side(g, sim) -> list[list]:
    """Closed form beside Monte-Carlo: time-to-train, its spread, goodput, interruptions, time lost by cause."""
    ci = (f"+-{fmt_duration(sim.ci95_s)}, 95% CI of the mean, {sim.trials} trials" if sim.ci95_s is not None
          else f"no confidence interval from {sim.trials} trial; use --trials 2 or more")
    rows = [["expected time-to-train", fmt_duration(g.expected_s), fmt_duration(sim.mean_s), ci]]
    rows += [[f"p{q}", "", fmt_duration(sim.percentile(q)), ""] for q in (10, 50, 90)]
    rows += [["goodput", f"{g.goodput:.1%}", f"{sim.goodput:.1%}", ""],
             ["interruptions", f"{g.interruptions:,.0f}", f"{sim.interruptions.mean():,.0f}", ""],
             ["lost chip-hours", f"{g.lost_chip_hours:,.0f}", f"{sim.lost_chip_hours.mean():,.0f}", ""],
             ["time lost, by cause:", "", "", ""]]
    for k, v in g.breakdown.items():
        mc = float(sim.breakdown_s[k].mean())
        rows.append([f"  {k}", fmt_duration(v) if v >= 1 else "0", fmt_duration(mc) if mc >= 1 else "0", ""])
    return rows


def _layout(result):
    lay = result.layout
    return f"tp={lay.tp} pp={lay.pp} dp={lay.dp} cp={lay.cp}" + (f" ep={lay.ep}" if lay.ep > 1 else "")


def _print_assumptions(a, g=None):
    e = echo
    e("assumptions:")
    e(f"  interruptions: one per {a.mtbf_chip_hours:,.0f} chip-hours ({a.failure_law.value}; Llama 3 sec. 3.3.4 "
      f"default: 419 unexpected in 54 days on 16,384 H100s)")
    e(f"  checkpoint store: {a.storage or 'given'}; write {fmt(a.checkpoint_write_bps, 'B/s')}, "
      f"load {fmt(a.checkpoint_load_bps, 'B/s')}; {'asynchronous' if a.async_checkpoint else 'synchronous'} checkpoints"
      f"{' (snapshot at ' + fmt(a.snapshot_bps_per_chip, 'B/s') + ' per chip)' if a.async_checkpoint else ''}")
    e(f"  detection {fmt_duration(a.detection_s)} (assumption); restart {fmt_duration(a.restart_s)} + checkpoint "
      f"load (relaunch, collective init, warm-up; assumption)")
    spares = "always at hand" if a.spares is None else f"{a.spares}, repair {fmt_duration(a.repair_s)}"
    e(f"  hot spares: {spares}; stragglers: per-chip step-time cv {a.cv:g}"
      + (f" -> step x{g.straggler_factor:.3f} (Blom 1958)" if g is not None else ""))


_SWEEP_FAULTS = [Column("chips", ",d"), Column("ideal days", ",.1f"), Column("job MTBF h", ",.1f"),
                 Column("checkpoint every min", ",.1f"), Column("goodput %", ".1f"), Column("layout", text=True)]
_SWEEP_TIMES = [Column("chips", ",d"), Column("expected days", ",.1f"), Column("MC p50 days", ",.1f"),
                Column("MC p90 days", ",.1f"), Column("chip-hours", ",.0f"), Column("marginal %", ".0f")]


def _sweep_tables(out, rows) -> list[str]:
    """Two tables by cluster size: the faults (ideal time, MTBF, checkpoint interval, goodput, layout), then
    the times with faults (closed form, Monte-Carlo p50 and p90), chip-hours and the marginal speed-up."""
    faults, times, prev = [], [], None
    for n, r, g, sim in rows:
        marginal = None if prev is None else 100 * out.marginal(prev, (n, r, g, sim))
        faults.append([n, g.ideal_s / DAY, g.job_mtbf_s / HOUR, g.interval_s / 60, 100 * g.goodput, _layout(r)])
        times.append([n, g.expected_s / DAY, sim.percentile(50) / DAY, sim.percentile(90) / DAY,
                      g.expected_s * n / HOUR, marginal])
        prev = (n, r, g, sim)
    return render(_SWEEP_FAULTS, faults) + [""] + render(_SWEEP_TIMES, times)


def _sweep(out, as_json, html=None, png=None):
    m, hardware, tokens, rows, errors = out.model, out.hardware, out.tokens, out.sweep, out.errors
    knee, best = out.stops_paying_off_beyond, out.fastest_chips
    emit_report(html, png, lambda: _reports().reliability_sweep_report(
        [(n, r, g) for n, r, g, _ in rows], f"flopcast reliability: {m.label} on {hardware}, {tokens:.3g} tokens"))
    if as_json:
        echo_json(out.to_dict())
        return
    e = echo
    e(f"{m.label} on {hardware}, {fmt_count(tokens)} tokens: goodput and time-to-train by cluster size")
    for line in _sweep_tables(out, rows):
        e(line)
    for n, msg in errors.items():
        e(f"{n:,} chips skipped: {msg}")
    e("marginal: speed-up of the expected time per unit of extra chips, vs the previous size (100% = linear)")
    if knee is not None:
        e(f"adding chips stops paying off beyond {knee:,} chips: past it each extra chip buys less than half a chip's "
          f"worth")
    else:
        e("adding chips keeps paying off over this range (each step buys at least half its chips' worth)")
    e(f"fastest expected time-to-train: {best:,} chips")
    e("")
    _print_assumptions(rows[-1][2].assumptions)

