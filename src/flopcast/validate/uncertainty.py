"""Prediction intervals per kind of forecast, from leave-one-source-out residuals, and their honest coverage.

Input: the cross-validated rows of `validate --cross-validate` (each predicted by parameters fitted
without its source), each tagged with its kind (cost/uncertainty.py: task, basis, dense or MoE) as the
fold that predicted it saw it. A kind's interval is a pair of quantiles of its log errors
r = log(predicted speed / measured speed): the split-conformal order statistics (Lei et al. 2018,
"Distribution-free predictive inference for regression", JASA 113(523), sec. 2.2: the ceil((n+1)(1-a/2))-th
smallest of n residuals bounds a new one with probability >= 1-a/2), so a kind with few residuals gets a
wider interval, never a narrower one.

Training kinds also carry the chip's matrix unit (cost/uncertainty.UNITS: `systolic` for TPU and Trainium, `gpu`
for the rest): their cross-validated errors differ in spread, so each unit's interval is its own residuals'.

Widening rules (written into the data file):
- a kind with fewer than MIN_RESIDUALS residuals is pooled with the next broader kind's: first the other matrix
  unit of the same basis and architecture (training), then the other architecture of the same basis, then the
  broader bases (own -> family -> unseen), then all of the task;
  the pooled interval is widened to contain every residual of the kind itself;
- intervals nest: a family-basis interval contains the own-basis one of the same architecture, an unseen
  one contains the family one (extrapolating further is never surer);
- an unseen family's interval is symmetric in log space (its widest side mirrored): its efficiencies are
  borrowed from other families, and the few unseen-family residuals there are (one source) cannot say
  whether a new family runs faster or slower than the borrowed numbers.

Coverage is scored honestly: the interval for a row of source S is rebuilt from the residuals of the other
sources only (a nested leave-one-source-out on the quantiles), so no row is covered by an interval that
its own source helped fit.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from ..catalog.names import load_yaml
from ..cost.uncertainty import ARCHS, BASES, UNITS, Basis, Task, basis_of, kind_key, training_kind, unit_of
from ..errors import FlopcastError

LEVEL = 0.8
MIN_RESIDUALS = 8  # fewer and a kind is pooled with the next broader one


@dataclass(frozen=True)
class Residual:
    run_id: str
    source: str
    kind: str
    log_error: float  # log(predicted speed / measured speed)


def bounds(values, level: float = LEVEL) -> tuple[float, float]:
    """(r_low, r_high): split-conformal order statistics of `values` for a central `level` interval.

    With n values the k-th smallest, k = ceil((n + 1)(1 + level) / 2), bounds above (and symmetrically
    below); when k > n the extreme value is taken (the interval cannot be wider than the data say)."""
    v = np.sort(np.asarray(values, dtype=float))
    n = v.size
    if n == 0:
        raise ValueError("no residuals")
    k = math.ceil((n + 1) * (1 + level) / 2)
    j = n + 1 - k  # the matching order statistic from below
    return float(v[max(j, 1) - 1]), float(v[min(k, n) - 1])


def _chain(kind: str) -> list[tuple[str, list[str]]]:
    """(label, kinds) pools from the kind itself to the whole task, each containing the last: the other matrix
    unit of a kind that has one, then the other architecture of the same basis, then the broader bases one by one,
    then every basis of the task."""
    if kind.count("/") == 3:
        broader = _chain(kind.rsplit("/", 1)[0])
        return [(kind, [kind])] + [(label, [f"{k}/{u}" for k in pool for u in UNITS]) for label, pool in broader]
    task, basis, _ = kind.split("/")
    order = [b.value for b in BASES]
    i = order.index(basis)
    pools = [(kind, [kind]), (f"{task}/{basis}/*", [f"{task}/{basis}/{a}" for a in ARCHS])]
    for j in range(i + 1, len(order)):
        bases = order[i:j + 1]
        pools.append((f"{task}/{'+'.join(bases)}/*", [f"{task}/{b}/{a}" for b in bases for a in ARCHS]))
    pools.append((f"{task}/*/*", [f"{task}/{b}/{a}" for b in order for a in ARCHS]))
    return pools


def _fit_one(kind: str, by_kind: dict, level: float) -> dict:
    pools = _chain(kind)
    for label, pool in pools:
        vals = [r for k in pool for r in by_kind.get(k, [])]
        if len(vals) >= MIN_RESIDUALS or pool is pools[-1][1]:
            if not vals:
                return {}
            lo, hi = bounds(vals, level)
            mine = by_kind.get(kind, [])
            own = len(mine)
            pooled = "" if label == kind else f"{own} own residuals < {MIN_RESIDUALS}: pooled as {label}"
            if mine and label != kind and (min(mine) < lo or max(mine) > hi):
                # the few errors of this kind itself stay inside: pooling must not hide how far off it was
                lo, hi = min(lo, min(mine)), max(hi, max(mine))
                pooled += ", widened to contain its own residuals"
            return {"log_error_low": lo, "log_error_high": hi, "residuals": len(vals), "own_residuals": own,
                    "pooled": pooled}
    return {}


def fit(residuals: list[Residual], task: Task, level: float = LEVEL) -> dict:
    """kind -> {log_error_low, log_error_high, residuals, own_residuals, pooled} for every kind of the task."""
    by_kind: dict[str, list[float]] = {}
    for r in residuals:
        by_kind.setdefault(r.kind, []).append(r.log_error)
    split = any(k.count("/") == 3 for k in by_kind)  # residuals tagged with their matrix unit: a kind per unit
    out = {}
    for arch, unit in ((a, u) for a in ARCHS for u in (UNITS if split else (None,))):
        prev, prev_kind = None, ""
        for basis in BASES:
            k = kind_key(task, basis, arch == "moe", unit)
            e = _fit_one(k, by_kind, level)
            if not e:
                continue
            if prev is not None:  # nest: a broader extrapolation is never surer than a narrower one
                lo = min(e["log_error_low"], prev["log_error_low"])
                hi = max(e["log_error_high"], prev["log_error_high"])
                if (lo, hi) != (e["log_error_low"], e["log_error_high"]):
                    e = {**e, "log_error_low": lo, "log_error_high": hi,
                         "pooled": "; ".join(filter(None, [e["pooled"], f"widened to contain {prev_kind}"]))}
            if basis == Basis.UNSEEN:  # no run of the family: which way its borrowed efficiencies err is unknown
                m = max(-e["log_error_low"], e["log_error_high"])
                if (-m, m) != (e["log_error_low"], e["log_error_high"]):
                    e = {**e, "log_error_low": -m, "log_error_high": m,
                         "pooled": "; ".join(filter(None, [e["pooled"], "made symmetric in log space"]))}
            out[k], prev, prev_kind = e, e, k
    return out


def coverage(residuals: list[Residual], task: Task, level: float = LEVEL) -> dict:
    """How often the interval covered the measurement, each row's interval fitted without its source."""
    hits, per_kind = [], {}
    for src in sorted({r.source for r in residuals}):
        table = fit([r for r in residuals if r.source != src], task, level)
        for r in (r for r in residuals if r.source == src):
            e = table.get(r.kind)
            if not e:
                continue
            ok = e["log_error_low"] <= r.log_error <= e["log_error_high"]
            hits.append(ok)
            per_kind.setdefault(r.kind, []).append(ok)
    frac = lambda xs: round(float(np.mean(xs)), 4) if xs else None
    return {"level": level, "n": len(hits), "covered": int(sum(hits)), "coverage": frac(hits),
            "by_kind": {k: {"n": len(v), "coverage": frac(v)} for k, v in sorted(per_kind.items())},
            "method": "nested leave-one-source-out: each row scored against the interval fitted on the "
                      "cross-validated residuals of the other sources"}


