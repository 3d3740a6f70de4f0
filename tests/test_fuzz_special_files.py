"""What the third fuzz round found, each kept as a test: a device, a pipe or a link to either given where a file
is read (read until memory ran out, or waited on forever), a pipe no process reads given where a file is written
(opening it waits forever), measured-run files and traces past what a run can work through, a deployment whose
outputs are one token (no TPOT: a traceback in its table and figure), and a serving run
whose decode steps had no work limit (`--output-tokens 200000` ran past 120 s of CPU)."""

import os

import numpy as np
import pytest

from flopcast import limits
from flopcast.api.serving import deployment
from flopcast.cli import main
from flopcast.simulate import serving as S
from flopcast.simulate.serving import simulation
from flopcast.validate import rows

P5 = ["-H", "p5.48xlarge"]


def _one_line(capsys, *words):
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith("error: ") and all(w in err[-1] for w in words), err
    assert [x for x in err if x.startswith("error:")] == [err[-1]], err


@pytest.fixture
def pipe(tmp_path):
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("argv", [["validate", "{x}"], ["calibrate", "{x}", "--out", "{tmp}/c.yaml"],
                                  ["serve", "llama3-8b", *P5, "--trace", "{x}"], ["catalog", "{x}.yaml"],
                                  ["train", "llama3-8b", *P5, "-n", "8", "--calibration", "{x}.yaml"]])
