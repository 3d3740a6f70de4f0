"""The verdict rules: how a claimed figure and flopcast's estimate of it give a verdict."""

from __future__ import annotations

import math

VERDICTS = ("consistent", "optimistic", "pessimistic", "cannot tell")
TOLERANCE = 0.15  # +-15% of the claimed value counts as consistent
WEEKS_THRESHOLD_DAYS = 56.0  # "weeks": under 8 weeks; "months": 8 weeks or more

VERDICT_RULES = (
    "quantities and ratios: the claimed value within the band of flopcast's estimate -> consistent; claim above "
    "that band -> optimistic; claim below it -> pessimistic. The band is the 80% prediction interval of that "
    "hardware's forecasts (uncertainty.yaml: Trainium2 training, Graviton4 serving; claims/bands.py), "
    f"+-{TOLERANCE:.0%} of the estimate for ratios of published figures",
    f"'weeks instead of months': weeks = expected time-to-train (with failures) under {WEEKS_THRESHOLD_DAYS:.0f} days "
    "(8 weeks), months = that or more; consistent if at some swept cluster size Trainium2 takes weeks while "
    "Trainium1 takes months (or does not fit); optimistic if Trainium2 takes months at every swept size; cannot tell "
    "if Trainium1 "
    "also takes weeks wherever Trainium2 does (the announcement names no baseline)",
    "a figure flopcast cannot compute (a catalog field is missing) -> cannot tell, naming what is missing",
)


def verdict(claimed: float | None, estimate: float | None, tolerance: float = TOLERANCE) -> str:
    """Rule 1: |estimate - claimed| <= tolerance x |claimed| -> consistent; claim higher -> optimistic;
    claim lower -> pessimistic; a missing or non-finite number -> cannot tell."""
    if claimed is None or estimate is None or not (math.isfinite(claimed) and math.isfinite(estimate)):
        return "cannot tell"
    if abs(estimate - claimed) <= tolerance * abs(claimed):
        return "consistent"
    return "optimistic" if claimed > estimate else "pessimistic"


def band_verdict(claimed: float | None, low: float | None, high: float | None) -> str:
    """Rule 1 on a band: claimed in [low, high] -> consistent; above -> optimistic; below -> pessimistic; a
    missing or non-finite number -> cannot tell."""
    if any(v is None or not math.isfinite(v) for v in (claimed, low, high)):
        return "cannot tell"
    if low <= claimed <= high:
        return "consistent"
    return "optimistic" if claimed > high else "pessimistic"


def weeks_verdict(points: list[dict], threshold_days: float = WEEKS_THRESHOLD_DAYS) -> str:
    """Rule 2. points: one per cluster size, {"trn2_days": d2, "trn1_days": d1} (None where it does not fit)."""
    weeks2 = [p for p in points if p.get("trn2_days") is not None and p["trn2_days"] < threshold_days]
    if not weeks2:
        return "optimistic" if any(p.get("trn2_days") is not None for p in points) else "cannot tell"
    if any(p.get("trn1_days") is None or p["trn1_days"] >= threshold_days for p in weeks2):
        return "consistent"
    return "cannot tell"
