"""Fit flopcast's few efficiency parameters on published runs, and cross-validate by source.

The fit is a maximum-a-posteriori least squares on log(predicted / measured)
tokens per second per chip (scipy.optimize.least_squares, trust-region reflective),
with a weak Gaussian prior pulling each parameter toward a physically typical value
so that parameters the data barely constrain stay sensible. Blank layout cells are
chosen by the search with the current parameters; the fit then runs again on those
layouts (two rounds). Nothing is tuned per row or per source.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import yaml

from ..cost.efficiency import Calibration, FamilyEfficiency
from ..errors import FlopcastError
from ..model.system import Dtype
from . import training as vt

# (prior, lower, upper, prior width in log space); priors are typical published kernel efficiencies:
# cuBLAS large-GEMM ~0.7-0.85 of dense peak (NVIDIA Deep Learning Performance guide), FP8 lower,
# FlashAttention-2 forward ~0.5-0.7 of peak on A100 (Dao 2023), STREAM-like ~0.8-0.9 of HBM peak.
FAMILY_PRIOR = {
    "gemm": (0.75, 0.2, 1.0, 0.3),
    "gemm_fp8": (0.55, 0.15, 1.0, 0.3),
    "attention": (0.5, 0.1, 1.0, 0.5),
    "memory": (0.8, 0.2, 1.0, 0.3),
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


def _parameters(cases: list[vt.Case]) -> list[_Param]:
    fams = sorted({c.system.chip.family for c in cases})
    fp8 = {c.system.chip.family for c in cases if Dtype.FP8 in (c.space.dtype or ())
           and c.system.chip.peak_flops.get(Dtype.FP8, 0) > c.system.chip.peak_flops.get(Dtype.BF16, 0)}
    out = []
    for f in fams:
        for k, (p, lo, hi, w) in FAMILY_PRIOR.items():
            if k == "gemm_fp8" and f not in fp8:
                continue
            out.append(_Param(k, f, _prior(f, k), lo, hi, w))
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
        fams[f] = FamilyEfficiency(**vals)
    from .. import catalog

    return catalog.with_mamf_transfer(Calibration(families=fams, **glob))


def _residuals(x, params, cases, layouts):
    cal = _calibration(params, x)
    res = []
    for c, lay in zip(cases, layouts):
        pred = vt.predict(c, lay, cal)
        res.append(np.log(max(pred, 1e-9) / c.measured))
    prior = [PRIOR_WEIGHT * (np.log(v) - np.log(p.prior)) / p.width for p, v in zip(params, x)]
    return np.array(res + prior)


def fit(cases: list[vt.Case], rounds: int = 2, progress=None) -> tuple[Calibration, dict]:
    """Fit the parameters on cases with a measurement. Returns (calibration, fit info)."""
    try:
        from scipy.optimize import least_squares
    except ImportError:
        raise FlopcastError("calibrate needs scipy: pip install 'flopcast[calibrate]'") from None
    cases = [c for c in cases if c.measured]
    if not cases:
        raise FlopcastError("no rows with a measured figure to fit on")
    params = _parameters(cases)
    x = np.array([p.prior for p in params])
    lo = np.array([p.lo for p in params])
    hi = np.array([p.hi for p in params])
    cal = _calibration(params, x)
    used: list[vt.Case] = []
    for _ in range(rounds):
        layouts, used = [], []
        for c in cases:
            lay, _ = vt.best_layout(c, cal)
            if lay is not None:
                layouts.append(lay)
                used.append(c)
        sol = least_squares(_residuals, x, bounds=(lo, hi), args=(params, used, layouts), x_scale="jac",
                            diff_step=1e-3, max_nfev=60 * len(params))
        x = sol.x
        cal = _calibration(params, x)
        if progress:
            progress(1)
    resid = sol.fun[: len(used)]
    info = {"rows_used": [c.run_id for c in used], "n_rows": len(used),
            "fit_mape_pct": float(np.mean(np.abs(np.expm1(resid))) * 100)}
    return cal, info


def provenance(path, cases, info) -> dict:
    per_chip, per_family = {}, {}
    used = set(info["rows_used"])
    for c in cases:
        if c.run_id in used:
            per_chip[c.system.chip.id] = per_chip.get(c.system.chip.id, 0) + 1
            per_family.setdefault(c.system.chip.family, set()).add(c.system.chip.id)
    return {
        "data_file": Path(path).name,
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
            if f.name not in ("families", "provenance", "mamf_transfer")}
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


def cross_validate(path, progress=None) -> dict:
    """Leave-one-source-out: refit without each source, predict it. The honest error on unseen runs."""
    cases, skipped = vt.load_cases(path)
    cases = [c for c in cases if c.measured]
    rows, folds = [], {}
    for src in sorted({c.source for c in cases}):
        train_cases = [c for c in cases if c.source != src]
        cal, _ = fit(train_cases, rounds=1)
        folds[src] = {k: v for k, v in calibration_dict(cal, {}).items() if k != "provenance"}
        for c in (c for c in cases if c.source == src):
            lay, why = vt.best_layout(c, cal)
            if lay is None:
                rows.append(vt.RowResult(c.run_id, c.source, c.model.name, c.system.chip.id, c.chips, "skipped", why,
                                         measured=c.measured))
                continue
            rows.append(vt.RowResult(c.run_id, c.source, c.model.name, c.system.chip.id, c.chips, "ok", why,
                                     lay.as_dict(), c.chosen, vt.predict(c, lay, cal), c.measured))
        if progress:
            progress(1)
    # the parameters each fold fitted: a parameter that moves far when one source is left out is identified
    # by that source alone (a missing structural term, or one parameter standing for two effects)
    return {"rows": rows, "summary": vt.summarize(rows), "folds": folds}
