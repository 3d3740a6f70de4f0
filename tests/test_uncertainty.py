"""Prediction intervals: the conformal bounds, pooling and nesting, honest coverage, the keys they add."""

import math

import pytest

from flopcast import api
from flopcast.cost import uncertainty as cu
from flopcast.cost.uncertainty import Basis, Interval, Task, kind_key
from flopcast.validate import uncertainty as vu


def _res(kind, values, source="s"):
    return [vu.Residual(f"{source}{i}", source, kind, v) for i, v in enumerate(values)]


def test_bounds_are_the_conformal_order_statistics():
    # n = 9, level 0.8: k = ceil(10 x 0.9) = 9 -> the largest; from below the 1st -> the smallest
    vals = [0.05 * i for i in range(-4, 5)]
    assert vu.bounds(vals, 0.8) == (pytest.approx(-0.2), pytest.approx(0.2))
    # n = 19: k = ceil(20 x 0.9) = 18 -> the second largest and the second smallest
    vals = list(range(19))
    assert vu.bounds(vals, 0.8) == (1.0, 17.0)
    # few values: never narrower than the data
    assert vu.bounds([0.1, -0.3], 0.8) == (-0.3, 0.1)


def test_few_residuals_pool_with_the_broader_kind_and_keep_their_own_extremes():
    own = kind_key(Task.TRAINING, Basis.OWN, False)
    unseen = kind_key(Task.TRAINING, Basis.UNSEEN, False)
    rs = _res(own, [0.01 * i for i in range(-10, 11)]) + _res(unseen, [-0.6, 0.3], "t")
    table = vu.fit(rs, Task.TRAINING)
    assert table[own]["pooled"] == ""
    u = table[unseen]
    assert u["own_residuals"] == 2 and "pooled" in u["pooled"]
    assert u["log_error_low"] <= -0.6 and u["log_error_high"] >= 0.3  # its own misses stay inside
    # nesting: unseen contains family contains own
    fam = table[kind_key(Task.TRAINING, Basis.FAMILY, False)]
    for wide, narrow in ((u, fam), (fam, table[own])):
        assert wide["log_error_low"] <= narrow["log_error_low"] and wide["log_error_high"] >= narrow["log_error_high"]
    # every kind of the task gets an interval, MoE ones pooled from dense where MoE has none
    assert set(table) == {kind_key(Task.TRAINING, b, m) for b in Basis for m in (False, True)}


def test_training_kinds_split_by_matrix_unit_each_from_its_own_residuals():
    """Systolic (TPU, Trainium) and GPU errors set their own intervals; a unit with too few pools with the other."""
    assert (cu.unit_of("tpu"), cu.unit_of("trainium"), cu.unit_of("nvidia-hopper")) == ("systolic", "systolic", "gpu")
    gpu, sys_ = (kind_key(Task.TRAINING, Basis.OWN, False, u) for u in ("gpu", "systolic"))
    rs = _res(gpu, [0.01 * i for i in range(-10, 11)]) + _res(sys_, [0.04 * i for i in range(-10, 11)], "t")
    few = kind_key(Task.TRAINING, Basis.FAMILY, False, "systolic")
    rs += _res(few, [0.5, -0.1], "f") + _res(kind_key(Task.TRAINING, Basis.FAMILY, False, "gpu"), [0.0] * 8, "g")
    table = vu.fit(rs, Task.TRAINING)
    assert set(table) == {kind_key(Task.TRAINING, b, m, u) for b in Basis for m in (False, True) for u in cu.UNITS}
    g, s = table[gpu], table[sys_]
    assert g["pooled"] == s["pooled"] == "" and g["own_residuals"] == s["own_residuals"] == 21
    assert s["log_error_high"] - s["log_error_low"] == pytest.approx(4 * (g["log_error_high"] - g["log_error_low"]))
    # two systolic family residuals: pooled with the GPU ones of the same basis, their own extremes kept inside,
    # and no narrower than the systolic own-chip interval
    f = table[few]
    assert "pooled as training/family/dense" in f["pooled"] and f["residuals"] == 10
    assert f["log_error_high"] >= 0.5 and f["log_error_low"] <= s["log_error_low"]
    # a table written before the split still answers a split kind with its unsplit interval
    old = {"training": {"kinds": {"training/own/dense": {"log_error_low": -0.1, "log_error_high": 0.1}}}}
    assert cu.interval_for(gpu, old).kind == "training/own/dense"


