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


def test_signed_numbers_line_up_on_the_point():
    lines = render([Column("error %", "+.1f")], [[12.34], [-4.9], [None]], fit=80)
    assert len({line.index(".") for line in lines[1:3]}) == 1 and lines[3].strip() == "n/a"


def test_right_aligned_column_and_no_header():
    lines = render([Column("k", text=True), Column("v", decimal=False)], [["a", "3.6 days"], ["b", "99.9%"]],
                   fit=80, header=False)
    assert lines == ["a  3.6 days", "b     99.9%"]


def test_a_wrapped_middle_column_and_free_text_below_the_row():
    cols = [Column("claim", text=True, wrap=10), Column("n", ",d"), Column("note", text=True, below=True)]
    lines = render(cols, [["a claim that wraps", 1234, "a note " * 20]], fit=40)
    assert lines[0].startswith("claim") and "n" in lines[0] and lines[1].startswith("    note")
    assert lines[2].startswith("a claim") and lines[2].endswith("1,234") and lines[3].strip() == "that wraps"
    assert lines[4].startswith("    a note") and all(line.startswith("    ") for line in lines[4:])
    assert all(len(line) <= 40 for line in lines)


def test_sideways_splits_the_names_into_blocks_that_fit():
    from flopcast.report.text_table import sideways

    names = [f"system-{k}" for k in range(6)]
    lines = sideways("", names, [("days", [f"{k}.5" for k in range(6)]), ("MFU %", ["41"] * 6)], fit=40)
    assert all(len(line) <= 40 for line in lines) and "" in lines  # more than one block
    assert sum(line.count("system-") for line in lines) == 6


def test_fold_wraps_prose_and_leaves_table_lines():
    from flopcast.report.text_table import fold

    prose = "  assumptions: " + "word " * 30
    assert all(len(line) <= 40 for line in fold(prose, 40)) and fold(prose, 40)[1].startswith("    word")
    table_line = "a" * 30 + "  " + "b" * 30
    assert fold(table_line, 40) == [table_line]
