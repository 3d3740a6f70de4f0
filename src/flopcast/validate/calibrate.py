"""Fit flopcast's few efficiency parameters on published runs, and cross-validate by source.

The fit is a maximum-a-posteriori least squares on log(predicted / measured)
tokens per second per chip, with a weak Gaussian prior pulling each parameter toward a
physically typical value so that parameters the data barely constrain stay sensible,
solved by a bounded Levenberg-Marquardt in log space (validate/lockstep.py) whose
every pass evaluates each row once for all finite-difference columns at once (the
training model takes arrays of parameters). Cross-validation solves all its folds in
the same passes, split over a process pool. Blank layout cells are chosen by the
search with the current parameters; the fit then runs again on those layouts (two
rounds). Nothing is tuned per row or per source.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime as dt
import os
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import yaml

from ..model.efficiency import (
    MEMORY_CEILING,
    Calibration,
    FamilyEfficiency,
    gemm_ceiling,
)
from ..errors import FlopcastError
from ..model.system import Dtype
from . import lockstep
from . import training as vt

# (prior, lower, upper, prior width in log space); priors are typical published kernel efficiencies:
# cuBLAS large-GEMM ~0.7-0.85 of dense peak (NVIDIA Deep Learning Performance guide), FP8 lower,
# FlashAttention-2 forward ~0.5-0.7 of peak on A100 (Dao 2023), STREAM-like ~0.8-0.9 of HBM peak.
FAMILY_PRIOR = {
    "gemm": (0.75, 0.2, 1.0, 0.3),
    "gemm_fp8": (0.55, 0.15, 1.0, 0.3),
    "attention": (0.5, 0.1, 1.0, 0.5),
    "memory": (0.8, 0.2, MEMORY_CEILING, 0.3),
}
# A family whose kernels were benchmarked takes that fraction of its peak as its prior: FlashAttention-2
# forward + backward reaches 50-73% of A100's peak (the generic 0.5 above) but only up to 335 TFLOP/s on
# H100, 0.34 of its 989 TFLOP/s, the same kernels not using Hopper's new instructions (Dao 2023,
# arXiv:2307.08691, sec. 4.1 and Fig. 7). Without it the H100 attention efficiency is identified by the
# long-sequence runs alone and falls back toward 0.5 when they are left out.
# The large-GEMM priors (BF16 and FP8) of a family whose chips have a measured maximum achievable matmul
# throughput (chip field `mamf`: best shape of a brute-force search, Bekman's MAMF table) are the mean fraction
# of peak those chips reached, not the generic values above (catalog.family_mamf).
FAMILY_PRIOR_OVERRIDE = {
    ("nvidia-hopper", "attention"): 0.34,
}
GLOBAL_PRIOR = {
    "scaleup_efficiency": (0.8, 0.2, 1.0, 0.3),  # NCCL bus bandwidth ~75-85% of NVLink peak (nccl-tests)
    "scaleout_efficiency": (0.7, 0.1, 1.0, 0.4),
    "tp_overlap": (0.2, 0.0, 0.95, 0.5),
    "comm_overlap": (0.8, 0.0, 1.0, 0.5),
    "zero3_overlap": (0.5, 0.0, 1.0, 0.7),  # FSDP prefetches one unit ahead (Zhao et al. 2023, sec. 3.3.2)
    # grouped expert GEMMs relative to dense ones of the same shape (tile quantisation of small expert batches is
    # modelled apart): MegaBlocks' block-sparse expert kernels reach 98.6% of cuBLAS throughput on average,
    # 91-104% over its benchmarks (Gale et al. 2023, MLSys, arXiv:2211.15841)
    "grouped_gemm": (0.95, 0.1, 1.0, 0.4),
    "op_overhead_s": (4e-6, 1e-7, 2e-5, 1.0),  # kernel launch ~2-10 us
    "moe_host_op_s": (3e-5, 1e-6, 2e-4, 1.0),  # eager PyTorch operator dispatch ~10-50 us on the host
    # unfused casts, transposes (FP8), bias/dropout and softmax passes beyond the minimal norm/residual/activation count
    "elementwise_traffic": (1.5, 0.5, 6.0, 0.7),
    "step_overhead_s": (0.05, 1e-4, 2.0, 1.5),
}
# candidates evaluated per pass of the one-problem fit (lockstep.solve): a row's evaluation costs little more for
# four times its columns, and most of the fit's passes are rejected steps (the shipped rows: 18 of 29)
SPECULATE = 4
# the fit's process pool only from this many CPUs: on 2 (the shipped rows, load ~6) two processes took 25.7 s of
# CPU and 53 s of wall clock, one 22.4 s and 39 s (each pass pickles every row to the workers)
POOL_MIN_CPUS = 4
PRIOR_WEIGHT = 0.15  # residual weight of a one-width deviation from the prior, vs ~0.1 log-error of a row


@dataclass(frozen=True)
class _Param:
    name: str
    family: str | None
    prior: float
    lo: float
    hi: float
    width: float


def _prior(family: str, key: str) -> float:
    if (family, key) in FAMILY_PRIOR_OVERRIDE:
        return FAMILY_PRIOR_OVERRIDE[(family, key)]
    if key in ("gemm", "gemm_fp8"):
        from .. import catalog

        measured = catalog.family_mamf(family, Dtype.FP8 if key == "gemm_fp8" else Dtype.BF16)
        if measured is not None:
            return measured
    return FAMILY_PRIOR[key][0]


def _ceiling(family: str, key: str, hi: float) -> float:
    """A family parameter's upper bound: for GEMMs the largest measured MAMF fraction among the family's
    catalogued chips (no chip is lent more than its ceiling anyway: efficiency.bounded), else hi."""
    if key not in ("gemm", "gemm_fp8", "attention"):
        return hi
    from .. import catalog

    ceilings = [gemm_ceiling(catalog.load_chip(cid), key) for cid, d in catalog.raw("chip").items()
                if d.get("family", cid) == family and d.get("mamf")]
    ceilings = [c for c in ceilings if c]
    return min(hi, max(ceilings)) if ceilings else hi


def _parameters(cases: list[vt.Case]) -> list[_Param]:
    fams = sorted({c.system.chip.family for c in cases})
    fp8 = {c.system.chip.family for c in cases if Dtype.FP8 in (c.space.dtype or ())
           and c.system.chip.peak_flops.get(Dtype.FP8, 0) > c.system.chip.peak_flops.get(Dtype.BF16, 0)}
    out = []
    for f in fams:
        for k, (_, lo, hi, w) in FAMILY_PRIOR.items():
            if k == "gemm_fp8" and f not in fp8:
                continue
            top = _ceiling(f, k, hi)
            out.append(_Param(k, f, min(_prior(f, k), top), lo, top, w))
    for k, (p, lo, hi, w) in GLOBAL_PRIOR.items():
        out.append(_Param(k, None, p, lo, hi, w))
    return out


def _calibration(params: list[_Param], x: np.ndarray, base: Calibration | None = None) -> Calibration:
    fam_vals: dict[str, dict] = {}
    glob = {}
    for p, v in zip(params, x):
        if p.family:
            fam_vals.setdefault(p.family, {})[p.name] = float(v)
        else:
            glob[p.name] = float(v)
    # a family without FP8 runs takes the FP8/BF16 efficiency ratio that the families with FP8 runs were
    # fitted to (the same transfer as an unmeasured chip taking its family's efficiencies); the prior ratio
    # only when no family has FP8 runs
    ratios = [v["gemm_fp8"] / v["gemm"] for v in fam_vals.values() if "gemm_fp8" in v]
    fp8_ratio = float(np.mean(ratios)) if ratios else FAMILY_PRIOR["gemm_fp8"][0] / FAMILY_PRIOR["gemm"][0]
    fams = {}
    for f, vals in fam_vals.items():
        if "gemm_fp8" not in vals:
            vals["gemm_fp8"] = vals["gemm"] * fp8_ratio
        vals["attention"] = min(vals["attention"], vals["gemm"])  # what efficiency.bounded lets a chip use
        fams[f] = FamilyEfficiency(**vals)
    from .. import catalog

    return catalog.with_mamf_transfer(Calibration(families=fams, **glob))


def _calibration_columns(params: list[_Param], theta: np.ndarray, active: np.ndarray) -> Calibration:
    """A Calibration whose every parameter is an array with one value per column of theta (P, K).

    active (P, K): whether a column's fit frees the parameter; a family without an active FP8 parameter takes
    the mean FP8/BF16 ratio of the active ones in the same column, as _calibration does for one point."""
    index = {(p.family, p.name): j for j, p in enumerate(params)}
    ratio_sum = np.zeros(theta.shape[1])
    count = np.zeros(theta.shape[1])
    for j, p in enumerate(params):
        if p.name == "gemm_fp8":
            ratio_sum += np.where(active[j], theta[j] / theta[index[(p.family, "gemm")]], 0.0)
            count += active[j]
    prior_ratio = FAMILY_PRIOR["gemm_fp8"][0] / FAMILY_PRIOR["gemm"][0]
    ratio = np.where(count > 0, ratio_sum / np.maximum(count, 1.0), prior_ratio)
    fams, glob = {}, {}
    for f in {p.family for p in params if p.family}:
        vals = {k: theta[index[(f, k)]] for k in ("gemm", "attention", "memory")}
        j = index.get((f, "gemm_fp8"))
        vals["gemm_fp8"] = vals["gemm"] * ratio if j is None else np.where(active[j], theta[j], vals["gemm"] * ratio)
        fams[f] = FamilyEfficiency(**vals)
    for j, p in enumerate(params):
        if not p.family:
            glob[p.name] = theta[j]
    return Calibration(families=fams, **glob)


def _log_ratio_columns(params, cases, layouts, theta, active) -> np.ndarray:
    """log(predicted / measured) tokens/s/chip of every row (N) at every parameter column (K).

    The rows of one model on one system (and software) are evaluated together, one batch of their layouts x K
    columns: evaluate is elementwise over a batch (dedupe=False), so the numbers are a row's own, with fewer
    calls."""
    k = theta.shape[1]
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(cases):
        groups.setdefault(repr((c.model, c.system, c.software)), []).append(i)
    cals: dict[int, Calibration] = {}
    out = np.empty((len(cases), k))
    for rows in groups.values():
        n = len(rows)
        if n not in cals:
            cals[n] = _calibration_columns(params, np.tile(theta, (1, n)), np.tile(active, (1, n)))
        pred = vt.predict_rows([cases[i] for i in rows], [layouts[i] for i in rows], cals[n], k)
        out[rows] = np.log(np.maximum(pred, 1e-9) / np.array([cases[i].measured for i in rows])[:, None])
    return out


def _problem(params: list[_Param], fold_params: list[_Param], rows, start: np.ndarray | None = None):
    """The lockstep problem of fitting fold_params (a subset of params) on the residual rows `rows`."""
    keys = {(p.family, p.name) for p in fold_params}
    free = np.array([j for j, p in enumerate(params) if (p.family, p.name) in keys], dtype=int)
    prior = np.log([p.prior for p in params])
    return lockstep.Problem(
        rows=np.asarray(rows, dtype=int), free=free, u0=prior.copy() if start is None else start,
        prior=prior, prior_scale=np.array([PRIOR_WEIGHT / p.width for p in params]),
        lo=np.log([max(p.lo, 1e-9) for p in params]), hi=np.log([p.hi for p in params]))


def _chunk_residuals(args) -> np.ndarray:
    """One worker's rows of _log_ratio_columns (top-level, so a process pool can run it)."""
    return _log_ratio_columns(*args)


