"""CSV tables: a result's rows(), its columns the JSON keys of each row, nested mappings flattened with '/'."""

import csv
import io

import pytest

import flopcast
from flopcast.errors import FlopcastError
from flopcast.frame import flatten
from flopcast.report import tables


def test_columns_are_the_json_keys_of_a_forecast():
    r = flopcast.train("llama3-8b", "p5.48xlarge", 8, tp=1, pp=1, micro_batch=1, global_batch=64, tokens=1e11)
    d = r.to_dict()
    reader = csv.DictReader(io.StringIO(tables.csv_text([d, d])))
    rows = list(reader)
    assert len(rows) == 2
    assert reader.fieldnames == list(flatten(d))
    assert {"layout/tp", "time_breakdown_s/compute", "memory_breakdown_gib/weights"} <= set(reader.fieldnames)
    assert float(rows[0]["step_time_s"]) == pytest.approx(r.step_time_s)
    assert rows[0]["layout/tp"] == "1" and rows[0]["model"] == "llama3-8b"


def test_rows_of_different_shapes_share_one_header_and_missing_cells_stay_empty(tmp_path):
    rows = [{"system": "p5.48xlarge", "mfu": 0.4, "layout": {"tp": 8}, "cost_usd": None},
            {"system": "trn2.48xlarge", "error": "does not fit", "x": float("nan")}]
    tables.write_csv(tmp_path / "out" / "compare.csv", rows)
    got = list(csv.DictReader(open(tmp_path / "out" / "compare.csv")))
    assert list(got[0]) == ["system", "mfu", "layout/tp", "cost_usd", "error", "x"]
    assert got[0]["cost_usd"] == "" and got[1] == {"system": "trn2.48xlarge", "mfu": "", "layout/tp": "",
                                                   "cost_usd": "", "error": "does not fit", "x": ""}


def test_a_results_table_is_its_rows(tmp_path):
    res = flopcast.search("llama3-8b", "p5.48xlarge", 8, top=3, tp=1, pp=1, micro_batch=1)
    n = tables.write_result(tmp_path / "search.csv", res)
    got = list(csv.DictReader(open(tmp_path / "search.csv")))
    assert n == len(got) == len(res.top) and [int(r["rank"]) for r in got] == list(range(1, n + 1))


def test_unwritable_paths_are_one_sentence(tmp_path):
    (tmp_path / "file").write_text("")
    for bad, why in ((tmp_path / "file" / "x.csv", "is a file, not a folder"), (tmp_path, "it is a folder")):
        with pytest.raises(FlopcastError, match=why):
            tables.write_csv(bad, [{"a": 1}])
