"""Several cluster sizes (or batch spaces) of one model and system forecast together: the bounded searches run
in lockstep (plan/bounded.search_many), one evaluation per round for all of them instead of one per size. A
layout's numbers do not depend on the layouts evaluated beside it, so every result is forecast.train's."""

from __future__ import annotations

from ..cost import calibrations
from ..model.system import System
from ..model.workload import Model
from . import bounded, forecast


def train_many(model: Model, system: System, cases: list, *, calibration=None, work_tables=None) -> list:
    """forecast.train(model, system, chips, exhaustive=False, work_tables=work_tables, **layout) of each
    (chips, layout) case, in order."""
    cal = calibrations.training(calibration)
    tables = {} if work_tables is None else work_tables
    table = tables.setdefault(repr((model, system, cal)), bounded.WorkTable(model, system, cal))
    prepared = [forecast._case(model, system, cal, chips, None, dict(layout)) for chips, layout in cases]
    searched = [c for c in prepared if not isinstance(c, forecast.TrainResult)]
    outs = iter(bounded.search_many(model, system, cal, table, [(c[0], c[2], None) for c in searched]))
    return [c if isinstance(c, forecast.TrainResult) else
            forecast._searched(model, system, c[0], cal, c[2], c[3], c[1], "throughput", exhaustive=False,
                               work_tables=tables, out=next(outs)) for c in prepared]
