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


def test_results_take_and_concat_as_the_batch_is():
    """plan/results.py: an evaluation's arrays are taken and joined like its LayoutBatch, a value shared by every
    layout (a scalar) made one per layout, the parts' dicts alike; one evaluation joins to itself."""
    from flopcast.plan import results

    a = {"step_time_s": np.array([1.0, 2.0, 3.0]), "chips": 8, "time_parts": {"bubble": np.array([0.1, 0.2, 0.3]),
                                                                              "overhead": 0.5}}
    b = {"step_time_s": np.array([4.0]), "chips": 16, "time_parts": {"bubble": np.array([0.4]), "overhead": 0.6}}
    both = results.concat([a, b])
    assert both["step_time_s"].tolist() == [1.0, 2.0, 3.0, 4.0] and both["chips"].tolist() == [8, 8, 8, 16]
    assert both["time_parts"]["overhead"].tolist() == [0.5, 0.5, 0.5, 0.6]
    picked = results.take(both, np.array([3, 0]))
    assert picked["chips"].tolist() == [16, 8] and picked["time_parts"]["bubble"].tolist() == [0.4, 0.1]
    assert results.take(a, slice(1, 3))["time_parts"]["overhead"].tolist() == [0.5, 0.5]
    assert results.concat([a]) is a
