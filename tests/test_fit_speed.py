"""What keeps `calibrate training` and the heavy searches fast, each checked by what it saves (calls, not seconds),
with the same answers."""

import numpy as np

from flopcast import catalog
from flopcast import allocator
from flopcast.plan import bounded
from flopcast.sweep import executors
from flopcast.validate import calibrate as cb
from flopcast.validate import training as vt


def _cases(rows=("d-2", "14", "d-25")):
    cases, _ = vt.load_cases("training")
    return [c for c in cases if c.run_id in rows]


def _count_passes(monkeypatch) -> list:
    """A list that grows by one entry (its column count) at each pass of the fit over the rows."""
    passes = []
    real = cb._log_ratio_columns

    def counted(*a):
        passes.append(a[3].shape[1])
        return real(*a)
    monkeypatch.setattr(cb, "_log_ratio_columns", counted)
    return passes


def test_a_small_stated_search_is_exhaustive_with_the_bounded_search_s_layout(monkeypatch):
    cal = catalog.calibration()
    cases = _cases()
    calls = []
    real = bounded.search

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)
    monkeypatch.setattr(bounded, "search", counted)
    small = [c for c in cases if bounded.candidate_count(c.model, c.system, c.chips, c.space, False)
             <= bounded.EXHAUSTIVE_UP_TO]
    assert small and len(small) < len(cases)  # a row of each kind
    fast = [vt.best_layout(c, cal) for c in cases]
    assert len(calls) == len(cases) - len(small)  # the small rows never ran the bounded search
    monkeypatch.setattr(bounded, "EXHAUSTIVE_UP_TO", 0)
    assert [vt.best_layout(c, cal) for c in cases] == fast  # the same layouts and reasons with it
    assert len(calls) == 2 * len(cases) - len(small)


def test_the_fit_runs_in_one_process_on_two_cpus(monkeypatch):
    monkeypatch.setattr(executors, "default_workers", lambda: 2)
    assert cb.fit_workers(None) == 1 and cb.fit_workers(3) == 3
    monkeypatch.setattr(executors, "default_workers", lambda: 16)
    assert cb.fit_workers(None) == 16


def test_the_fit_speculates_with_the_same_answer(monkeypatch):
    cases = _cases(("d-2", "14", "d-9", "d-38", "66"))  # rows whose fit rejects steps: speculation has some to save
    passes = _count_passes(monkeypatch)
    fast = cb.fit(cases, rounds=1, workers=1)
    n_fast = len(passes)
    monkeypatch.setattr(cb, "SPECULATE", 1)
    plain = cb.fit(cases, rounds=1, workers=1)
    assert cb.calibration_dict(fast[0], {}) == cb.calibration_dict(plain[0], {}) and fast[1] == plain[1]
    assert n_fast < len(passes) - n_fast  # fewer evaluations of the rows for the same fit


def test_the_cross_validation_folds_speculate_in_one_process_on_two_cpus(monkeypatch):
    import concurrent.futures

    cases = _cases(("d-2", "14", "d-9", "d-38", "66"))  # as above: folds whose fits reject steps
    assert len({c.source for c in cases}) == 4
    monkeypatch.setattr(executors, "default_workers", lambda: 2)
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", None)  # a pool would fail here
    passes = _count_passes(monkeypatch)

    def folds():
        return {s: (cb.calibration_dict(cal, {}), info) for s, (cal, info) in cb.fold_fits(cases).items()}
    fast = folds()
    n_fast = len(passes)
    monkeypatch.setattr(cb, "SPECULATE", 1)
    assert folds() == fast
    assert n_fast < len(passes) - n_fast  # fewer evaluations of the rows for the same folds


def test_the_command_line_sets_the_allocator_thresholds(monkeypatch):
    calls = []
    monkeypatch.setattr(allocator, "tune", lambda: calls.append(1) or True)
    from flopcast.cli import main

    assert main(["catalog", "--help"]) == 0
    assert calls == [1]


