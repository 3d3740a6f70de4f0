"""The serving fit's memo (validate/fitmemo.py): a row is predicted again only when a field its prediction read
changed, a copy's reads are traced too, and a cross-validation fold starting from the full fit meets its first
evaluations in the memo. Counted in simulations, not seconds."""

from __future__ import annotations

from dataclasses import asdict, replace

import pytest

from flopcast.cost import inference as inf
from flopcast.validate import benchmark as vb
from flopcast.validate import inference as vi
from flopcast.validate.fitmemo import FitCache, RowMemo, traced

PRIOR = inf.PRIORS["neuronx"]


def test_traced_copy_records_every_field_read_through_it_and_its_copies():
    copy, reads = traced(PRIOR)
    assert isinstance(copy, inf.EngineEfficiency) and copy.compute == PRIOR.compute
    assert reads == {"compute"}
    moved = replace(copy, memory=0.5)  # replace reads every other field through the traced copy
    assert type(moved) is type(copy) and moved.memory == 0.5
    _ = moved.layer_overhead_s
    assert reads >= set(asdict(PRIOR)) - {"memory"} and "layer_overhead_s" in reads


def test_memo_reuses_a_row_only_while_the_fields_it_read_are_unchanged():
    calls = []

    def compare(rows, table, runs=None):
        (eff,) = table.values()
        calls.append(rows[0]["run_id"])
        return [{"predicted": eff.compute * 2 + eff.layer_overhead_s}]

    memo, row = RowMemo(), {"run_id": "a", "source": "s"}
    first = memo.compare("neuronx", row, PRIOR, compare)
    # a field the prediction never read moves: the same figures, no new prediction
    assert memo.compare("neuronx", row, replace(PRIOR, memory=0.123), compare) is first
    assert memo.compare("neuronx", row, replace(PRIOR, request_overhead_s=1.0), compare) is first
    assert calls == ["a"]
    # a field it read moves: predicted again, and both values are kept
    moved = memo.compare("neuronx", row, replace(PRIOR, compute=0.2), compare)
    assert moved[0]["predicted"] == pytest.approx(0.4 + PRIOR.layer_overhead_s) and len(calls) == 2
    assert memo.compare("neuronx", row, PRIOR, compare) is first
    # another row, or the same row of another family, is its own entry
    memo.compare("neuronx", {"run_id": "b", "source": "s"}, PRIOR, compare)
    memo.compare("gpu", row, PRIOR, compare)
    assert len(calls) == 4 and memo.counts == {"predicted": 4, "reused": 3}


@pytest.fixture(scope="module")
def dense_rows():
    """A cheap simulated row (a synchronous guidellm run of Qwen3-32B on trn2) and a static batch of the family."""
    rows = {r["run_id"]: r for r in vi._read("inference")}
    return [rows["di-11"], rows["tm-1"]]


def _count_simulations(monkeypatch) -> list:
    made = []
    real = vb.simulate_row

    def counted(*args, **kwargs):
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(vb, "simulate_row", counted)
    return made


def test_a_jacobian_column_resimulates_only_the_rows_that_read_its_parameter(dense_rows, monkeypatch):
    from scipy import optimize

    evaluations = []
    real = optimize.least_squares

    def counted(fun, x0, **kwargs):
        sol = real(fun, x0, **kwargs)
        evaluations.append((sol.nfev, sol.njev, len(x0)))
        return sol

    monkeypatch.setattr(optimize, "least_squares", counted)
    made = _count_simulations(monkeypatch)
    fam = "neuronx-v3"
    vi._fit_family(fam, dense_rows, memo=RowMemo())
    (nfev, njev, n), = evaluations
    # the simulated row reads compute, memory and layer_overhead_s of the free parameters: without the memo every
    # evaluation (and each of a Jacobian's n columns) simulates it again
    assert n > 3 and len(made) <= nfev + 3 * njev + 1 < nfev + n * njev


def test_a_fold_starting_from_the_full_fit_meets_its_first_evaluations_in_the_memo(dense_rows, monkeypatch):
    from scipy import optimize

    cache = FitCache()
    full = vi.fit_families(dense_rows, cache=cache)
    made = _count_simulations(monkeypatch)
    starts = []  # simulations made by each fit's start: its first evaluation and the Jacobian there
    real = optimize.least_squares

    def counted(fun, x0, **kwargs):
        calls = []

        def f(x):
            before = len(made)
            out = fun(x)
            calls.append(len(made) - before)
            return out

        sol = real(f, x0, **kwargs)
        starts.append(sum(calls[:len(x0) + 1]))
        return sol

    monkeypatch.setattr(optimize, "least_squares", counted)
    fresh = FitCache(rows=cache.rows)  # the fits forgotten, the row predictions kept: the same family refitted
    again = vi.fit_families(dense_rows, cache=fresh, start=full)
    cold = vi.fit_families(dense_rows, cache=FitCache(), start=full)
    # the same refit from the same start; with the full fit's predictions its start comes from the memo (but where
    # exp(log(v)) rounds off v, a field the start reads: at most its first evaluation)
    assert cold == again and starts[0] + 2 <= starts[1]


def test_a_simulation_is_reused_where_the_numbers_it_read_are_the_same(monkeypatch):
    """A fitted MoE row of SDK 2.26 reads the family's per-release block rates (a field with every release's), but
    its simulation reads only its deployment's iteration costs: moving another release's rate predicts the row again
    (its fields moved) from the same simulated run; moving a number the run reads simulates it again. Each answer is
    the one a fresh prediction gives."""
    row = {r["run_id"]: r for r in vi._read("inference")}["di-4"]  # Llama 4 Scout, throughput run, SDK 2.26
    fam = "neuronx-v3"
    eff = vi._load_table(vi.CAL_PATH)[fam]
    assert {r for r, _ in eff.moe_block_rates} >= {"2.26", "2.28"}
    runs = []
    real = vb._simulate
    monkeypatch.setattr(vb, "_simulate", lambda *a, **k: runs.append(1) or real(*a, **k))
    memo = RowMemo()
    first = memo.compare(fam, row, eff, vi._compare)
    other = replace(eff, moe_block_rates=tuple((r, v * 1.01 if r == "2.28" else v) for r, v in eff.moe_block_rates))
    faster = replace(eff, compute=eff.compute * 1.01)
    moved = memo.compare(fam, row, other, vi._compare)
    assert len(runs) == 1 and moved is not first and memo.counts["simulation reused"] == 1
    again = memo.compare(fam, row, faster, vi._compare)
    assert len(runs) == 2 and memo.counts["simulated"] == 2
    for got, e in ((first, eff), (moved, other), (again, faster)):
        assert got == vi._compare([row], {fam: e})
    assert [r["predicted"] for r in again] != [r["predicted"] for r in first]
