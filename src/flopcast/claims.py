"""AWS's Trainium2 / Graviton4 announcement claims, tested with flopcast's own models.

The announcement (AWS press release of 2023-11-28, source AWS_TRN2_2023; the figures as
reported by GEEKTOPIA_2023 and WIKICHIP_G4): Trainium2 gives ~4x the training performance
of Trainium1, 2x the performance per watt and 3x the memory (96 GB); 16-chip Trn2
instances scale to EC2 UltraClusters of 100,000 chips, 65 exaflops; a 300-billion-parameter
model trains "in weeks instead of months". Graviton4 is 30% faster than Graviton3, with 50%
more cores and 75% more memory bandwidth.

Each claim becomes a `ClaimRow`: the claim as announced, flopcast's estimate, the
assumptions and sources behind it, a verdict and why. Every estimate comes from a catalog
entry (entry and field named), a formula (written out), or a flopcast prediction (model,
system, chips and layout named); announced figures appear only as the claim.

Verdict rules (VERDICT_RULES, also printed under the table):
- a claimed quantity or ratio: estimate within +-15% of the claimed value -> consistent;
  the claim above that band -> optimistic; below it -> pessimistic (`verdict`);
- "weeks instead of months": `weeks_verdict` (threshold WEEKS_THRESHOLD_DAYS);
- a figure flopcast cannot compute (a catalog field is missing) -> cannot tell.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from . import catalog
from .cost import inference as inf
from .cost.params import total_params
from .errors import FlopcastError
from .model.strategy import Recompute
from .model.system import Dtype, System
from .plan import forecast
from .plan import search as search_mod
from .units import DAY, GiB

VERDICTS = ("consistent", "optimistic", "pessimistic", "cannot tell")
TOLERANCE = 0.15  # +-15% of the claimed value counts as consistent
WEEKS_THRESHOLD_DAYS = 56.0  # "weeks": under 8 weeks; "months": 8 weeks or more

VERDICT_RULES = (
    f"quantities and ratios: flopcast's estimate within +-{TOLERANCE:.0%} of the claimed value -> consistent; "
    "claim above that band -> optimistic; claim below it -> pessimistic",
    f"'weeks instead of months': weeks = expected time-to-train (with failures) under {WEEKS_THRESHOLD_DAYS:.0f} days "
    "(8 weeks), months = that or more; consistent if at some swept cluster size Trainium2 takes weeks while "
    "Trainium1 takes months (or does not fit); optimistic if Trainium2 takes months at every swept size; cannot tell if Trainium1 "
    "also takes weeks wherever Trainium2 does (the announcement names no baseline)",
    "a figure flopcast cannot compute (a catalog field is missing) -> cannot tell, naming what is missing",
)

ANNOUNCEMENT = "AWS_TRN2_2023"  # press release, 2023-11-28 (model_sources.yaml)
TRN2, TRN1 = "trn2.48xlarge", "trn1.32xlarge"
ULTRACLUSTER = "trn2-ultracluster"
GPT300B = "gpt-300b"
# Weak scaling: 0.5 sequences (1,024 tokens at seq 2048) per chip, the Llama 3 ratio of a
# 16M-token batch on 16,384 GPUs (Dubey et al. 2024, arXiv:2407.21783, sec. 3.4.1).
WEAK_SEQS_PER_CHIP = 0.5


# ----------------------------------------------------------------------------- verdict rules


def verdict(claimed: float | None, estimate: float | None, tolerance: float = TOLERANCE) -> str:
    """Rule 1: |estimate - claimed| <= tolerance x |claimed| -> consistent; claim higher -> optimistic;
    claim lower -> pessimistic; a missing or non-finite number -> cannot tell."""
    if claimed is None or estimate is None or not (math.isfinite(claimed) and math.isfinite(estimate)):
        return "cannot tell"
    if abs(estimate - claimed) <= tolerance * abs(claimed):
        return "consistent"
    return "optimistic" if claimed > estimate else "pessimistic"


def weeks_verdict(points: list[dict], threshold_days: float = WEEKS_THRESHOLD_DAYS) -> str:
    """Rule 2. points: one per cluster size, {"trn2_days": d2, "trn1_days": d1} (None where it does not fit)."""
    weeks2 = [p for p in points if p.get("trn2_days") is not None and p["trn2_days"] < threshold_days]
    if not weeks2:
        return "optimistic" if any(p.get("trn2_days") is not None for p in points) else "cannot tell"
    if any(p.get("trn1_days") is None or p["trn1_days"] >= threshold_days for p in weeks2):
        return "consistent"
    return "cannot tell"


# ----------------------------------------------------------------------------- result types


@dataclass(frozen=True)
class ClaimRow:
    id: str
    claim: str  # as announced
    claimed: float | None  # the announced figure, in `unit`
    estimate: float | None  # flopcast's, in `unit`
    unit: str
    assumptions: tuple
    sources: tuple
    verdict: str
    why: str
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"id": self.id, "claim": self.claim, "claimed": self.claimed, "estimate": self.estimate,
                "unit": self.unit, "assumptions": list(self.assumptions), "sources": list(self.sources),
                "verdict": self.verdict, "why": self.why, "details": self.details}


@dataclass(frozen=True)
class ClaimsResult:
    """All rows, plus the series a plot needs (see `series`), the rules and the run's settings.

    series keys: "scaling" {"weak": [...], "strong": [...]} points with chips, tokens_per_s,
    tokens_per_s_per_chip, mfu, fits; "time_to_train" {"trainium2": [...], "trainium1": [...],
    "threshold_days"} points with chips, expected_days, ideal_days; "trn2_vs_trn1" points with
    model, params_b, ratio; "graviton_speedups" points with model, weights, batch, phase,
    basis, speedup, bound."""

    rows: tuple
    series: dict
    quick: bool
    elapsed_s: float
    rules: tuple = VERDICT_RULES

    def row(self, claim_id: str) -> ClaimRow:
        for r in self.rows:
            if r.id == claim_id:
                return r
        raise FlopcastError(f"no claim {claim_id!r}; valid: {', '.join(r.id for r in self.rows)}")

    def to_dict(self) -> dict:
        return {"claims": [r.to_dict() for r in self.rows], "series": self.series,
                "verdict_rules": list(self.rules), "quick": self.quick, "elapsed_s": self.elapsed_s}


# ----------------------------------------------------------------------------- helpers


def _src(entry_id: str, fld: str, obj) -> str:
    """'catalog ENTRY.FIELD [SOURCE]' for a chip or system field (per-field override, else the entry's source)."""
    sources = getattr(obj, "sources", {}) or {}
    return f"catalog {entry_id}.{fld} [{sources.get(fld) or sources.get('*')}]"


def _tier_of(system: System, n: int, stride: int) -> str:
    """The fabric tier a group of n ranks `stride` apart stays within: the innermost tier of
    size >= n x stride (cost/comm.py `_members`); 'none' for a group of one."""
    if n <= 1:
        return "none"
    return next((t.name for t in system.tiers if t.size >= n * stride), system.tiers[-1].name)


def fabric_tiers(system: System, layout) -> dict:
    """Tier each parallel group crosses. Rank order tp, cp, dp, pp (model/strategy.py); a
    pipeline send goes to the rank tp x cp x dp away, inside the innermost tier larger than that."""
    out = {"tp": _tier_of(system, layout.tp, 1), "cp": _tier_of(system, layout.cp, layout.tp),
           "dp": _tier_of(system, layout.dp, layout.tp * layout.cp)}
    stride = layout.tp * layout.cp * layout.dp
    out["pp"] = "none" if layout.pp <= 1 else next((t.name for t in system.tiers if t.size > stride),
                                                     system.tiers[-1].name)
    return out


def _point(r) -> dict:
    """A training result as a plot/table point with unit-suffixed keys."""
    return {"chips": r.chips, "chips_used": r.chips_used, "fits": bool(r.fits),
            "tokens_per_s": r.tokens_per_s, "tokens_per_s_per_chip": r.tokens_per_s_per_chip,
            "model_tflops_per_chip": r.model_tflops_per_chip, "mfu": r.mfu,
            "global_batch_seqs": r.layout.global_batch, "layout": r.layout.describe(),
            "fabric_tiers": fabric_tiers(r.system, r.layout)}


def _geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return float(np.exp(np.mean(np.log(xs)))) if xs else None


def _dense_models() -> list:
    """Dense catalog models, smallest first."""
    out = [catalog.load_model(n) for n in catalog.names("model")]
    return sorted((m for m in out if m.moe is None), key=total_params)


class _Runs:
    """One claims run: a cache of training predictions (claims share configurations) and progress."""

    def __init__(self, quick: bool, progress=None):
        self.quick = quick
        self.progress = progress or (lambda msg: None)
        self._cache = {}

    def train(self, model: str, hardware: str, chips: int, **layout):
        key = (model, hardware, chips, tuple(sorted(layout.items())))
        if key not in self._cache:
            self._cache[key] = forecast.train(model, hardware, chips, **layout)
        return self._cache[key]


def _fmt_layout(r) -> str:
    return f"{r.model.id} on {r.chips:,} x {r.system.chip.id} ({r.system.id}), layout {r.layout.describe()}"


# ----------------------------------------------------------------------------- claims 1a, 1b


def claim_peak(runs: _Runs) -> ClaimRow:
    chip = catalog.load_chip("trainium2")
    chips, claimed_ef = 100_000, 65.0
    per_chip = claimed_ef * 1e18 / chips  # 650 TFLOP/s
    peaks = {d.label: p for d, p in chip.peak_flops.items() if p}
    close = {k: p for k, p in peaks.items() if abs(p - per_chip) <= TOLERANCE * per_chip}
    prefer = ("bf16", "fp16", "tf32", "fp8", "fp32", "int8")  # ties (equal peaks) go to the training dtype
    best = min(close, key=lambda k: (abs(peaks[k] - per_chip), prefer.index(k) if k in prefer else 99)) if close else None
    est = None if best is None else chips * peaks[best] / 1e18
    same = sorted(k for k in close if peaks[k] == peaks.get(best))
    v = verdict(claimed_ef, est)
    why = (f"65 EFLOP/s / 100,000 chips = 650 TFLOP/s per chip, which is the dense {'/'.join(same)} peak "
           f"({peaks[best] / 1e12:.0f} TFLOP/s, {100 * (per_chip / peaks[best] - 1):+.1f}%), not FP8 "
           f"({peaks.get('fp8', 0) / 1e12:.0f} TFLOP/s dense) and not a sparse rate.") if best else \
        "no dense peak in the catalog's trainium2 entry lies within 15% of 650 TFLOP/s."
    return ClaimRow(
        "1a", "100,000 Trainium2 chips in an EC2 UltraCluster give 65 exaflops (~650 TFLOP/s per chip)",
        claimed_ef, est, "EFLOP/s",
        (f"estimate = 100,000 chips x catalog trainium2.peak_flops.{best} (dense peak)",
         "the catalog holds dense peaks only (chips.yaml: 'peak_flops are dense'); a structured-sparse rate is not "
         "in the entry, so a sparse reading of 65 EF cannot be checked from it"),
        tuple(_src("trainium2", f"peak_flops.{k}", chip) for k in sorted(peaks)) + (f"announcement [{ANNOUNCEMENT}]",),
        v, why,
        {"claimed_per_chip_tflops": per_chip / 1e12, "matching_dtype": best, "matching_dtypes": same,
         "peaks_tflops": {k: p / 1e12 for k, p in sorted(peaks.items())},
         "matching_peak_tflops": None if best is None else peaks[best] / 1e12,
         "claim_over_peak": None if best is None else per_chip / peaks[best],
         "fp8_dense_over_claim": peaks.get("fp8", 0) / per_chip, "density": "dense"},
    )


def claim_sustained(runs: _Runs) -> ClaimRow:
    chips = 100_000
    r = runs.train(GPT300B, ULTRACLUSTER, chips)
    sustained_ef = r.model_tflops_per_chip * 1e12 * r.chips / 1e18
    big = runs.train(GPT300B, ULTRACLUSTER, chips, global_batch=int(chips * WEAK_SEQS_PER_CHIP))
    v = verdict(65.0, sustained_ef)
    return ClaimRow(
        "1b", "65 exaflops as training throughput of 100,000 Trainium2 on the ~300B GPT",
        65.0, sustained_ef, "EFLOP/s",
        (f"prediction: {_fmt_layout(r)} (flopcast's best layout by throughput)",
         "model FLOPs per token 6N + 12LHQT (PaLM App. B); sustained EFLOP/s = model TFLOP/s per chip x chips",
         f"calibration: {r.calibration_basis}"),
        (f"catalog {GPT300B} [NARAYANAN2021]", _src(ULTRACLUSTER, "tiers", r.system),
         _src("trainium2", "peak_flops.bf16", r.system.chip), f"announcement [{ANNOUNCEMENT}]"),
        v,
        f"flopcast's best layout sustains {r.model_tflops_per_chip:.0f} TFLOP/s of model FLOPs per chip "
        f"(MFU {100 * r.mfu:.1f}%), {sustained_ef:.1f} EFLOP/s in total: 65 EF is a peak, not a training rate.",
        {"model_tflops_per_chip": r.model_tflops_per_chip, "mfu": r.mfu, "hfu": r.hfu,
         "tokens_per_s": r.tokens_per_s, "tokens_per_s_per_chip": r.tokens_per_s_per_chip,
         "sustained_eflops": sustained_ef, "chips": r.chips, "chips_used": r.chips_used,
         "layout": r.layout.describe(), "fabric_tiers": fabric_tiers(r.system, r.layout),
         "time_breakdown_s": r.time_breakdown_s, "calibration_basis": r.calibration_basis,
         "large_batch": {"global_batch_seqs": big.layout.global_batch, "fits": bool(big.fits),
                         "sustained_eflops": big.model_tflops_per_chip * 1e12 * big.chips / 1e18, "mfu": big.mfu,
                         "layout": big.layout.describe()}},
    )


# ----------------------------------------------------------------------------- claim 2


def _ratio_models(quick: bool) -> list[str]:
    if quick:
        return ["llama2-7b", GPT300B]
    return ["llama2-7b", "llama2-13b", "narayanan-gpt-18.4b", "mpt-30b", "narayanan-gpt-39.1b", "llama3-70b",
            "narayanan-gpt-76.1b", "narayanan-gpt-145.6b", "gpt3-175b", GPT300B]


def claim_4x(runs: _Runs, chips: int = 1024) -> ClaimRow:
    per_model, basis = [], ""
    for name in _ratio_models(runs.quick):
        r1, r2 = runs.train(name, TRN1, chips), runs.train(name, TRN2, chips)
        ok = r1.fits and r2.fits
        basis = r2.calibration_basis
        per_model.append({
            "model": name, "params_b": total_params(r2.model) / 1e9,
            "trn1_tokens_per_s_per_chip": r1.tokens_per_s_per_chip if r1.fits else None,
            "trn2_tokens_per_s_per_chip": r2.tokens_per_s_per_chip if r2.fits else None,
            "ratio": r2.tokens_per_s_per_chip / r1.tokens_per_s_per_chip if ok else None,
            "trn1_mfu": r1.mfu, "trn2_mfu": r2.mfu,
            "trn1_layout": r1.layout.describe(), "trn2_layout": r2.layout.describe()})
    ratios = [p["ratio"] for p in per_model if p["ratio"]]
    est = _geomean(ratios)
    c1, c2 = catalog.load_chip("trainium1"), catalog.load_chip("trainium2")
    peak_ratio = c2.peak(Dtype.BF16) / c1.peak(Dtype.BF16)
    bw_ratio = c2.memory_bandwidth / c1.memory_bandwidth
    fp8_ratio = c2.peak(Dtype.FP8) / c1.peak(Dtype.FP8)
    v = verdict(4.0, est)
    lo, hi = (min(ratios), max(ratios)) if ratios else (None, None)
    above = [p["model"] for p in per_model if p["ratio"] and p["ratio"] > peak_ratio * 1.03]
    why = (f"at {chips:,} chips flopcast predicts {lo:.2f}-{hi:.2f}x tokens/s per chip (geometric mean {est:.2f}x) in "
           f"BF16, near the BF16 peak ratio {peak_ratio:.2f}x" +
           (f" and above it for {', '.join(above)}, where Trainium1's 32 GiB forces more model parallelism"
            if above else "") + "." if est else "no model fits on both chips at this size.")
    return ClaimRow(
        "2", "Trainium2 gives up to 4x the training performance of Trainium1",
        4.0, est, "x (tokens/s per chip, Trn2 / Trn1)",
        (f"prediction: each model on {chips:,} chips of {TRN1} and of {TRN2}, each at its own best searched layout "
         "(BF16, global batch in flopcast's default range)",
         f"estimate = geometric mean over {len(ratios)} dense models "
         f"({', '.join(p['model'] for p in per_model)}); ratio = tokens/s per chip Trn2 / Trn1",
         f"Trainium2 calibration: {basis}",
         f"formula: peak ratio = trainium2.peak_flops.bf16 / trainium1.peak_flops.bf16 = {peak_ratio:.2f}; "
         f"HBM bandwidth ratio = {bw_ratio:.2f}; FP8 peak ratio = {fp8_ratio:.2f}"),
        (_src("trainium1", "peak_flops.bf16", c1), _src("trainium2", "peak_flops.bf16", c2),
         _src("trainium1", "memory_bandwidth", c1), _src("trainium2", "memory_bandwidth", c2),
         "catalog models (model_sources.yaml)", "calibration.yaml (trainium family)", f"announcement [{ANNOUNCEMENT}]"),
        v, why,
        {"chips": chips, "per_model": per_model, "ratio_min": lo, "ratio_max": hi, "ratio_geomean": est,
         "bf16_peak_ratio": peak_ratio, "fp8_peak_ratio": fp8_ratio, "hbm_bandwidth_ratio": bw_ratio,
         "calibration_basis_trn2": basis},
    )


# ----------------------------------------------------------------------------- claim 3


def _outcome(model_name: str, hardware: str, chips: int) -> dict:
    """Search counts for one case: valid, fitting, fitting without recomputation (plan/search.py)."""
    m, system = forecast.resolve_model(model_name), forecast.resolve_system(hardware)
    space = replace(forecast.layout_space(), ep=(1,))
    out = search_mod.search(m, system, chips, catalog.calibration(), space)
    fits = np.asarray(out.results["fits"]) if out.results else np.zeros(0, bool)
    no_rec = fits & (out.batch.recompute == int(Recompute.NONE)) if fits.size else fits
    best = out.batch.layout(int(out.order[0])) if out.n_fit else None
    return {"chips": chips, "candidates": out.considered, "valid": out.batch.size, "fit": out.n_fit,
            "fit_without_recompute": int(no_rec.sum()), "rejected": dict(out.rejected),
            "best_layout": best.describe() if best else None,
            "best_recompute": None if best is None else best.recompute.name.lower()}


def _largest_fitting(runs: _Runs, hardware: str, names: list) -> dict | None:
    """The largest model (by parameters) in `names` with a layout that fits on one 16-chip instance."""
    for m in sorted(names, key=lambda n: -total_params(catalog.load_model(n))):
        r = runs.train(m, hardware, 16)
        if r.fits:
            return {"model": m, "params_b": total_params(r.model) / 1e9, "memory_gib": r.memory_gib,
                    "layout": r.layout.describe()}
    return None


def claim_memory(runs: _Runs) -> ClaimRow:
    c1, c2 = catalog.load_chip("trainium1"), catalog.load_chip("trainium2")
    est = c2.memory / c1.memory
    names = (["llama2-7b", "llama2-13b", "narayanan-gpt-18.4b", "mpt-30b", "llama2-70b", "gpt3-175b", GPT300B]
             if runs.quick else [m.id for m in _dense_models()])
    largest = {"trainium1": _largest_fitting(runs, TRN1, names), "trainium2": _largest_fitting(runs, TRN2, names)}
    # smallest power-of-two cluster on which the ~300B GPT fits at all
    min_chips = {}
    for chip_id, hw in (("trainium1", TRN1), ("trainium2", TRN2)):
        min_chips[chip_id] = next((n for n in (16, 32, 64, 128, 256, 512, 1024)
                                   if runs.train(GPT300B, hw, n).fits), None)
    ref = min_chips["trainium1"] or 1024
    counts = {"trainium1": _outcome(GPT300B, TRN1, ref), "trainium2": _outcome(GPT300B, TRN2, ref)}
    v = verdict(3.0, est)
    l1, l2 = largest["trainium1"], largest["trainium2"]
    why = (f"the catalog gives {c2.memory / GiB:.0f} GiB vs {c1.memory / GiB:.0f} GiB ({est:.1f}x): one instance trains "
           f"{l2['model'] if l2 else 'none'} instead of {l1['model'] if l1 else 'none'}, gpt-300b needs "
           f"{min_chips['trainium2']} instead of {min_chips['trainium1']} chips, and at {ref} chips "
           f"{counts['trainium2']['fit']:,} vs {counts['trainium1']['fit']:,} layouts fit.")
    return ClaimRow(
        "3", "Trainium2 has 96 GB of HBM, 3x Trainium1",
        3.0, est, "x (HBM per chip, Trn2 / Trn1)",
        ("estimate = catalog trainium2.memory / trainium1.memory (both GiB; the announcement says GB)",
         f"largest model: dense catalog models ({len(names)}) searched on one 16-chip {TRN1} / {TRN2}; "
         "memory per chip on the busiest pipeline stage (Korthikanti et al. 2022) incl. the runtime reserve",
         f"layout counts: flopcast's search for {GPT300B} at {ref} chips (the smallest power of two where it fits "
         "on Trainium1), BF16"),
        (_src("trainium1", "memory", c1), _src("trainium2", "memory", c2), f"catalog {GPT300B} [NARAYANAN2021]",
         f"announcement [{ANNOUNCEMENT}]"),
        v, why,
        {"trn1_memory_gib": c1.memory / GiB, "trn2_memory_gib": c2.memory / GiB,
         "largest_model_one_instance": largest, "gpt300b_min_chips": min_chips,
         "layout_counts_chips": ref, "layout_counts": counts},
    )


# ----------------------------------------------------------------------------- claim 4


def claim_perf_per_watt(runs: _Runs, perf_ratio: float | None) -> ClaimRow:
    c1, c2 = catalog.load_chip("trainium1"), catalog.load_chip("trainium2")
    missing = [f"trainium{i}.power ({c.notes.get('power', 'not published')})"
               for i, c in ((1, c1), (2, c2)) if c.power is None]
    if missing:
        est, v = None, "cannot tell"
        why = "the catalog has no power for " + " and ".join(
            f"trainium{i}" for i, c in ((1, c1), (2, c2)) if c.power is None) + " (AWS publishes none), so flopcast cannot divide performance by watts."
    else:
        est = perf_ratio / (c2.power / c1.power) if perf_ratio else None
        v = verdict(2.0, est)
        why = f"performance ratio {perf_ratio:.2f}x over power ratio {c2.power / c1.power:.2f}x."
    needed = None if perf_ratio is None else perf_ratio / 2.0
    return ClaimRow(
        "4", "Trainium2 gives 2x the performance per watt of Trainium1",
        2.0, est, "x (tokens/s per W, Trn2 / Trn1)",
        ("formula: perf/W ratio = (tokens/s per chip ratio, claim 2) / (power_trn2 / power_trn1)",
         f"missing: {'; '.join(missing)}" if missing else "chip power from the catalog (TDP only)"),
        (_src("trainium1", "power", c1), _src("trainium2", "power", c2), f"announcement [{ANNOUNCEMENT}]"),
        v, why,
        {"missing_fields": [m.split(" (")[0] for m in missing], "perf_ratio": perf_ratio,
         "max_power_ratio_for_2x": needed,
         "note": None if needed is None else f"2x per watt holds iff power_trn2 / power_trn1 <= {needed:.2f}"},
    )


# ----------------------------------------------------------------------------- claim 5


def _sizes(quick: bool) -> list[int]:
    return [16, 256, 100_000] if quick else [16, 64, 256, 1024, 4096, 16384, 65536, 100_000]


def claim_scaling(runs: _Runs) -> tuple[ClaimRow, dict]:
    strong_gb = int(round(forecast.resolve_model(GPT300B).batch_tokens / forecast.resolve_model(GPT300B).seq_len))
    weak, strong = [], []
    for n in _sizes(runs.quick):
        gb = max(1, int(n * WEAK_SEQS_PER_CHIP))
        weak.append(_point(runs.train(GPT300B, ULTRACLUSTER, n, global_batch=gb)))
        strong.append(_point(runs.train(GPT300B, ULTRACLUSTER, n, global_batch=strong_gb)))
    # scaling efficiency = tokens/s per chip at a size / the best tokens/s per chip over the sweep's fitting sizes
    # (the smallest sizes that fit are memory-bound, so "vs the smallest" would flatter the large ones)
    for pts in (weak, strong):
        best = max((p["tokens_per_s_per_chip"] for p in pts if p["fits"]), default=None)
        for p in pts:
            p["efficiency"] = p["tokens_per_s_per_chip"] / best if best and p["fits"] else None
    top, stop = weak[-1], strong[-1]
    eff, s_eff = top["efficiency"], stop["efficiency"]
    smallest = next((p["chips"] for p in weak if p["fits"]), None)
    v = verdict(1.0, eff)
    sizes = ", ".join(f"{n:,}" for n in _sizes(runs.quick))
    why = (f"of the swept sizes ({sizes} chips) gpt-300b first fits on {smallest:,}, not one instance; at 100,000 chips with 0.5 sequence per chip "
           f"it keeps {100 * eff:.0f}% of the best per-chip rate (MFU {100 * top['mfu']:.0f}%, dp over "
           f"{top['fabric_tiers']['dp']}), with a fixed {strong_gb}-sequence batch only {100 * s_eff:.0f}% "
           f"(MFU {100 * stop['mfu']:.0f}%)." if eff and s_eff else "no size in the sweep gives a fitting layout.")
    row = ClaimRow(
        "5", "16-chip Trn2 instances scale to EC2 UltraClusters of 100,000 chips (65 EF = 100,000 x per-chip peak: "
        "linear scaling implied)",
        1.0, eff, "x (weak-scaling efficiency: tokens/s per chip at 100,000 / the sweep's best)",
        (f"prediction: {GPT300B} on {ULTRACLUSTER} at {', '.join(f'{n:,}' for n in _sizes(runs.quick))} chips, "
         "each at its best searched layout with the global batch pinned",
         f"weak scaling: global batch = {WEAK_SEQS_PER_CHIP} sequence per chip (Llama 3's 16M tokens on 16,384 GPUs); "
         f"strong scaling: fixed {strong_gb} sequences ({GPT300B} batch_tokens / seq_len, Narayanan et al. 2021 Table 1)",
         "claimed 1.0: 65 EF is 100,000 chips x the per-chip peak, i.e. no loss to scale",
         "efficiency = tokens/s per chip at a size / the best tokens/s per chip among the swept sizes that fit",
         "the EFA tier is modelled as a non-blocking switch (alpha-beta, no congestion or oversubscription)",
         "fabric tier crossed: the innermost tier of size >= group size x rank stride (cost/comm.py)"),
        (_src(ULTRACLUSTER, "tiers", catalog.system_for(ULTRACLUSTER)), f"catalog {GPT300B} [NARAYANAN2021]",
         "LLAMA3_2024 (batch per chip)", f"announcement [{ANNOUNCEMENT}]"),
        v, why,
        {"weak": weak, "strong": strong, "weak_efficiency": eff, "strong_efficiency": s_eff,
         "smallest_fitting_chips": smallest,
         "weak_seqs_per_chip": WEAK_SEQS_PER_CHIP, "strong_global_batch_seqs": strong_gb,
         "tiers": [{"name": t.name, "size_chips": t.size, "bandwidth_gbps": t.bandwidth * 8 / 1e9,
                    "topology": t.topology.value} for t in catalog.system_for(ULTRACLUSTER).tiers]},
    )
    return row, {"weak": weak, "strong": strong}


# ----------------------------------------------------------------------------- claim 6


def claim_weeks(runs: _Runs) -> tuple[ClaimRow, dict]:
    sizes = [100_000] if runs.quick else [1024, 2048, 4096, 8192, 16384, 32768, 65536, 100_000]
    tokens = forecast.default_tokens(forecast.resolve_model(GPT300B))
    series = {"trainium2": [], "trainium1": [], "threshold_days": WEEKS_THRESHOLD_DAYS}
    points = []
    for n in sizes:
        row = {"chips": n}
        for key, hw, short in (("trainium2", ULTRACLUSTER, "trn2"), ("trainium1", TRN1, "trn1")):
            r = replace(runs.train(GPT300B, hw, n), tokens=tokens)
            g = r.expected if r.fits else None
            pt = {"chips": n, "fits": bool(r.fits), "ideal_days": r.time_to_train_s / DAY if r.fits else None,
                  "expected_days": g.expected_s / DAY if g else None, "goodput": g.goodput if g else None,
                  "interruptions": g.interruptions if g else None, "layout": r.layout.describe()}
            series[key].append(pt)
            row[f"{short}_days"] = pt["expected_days"]
        points.append(row)
    v = weeks_verdict(points)
    weeks = [p for p in points if p["trn2_days"] is not None and p["trn2_days"] < WEEKS_THRESHOLD_DAYS]
    first = weeks[0] if weeks else None
    est = first["trn2_days"] if first else (points[-1]["trn2_days"])
    if first:
        t1 = first["trn1_days"]
        why = (f"of the swept sizes ({', '.join(f'{n:,}' for n in sizes)} chips), Trainium2 first finishes in under "
               f"8 weeks at {first['chips']:,} chips ({first['trn2_days']:.0f} days "
               f"expected with failures), where Trainium1 takes " + (f"{t1:.0f} days." if t1 else "more than it fits."))
    else:
        why = f"Trainium2 needs {est:.0f} days even at {sizes[-1]:,} chips."
    row = ClaimRow(
        "6", "A 300-billion-parameter model trains in weeks instead of months on Trainium2",
        WEEKS_THRESHOLD_DAYS, est, "days (expected, with failures)",
        (f"prediction: {GPT300B} for 20 tokens per parameter ({tokens:.3g} tokens, Hoffmann et al. 2022) on "
         f"{ULTRACLUSTER} (Trainium2) and {TRN1} (Trainium1) at {', '.join(f'{n:,}' for n in sizes)} chips, best layouts",
         "expected time = cost/reliability.goodput_for (Daly 2006 checkpoint interval; one interruption per "
         "50,677 chip-hours from the Llama 3 paper; stragglers folded into calibration, cv = 0)",
         f"estimate = Trainium2's expected days at the smallest swept size under {WEEKS_THRESHOLD_DAYS:.0f} days "
         "(the largest size if none); claimed = the 8-week threshold"),
        (f"catalog {GPT300B} [NARAYANAN2021]", "LLAMA3_2024 (failure rate)", _src(ULTRACLUSTER, "tiers",
                                                                                   catalog.system_for(ULTRACLUSTER)),
         _src(TRN1, "tiers", catalog.system_for(TRN1)), f"announcement [{ANNOUNCEMENT}]"),
        v, why,
        {"tokens": tokens, "threshold_days": WEEKS_THRESHOLD_DAYS, "points": points,
         "weeks_from_chips": first["chips"] if first else None},
    )
    return row, series


# ----------------------------------------------------------------------------- claims 7a-7c


# Socket vs socket: r7g.16xlarge (one full Graviton3) and one socket of r8g.48xlarge (96 Graviton4 cores);
# equal cores: c7g.16xlarge and c8g.16xlarge (64 cores each).
SOCKET = (("r7g.16xlarge", 1), ("r8g.48xlarge", 1))
EQUAL_CORES = (("c7g.16xlarge", 1), ("c8g.16xlarge", 1))


def _bound(d: inf.Deployment, batch: int) -> str:
    """Roofline of a decode step (Williams et al. 2009): 2 x params x batch FLOPs vs the weight bytes."""
    t_compute = 2.0 * total_params(d.model) * batch / d.compute_rate
    t_memory = inf.weight_bytes(d.model, d.weights) / d.memory_rate
    return "bandwidth" if t_memory >= t_compute else "compute"


def graviton_cases(quick: bool) -> list[dict]:
    """Predicted Graviton4 / Graviton3 speed-ups, per case (cost/inference.py predict)."""
    models = ["llama3-8b", "llama3-70b"]
    weights = ["bf16", "q8_0", "q4_0"]
    batches = [1, 8] if quick else [1, 4, 16, 32]
    out = []
    for basis, pair in (("socket", SOCKET), ("equal_cores", EQUAL_CORES)):
        for mname in models:
            m = catalog.load_model(mname)
            for w in weights:
                d3, d4 = (inf.deployment(m, catalog.system_for(hw), chips=c, weights=w) for hw, c in pair)
                for b in batches:
                    p3, p4 = inf.predict(d3, b, 512, 128), inf.predict(d4, b, 512, 128)
                    fits = p3.fits and p4.fits
                    common = {"model": mname, "weights": w, "batch": b, "basis": basis, "graviton3": pair[0][0],
                              "graviton4": pair[1][0], "fits": fits, "fits_graviton3": p3.fits, "fits_graviton4": p4.fits,
                              "memory_needed_gib": sum(p4.memory_bytes.values()) / GiB,
                              "memory_graviton3_gib": p3.memory_capacity_bytes / GiB,
                              "memory_graviton4_gib": p4.memory_capacity_bytes / GiB}
                    out.append({**common, "phase": "prefill", "bound": "compute",
                                "speedup": p4.prefill_tokens_per_s / p3.prefill_tokens_per_s if fits else None})
                    out.append({**common, "phase": "decode", "bound": _bound(d4, b),
                                "speedup": p3.tpot_s / p4.tpot_s if fits else None})
    return out


def _rates(pair) -> dict:
    m = catalog.load_model("llama3-8b")
    d3, d4 = (inf.deployment(m, catalog.system_for(hw), chips=c, weights="q8_0") for hw, c in pair)
    return {"compute_ratio": d4.compute_rate / d3.compute_rate, "bandwidth_ratio": d4.memory_rate / d3.memory_rate,
            "threads_graviton3": d3.threads, "threads_graviton4": d4.threads}


def _speedup_summary(cases: list) -> list:
    """One line per basis, model, weights and phase: the speed-up at each batch (None where it does not fit)."""
    out = {}
    for c in cases:
        key = (c["basis"], c["model"], c["weights"], c["phase"])
        row = out.setdefault(key, {"basis": key[0], "model": key[1], "weights": key[2], "phase": key[3],
                                   "bound_at_batch_1": None})
        if c["batch"] == 1:
            row["bound_at_batch_1"] = c["bound"]
        row[f"speedup_batch_{c['batch']}"] = c["speedup"]
    return list(out.values())


def _median(xs):
    xs = [x for x in xs if x]
    return float(np.median(xs)) if xs else None


def claims_graviton(runs: _Runs) -> tuple[list, list]:
    cases = graviton_cases(runs.quick)
    g3, g4 = catalog.load_chip("graviton3"), catalog.load_chip("graviton4")
    sock, eq = _rates(SOCKET), _rates(EQUAL_CORES)

    def sel(basis, phase=None, bound=None, batch=None):
        return [c["speedup"] for c in cases if c["basis"] == basis and (phase is None or c["phase"] == phase)
                and (bound is None or c["bound"] == bound) and (batch is None or c["batch"] == batch)]

    no_fit = {}
    for c in cases:
        if not c["fits"]:
            hosts = [c[g] for g in ("graviton3", "graviton4") if not c[f"fits_{g}"]]
            key = f"{c['model']} {c['weights']} on {' and '.join(hosts)} ({c['memory_graviton3_gib']:.0f} / " \
                  f"{c['memory_graviton4_gib']:.0f} GiB)"
            no_fit[key] = min(no_fit.get(key, math.inf), c["memory_needed_gib"])
    no_fit = [f"{k}: needs {v:.0f} GiB or more" for k, v in sorted(no_fit.items())]
    eq_all = sel("equal_cores")
    est_a = _median(eq_all)
    sock_pre, sock_dec_bw = _median(sel("socket", "prefill")), _median(sel("socket", "decode", "bandwidth"))
    common_assume = (
        "prediction: cost/inference.predict (per-operator roofline, llama.cpp efficiencies fitted on Graviton3/3E "
        "rows of inference_runs.csv; no measured Graviton4 rows), 512 input + 128 output tokens, "
        f"llama3-8b and llama3-70b, weights bf16/q8_0/q4_0, batches {sorted({c['batch'] for c in cases})}",
        "socket basis: r7g.16xlarge (64 Graviton3 cores) vs one socket of r8g.48xlarge (96 Graviton4 cores); "
        "equal-core basis: c7g.16xlarge vs c8g.16xlarge (64 cores each; c8g.16xlarge bandwidth is the catalog's "
        "core-proportional share of a socket, an assumption)",
    ) + ((f"does not fit in memory (left out): {'; '.join(no_fit)}",) if no_fit else ())
    sources = (_src("graviton3", "cores", g3), _src("graviton4", "cores", g4), _src("graviton3", "memory_bandwidth", g3),
               _src("graviton4", "memory_bandwidth", g4), _src("graviton3", "peak_flops.int8", g3),
               _src("graviton4", "peak_flops.int8", g4), "inference_calibration.yaml (llama.cpp family)",
               "WIKICHIP_G4 (announcement figures)")
    lo, hi = (min(x for x in eq_all if x), max(x for x in eq_all if x)) if any(eq_all) else (None, None)
    row_a = ClaimRow(
        "7a", "Graviton4 is 30% faster than Graviton3", 1.3, est_a, "x (Graviton4 / Graviton3, LLM serving)",
        common_assume + ("estimate = median predicted speed-up at equal core count (prefill tokens/s and decode "
                         "tokens/s over all cases that fit); the announcement's 30% is for general workloads",),
        sources, verdict(1.3, est_a),
        (f"at 64 cores each flopcast predicts {lo:.2f}-{hi:.2f}x (median {est_a:.2f}x): clock {g4.clock / g3.clock:.2f}x "
         f"for compute-bound prefill, {eq['bandwidth_ratio']:.2f}x sustained bandwidth for decode; per socket "
         f"it is {_median(sel('socket')):.2f}x." if est_a else "no case fits on both."),
        {"summary": _speedup_summary(cases), "equal_cores_speedup_min": lo, "equal_cores_speedup_max": hi, "equal_cores_speedup_median": est_a,
         "socket_speedup_median": _median(sel("socket")), "equal_cores_rates": eq, "socket_rates": sock,
         "clock_ratio": g4.clock / g3.clock, "cases": cases},
    )
    cores_ratio = g4.cores / g3.cores
    row_b = ClaimRow(
        "7b", "Graviton4 has 50% more cores than Graviton3", 1.5, cores_ratio, "x (cores per socket)",
        ("estimate = catalog graviton4.cores / graviton3.cores",
         "compute per socket = cores x clock x FLOP/cycle (chips.yaml derivations): "
         f"{g4.peak(Dtype.INT8) / g3.peak(Dtype.INT8):.3f}x, which prefill (compute-bound) tracks"),
        sources[:2] + sources[4:6], verdict(1.5, cores_ratio),
        (f"the catalog has {g4.cores} vs {g3.cores} cores per socket; predicted per-socket prefill speed-up "
         f"{sock_pre:.2f}x tracks the compute ratio {sock['compute_ratio']:.2f}x (cores x clock {g4.clock / g3.clock:.2f})."),
        {"cores_graviton3": g3.cores, "cores_graviton4": g4.cores, "socket_prefill_speedup_median": sock_pre,
         "socket_compute_ratio": sock["compute_ratio"], "clock_ratio": g4.clock / g3.clock},
    )
    bw_ratio = g4.memory_bandwidth / g3.memory_bandwidth
    row_c = ClaimRow(
        "7c", "Graviton4 has 75% more memory bandwidth than Graviton3", 1.75, bw_ratio, "x (memory bandwidth per socket)",
        ("estimate = catalog graviton4.memory_bandwidth / graviton3.memory_bandwidth (12 x DDR5-5600 vs 8 x DDR5-4800)",
         "sustained bandwidth b(n) = n r R / sqrt((n r)^2 + R^2) (cost/inference.py cpu_bandwidth), which decode "
         "at small batch is bound by"),
        sources[2:4] + sources[6:7], verdict(1.75, bw_ratio),
        (f"the catalog gives {g4.memory_bandwidth / 1e9:.1f} vs {g3.memory_bandwidth / 1e9:.1f} GB/s ({bw_ratio:.2f}x); "
         f"bandwidth-bound decode per socket speeds up {sock_dec_bw:.2f}x (modelled sustained bandwidth "
         f"{sock['bandwidth_ratio']:.2f}x)." if sock_dec_bw else f"the catalog gives {bw_ratio:.2f}x."),
        {"bandwidth_graviton3_gbps": g3.memory_bandwidth / 1e9, "bandwidth_graviton4_gbps": g4.memory_bandwidth / 1e9,
         "socket_decode_bandwidth_bound_speedup_median": sock_dec_bw,
         "socket_sustained_bandwidth_ratio": sock["bandwidth_ratio"],
         "socket_decode_batch1_speedups": sel("socket", "decode", batch=1)},
    )
    series = [{k: c[k] for k in ("model", "weights", "batch", "phase", "basis", "speedup", "bound", "fits")}
              for c in cases]
    return [row_a, row_b, row_c], series


# ----------------------------------------------------------------------------- all claims


def evaluate(quick: bool = False, progress=None) -> ClaimsResult:
    """Every claim row and the plot series. progress(msg) is called once per claim."""
    t0 = time.perf_counter()
    runs = _Runs(quick, progress)
    say = runs.progress
    rows, series = [], {}
    say("claim 1: 65 exaflops (catalog peak; gpt-300b on 100,000 Trainium2)")
    rows += [claim_peak(runs), claim_sustained(runs)]
    say("claim 2: 4x Trainium1 (tokens/s per chip at 1,024 chips)")
    r2 = claim_4x(runs)
    rows.append(r2)
    series["trn2_vs_trn1"] = [{"model": p["model"], "params_b": p["params_b"], "ratio": p["ratio"]}
                              for p in r2.details["per_model"]]
    say("claim 3: 3x memory (largest model per instance, layouts that fit)")
    rows.append(claim_memory(runs))
    say("claim 4: 2x performance per watt")
    rows.append(claim_perf_per_watt(runs, r2.estimate))
    say("claim 5: scaling to 100,000 chips (weak and strong)")
    row, series["scaling"] = claim_scaling(runs)
    rows.append(row)
    say("claim 6: 300B model in weeks (expected time-to-train with failures)")
    row, series["time_to_train"] = claim_weeks(runs)
    rows.append(row)
    say("claim 7: Graviton4 vs Graviton3 (llama3-8b/70b serving)")
    grav, series["graviton_speedups"] = claims_graviton(runs)
    rows += grav
    for r in rows:
        assert r.verdict in VERDICTS, r.verdict
    return ClaimsResult(tuple(rows), series, quick, time.perf_counter() - t0)
