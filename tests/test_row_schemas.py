"""The declared schemas of CSV rows (limits.RowSchema): validate's training and serving rows, serve's --trace rows.
A missing or unknown column, a cell that is not a number, not finite, negative or absurd, bytes that are not
UTF-8, a folder or an empty file: one sentence naming the row or column and what is valid, exit code 2 (or, for
a validate row, the row skipped with that sentence as its reason)."""

import csv

import pytest

from flopcast.cli import main
from flopcast.limits import Bound, RowSchema, count, parse_cell, real
from flopcast.validate import inference as vi
from flopcast.validate import rows as vr
from flopcast.validate import training as vt

SCHEMA = RowSchema("a test", {"n": count(1, 100, required=True), "x": real(10), "share": real(100, percent=True)},
                   one_of=("x",))


@pytest.mark.parametrize("col,cell,expected", [
    ("n", " 8 ", 8), ("n", "8.0", 8), ("n", "", None), ("x", "2.5", 2.5), ("share", "50%", 50.0), ("n", "100", 100)])
def test_a_cell_is_read_by_its_declared_type(col, cell, expected):
    assert SCHEMA.cell(col, cell) == expected


@pytest.mark.parametrize("col,cell,message", [
    ("n", "abc", "n 'abc' is not a number"), ("n", "nan", "n 'nan' is not a finite number"),
    ("x", "inf", "x 'inf' is not a finite number"), ("n", "2.5", "n '2.5' is not a whole number"),
    ("n", "0", "n must be positive, got 0"), ("x", "-1", "x must be positive, got -1"),
    ("n", "1e30", "n 1e30 is out of range; valid: a whole number from 1 to 100"),
    ("x", "11", "x 11 is out of range; valid: a finite number above 0, at most 10"), ("n", "1,000", "is not a number")])
def test_a_bad_cell_is_one_sentence_naming_the_column_and_what_is_valid(col, cell, message):
    with pytest.raises(Exception, match=message) as err:
        SCHEMA.cell(col, cell)
    assert "\n" not in str(err.value)


def test_headers_missing_and_unknown_columns():
    assert SCHEMA.missing(["x"]) == ["n"] and SCHEMA.missing(["n"]) == ["x"] and SCHEMA.missing(["n", "x"]) == []
    SCHEMA.check_header(["n", "x", ""], "f.csv")  # a blank name (a trailing comma) is no column
    with pytest.raises(Exception, match="f.csv: column 'nn' is not a column of a test; did you mean n"):
        SCHEMA.check_header(["nn", "x"], "f.csv")


def test_parse_cell_without_a_bound_only_needs_finite():
    assert parse_cell("v", "-3", None) == -3.0
    with pytest.raises(Exception, match="not a finite"):
        parse_cell("v", "-inf", Bound(0, 1, integer=False))


def test_every_training_and_serving_column_the_shipped_files_use_is_declared(calibration_csv, inference_csv):
    for path in sorted(calibration_csv.parent.glob("*training_runs.csv")) + [calibration_csv]:
        header, _ = vr.read_table(path)
        vr.TRAINING.check_header(header, str(path))
    for path in sorted(inference_csv.parent.glob("*inference_runs.csv")):
        header, _ = vr.read_table(path)
        vi.SERVING.check_header(header, str(path))


