"""The calibrated efficiency parameters live in model/efficiency.py (the catalog builds them, below cost);
this name stays for callers that import them from here."""

from ..model.efficiency import Calibration, FamilyEfficiency

__all__ = ["Calibration", "FamilyEfficiency"]
