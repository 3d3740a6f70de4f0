"""Inference predictions against measured serving runs (validation/inference_runs.csv).

Each row's configuration goes through cost/inference.py; each measured figure the
row states is compared (predicted vs measured, error %). The measured columns are
read only by `_compare` and by the fit, never by the prediction. Blank fields are
filled as a practitioner would (stated in each row's `assumed`).
"""

from __future__ import annotations

import datetime
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from .. import catalog
from ..cost import inference as inf
from ..cost.inference import releases
from ..cost.uncertainty import serving_kind
from ..errors import FlopcastError
from ..limits import LIMITS, REQUIRED_TEXT, TEXT, RowSchema, count, real
from . import benchmark
from .fitmemo import FitCache, RowMemo
from .fitparams import _FREE, _efficiency, _free_names, _least_squares, _param, _prior

METRICS = {  # csv column -> (metric name, how a prediction gives it)
    "measured_decode_tokens_per_s_per_stream": "decode_tokens_per_s_per_stream",
    "measured_output_tokens_per_s_total": "output_tokens_per_s_total",
    "measured_tpot_ms": "tpot_ms",
    "measured_ttft_ms": "ttft_ms",
    "measured_prefill_tokens_per_s": "prefill_tokens_per_s",
}
LLAMA_BENCH_TG = 128  # llama-bench default text-generation test (tg128) when the source gives no lengths
DEFAULT_INPUT = 128
NEURON_LOGICAL_CORES = inf.NEURON_LOGICAL_CORES
CAL_PATH = catalog.DATA / "inference_calibration.yaml"


# The serving schema (validation/README.md): every column a serving row may have, with its cell's type and
# physical range (the command line's bounds, limits.py); input_tokens 0 is a decode-only benchmark; the measured
# figures are positive, at most 1,000x the fastest published run.
SERVING = RowSchema("the serving schema", {
    "run_id": REQUIRED_TEXT, "source": REQUIRED_TEXT, "source_locator": TEXT, "date": TEXT,
    "hardware": REQUIRED_TEXT, "instance": TEXT, "vcpus": count(1, 1e6), "threads": count(1, LIMITS["threads"].high),
    "chips": count(1, LIMITS["chips"].high), "tp": count(1, LIMITS["tp"].high), "engine": TEXT,
    "model": REQUIRED_TEXT, "weights": REQUIRED_TEXT, "kv_dtype": TEXT, "batch": count(1, LIMITS["max_batch"].high),
    "input_tokens": count(0, benchmark.TOKENS_HIGH), "output_tokens": count(1, benchmark.TOKENS_HIGH),
    "measured_decode_tokens_per_s_per_stream": real(1e7), "measured_output_tokens_per_s_total": real(1e10),
    "measured_tpot_ms": real(1e7), "measured_ttft_ms": real(1e9), "measured_prefill_tokens_per_s": real(1e10),
    "measured_as": TEXT,
    **benchmark.LOAD_SCHEMA,  # how the benchmark ran (validate/benchmark.py, validation/README.md)
    "context_buckets": TEXT,  # optional: a static-shape server's compiled prompt lengths (benchmark.context_buckets)
    "notes": TEXT,
}, one_of=tuple(METRICS))
REQUIRED = tuple(c for c, col in SERVING.columns.items() if col.required)  # and one of the METRICS columns
COUNT_COLUMNS = tuple(c for c, col in SERVING.columns.items() if col.bound is not None and col.bound.integer)


def missing_columns(header) -> list[str]:
    """The serving schema's columns the header lacks ([] when it is a serving CSV)."""
    missing = [c for c in REQUIRED if c not in header]
    if not any(c in header for c in METRICS):
        missing.append("one of " + ", ".join(METRICS))
    return missing


def check_columns(header, path) -> None:
    missing = missing_columns(header)
    if missing:
        raise FlopcastError(f"{path} lacks column(s) {', '.join(missing)}; the serving schema needs "
                            f"{', '.join(REQUIRED)} and at least one measured_* column (see validation/README.md)")


def _read(path) -> list[dict]:
    """The rows of one serving CSV, or of several (a list, or a short name such as `inference`: both files)."""
    from .rows import read_checked

    return read_checked(path, SERVING, check_columns)


def _fit_rows(path) -> list[dict]:
    from .rows import MAX_SERVING_FIT_ROWS, fit_rows

    return fit_rows(_read(path), data_name(path), MAX_SERVING_FIT_ROWS)


