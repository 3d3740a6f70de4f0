"""`flopcast validate` and `flopcast calibrate`."""

from __future__ import annotations

import csv
from pathlib import Path

import click

from . import catalog
from .cli import _json
from .errors import FlopcastError
from .report.text import table
from .validate import training as vt

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


def _is_serving(path: str) -> bool:
    try:
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
    except OSError:
        raise FlopcastError(f"file {path} does not exist") from None
    return "measured_tokens_per_s_per_chip" not in header and any(h.startswith("measured_") for h in header)


def _progress(total: int, label: str):
    bar = click.progressbar(length=total, label=label, file=click.get_text_stream("stderr"))
    return bar


def training_report(rows, summary) -> str:
    body = []
    for r in rows:
        err = "" if r.error_pct is None else f"{r.error_pct:+.1f}%"
        pred = "" if r.predicted is None else f"{r.predicted:,.1f}"
        meas = "" if r.measured is None else f"{r.measured:,.1f}"
        body.append([r.run_id, r.model[:28], r.hardware, str(r.chips) if r.chips else "", _layout_text(r)
                     if r.status == "ok" else f"skipped: {r.reason}", pred, meas, err])
    out = [table(body, ["run", "model", "chip", "chips", "layout (* = chosen by flopcast)", "predicted tok/s/chip",
                        "measured tok/s/chip", "error"], {3, 5, 6, 7})]
    s = summary
    fmtp = lambda x: "n/a" if x is None else f"{x:.1f}%"
    out.append("")
    out.append(f"rows predicted: {s['n_ok']}   skipped: {s['n_skipped']}")
    out.append(f"MAPE {fmtp(s['mape_pct'])}   median |error| {fmtp(s['median_ape_pct'])}   "
               f"bias (mean signed error) {fmtp(s['bias_pct'])}")
    out.append("five worst: " + ", ".join(f"run {w['run_id']} ({w['model'][:20]}, {w['hardware']}) {w['error_pct']:+.0f}%"
                                          for w in s["worst"]))
    for title, key in (("by source", "by_source"), ("by chip", "by_hardware")):
        out.append(f"{title}: " + "; ".join(f"{k} {fmtp(v['mape_pct'])} (n={v['n']})" for k, v in s[key].items()))
    skipped = [r for r in rows if r.status == "skipped"]
    for r in skipped:
        out.append(f"skipped run {r.run_id}: {r.reason}")
    return "\n".join(out)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print rows and summary as JSON.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write per-row predictions to this CSV.")
@click.option("--cross-validate", is_flag=True,
              help="Refit with each source left out and predict it: the honest error on unseen runs (minutes).")
def validate(file, as_json, out, cross_validate):
    """Compare predictions with the measured runs in FILE (the shared/validation CSV schemas).

    Blank layout cells are chosen by flopcast's search over just those fields (marked * in the table).
    """
    if _is_serving(file):
        from .validate.inference import cross_validate_inference, validate_inference

        result = cross_validate_inference(file) if cross_validate else validate_inference(file)
        if as_json:
            click.echo(_json(result))
        else:
            from .cli_serving import inference_validation_report

            click.echo(inference_validation_report(result))
        return
    if cross_validate:
        from .validate import calibrate as cb

        n_src = len({c.source for c in vt.load_cases(file)[0]})
        with _progress(n_src, "refitting without each source") as bar:
            res = cb.cross_validate(file, progress=bar.update)
        rows, summary = res["rows"], res["summary"]
        summary = {**summary, "method": "leave-one-source-out: each source predicted by parameters fitted without it",
                   "fold_parameters": res["folds"]}
    else:
        cal = catalog.calibration()
        rows = vt.run_validation(file, cal)
        summary = vt.summarize(rows)
    if out:
        with open(out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["run_id", "source", "model", "hardware", "chips", "status", "reason",
                                              "layout", "predicted_tokens_per_s_per_chip",
                                              "measured_tokens_per_s_per_chip", "error_pct"])
            w.writeheader()
            for r in rows:
                d = r.to_dict()
                w.writerow({k: (_layout_text(r) if k == "layout" else d.get(k)) for k in w.fieldnames})
    if as_json:
        click.echo(_json({"rows": [r.to_dict() for r in rows], "summary": summary}))
    else:
        click.echo(training_report(rows, summary))


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--output", type=click.Path(dir_okay=False),
              help="Where to write the parameters [default: the catalog data flopcast ships].")
def calibrate(file, output):
    """Fit the efficiency parameters on the measured runs in FILE and write them with their provenance."""
    from .validate import calibrate as cb

    if _is_serving(file):
        from .validate.inference import fit_inference

        info = fit_inference(file, output) if output else fit_inference(file)
        click.echo(_json(info))
        return
    cases, skipped = vt.load_cases(file)
    with _progress(2, "fitting (2 rounds)") as bar:
        cal, info = cb.fit(cases, progress=bar.update)
    prov = cb.provenance(file, cases, info)
    target = Path(output) if output else catalog.DATA / "calibration.yaml"
    cb.write(cal, prov, target)
    n_global = len(cb.GLOBAL_PRIOR)
    click.echo(f"fitted {len(cal.families)} chip families and {n_global} global parameters on {info['n_rows']} runs; "
               f"fit MAPE {info['fit_mape_pct']:.1f}%; wrote {target}")


COMMANDS = [validate, calibrate]
