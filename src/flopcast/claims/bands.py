"""The band a claim's verdict uses: the prediction interval of the hardware the estimate is about.

- trainium-training: the 80% interval of a training forecast on Trainium2 (cost/uncertainty.training_interval:
  the leave-one-source-out residuals of its kind in uncertainty.yaml, `flopcast validate training
  --cross-validate --write-intervals`; Trainium2 has no measured run, so its kind is its family's);
- cpu-serving: the 80% interval of a llama.cpp serving forecast on Graviton4 (cost/uncertainty.serving_interval;
  the family's calibration rows are Graviton3/3E ones);
- spec: a ratio of published catalog figures carries no model error; the +-15% band (rules.TOLERANCE)
  only absorbs the announcement's rounding;
- none: no figure to hold to a band (a security property).
An interval is a factor pair (low, high) on a speed; a time-like estimate (days) takes its reciprocal.
"""

from __future__ import annotations

import math

from .. import catalog
from ..cost import calibrations, uncertainty
from ..cost.inference import engines
from ..errors import FlopcastError
from .rules import TOLERANCE

SPEC_BASIS = "ratio of published figures (no model error); band for the announcement's rounding"
KINDS = ("trainium-training", "cpu-serving", "spec", "none")


def _model_interval(kind: str, calibration) -> uncertainty.Interval | None:
    if kind == "trainium-training":
        return uncertainty.training_interval(calibration, catalog.load_chip("trainium2"), False)
    return uncertainty.serving_interval("graviton4", "llama.cpp", engines.calibration_hardware(), False)


def interval(estimate: float | None, kind: str, calibration=None, time_like: bool = False) -> dict:
    """The estimate's interval (low, high) at its band, with the band's factors and its basis; `relative`: the
    largest relative distance of a bound from the estimate (what rules.verdict holds the claim to, one side
    each: `below` and `above`)."""
    if kind not in KINDS:
        raise FlopcastError(f"unknown band kind {kind!r}; valid: {', '.join(KINDS)}")
    if kind == "none":
        return {"low": None, "high": None, "relative": None, "kind": kind, "basis": "no figure: not a performance "
                "claim, so no interval"}
    if kind == "spec":
        lo_f, hi_f, basis, level = 1 - TOLERANCE, 1 + TOLERANCE, SPEC_BASIS, None
    else:
        iv = _model_interval(kind, calibration or calibrations.training(None))
        if iv is None:
            raise FlopcastError(f"uncertainty.yaml has no interval for the {kind} claims")
        lo_f, hi_f = (1 / iv.high, 1 / iv.low) if time_like else (iv.low, iv.high)
        level = iv.level
        what = "Trainium2 training" if kind == "trainium-training" else "Graviton4 llama.cpp serving"
        basis = (f"{iv.label} prediction interval of {what} forecasts (kind {iv.kind}, {iv.residuals} cross-validated "
                 f"residuals{'; ' + iv.pooled if iv.pooled else ''}; uncertainty.yaml)")
    ok = estimate is not None and math.isfinite(estimate)
    return {"low": estimate * lo_f if ok else None, "high": estimate * hi_f if ok else None,
            "below": 1 - lo_f, "above": hi_f - 1, "relative": max(1 - lo_f, hi_f - 1), "kind": kind,
            "level": level, "basis": basis}
