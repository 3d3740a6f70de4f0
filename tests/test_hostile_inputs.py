"""Issue 16's concrete inputs, one per class, as regression tests: each is one line and exit code 2, or a
result (a run that never finishes is a result), never a traceback, a hang or invalid JSON."""

import json
import time

import pytest

from flopcast.cli import main

P5 = ["-H", "p5.48xlarge"]


def run(args, capsys):
    started = time.perf_counter()
    code = main(args)
    out = capsys.readouterr()
    assert time.perf_counter() - started < 30, args
    return code, out.out, out.err


@pytest.mark.parametrize("args, expected", [
    (["train", "llama3-8b", "--tp", "0"], "--tp '0' is out of range"),
    (["serve", "llama3-8b", *P5, "--qps", "1", "--seed", "-1"], "--seed '-1' is out of range"),
    (["serve", "llama3-8b", *P5, "--qps", "1", "--input-tokens", "1e30"], "--input-tokens '1e30' is out of range"),
    (["serve", "llama3-8b", *P5, "--qps", "1", "--input-tokens", "inf"], "finite numbers"),
    (["serve", "llama3-8b", *P5, "--qps", "1", "--output-tokens", "uniform:1:1e30"], "uniform needs"),
    (["serve", "llama3-8b", *P5, "--qps", "1", "--duration", "1e30"], "--duration"),
    (["serve", "llama3-8b", *P5, "--qps", "1", "--requests", "9223372036854775808"], "--requests"),
    (["serve", "llama3-8b", *P5, "--qps", "1", "--slo-ttft", "nan"], "--slo-ttft"),
    (["serve", "llama3-8b", *P5, "--qps", "1e-308", "--json"], "--qps '1e-308' is out of range"),
    (["serve", "llama3-8b", *P5, "--find-capacity", "--slo-tpot", "1e30"], "--slo-tpot"),
    (["train", "llama3-8b", "--seq-len", "9223372036854775808"], "--seq-len"),
    (["train", "llama3-8b", "--global-batch", "1" + "0" * 26], "--global-batch"),
    (["reliability", "--trials", "1e20"], "--trials '1e20' is out of range"),
    (["reliability", "--cv", "1e30"], "--cv '1e30' is out of range"),
    (["reliability", "--spares", "1e30"], "--spares '1e30' is out of range"),
    (["reliability", "--interval", "1e30"], "--interval"),
    (["search", "llama3-8b", *P5, "-n", "8", "--top", "1e20"], "--top '1e20' is out of range"),
    (["search", "llama3-8b", *P5, "-n", "8", "--tokens", "inf"], "--tokens 'inf' is not a number"),
    (["compare", "llama3-8b", "-H", "p5.48xlarge,p4d.24xlarge", "-n", "8", "--tokens", "inf"], "--tokens"),
    (["plan", "llama3-8b", *P5, "--pareto", "--tokens", "inf"], "--tokens"),
    (["train", "llama3-8b", "--html", ""], "--html needs a path"),
    (["deploy", "llama3-8b", *P5, "--qps", "nan"], "--qps 'nan' is not a number"),
    (["deploy", "llama3-8b", *P5, "--requests", "1e30"], "--requests '1e30' is out of range"),
])
def test_flag_classes_are_one_line_exit_2(capsys, args, expected):
    code, out, err = run(args, capsys)
    assert code == 2 and not out, (args, err)
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err


def test_a_run_that_never_finishes_is_a_result(capsys):
    code, out, err = run(["reliability", "--mtbf-chip-hours", "10", "--json"], capsys)
    assert code == 0, err
    d = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert d["monte_carlo"] is None and "never finishes" in d["unavailable"]["monte_carlo"]
    assert d["closed_form"]["expected_s"] is None and d["closed_form"]["finishes"] is False
    code, out, _ = run(["reliability", "--mtbf-chip-hours", "10"], capsys)
    assert code == 0 and "never finishes" in out and "nan" not in out.lower().split()


def test_one_trial_gives_strict_json(capsys):
    code, out, err = run(["reliability", "llama3-8b", *P5, "-n", "64", "--trials", "1", "--json"], capsys)
    assert code == 0, err
    d = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert d["monte_carlo"]["wall_s"]["ci95"] is None


@pytest.mark.parametrize("body, expected", [
    ("arrival_s,input_tokens,output_tokens\n0.1,100\n", "row 2: output_tokens is missing"),
    ("arrival_s,input_tokens,output_tokens\n0.1,inf,10\n", "input_tokens 'inf' is not a finite number"),
    ("arrival_s,input_tokens,output_tokens\nnan,10,10\n", "arrival_s 'nan' is not a finite number"),
    ("arrival_s,input_tokens,output_tokens\n0.1,1e30,10\n", "is out of range"),
])
def test_trace_rows_are_checked(tmp_path, capsys, body, expected):
    trace = tmp_path / "t.csv"
    trace.write_text(body)
    code, _, err = run(["serve", "llama3-8b", *P5, "--trace", str(trace)], capsys)
    assert code == 2 and expected in err and err.count("\n") == 1, err


def test_unreadable_traces(tmp_path, capsys):
    (tmp_path / "bin.csv").write_bytes(b"arrival_s,input_tokens,output_tokens\n\xff\xfe,1,1\n")
    code, _, err = run(["serve", "llama3-8b", *P5, "--trace", str(tmp_path / "bin.csv")], capsys)
    assert code == 2 and "UTF-8" in err
    code, _, err = run(["serve", "llama3-8b", *P5, "--trace", str(tmp_path)], capsys)
    assert code == 2 and "folder" in err


def test_a_validate_row_with_absurd_chips_is_skipped_with_its_reason(tmp_path, capsys, calibration_csv):
    lines = calibration_csv.read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index("chips")] = "1e30"
    (tmp_path / "v.csv").write_text("\n".join([lines[0], ",".join(row)]) + "\n")
    code, out, err = run(["validate", str(tmp_path / "v.csv"), "--json"], capsys)
    assert "Traceback" not in err and code in (0, 2)
    assert "chips 1e30 is out of range" in (out + err)


def test_stdout_on_a_full_disk_is_one_line(tmp_path):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "flopcast", "catalog", "--json"], stdout=open("/dev/full", "w"),
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "No space left" in p.stderr


def test_a_hugging_face_config_is_held_to_the_schema_bounds(tmp_path, capsys):
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 2**63,
           "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
           "vocab_size": 128256, "max_position_embeddings": 8192}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, out, err = run(["train", str(tmp_path / "config.json"), *P5, "-n", "8"], capsys)
    assert code == 2 and "hidden_size: 9223372036854775808; valid: a positive integer up to 1,048,576" in err
    assert err.count("\n") == 1
