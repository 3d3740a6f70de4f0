"""CSV tables: the columns are the JSON keys of each row, nested mappings flattened with '/'."""

import csv
import io

import pytest

from flopcast import api
from flopcast.errors import FlopcastError
from flopcast.report import tables


def test_flatten_joins_nested_keys_and_keeps_cells_plain():
    row = {"a": 1, "layout": {"tp": 8, "pp": 2}, "t": {"comm": {"tp": 0.5}}, "notes": ["x", "y"], "none": None,
           "nan": float("nan"), "rows": [{"k": 1}], "empty": {}}
    assert tables.flatten(row) == {"a": 1, "layout/tp": 8, "layout/pp": 2, "t/comm/tp": 0.5, "notes": "x; y",
                                   "none": "", "nan": "", "rows": '[{"k": 1}]', "empty": ""}


def test_columns_are_the_json_keys_of_a_forecast():
    r = api.train("llama3-8b", "p5.48xlarge", 8, tp=1, pp=1, micro_batch=1, global_batch=64, tokens=1e11)
    d = r.to_dict()
    text = tables.csv_text([d, d])
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    assert len(rows) == 2
    expected = list(tables.flatten(d))
    assert reader.fieldnames == expected
    assert "layout/tp" in expected and "time_breakdown_s/compute" in expected and "memory_breakdown_gib/weights" in expected
    assert float(rows[0]["step_time_s"]) == pytest.approx(r.step_time_s)
    assert rows[0]["layout/tp"] == "1" and rows[0]["model"] == "llama3-8b"


def test_a_mapping_of_rows_gets_a_name_column_and_missing_cells_stay_empty(tmp_path):
    doc = {"systems": {"p5.48xlarge": {"mfu": 0.4, "layout": {"tp": 8}}, "trn2.48xlarge": {"error": "does not fit"}}}
    n = tables.write_table(tmp_path / "out" / "compare.csv", "compare", doc)
    assert n == 2
    rows = list(csv.DictReader(open(tmp_path / "out" / "compare.csv")))
    assert list(rows[0]) == ["system", "mfu", "layout/tp", "error"]
    assert rows[1] == {"system": "trn2.48xlarge", "mfu": "", "layout/tp": "", "error": "does not fit"}


def test_unwritable_paths_are_one_sentence(tmp_path):
    (tmp_path / "file").write_text("")
    for bad, why in ((tmp_path / "file" / "x.csv", "is a file, not a folder"), (tmp_path, "it is a folder")):
        with pytest.raises(FlopcastError, match=why):
            tables.write_csv(bad, [{"a": 1}])
    with pytest.raises(FlopcastError, match="prints no table"):
        tables.write_table(tmp_path / "x.csv", "train", {})
    with pytest.raises(FlopcastError, match="no 'rows' table"):
        tables.write_table(tmp_path / "x.csv", "validate", {})
