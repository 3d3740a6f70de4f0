"""The band a claim's verdict uses: the error flopcast has shown on that kind of prediction.

One function (`band`) so the verdicts can later read the per-forecast prediction intervals instead. Until
then each kind's band is the cross-validated (leave-one-source-out) MAPE that README.md reports:
- trainium-training: Trainium family, 24.2% over 9 runs (`flopcast validate training --cross-validate`,
  `by_family`);
- cpu-serving: serving figures, 29.0% over 45 figures of 20 runs (`flopcast validate
  validation/inference_runs.csv --cross-validate`);
- spec: a ratio of published catalog figures carries no model error; the +-15% band (rules.TOLERANCE)
  only absorbs the announcement's rounding.
"""

from __future__ import annotations

from ..errors import FlopcastError
from .rules import TOLERANCE

BANDS = {
    "trainium-training": (0.242, "cross-validated MAPE of Trainium training predictions (README, 9 runs)"),
    "cpu-serving": (0.290, "cross-validated MAPE of serving predictions (README, 45 figures of 20 runs)"),
    "spec": (TOLERANCE, "ratio of published figures (no model error); band for the announcement's rounding"),
}


def band(kind: str) -> tuple[float, str]:
    """(relative half-width, what it rests on) for a kind of estimate."""
    if kind not in BANDS:
        raise FlopcastError(f"unknown band kind {kind!r}; valid: {', '.join(BANDS)}")
    return BANDS[kind]


def interval(estimate: float | None, kind: str) -> dict:
    """The estimate's interval (low, high) at its band, with the band and its basis."""
    rel, basis = band(kind)
    low = None if estimate is None else estimate * (1 - rel)
    high = None if estimate is None else estimate * (1 + rel)
    return {"low": low, "high": high, "relative": rel, "kind": kind, "basis": basis}
