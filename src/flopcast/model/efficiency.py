"""Calibrated efficiency parameters: few, physical, each fitted on named data.

The values flopcast ships live in catalog/data/calibration.yaml, written by
`flopcast calibrate` (which records the data file, rows, date and fit error).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

from .system import Dtype


@dataclass(frozen=True)
class FamilyEfficiency:
    """What one chip family's kernels reach, as fractions of its peaks."""

    gemm: float = 0.75  # large bf16/fp16/tf32 GEMMs, fraction of dense peak
    gemm_fp8: float = 0.55  # large FP8 GEMMs, fraction of FP8 dense peak
    attention: float = 0.5  # fused (flash) attention, fraction of bf16 peak
    memory: float = 0.8  # elementwise kernels, fraction of HBM bandwidth


@dataclass(frozen=True)
class Calibration:
    families: dict = field(default_factory=dict)  # family -> FamilyEfficiency
    scaleup_efficiency: float = 0.8  # fraction of NVLink/NeuronLink/ICI bandwidth a collective reaches
    scaleout_efficiency: float = 0.7  # fraction of EFA/InfiniBand/RoCE bandwidth a collective reaches
    tp_overlap: float = 0.0  # fraction of TP/CP/EP communication hidden behind compute
    comm_overlap: float = 0.8  # fraction of the compute window asynchronous DP and PP communication hides in
    # fraction of a micro-batch's compute ZeRO-3/FSDP parameter gathers and gradient reduce-scatters hide
    # behind: each layer waits for its own gather, so only the prefetch of the next layer overlaps
    zero3_overlap: float = 0.5
    grouped_gemm: float = 0.8  # MoE expert GEMMs (grouped, load-imbalanced) relative to a dense GEMM's efficiency
    op_overhead_s: float = 2e-6  # fixed cost per kernel (launch, synchronisation)
    moe_host_op_s: float = 3e-5  # host time per operator of an MoE layer's forward (eager PyTorch dispatch)
    elementwise_traffic: float = 1.5  # HBM traffic of a layer's non-GEMM kernels relative to the minimal count
    step_overhead_s: float = 0.0  # fixed cost per optimizer step (data loading, logging)
    provenance: dict = field(default_factory=dict, compare=False, hash=False)
    # fitted large-GEMM efficiency / measured maximum achievable matmul fraction (MAMF), averaged over the fitted
    # families whose chips have one, per key (gemm, gemm_fp8); set by the catalog when it loads the calibration
    mamf_transfer: dict = field(default_factory=dict, compare=False, hash=False)
    # family -> {gemm, gemm_fp8: the mean measured MAMF fraction of the family's catalogued chips}; set by the catalog
    # when it loads the calibration: a fitted family's GEMM efficiency is that of a chip at this mean (for_chip)
    mamf_family: dict = field(default_factory=dict, compare=False, hash=False)

    def family(self, name: str) -> FamilyEfficiency:
        if name in self.families:
            return self.families[name]
        fallback = FAMILY_FALLBACK.get(name)
        if fallback in self.families:
            return self.families[fallback]
        return self.mean_family()

    def for_chip(self, chip) -> FamilyEfficiency:
        """A chip's efficiencies: its family's (or its nearest relative's) when fitted; otherwise the mean of the
        fitted families, with the GEMM efficiencies taken from the chip's own measured matmul ceiling (MAMF)
        times the fitted/MAMF ratio of the fitted families, where the chip has a MAMF. Either way no GEMM
        efficiency exceeds the chip's measured ceiling (its MAMF fraction of peak) nor memory efficiency
        MEMORY_CEILING: a family fitted on several chips must not lend one chip more than it can do."""
        if chip.family in self.families or FAMILY_FALLBACK.get(chip.family) in self.families:
            fam = self._own_ceiling(self.family(chip.family), chip)
        else:
            base = self.mean_family()
            own = self._mamf_gemm(chip)
            fam = replace(base, **own) if own else base
        return bounded(fam, chip)

    def _own_ceiling(self, fam: FamilyEfficiency, chip) -> FamilyEfficiency:
        """A fitted family's GEMM efficiencies for one of its chips: scaled by the chip's measured matmul ceiling
        (MAMF fraction of peak) over the family's mean one, where both are known. The fit reads the family's runs
        on several chips as one efficiency; their measured ceilings say how the chips differ at the same kernels
        (e.g. GB200's FP8 0.723 of its 5 PFLOP/s peak against B200's 0.763 of 4.5: 5.3% faster measured, not the
        peaks' 11%; Bekman's MAMF table). A chip without its own MAMF takes the family's efficiency as fitted."""
        mean = self.mamf_family.get(chip.family, {})
        out = {}
        for key, dtype in (("gemm", Dtype.BF16), ("gemm_fp8", Dtype.FP8)):
            own = chip.measured_mamf_fraction(dtype)
            if own and mean.get(key):
                out[key] = getattr(fam, key) * own / mean[key]
        return replace(fam, **out) if out else fam

    def _scaled(self, chip) -> bool:
        """Whether _own_ceiling moves any of the chip's GEMM efficiencies off its family's fitted value."""
        mean = self.mamf_family.get(chip.family, {})
        return chip.family in self.families and any(
            (own := chip.measured_mamf_fraction(d)) and mean.get(k) and abs(own / mean[k] - 1.0) > 1e-9
            for k, d in (("gemm", Dtype.BF16), ("gemm_fp8", Dtype.FP8)))

    def _mamf_gemm(self, chip) -> dict:
        out = {}
        for key, dtype in (("gemm", Dtype.BF16), ("gemm_fp8", Dtype.FP8)):
            fraction = chip.mamf_fraction(dtype)
            ratio = self.mamf_transfer.get(key)
            if fraction and ratio:
                out[key] = min(fraction * ratio, 1.0)
        return out

    def mean_family(self) -> FamilyEfficiency:
        if not self.families:
            return FamilyEfficiency()
        vals = list(self.families.values())
        return FamilyEfficiency(
            **{f.name: sum(getattr(v, f.name) for v in vals) / len(vals) for f in fields(FamilyEfficiency)}
        )

    def basis(self, chip) -> str:
        """One line saying where a chip's efficiencies come from."""
        chip_id, family = chip.id, chip.family
        measured = self.provenance.get("rows_per_chip", {}).get(chip_id, 0)
        own = "GEMMs scaled by its measured matmul ceiling over the family's" if self._scaled(chip) else ""
        if measured:
            return f"calibrated: {measured} measured {chip_id} runs in the fit" + (f" ({own})" if own else "")
        fitted_on = ", ".join(self.provenance.get("chips_per_family", {}).get(family, []))
        if family in self.families:
            return (f"no measured {chip_id} runs: efficiencies of its architecture family '{family}' "
                    f"(fitted on {fitted_on or 'its family'}{'; ' + own if own else ''}), peaks and bandwidths from "
                    "its specifications")
        fallback = FAMILY_FALLBACK.get(family)
        if fallback in self.families:
            return (f"no measured {chip_id} runs: efficiencies of the related family '{fallback}', "
                    "peaks and bandwidths from its specifications")
        if self._mamf_gemm(chip):
            return (f"no measured {chip_id} runs and no calibrated relative: GEMM efficiency from its measured "
                    "maximum achievable matmul (MAMF) x the fitted/MAMF ratio of the calibrated families, other "
                    "efficiencies their mean, peaks and bandwidths from its specifications")
        return (f"no measured {chip_id} runs and no calibrated relative: mean efficiencies of the calibrated "
                "families, peaks and bandwidths from its specifications")


