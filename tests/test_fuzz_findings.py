"""What the fuzz campaign (benchmarks/fuzz_campaign.py) found, each kept as a test: a Hugging Face config with a
wrong `architectures`, --price/--power/--pue past their bounds, the bill of a run that never finishes, a benchmark
load cell past its column's range."""

import json
import math

import pytest

from flopcast.cli import main
from flopcast.cost import economics


@pytest.mark.parametrize("value", [5, [5], "LlamaForCausalLM", [None]])
def test_a_config_whose_architectures_is_not_a_list_of_names_is_one_line(tmp_path, capsys, value):
    cfg = {"architectures": value, "model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 512, "vocab_size": 1000,
           "max_position_embeddings": 512}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert main(["train", str(path), "-H", "p5.48xlarge", "-n", "8", "--tp", "1", "--pp", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "architectures" in err and "list of class names" in err, err


@pytest.mark.parametrize("flag,value", [("--price", "inf"), ("--price", "1e308"), ("--power", "nan"),
                                        ("--power", "1e30"), ("--pue", "0"), ("--pue", "inf")])
def test_price_power_and_pue_are_bounded(capsys, flag, value):
    assert main(["train", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", "--tp", "1", "--pp", "1", flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {flag} '{value}' is ") and "valid: a finite number" in err, err


def test_a_run_that_never_finishes_has_no_bill():
    rates = economics.Rates(40.0, "user", 700.0, "user", 0.0, 1.2, "user")
    b = economics.bill(8, 1, 3600.0, math.inf, rates)
    assert b.cost_usd is None and b.energy_kwh is None and not b.cost_breakdown_usd
    finite = economics.bill(8, 1, 3600.0, 7200.0, rates)
    assert finite.cost_usd == pytest.approx(80.0) and finite.cost_breakdown_usd["compute"] == pytest.approx(40.0)


def test_a_run_that_never_finishes_says_so_in_text_and_json(capsys):
    argv = ["train", "narayanan-gpt-529.6b", "-H", "graviton4", "-n", "2", "--tp", "1", "--pp", "2", "--sharding",
            "zero2", "--power", "700"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "never finishes with faults" in out and "cost n/a" in out and "energy n/a" in out
    words = set(out.lower().replace(",", " ").replace("(", " ").replace(")", " ").split())
    assert not words & {"inf", "nan", "$inf", "-inf"}, out
    assert main(argv + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert d["cost_usd"] is None and d["energy_kwh"] is None and d["expected_time_to_train_s"] is None
    assert d["unavailable"]["cost"].startswith("never finishes")


@pytest.mark.parametrize("col,value", [("duration_s", "1e308"), ("duration_s", "0"), ("concurrency", "1e30"),
                                       ("request_rate_per_s", "inf"), ("server_batch", "2.5"),
                                       ("input_tokens_spread", "-1")])
def test_a_benchmark_load_cell_out_of_its_range_is_one_sentence(col, value):
    from flopcast.errors import FlopcastError
    from flopcast.validate import benchmark

    row = {"load": "synchronous", "load_tool": "guidellm", col: value}
    with pytest.raises(FlopcastError) as err:
        benchmark.load_of(row, 1)
    assert col in str(err.value) and "\n" not in str(err.value)
    assert benchmark.load_of({"load": "synchronous", "duration_s": "60"}, 1)[0].duration_s == 60.0


def test_search_top_is_a_list_a_person_reads(capsys):
    """--top 1e6 built a million forecasts (minutes); at most 1,000 now, one sentence past it."""
    assert main(["search", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", "--top", "1001"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--top '1001' is out of range" in err and "1,000" in err, err


@pytest.mark.parametrize("target", ["/dev/full", "list.yaml"])
def test_write_intervals_to_what_is_not_an_intervals_file_is_one_sentence(tmp_path, capsys, target):
    """--write-intervals /dev/full read the device to keep the file's other section, until memory ran out."""
    path = target if target.startswith("/") else str(tmp_path / target)
    if target == "list.yaml":
        (tmp_path / target).write_text("- 1\n- 2\n")
        from flopcast.errors import FlopcastError
        from flopcast.validate import uncertainty

        with pytest.raises(FlopcastError, match="not an intervals file"):
            uncertainty.write(tmp_path / target, uncertainty.Task.TRAINING, {})
        return
    assert main(["validate", "validation/memory_runs.csv", "--cross-validate", "--write-intervals", path]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "write-intervals" in err and "not an intervals file" in err, err


@pytest.mark.parametrize("repeat", ["same run_id", "over the cap"])
def test_a_serving_fit_reads_each_run_once_and_a_bounded_number_of_rows(tmp_path, capsys, repeat):
    """`calibrate` on 161 serving rows, copies of three runs, took 44-54 s of CPU (fuzz seed 401, case 351): each
    evaluation of the fit simulates every row, and a repeated run_id silently replaced the earlier figure."""
    import csv

    from flopcast.validate.rows import MAX_SERVING_FIT_ROWS

    with open("validation/inference_runs.csv", newline="") as f:
        reader = csv.DictReader(f)
        header, first = reader.fieldnames, next(reader)
    n = 2 if repeat == "same run_id" else MAX_SERVING_FIT_ROWS + 1
    rows = [{**first, "run_id": first["run_id"] if repeat == "same run_id" else f"r{i}"} for i in range(n)]
    path = tmp_path / "serving.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, header)
        w.writeheader()
        w.writerows(rows)
    assert main(["calibrate", str(path), "--out", str(tmp_path / "cal.yaml")]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]  # after the progress line
    assert len(err) == 1, err
    err = err[0]
    assert ("repeats row 1" in err) if repeat == "same run_id" else (f"at most {MAX_SERVING_FIT_ROWS}" in err), err
    assert not (tmp_path / "cal.yaml").exists()


@pytest.mark.parametrize("cfg", [{"model_type": ["llama"]}, {"model_type": {"a": 1}}, {"architectures": 5},
                                 {"architectures": [["LlamaForCausalLM"]]}])
def test_a_config_whose_model_type_or_architectures_has_the_wrong_type_is_one_line(tmp_path, capsys, cfg):
    # fuzz seed 501, case 2862: a model_type that is a list was looked up in a dict (TypeError: unhashable)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, **cfg}))
    assert main(["report", str(path), "-H", "c7gn.2xlarge", "--recompute", "selective"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ("model_type" in err or "architectures" in err), err


def test_a_serve_report_where_every_request_is_rejected_draws_gaps(tmp_path, capsys):
    """Fuzz seed 602, case 56: every prompt too long for the KV memory, so no latency percentile at any rate; the
    figure plotted None * 1e3 (TypeError) instead of leaving a gap."""
    html = tmp_path / "r.html"
    argv = ["serve", "llama2-7b", "-H", "r8g.2xlarge", "--requests", "10", "--qps", "1", "--prefix-tokens",
            "1000000", "--html", str(html)]
    assert main(argv) == 0, capsys.readouterr().err
    assert "rejected" in capsys.readouterr().out and html.stat().st_size > 1000


def test_a_deadline_no_cluster_meets_is_named_in_its_own_unit(capsys):
    """A deadline of one second was named `0.0 days` (and the fastest cluster's 79 minutes `0.1 days`)."""
    from flopcast.units import fmt_duration

    assert fmt_duration(1e-6) == "1.0 us" and fmt_duration(0.5) == "500.0 ms" and fmt_duration(0.0) == "0.0 ms"
    assert main(["plan", "llama3-8b", "-H", "trn2.48xlarge", "--deadline", "1s", "--tokens", "1e9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert " in 1.00 s with faults" in err and "0.0 days" not in err, err


_LLAMA4 = {"architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text", "hidden_size": 1024,
           "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 2816,
           "vocab_size": 32000, "max_position_embeddings": 4096, "num_local_experts": 16, "num_experts_per_tok": 1,
           "intermediate_size_mlp": 16384, "interleave_moe_layer_step": 2, "moe_layers": [1, 3]}
_QWEN2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 1024, "num_hidden_layers": 4,
          "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 2816, "vocab_size": 32000,
          "max_position_embeddings": 4096, "sliding_window": 1024, "use_sliding_window": True,
          "max_window_layers": 2}


@pytest.mark.parametrize("base,change,expected", [
    # past the model schema's bounds (a llama4 of 2**31 layers built a list of a billion layer indices: MemoryError;
    # 2**40 heads with 3 kv heads listed the divisors of 2**40 one by one: a hang)
    (_LLAMA4, {"num_hidden_layers": 20_000}, "num_hidden_layers: 20000; valid: a positive integer up to 10,000"),
    (_LLAMA4, {"num_attention_heads": 2**40}, "up to 65,536"),
    (_LLAMA4, {"hidden_size": 2**21}, "hidden_size: 2097152; valid: a positive integer up to 1,048,576"),
    # a JSON string is not a boolean ("false" read as true); layer lists that are not lists (TypeError)
    (_LLAMA4, {"tie_word_embeddings": "false"}, "tie_word_embeddings: 'false'; valid: true or false"),
    (_LLAMA4, {"moe_layers": 5}, "moe_layers: 5; valid: a list of layer indices"),
    (_LLAMA4, {"moe_layers": [1, "x"]}, "valid: a list of layer indices"),
    (_QWEN2, {"max_window_layers": "x"}, "max_window_layers: 'x'; valid: an integer of at least 0"),
    (_QWEN2, {"use_sliding_window": "no"}, "use_sliding_window: 'no'; valid: true or false"),
])
def test_hugging_face_values_are_read_by_the_model_schema(tmp_path, capsys, base, change, expected):
    """Fuzz seed 7000 of benchmarks/fuzz_wide.hf_config: MemoryError, a hang, TypeErrors, a silently true string."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**base, **change}))
    assert main(["infer", str(path), "-H", "p5.48xlarge"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err


def test_more_full_attention_entries_than_layers_is_no_zero_step(tmp_path, capsys):
    cfg = {**_QWEN2, "model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"], "head_dim": 64,
           "layer_types": ["full_attention"] * 100}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert main(["infer", str(path), "-H", "p5.48xlarge"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("body", ["1,2,3,4\n", "1\n"])
def test_an_earlier_sweep_output_with_ragged_rows_is_one_sentence(tmp_path, capsys, body):
    """Fuzz seed 604, case 187: a row with more cells than the header came back keyed None (AttributeError)."""
    spec = tmp_path / "s.yaml"
    spec.write_text("models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: [8]\n")
    out = tmp_path / "out.csv"
    out.write_text("scenario,model\n" + body)
    assert main(["sweep", str(spec), "--out", str(out)]) == 2
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]  # after a progress line
    assert len(errors) == 1 and "line 2 has" in errors[0] and "--no-resume" in errors[0], errors


def test_a_sweep_journal_line_that_is_not_a_row_is_not_resumed(tmp_path, capsys):
    """Fuzz seed 701, case 370: a journal line holding a JSON list reached `.get` (AttributeError)."""
    from flopcast.sweep import table

    spec = tmp_path / "s.yaml"
    spec.write_text("models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: [8]\n")
    out = tmp_path / "out.csv"
    table.journal_path(out).write_text('[1, 2]\n"text"\n{"scenario_id": "x", "status": "ok"}\n')
    assert main(["sweep", str(spec), "--out", str(out), "--json"]) == 0, capsys.readouterr().err
    assert {r.get("scenario_id") for r in table.read(out)} != {"x"}  # the run's own scenario was computed


@pytest.mark.parametrize("pin", ["{pp: [1, 2]}", "{cp: {a: 1}}"])
def test_a_layout_pin_that_is_a_list_is_one_sentence(tmp_path, capsys, pin):
    """Fuzz seed 701, case 3400: `layout: {pp: [1, 2]}` reached a dict key (TypeError: unhashable list)."""
    spec = tmp_path / "s.yaml"
    spec.write_text(f"models: [llama3-8b]\nsystems: [p5.48xlarge]\nchips: [8]\nlayout: {pin}\n")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a pin is one value" in err, err


@pytest.mark.parametrize("text,message", [
    ("families: {trainium: {memory: 0}}\n", "families.trainium.memory: 0; valid: a finite number above 0, at most 1"),
    ("families: {trainium: {gemm: 1.0e+308}}\n", "gemm: 1e+308; valid: a finite number above 0, at most 1"),
    ("families: {trainium: {gemm: .inf}}\n", "gemm: inf; valid: a finite number above 0"),
    ("global: {tp_overlap: 2}\nfamilies: {trainium: {gemm: 0.5}}\n", "tp_overlap: 2; valid: a finite number 0 or more"),
    ("global: {step_overhead_s: 1.0e+30}\nfamilies: {trainium: {gemm: 0.5}}\n", "at most 3600"),
    ("families: {gpu: {compute: 0, memory: 0.7}}\n", "families.gpu.compute: 0; valid: a finite number above 0"),
])
def test_calibration_parameters_are_held_to_their_ranges(tmp_path, capsys, text, message):
    """Fuzz seed 605, case 569: a trainium memory efficiency of 0 printed `nan TFLOP/s` in `claims` (exit 0)."""
    f = tmp_path / "cal.yaml"
    f.write_text(text)
    assert main(["infer", "llama3-8b", "-H", "trn2.48xlarge", "--calibration", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_calibrate_with_no_row_that_runs_is_refused(tmp_path, capsys):
    """Fuzz seed 606, case 386: a file whose one measured row has no valid layout (ep 8 on a dense model) was fitted
    on 0 runs, printed `fit MAPE nan%` and wrote a calibration."""
    import csv

    with open("validation/calibration_runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    row = next(r for r in rows if r["model"] == "LLAMA3_8B" and r["hardware"] == "gb300")
    row["ep"] = "8"
    path, out = tmp_path / "runs.csv", tmp_path / "cal.yaml"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        w.writeheader()
        w.writerow(row)
    assert main(["calibrate", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: none of the 1 rows") and "nothing to fit on" in err and not out.exists(), err


def _memory_file(tmp_path, column: str, cell: str):
    import csv

    with open("validation/memory_runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    rows[0][column] = cell
    path = tmp_path / "memory.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows[:2])
    return path


@pytest.mark.parametrize("column,cell", [("sharding", "nan"), ("dtype", "inf"), ("run_id", "-Infinity")])
def test_a_memory_row_whose_name_reads_as_a_non_finite_number_is_refused(tmp_path, capsys, column, cell):
    """Fuzz seed 2701, case 2596: a memory file (validation/memory_runs.csv's schema) was read without its row
    schema, so a sharding cell 'nan' was printed as nan in validate's table (exit 0)."""
    assert main(["validate", str(_memory_file(tmp_path, column, cell))]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"row 1: {column} {cell!r} is not a name" in err, err


@pytest.mark.parametrize("cell,reason", [("inf", "dp 'inf' is not a finite number"), ("0", "dp must be positive"),
                                         ("1e30", "dp 1e30 is out of range"), ("", "dp is blank")])
def test_a_memory_row_with_a_bad_count_is_skipped_naming_it(tmp_path, capsys, cell, reason):
    assert main(["validate", str(_memory_file(tmp_path, "dp", cell)), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["status"] == "skipped" and reason in rows[0]["reason"] and rows[1]["status"] == "ok", rows


def test_a_memory_file_with_an_unknown_column_is_refused(tmp_path, capsys):
    path = _memory_file(tmp_path, "dp", "8")
    path.write_text(path.read_text().replace("measured_as", "measured_ass", 1))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'measured_ass' is not a column of the memory schema" in err, err
    assert main(["validate", "validation/memory_runs.csv"]) == 0


def test_a_serving_figure_lies_within_its_interval_where_latency_is_not_monotone_in_speed(capsys):
    """Fuzz seed 2701, case 10531: llama2-13b on graviton3 at 0.5 req/s is overloaded, and its TPOT median is not
    monotone in the engine's speed (1.82 s at the slow end, 1.97 s at the predicted speed, 1.18 s at the fast end),
    so the interval of the two ends' runs left out the figure. The interval now spans the central run too."""
    from flopcast.simulate.serving.interval import LATENCIES, PERCENTILES, RATES

    assert main(["serve", "llama2-13b", "--qps", "0.5", "-H", "graviton3", "--json", "--requests", "50"]) == 0
    d = json.loads(capsys.readouterr().out)
    for k in LATENCIES:
        for p in PERCENTILES:
            assert d[f"{k}_low"][p] <= d[k][p] <= d[f"{k}_high"][p], (k, p, d[f"{k}_low"], d[k], d[f"{k}_high"])
    for k in RATES:
        if d.get(f"{k}_low") is not None:
            assert d[f"{k}_low"] <= d[k] <= d[f"{k}_high"], (k, d[f"{k}_low"], d[k], d[f"{k}_high"])
    assert d["tpot_s_low"]["p50"] < d["tpot_s"]["p50"] == d["tpot_s_high"]["p50"]  # the case itself: the centre