def test_the_thresholds_take_on_glibc():
    import platform

    if platform.libc_ver()[0] != "glibc":
        return  # elsewhere tune() declines (and says so)
    assert allocator.tune() is True
    a = np.ones(1 << 20)  # a block under the threshold still computes as before
    assert float(a.sum()) == float(1 << 20)


def test_distinct_layouts_are_counted_not_sorted_with_np_unique_s_answer(monkeypatch):
    from flopcast.model.strategy import LAYOUT_FIELDS, LayoutBatch
    from flopcast.simulate import training

    rng = np.random.default_rng(1)
    lb = LayoutBatch.from_arrays(**{f: rng.integers(0, 4, 20_000) for f in LAYOUT_FIELDS})
    rows = np.stack([getattr(lb, f) for f in training.LAYER_FIELDS], axis=1)
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    sorts = []
    real = np.unique
    monkeypatch.setattr(np, "unique", lambda *a, **k: sorts.append(1) or real(*a, **k))
    got = training._distinct(lb, training.LAYER_FIELDS)
    assert not sorts
    assert np.array_equal(got[0], first) and np.array_equal(got[1], inverse.reshape(-1))


def test_nothing_fitting_takes_the_bounded_search_s_smallest_footprint(monkeypatch):
    from flopcast.plan import search as search_mod

    model, system = catalog.load_model("llama3-405b"), catalog.load_system("p5.48xlarge")
    space, cal = search_mod.SearchSpace(), catalog.calibration()
    assert bounded.candidate_count(model, system, 8, space, False) > bounded.EXHAUSTIVE_UP_TO
    full = search_mod.search(model, system, 8, cal, space, allow_idle=False, keep=1)
    calls = []
    real = search_mod.search
    monkeypatch.setattr(search_mod, "search", lambda *a, **k: calls.append(1) or real(*a, **k))
    out = bounded.best_search(model, system, 8, cal, space, allow_idle=False)
    assert not calls and out.n_fit == full.n_fit == 0  # 405B on 8 H100s: nothing fits; no exhaustive repeat

    def smallest(o):
        return o.batch.layout(int(np.argmin(o.results["memory_bytes"])))
    assert smallest(out) == smallest(full)


def test_the_bounded_search_builds_only_valid_candidates_the_same_as_expanding_them():
    from flopcast.plan import search as search_mod

    for name, sys_name, chips in (("deepseek-v3", "trn2.48xlarge", 1024), ("llama3-8b", "p5.48xlarge", 64)):
        model, system = catalog.load_model(name), catalog.load_system(sys_name)
        base, pairs, ch, _ = search_mod._passing_base(model, system, chips, search_mod.SearchSpace(), True)
        rows = base[:200]
        full = search_mod._expand(rows, pairs, ch)
        ok = search_mod._apply(search_mod.expanded_rules(
            model, full.tp, full.pp, full.vp, full.schedule, full.sequence_parallel,
            search_mod.micro_batches_of(full), full.recompute, full.etp), np.ones(full.size, dtype=bool), {})
        for d in np.unique(full.dtype):
            if search_mod.training_dtype_problem(system.chip, search_mod.Dtype(int(d))):
                ok &= full.dtype != d
        lb, local = bounded._valid_expansion(model, system, rows, pairs, ch)
        assert np.array_equal(local, np.nonzero(ok)[0]) and 0 < lb.size < full.size
        want = full.take(local)
        assert all(np.array_equal(getattr(lb, f), getattr(want, f)) for f in search_mod.LAYOUT_FIELDS)


