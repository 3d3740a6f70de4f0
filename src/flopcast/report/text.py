"""Plain-text rendering of results: every figure with its unit."""

from __future__ import annotations

from ..units import DAY, GiB, fmt_duration

DEFINITIONS = (
    "MFU = model FLOPs (6N + 12LHQT per token, PaLM App. B) per second / (chips x dense peak of the compute dtype); "
    "HFU adds the FLOPs recomputation spends (Korthikanti et al. 2022)."
)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def table(rows: list[list[str]], header: list[str], align_right: set[int] = frozenset()) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    def line(r):
        return "  ".join(str(c).rjust(w) if i in align_right else str(c).ljust(w) for i, (c, w) in enumerate(zip(r,
            widths)))
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _range(r, key: str, fmt: str, scale: float = 1.0, unit: str = "") -> str:
    """'  (80%: 58-79 s)' for a figure with a prediction interval, '' without."""
    b = r.bounds().get(key)
    if not b:
        return ""
    return f"  ({r.interval.label}: {format(b[0] * scale, fmt)}-{format(b[1] * scale, fmt)}{unit})"


def train_report(r) -> str:
    """The text of `flopcast train`: layout, throughput, time and memory per step, the cost to train."""
    parts = _train_header(r) + _train_throughput(r) + _train_memory(r)
    if r.tokens:
        parts += _train_totals(r)
    return "\n".join(parts + _train_footer(r))


def _train_header(r) -> list:
    m, s, lay = r.model, r.system, r.layout
    out = []
    out = []
    out.append(f"flopcast train: {m.name} on {r.chips:,} x {s.chip.name} ({s.id}, {s.chips_per_node} chips per node)")
    src = {"searched": "searched", "given": "as given"}.get(r.layout_source, r.layout_source)
    out.append(f"layout ({src}): {lay.describe()}")
    if r.chosen_fields:
        out.append(f"  chosen by flopcast: {', '.join(r.chosen_fields)}")
    if r.idle_chips:
        out.append(f"  {r.idle_chips:,} of {r.chips:,} chips left idle (the layout uses {r.chips_used:,})")
    mbs = lay.microbatches
    out.append(f"  {mbs} micro-batch{'' if mbs == 1 else 'es'} of {lay.micro_batch} x {m.seq_len} tokens per pipeline "
               f"per step")
    return out


def _train_throughput(r) -> list:
    out = []
    out.append("")
    out.append("throughput")
    out.append(f"  step time               {r.step_time_s:10.3f} s{_range(r, 'step_time_s', '.3g', unit=' s')}")
    out.append(f"  tokens/s (total)        {r.tokens_per_s:12,.0f} tokens/s{_range(r, 'tokens_per_s', ',.0f')}")
    out.append(f"  tokens/s per chip       {r.tokens_per_s_per_chip:12,.1f} tokens/s"
               f"{_range(r, 'tokens_per_s_per_chip', ',.1f')}")
    out.append(f"  model TFLOP/s per chip  {r.model_tflops_per_chip:10.1f} TFLOP/s"
               f"{_range(r, 'model_tflops_per_chip', '.1f')}")
    out.append(f"  MFU                     {_pct(r.mfu):>10}{_range(r, 'mfu', '.1f', 100, '%')}")
    out.append(f"  HFU                     {_pct(r.hfu):>10}")
    out.append(f"  ({DEFINITIONS})")
    out.append("")
    out.append("time per step")
    for k, v in r.time_breakdown_s.items():
        if v > 0 or k in ("compute",):
            out.append(f"  {k:<22}{v:10.3f} s  {100 * v / r.step_time_s:5.1f}%")
    out.append(f"  {'total':<22}{r.step_time_s:10.3f} s")
    out.append("")
    return out


def _train_memory(r) -> list:
    out = []
    cap = r.memory_capacity_bytes
    out.append(f"memory per chip (busiest pipeline stage){'' if r.fits else '  ** DOES NOT FIT **'}")
    for k, v in r.memory_breakdown_bytes.items():
        out.append(f"  {k:<22}{v / GiB:10.2f} GiB")
    out.append(f"  {'total':<22}{r.memory_bytes / GiB:10.2f} GiB of {cap / GiB:.2f} GiB"
               f" ({100 * r.memory_bytes / cap:.0f}%){'' if r.fits else ' -- exceeds capacity'}")
    out.append("")
    return out