def data_name(path) -> str:
    """The file names a fit's provenance records: one, or several joined by ' + '."""
    from .rows import resolve_files

    paths = list(path) if isinstance(path, (list, tuple)) else resolve_files(path)
    return " + ".join(Path(p).name for p in paths)


def _int(row, key):
    return SERVING.cell(key, row.get(key))


def _measured(row) -> list[tuple[str, float | None, str]]:
    """(metric, measured value, why it is unusable) for every measured cell the row fills, in METRICS order."""
    out = []
    for col, metric in METRICS.items():
        s = (row.get(col) or "").strip()
        if not s:
            continue
        try:
            v = SERVING.cell(col, s)
        except FlopcastError as exc:
            out.append((metric, None, str(exc)))
            continue
        if v <= 0:
            out.append((metric, None, f"{col} must be positive, got {s}"))
            continue
        out.append((metric, v, ""))
    return out


def _system_for_row(row):
    inst = (row.get("instance") or "").strip()
    hw = row["hardware"].strip()
    if inst:
        key = catalog.resolve_name("system", inst)
        if key is None:  # a family without its size ("hpc7g"): its largest catalogued size
            cands = sorted((n for n in catalog.names("system") if n.startswith(inst + ".")),
                           key=lambda n: catalog.load_system(n).vcpus)
            if not cands:
                raise FlopcastError(f"instance {inst!r} is not in the catalog; valid: a system name "
                                    f"(`flopcast catalog` lists them) or a family such as hpc7g")
            return catalog.load_system(cands[-1]), f"instance {inst}: size not given, {cands[-1]} assumed"
        return catalog.load_system(key), None
    return catalog.system_for(hw), f"instance blank: the chip's default system {catalog.system_for(hw).id}"


def configure(row, efficiency_table=None, runs=None):
    """(deployment, batch, input, output, assumed notes) for a row; no measured column is read. runs: the row's
    state in a fit (fitmemo.RowRuns), which keeps the row's choices that no efficiency changes (_choices)."""
    model, system, noted, chips, tp, threads = _choices(row) if runs is None else runs.once("choices", _choices, row)
    assumed = list(noted)
    d = inf.deployment(model, system, chips=chips, tp=tp, threads=threads, weights=row["weights"].strip(),
                       engine=row.get("engine"), inference_calibration=efficiency_table)
    batch = _int(row, "batch") or 1
    i, o = _int(row, "input_tokens"), _int(row, "output_tokens")
    if i is None and o is None and d.family == "llama.cpp":
        i, o = 0, LLAMA_BENCH_TG
        assumed.append("lengths blank: llama-bench tg128 (no prompt, 128 generated tokens)")
    if i is None:
        i = DEFAULT_INPUT
        assumed.append(f"input_tokens blank: {DEFAULT_INPUT}")
    if o is None:
        o = LLAMA_BENCH_TG
        assumed.append(f"output_tokens blank: {LLAMA_BENCH_TG}")
    return d, batch, i, o, assumed + list(d.assumptions)


def _choices(row) -> tuple:
    """(model, system, notes, chips, tp, threads) of a row: what configure builds its deployment from."""
    for col in ("model", "hardware", "weights"):
        if not (row.get(col) or "").strip():
            raise FlopcastError(f"{col} is blank")
    for col in COUNT_COLUMNS:
        _int(row, col)  # every count readable and possible before anything is built
    model = catalog.load_model(row["model"].strip())
    system, note = _system_for_row(row)
    assumed = [note] if note else []
    chips = _int(row, "chips") or system.chips_per_node
    tp = _int(row, "tp")
    if system.chip.kind == "cpu":
        chips, tp = 1 if chips <= system.chips_per_node else chips, None
        chips = min(chips, system.chips_per_node)
    elif tp is not None and system.chip.family in ("trainium", "inferentia"):
        cores = NEURON_LOGICAL_CORES.get(system.chip.id, system.chip.cores)
        tp = max(1, min(chips, math.ceil(tp / cores)))  # the source counts NeuronCores
        while chips % tp:
            tp += 1
    if tp is None:
        tp = chips
        if system.chip.kind != "cpu":
            assumed.append(f"tp blank: tp = {chips} (all chips of the instance)")
    threads = _int(row, "threads")
    return model, system, tuple(assumed), chips, tp, threads


