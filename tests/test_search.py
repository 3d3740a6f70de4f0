"""The layout search: it beats stated layouts, every validity rule fires, and plan --deadline is minimal."""

import csv

import numpy as np
import pytest

from flopcast import api, catalog
from flopcast.model.strategy import Layout, LayoutBatch, Recompute, Schedule, Sharding, parse_choice
from flopcast.model.system import Dtype
from flopcast.plan import capacity
from flopcast.plan import search as search_mod
from flopcast.simulate import training
from flopcast.validate.training import case_of

STATED = ("tp", "pp", "dp", "micro_batch", "global_batch", "recompute")


def _int(v, default=None):
    v = (v or "").strip()
    return int(float(v)) if v else default


def _stated_rows(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if all((r.get(k) or "").strip() for k in STATED)]


def test_search_beats_every_stated_layout(calibration_csv):
    rows = _stated_rows(calibration_csv)
    assert rows, "no calibration row states its whole layout"
    cal = catalog.calibration()
    checked = 0
    for row in rows:
        case = case_of(row)
        m, system, chips = case.model, case.system, case.chips
        pinned = case.space.pinned()
        tp, pp = pinned["tp"][0], pinned["pp"][0]
        cp = pinned.get("cp", (1,))[0]
        dp = pinned["dp"][0] if "dp" in pinned else chips // (tp * pp * cp)
        vp = _int(row.get("vp"), 1)
        sharding = (row.get("sharding") or "").strip()
        stated = Layout(
            tp=tp, pp=pp, dp=dp, cp=cp, ep=_int(row.get("ep"), 1), vp=vp,
            micro_batch=_int(row["micro_batch"]), global_batch=_int(row["global_batch"]),
            recompute=parse_choice(Recompute, row["recompute"].strip(), "recompute"),
            sharding=parse_choice(Sharding, sharding, "sharding") if sharding else Sharding.ZERO1,
            sequence_parallel=tp > 1, dtype=Dtype.parse(row["dtype"]),
            schedule=Schedule.INTERLEAVED if vp > 1 else Schedule.ONE_F_ONE_B)
        ref = training.evaluate(m, system, LayoutBatch.of([stated]), cal)
        if not bool(np.asarray(ref["fits"])[0]):
            continue  # the stated layout does not fit in flopcast's memory model: nothing to beat
        space = search_mod.SearchSpace(global_batch=(stated.global_batch,), dtype=(stated.dtype,))
        out = search_mod.search(m, system, chips, cal, space)
        assert out.n_fit > 0, f"run {case.run_id}: the search found nothing that fits ({out.rejected})"
        best = float(out.results["tokens_per_s"][out.order[0]])
        stated_rate = float(np.asarray(ref["tokens_per_s"])[0])
        assert best >= stated_rate * (1 - 1e-12), (
            f"run {case.run_id}: search best {best:.1f} tok/s < stated {stated.describe()} {stated_rate:.1f} tok/s")
        checked += 1
    assert checked, "every stated layout failed to fit; nothing was compared"


def test_every_rejection_rule_is_exercised():
    m = api.resolve_model("gpt3-175b")  # 96 heads, 96 layers, dense
    moe = api.resolve_model("deepseek-v3")
    system = api.resolve_system("dgx-a100-80gb")  # 8 chips per node
    chips = 64
    bad = [
        Layout(tp=5, pp=1, dp=12, global_batch=12),  # tp does not divide heads (and not 64 chips)
        Layout(tp=16, pp=4, dp=1, global_batch=16),  # tp beyond one node
        Layout(tp=8, pp=8, dp=1, vp=16, global_batch=16, schedule=Schedule.INTERLEAVED),  # pp x vp > layers
        Layout(tp=8, pp=8, dp=1, vp=2, global_batch=16, schedule=Schedule.ONE_F_ONE_B),  # vp without interleaving
        Layout(tp=8, pp=1, dp=8, micro_batch=3, global_batch=16),  # global batch does not divide
        Layout(tp=8, pp=1, dp=1, cp=3, global_batch=16),  # cp does not divide the sequence
        Layout(tp=8, pp=1, dp=8, ep=2, global_batch=16),  # ep on a dense model
        Layout(tp=1, pp=8, dp=8, sequence_parallel=True, global_batch=64),  # sp with tp=1
        Layout(tp=8, pp=8, dp=2, global_batch=16),  # more chips than available
        Layout(tp=8, pp=8, dp=1, global_batch=4, schedule=Schedule.DUALPIPE),  # fewer than 2 pp micro-batches
        Layout(tp=8, pp=1, dp=8, global_batch=16, recompute=Recompute.FULL, schedule=Schedule.ONE_F_ONE_B_OVERLAP),
        Layout(tp=8, pp=1, dp=8, global_batch=16, etp=1),  # an expert tensor-parallel degree on a dense model
    ]
    rules = search_mod.rules(m, system, LayoutBatch.of(bad), chips, exact_chips=True)
    never = [name for name, ok in rules.items() if ok.all()]
    assert not never, f"rules never exercised: {never}"
    # the MoE branch of the ep rule: ep must divide the experts, etp x ep the stage's tp x cp x dp ranks; ep may fold
    # over the tp ranks with etp = 1, and etp < tp needs sequence parallelism
    lay = [Layout(tp=1, pp=1, dp=8, ep=3, global_batch=8), Layout(tp=2, pp=1, dp=4, ep=8, global_batch=8),
           Layout(tp=2, pp=1, dp=4, ep=8, etp=1, global_batch=8),
           Layout(tp=2, pp=1, dp=4, ep=8, etp=1, global_batch=8, sequence_parallel=False)]
    moe_rules = search_mod.rules(moe, system, LayoutBatch.of(lay), 8, exact_chips=True)
    assert moe_rules[search_mod.EP_RULE].tolist() == [False, False, True, True]
    assert moe_rules[search_mod.ETP_RULE].tolist() == [True, True, True, False]
    # the rules the search itself applies outside `rules`: memory and the cluster size
    cal = catalog.calibration()
    out = search_mod.search(m, system, 16, cal, search_mod.SearchSpace(global_batch=(64,), pp=(1, 2, 64)))
    assert out.rejected.get("does not fit in memory", 0) > 0
    assert out.rejected.get("more chips than the cluster has", 0) > 0


