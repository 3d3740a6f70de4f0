"""Plain-text rendering of results: every figure with its unit."""

from __future__ import annotations

from ..units import DAY, GiB, fmt_count, fmt_duration
from .text_table import FIGURES, Column, fold, render

DEFINITIONS = (
    "MFU = model FLOPs (6N + 12LHQT per token, PaLM App. B) per second / (chips x dense peak of the compute dtype); "
    "HFU adds the FLOPs recomputation spends (Korthikanti et al. 2022)."
)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _range(r, key: str, fmt: str, scale: float = 1.0, unit: str = "") -> str:
    """'(80%: 58-79 s)' for a figure with a prediction interval, '' without."""
    b = r.bounds().get(key)
    if not b:
        return ""
    return f"({r.interval.label}: {format(b[0] * scale, fmt)}-{format(b[1] * scale, fmt)}{unit})"


_FIGURES = list(FIGURES)
_SHARES = [Column("", text=True), Column(""), Column("", text=True), Column("")]


def _figures(rows: list[list], columns=_FIGURES) -> list[str]:
    """Labelled figures as one table: label, value (on its decimal point), unit, remark (wrapped). A row
    `[label, value, unit, remark, [note, ...]]` has notes: lines of prose under it, across the width."""
    lines = render(columns, [row[:4] for row in rows], indent="  ", header=False)
    groups = []  # the lines of each row: a row's first line has its label, its remark's wrapped lines do not
    for line in lines:
        if line[2:3].strip() or not groups:
            groups.append([line])
        else:
            groups[-1].append(line)
    out = []
    for group, row in zip(groups, rows):
        out += group + [f for note in (row[4] if len(row) > 4 else []) for f in fold(f"    {note}")]
    return out


def train_report(r) -> str:
    """The text of `flopcast train`: layout, throughput, time and memory per step, the cost to train."""
    parts = _train_header(r) + _train_throughput(r) + _train_memory(r)
    if r.tokens:
        parts += _train_totals(r)
    return "\n".join(parts + [f for line in _train_footer(r) for f in fold(line)])


def _train_header(r) -> list:
    m, s, lay = r.model, r.system, r.layout
    out = []
    out += fold(f"flopcast train: {m.name} on {r.chips:,} x {s.chip.name} ({s.id}, {s.chips_per_node} chips per "
                "node)")
    out += _headline(r)
    src = {"searched": "searched", "given": "as given"}.get(r.layout_source, r.layout_source)
    out += fold(f"layout ({src}): {lay.describe()}")
    if r.chosen_fields:
        out.append(f"  chosen by flopcast: {', '.join(r.chosen_fields)}")
    if r.idle_chips:
        out.append(f"  {r.idle_chips:,} of {r.chips:,} chips left idle (the layout uses {r.chips_used:,})")
    mbs = lay.microbatches
    out.append(f"  {mbs} micro-batch{'' if mbs == 1 else 'es'} of {lay.micro_batch} x {m.seq_len} tokens per pipeline "
               f"per step")
    return out


def _train_throughput(r) -> list:
    out = ["", "throughput"]
    out += _figures([
        ["step time", f"{r.step_time_s:,.3f}", "s", _range(r, "step_time_s", ".3g", unit=" s")],
        ["tokens/s (total)", f"{r.tokens_per_s:,.0f}", "tokens/s", _range(r, "tokens_per_s", ",.0f")],
        ["tokens/s per chip", f"{r.tokens_per_s_per_chip:,.1f}", "tokens/s",
         _range(r, "tokens_per_s_per_chip", ",.1f")],
        ["model TFLOP/s per chip", f"{r.model_tflops_per_chip:,.1f}", "TFLOP/s",
         _range(r, "model_tflops_per_chip", ".1f")],
        ["MFU", f"{100 * r.mfu:.1f}", "%", _range(r, "mfu", ".1f", 100, "%")],
        ["HFU", f"{100 * r.hfu:.1f}", "%", ""],
    ])
    out += fold(f"  ({DEFINITIONS})")
    out += ["", "time per step"]
    rows = [[k, f"{v:,.3f}", "s", f"{100 * v / r.step_time_s:.1f}%"] for k, v in r.time_breakdown_s.items()
            if v > 0 or k == "compute"]
    out += _figures(rows + [["total", f"{r.step_time_s:,.3f}", "s", ""]], _SHARES)
    out.append("")
    return out


def _train_memory(r) -> list:
    cap = r.memory_capacity_bytes
    out = [f"memory per chip (busiest pipeline stage){'' if r.fits else '  ** DOES NOT FIT **'}"]
    rows = [[k, f"{v / GiB:,.2f}", "GiB", ""] for k, v in r.memory_breakdown_bytes.items()]
    rows.append(["total", f"{r.memory_bytes / GiB:,.2f}", "GiB", f"of {cap / GiB:,.2f} GiB "
                 f"({100 * r.memory_bytes / cap:.0f}%){'' if r.fits else ' -- exceeds capacity'}"])
    return out + _figures(rows) + [""]


def _duration(seconds: float) -> list[str]:
    """[value, unit] of a duration as a person writes it ('28.5', 'days')."""
    return fmt_duration(seconds).split(" ", 1)


