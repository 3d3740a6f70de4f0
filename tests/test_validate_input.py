"""`flopcast validate`: bad input files and cells give a skip reason or a one-line error, never a traceback."""

import csv
import json
import math

import pytest

from flopcast import catalog
from flopcast.cli import main
from flopcast.api.validation import schema
from flopcast.cli import validate as cli_validate
from flopcast.errors import FlopcastError
from flopcast.validate import inference as vi
from flopcast.validate import training as vt



def _rows(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def _write(path, header, rows):
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([header] + rows)
    return path


def _edited(src, tmp_path, col, value, n=2, name="runs.csv"):
    """The first n rows of src with row 1's `col` set to value."""
    header, rows = _rows(src)
    rows = [list(r) for r in rows[:n]]
    rows[0][header.index(col)] = value
    return _write(tmp_path / name, header, rows)


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


# ---------------------------------------------------------------- 1 and 6: bad cells skip the row, counted


@pytest.mark.parametrize("col,value,reason", [
    ("chips", "abc", "chips 'abc' is not a number"),
    ("global_batch", "abc", "global_batch 'abc' is not a number"),
    ("measured_tokens_per_s_per_chip", "abc", "measured_tokens_per_s_per_chip 'abc' is not a number"),
    ("layers", "x12", "layers 'x12' is not a number"),
    ("tp", "2.5", "tp '2.5' is not a whole number"),
    ("params_b", "big", "params_b 'big' is not a number"),
    ("chips", "-32", "chips must be positive, got -32"),
    ("chips", "0", "chips must be positive, got 0"),
    ("global_batch", "0", "global_batch must be positive, got 0"),
    ("global_batch", "-512", "global_batch must be positive, got -512"),
    ("measured_tokens_per_s_per_chip", "0", "measured_tokens_per_s_per_chip must be positive, got 0"),
    ("measured_tokens_per_s_per_chip", "-5", "measured_tokens_per_s_per_chip must be positive, got -5"),
    ("measured_tokens_per_s_per_chip", "nan", "measured_tokens_per_s_per_chip 'nan' is not a finite number"),
    ("measured_tokens_per_s_per_chip", "inf", "measured_tokens_per_s_per_chip 'inf' is not a finite number"),
    ("measured_tokens_per_s_per_chip", "", "measured_tokens_per_s_per_chip is blank"),
    ("hardware", "", "hardware is blank"),
])
def test_training_bad_cell_skips_the_row_with_reason(calibration_csv, tmp_path, col, value, reason):
    f = _edited(calibration_csv, tmp_path, col, value)
    rows = vt.run_validation(f, catalog.calibration())
    assert len(rows) == 2
    skipped = [r for r in rows if r.status == "skipped"]
    assert len(skipped) == 1 and reason in skipped[0].reason
    s = vt.summarize(rows)
    assert s["n_ok"] == 1 and s["n_skipped"] == 1  # counted, and the MAPE is the good row's alone
    good = next(r for r in rows if r.status == "ok")
    assert s["mape_pct"] == pytest.approx(abs(good.error_pct))
    assert math.isfinite(s["mape_pct"])


def test_training_bad_cell_cli_exits_0_and_names_it(calibration_csv, tmp_path, capsys):
    f = _edited(calibration_csv, tmp_path, "chips", "abc")
    assert main(["validate", str(f)]) == 0
    out = capsys.readouterr().out
    assert "chips 'abc' is not a number" in out
    assert "rows predicted: 1   skipped: 1" in out


def test_training_bad_cell_json_is_valid(calibration_csv, tmp_path, capsys):
    f = _edited(calibration_csv, tmp_path, "measured_tokens_per_s_per_chip", "nan")
    assert main(["validate", str(f), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)  # no NaN leaks into the JSON
    assert d["summary"]["n_skipped"] == 1
    bad = next(r for r in d["rows"] if r["status"] == "skipped")
    assert bad["measured_tokens_per_s_per_chip"] is None and bad["model"]


def test_calibrate_skips_impossible_measured(calibration_csv, tmp_path):
    f = _edited(calibration_csv, tmp_path, "measured_tokens_per_s_per_chip", "-5")
    cases, skipped = vt.load_cases(f)
    assert len(cases) == 1 and len(skipped) == 1 and all(c.measured > 0 for c in cases)


def test_parse_number():
    assert vt.parse_number("chips", " 8 ", whole=True, minimum=1) == 8
    assert vt.parse_number("chips", "8.0", whole=True) == 8
    assert vt.parse_number("chips", "", whole=True) is None
    assert vt.parse_number("x", "1.5e3") == 1500.0
    for value, msg in (("abc", "'abc' is not a number"), ("1,024", "is not a number"), ("inf", "not a finite"),
                       ("8.5", "not a whole number"), ("-1", "must be positive")):
        with pytest.raises(FlopcastError, match=msg):
            vt.parse_number("chips", value, whole=True, minimum=1)


@pytest.mark.parametrize("col,value,reason,n_skipped", [
    ("chips", "abc", "chips 'abc' is not a number", None),
    ("chips", "0", "chips must be positive, got 0", None),
    ("batch", "-2", "batch must be positive, got -2", None),
    ("measured_tpot_ms", "abc", "measured_tpot_ms 'abc' is not a number", 1),
    ("measured_tpot_ms", "-1", "measured_tpot_ms must be positive, got -1", 1),
    ("measured_tpot_ms", "0", "measured_tpot_ms must be positive, got 0", 1),
    ("measured_tpot_ms", "nan", "measured_tpot_ms 'nan' is not a finite number", 1),
])
def test_serving_bad_cell_skips_with_reason(inference_csv, tmp_path, col, value, reason, n_skipped):
    header, rows = _rows(inference_csv)
    row = next(i for i, r in enumerate(rows) if r[header.index("measured_tpot_ms")].strip())
    rows = [list(r) for r in rows[row:row + 2]]
    rows[0][header.index(col)] = value
    f = _write(tmp_path / "serve.csv", header, rows)
    res = vi.validate_inference(f)
    skipped = [r for r in res["rows"] if r["status"] == "skipped"]
    assert skipped and all(reason in r["reason"] for r in skipped)
    if n_skipped is not None:
        assert len(skipped) == n_skipped
    assert res["summary"]["n_skipped"] == len(skipped)
    assert all(r["measured"] is None or r["measured"] > 0 for r in res["rows"])
    ok = [r for r in res["rows"] if r["status"] == "ok"]
    assert res["summary"]["n_ok"] == len(ok)


# ---------------------------------------------------------------- 2 and 5: --out


def test_out_creates_missing_folders(calibration_csv, tmp_path, capsys):
    f = _edited(calibration_csv, tmp_path, "chips", "abc")
    out = tmp_path / "new" / "deeper" / "pred.csv"
    assert main(["validate", str(f), "--out", str(out)]) == 0
    header, rows = _rows(out)
    assert header[:2] == ["run_id", "source"] and "error_pct" in header and len(rows) == 2
    assert f"wrote {out} (2 rows)" in capsys.readouterr().err


def test_out_under_a_file_is_one_line_error(calibration_csv, tmp_path, capsys):
    f = _edited(calibration_csv, tmp_path, "chips", "abc")
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "pred.csv"
    assert main(["validate", str(f), "--out", str(out)]) == 2
    err = _one_line_error(capsys)
    assert f"cannot write {out}" in err and "not a folder" in err


def test_out_os_error_is_one_line_error(calibration_csv, tmp_path, capsys, monkeypatch):
    f = _edited(calibration_csv, tmp_path, "chips", "abc")
    out = tmp_path / "pred.csv"

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied", str(out))

    monkeypatch.setattr(cli_validate, "open", refuse, raising=False)
    assert main(["validate", str(f), "--out", str(out)]) == 2
    err = _one_line_error(capsys)
    assert err == f"error: cannot write {out}: Permission denied"


def test_out_refuses_to_overwrite_the_input(calibration_csv, tmp_path, capsys):
    f = _edited(calibration_csv, tmp_path, "chips", "abc")
    before = f.read_text()
    assert main(["validate", str(f), "--out", str(f)]) == 2
    assert "is the input file" in _one_line_error(capsys)
    assert f.read_text() == before


@pytest.mark.parametrize("as_json", [False, True])
def test_serving_out_writes_per_figure_csv(inference_csv, tmp_path, capsys, as_json):
    out = tmp_path / "sub" / "serve_pred.csv"
    args = ["validate", str(inference_csv), "--out", str(out)] + (["--json"] if as_json else [])
    assert main(args) == 0
    captured = capsys.readouterr()
    if as_json:
        json.loads(captured.out)
    header, rows = _rows(out)
    for col in ("run_id", "metric", "predicted", "measured", "error_pct", "status", "reason"):
        assert col in header
    res = vi.validate_inference(inference_csv)
    assert len(rows) == len(res["rows"])
    first = dict(zip(header, rows[0]))
    assert first["metric"] == res["rows"][0]["metric"]
    assert float(first["predicted"]) == pytest.approx(res["rows"][0]["predicted"])
    assert float(first["measured"]) == pytest.approx(res["rows"][0]["measured"])


# ---------------------------------------------------------------- 4: schema detection


def test_training_csv_without_measured_column_is_not_read_as_serving(calibration_csv, tmp_path, capsys):
    header, rows = _rows(calibration_csv)
    i = header.index("measured_tokens_per_s_per_chip")
    drop = lambda r: [c for j, c in enumerate(r) if j != i]
    f = _write(tmp_path / "miss_measured.csv", drop(header), [drop(r) for r in rows[:5]])
    assert main(["validate", str(f)]) == 2
    err = _one_line_error(capsys)
    assert "lacks column(s) measured_tokens_per_s_per_chip;" in err and "training schema" in err


def test_serving_csv_without_weights_names_the_serving_column(inference_csv, tmp_path, capsys):
    header, rows = _rows(inference_csv)
    i = header.index("weights")
    drop = lambda r: [c for j, c in enumerate(r) if j != i]
    f = _write(tmp_path / "miss_weights.csv", drop(header), [drop(r) for r in rows[:3]])
    assert main(["validate", str(f)]) == 2
    err = _one_line_error(capsys)
    assert "lacks column(s) weights;" in err and "serving schema" in err


def test_serving_csv_without_any_measured_column(inference_csv, tmp_path, capsys):
    header, rows = _rows(inference_csv)
    keep = [j for j, c in enumerate(header) if not c.startswith("measured_")]
    pick = lambda r: [r[j] for j in keep]
    f = _write(tmp_path / "no_measured.csv", pick(header), [pick(r) for r in rows[:3]])
    assert main(["validate", str(f)]) == 2
    err = _one_line_error(capsys)
    assert "serving schema" in err and "one of measured_decode_tokens_per_s_per_stream" in err


def test_schema_detection_by_distinctive_columns(tmp_path):
    t = _write(tmp_path / "t.csv", list(vt.REQUIRED), [["1"] * len(vt.REQUIRED)])
    assert schema(str(t)) == "training"
    s = _write(tmp_path / "s.csv", list(vi.REQUIRED) + ["measured_tpot_ms"], [["1"] * 6])
    assert schema(str(s)) == "serving"
    closer_serving = _write(tmp_path / "cs.csv", ["run_id", "engine", "batch", "measured_tpot_ms"], [["1"] * 4])
    with pytest.raises(FlopcastError, match="serving schema"):
        schema(str(closer_serving))
    closer_training = _write(tmp_path / "ct.csv", ["run_id", "layers", "hidden", "dtype"], [["1"] * 4])
    with pytest.raises(FlopcastError, match="training schema"):
        schema(str(closer_training))


def test_byte_order_mark_and_padded_header_names(calibration_csv, tmp_path):
    header, rows = _rows(calibration_csv)
    f = tmp_path / "bom.csv"
    with open(f, "w", newline="", encoding="utf-8-sig") as fh:
        csv.writer(fh).writerows([[f" {h} " for h in header]] + rows[:1])
    assert schema(str(f)) == "training"
    rows_out = vt.run_validation(f, catalog.calibration())
    assert [r.status for r in rows_out] == ["ok"]


def test_short_row_is_skipped_not_a_crash(calibration_csv, tmp_path):
    header, rows = _rows(calibration_csv)
    f = tmp_path / "short.csv"
    f.write_text(",".join(header) + "\n" + ",".join(rows[0]) + "\n" + "99,src,x\n")
    out = vt.run_validation(f, catalog.calibration())
    assert len(out) == 2 and sum(r.status == "skipped" for r in out) == 1


# ---------------------------------------------------------------- 31: empty files


@pytest.mark.parametrize("text", ["", "\n\n", "   \n"])
def test_empty_file(tmp_path, capsys, text):
    f = tmp_path / "empty.csv"
    f.write_text(text)
    assert main(["validate", str(f)]) == 2
    assert _one_line_error(capsys) == f"error: {f} is empty"


def test_training_header_without_rows(calibration_csv, tmp_path, capsys):
    header, _ = _rows(calibration_csv)
    f = _write(tmp_path / "header_only.csv", header, [])
    assert main(["validate", str(f)]) == 2
    assert f"{f} has no rows" in _one_line_error(capsys)


def test_serving_header_without_rows(inference_csv, tmp_path, capsys):
    header, _ = _rows(inference_csv)
    f = _write(tmp_path / "header_only.csv", header, [[""] * len(header)])  # a row of blank cells is no row
    assert main(["validate", str(f)]) == 2
    assert f"{f} has no rows" in _one_line_error(capsys)


def test_not_utf8_is_one_line_error(tmp_path, capsys):
    f = tmp_path / "bin.csv"
    f.write_bytes(b"\xff\xfe\x00\x81run_id\n")
    assert main(["validate", str(f)]) == 2
    assert "is not a UTF-8 text CSV" in _one_line_error(capsys)


# ---------------------------------------------------------------- the shipped files: nothing newly skipped


def test_shipped_files_have_no_skipped_rows(calibration_csv, inference_csv):
    rows = vt.run_validation(calibration_csv, catalog.calibration())
    assert vt.summarize(rows)["n_skipped"] == 0
    assert vi.validate_inference(inference_csv)["summary"]["n_skipped"] == 0


# ---------------------------------------------------------------- P3: table text


@pytest.mark.parametrize("name", [
    "GPT 1.7B (Narayanan et al. 2021)", "GPT-3 175B (Megatron/NeMo, vocab padded to 51200)",
    "MPT-70b (LLM Foundry pretrain config)", "abc (def (ghi jkl) mno pqr stu vwx)",
    "averyveryverylongmodelnamewithoutanybreaks(x)", "short", "Llama 3 / 3.1 8B",
])
@pytest.mark.parametrize("width", [12, 20, 24, 28])
def test_clip_never_cuts_inside_parentheses(name, width):
    c = cli_validate._clip(name, width)
    assert len(c) <= width and c.count("(") == c.count(")")
    if len(name) <= width:
        assert c == name


def test_training_report_parentheses_balance(calibration_csv):
    rows = vt.run_validation(calibration_csv, catalog.calibration())
    text = cli_validate.training_report(rows, vt.summarize(rows))
    lines = text.splitlines()
    start, end = lines[0].index("model"), lines[0].index("chip ")
    table = [line for line in lines[1:] if line and not line.startswith(" ")][:len(rows)]  # a layout goes under
    for line in table:
        cell = line[start:end]
        assert cell.count("(") == cell.count(")"), line
    worst = next(l for l in lines if l.startswith("five worst:"))
    assert worst.count("(") == worst.count(")")


def test_serving_report_columns_align():
    base = {"source": "s", "hardware": "graviton3", "engine": "e", "model": "llama3-8b"}
    rows = [
        {**base, "run_id": "i1", "metric": "decode_tokens_per_s_per_stream", "status": "ok", "reason": "",
         "predicted": 44.896, "measured": 31.55, "error_pct": 42.3},
        {**base, "run_id": "i2", "metric": "tpot_ms", "status": "ok", "reason": "", "predicted": 6.559,
         "measured": 6.42, "error_pct": 2.2},
        {**base, "run_id": "i3", "metric": "output_tokens_per_s_total", "status": "ok", "reason": "",
         "predicted": 1142.7, "measured": 36260.0, "error_pct": -96.8},
        {**base, "run_id": "i4", "metric": "tpot_ms", "status": "skipped", "reason": "chips must be positive, got 0",
         "predicted": None, "measured": 5.0, "error_pct": None},
    ]
    summary = vi.summarize(rows)
    text = cli_validate.serving_report({"rows": rows, "summary": summary})
    lines = text.splitlines()
    head = lines[0]
    for col in ("predicted", "measured"):  # numbers right-aligned under the header, on their decimal point
        end = head.index(col) + len(col)
        cells = [line[head.index(col):end] for line in lines[1:4]]
        points = {len(c.split(".")[0].rstrip()) if "." in c else len(c.rstrip()) for c in cells}
        assert len(points) == 1 and all(c.strip() for c in cells), (col, cells)
    assert "e+" not in text
    assert "skipped run i4 (tpot_ms): chips must be positive, got 0" in text
    assert "figures compared: 3   skipped: 1" in text