# The largest fraction of HBM peak a streaming kernel reaches: STREAM-like copies measure 0.83 of peak on
# V100 (750 of 900 GB/s; Jia et al. 2018, "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking",
# arXiv:1804.06826, sec. 3); newer HBM parts reach somewhat more. An upper bound, not a fitted value: no chip
# in the catalog carries its own measured STREAM figure yet.
MEMORY_CEILING = 0.92


def gemm_ceiling(chip, key: str) -> float | None:
    """The chip's measured large-GEMM ceiling for a FamilyEfficiency key (gemm: BF16, gemm_fp8: FP8; attention,
    whose fused kernels are BF16 matmuls, BF16), or None."""
    return chip.mamf_fraction(Dtype.FP8 if key == "gemm_fp8" else Dtype.BF16)


def bounded(fam: FamilyEfficiency, chip) -> FamilyEfficiency:
    """fam with each GEMM (and attention) efficiency at most the chip's MAMF fraction, attention at most the GEMM one,
    memory at most MEMORY_CEILING
    (works on floats and on arrays of parameter values)."""
    out = {"memory": np.minimum(fam.memory, MEMORY_CEILING)}
    for key in ("gemm", "gemm_fp8", "attention"):
        ceiling = gemm_ceiling(chip, key)
        if ceiling:
            out[key] = np.minimum(getattr(fam, key), ceiling)
    # fused attention is matmul work plus a softmax: no more efficient than a large GEMM on the same chip
    out["attention"] = np.minimum(out.get("attention", fam.attention), out.get("gemm", fam.gemm))
    if np.ndim(out["memory"]) == 0:
        out = {k: float(v) for k, v in out.items()}
    return replace(fam, **out)


# Chip families without measured runs borrow from their nearest architecture relative.
FAMILY_FALLBACK = {"inferentia": "trainium"}
