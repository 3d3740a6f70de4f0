"""The work a search does, counted (not timed): what it computes once for a chunk of layouts, and what it leaves
out because no answer reads it; the answers themselves are checked against the exhaustive search elsewhere
(test_search_streamed.py, test_plan_bounded.py, the golden outputs)."""

import numpy as np

from flopcast import catalog
from flopcast.cost import memory
from flopcast.model.strategy import Recompute
from flopcast.plan import search as S
from flopcast.plan import streamed
from flopcast.plan.search import SearchSpace
from flopcast.simulate import training


def test_a_chunks_smallest_footprint_is_lexsorts_first():
    rng = np.random.default_rng(3)
    for _ in range(200):
        nbytes = rng.integers(0, 5, size=int(rng.integers(1, 30))).astype(float)
        nbytes[rng.random(nbytes.size) < 0.2] = np.nan
        assert streamed._smallest(nbytes) == int(np.lexsort((np.arange(nbytes.size), nbytes))[0])


def test_the_pruned_streamed_search_does_not_sort_every_chunk(monkeypatch):
    """Each chunk's smallest footprint is found without sorting it: what is sorted is what was evaluated (the
    layouts the bound keeps), far fewer than the valid layouts."""
    sorted_elements = []
    lexsort = np.lexsort
    monkeypatch.setattr(np, "lexsort", lambda keys: sorted_elements.append(len(keys[0])) or lexsort(keys))
    monkeypatch.setattr(S, "STREAM_ABOVE", 0)
    monkeypatch.setattr(S, "CHUNK", 9_000)
    m, system, cal = catalog.load_model("llama3-8b"), catalog.system_for("p5.48xlarge"), catalog.calibration()
    out = S.search(m, system, 16, cal, SearchSpace(), keep=1)
    assert out.n_valid > 50_000 and sum(sorted_elements) < out.n_valid / 4


def test_the_full_activations_are_computed_only_for_layouts_that_rebuild_a_layer(monkeypatch):
    """A layout keeps one layer's full activations only under full or per-operator recomputation (the layer it
    rebuilds): the others' are not computed; the bytes are those of every layout computed in full."""
    m, system, cal = catalog.load_model("llama3-8b"), catalog.system_for("p5.48xlarge"), catalog.calibration()
    lb, *_ = S._valid(m, system, 16, SearchSpace(), True)
    rebuilds = int(np.count_nonzero((lb.recompute == Recompute.FULL) | (lb.recompute == Recompute.OP)))
    assert 0 < rebuilds < lb.size
    full = []
    original = memory.layer_activation_bytes
    monkeypatch.setattr(memory, "layer_activation_bytes", lambda *a, recompute, **k: (
        full.append(np.size(a[3])) if np.ndim(recompute) == 0 else None) or original(*a, recompute=recompute, **k))
    got = training.memory_bytes(m, system, lb, cal)
    kinds = len(training._kinds(m))
    assert sum(full) == rebuilds * kinds
    # each layout's bytes equal those of it evaluated on its own
    for i in np.random.default_rng(0).choice(lb.size, 40, replace=False):
        one = training.memory_bytes(m, system, lb.take(np.array([i])), cal)
        assert one[0] == got[i]