def test_coverage_never_uses_the_scored_source():
    """A source whose errors are far from everyone else's is not covered: its own residuals would cover it."""
    kind = kind_key(Task.TRAINING, Basis.OWN, False)
    rs = []
    for s in range(6):
        rs += _res(kind, [0.02 * ((i + s) % 5 - 2) for i in range(5)], f"src{s}")
    rs += _res(kind, [0.9, 0.95, 1.0], "outlier")
    cov = vu.coverage(rs, Task.TRAINING)
    assert cov["n"] == len(rs)
    # the outlier source's three rows lie outside the interval fitted on the other sources
    out = vu.fit([r for r in rs if r.source != "outlier"], Task.TRAINING)[kind]
    assert all(r.log_error > out["log_error_high"] for r in rs if r.source == "outlier")
    assert cov["covered"] <= cov["n"] - 3
    # whereas the interval fitted on every source (in sample) reaches them: scoring in sample would flatter
    inside = vu.fit(rs, Task.TRAINING)[kind]
    in_sample = sum(inside["log_error_low"] <= r.log_error <= inside["log_error_high"] for r in rs)
    assert in_sample > cov["covered"]


def test_interval_factors_apply_to_speeds_and_times():
    i = Interval(0.8, 0.8, 1.25, "training/own/dense", 10)
    assert i.speed(100.0) == (80.0, 125.0)
    assert i.time(10.0) == (8.0, 12.5)
    table = {"training": {"level": 0.8, "kinds": {"training/own/dense": {
        "log_error_low": -math.log(1.25), "log_error_high": -math.log(0.8), "residuals": 10}}}}
    got = cu.interval_for("training/own/dense", table)
    assert got.low == pytest.approx(0.8) and got.high == pytest.approx(1.25)
    assert cu.interval_for("training/unseen/moe", table) is None


def test_train_json_has_low_and_high_next_to_each_headline_key():
    r = api.train("gpt3-175b", hardware="dgx-a100-80gb", chips=1024, tp=8, pp=16, micro_batch=1,
                  global_batch=1536, recompute="full", tokens=3e11)
    assert r.interval is not None, "uncertainty.yaml ships a training section"
    assert r.interval.kind == "training/own/dense/gpu"  # A100 has its own runs in the calibration
    d = r.to_dict()
    keys = list(d)
    for k in ("step_time_s", "tokens_per_s", "tokens_per_s_per_chip", "mfu", "time_to_train_s",
              "expected_time_to_train_s", "chip_hours", "energy_kwh"):
        assert keys[keys.index(k) + 1] == f"{k}_low" and keys[keys.index(k) + 2] == f"{k}_high"
        assert d[f"{k}_low"] <= d[k] <= d[f"{k}_high"]
    assert d["step_time_s_low"] == pytest.approx(d["step_time_s"] / r.interval.high)
    assert d["interval"]["kind"] == "training/own/dense/gpu"


def test_unseen_chip_is_not_surer_than_a_calibrated_one():
    own = api.train("llama3-8b", hardware="p5.48xlarge", chips=64, tp=1, pp=1, micro_batch=1, global_batch=64)
    unseen = api.train("llama3-8b", hardware="mi355x-8", chips=64, tp=1, pp=1, micro_batch=1, global_batch=64)
    assert unseen.interval.kind.startswith("training/unseen")
    width = lambda r: r.interval.high / r.interval.low
    assert width(unseen) >= width(own)


def test_serving_result_carries_intervals():
    from flopcast import catalog
    from flopcast.cost import inference as inf

    d = inf.deployment(catalog.load_model("llama3-8b"), catalog.system_for("p5.48xlarge"))
    r = inf.predict(d, 4, 512, 128).to_dict()
    assert r["interval"] is not None
    for k in ("ttft_s", "tpot_s", "decode_tokens_per_s_per_stream", "output_tokens_per_s_total"):
        assert r[f"{k}_low"] <= r[k] <= r[f"{k}_high"]


def test_unseen_family_interval_is_symmetric_in_log_space():
    own = kind_key(Task.TRAINING, Basis.OWN, False)
    unseen = kind_key(Task.TRAINING, Basis.UNSEEN, False)
    rs = _res(own, [0.01 * i for i in range(-10, 11)]) + _res(unseen, [0.7, 0.65], "t")  # it ran slower only
    u = vu.fit(rs, Task.TRAINING)[unseen]
    assert u["log_error_low"] == pytest.approx(-u["log_error_high"]) and u["log_error_high"] >= 0.7


