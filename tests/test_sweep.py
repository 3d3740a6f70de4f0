"""Sweeps: the file, the hardware what-ifs, the shared search, the executors (local and Ray), the table, resume."""

import json
import math
import textwrap

import pytest

from flopcast import api
from flopcast.cost import calibrations
from flopcast.errors import FlopcastError
from flopcast.model.system import Dtype
from flopcast.plan import forecast
from flopcast.simulate import training
from flopcast.plan.shared import SearchShare, floor, speeds
from flopcast.sweep import executors, hardware, spec, table

TINY = """
name: tiny
models: [llama3-8b]
systems: [trn2.48xlarge, p5.48xlarge]
chips: [8, 16]
tokens: 1T
what_if:
  memory_bandwidth: [1x, 2x]
"""


def _file(tmp_path, text, name="grid.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def _key(rows):
    """What must agree between engines: every column but timing-free text that names a temp path."""
    return [{k: v for k, v in r.items()} for r in rows]


def test_grid_expands_to_the_product(tmp_path):
    s = spec.read(_file(tmp_path, TINY))
    assert len(s.scenarios) == 1 * 2 * 2 * 2
    assert len({x.id for x in s.scenarios}) == len(s.scenarios)
    r = spec.read(_file(tmp_path, "models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: {from: 8, to: 64, times: 2}\n"
                                  "what_if: {memory: {from: 40 GiB, to: 80 GiB, steps: 3}}\n"))
    assert sorted({x.chips for x in r.scenarios}) == [8, 16, 32, 64]
    assert sorted({x.what_if[0][1] for x in r.scenarios}) == pytest.approx([40 * 2**30, 60 * 2**30, 80 * 2**30])


@pytest.mark.parametrize("text, words", [
    ("models: [llama3-8b]\nsystem: [p5.48xlarge]\nchips: 8\n",
     "unknown key 'system' in the sweep file; did you mean 'systems'"),
    ("models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: 8\nwhat_if: {memory_bandwith: [2x]}\n",
     "unknown what-if 'memory_bandwith'; did you mean 'memory_bandwidth'"),
    ("models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: 8\nwhat_if: {memory_bandwidth: [5.8 TB]}\n",
     "is not a bandwidth"),
    ("models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: 0\n", "chips: 0 must be a positive whole number"),
    ("models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: {from: 8, to: 64}\n", "exactly one of times, step or steps"),
    ("models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: 8\nlayout: {tpp: 2}\n", "did you mean 'tp'"),
    ("models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: 8\nobjective: fastest\n", "objective"),
    ("models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: 8\nserving: {slo_ttft: 1s, slo_tpot: 1s}\n",
     "'chips' is a training field"),
    ("- just a list\n", "must hold a mapping"),
])
def test_bad_files_are_one_line_errors(tmp_path, text, words):
    with pytest.raises(FlopcastError) as e:
        spec.read(_file(tmp_path, text))
    assert words in str(e.value) and "\n" not in str(e.value)


def test_unknown_model_or_system_stops_the_sweep(tmp_path):
    for text in ("models: [llama3-8c]\nsystems: [p5.48xlarge]\nchips: 8\n",
                 "models: [llama3-8b]\nsystems: [p5.48xlarg]\nchips: 8\n"):
        with pytest.raises(FlopcastError, match="unknown"):
            api.sweep(_file(tmp_path, text), workers=1)


def test_what_ifs_go_through_the_catalog_loader():
    base = hardware.variant("p5.48xlarge", {})
    v = hardware.variant("p5.48xlarge", {"memory_bandwidth": "2x", "peak_flops.bf16": "1.5x", "power": "500 W",
                                         "scale_out_bandwidth": "100 GB/s"})
    assert v.chip.memory_bandwidth == pytest.approx(2 * base.chip.memory_bandwidth)
    assert v.chip.peak_flops[Dtype.BF16] == pytest.approx(1.5 * base.chip.peak_flops[Dtype.BF16])
    # the measured matmul ceiling moves with the peak: the achievable fraction stays the chip's
    assert v.chip.mamf_fraction(Dtype.BF16) == pytest.approx(base.chip.mamf_fraction(Dtype.BF16))
    assert v.chip.power == 500 and [t.bandwidth for t in v.tiers if t.scale_out] == [100e9]
    assert v.chip.memory == base.chip.memory and v.tiers[0] == base.tiers[0]
    big = hardware.variant("p5.48xlarge", {"scale_up_chips": 64})
    assert big.chips_per_node == 64 and big.tiers[0].size == 64 and big.tiers[0].bandwidth == base.tiers[0].bandwidth
    assert big.price_per_chip_hour == pytest.approx(base.price_per_chip_hour)
    assert hardware.variant("p5.48xlarge", {"memory_bandwidth": "1x"}) is not None
    with pytest.raises(FlopcastError, match="has no price"):
        hardware.variant("trn2.48xlarge", {"price_per_chip_hour": "2x"})
    with pytest.raises(FlopcastError, match="what-if"):
        hardware.variant("p5.48xlarge", {"memory": "0 GiB"})


def test_shared_search_gives_the_full_search_answer():
    """Variants of speed, capacity and price reuse candidates and memory; every answer equals a fresh search."""
    shared = SearchShare()
    for over in ({}, {"memory_bandwidth": "2x"}, {"peak_flops.bf16": "0.5x", "memory": "0.5x"},
                 {"scale_out_bandwidth": "4x", "price_per_hour": "10 USD/h"}, {"memory": "0.01x"}):
        system = hardware.variant("p5.48xlarge", over)
        a = forecast.train("llama3-8b", system, 16, tokens=1e12, shared=shared)
        b = api.train("llama3-8b", system, 16, tokens=1e12)
        assert a.to_dict() == b.to_dict(), over
    assert shared.hits == 4 and shared.misses == 1 and shared.mismatches == 0


@pytest.mark.parametrize("objective", ["throughput", "cost", "time_with_failures"])
def test_bounds_from_faster_variants_skip_no_winner(objective):
    """Faster variants' step times bound the slower ones'; the pruned searches still pick the fresh search's layout."""
    shared = SearchShare()
    grid = [{"memory_bandwidth": bw, "peak_flops.bf16": pk, "scale_up_latency": lat}
            for bw in ("2x", "1x", "0.5x") for pk in ("1x", "0.7x") for lat in ("1 us", "20 us")]
    systems = sorted((hardware.variant("p5.48xlarge", g) for g in grid), key=lambda s: tuple(-x for x in speeds(s)))
    full = 0
    for system in systems:
        a = forecast.train("llama3-8b", system, 64, tokens=1e12, shared=shared, objective=objective)
        b = api.train("llama3-8b", system, 64, tokens=1e12, objective=objective)
        assert a.to_dict() == b.to_dict()
        full += b.search_summary["valid"]
    assert shared.mismatches == 0 and shared.evaluated < full / 3


def test_rows_equal_train_and_a_failing_scenario_is_a_row(tmp_path):
    f = _file(tmp_path, TINY + "layout: [{}, {tp: 3}]\n")
    run = api.sweep(f, tmp_path / "out.csv", workers=1)
    assert run.ran == 16 and run.counts == {"ok": 8, "invalid": 8}
    for row in run.rows:
        if row["layout_pins"]:
            assert row["status"] == "invalid" and "`tp=3`" in row["error"] and row["step_time_s"] is None
            continue
        system = hardware.variant(row["system"], {"memory_bandwidth": row["what_if.memory_bandwidth"]})
        ref = api.train("llama3-8b", system, row["chips"], tokens=1e12)
        assert row["step_time_s"] == ref.step_time_s and row["layout_tp"] == ref.layout.tp
        assert row["cost_usd"] == ref.cost_usd and row["expected_time_to_train_s"] == ref.expected.expected_s
    back = table.read(tmp_path / "out.csv")
    assert [r["scenario_id"] for r in back] == [r["scenario_id"] for r in run.rows]
    assert back[0]["step_time_s"] == pytest.approx(run.rows[0]["step_time_s"])


def test_resume_skips_what_is_done_and_reruns_failures(tmp_path):
    f = _file(tmp_path, TINY)
    out = tmp_path / "out.parquet"
    first = api.sweep(f, out, workers=1)
    assert first.ran == 8 and table.read(out)[0]["status"] == "ok"
    again = api.sweep(f, out, workers=1)
    assert again.ran == 0 and again.skipped == 8 and again.rows == first.rows
    # an interrupted run: the table has two rows, the journal one more, one earlier row had failed
    rows = table.read(out)
    rows[1] = {**rows[1], "status": "failed", "error": "worker process died"}
    table.write(out, rows[:2])
    table.journal_path(out).write_text(json.dumps(rows[2]) + "\n{\"cut short")
    resumed = api.sweep(f, out, workers=1)
    assert resumed.skipped == 2 and resumed.ran == 6 and len(table.read(out)) == 8
    assert not table.journal_path(out).exists()
    assert api.sweep(f, out, workers=1, resume=False).ran == 8


def _double_or_fail(x):
    if x == 3:
        raise FlopcastError("three is bad")
    if x == 4:
        raise ZeroDivisionError("four")
    return 2 * x


def test_executor_streams_results_and_errors():
    for workers, batch in ((1, 1), (2, 2)):
        outs = sorted(executors.run(range(6), _double_or_fail, workers=workers, batch=batch), key=lambda o: o.index)
        assert [o.value for o in outs] == [0, 2, 4, None, None, 10]
        assert outs[3].error == "three is bad" and outs[4].error == "ZeroDivisionError: four"
    with pytest.raises(FlopcastError, match="unknown engine"):
        list(executors.run([1], _double_or_fail, engine="spark"))
    with pytest.raises(FlopcastError, match="for the ray engine"):
        list(executors.run([1], _double_or_fail, address="auto"))


def test_local_pool_and_ray_give_the_same_rows(tmp_path):
    """Ray's local mode gives the local engines' rows, an invalid scenario as its row, and resumes a cut run."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'flopcast[ray]')")
    f = _file(tmp_path, TINY + "layout: [{}, {tp: 3}]\n")
    one = api.sweep(f, workers=1)
    pool = api.sweep(f, workers=2)
    out = tmp_path / "ray.csv"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = api.sweep(f, out, engine="ray")
        outs = sorted(executors.run([4.0, -1.0, 9.0], math.sqrt, engine="ray", batch=2), key=lambda o: o.index)
        assert [o.value for o in outs] == [2.0, None, 3.0] and outs[1].error == "ValueError: math domain error"
        rows = table.read(out)  # cut short after 5 rows, one of them failed: the rest and the failed one rerun
        table.write(out, [*rows[:4], {**rows[4], "status": "failed", "error": "ray task failed"}])
        resumed = api.sweep(f, out, engine="ray")
    finally:
        ray.shutdown()
    assert one.rows == pool.rows == on_ray.rows and on_ray.engine == "ray"
    assert on_ray.counts == {"ok": 8, "invalid": 8} and "`tp=3`" in on_ray.rows[1]["error"]
    assert resumed.skipped == 4 and resumed.ran == 12 and resumed.counts == on_ray.counts
    assert [r["scenario_id"] for r in table.read(out)] == [r["scenario_id"] for r in on_ray.rows]


def test_cli_writes_the_table_and_the_report(tmp_path, capsys):
    from flopcast.cli import main

    f = _file(tmp_path, TINY.replace("chips: [8, 16]", "chips: [8]").replace("[1x, 2x]",
        "[1x, 2x]\n  peak_flops.bf16: [1x, 2x]"))
    out, html = tmp_path / "t.csv", tmp_path / "t.html"
    assert main(["sweep", str(f), "--out", str(out), "--html", str(html), "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert "8 scenarios, 8 run now" in text and "8 ok" in text
    page = html.read_text()
    assert "Sensitivity" in page and "d ln t / d ln x" in page and page.count("<svg") >= 3
    assert len(table.read(out)) == 8
    assert main(["sweep", str(f), "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == 8
    for argv in (["sweep", str(tmp_path / "none.yaml"), "--out", str(out)], ["sweep", str(f), "--out", "x.txt"],
                 ["sweep", str(f), "--out", str(out), "--address", "auto"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1


def test_models_from_files_and_hugging_face_configs(tmp_path):
    """Models resolve as `train` resolves them: a model file and a config.json, relative to the sweep file."""
    from test_hf import LLAMA3_8B

    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(json.dumps(LLAMA3_8B))
    (tmp_path / "mine.yaml").write_text("base: llama3-8b\nlayers: 16\n")
    f = _file(tmp_path, "models: [hf/config.json, mine.yaml, llama3-8b]\nsystems: [p5.48xlarge]\nchips: 8\n"
                        "tokens: 1T\nlayout: {tp: 8, pp: 1, micro_batch: 1, global_batch: 64}\n")
    rows = api.sweep(f, workers=1).rows
    assert [r["status"] for r in rows] == ["ok"] * 3
    assert rows[0]["step_time_s"] == pytest.approx(rows[2]["step_time_s"], rel=0.01)
    assert rows[1]["step_time_s"] < 0.6 * rows[2]["step_time_s"]


def test_time_with_failures_ranks_by_expected_time():
    """The layout with the shortest expected time with failures: never longer than the fastest layout's."""
    kw = dict(tokens=1e12, tp=1, pp=1)
    best = forecast.train("llama3-8b", "p5.48xlarge", 64, objective="time_with_failures", **kw)
    fast = forecast.train("llama3-8b", "p5.48xlarge", 64, **kw)
    assert best.expected.expected_s <= fast.expected.expected_s
    with pytest.raises(FlopcastError, match="needs a token budget"):
        forecast.train("llama3-8b", "p5.48xlarge", 64, objective="time_with_failures")


def test_a_faster_variants_floor_bounds_a_slower_ones_steps():
    """A faster chip can give a layout a longer step: on DGX B200 a BF16 peak 2x shortens the compute window the
    data-parallel and pipeline communication hide behind, and hundreds of layouts expose more than the compute
    saves. The faster variant's steps are then no bound (the 1,024-chip sweep's IndexError, later its full-search
    fallback); its floor (the step less those parts) is, so the slower variant's pruned search needs no fallback
    and answers as a fresh search does."""
    knobs = {"memory_bandwidth": "0.5x", "scale_out_bandwidth": "0.5x", "scale_up_bandwidth": "2x"}
    fast = hardware.variant("dgx-b200", {**knobs, "peak_flops.bf16": "2x"})
    slow = hardware.variant("dgx-b200", {**knobs, "peak_flops.bf16": "1.5x"})  # a failed row of the sweep
    shared = SearchShare()
    forecast.train("llama3-8b", fast, 1024, tokens=1e12, shared=shared)
    a = forecast.train("llama3-8b", slow, 1024, tokens=1e12, shared=shared)
    assert shared.mismatches == 0
    assert a.to_dict() == api.train("llama3-8b", slow, 1024, tokens=1e12).to_dict()
    lb = next(iter(shared.entries.values())).batch
    model, cal = api.resolve_model("llama3-8b"), calibrations.training(None)
    on_fast, on_slow = training.evaluate(model, fast, lb, cal), training.evaluate(model, slow, lb, cal)
    assert (on_fast["step_time_s"] > on_slow["step_time_s"] * (1 + 1e-9)).any()  # the step is not monotone
    assert (floor(on_fast, lb.schedule) <= on_slow["step_time_s"] * (1 + 1e-12)).all()  # its floor is a bound


def test_a_bound_above_every_step_falls_back_to_the_full_search():
    """Were a faster variant's steps not a lower bound (a step time not monotone in the speeds), the pruned search
    must not come back empty (an IndexError in a 1,024-chip B200 sweep): it sees the violation on the probe and
    searches in full."""
    shared = SearchShare()
    system = hardware.variant("p5.48xlarge", {})
    forecast.train("llama3-8b", system, 64, tokens=1e12, shared=shared)
    for bounds in shared.bounds.values():
        for i, b in enumerate(bounds):
            bounds[i] = type(b)(b.speeds, b.calibration, b.step * 100.0)  # a bound far above every exact step
    slower = hardware.variant("p5.48xlarge", {"memory_bandwidth": "0.9x"})
    a = forecast.train("llama3-8b", slower, 64, tokens=1e12, shared=shared)
    assert a.to_dict() == api.train("llama3-8b", slower, 64, tokens=1e12).to_dict()
    assert shared.mismatches == 1
