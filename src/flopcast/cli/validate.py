"""`flopcast validate` and `flopcast calibrate`."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import click

from .. import catalog
from ..errors import FlopcastError
from ..report.text import table
from ..validate import training as vt
from .render import to_json

LAYOUT_SHORT = ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch", "recompute", "sharding", "dtype")
SHORT = {"micro_batch": "mb", "global_batch": "gb", "recompute": "rc", "sharding": "zero"}


def _layout_text(r: vt.RowResult) -> str:
    if not r.layout:
        return "-"
    parts = []
    for k in LAYOUT_SHORT:
        v = r.layout.get(k)
        if k in ("cp", "ep", "vp") and v == 1 and k not in r.chosen:
            continue
        mark = "*" if k in r.chosen else ""
        parts.append(f"{SHORT.get(k, k)}={v}{mark}")
    return " ".join(parts)


# the columns only one schema has (validation/README.md): they decide which schema a header means
TRAINING_ONLY = frozenset({"source_locator", "params_b", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
                           "seq_len", "mlp", "moe_experts", "moe_topk", "moe_expert_ffn", "pp", "dp", "cp", "ep", "vp",
                           "micro_batch", "global_batch", "dtype", "recompute", "sharding", vt.MEASURED, "measured_as"})
SERVING_ONLY = frozenset({"instance", "vcpus", "threads", "engine", "weights", "batch", "input_tokens",
                          "output_tokens", "measured_decode_tokens_per_s_per_stream",
                          "measured_output_tokens_per_s_total", "measured_tpot_ms", "measured_ttft_ms",
                          "measured_prefill_tokens_per_s"})


def _schema(path: str) -> str:
    """'training' or 'serving', from the header's columns; a one-line error for an empty file or one that
    has neither schema's columns (naming what the closer schema, by its own columns present, lacks)."""
    from ..validate import inference as vi

    header, _ = vt.read_table(path)
    if not header:
        raise FlopcastError(f"{path} is empty")
    if not [c for c in vt.REQUIRED if c not in header]:
        return "training"
    if not vi.missing_columns(header):
        return "serving"
    cols = set(header)
    closer = vi if len(cols & SERVING_ONLY) > len(cols & TRAINING_ONLY) else vt  # a tie keeps training
    closer.check_columns(header, path)  # raises: that schema lacks a column
    raise AssertionError(f"{path}: neither schema matched")


def _is_serving(path: str) -> bool:
    return _schema(path) == "serving"


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


def _prepare_out(out: str, file: str) -> Path:
    """--out made writable before the (possibly long) run: its missing folders created, as --html does."""
    p = Path(out)
    if p.exists() and p.resolve() == Path(file).resolve():
        raise FlopcastError(f"--out {out} is the input file; choose another path")
    for parent in reversed(p.parents):
        if parent.exists() and not parent.is_dir():
            raise FlopcastError(f"cannot write {out}: {parent} is a file, not a folder")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FlopcastError(f"cannot write {out}: {exc.strerror or exc}") from None
    return p


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


def serving_report(result: dict) -> str:
    """The text table of validate_inference's result: one line per figure (numbers and units in their own
    aligned columns), the skipped figures' reasons, then the summary."""
    body, skipped = [], {}  # (run, reason) -> the figures it skips
    for r in result["rows"]:
        metric = r["metric"] or "-"
        ok = r["status"] == "ok"
        err = f"{r['error_pct']:+.1f}%" if ok else "skipped"
        body.append([r["run_id"], r["hardware"], r["model"], metric, _sig(r["predicted"]), _sig(r["measured"]),
                     UNITS.get(r["metric"], ""), err])
        if not ok:
            skipped.setdefault((r["run_id"], r["reason"]), []).append(r["metric"])
    out = [table(body, ["run", "hardware", "model", "metric", "predicted", "measured", "unit", "error"], {4, 5, 7})]
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


def _progress(total: int, label: str):
    bar = click.progressbar(length=total, label=label, file=click.get_text_stream("stderr"))
    return bar


def training_report(rows, summary) -> str:
    body = []
    for r in rows:
        err = "" if r.error_pct is None else f"{r.error_pct:+.1f}%"
        pred = "" if r.predicted is None else f"{r.predicted:,.1f}"
        meas = "" if r.measured is None else f"{r.measured:,.1f}"
        body.append([r.run_id, _clip(r.model, 28), r.hardware, str(r.chips) if r.chips else "", _layout_text(r)
                     if r.status == "ok" else f"skipped: {r.reason}", pred, meas, err])
    out = [table(body, ["run", "model", "chip", "chips", "layout (* = chosen by flopcast)", "predicted tok/s/chip",
                        "measured tok/s/chip", "error"], {3, 5, 6, 7})]
    s = summary
    fmtp = lambda x: "n/a" if x is None else f"{x:.1f}%"
    out.append("")
    out.append(f"rows predicted: {s['n_ok']}   skipped: {s['n_skipped']}")
    out.append(f"MAPE {fmtp(s['mape_pct'])}   median |error| {fmtp(s['median_ape_pct'])}   "
               f"bias (mean signed error) {fmtp(s['bias_pct'])}")
    out.append("five worst: " + ", ".join(f"run {w['run_id']} ({_clip(w['model'], 24)}, {w['hardware']}) "
                                          f"{w['error_pct']:+.0f}%" for w in s["worst"]))
    for title, key in (("by source", "by_source"), ("by chip", "by_hardware")):
        out.append(f"{title}: " + "; ".join(f"{k} {fmtp(v['mape_pct'])} (n={v['n']})" for k, v in s[key].items()))
    skipped = [r for r in rows if r.status == "skipped"]
    for r in skipped:
        out.append(f"skipped run {r.run_id}: {r.reason}")
    return "\n".join(out)