def _copy(src, dst, edit=None, extra=None):
    with open(src, newline="") as f:
        rows = list(csv.reader(f))[:3]
    if extra:
        rows[0].append(extra)
        for r in rows[1:]:
            r.append("1")
    if edit:
        col, value = edit
        rows[1][rows[0].index(col)] = value
    with open(dst, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return dst


@pytest.mark.parametrize("extra,close", [("chipz", "chips"), ("favourite_colour", None),
                                         ("measured_tokens_per_s", "measured_tokens_per_s_per_chip")])
def test_an_unknown_validate_column_is_an_error_naming_the_closest(calibration_csv, tmp_path, capsys, extra, close):
    f = _copy(calibration_csv, tmp_path / "runs.csv", extra=extra)
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"column '{extra}' is not a column of the training schema" in err
    assert (f"did you mean {close}?" in err) if close else "did you mean" not in err


@pytest.mark.parametrize("col,value,reason", [
    ("chips", "1e30", "chips 1e30 is out of range; valid: a whole number from 1 to 100,000,000"),
    ("layers", "100000", "layers 100000 is out of range"),
    ("measured_tokens_per_s_per_chip", "1e30", "measured_tokens_per_s_per_chip 1e30 is out of range"),
    ("params_b", "-3", "params_b must be at least 0, got -3"),
])
def test_an_absurd_training_cell_skips_the_row_with_its_reason(calibration_csv, tmp_path, col, value, reason):
    f = _copy(calibration_csv, tmp_path / "runs.csv", edit=(col, value))
    cases, skipped = vt.load_cases(f)
    assert len(cases) == 1 and len(skipped) == 1 and reason in skipped[0].reason


@pytest.mark.parametrize("col,value,reason", [("batch", "1e30", "batch 1e30 is out of range"),
                                              ("input_tokens", "-1", "input_tokens must be at least 0, got -1"),
                                              ("measured_tpot_ms", "1e30", "measured_tpot_ms 1e30 is out of range")])
def test_an_absurd_serving_cell_skips_the_row_with_its_reason(inference_csv, tmp_path, col, value, reason):
    with open(inference_csv, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    body = [r for r in rows[1:] if r[header.index("measured_tpot_ms")].strip()][:2]
    body[0][header.index(col)] = value
    path = tmp_path / "serve.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([header] + body)
    res = vi.validate_inference(path)
    assert any(reason in r.get("reason", "") for r in res["rows"] if r["status"] == "skipped"), res["rows"]


TRACE_HEADER = "arrival_s,input_tokens,output_tokens"


@pytest.mark.parametrize("text,message", [
    ("arrival_s,input_tokens\n0,5\n", "lacks column(s) output_tokens"),
    (TRACE_HEADER + ",priority\n0,5,5,1\n", "column 'priority' is not a column of a trace"),
    (TRACE_HEADER + "\n0,abc,5\n", "row 2: input_tokens 'abc' is not a number"),
    (TRACE_HEADER + "\n0,5,5\nnan,5,5\n", "row 3: arrival_s 'nan' is not a finite number; valid: a finite number 0"),
    (TRACE_HEADER + "\n0,inf,5\n", "row 2: input_tokens 'inf' is not a finite number; valid: a whole number from 0"),
    (TRACE_HEADER + "\n-1,5,5\n", "row 2: arrival_s must be at least 0, got -1"),
    (TRACE_HEADER + "\n0,5,1e30\n", "row 2: output_tokens 1e30 is out of range; valid: a whole number from 1 to"),
    (TRACE_HEADER + "\n0,5\n", "row 2: output_tokens is missing"),
    (TRACE_HEADER + "\n0,5,5,9\n", "row 2 has more cells than the header's 3 columns"),
    ("", "is empty"),
    (TRACE_HEADER + "\n", "has no rows"),
])
def test_a_bad_trace_is_one_sentence_and_exit_2(tmp_path, capsys, text, message):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    assert main(["serve", "llama3-8b", "-H", "p5.48xlarge", "--trace", str(path), "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_trace_bytes_and_folders(tmp_path, capsys):
    raw = tmp_path / "raw.csv"
    raw.write_bytes(b"arrival_s,input_tokens,output_tokens\n0,\xff\xfe,5\n")
    for path, message in ((raw, "is not a UTF-8 text CSV"), (tmp_path, "is a folder, not a CSV file")):
        assert main(["serve", "llama3-8b", "-H", "p5.48xlarge", "--trace", str(path)]) == 2
        assert message in capsys.readouterr().err


def test_validate_bytes_folders_and_empty_files(tmp_path, capsys):
    raw, empty = tmp_path / "raw.csv", tmp_path / "empty.csv"
    raw.write_bytes(b"run_id,source\n\xff\xfe\n")
    empty.write_text("")
    for path, message in ((raw, "is not a UTF-8 text CSV"), (tmp_path, "is a directory"), (empty, "is empty")):
        assert main(["validate", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, err


def test_calibrate_on_a_serving_file_without_one_usable_row_is_one_line(inference_csv, tmp_path, capsys):
    with open(inference_csv, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], [list(r) for r in rows[1:3]]
    for r in body:
        r[header.index("batch")] = "1e30"
    path = tmp_path / "serve.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([header] + body)
    assert main(["calibrate", str(path), "--out", str(tmp_path / "cal.yaml")]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]  # after a progress line
    assert len(err) == 1 and "nothing to fit" in err[0] and "batch 1e30 is out of range" in err[0], err