@contextlib.contextmanager
def _row_evaluator(params, cases, layouts, workers: int | None):
    """A function (theta, active) -> log-ratio residuals (N, K) that spreads the rows over a process pool:
    every pass of the solver evaluates all rows, so splitting the rows (not the folds) divides each pass."""
    n = max(1, min(workers or os.cpu_count() or 1, len(cases)))
    if n == 1:
        yield lambda theta, active: _log_ratio_columns(params, cases, layouts, theta, active)
        return
    chunks = [np.arange(i, len(cases), n) for i in range(n)]  # interleaved: rows of one source spread out
    with concurrent.futures.ProcessPoolExecutor(max_workers=n) as pool:
        def run(theta, active):
            jobs = [(params, [cases[i] for i in ch], [layouts[i] for i in ch], theta, active) for ch in chunks]
            out = np.empty((len(cases), theta.shape[1]))
            for ch, part in zip(chunks, pool.map(_chunk_residuals, jobs)):
                out[ch] = part
            return out
        yield run


def _solve(params, problems, cases, layouts, progress=None, workers: int | None = None,
           speculate: int = 1) -> list[lockstep.Solution]:
    """Solve the problems together: each pass evaluates every row once for all their columns (and, speculate > 1,
    the candidates of the next rejections: lockstep.solve)."""
    freed = np.zeros((len(problems), len(params)), dtype=bool)
    for i, p in enumerate(problems):
        freed[i, p.free] = True
    with _row_evaluator(params, cases, layouts, workers) as evaluate:
        return lockstep.solve(problems, lambda theta, owners: evaluate(theta, freed[owners].T), progress, speculate)