def _intervals(file, rows, task: str, write_to) -> dict:
    from ..validate import uncertainty as vu

    info = vu.from_cross_validation(file, rows, task, write_to)
    if write_to and info:
        click.echo(f"wrote {task} intervals to {write_to}", err=True)
    return info


def interval_lines(info: dict) -> list[str]:
    """The coverage line and one line per kind's width."""
    if not info:
        return []
    c = info["coverage"]
    lvl = f"{round(100 * c['level'])}%"
    if "excluded" in c:  # the shipped intervals on this file
        if not c["n"]:
            return [f"{lvl} intervals: no row to score honestly ({c['excluded']} fitted the calibration or the intervals)"]
        return [f"{lvl} intervals covered {c['covered']} of {c['n']} measurements ({100 * c['coverage']:.0f}%; "
                f"shipped intervals, {c['excluded']} rows they or the calibration were fitted on left out)"]
    out = [f"{lvl} intervals covered {c['covered']} of {c['n']} measurements ({100 * (c['coverage'] or 0):.0f}%; "
           "each row's interval fitted on the other sources' cross-validated errors)"]
    for k, e in info["kinds"].items():
        out.append(f"  {k:<22} throughput x{e['speed_factor_low']:.2f} to x{e['speed_factor_high']:.2f} "
                   f"({e['residuals']} residuals{'; ' + e['pooled'] if e['pooled'] else ''})")
    return out


def _shipped(file, rows, task: str, provenance: dict) -> dict:
    from ..validate import uncertainty as vu

    return {"coverage": vu.shipped_coverage(file, rows, task, provenance)}


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the predictions to this CSV (one line per run, or per figure for a serving CSV); "
                   "missing folders are created.")
@click.option("--cross-validate", is_flag=True,
              help="Refit with each source left out and predict it: the honest error on unseen runs (minutes).")
@click.option("--write-intervals", type=click.Path(dir_okay=False),
              help="With --cross-validate: write the prediction intervals per kind of forecast fitted on these "
                   "residuals to this file (flopcast ships src/flopcast/catalog/data/uncertainty.yaml).")
def validate(file, as_json, out, cross_validate, write_intervals):
    """Compare predictions with the measured runs in FILE (the validation/ CSV schemas).

    Blank layout cells are chosen by flopcast's search over just those fields (marked * in the table).
    """
    schema = _schema(file)
    if out:
        _prepare_out(out, file)
    if write_intervals:
        if not cross_validate:
            raise FlopcastError("--write-intervals needs --cross-validate (intervals come from out-of-sample errors)")
        _prepare_out(write_intervals, file)
    if schema == "serving":
        from ..validate.inference import cross_validate_inference, validate_inference

        result = cross_validate_inference(file) if cross_validate else validate_inference(file)
        if cross_validate:
            result["summary"]["intervals"] = _intervals(file, result["rows"], "serving", write_intervals)
        else:
            from ..cost.inference.engines import _inference_calibration_file

            prov = _inference_calibration_file().get("provenance") or {}
            result["summary"]["intervals"] = _shipped(file, result["rows"], "serving", prov)
        if out:
            _write_csv(out, SERVING_OUT, _serving_out_rows(result["rows"]), "figure")
        text = "\n".join([serving_report(result), *interval_lines(result["summary"].get("intervals"))])
        click.echo(to_json(result) if as_json else text)
        return
    if cross_validate:
        from ..validate import calibrate as cb

        n_src = len({c.source for c in vt.load_cases(file)[0]})
        with _progress(n_src, "refitting without each source") as bar:
            res = cb.cross_validate(file, progress=bar.update)
        rows, summary = res["rows"], res["summary"]
        summary = {**summary, "method": "leave-one-source-out: each source predicted by parameters fitted without it",
                   "fold_parameters": res["folds"], "intervals": _intervals(file, rows, "training", write_intervals)}
    else:
        cal = catalog.calibration()
        rows = vt.run_validation(file, cal)
        summary = {**vt.summarize(rows), "intervals": _shipped(file, rows, "training", cal.provenance)}
    if out:
        _write_csv(out, TRAINING_OUT, [{**r.to_dict(), "layout": _layout_text(r)} for r in rows], "row")
    if as_json:
        click.echo(to_json({"rows": [r.to_dict() for r in rows], "summary": summary}))
    else:
        click.echo("\n".join([training_report(rows, summary), *interval_lines(summary.get("intervals"))]))


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--output", type=click.Path(dir_okay=False),
              help="Where to write the parameters [default: the catalog data flopcast ships].")
def calibrate(file, output):
    """Fit the efficiency parameters on the measured runs in FILE and write them with their provenance."""
    from ..validate import calibrate as cb

    serving = _is_serving(file)
    if output:
        _prepare_out(output, file)
    if serving:
        from ..validate.inference import fit_inference

        try:
            info = fit_inference(file, output) if output else fit_inference(file)
        except OSError as exc:
            raise FlopcastError(f"cannot write {exc.filename or output}: {exc.strerror or exc}") from None
        click.echo(to_json(info))
        return
    cases, skipped = vt.load_cases(file)
    with _progress(2, "fitting (2 rounds)") as bar:
        cal, info = cb.fit(cases, progress=bar.update)
    prov = cb.provenance(file, cases, info)
    target = Path(output) if output else catalog.DATA / "calibration.yaml"
    try:
        cb.write(cal, prov, target)
    except OSError as exc:
        raise FlopcastError(f"cannot write {target}: {exc.strerror or exc}") from None
    n_global = len(cb.GLOBAL_PRIOR)
    click.echo(f"fitted {len(cal.families)} chip families and {n_global} global parameters on {info['n_rows']} runs; "
               f"fit MAPE {info['fit_mape_pct']:.1f}%; wrote {target}")

