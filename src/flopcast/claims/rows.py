"""A claim as data (what was announced, how flopcast estimates it, which rule judges it) and the rows it yields."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import FlopcastError
from .bands import interval
from .rules import VERDICT_RULES, band_verdict, weeks_verdict


@dataclass(frozen=True)
class Estimate:
    """What an estimator found for one claim: the number, what it rests on, and why the verdict is what it is."""

    estimate: float | None
    assumptions: tuple
    sources: tuple
    why: str
    details: dict = field(default_factory=dict)
    series: dict = field(default_factory=dict)  # plot series this estimate contributes, by ClaimsResult.series key


def ratio_rule(claimed: float | None, e: Estimate, band: dict) -> str:
    """Rule 1 (rules.band_verdict): the claimed figure against the estimate's band (bands.interval)."""
    return band_verdict(claimed, band["low"], band["high"])


def no_figure_rule(claimed: float | None, e: Estimate, band: dict) -> str:
    """A claim that is no performance figure: flopcast cannot tell."""
    return "cannot tell"


def weeks_rule(claimed: float | None, e: Estimate, band: dict) -> str:
    """Rule 2 (rules.weeks_verdict) on the swept points the estimator recorded."""
    return weeks_verdict(e.details["points"])


@dataclass(frozen=True)
class Claim:
    """One claim row: its id, the claim as announced, the announced figure in `unit` (None where the
    announcement states none), its estimator and rule, and the kind of estimate that sets its band (bands.py).
    `reading`: the figure the rule holds the estimate to where the announcement states none (flopcast's
    reading of the claim, shown apart from the announced figure).

    estimate(runs, rows) gets the run's shared predictions and the rows judged so far (by id)."""

    id: str
    claim: str
    claimed: float | None
    unit: str
    estimate: Callable
    rule: Callable = ratio_rule
    progress: str | None = None  # said before estimating (the first row of each announced claim)
    band: str = "spec"  # bands.KINDS
    reading: float | None = None
    time_like: bool = False  # the estimate is a duration: its band is the reciprocal of a speed's

    def judge(self, e: Estimate, calibration=None) -> ClaimRow:
        """The row; calibration: the training calibration whose provenance names the kind of a Trainium2
        forecast (None: the shipped one)."""
        iv = interval(e.estimate, self.band, calibration, self.time_like)
        target = self.claimed if self.claimed is not None else self.reading
        return ClaimRow(self.id, self.claim, self.claimed, e.estimate, self.unit, e.assumptions, e.sources,
                        self.rule(target, e, iv), e.why, e.details, iv, self.reading)


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
    interval: dict = field(default_factory=dict)  # the estimate's band: low, high, relative, kind, basis
    reading: float | None = None  # what the rule held the estimate to when the announcement states no figure

    def to_dict(self) -> dict:
        return {"id": self.id, "claim": self.claim, "claimed": self.claimed, "estimate": self.estimate,
                "interval": dict(self.interval), "reading": self.reading, "unit": self.unit,
                "assumptions": list(self.assumptions), "sources": list(self.sources),
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
