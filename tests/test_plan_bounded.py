"""The planner's fast search gives the exhaustive search's answer: the same rows, the same best layout per
cluster size, the same plan."""

import itertools
from dataclasses import replace

import numpy as np
import pytest

from flopcast.cost import calibrations
from flopcast.plan import bounded, bounds, capacity, forecast, rows
from flopcast.plan import search as S

CAL = calibrations.training(None)


def _loop_rows(model, chips, space, ch, allow_idle, tally):
    """The row generator as it was written before vectorizing: nested loops over the choices."""
    out = []
    n_other = len(ch.vp) * len(ch.schedule) * ch.per_schedule_pair
    for tp, cp, pp, gb, mb in itertools.product(ch.tp, ch.cp, ch.pp, ch.global_batch, ch.micro_batch):
        dps = list(space.dp) if space.dp else S._dp_degrees(chips // (tp * cp * pp), gb, mb, allow_idle)
        if not dps:
            tally.reject("more chips than the cluster has", 1)
            continue
        etps = [e for e in ch.etp if space.etp or e != 1 or tp > 1]
        for dp in dps:
            pairs = [(e, t) for e in ch.ep for t in etps
                     if not model.moe or space.ep or (tp * cp * dp) % (e * (t or tp)) == 0]
            if len(pairs) < len(ch.ep) * len(etps):
                tally.reject(S.EP_RULE, (len(ch.ep) * len(etps) - len(pairs)) * n_other)
            out += [(tp, cp, pp, dp, gb, mb, ep, etp) for ep, etp in pairs]
    return np.array(out, dtype=np.int64).reshape(-1, 8)


@pytest.mark.parametrize("model,system,chips,allow_idle", [
    ("llama2-7b", "p5.48xlarge", 24, True), ("llama2-7b", "p5.48xlarge", 24, False),
    ("mixtral-8x7b", "p5.48xlarge", 64, True), ("llama3-70b", "trn2.48xlarge", 16 * 37, True)])
def test_vectorized_rows_equal_the_loops(model, system, chips, allow_idle):
    m, sy = forecast.resolve_model(model, None), forecast.resolve_system(system)
    space = replace(S.SearchSpace(), global_batch=(96, 120, 128, 1000))
    ch = S._choices(m, sy, chips, space)
    t1, t2 = S._Tally(), S._Tally()
    fast = rows.base_rows(m, chips, space, ch, allow_idle, t1)
    slow = _loop_rows(m, chips, space, ch, allow_idle, t2)
    assert np.array_equal(fast, slow)
    assert t1.rejected == t2.rejected and t1.considered == t2.considered


def _best(out):
    return out.batch.layout(int(out.order[0])) if out.n_fit else None


@pytest.mark.parametrize("model,system,chips,space", [
    ("llama2-7b", "p5.48xlarge", 16, {}),
    ("llama2-7b", "p5.48xlarge", 40, {"global_batch": (64, 80, 96, 128, 160)}),
    ("llama2-13b", "trn2.48xlarge", 48, {"micro_batch": (1, 2)}),
    ("mixtral-8x7b", "p5.48xlarge", 64, {"micro_batch": (1,), "cp": (1,), "global_batch": (256, 512)}),
])
def test_bounded_search_picks_the_exhaustive_best(model, system, chips, space):
    m, sy = forecast.resolve_model(model, None), forecast.resolve_system(system)
    sp = replace(S.SearchSpace(), **space)
    full = S.search(m, sy, chips, CAL, sp, objective="throughput")
    fast = bounded.search(m, sy, chips, CAL, sp, bounded.WorkTable(m, sy, CAL))
    assert fast is not None and not isinstance(fast, bounded.Beyond)
    assert _best(fast) == _best(full) and fast.n_fit <= full.n_fit
    assert fast.considered == full.considered  # every candidate is counted, evaluated or bounded away
    i, j = int(fast.order[0]), int(full.order[0])
    assert fast.results["step_time_s"][i] == full.results["step_time_s"][j]
    assert fast.batch.size < full.batch.size  # the bound pruned something


def test_bound_is_below_every_evaluated_step():
    m, sy = forecast.resolve_model("llama2-7b", None), forecast.resolve_system("p5.48xlarge")
    full = S.search(m, sy, 32, CAL, S.SearchSpace(), objective="throughput")
    lower = bounded.layout_bounds(m, bounded.WorkTable(m, sy, CAL), full.batch)
    per_token = 1.0 / np.asarray(full.results["tokens_per_s"])
    assert (lower <= per_token).all() and (lower > 0.5 * per_token).mean() > 0.5  # valid, and not trivially loose


def test_cutoff_finds_the_best_or_proves_none_that_fast():
    m, sy = forecast.resolve_model("llama2-7b", None), forecast.resolve_system("p5.48xlarge")
    table = bounded.WorkTable(m, sy, CAL)
    best = bounded.search(m, sy, 16, CAL, S.SearchSpace(), table)
    per_token = 1.0 / float(best.results["tokens_per_s"][int(best.order[0])])
    assert _best(bounded.search(m, sy, 16, CAL, S.SearchSpace(), table, cutoff=per_token * 1.01)) == _best(best)
    beyond = bounded.search(m, sy, 16, CAL, S.SearchSpace(), table, cutoff=per_token * 0.99)
    assert isinstance(beyond, bounded.Beyond) and beyond.s_per_token <= per_token


def _exhaustive_plan(monkeypatch, *args, **kw):
    """plan_deadline as it ran before the bounds: every size it visits searched in full."""
    with monkeypatch.context() as mp:
        mp.setattr(bounded, "search", lambda *a, **k: None)
        mp.setattr(capacity._Sizer, "meets", lambda self, n, d: self(n).expected_s <= d)
        return capacity.plan_deadline(*args, **kw)


@pytest.mark.parametrize("model,system,tokens,days", [("llama2-7b", "p5.48xlarge", 2e12, 20),
                                                      ("llama2-13b", "trn2.48xlarge", 1e12, 15)])
def test_plan_equals_the_exhaustive_plan(monkeypatch, model, system, tokens, days):
    m, sy = forecast.resolve_model(model, None), forecast.resolve_system(system)
    space = replace(S.SearchSpace(), micro_batch=(1, 2), cp=(1, 2), sequence_parallel=(0,))
    fast = capacity.plan_deadline(m, sy, tokens, days * 86400, CAL, space)
    slow = _exhaustive_plan(monkeypatch, m, sy, tokens, days * 86400, CAL, space)
    for a, b in ((fast.chosen, slow.chosen), (fast.fastest, slow.fastest), (fast.smallest, slow.smallest)):
        assert (a.nodes, a.result.layout, a.expected_s, a.cost_usd) == (b.nodes, b.result.layout, b.expected_s,
                                                                         b.cost_usd)
    assert fast.searches + fast.bounded <= slow.searches + 1 and fast.searches < slow.searches
    exact = {p.nodes: p for p in slow.points}
    for p in fast.points:  # every size the fast plan searched has the exhaustive best layout
        assert p.result.layout == exact[p.nodes].result.layout


@pytest.mark.parametrize("model,system,chips", [("gpt3-175b", "trn2.48xlarge", 16), ("llama2-70b", "trn1.32xlarge", 16),
                                                ("llama2-13b", "trn1.32xlarge", 16), ("gpt-300b", "trn2.48xlarge", 64)])
def test_cannot_fit_only_where_nothing_fits(model, system, chips):
    m, sy = forecast.resolve_model(model, None), forecast.resolve_system(system)
    if bounds.cannot_fit(m, sy, chips):
        full = S.search(m, sy, chips, CAL, replace(S.SearchSpace(), micro_batch=(1,), cp=(1,)))
        assert full.n_fit == 0 and float(np.min(full.results["memory_bytes"])) > sy.chip.memory
    assert bounds.cannot_fit(forecast.resolve_model("gpt3-175b", None), forecast.resolve_system("trn2.48xlarge"), 16)


@pytest.mark.parametrize("model,system,chips", [("gpt-300b", "trn1.32xlarge", 256),
                                                ("mixtral-8x7b", "p5.48xlarge", 64)])
def test_memory_alone_equals_the_full_evaluation(model, system, chips):
    from flopcast.simulate import training

    m, sy = forecast.resolve_model(model, None), forecast.resolve_system(system)
    lb, _, _, _ = S._valid(m, sy, chips, replace(S.SearchSpace(), micro_batch=(1, 2)), True)
    lb = lb.take(slice(0, 20_000))
    assert np.array_equal(training.memory_bytes(m, sy, lb, CAL), training.evaluate(m, sy, lb, CAL)["memory_bytes"])


def test_plan_sizes_on_two_workers_equal_one(monkeypatch):
    """The independent cluster sizes handed to the sweep executor (api: workers=2) give the answer of one."""
    from flopcast import api

    handed, prefetch = [], capacity._Sizer.prefetch
    monkeypatch.setattr(capacity._Sizer, "prefetch", lambda self, nodes: (
        handed.append(self.mapper is not None and len(set(nodes) - set(self.cache)) > 1), prefetch(self, nodes)))
    kw = dict(tokens="1T", micro_batch=1, cp=1, sequence_parallel=False)
    one = api.plan("llama2-7b", "p5.48xlarge", deadline="20d", **kw).to_dict()
    two = api.plan("llama2-7b", "p5.48xlarge", deadline="20d", workers=2, **kw).to_dict()
    one.pop("wall_s"), two.pop("wall_s")
    assert handed == [False, True]  # one worker: here; two: the sizes priced above the smallest, on the executor
    assert two == one


def _summary(out):
    return (_best(out), out.n_fit, out.considered, out.n_evaluated, out.rejected,
            float(out.results["step_time_s"][int(out.order[0])]) if out.n_fit else None)


def test_lockstep_searches_equal_one_at_a_time():
    """search_many evaluates every case's round in one call: each outcome is the lone search's."""
    m, sy = forecast.resolve_model("llama2-13b", None), forecast.resolve_system("trn2.48xlarge")
    cases = [(16, S.SearchSpace(), None), (48, replace(S.SearchSpace(), global_batch=(64, 128)), None),
             (128, S.SearchSpace(), None)]
    alone = [bounded.search(m, sy, c, CAL, sp, bounded.WorkTable(m, sy, CAL)) for c, sp, _ in cases]
    together = bounded.search_many(m, sy, CAL, bounded.WorkTable(m, sy, CAL), cases)
    assert [_summary(a) for a in alone] == [_summary(t) for t in together]


@pytest.mark.parametrize("model,system,chips", [("gpt3-175b", "trn1.32xlarge", 128),
                                                ("llama2-70b", "trn1.32xlarge", 16)])
def test_memory_first_changes_nothing(monkeypatch, model, system, chips):
    """Checking memory before the step time (large rounds) gives the same best layout and counts; where nothing
    fits, the same closest layout."""
    m, sy = forecast.resolve_model(model, None), forecast.resolve_system(system)
    sp = replace(S.SearchSpace(), micro_batch=(1, 2))
    monkeypatch.setattr(bounded, "MEMORY_FIRST", 1)
    first = bounded.search(m, sy, chips, CAL, sp, bounded.WorkTable(m, sy, CAL))
    monkeypatch.setattr(bounded, "MEMORY_FIRST", 10**12)
    plain = bounded.search(m, sy, chips, CAL, sp, bounded.WorkTable(m, sy, CAL))
    assert _summary(first) == _summary(plain)
    assert first.batch.size <= plain.batch.size
    if not plain.n_fit:
        assert np.min(first.results["memory_bytes"]) == np.min(plain.results["memory_bytes"])


def _row_of(lane, lb):
    """Each layout's base row in the lane (its index)."""
    cols = np.stack([lb.tp, lb.cp, lb.pp, lb.dp, lb.global_batch, lb.micro_batch, lb.ep, lb.etp], axis=1)
    top = np.maximum(cols.max(axis=0), lane.base.max(axis=0)) + 1
    pack = lambda a: np.ravel_multi_index(tuple(a.T), tuple(top))  # noqa: E731
    keys = pack(lane.base)
    order = np.argsort(keys)
    at = order[np.searchsorted(keys, pack(cols), sorter=order)]
    assert np.array_equal(lane.base[at], cols)
    return at


@pytest.mark.parametrize("model,system,chips,space", [
    ("qwen3-235b-a22b", "p5.48xlarge", 256, {"micro_batch": (1,), "global_batch": (1024,), "cp": (1,)}),
    ("deepseek-v3", "gb200-nvl72", 1152, {"micro_batch": (1,), "global_batch": (4096,), "cp": (1,)}),
    ("llama4-maverick", "tpu7x", 1024, {"micro_batch": (1,), "global_batch": (1024,), "cp": (1, 2)}),
    ("gpt-oss-120b", "trn2.48xlarge", 512, {"micro_batch": (1,), "global_batch": (1024,), "cp": (1,)}),
    ("llama3-405b", "trn2.48xlarge", 2048, {"micro_batch": (1,), "global_batch": (1024, 2048)}),
    ("gpt-300b", "p5.48xlarge", 1024, {"micro_batch": (1, 2), "global_batch": (1536,)}),
])
def test_bounds_hold_for_every_layout_and_pick_the_exhaustive_best(model, system, chips, space):
    """MoE (the expert all-to-all, overlapping schedules) and dense models: the row and layout bounds, with
    their exposed all-to-all and data-parallel terms, are below every valid layout's seconds per token, and the
    bounded search picks the exhaustive best evaluating a small share of the layouts."""
    m, sy = forecast.resolve_model(model, None), forecast.resolve_system(system)
    sp = replace(S.SearchSpace(), **space)
    full = S.search(m, sy, chips, CAL, sp, objective="throughput")
    table = bounded.WorkTable(m, sy, CAL)
    per_token = 1.0 / np.asarray(full.results["tokens_per_s"])
    lane = bounded._Lane(m, sy, chips, sp, table, True, None, bounded.MODERN_SOFTWARE)
    lane.rows.order(len(lane.base))  # every row bounded
    row = lane.rows.bound[_row_of(lane, full.batch)]
    lower = bounded.layout_bounds(m, table, full.batch)
    assert (row <= per_token).all() and (lower <= per_token).all()
    assert (row <= lower * (1 + 1e-9)).all()  # a row's bound is its layouts' least
    best = int(full.order[0])
    assert lower[best] > 0.9 * per_token[best]  # and tight where it matters
    fast = bounded.search(m, sy, chips, CAL, sp, table)
    assert _best(fast) == _best(full) and fast.considered == full.considered
    assert fast.n_evaluated < full.batch.size / 5


def test_combinations_are_np_unique_s_rows_without_sorting_the_layouts():
    """bounds.combinations numbers the distinct rows of integer columns by counting (each column's values, then
    their combinations), sorting only where the counts would not fit: np.unique's rows and inverse either way."""
    from flopcast.plan import bounds

    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(1, 3000))
        highs = [2, 40, 10**6, 2**40]
        cols = [rng.choice(rng.integers(0, highs[int(rng.integers(0, 4))], size=int(rng.integers(1, 10))),
                           size=n).astype(np.int64) for _ in range(int(rng.integers(1, 9)))]
        distinct, inverse = bounds.combinations(cols)
        want, want_inverse = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
        assert np.array_equal(distinct, want) and np.array_equal(inverse, want_inverse.reshape(-1)), trial
