"""Every command's text output fits the width (100 columns in a pipe) and its numeric columns line up: each
table goes through report/text_table, and this check reads the printed text, not the renderer's inputs."""

import re

import pytest

from flopcast.cli import main
from flopcast.report.text_table import PIPE_WIDTH

# a cell is a run of text between runs of two or more spaces; a number may carry a % or one unit word
_CELL = re.compile(r"\S+(?: \S+)*")
_NUMBER = re.compile(r"^[-+]?\$?\d[\d,]*(\.\d+)?(%| [A-Za-z][\w/%-]*)?$")


def _numbers(line: str):
    """(start, end, anchor) of each numeric cell: the anchor is its decimal point, or the end of its digits;
    the end is the cell's (with its unit), for a right-aligned column."""
    for m in _CELL.finditer(line):
        cell = m.group()
        if not _NUMBER.match(cell):
            continue
        digits = re.match(r"^[-+]?\$?\d[\d,]*(\.\d+)?", cell).group()
        anchor = m.start() + (digits.index(".") if "." in digits else len(digits))
        yield m.start(), m.end(), anchor


def misaligned(text: str) -> list[str]:
    """The numeric columns, within each block of lines (a table: blocks part at a blank line and at a title
    line ending in ':'), whose cells line up neither on the decimal point nor on the right edge (cells are in
    one column where they overlap)."""
    problems = []
    for block in re.split(r"\n\s*\n|\n(?= *\S[^\n]*:\n)", text):  # tables part at blank lines and at titles
        cells = [(i, *c) for i, line in enumerate(block.splitlines()) for c in _numbers(line)]
        for k, (i, start, end, anchor) in enumerate(cells):
            for j, s2, e2, a2 in cells[k + 1:]:
                if j != i and start < e2 and s2 < end and anchor != a2 and end != e2:
                    lines = block.splitlines()
                    problems.append(f"{lines[i]!r} / {lines[j]!r}")
    return problems


def too_wide(text: str, fit: int = PIPE_WIDTH) -> list[str]:
    """Lines past the width, except one word alone on its line (a URL, a path: never cut)."""
    return [line for line in text.splitlines() if len(line) > fit and " " in line.strip()]


def test_the_check_catches_hand_padded_columns():
    step, tokens = 25.821, 121826  # the train report's throughput lines before report/text_table
    old = f"  step time               {step:10.3f} s\n  tokens/s (total)        {tokens:12,.0f} tokens/s\n"
    assert misaligned(old)
    aligned = "  step time          25.821  s\n  tokens/s (total)  121,826      tokens/s\n"
    assert not misaligned(aligned)
    assert too_wide("x " * 51) and not too_wide("x " * 50) and not too_wide("  https://" + "x" * 120)


P5 = ["--hardware", "p5.48xlarge"]
PINNED = ["--tp", "1", "--pp", "1", "--micro-batch", "1", "--global-batch", "512", "--sharding", "zero2",
          "--recompute", "none", "--dtype", "bf16", "--schedule", "1f1b", "--no-sequence-parallel"]
COMMANDS = {
    "train": ["train", "gpt3-175b", "--hardware", "dgx-a100-80gb", "--chips", "1024", "--tp", "8", "--pp", "16",
              "--micro-batch", "1", "--global-batch", "1536", "--recompute", "full", "--tokens", "300B"],
    "search": ["search", "llama3-8b", *P5, "--chips", "8", "--top", "3"],
    "catalog": ["catalog"],
    "catalog entry": ["catalog", "trainium2"],
    "compare": ["compare", "llama3-8b", "-H", "p5.48xlarge,trn2.48xlarge,dgx-a100-80gb", "--chips", "64", *PINNED],
    "compare --serve": ["compare", "llama3-8b", "-H", "p5.48xlarge,c8g.16xlarge", "--serve", "--qps", "2",
                        "--requests", "30"],
    "plan": ["plan", "llama3-8b", *P5, "--tokens", "100B", "--deadline", "10d", *PINNED],
    "infer": ["infer", "llama3-8b", *P5, "--batch", "8"],
    "serve": ["serve", "llama3-8b", *P5, "--qps", "5", "--requests", "40"],
    "reliability": ["reliability", "llama3-8b", *P5, "--chips", "64", "--trials", "3", *PINNED],
    "reliability sweep": ["reliability", "llama3-8b", *P5, "--sweep-chips", "64,128", "--trials", "3", *PINNED],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_text_output_fits_and_its_numbers_line_up(name, capsys):
    code = main(COMMANDS[name])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert not too_wide(out.out), too_wide(out.out)
    assert not misaligned(out.out), misaligned(out.out)[:3]


def test_validate_text_fits_and_lines_up(tmp_path, capsys):
    from pathlib import Path

    rows = (Path(__file__).parents[1] / "validation" / "calibration_runs.csv").read_text().splitlines()
    (tmp_path / "few.csv").write_text("\n".join(rows[:5]) + "\n")
    assert main(["validate", str(tmp_path / "few.csv")]) == 0
    text = capsys.readouterr().out
    assert not too_wide(text) and not misaligned(text), (too_wide(text), misaligned(text)[:3])