def section(residuals: list[Residual], task: Task, data_file: str, command: str, level: float = LEVEL) -> dict:
    """The uncertainty.yaml section of one task: its kinds, their widths as factors, the coverage, provenance."""
    kinds = fit(residuals, task, level)
    for e in kinds.values():
        e["speed_factor_low"] = round(math.exp(-e["log_error_high"]), 4)
        e["speed_factor_high"] = round(math.exp(-e["log_error_low"]), 4)
        e["log_error_low"], e["log_error_high"] = round(e["log_error_low"], 4), round(e["log_error_high"], 4)
    cov = coverage(residuals, task, level)
    return {
        "level": level,
        "provenance": {
            "data_file": " + ".join(sorted(file_names(data_file))),
            "rows": sorted({r.run_id for r in residuals}, key=_run_order),
            "n_residuals": len(residuals), "sources": sorted({r.source for r in residuals}),
            "date": dt.date.today().isoformat(), "command": command,
            "method": (f"leave-one-source-out log errors log(predicted/measured speed) per kind; bounds are the "
                       f"split-conformal order statistics for a central {round(100 * level)}% interval (Lei et al. "
                       f"2018); kinds with fewer than {MIN_RESIDUALS} residuals pooled with the next broader kind "
                       "(training: the other matrix unit; then the other architecture, the broader bases, the task) "
                       "and widened to contain their own residuals; family intervals contain own ones and unseen "
                       "intervals family ones; "
                       "unseen intervals symmetric in log space"),
        },
        "coverage": {k: v for k, v in cov.items() if k != "method"} | {"method": cov["method"]},
        "kinds": kinds,
    }