def test_plan_deadline_is_the_cheapest_cluster_and_keeps_the_smallest():
    cal = catalog.calibration()
    m = api.resolve_model("gpt3-175b")
    system = api.resolve_system("dgx-a100-80gb")
    space = search_mod.SearchSpace(global_batch=(1536,))
    tokens = 3e10
    out = capacity.plan_deadline(m, system, tokens, 14 * 86400, cal, space)
    assert out.chosen.result.time_to_train_s <= 14 * 86400
    assert out.chosen.chips == out.chosen.nodes * system.chips_per_node
    # the chosen cluster is the cheapest that meets the deadline (chip-hours held: this system has no price), which
    # may be larger than the smallest one where a better layout fits; the smallest is the minimal one
    held = lambda p: p.expected_s * p.chips  # noqa: E731
    assert out.smallest.nodes <= out.chosen.nodes and held(out.chosen) <= held(out.smallest)
    n = out.smallest.nodes
    assert out.smallest.expected_s <= 14 * 86400
    assert n > 1, "deadline too loose to test minimality"
    fewer = search_mod.search(m, system, (n - 1) * system.chips_per_node, cal, space)
    if fewer.n_fit:
        t = tokens / float(fewer.results["tokens_per_s"][fewer.order[0]])
        assert t > 14 * 86400
    # the result equals a direct forecast of the chosen layout
    lay = out.chosen.result.layout
    ref = api.train(m, system, lay.chips, calibration=cal, **{k: getattr(lay, k) for k in lay.__dataclass_fields__})
    assert ref.step_time_s == pytest.approx(out.chosen.result.step_time_s, rel=1e-9)


def test_training_dtypes_need_their_units():
    """FP8 needs FP8 units (A100 has none) and int8 is not a training dtype: the search says so."""
    m, system = api.resolve_model("llama2-7b"), api.resolve_system("p4d.24xlarge")
    space = search_mod.SearchSpace(dtype=(Dtype.BF16, Dtype.FP8, Dtype.INT8), global_batch=(64,), pp=(1,))
    out = search_mod.search(m, system, 8, catalog.calibration(), space)
    assert any("no FP8 units" in k for k in out.rejected) and any("int8" in k for k in out.rejected)
    assert out.n_fit > 0 and set(out.batch.dtype.tolist()) == {int(Dtype.BF16)}


def test_candidates_judged_in_slices_equal_all_at_once(monkeypatch):
    """_valid expands the base rows a slice at a time (bounded memory for large MoE models): the same layouts in
    the same order, the same rejection counts and dtype counts as one expansion."""
    import numpy as np

    from flopcast import catalog
    from flopcast.model.strategy import LAYOUT_FIELDS
    from flopcast.plan import search as S

    m, s = catalog.load_model("mixtral-8x7b"), catalog.system_for("p5.48xlarge")
    whole = S._valid(m, s, 64, S.SearchSpace(), True)
    monkeypatch.setattr(S, "EXPAND_ROWS", 1000)
    sliced = S._valid(m, s, 64, S.SearchSpace(), True)
    assert all(np.array_equal(getattr(whole[0], n), getattr(sliced[0], n)) for n in LAYOUT_FIELDS)
    assert whole[1:] == sliced[1:] and whole[0].size > 1000