def test_shipped_coverage_leaves_out_rows_the_calibration_was_fitted_on(tmp_path):
    import csv

    from flopcast import catalog
    from flopcast.validate import training as vt

    header, rows = vt.read_table("validation/calibration_runs.csv")
    a100 = [r for r in rows if r["hardware"] == "a100-80gb"][:3]
    path = tmp_path / "mine.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerows({**r, "source": "new"} for r in a100)
    cases = vt.load_cases(path)[0]
    assert set(vu.shipped_kinds(cases, catalog.calibration()).values()) == {"training/own/dense/gpu"}
    # predictions at, 4% under and 3x under each measurement: the last lies outside the own-chip interval
    results = [vt.RowResult(c.run_id, "new", "", "", 1, "ok", predicted=c.measured * f, measured=c.measured)
               for c, f in zip(cases, (1.0, 1 / 1.04, 1 / 3))]
    prov = {"data_file": "mine.csv", "rows": [cases[0].run_id]}
    cov = vu.shipped_coverage(path, results, "training", prov)
    assert cov["excluded"] == 1 and cov["n"] == 2 and cov["covered"] == 1
    assert vu.shipped_coverage(path, results, "training", {"data_file": "other.csv"})["n"] == 3


def test_fold_kinds_see_only_the_other_sources():
    from flopcast.validate import training as vt

    cases = vt.load_cases("validation/calibration_runs.csv")[0]
    kinds = vu.fold_kinds(cases)
    trn1 = [c.run_id for c in cases if c.system.chip.id == "trainium1"]
    assert trn1 and all(kinds[r] == "training/unseen/dense/systolic" for r in trn1)  # its one source left out
    h100 = [c.run_id for c in cases if c.system.chip.id == "h100-sxm" and not c.model.moe]
    assert all(kinds[r] == "training/own/dense/gpu" for r in h100)


def test_shipped_intervals_cover_every_kind_nested_with_provenance():
    table = cu._table()
    for task in Task:
        sec = table[task.value]
        assert sec["provenance"]["command"].startswith("flopcast validate ")
        assert sec["provenance"]["n_residuals"] == sec["coverage"]["n"] > 0
        assert 0 < sec["coverage"]["coverage"] <= 1
        for moe, unit in ((m, u) for m in (False, True) for u in (cu.UNITS if task == Task.TRAINING else (None,))):
            widths = [cu.interval_for(kind_key(task, b, moe, unit)) for b in Basis]
            assert all(w.kind == kind_key(task, b, moe, unit) for w, b in zip(widths, Basis))
            for narrow, wide in zip(widths, widths[1:]):
                assert wide.low <= narrow.low <= 1.0 <= narrow.high <= wide.high


def _cli(args, capsys):
    from flopcast.cli import main

    code = main(args)
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_serve_simulates_each_end_of_the_interval(capsys):
    import json

    args = ["serve", "llama3-8b", "--hardware", "p5.48xlarge", "--qps", "20", "--requests", "60"]
    text = _cli(args, capsys)
    assert "(80%, p50:" in text and "each end simulated" in text
    d = json.loads(_cli(args + ["--json"], capsys))
    for k in ("ttft_s", "tpot_s"):
        assert d[f"{k}_low"]["p50"] <= d[k]["p50"] <= d[f"{k}_high"]["p50"]
    assert d["output_tokens_per_s_low"] <= d["output_tokens_per_s"] <= d["output_tokens_per_s_high"]
    assert d["interval"]["kind"] == "serving/own/dense"


def test_infer_and_train_text_show_ranges(capsys):
    assert "(80%:" in _cli(["infer", "llama3-8b", "--hardware", "p5.48xlarge"], capsys)
    text = _cli(["train", "llama3-8b", "--hardware", "tpu7x-pod", "--chips", "64", "--tp", "1", "--pp", "1",
                 "--global-batch", "64", "--micro-batch", "1"], capsys)
    assert "step time" in text and "(80%:" in text and "training/family/dense" in text  # TPU7x: its family's runs


def test_file_names_of_paths_joined_names_and_lists():
    assert vu.file_names("validation/calibration_runs.csv") == {"calibration_runs.csv"}
    assert vu.file_names("calibration_runs.csv + more_training_runs.csv") == {"calibration_runs.csv",
                                                                              "more_training_runs.csv"}
    assert vu.file_names(["a/x.csv", "y.csv"]) == {"x.csv", "y.csv"}
    assert vu.file_names(None) == set()