def _train_totals(r) -> list:
    s = r.system
    out = []
    out.append(f"to train on {r.tokens:.3g} tokens")
    shown = fmt_duration(r.time_to_train_s)
    days = "" if shown.endswith("days") else f"  ({r.time_to_train_s / DAY:,.2f} days)"
    b = r.bounds().get("time_to_train_s")
    within = f"  ({r.interval.label}: {fmt_duration(b[0])} to {fmt_duration(b[1])})" if b else ""
    out.append(f"  time-to-train           {fmt_duration(r.time_to_train_s):>14}{days}{within}")
    g = r.expected
    if g is not None:
        b = r.bounds().get("expected_time_to_train_s")
        within = f"  ({r.interval.label}: {fmt_duration(b[0])} to {fmt_duration(b[1])})" if b else ""
        out.append(f"  expected with faults    {fmt_duration(g.expected_s):>14}{within}")
        out.append(f"    goodput {100 * g.goodput:.1f}%, {g.interruptions:,.0f} interruptions, "
                   f"checkpoint every {fmt_duration(g.interval_s)}")
        a = g.assumptions
        out.append(f"    assumptions: one interruption per {a.mtbf_chip_hours:,.0f} chip-hours (Llama 3 paper "
                   f"sec. 3.3.4), "
                   f"checkpoint of {g.checkpoint_bytes / 1e12:.1f} TB to {a.storage or 'the default store'}, "
                   f"restart {a.restart_s / 60:.0f} min + detection {a.detection_s / 60:.0f} min; "
                   "`flopcast reliability` for the rest and a Monte-Carlo")
    out.append(f"  chip-hours              {r.chip_hours:14,.0f} chip-h{_range(r, 'chip_hours', ',.0f')}")
    n = r.instances
    out.append(f"  instance-hours          {r.instance_hours:14,.0f} instance-h ({n:,} "
               f"instance{'' if n == 1 else 's'} "
               f"of {s.chips_per_node} chips{', partly idle' if n * s.chips_per_node > r.chips else ''})")
    missing = r.why_missing()
    if r.energy_kwh is not None:
        out.append(f"  energy (chip TDP only)  {r.energy_kwh:14,.0f} kWh{_range(r, 'energy_kwh', ',.0f')}")
    else:
        out.append(f"  energy                  cannot compute: {missing.get('energy')}")
    if r.cost_usd is not None:
        out.append(f"  cost                    {r.cost_usd:14,.0f} USD at {s.price_per_hour:.2f} USD/h per instance"
                   f"{_range(r, 'cost_usd', ',.0f', unit=' USD')}")
    else:
        out.append(f"  cost                    cannot compute: {missing.get('cost')}")
    out.append("")
    return out


def _train_footer(r) -> list:
    out = []
    out.append(f"calibration: {r.calibration_basis}")
    if r.interval is not None:
        i = r.interval
        out.append(f"interval: {i.label} prediction interval of a {i.kind} forecast, from {i.residuals} "
                   f"leave-one-source-out errors (throughput x{i.low:.2f} to x{i.high:.2f}; uncertainty.yaml)")
    for n in r.notes:
        out.append(f"note: {n}")
    return out


def catalog_list(models, chips, systems) -> str:
    out = ["models:"]
    out.append(table(models, ["id", "name", "params", "layers", "hidden", "heads/kv", "seq"], {2, 3, 4, 6}))
    out.append("\nchips:")
    out.append(table(chips, ["id", "name", "bf16 peak", "memory", "bandwidth", "power"], {2, 3, 4, 5}))
    out.append("\nsystems:")
    out.append(table(systems, ["id", "chip", "chips/node", "scale-out/chip", "max chips", "price"], {2, 3, 4, 5}))
    return "\n".join(out)

