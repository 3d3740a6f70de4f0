"""compare's memory budget (plan/streamed.Pruning.budget): past it a chunk's bound is judged before its memory,
so the count of fitting layouts becomes a lower bound over the layouts checked, said so in the text and JSON
output, while the best layout stays the exhaustive search's."""

import json

from flopcast import catalog
from flopcast.cli import main
from flopcast.plan import capacity
from flopcast.plan import search as S

MODEL, SYSTEM, CHIPS = "llama3-8b", "p5.48xlarge", 16


def _streamed(monkeypatch):
    monkeypatch.setattr(S, "STREAM_ABOVE", 0)
    monkeypatch.setattr(S, "EXPAND_ROWS", 40_000)  # several slices of base rows
    monkeypatch.setattr(S, "CHUNK", 9_000)  # and several chunks of each


def test_a_small_budget_keeps_the_best_layout_and_says_the_count_is_partial(monkeypatch):
    m, sys_, cal = catalog.load_model(MODEL), catalog.system_for(SYSTEM), catalog.calibration()
    full = S.search(m, sys_, CHIPS, cal)
    _streamed(monkeypatch)
    part = S.search(m, sys_, CHIPS, cal, keep=1, memory_budget=10_000)
    assert part.batch.layout(int(part.order[0])) == full.batch.layout(int(full.order[0]))
    assert part.results["step_time_s"][part.order[0]] == full.results["step_time_s"][full.order[0]]
    assert part.n_valid == full.n_valid and part.considered == full.considered
    assert 10_000 <= part.checked < part.n_valid and 0 < part.n_fit <= full.n_fit
    assert part.rejected["does not fit in memory"] == part.checked - part.n_fit
    assert capacity.fit_count(part) == (f"{part.n_valid:,} valid layouts, at least {part.n_fit:,} fit of "
                                        f"{part.checked:,} checked for memory")
    exact = S.search(m, sys_, CHIPS, cal, keep=1)  # no budget: every layout's memory, the exact count
    assert exact.checked is None and exact.n_fit == full.n_fit
    assert capacity.fit_count(exact) == f"{full.n_valid:,} valid layouts, {full.n_fit:,} fit"


def _run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_compare_output_names_a_partial_count(monkeypatch, capsys):
    args = ["compare", MODEL, "-H", f"{SYSTEM},trn2.48xlarge", "-n", str(CHIPS), "--json"]
    exhaustive = json.loads(_run(args, capsys))["systems"]  # not streamed: every layout
    assert all(any(n.endswith(" fit)") and "at least" not in n for n in v["notes"]) for v in exhaustive.values())
    _streamed(monkeypatch)
    monkeypatch.setattr(capacity.compare, "__defaults__", (S.SearchSpace(), None, 10_000))
    args = args[:-1]
    text = " ".join(_run(args, capsys).split())  # as wrapped to the terminal's width: unwrapped
    assert text.count("fit of") == 2 and text.count("checked for memory") == 2, text
    systems = json.loads(_run([*args, "--json"], capsys))["systems"]
    for k, v in systems.items():
        assert any("at least" in n and "checked for memory" in n for n in v["notes"])
        assert v["layout"] == exhaustive[k]["layout"] and v["step_time_s"] == exhaustive[k]["step_time_s"]
        got, want = v["search"], exhaustive[k]["search"]
        assert want["fit_exact"] and want["memory_checked"] == want["valid"] == got["valid"]
        assert not got["fit_exact"] and got["fit"] <= want["fit"] and got["memory_checked"] < got["valid"]