def file_names(file) -> set:
    """The CSV file names a validate argument or a provenance entry names: a path, several joined by ' + ' or
    given as a list, or a short name of the shipped files (validate.training.SHIPPED, where it exists)."""
    from . import training as vt

    if not file:
        return set()
    parts = list(file) if isinstance(file, (list, tuple)) else str(file).split(" + ")
    shipped = getattr(vt, "SHIPPED", {})
    out = set()
    for p in parts:
        out |= set(shipped[p]) if p in shipped else {Path(p).name}
    return out


def _run_order(run_id: str):
    digits = "".join(c for c in run_id if c.isdigit())
    return (int(digits) if digits else 0, run_id)


MAX_INTERVALS_BYTES = 1 << 20  # the shipped uncertainty.yaml is a few kB


def check_target(path) -> None:
    """A one-line FlopcastError where `path` exists but is not a regular file of at most MAX_INTERVALS_BYTES:
    write reads it to keep the other task's section (a device such as /dev/zero would never end)."""
    p = Path(path)
    if p.exists() and (not p.is_file() or p.stat().st_size > MAX_INTERVALS_BYTES):
        raise FlopcastError(f"`write_intervals` {path} is not an intervals file flopcast can update; valid: a new "
                            f"path or a YAML file of at most {MAX_INTERVALS_BYTES:,} bytes")


def _existing(path: Path) -> dict:
    """The sections an intervals file holds now ({} where there is none)."""
    check_target(path)
    if not path.exists():
        return {}
    try:
        doc = load_yaml(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise FlopcastError(" ".join(f"cannot read `write_intervals` {path}: {exc}".split())[:300]) from None
    if not isinstance(doc, dict):
        raise FlopcastError(f"`write_intervals` {path} is not an intervals file (a mapping of tasks); valid: a new "
                            "path or a file `validate --write-intervals` wrote")
    return doc


def write(path: Path, task: Task, sec: dict) -> None:
    """Replace one task's section of uncertainty.yaml, keeping the other task's."""
    path = Path(path)
    doc = _existing(path)
    doc[Task(task).value] = sec
    header = ("# Written by `flopcast validate FILE --cross-validate --write-intervals` -- do not edit by hand.\n"
              "# Prediction intervals per kind of forecast from leave-one-source-out residuals "
              "(validate/uncertainty.py).\n")
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False))


def fold_kinds(cases) -> dict:
    """run_id -> the kind of forecast a leave-one-source-out fold makes of each row: whether the other sources
    (the fold's fit) have runs of the row's chip, or of its family."""
    out = {}
    for src in {c.source for c in cases}:
        others = [c.system.chip for c in cases if c.source != src and c.measured]
        chips, families = {ch.id for ch in others}, {ch.family for ch in others}
        for c in (c for c in cases if c.source == src):
            basis = basis_of(c.system.chip.id, c.system.chip.family, chips, families)
            out[c.run_id] = kind_key(Task.TRAINING, basis, bool(c.model.moe), unit_of(c.system.chip.family))
    return out