@pytest.mark.parametrize("special", ["/dev/zero", "pipe"])
def test_a_device_or_a_pipe_is_not_read(tmp_path, capsys, pipe, argv, special):
    target = str(pipe) if special == "pipe" else special
    if "{x}.yaml" in argv:  # a user file is known by its suffix: a link named .yaml to the device or pipe
        (tmp_path / "link.yaml").symlink_to(target)
        target = str(tmp_path / "link")
    argv = [a.replace("{x}", target).replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    _one_line(capsys, "not a regular file")


@pytest.mark.parametrize("argv", [["train", "llama3-8b", *P5, "-n", "8", "--html", "{p}"],
                                  ["validate", "training", "--out", "{p}"], ["sweep", "s.yaml", "-o", "{p}"],
                                  ["deploy", "llama3-8b", *P5, "--csv", "{p}"]])
def test_a_pipe_that_no_process_reads_is_not_written(capsys, pipe, argv):
    assert main([a.replace("{p}", str(pipe)) for a in argv]) == 2
    _one_line(capsys, "a pipe that no process reads")


def test_check_output_passes_files_and_devices(tmp_path):
    for ok in (tmp_path / "new.html", "/dev/null", "/dev/full"):
        limits.check_output(ok, "--html")


def _rows_file(tmp_path, n):
    lines = (rows.VALIDATION_DIR / "calibration_runs.csv").read_text().splitlines()
    body = (lines[1:] * (n // (len(lines) - 1) + 1))[:n]
    path = tmp_path / f"runs{n}.csv"
    path.write_text("\n".join([lines[0], *body]) + "\n")
    return path


def test_measured_runs_past_the_row_caps_are_refused_before_the_work(tmp_path, capsys):
    assert main(["validate", str(_rows_file(tmp_path, rows.MAX_ROWS + 1))]) == 2
    _one_line(capsys, f"at most {rows.MAX_ROWS:,} rows")
    assert main(["calibrate", str(_rows_file(tmp_path, rows.MAX_FIT_ROWS + 1)), "--out", str(tmp_path / "c.yaml")]) == 2
    _one_line(capsys, f"at most {rows.MAX_FIT_ROWS:,} to fit on")
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:
        f.truncate(rows.MAX_FILE_BYTES + 1)
    assert main(["validate", str(big)]) == 2
    _one_line(capsys, "bytes; valid: a file of at most")


def test_a_trace_past_the_request_bound_is_refused_by_its_line_count(tmp_path, capsys):
    path = tmp_path / "t.csv"
    n = S.requests.MAX_REQUESTS + 1
    path.write_text("arrival_s,input_tokens,output_tokens\n" + "0,1,1\n" * n)
    assert main(["serve", "llama3-8b", *P5, "--trace", str(path)]) == 2
    _one_line(capsys, f"{n:,} rows", f"at most {S.requests.MAX_REQUESTS:,}")


def test_a_serving_run_stops_at_its_work_limit(monkeypatch, capsys):
    monkeypatch.setattr(S, "RUN_WORK", 20_000)  # a plain serve's budget (its run and both interval ends)
    argv = ["serve", "llama3-8b", *P5, "--qps", "100", "--requests", "2000", "--input-tokens", "16"]
    assert main(argv) == 2
    _one_line(capsys, "work limit", "simulating 2,000 requests three times")
    monkeypatch.setattr(simulation, "RUN_WORK", 20_000)  # a run given no budget stops there too
    reqs = S.poisson_requests(100.0, np.random.default_rng(0), n=2000, input_tokens="16")
    with pytest.raises(S.BudgetSpent, match="work limit"):
        S.simulate(deployment("llama3-8b", "p5.48xlarge"), reqs)


def test_a_deployment_without_a_tpot_prints_n_a():  # every output one token: no time per output token
    from types import SimpleNamespace as NS

    from flopcast.cli.deploy import _point_row

    p = NS(qps=2.0, instances=1, output_tokens_per_s_per_chip=29.0, result=NS(ttft_s={"p50": 0.096},
           tpot_s={"p50": None}), cost_per_million_output_tokens_usd=None, chip_hours_per_million_output_tokens=9.5,
           candidate=NS(label="8 x TP1"))
    row = _point_row("best", p)
    assert row[4] == pytest.approx(96.0) and row[5] is None


@pytest.mark.parametrize("cell", ["nan", "NaN", "inf", "-Infinity"])
def test_a_name_cell_that_reads_as_a_non_finite_number_is_refused(tmp_path, capsys, cell):
    """Seed 205 of the campaign: a serving row whose hardware cell was 'nan' printed nan in validate's table."""
    lines = (rows.VALIDATION_DIR / "inference_runs.csv").read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index("hardware")] = cell
    path = tmp_path / "serving.csv"
    path.write_text("\n".join([lines[0], ",".join(row)]) + "\n")
    assert main(["validate", str(path)]) == 2
    _one_line(capsys, f"hardware {cell!r} is not a name", "row 1")
    assert main(["validate", str(rows.VALIDATION_DIR / "inference_runs.csv")]) == 0


def test_a_yaml_merge_key_bomb_is_refused_before_it_is_expanded(tmp_path, capsys):
    """Seed 205, case 1244: 9 levels of 8 merge keys (`<<: [*a, *a, ...]`) over one anchor took 77 s of CPU and
    1.2 GB to load; merge keys of a modest size still load."""
    lines = ["a: &a {x: 1, y: 2, z: 3, w: 4}"]
    for i, (name, prev) in enumerate(zip("bcdefghi", "abcdefgh")):
        lines.append(f"{name}: &{name} {{<<: [{', '.join(['*' + prev] * 8)}], {name}{i}: 1}}")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    assert main(["sweep", str(bomb), "--out", str(tmp_path / "out.csv")]) == 2
    _one_line(capsys, "merge keys (<<)")
    from flopcast.catalog import files

    ok = tmp_path / "merge.yaml"
    ok.write_text("a: &a {x: 1}\nb:\n  <<: *a\n  y: 2\n")
    assert files.read_file(ok)["b"] == {"x": 1, "y": 2}


def test_an_interval_whose_slow_end_never_finishes_prints_never(capsys):
    """Fuzz seed 301, case 12: DeepSeek-V3 on one c7g.xlarge printed '(80%: ... days to inf days)' for the time
    with faults: at the interval's slow end interruptions come faster than checkpoints save progress."""
    from flopcast.units import fmt_duration

    assert fmt_duration(float("inf")) == "never" and fmt_duration(float("nan")) == "n/a"
    assert fmt_duration(3 * 86400) == "3.0 days"
    assert main(["train", "deepseek-v3", "-H", "c7g.xlarge"]) == 0
    out = capsys.readouterr().out
    assert "inf days" not in out and "to never)" in out


@pytest.mark.parametrize("name", ["nan", ".inf", "-Infinity"])
def test_a_user_file_name_that_reads_as_a_non_finite_number_is_refused(tmp_path, capsys, name):
    """Fuzz seed 301, case 3515: a chip file whose name was nan printed 'chip ...: nan'."""
    path = tmp_path / "chip.yaml"
    path.write_text(f"base: trainium2\nname: '{name}'\n")
    assert main(["catalog", str(path)]) == 2
    _one_line(capsys, "reads as a number that is not finite")
