"""The text-table renderer: decimals aligned, thousands separated, units in headers, the last column wrapped."""

from flopcast.report.text_table import Column, render


def test_decimals_align_and_thousands_separate():
    lines = render([Column("step s", ",.3f"), Column("tok/s", ",.0f")], [[62.018, 8454.2], [1234.5, 12.0]], fit=80)
    assert lines == ["   step s  tok/s", "   62.018  8,454", "1,234.500     12"]


def test_mixed_precision_lines_up_on_the_point():
    lines = render([Column("x", ",")], [[1.5], [1234.25], [7]], fit=80)
    col = [line.index(".") for line in lines[1:] if "." in line]
    assert len(set(col)) == 1 and lines[2].strip() == "1,234.25"


def test_last_text_column_wraps_under_itself_within_the_width():
    layout = "tp=1 pp=1 dp=8 mb=1 gb=512 recompute=none sharding=zero2 sp=off dtype=bf16 schedule=1f1b"
    lines = render([Column("#", "d"), Column("layout", text=True)], [[1, layout]], fit=40)
    assert all(len(line) <= 40 for line in lines)
    start = lines[0].index("layout")
    assert " ".join(line[start:] for line in lines[1:]) == layout
    assert all(line[:start].strip() == "" for line in lines[2:])


def test_missing_numbers_read_na():
    assert render([Column("a"), Column("b", text=True)], [[None, "x"]], fit=80)[1] == "n/a  x"