def shipped_kinds(cases, calibration) -> dict:
    """run_id -> the kind of forecast the shipped calibration makes of each row."""
    return {c.run_id: training_kind(calibration, c.system.chip, bool(c.model.moe)) for c in cases}


def training_residuals(rows, kinds: dict) -> list[Residual]:
    """From training RowResults (tokens/s per chip is a speed) and each row's kind of forecast."""
    return [Residual(r.run_id, r.source, kinds[r.run_id], math.log(r.predicted / r.measured))
            for r in rows if r.status == "ok" and r.run_id in kinds and r.predicted and r.measured]


TIME_METRICS = ("tpot_ms", "ttft_ms")  # durations: a measured duration longer than predicted is a slower truth


def serving_residuals(rows) -> list[Residual]:
    """From cross-validated serving figures (dicts with metric, predicted, measured, kind)."""
    out = []
    for r in rows:
        if r.get("status") != "ok" or not r.get("kind") or not r.get("predicted") or not r.get("measured"):
            continue
        e = math.log(r["predicted"] / r["measured"])
        out.append(Residual(f"{r['run_id']}:{r['metric']}", r["source"], r["kind"],
                            -e if r["metric"] in TIME_METRICS else e))
    return out


def from_cross_validation(file, rows, task: str, write_to=None) -> dict:
    """The intervals cross-validated rows give, with their honest coverage; written to `write_to` when given.

    rows: training RowResults or serving figure dicts of `validate --cross-validate`."""
    task = Task(task)
    if task == Task.TRAINING:
        from . import training as vt

        residuals = training_residuals(rows, fold_kinds(vt.load_cases(file)[0]))
    else:
        residuals = serving_residuals(rows)
    if not residuals:
        return {}
    command = f"flopcast validate {file} --cross-validate --write-intervals {write_to or 'FILE'}"
    sec = section(residuals, task, file, command)
    if write_to:
        try:
            write(Path(write_to), task, sec)
        except OSError as exc:
            raise FlopcastError(f"cannot write {write_to}: {exc.strerror or exc}") from None
    return {"coverage": sec["coverage"], "kinds": sec["kinds"]}


def shipped_coverage(file, rows, task: str, calibration_provenance: dict, calibration=None) -> dict:
    """How often the shipped intervals (uncertainty.yaml) covered the measurements of `rows` (plain `validate`).

    Only rows no shipped number was fitted on are scored: a row of the calibration's data file that the fit used,
    or of a source whose errors set the intervals, is left out (counted in `excluded`)."""
    from ..cost.uncertainty import _table, interval_for

    task = Task(task)
    table = _table()
    sec = table.get(task.value) or {}
    prov = sec.get("provenance") or {}
    names = file_names(file)
    interval_sources = set(prov.get("sources") or []) if names & file_names(prov.get("data_file")) else set()
    fitted_on = calibration_provenance.get("data_file", calibration_provenance.get("data"))
    same_cal_file = bool(names & file_names(fitted_on))
    fitted_rows = set(map(str, calibration_provenance.get("rows") or [])) if task == Task.TRAINING else None
    if task == Task.TRAINING:
        from .. import catalog
        from . import training as vt

        cal = calibration or catalog.calibration()
        residuals = training_residuals(rows, shipped_kinds(vt.load_cases(file)[0], cal))
    else:
        residuals = serving_residuals(rows)
    hits, excluded = [], 0
    for r in residuals:
        run = r.run_id.split(":")[0]
        in_fit = same_cal_file and (fitted_rows is None or run in fitted_rows)
        if in_fit or r.source in interval_sources:
            excluded += 1
            continue
        i = interval_for(r.kind, table)
        if i is not None:
            hits.append(-math.log(i.high) <= r.log_error <= -math.log(i.low))
    return {"level": float(sec.get("level", LEVEL)), "n": len(hits), "covered": int(sum(hits)),
            "coverage": round(float(np.mean(hits)), 4) if hits else None, "excluded": excluded,
            "method": "shipped intervals scored on rows neither the calibration nor the intervals were fitted on"}
