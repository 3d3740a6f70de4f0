"""The calibrated efficiency parameters live in model/efficiency.py (the catalog builds them, below cost);
these names stay for callers that import them from here."""

from ..model.efficiency import (FAMILY_FALLBACK, MEMORY_CEILING, Calibration, FamilyEfficiency, bounded,
                                gemm_ceiling)

__all__ = ["Calibration", "FamilyEfficiency", "FAMILY_FALLBACK", "MEMORY_CEILING", "bounded", "gemm_ceiling"]