def predict_row(row, efficiency_table=None, runs=None) -> tuple[dict, list]:
    """(figures, assumptions, deployment) of a row: simulated under its benchmark's load when it states one
    (validate/benchmark.py), else one static batch of requests of fixed shape by the roofline. runs: the row's state
    in a fit (fitmemo.RowRuns: its choices and earlier simulated runs)."""
    d, b, i, o, assumed = configure(row, efficiency_table, runs)
    load, notes = benchmark.load_of(row, b) if runs is None else runs.once("load", benchmark.load_of, row, b)
    if load is not None:
        result = benchmark.simulate_row(d, load, b, i, o, runs)
        return benchmark.figures(result, load, i), assumed + notes + [benchmark.describe(load)], d
    static = benchmark.static_batch(d, row, b, i, o)
    if static is not None:
        return static[0], assumed + [static[1]], d
    r = inf.predict(d, b, i, o)
    figures = {
        "decode_tokens_per_s_per_stream": r.decode_tokens_per_s_per_stream,
        "output_tokens_per_s_total": r.output_tokens_per_s_total,
        "tpot_ms": r.tpot_s * 1e3,
        "ttft_ms": r.ttft_s * 1e3,
        "prefill_tokens_per_s": r.prefill_tokens_per_s,
    }
    return figures, assumed, d


def _compare(rows, efficiency_table=None, runs=None) -> list[dict]:
    """Each measured figure of each row, predicted and compared; runs: a single row's state in a fit
    (fitmemo.RowRuns)."""
    if runs is not None and len(rows) != 1:
        raise ValueError("runs are one row's simulations")
    out = []
    for row in rows:
        base = {"run_id": row["run_id"], "source": row["source"], "hardware": row["hardware"],
                "engine": row.get("engine", ""), "model": row["model"]}
        cells = _measured(row) if runs is None else runs.once("measured", _measured, row)
        if not cells:
            out.append({**base, "metric": None, "status": "skipped", "reason": "no measured figure in the row",
                        "predicted": None, "measured": None, "error_pct": None})
            continue
        try:
            figures, assumed, d = predict_row(row, efficiency_table, runs)
        except (FlopcastError, KeyError, ValueError) as exc:
            for metric, value, why in cells:
                out.append({**base, "metric": metric, "status": "skipped", "reason": why or str(exc),
                            "predicted": None, "measured": value, "error_pct": None})
            continue
        for metric, value, why in cells:
            if why:
                out.append({**base, "metric": metric, "status": "skipped", "reason": why,
                            "predicted": None, "measured": None, "error_pct": None})
                continue
            p = figures[metric]
            out.append({**base, "metric": metric, "status": "ok", "reason": "", "predicted": p,
                        "measured": value, "error_pct": 100.0 * (p - value) / value,
                        "engine_family": d.family, "chip": d.system.chip.id, "moe": bool(d.model.moe),
                        "assumed": assumed})
    return out


def _stats(rows) -> dict:
    errs = np.array([r["error_pct"] for r in rows if r["status"] == "ok"], dtype=float)
    if errs.size == 0:
        return {"n": 0, "mape_pct": None, "median_ape_pct": None, "bias_pct": None}
    return {"n": int(errs.size), "mape_pct": float(np.mean(np.abs(errs))),
            "median_ape_pct": float(np.median(np.abs(errs))), "bias_pct": float(np.mean(errs))}


def summarize(rows) -> dict:
    ok = [r for r in rows if r["status"] == "ok"]
    s = _stats(ok)
    out = {"n_ok": s["n"], "n_skipped": sum(r["status"] == "skipped" for r in rows),
           "mape_pct": s["mape_pct"], "median_ape_pct": s["median_ape_pct"], "bias_pct": s["bias_pct"]}
    for key, name in (("metric", "by_metric"), ("source", "by_source"), ("hardware", "by_hardware")):
        groups = {}
        for r in ok:
            groups.setdefault(r[key], []).append(r)
        out[name] = {k: _stats(v) for k, v in groups.items()}
    return out


def _table(calibration):
    if calibration is None:
        return None
    if isinstance(calibration, (str, Path)):
        return _load_table(calibration)
    return calibration


def _load_table(path) -> dict:
    data = catalog.load_yaml(Path(path).read_text()) or {}
    return {k: releases.from_yaml(v) for k, v in (data.get("families") or {}).items()}


def validate_inference(path, calibration=None) -> dict:
    """Predicted vs measured for every figure of every row; rows it cannot simulate say why.

    calibration: None (the shipped inference_calibration.yaml), a path to one, or a
    dict family -> EngineEfficiency."""
    table = _table(calibration)
    rows = _compare(_read(path), table)
    # each figure's kind of forecast, for its interval: whether the shipped calibration's rows include its chip
    # or its engine family (a family the table in use lacks is unseen)
    fitted = inf.calibration_hardware()
    for r in rows:
        if r["status"] == "ok":
            fam = r["engine_family"] if table is None or r["engine_family"] in table else None
            r["kind"] = serving_kind(r["chip"], fam, fitted, r.get("moe", False))
    return {"rows": rows, "summary": summarize(rows)}


