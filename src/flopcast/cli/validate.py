"""`flopcast validate` and `flopcast calibrate`."""

from __future__ import annotations

import csv
import math
import re

import click

from .. import api
from ..api.validation import files_of, prepare_out, schema
from ..errors import FlopcastError
from ..progress import Progress
from ..report.text_table import Column, render
from ..validate import training as vt
from .options import calibration_option, csv_option, output_path
from .render import echo, to_json, write_csv

LAYOUT_SHORT = ("tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch", "global_batch", "recompute", "sharding",
                "dtype")
SHORT = {"micro_batch": "mb", "global_batch": "gb", "recompute": "rc", "sharding": "zero"}


def _layout_text(r: vt.RowResult) -> str:
    if not r.layout:
        return "-"
    parts = []
    for k in LAYOUT_SHORT:
        v = r.layout.get(k)
        if k in ("cp", "ep", "vp") and v == 1 and k not in r.chosen:
            continue
        if k == "etp" and (v is None or v == r.layout.get("tp")) and k not in r.chosen:
            continue
        mark = "*" if k in r.chosen else ""
        parts.append(f"{SHORT.get(k, k)}={v}{mark}")
    return " ".join(parts)


def _clip(name: str, width: int) -> str:
    """name in at most width characters, never cut inside a parenthesis: "GPT 1.7B (Narayanan et...)"."""
    name = (name or "").strip()
    if len(name) <= width:
        return name
    m = re.match(r"^(.*?)\s*\((.*)\)\s*$", name)
    if m and 0 < len(m.group(1)) <= width:
        head, inner = m.groups()
        room = width - len(head) - len(" (...)")
        cut = inner[:max(room, 0)]
        if len(inner) > len(cut) and inner[len(cut)] not in " ,;/-":  # mid-word: back to the last word break
            brk = max(cut.rfind(c) for c in " ,;/-")
            cut = cut[:brk] if brk > 0 else cut
        if cut.count("(") > cut.count(")"):
            cut = cut[:cut.rfind("(")]
        cut = cut.rstrip(" ,;:-/")
        return f"{head} ({cut}...)" if len(cut) >= 3 else head
    cut = name[:width - 3]
    if cut.count("(") > cut.count(")"):
        cut = cut[:cut.rfind("(")]
    return cut.rstrip(" ,;:-(") + "..."