def fit_workers(workers: int | None) -> int:
    """The processes fit() runs on: `workers`, or by default the CPUs where there are at least POOL_MIN_CPUS,
    else one (this process)."""
    from ..sweep import executors

    return workers or (executors.default_workers() if executors.default_workers() >= POOL_MIN_CPUS else 1)


def fit(cases: list[vt.Case], rounds: int = 2, progress=None, workers: int | None = None) -> tuple[Calibration, dict]:
    """Fit the parameters on cases with a measurement (on fit_workers(workers) processes). Returns (calibration,
    fit info)."""
    cases = [c for c in cases if c.measured]
    if not cases:
        raise FlopcastError("no rows with a measured figure to fit on")
    params = _parameters(cases)
    x = np.array([p.prior for p in params])
    cal = _calibration(params, x)
    used: list[vt.Case] = []
    workers = fit_workers(workers)
    for _ in range(rounds):
        used, layouts = _layouts(cases, cal, workers)
        if not used:  # every row's layout invalid or not fitting: a fit of nothing has no error to report (nan)
            raise FlopcastError(f"none of the {len(cases):,} rows with a measured figure has a layout that runs on its "
                                "hardware (`flopcast validate FILE` names each row's reason); nothing to fit on")
        sol = _solve(params, [_problem(params, params, range(len(used)), np.log(x))], used, layouts, workers=workers,
                     speculate=SPECULATE)[0]
        x = np.exp(sol.u)
        cal = _calibration(params, x)
        if progress:
            progress(1)
    info = {"rows_used": [c.run_id for c in used], "n_rows": len(used),
            "fit_mape_pct": float(np.mean(np.abs(np.expm1(sol.row_residuals))) * 100)}
    return cal, info