# ---------------------------------------------------------------- the fit

PRIOR_WEIGHT = 0.3  # residual weight of log(param / prior): keeps a family with few rows near its prior
ROBUST_SCALE = 0.3  # soft-L1 loss beyond ~30% log error: one inconsistent source row must not drag a family


def fit_families(rows, families=inf.ENGINE_FAMILIES, *, cache: FitCache | None = None,
                 start: dict | None = None) -> dict:
    """family -> EngineEfficiency minimising squared log error of every measured figure (scipy least_squares).

    cache: the fits and row predictions shared by the folds of a cross-validation (validate/fitmemo.py), so a family
    whose rows a fold leaves unchanged is not fitted again and a row is not predicted twice at the values it reads;
    start: family -> EngineEfficiency to start from (the full fit, for the folds); the objective, and so the
    optimum, is the same from any start.

    Families are fitted in turn, the one with the most rows first (ties by name); each is regularised towards
    inf.fit_prior given those fitted before it: the hardware fractions its kind's engines reach of their chips,
    on its own chips, so the best-measured family of a kind anchors the others."""
    cache = FitCache() if cache is None else cache
    table = {}
    mine_of: dict[str, list] = {}
    for row in rows:
        d = cache.deployment(row, configure)
        if d is not None:
            mine_of.setdefault(d.family, []).append(row)
    for fam in sorted((f for f in families if mine_of.get(f)), key=lambda f: (-len(mine_of[f]), f)):
        mine = mine_of[fam]
        chips = {d.system.chip.id: d.system.chip for d in (cache.deployment(r, configure) for r in mine)}
        basis = inf.with_basis(inf.PRIORS[fam], chips.values(), catalog.calibration())
        prior = inf.fit_prior(table, fam, (basis.compute_basis, basis.memory_basis))
        key = (fam, tuple(f"{r['source']}/{r['run_id']}" for r in mine), prior)
        if key not in cache.fits:
            fit = _fit_family(fam, mine, (start or {}).get(fam), cache.rows, prior)
            cache.fits[key] = replace(fit, compute_basis=basis.compute_basis, memory_basis=basis.memory_basis)
        table[fam] = cache.fits[key]
    return {f: table[f] for f in families if f in table}


MISSED_FIGURE = math.log(10.0)  # log error of a figure the simulated benchmark did not produce
FIT_STEP = 1e-3  # finite-difference step in log parameters (a simulated row's figures move in small discrete steps)
FIT_TOLERANCE = 1e-6


def _compare_family(fam: str, mine: list, eff, memo: RowMemo) -> list[dict]:
    """_compare(mine, {fam: eff}), each row from the memo where it read the same values before."""
    return [r for row in mine for r in memo.compare(fam, row, eff, _compare)]


def _fit_family(fam: str, mine: list, start=None, memo: RowMemo | None = None,
                prior: inf.EngineEfficiency | None = None) -> inf.EngineEfficiency:
    """One engine family's efficiencies on its rows, regularised towards `prior` (default inf.PRIORS[fam])."""
    least_squares = _least_squares()

    prior = inf.PRIORS[fam] if prior is None else prior
    names = _free_names(fam, mine)
    x0 = np.log([_prior(fam, prior, n) for n in names])
    lo = np.log([_FREE[n.split("@")[0]][0] for n in names])
    hi = np.log([_FREE[n.split("@")[0]][1] for n in names])
    xs = x0 if start is None else np.clip(np.log([_param(start, n) for n in names]), lo, hi)

    memo = RowMemo() if memo is None else memo
    scored = {(r["run_id"], r["metric"]) for r in _compare_family(fam, mine, start or prior, memo)
              if r["status"] == "ok"}

    def residuals(x):
        eff = _efficiency(prior, names, np.exp(x))
        got = {(r["run_id"], r["metric"]): math.log(r["predicted"] / r["measured"])
               for r in _compare_family(fam, mine, eff, memo) if r["status"] == "ok"}
        # a figure the engine cannot produce at these parameters (a benchmark in which no request finishes in
        # time) counts as a miss of 10x, so every evaluation has the same residuals
        res = [got.get(k, MISSED_FIGURE) for k in sorted(scored)]
        return np.concatenate([res, PRIOR_WEIGHT * (x - x0)])

    sol = least_squares(residuals, xs, bounds=(lo, hi), method="trf", loss="soft_l1", f_scale=ROBUST_SCALE,
                        diff_step=FIT_STEP, xtol=FIT_TOLERANCE, ftol=FIT_TOLERANCE)
    return _efficiency(prior, names, np.exp(sol.x))


