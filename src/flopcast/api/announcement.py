"""claims: the Trainium2 / Graviton4 announcement's claims, each against flopcast's own forecast."""

from __future__ import annotations

from dataclasses import dataclass

from ..frame import Tabular, flatten
from .args import python_errors


@dataclass(frozen=True)
class ClaimsReport(Tabular):
    """The claims' rows, series and verdict rules (`result`: flopcast.claims.ClaimsResult); one table row per
    claim."""

    result: object

    @property
    def rows_by_id(self) -> dict:
        return {r.id: r for r in self.result.rows}

    def to_dict(self) -> dict:
        return self.result.to_dict()

    def rows(self) -> list[dict]:
        return [flatten({k: v for k, v in c.items() if k != "details"}) for c in self.to_dict()["claims"]]


@python_errors
def claims(*, quick: bool = False, progress=None, calibration=None, engine: str = "local", workers: int = 1,
           address: str | None = None) -> ClaimsReport:
    """Test AWS's Trainium2 / Graviton4 announcement claims with flopcast's own models (tens of seconds;
    `quick=True` uses fewer sizes and models). progress(message) is called once per claim. calibration: a file
    `calibrate` wrote, replacing the shipped calibration of its kind (training or serving). workers: 1 (the default)
    computes here; more hand the independent claims to the sweep executor (engine "local": a process pool; "ray",
    address: a Ray cluster), with the same rows.

    Example (not run here: it takes seconds): ``flopcast.claims(quick=True).to_frame()[["id", "verdict"]]``
    """
    from .. import claims as C

    return ClaimsReport(C.evaluate(quick=quick, progress=progress, calibration=calibration, engine=engine,
                                   workers=workers, address=address))
