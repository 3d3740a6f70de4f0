"""Claim 1: 65 exaflops from 100,000 Trainium2, as a peak (1a) and as a training rate (1b)."""

from __future__ import annotations

from .. import catalog
from .evidence import ANNOUNCEMENT, GPT300B, ULTRACLUSTER, WEAK_SEQS_PER_CHIP, Runs, describe_run, fabric_tiers, source_of
from .rows import Estimate
from .rules import TOLERANCE


def estimate_peak(runs: Runs, rows: dict) -> Estimate:
    """1a: the announced exaflops over the chips, against the catalog's dense peaks of trainium2."""
    chip = catalog.load_chip("trainium2")
    chips, claimed_ef = 100_000, 65.0
    per_chip = claimed_ef * 1e18 / chips  # 650 TFLOP/s
    peaks = {d.label: p for d, p in chip.peak_flops.items() if p}
    close = {k: p for k, p in peaks.items() if abs(p - per_chip) <= TOLERANCE * per_chip}
    prefer = ("bf16", "fp16", "tf32", "fp8", "fp32", "int8")  # ties (equal peaks) go to the training dtype
    best = min(close, key=lambda k: (abs(peaks[k] - per_chip), prefer.index(k) if k in prefer else 99)) if close else None
    est = None if best is None else chips * peaks[best] / 1e18
    same = sorted(k for k in close if peaks[k] == peaks.get(best))
    why = (f"65 EFLOP/s / 100,000 chips = 650 TFLOP/s per chip, which is the dense {'/'.join(same)} peak "
           f"({peaks[best] / 1e12:.0f} TFLOP/s, {100 * (per_chip / peaks[best] - 1):+.1f}%), not FP8 "
           f"({peaks.get('fp8', 0) / 1e12:.0f} TFLOP/s dense) and not a sparse rate.") if best else \
        "no dense peak in the catalog's trainium2 entry lies within 15% of 650 TFLOP/s."
    return Estimate(
        est,
        (f"estimate = 100,000 chips x catalog trainium2.peak_flops.{best} (dense peak)",
         "the catalog holds dense peaks only (chips.yaml: 'peak_flops are dense'); a structured-sparse rate is not "
         "in the entry, so a sparse reading of 65 EF cannot be checked from it"),
        tuple(source_of("trainium2", f"peak_flops.{k}", chip) for k in sorted(peaks)) + (f"announcement [{ANNOUNCEMENT}]",),
        why,
        {"claimed_per_chip_tflops": per_chip / 1e12, "matching_dtype": best, "matching_dtypes": same,
         "peaks_tflops": {k: p / 1e12 for k, p in sorted(peaks.items())},
         "matching_peak_tflops": None if best is None else peaks[best] / 1e12,
         "claim_over_peak": None if best is None else per_chip / peaks[best],
         "fp8_dense_over_claim": peaks.get("fp8", 0) / per_chip, "density": "dense"},
    )


def estimate_sustained(runs: Runs, rows: dict) -> Estimate:
    """1b: the model FLOP/s flopcast's best layout sustains on 100,000 Trainium2, as EFLOP/s."""
    chips = 100_000
    r = runs.train(GPT300B, ULTRACLUSTER, chips)
    sustained_ef = r.model_tflops_per_chip * 1e12 * r.chips / 1e18
    big = runs.train(GPT300B, ULTRACLUSTER, chips, global_batch=int(chips * WEAK_SEQS_PER_CHIP))
    return Estimate(
        sustained_ef,
        (f"prediction: {describe_run(r)} (flopcast's best layout by throughput)",
         "model FLOPs per token 6N + 12LHQT (PaLM App. B); sustained EFLOP/s = model TFLOP/s per chip x chips",
         f"calibration: {r.calibration_basis}"),
        (f"catalog {GPT300B} [NARAYANAN2021]", source_of(ULTRACLUSTER, "tiers", r.system),
         source_of("trainium2", "peak_flops.bf16", r.system.chip), f"announcement [{ANNOUNCEMENT}]"),
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
