"""Claims 2 and 4: Trainium2's training performance, and performance per watt, against Trainium1."""

from __future__ import annotations

from .. import catalog
from ..cost.params import total_params
from ..model.system import Dtype
from .evidence import ANNOUNCEMENT, GPT300B, TRN1, TRN2, Runs, geomean, source_of
from .rows import Estimate


def _ratio_models(quick: bool) -> list[str]:
    if quick:
        return ["llama2-7b", GPT300B]
    return ["llama2-7b", "llama2-13b", "narayanan-gpt-18.4b", "mpt-30b", "narayanan-gpt-39.1b", "llama3-70b",
            "narayanan-gpt-76.1b", "narayanan-gpt-145.6b", "gpt3-175b", GPT300B]


def estimate_4x(runs: Runs, rows: dict, chips: int = 1024) -> Estimate:
    """2: the geometric mean over dense models of Trn2 / Trn1 tokens/s per chip, each at its best layout."""
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
    est = geomean(ratios)
    c1, c2 = catalog.load_chip("trainium1"), catalog.load_chip("trainium2")
    peak_ratio = c2.peak(Dtype.BF16) / c1.peak(Dtype.BF16)
    bw_ratio = c2.memory_bandwidth / c1.memory_bandwidth
    fp8_ratio = c2.peak(Dtype.FP8) / c1.peak(Dtype.FP8)
    lo, hi = (min(ratios), max(ratios)) if ratios else (None, None)
    above = [p["model"] for p in per_model if p["ratio"] and p["ratio"] > peak_ratio * 1.03]
    why = (f"at {chips:,} chips flopcast predicts {lo:.2f}-{hi:.2f}x tokens/s per chip (geometric mean {est:.2f}x) in "
           f"BF16, near the BF16 peak ratio {peak_ratio:.2f}x" +
           (f" and above it for {', '.join(above)}, where Trainium1's 32 GiB forces more model parallelism"
            if above else "") + "." if est else "no model fits on both chips at this size.")
    return Estimate(
        est,
        (f"prediction: each model on {chips:,} chips of {TRN1} and of {TRN2}, each at its own best searched layout "
         "(BF16, global batch in flopcast's default range)",
         f"estimate = geometric mean over {len(ratios)} dense models "
         f"({', '.join(p['model'] for p in per_model)}); ratio = tokens/s per chip Trn2 / Trn1",
         f"Trainium2 calibration: {basis}",
         f"formula: peak ratio = trainium2.peak_flops.bf16 / trainium1.peak_flops.bf16 = {peak_ratio:.2f}; "
         f"HBM bandwidth ratio = {bw_ratio:.2f}; FP8 peak ratio = {fp8_ratio:.2f}"),
        (source_of("trainium1", "peak_flops.bf16", c1), source_of("trainium2", "peak_flops.bf16", c2),
         source_of("trainium1", "memory_bandwidth", c1), source_of("trainium2", "memory_bandwidth", c2),
         "catalog models (model_sources.yaml)", "calibration.yaml (trainium family)", f"announcement [{ANNOUNCEMENT}]"),
        why,
        {"chips": chips, "per_model": per_model, "ratio_min": lo, "ratio_max": hi, "ratio_geomean": est,
         "bf16_peak_ratio": peak_ratio, "fp8_peak_ratio": fp8_ratio, "hbm_bandwidth_ratio": bw_ratio,
         "calibration_basis_trn2": basis},
        {"trn2_vs_trn1": [{"model": p["model"], "params_b": p["params_b"], "ratio": p["ratio"]} for p in per_model]},
    )


def estimate_perf_per_watt(runs: Runs, rows: dict) -> Estimate:
    """4: claim 2's performance ratio over the catalog's power ratio, where the catalog has both powers."""
    perf_ratio = rows["2"].estimate
    c1, c2 = catalog.load_chip("trainium1"), catalog.load_chip("trainium2")
    missing = [f"trainium{i}.power ({c.notes.get('power', 'not published')})"
               for i, c in ((1, c1), (2, c2)) if c.power is None]
    if missing:
        est = None
        why = "the catalog has no power for " + " and ".join(
            f"trainium{i}" for i, c in ((1, c1), (2, c2)) if c.power is None) + " (AWS publishes none), so flopcast cannot divide performance by watts."
    else:
        est = perf_ratio / (c2.power / c1.power) if perf_ratio else None
        why = f"performance ratio {perf_ratio:.2f}x over power ratio {c2.power / c1.power:.2f}x."
    needed = None if perf_ratio is None else perf_ratio / 2.0
    return Estimate(
        est,
        ("formula: perf/W ratio = (tokens/s per chip ratio, claim 2) / (power_trn2 / power_trn1)",
         f"missing: {'; '.join(missing)}" if missing else "chip power from the catalog (TDP only)"),
        (source_of("trainium1", "power", c1), source_of("trainium2", "power", c2), f"announcement [{ANNOUNCEMENT}]"),
        why,
        {"missing_fields": [m.split(" (")[0] for m in missing], "perf_ratio": perf_ratio,
         "max_power_ratio_for_2x": needed,
         "note": None if needed is None else f"2x per watt holds iff power_trn2 / power_trn1 <= {needed:.2f}"},
    )