def fit_inference(path, out_path=CAL_PATH, *, cache: FitCache | None = None,
                  cross_validation: dict | None = None) -> dict:
    """Fit every engine family on `path` and write inference_calibration.yaml with provenance.

    cache: as fit_families; cross_validation: cross_validate_inference's result on the same file, when already made."""
    import yaml

    out_path = CAL_PATH if out_path is None else out_path
    rows = _fit_rows(path)
    cache = FitCache() if cache is None else cache
    prior = _compare(rows)  # at the priors: a file without one usable figure stops here, before the fit
    if not any(r["status"] == "ok" for r in prior):
        reason = next((r.get("reason") for r in prior if r.get("reason")), "")
        raise FlopcastError(f"{path}: no measured figure could be predicted ({len(prior)} skipped"
                            f"{': ' + reason if reason else ''}); nothing to fit")
    table = fit_families(rows, cache=cache)
    summary = summarize(_compare(rows, table))
    cv = (cross_validation or cross_validate_inference(path, cache=cache, start=table))["summary"]
    r2 = lambda v: None if v is None else round(v, 2)  # a held-out source may leave no figure
    fam = {id(r): _family_of(r, cache) for r in rows}
    doc = {
        "provenance": {
            "data": data_name(path), "rows": len(rows), "fitted": datetime.date.today().isoformat(),
            "method": f"scipy.optimize.least_squares (soft-L1 loss, f_scale {ROBUST_SCALE}) on "
                      f"log(predicted/measured) of every measured figure, "
                      f"per engine family, most rows first, regularised (weight {PRIOR_WEIGHT}) towards "
                      f"cost/inference/engines.fit_prior: the hardware fractions the families of its kind fitted "
                      f"before it reach of their chips, else the priors there",
            "robust_scale": ROBUST_SCALE,
            "in_sample_mape_pct": r2(summary["mape_pct"]),
            "in_sample_median_ape_pct": r2(summary["median_ape_pct"]),
            "leave_one_source_out_mape_pct": r2(cv["mape_pct"]),
            "leave_one_source_out_median_ape_pct": r2(cv["median_ape_pct"]),
            "rows_per_family": {f: sum(1 for r in rows if fam[id(r)] == f) for f in table},
            "sources_per_family": {f: sorted({r["source"] for r in rows if fam[id(r)] == f}) for f in table},
            "hardware_per_family": {f: sorted({r["hardware"] for r in rows if fam[id(r)] == f}) for f in table},
            "note": "a parameter no row of a family constrains stays at its prior (gpu: compute and "
                    "request_overhead_s, no prefill or TTFT rows; llama.cpp: request_overhead_s, no TTFT rows)",
        },
        "families": {f: releases.to_yaml(e) for f, e in table.items()},
    }
    Path(out_path).write_text("# Written by flopcast.validate.inference.fit_inference; do not edit by hand.\n"
                              + yaml.safe_dump(doc, sort_keys=False))
    return doc


def _family_of(row, cache: FitCache):
    d = cache.deployment(row, configure)
    return None if d is None else d.family


def cross_validate_inference(path, *, cache: FitCache | None = None, start: dict | None = None) -> dict:
    """Leave-one-source-out: fit on the other sources, predict the held-out source's figures.

    cache, start: as fit_families (a calibration passes its own; else the full fit is made first to start from)."""
    rows = _fit_rows(path)
    cache = FitCache() if cache is None else cache
    start = fit_families(rows, cache=cache) if start is None else start
    out = []
    for src in sorted({r["source"] for r in rows}):
        train = [r for r in rows if r["source"] != src]
        held = [r for r in rows if r["source"] == src]
        table = fit_families(train, cache=cache, start=start)
        seen = _chips_per_family(train, cache)
        for r in _compare(held, table):
            if r["status"] == "ok":
                # the kind of forecast this fold made: whether its fit saw the row's chip or engine family
                fam = r.get("engine_family")
                r["kind"] = serving_kind(r["chip"], fam if fam in table else None, seen, r.get("moe", False))
            out.append(r)
    return {"rows": out, "summary": summarize(out)}


def _chips_per_family(rows, cache: FitCache) -> dict:
    out: dict[str, set] = {}
    for d in (cache.deployment(row, configure) for row in rows):
        if d is not None:
            out.setdefault(d.family, set()).add(d.system.chip.id)
    return out