def test_the_bounded_search_bounds_only_fitting_layouts_until_one_is_found(monkeypatch):
    from flopcast.plan import search as search_mod

    cal, space = catalog.calibration(), search_mod.SearchSpace()
    bounded_layouts = []
    real = bounded.layout_bounds
    monkeypatch.setattr(bounded, "layout_bounds", lambda m, t, lb, above=np.inf: bounded_layouts.append(lb.size)
                        or real(m, t, lb, above))

    def outcome(name, chips):
        model, system = catalog.load_model(name), catalog.load_system("p5.48xlarge")
        bounded_layouts.clear()
        out = bounded.search(model, system, chips, cal, space, bounded.WorkTable(model, system, cal))
        i = int(out.order[0]) if out.n_fit else int(np.argmin(out.results["memory_bytes"]))
        return (out.batch.layout(i), out.n_fit, out.evaluated, out.rejected), sum(bounded_layouts)
    # llama3-70b on 16 H100s: 132 of 48,832 layouts fit; mixtral-8x7b on 8: none (its smallest footprint shown)
    fast = {case: outcome(*case) for case in (("llama3-70b", 16), ("mixtral-8x7b", 8))}
    monkeypatch.setattr(bounded, "MEMORY_FIRST", 10**12)  # every layout bounded, then evaluated
    for case, (got, n_bounded) in fast.items():
        plain, n_plain = outcome(*case)
        assert got == plain
        assert n_bounded < n_plain / 3


def test_row_bounds_take_their_data_parallel_floor_only_for_the_rows_a_search_reaches(monkeypatch):
    from flopcast.model.system import Dtype
    from flopcast.plan import bounds
    from flopcast.plan import search as search_mod

    cal = catalog.calibration()
    model, system = catalog.load_model("deepseek-v3"), catalog.load_system("trn2.48xlarge")
    base, pairs, ch, _ = search_mod._passing_base(model, system, 2048, search_mod.SearchSpace(), True)
    trainable = tuple(d for d in ch.dtype if not search_mod.training_dtype_problem(system.chip, Dtype(int(d))))
    table = bounds.WorkTable(model, system, cal)
    floors = []
    real = bounds.step_bounds.dp_comm_floor_s
    monkeypatch.setattr(bounds.step_bounds, "dp_comm_floor_s", lambda m, s, lb, *a: floors.append(lb.size)
                        or real(m, s, lb, *a))
    rows = bounds.RowBounds(model, table, base, ch, pairs, trainable)
    first = rows.order(bounded.FIRST_ROWS).copy()
    some = sum(floors)
    every = bounds.row_bounds(model, table, base, ch, pairs, trainable)
    assert some < (sum(floors) - some) / 4  # the first rows' floors: a fraction of every row's
    order = np.argsort(every, kind="stable")
    assert np.array_equal(first, order[:len(first)]) and len(first) >= bounded.FIRST_ROWS
    assert np.array_equal(rows.bound[first], every[first])
    assert np.array_equal(rows.order(len(base)), order) and np.array_equal(rows.bound, every)


def test_a_layer_s_gemm_is_timed_three_times_with_compute_s_numbers(monkeypatch):
    from flopcast.cost import compute
    from flopcast.simulate import layer

    kw = dict(peak=np.array([1e15, 2e15]), efficiency=np.array([0.7, 0.6]), tile=(128, 128), cores=132,
              bandwidth=3.35e12, memory_efficiency=0.8, operand_bytes=2.0)
    g = layer._Gemms(kw, np.zeros(2))
    calls = []
    real = compute.gemm_time
    monkeypatch.setattr(compute, "gemm_time", lambda *a, **k: calls.append(1) or real(*a, **k))
    g.add(np.array([4096.0, 8192.0]), 1536.0, 4096.0, count=2.0)
    assert len(calls) == 3  # forward, data and weight gradients: the weight gradient not timed twice
    monkeypatch.setattr(compute, "gemm_time", real)
    f, b, flops = compute.gemm_fwd_bwd_time(np.array([4096.0, 8192.0]), 1536.0, 4096.0, **kw)
    w, _ = compute.gemm_time(4096.0, 1536.0, np.array([4096.0, 8192.0]), **kw)
    assert np.array_equal(g.fwd, 2.0 * f) and np.array_equal(g.bwd, 2.0 * b) and np.array_equal(g.wgrad, 2.0 * w)
    assert np.array_equal(g.flops, 2.0 * flops)
