"""A search asked for its best layouts only streams its candidates (plan/streamed.py): the same best layouts in
the same order, the same counts and the same smallest footprint as the exhaustive search, with bounded memory."""

import numpy as np
import pytest

from flopcast import catalog
from flopcast.plan import search as S
from flopcast.plan.search import SearchSpace


def _both(monkeypatch, model, system, chips, keep, space=SearchSpace(), objective="throughput"):
    m, sys_, cal = catalog.load_model(model), catalog.system_for(system), catalog.calibration()
    full = S.search(m, sys_, chips, cal, space, objective=objective)
    monkeypatch.setattr(S, "STREAM_ABOVE", 0)
    monkeypatch.setattr(S, "EXPAND_ROWS", 40_000)  # several slices of base rows
    monkeypatch.setattr(S, "CHUNK", 9_000)  # and several chunks of each
    part = S.search(m, sys_, chips, cal, space, objective=objective, keep=keep)
    return full, part


@pytest.mark.parametrize("model,system,chips,keep,objective", [
    ("llama3-8b", "p5.48xlarge", 16, 1, "throughput"),
    ("llama3-8b", "trn2.48xlarge", 16, 7, "throughput"),
    ("llama3-8b", "p5.48xlarge", 16, 5, "cost"),
])
def test_the_streamed_search_keeps_the_exhaustive_answer(monkeypatch, model, system, chips, keep, objective):
    full, part = _both(monkeypatch, model, system, chips, keep, objective=objective)
    assert part.batch.size < full.batch.size  # only what the caller reads is held
    assert (part.n_valid, part.n_fit, part.considered) == (full.n_valid, full.n_fit, full.considered)
    assert part.rejected == full.rejected
    got = [part.batch.layout(int(i)) for i in part.order[:keep]]
    want = [full.batch.layout(int(i)) for i in full.order[:keep]]
    assert got == want
    for a, b in zip(part.order[:keep], full.order[:keep]):
        assert part.results["step_time_s"][a] == full.results["step_time_s"][b]
        assert part.results["memory_bytes"][a] == full.results["memory_bytes"][b]


def test_where_nothing_fits_the_smallest_footprint_is_kept(monkeypatch):
    full, part = _both(monkeypatch, "gpt3-175b", "p5.48xlarge", 8, 1)
    assert full.n_fit == part.n_fit == 0 and part.n_valid == full.n_valid > 0
    a, b = int(np.argmin(part.results["memory_bytes"])), int(np.argmin(full.results["memory_bytes"]))
    assert part.batch.layout(a) == full.batch.layout(b)
    assert part.rejected == full.rejected