def _write_csv(out: str, fieldnames: list[str], rows: list[dict], what: str) -> None:
    try:
        with open(out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fieldnames, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    except OSError as exc:
        raise FlopcastError(f"cannot write {out}: {exc.strerror or exc}") from None
    n = len(rows)
    click.echo(f"wrote {out} ({n} {what}{'' if n == 1 else 's'})", err=True)


TRAINING_OUT = ["run_id", "source", "model", "hardware", "chips", "status", "reason", "layout",
                "predicted_tokens_per_s_per_chip", "measured_tokens_per_s_per_chip", "error_pct"]
SERVING_OUT = ["run_id", "source", "hardware", "engine", "model", "metric", "status", "reason", "predicted",
               "measured", "error_pct", "engine_family", "assumed"]
MEMORY_OUT = ["run_id", "source", "dtype", "sharding", "dp", "status", "reason", "predicted", "measured", "error_pct"]
MEMORY_COLUMNS = [Column("run", text=True), Column("source", text=True, wrap=32), Column("dtype", text=True),
                  Column("sharding", text=True), Column("dp", ",d"), Column("pred bytes/param", ",.2f"),
                  Column("meas bytes/param", ",.2f"), Column("error %", "+.1f")]
UNITS = {"decode_tokens_per_s_per_stream": "tokens/s", "output_tokens_per_s_total": "tokens/s",
         "tpot_ms": "ms", "ttft_ms": "ms", "prefill_tokens_per_s": "tokens/s"}


def _serving_out_rows(rows: list[dict]) -> list[dict]:
    return [{**r, "metric": r.get("metric") or "", "assumed": "; ".join(r.get("assumed") or [])} for r in rows]


def _sig(v: float | None) -> str:
    """Four significant figures, thousands separated, never an exponent."""
    if v is None:
        return ""
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    decimals = max(0, 3 - math.floor(math.log10(abs(v))))
    return f"{v:,.{decimals}f}"


SERVING_COLUMNS = [Column("run", text=True), Column("hardware", text=True), Column("model", text=True, wrap=24),
                   Column("metric", text=True), Column("predicted"), Column("measured"), Column("unit", text=True),
                   Column("error %", "+.1f")]
TRAINING_COLUMNS = [Column("run", text=True), Column("model", text=True), Column("chip", text=True),
                    Column("chips", ",d"), Column("pred tok/s/chip", ",.1f"), Column("meas tok/s/chip", ",.1f"),
                    Column("error %", "+.1f"), Column("layout (* = chosen by flopcast)", text=True, below=True)]


def serving_report(result: dict) -> str:
    """The text table of validate_inference's result: one line per figure (numbers and units in their own
    aligned columns), the skipped figures' reasons, then the summary."""
    body, skipped = [], {}  # (run, reason) -> the figures it skips
    for r in result["rows"]:
        metric = r["metric"] or "-"
        ok = r["status"] == "ok"
        err = r["error_pct"] if ok else "skipped"
        body.append([r["run_id"], r["hardware"], r["model"], metric, _sig(r["predicted"]), _sig(r["measured"]),
                     UNITS.get(r["metric"], ""), err])
        if not ok:
            skipped.setdefault((r["run_id"], r["reason"]), []).append(r["metric"])
    out = render(SERVING_COLUMNS, body)
    s = result["summary"]

    def pct(v):
        return "n/a" if v is None else f"{v:.1f}%"

    out.append("")
    out.append(f"figures compared: {s['n_ok']}   skipped: {s['n_skipped']}")
    out.append(f"MAPE {pct(s['mape_pct'])}   median |error| {pct(s['median_ape_pct'])}   bias {pct(s['bias_pct'])}")
    for title, key in (("by metric", "by_metric"), ("by source", "by_source"), ("by hardware", "by_hardware")):
        out.append(f"{title}: " + "; ".join(f"{k} {pct(v['mape_pct'])} (n={v['n']})" for k, v in s[key].items()))
    for (run, reason), metrics in skipped.items():
        named = [m for m in metrics if m]
        out.append(f"skipped run {run}" + (f" ({', '.join(named)})" if named else "") + f": {reason}")
    return "\n".join(out)


def training_report(rows, summary) -> str:
    body = []
    for r in rows:
        body.append([r.run_id, _clip(r.model, 22), r.hardware, r.chips or None, r.predicted, r.measured, r.error_pct,
                     _layout_text(r) if r.status == "ok" else f"skipped: {r.reason}"])
    out = render(TRAINING_COLUMNS, body)
    s = summary
    fmtp = lambda x: "n/a" if x is None else f"{x:.1f}%"
    out.append("")
    out.append(f"rows predicted: {s['n_ok']}   skipped: {s['n_skipped']}")
    out.append(f"MAPE {fmtp(s['mape_pct'])}   median |error| {fmtp(s['median_ape_pct'])}   "
               f"bias (mean signed error) {fmtp(s['bias_pct'])}")
    out.append("five worst: " + ", ".join(f"run {w['run_id']} ({_clip(w['model'], 24)}, {w['hardware']}) "
                                          f"{w['error_pct']:+.0f}%" for w in s["worst"]))
    for title, key in (("by source", "by_source"), ("by chip", "by_hardware"), ("by family", "by_family"),
                       ("dense / MoE", "by_kind")):
        if key not in s:
            continue
        out.append(f"{title}: " + "; ".join(f"{k} {fmtp(v['mape_pct'])} bias {fmtp(v['bias_pct'])} (n={v['n']})"
                                            for k, v in s[key].items()))
    for r in rows:
        if r.assumed:
            out.append(f"run {r.run_id} assumed: {'; '.join(r.assumed)}")
    skipped = [r for r in rows if r.status == "skipped"]
    for r in skipped:
        out.append(f"skipped run {r.run_id}: {r.reason}")
    return "\n".join(out)


def memory_report(result) -> str:
    """The text table of a memory file: model-state bytes per parameter, predicted beside measured."""
    body = [[r["run_id"], r["source"], r["dtype"], r["sharding"], r["dp"] if r["status"] == "ok" else None,
             r["predicted"], r["measured"], r["error_pct"]] for r in result.records]
    out = render(MEMORY_COLUMNS, body)
    s = result.summary
    fmtp = lambda x: "n/a" if x is None else f"{x:.1f}%"
    out += ["", f"rows predicted: {s['n_ok']}   skipped: {s['n_skipped']}",
            f"MAPE {fmtp(s['mape_pct'])}   bias (mean signed error) {fmtp(s['bias_pct'])}   "
            f"largest |error| {fmtp(s['max_abs_error_pct'])}"]
    out += [f"skipped run {r['run_id']}: {r['reason']}" for r in result.records if r["status"] != "ok"]
    return "\n".join(out)


def interval_lines(info: dict) -> list[str]:
    """The coverage line and one line per kind's width."""
    if not info:
        return []
    c = info["coverage"]
    lvl = f"{round(100 * c['level'])}%"
    if "excluded" in c:  # the shipped intervals on this file
        if not c["n"]:
            return [f"{lvl} intervals: no row to score honestly "
                    f"({c['excluded']} fitted the calibration or the intervals)"]
        return [f"{lvl} intervals covered {c['covered']} of {c['n']} measurements ({100 * c['coverage']:.0f}%; "
                f"shipped intervals, {c['excluded']} rows they or the calibration were fitted on left out)"]
    out = [f"{lvl} intervals covered {c['covered']} of {c['n']} measurements ({100 * (c['coverage'] or 0):.0f}%; "
           "each row's interval fitted on the other sources' cross-validated errors)"]
    rows = []
    for k, e in info["kinds"].items():
        rows.append([k, e["speed_factor_low"], e["speed_factor_high"], e["residuals"], e["pooled"] or ""])
    columns = [Column("kind", text=True), Column("throughput x low", ".2f"), Column("x high", ".2f"),
               Column("residuals", ",d"), Column("pooled", text=True)]
    return out + (render(columns, rows, indent="  ") if rows else [])


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
@click.option("--out", type=click.Path(dir_okay=False), callback=output_path,
              help="Also write the predictions to this CSV (one line per run, or per figure for a serving CSV); "
                   "missing folders are created.")
@click.option("--cross-validate", is_flag=True,
              help="Refit with each source left out and predict it: the honest error on unseen runs (minutes).")
@click.option("--write-intervals", type=click.Path(dir_okay=False), callback=output_path,
              help="With --cross-validate: write the prediction intervals per kind of forecast fitted on these "
                   "residuals to this file (flopcast ships src/flopcast/catalog/data/uncertainty.yaml).")
@calibration_option
@csv_option
def validate(file, as_json, out, cross_validate, write_intervals, calibration, csv_path):
    """Compare predictions with the measured runs in FILE (the validation/ CSV schemas).

    FILE is a CSV path or a shipped file's short name: calibration_runs, more_training_runs, training (both),
    published_training_runs (a holdout), inference_runs, more_inference_runs, published_inference_runs,
    inference (both); or a memory file (validation/memory_runs.csv: model-state bytes per parameter).

    Blank layout cells are chosen by flopcast's search over just those fields (marked * in the table).
    """
    if out:
        schema(file)  # a file that is neither schema fails before --out is touched
        for f in files_of(file):
            prepare_out(out, str(f))
    with Progress("refitting without each source", unit="sources", enabled=cross_validate and not as_json) as bar:
        res = api.validate(file, cross_validate=cross_validate, calibration=calibration, progress=bar,
                           write_intervals=write_intervals)
    if write_intervals and res.summary.get("intervals"):
        click.echo(f"wrote {res.schema} intervals to {write_intervals}", err=True)
    write_csv(csv_path, res)
    if out and res.schema == "memory":
        _write_csv(out, MEMORY_OUT, list(res.records), "row")
    elif out and res.schema == "serving":
        _write_csv(out, SERVING_OUT, _serving_out_rows(res.to_dict()["rows"]), "figure")
    elif out:
        _write_csv(out, TRAINING_OUT, [{**r.to_dict(), "layout": _layout_text(r)} for r in res.records], "row")
    if as_json:
        click.echo(to_json(res.to_dict()))
    elif res.schema == "memory":
        echo(memory_report(res))
    elif res.schema == "serving":
        echo("\n".join([serving_report(res.to_dict()), *interval_lines(res.summary.get("intervals"))]))
    else:
        intervals = interval_lines(res.summary.get("intervals"))
        echo("\n".join([training_report(res.records, res.summary), *intervals]))


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--out", "--output", "output", type=click.Path(dir_okay=False), callback=output_path,
              help="Where to write the parameters [default: ./calibration.yaml, or ./inference_calibration.yaml for "
                   "a serving CSV, in the working directory]. Predictions read it with --calibration; flopcast's "
                   "shipped parameters change only when this names src/flopcast/catalog/data/calibration.yaml.")
def calibrate(file, output):
    """Fit the efficiency parameters on the measured runs in FILE and write them with their provenance."""
    with Progress("fitting (2 rounds)", unit="rounds") as bar:
        res = api.calibrate(file, output=output, progress=bar)
    if res.schema == "serving":
        click.echo(to_json(res.info))
        click.echo(f"wrote {res.target} (use it with --calibration {res.target})", err=True)
        return
    info = res.info
    click.echo(f"fitted {res.families} chip families and {res.global_parameters} global parameters on "
               f"{info['n_rows']} runs; fit MAPE {info['fit_mape_pct']:.1f}%; wrote {res.target} "
               f"(use it with --calibration {res.target})")