def _train_totals(r) -> list:
    s, g, n = r.system, r.expected, r.instances
    rows = []
    days = "" if fmt_duration(r.time_to_train_s).endswith("days") else f"({r.time_to_train_s / DAY:,.2f} days)  "
    b = r.bounds().get("time_to_train_s")
    within = f"({r.interval.label}: {fmt_duration(b[0])} to {fmt_duration(b[1])})" if b else ""
    rows.append(["time-to-train", *_duration(r.time_to_train_s), (days + within).strip()])
    if g is not None and not g.finishes:
        rows.append(["expected with faults", "never", "", "", [g.never_finishes_reason()]])
    elif g is not None:
        b = r.bounds().get("expected_time_to_train_s")
        within = f"({r.interval.label}: {fmt_duration(b[0])} to {fmt_duration(b[1])})" if b else ""
        a = g.assumptions
        rows.append(["expected with faults", *_duration(g.expected_s), within, [
            f"goodput {100 * g.goodput:.1f}%, {g.interruptions:,.0f} interruptions, checkpoint every "
            f"{fmt_duration(g.interval_s)}",
            f"assumptions: one interruption per {a.mtbf_chip_hours:,.0f} chip-hours (Llama 3 paper sec. 3.3.4), "
            f"checkpoint of {g.checkpoint_bytes / 1e12:.1f} TB to {a.storage or 'the default store'}, restart "
            f"{a.restart_s / 60:.0f} min + detection {a.detection_s / 60:.0f} min; `flopcast reliability` for the "
            "rest and a Monte-Carlo"]])
    rows.append(["chip-hours", f"{r.chip_hours:,.0f}", "chip-h", _range(r, "chip_hours", ",.0f")])
    rows.append(["instance-hours", f"{r.instance_hours:,.0f}", "instance-h",
                 f"({n:,} instance{'' if n == 1 else 's'} of {s.chips_per_node} chips"
                 f"{', partly idle' if n * s.chips_per_node > r.chips else ''})"])
    rows += _bill_rows(r, r.why_missing())
    return [f"to train on {fmt_count(r.tokens)} tokens"] + _figures(rows) + [""]


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


_PRICE_KIND = {"on-demand": "on-demand", "capacity-block": "EC2 Capacity Block rate", "user": "given"}
_POWER_BASIS = {"published": "published", "estimate": "an estimate", "user": "given"}


def _headline(r) -> list[str]:
    """The answer first: time to train with faults, cost and energy (details below)."""
    if not r.tokens:
        return []
    g, b = r.expected, r.bill
    cost = f"${b.cost_usd:,.0f}" if b.cost_usd is not None else "cost n/a"
    energy = f"{b.energy_kwh / 1e3:,.0f} MWh" if b.energy_kwh is not None else "energy n/a"
    faults = f"{g.expected_s / DAY:,.1f} days with faults" if g.finishes else "never finishes with faults"
    return [f"answer: {fmt_count(r.tokens)} tokens in {r.time_to_train_s / DAY:,.1f} days ({faults}), {cost}, "
            f"{energy}", ""]


def _bill_rows(r, missing: dict) -> list[list]:
    """Cost and energy over the expected time with faults, with their parts (cost/economics.py)."""
    b = r.bill
    rows = []
    if b.cost_usd is not None:
        c, k = b.cost_breakdown_usd, b.rates
        rows.append(["cost", f"{b.cost_usd:,.0f}", "USD", f"at {k.price_per_hour_usd:,.2f} USD/h per instance "
                     f"({_PRICE_KIND[k.price_kind]}) {_range(r, 'cost_usd', ',.0f', unit=' USD')}".strip(),
                     [f"compute {c['compute']:,.0f} + downtime and re-done work {c['downtime_and_rework']:,.0f} USD"]])
    else:
        rows.append(["cost", "", "", f"cannot compute: {missing.get('cost')}"])
    if b.energy_kwh is not None:
        e, k = b.energy_breakdown_kwh, b.rates
        rows.append(["energy", f"{b.energy_kwh:,.0f}", "kWh", f"(chips at {k.chip_power_w:,.0f} W, "
                     f"{_POWER_BASIS[k.power_basis]}; PUE {k.pue:.2f}) {_range(r, 'energy_kwh', ',.0f', unit=' kWh')}"
                     .strip(), [f"chips {e['chips']:,.0f} + host and network {e['host_and_network']:,.0f} + cooling "
                                f"and facility {e['cooling_and_facility']:,.0f} kWh"]])
    else:
        rows.append(["energy", "", "", f"cannot compute: {missing.get('energy')}"])
    return rows


_MODEL_COLUMNS = [Column("id", text=True), Column("params"), Column("active"), Column("layers", ",d"),
                  Column("hidden", ",d"), Column("heads/kv", decimal=False), Column("seq", ",d"),
                  Column("name", text=True)]
_CHIP_COLUMNS = [Column("id", text=True), Column("bf16 TFLOP/s", ",.0f"), Column("memory GiB", ",.0f", decimal=False),
                 Column("memory GB/s", ",.0f"), Column("power W", ",.0f"), Column("name", text=True)]
_SYSTEM_COLUMNS = [Column("id", text=True), Column("chip", text=True), Column("chips/node", ",d"),
                   Column("scale-out Gbit/s/chip", ",.0f"), Column("max chips", ",d"), Column("price USD/h", ",.2f")]


def catalog_list(models, chips, systems) -> str:
    """`flopcast catalog`: one table per kind, numbers in the units of the headers, names last (wrapped)."""
    out = ["models:"] + render(_MODEL_COLUMNS, models)
    out += ["", "chips:"] + render(_CHIP_COLUMNS, chips)
    out += ["", "systems:"] + render(_SYSTEM_COLUMNS, systems)
    return "\n".join(out)