def parallel_map(fn, items, workers: int | None = None) -> list:
    """[fn(x) for x in items] on the sweep's local executor (a process pool of `workers`, the CPU count by
    default; 1: here), in the items' order; a task's error is raised here, as the serial loop would."""
    from ..sweep import executors

    items = list(items)
    n = max(1, min(workers or executors.default_workers(), len(items) or 1))
    out: list = [None] * len(items)
    for o in executors.run(items, fn, workers=n, batch=max(1, len(items) // (4 * n))):
        if not o.ok:
            raise FlopcastError(o.error)
        out[o.index] = o.value
    return out


def _search(args):
    case, cal = args
    return vt.best_layout(case, cal)[0]


def _layouts(cases, cal, workers: int | None = None) -> tuple[list[vt.Case], list]:
    """The cases whose search found a layout with calibration cal, and those layouts."""
    found = parallel_map(_search, [(c, cal) for c in cases], workers)
    used = [(c, lay) for c, lay in zip(cases, found) if lay is not None]
    return [c for c, _ in used], [lay for _, lay in used]


def provenance(path, cases, info) -> dict:
    per_chip, per_family = {}, {}
    used = set(info["rows_used"])
    for c in cases:
        if c.run_id in used:
            per_chip[c.system.chip.id] = per_chip.get(c.system.chip.id, 0) + 1
            per_family.setdefault(c.system.chip.family, set()).add(c.system.chip.id)
    return {
        "data_file": " + ".join(Path(p).name for p in (path if isinstance(path, (list, tuple)) else [path])),
        "rows": info["rows_used"],
        "n_rows": info["n_rows"],
        "date": dt.date.today().isoformat(),
        "fit_mape_pct": round(info["fit_mape_pct"], 2),
        "method": "MAP least squares on log(predicted/measured) tokens/s/chip with weak priors (validate/calibrate.py)",
        "rows_per_chip": per_chip,
        "chips_per_family": {k: sorted(v) for k, v in per_family.items()},
    }


def calibration_dict(cal: Calibration, prov: dict) -> dict:
    glob = {f.name: getattr(cal, f.name) for f in fields(Calibration)
            if f.name not in ("families", "provenance", "mamf_transfer", "mamf_family")}
    return {
        "provenance": prov,
        "families": {k: {f.name: round(getattr(v, f.name), 4) for f in fields(FamilyEfficiency)}
                     for k, v in cal.families.items()},
        "global": {k: float(f"{v:.4g}") for k, v in glob.items()},
    }


def write(cal: Calibration, prov: dict, out: Path) -> None:
    header = ("# Written by `flopcast calibrate` -- do not edit by hand.\n"
              "# Efficiency parameters fitted on the measured runs named under provenance.\n")
    out.write_text(header + yaml.safe_dump(calibration_dict(cal, prov), sort_keys=False))


def fold_fits(cases: list[vt.Case], workers: int | None = None) -> dict:
    """Leave-one-source-out fits, all solved together: {source: (calibration, info)}.

    Each fold fits the parameters its training rows identify (_parameters of those rows), starting from the
    priors, on the layouts the search picks with the prior parameters (one round, as in fit(rounds=1));
    those layouts do not depend on the data, so they are searched once for all folds."""
    cases = [c for c in cases if c.measured]
    params = _parameters(cases)
    workers = fit_workers(workers)
    used, layouts = _layouts(cases, _calibration(params, np.array([p.prior for p in params])), workers)
    sources = sorted({c.source for c in cases})
    problems, fold_params = [], []
    for src in sources:
        train = [i for i, c in enumerate(used) if c.source != src]
        fold_params.append(_parameters([used[i] for i in train]) if train else [])
        problems.append(_problem(params, fold_params[-1], train))
    sols = _solve(params, problems, used, layouts, workers=workers, speculate=SPECULATE)
    out = {}
    for src, fp, prob, sol in zip(sources, fold_params, problems, sols):
        cal = _calibration(fp, np.exp(sol.u[prob.free])) if fp else Calibration()
        rows = [used[i].run_id for i in prob.rows]
        out[src] = (cal, {"rows_used": rows, "n_rows": len(rows),
                          "fit_mape_pct": float(np.mean(np.abs(np.expm1(sol.row_residuals))) * 100) if rows else None})
    return out


def _held_out(args) -> vt.RowResult:
    """One row predicted by the fold that left its source out."""
    c, cal = args
    lay, why = vt.best_layout(c, cal)
    if lay is None:
        return vt.RowResult(c.run_id, c.source, c.model.name, c.system.chip.id, c.chips, "skipped", why,
                            measured=c.measured)
    return vt.RowResult(c.run_id, c.source, c.model.name, c.system.chip.id, c.chips, "ok", why, lay.as_dict(),
                        c.chosen, vt.predict(c, lay, cal), c.measured, "moe" if c.model.moe else "dense", c.assumed)


def cross_validate(path, progress=None, workers: int | None = None) -> dict:
    """Leave-one-source-out: refit without each source, predict it. The honest error on unseen runs."""
    cases, skipped = vt.load_cases(path)
    cases = [c for c in cases if c.measured]
    workers = fit_workers(workers)
    fits = fold_fits(cases, workers)
    folds = {src: {k: v for k, v in calibration_dict(cal, {}).items() if k != "provenance"}
             for src, (cal, _) in fits.items()}
    rows = parallel_map(_held_out, [(c, fits[c.source][0]) for c in cases], workers)
    if progress:
        progress(len(fits))
    rows.extend(vt.skipped_rows(skipped))
    # the parameters each fold fitted: a parameter that moves far when one source is left out is identified
    # by that source alone (a missing structural term, or one parameter standing for two effects)
    return {"rows": rows, "summary": vt.summarize(rows), "folds": folds}
