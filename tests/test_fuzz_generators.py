"""The fuzz campaign's generators (benchmarks/fuzz_cases.py, fuzz_files.py, fuzz_wide.py) keep up with the program:
each test fails when a command gains an option its --help lists that the generator never gives (or gives only
from the generic pool), a row schema gains a column or appears that no CSV carries, a Hugging Face reader maps a
key or a model_type no config sets, a sweep or serving field, nested entry key or web page field goes unfuzzed."""

import dataclasses
import importlib
import random
import re
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
fuzz_cases = importlib.import_module("fuzz_cases")
fuzz_files = importlib.import_module("fuzz_files")
fuzz_wide = importlib.import_module("fuzz_wide")
fuzz_shapes = importlib.import_module("fuzz_shapes")
fuzz_pairs = importlib.import_module("fuzz_pairs")

HELP_FLAG = re.compile(r"^ {2}(?:-\w, )?(--[\w-]+)(?: / (--[\w-]+))?", re.MULTILINE)


@pytest.fixture(scope="module")
def names():
    return fuzz_cases.Names()


def _help(names, command) -> str:
    cmd = names.commands[command]
    with click.Context(cmd, info_name=command) as ctx:
        return cmd.get_help(ctx)


def test_every_option_in_every_help_text_is_drawn(names):
    missing = []
    for command in names.commands:
        drawn = fuzz_cases.drawn_flags(names, command) | {"--help"}
        skipped = {flag for c, flag in fuzz_cases.SKIP if c == command}
        listed = {f for m in HELP_FLAG.finditer(_help(names, command)) for f in m.groups() if f}
        missing += [f"{command} {f}" for f in sorted(listed - drawn - skipped)]
    assert not missing, f"options the fuzz campaign never gives: {missing}"


def test_no_option_takes_its_values_from_the_generic_pool(names):
    generic = [f"{c} {p.opts[0]}" for c, cmd in names.commands.items() for p in cmd.params
               if isinstance(p, click.Option) and (c, p.opts[0]) not in fuzz_cases.SKIP
               and fuzz_cases.pool_source(c, p.opts[0], p) == "generic"]
    assert not generic, f"options fuzzed only with the generic strings (name their values in NAMED): {generic}"


def test_the_generator_gives_each_command_options_and_combinations(names, tmp_path):
    seen: dict[str, set] = {}
    for i in range(300):
        folder = tmp_path / str(i)
        folder.mkdir()
        case = fuzz_cases.command_line(random.Random(i), names, folder)
        seen.setdefault(case.argv[0], set()).update(a for a in case.argv if a.startswith("--"))
    assert set(seen) >= set(names.commands) - {"ui"}
    assert {"--cp", "--ep"} <= seen["train"] and {"--disaggregate", "--speculative"} <= seen["serve"]


def test_every_row_schema_is_fuzzed_with_every_column():
    declared = set()
    for path in (ROOT / "src/flopcast").rglob("*.py"):
        declared |= set(re.findall(r'^\w+ = RowSchema\("([^"]+)"', path.read_text(), re.MULTILINE))
    covered = {s.what for s in fuzz_wide.schemas().values()}
    assert declared and declared <= covered, f"row schemas no CSV generator writes: {declared - covered}"
    header = ["run_id"]
    body = [["a"], ["b"]]
    rng = random.Random(0)
    for _ in range(200):
        fuzz_wide.extra_columns(rng, "serving", header, body)
    assert set(header) == set(fuzz_wide.schemas()["serving"].columns)
    assert all(len(r) == len(header) for r in body)


def test_every_hugging_face_key_and_architecture_is_fuzzed():
    from flopcast.model import hf

    assert set(fuzz_wide.HF_TEMPLATES) == set(hf.READERS) | set(hf.WRAPPERS)
    text = (ROOT / "src/flopcast/model/hf.py").read_text()
    read = set(re.findall(r'\b(?:get|int|has)\("(\w+)"', text))
    nested = {k for v in fuzz_wide.HF_VALUES if isinstance(v, dict) for k in v} | {"not_modelled"}
    assert read - nested <= set(fuzz_wide.HF_KEYS), sorted(read - nested - set(fuzz_wide.HF_KEYS))


def test_hugging_face_templates_load_as_given(tmp_path):
    import json

    from flopcast.model import hf

    for model_type, cfg in fuzz_wide.HF_TEMPLATES.items():
        path = tmp_path / model_type / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps(cfg))
        assert hf.load(path).layers >= 1, model_type  # a valid base, so a mutation tests one key


def test_sweep_serving_nested_and_page_fields_are_fuzzed():
    from flopcast.catalog import entries
    from flopcast.sweep.serving import ServingBlock
    from flopcast.sweep.spec import SweepFile
    from flopcast.ui.query import KNOWN

    assert set(ServingBlock.model_fields) == set(fuzz_wide.SERVING_FIELDS)
    for name, cls in (("moe", entries.MoeEntry), ("mla", entries.MlaEntry), ("sliding_window", entries.WindowEntry),
                      ("tiers", entries.TierEntry)):
        given, others = fuzz_files.NESTED[name]
        assert {f.name for f in dataclasses.fields(cls)} <= set(given) | set(others), name
    assert KNOWN <= set(fuzz_cases.UI_PARAMS)
    sweep_fields = set(SweepFile.model_fields)
    assert sweep_fields <= set(_sweep_fields_written()), sweep_fields - set(_sweep_fields_written())


def _sweep_fields_written() -> set:
    import tempfile

    out = set()
    with tempfile.TemporaryDirectory() as d:
        rng = random.Random(2)
        for _ in range(120):
            make = fuzz_wide.sweep_file if rng.random() < 0.5 else fuzz_files.sweep_file
            path = make(rng, Path(d))
            if path.is_file():
                out |= {line.split(":")[0] for line in path.read_text(errors="replace").splitlines() if ":" in line}
    return out


def test_every_shipped_short_name_and_download_choice_is_drawn():
    from flopcast.ui.app import FORMATS
    from flopcast.validate.rows import SHIPPED

    assert set(SHIPPED) <= set(fuzz_cases.SHIPPED_NAMES), set(SHIPPED) - set(fuzz_cases.SHIPPED_NAMES)
    assert set(FORMATS) <= set(fuzz_cases.DOWNLOAD_FORMATS) and {"train", "compare"} <= set(fuzz_cases.DOWNLOAD_WHAT)


def test_every_environment_variable_the_program_reads_is_drawn():
    text = "\n".join(p.read_text() for p in (ROOT / "src/flopcast").rglob("*.py"))
    read = set(re.findall(r"""(?:environ(?:\.get)?[\[(]|getenv\()\s*["'](\w+)["']""", text))
    # and what the library calls on its paths read: shutil.get_terminal_size, expanduser, tempfile
    assert read | {"COLUMNS", "LINES", "HOME", "TMPDIR"} <= set(fuzz_shapes.ENV), read - set(fuzz_shapes.ENV)


def test_the_generator_reshapes_command_lines_stdin_environment_and_files(names, tmp_path, monkeypatch):
    monkeypatch.setattr(fuzz_cases, "SHAPED", 1.0)  # every case reshaped (a quarter of them in a campaign)

    def small_csv(rng, folder, kind):  # the shapes are the point here; a 250,000-row trace takes seconds to write
        path = folder / f"{kind}{rng.randrange(10**6)}.csv"
        path.write_text("arrival_s,input_tokens,output_tokens\n0,16,1\n")
        return path

    monkeypatch.setattr(fuzz_cases, "csv_file", small_csv)
    seen = set()
    for i in range(300):
        folder = tmp_path / str(i)
        folder.mkdir()
        case = fuzz_cases.command_line(random.Random(i), names, folder)
        argv = [str(a) for a in case.argv]
        flags = [a for a in argv if a.startswith("--") and "=" not in a]
        seen |= {"repeated option"} if len(flags) != len(set(flags)) else set()
        seen |= {"--flag=value"} if any(a.startswith("--") and "=" in a for a in argv) else set()
        seen |= {"--"} if "--" in argv else set()
        seen |= {"long argument list"} if len(argv) > 1000 or any(len(a) > 100_000 for a in argv) else set()
        seen |= {"unicode"} if any(not a.isascii() for a in argv) else set()
        seen |= {"stdin"} if case.stdin is not None and {"-", "/dev/stdin"} & set(argv) else set()
        seen |= {"environment"} if case.env else set()
        seen |= {"terminal"} if case.tty else set()
        seen |= {"rewritten"} if case.churn else set()
        for a in (a for a in argv if len(a) < 1024):
            p = Path(a)
            if a.startswith(str(folder)) and p.is_symlink():
                seen.add("symlink" if p.exists() else "link to nothing or a loop")
            if a.startswith(str(folder)) and p.is_fifo():
                seen.add("fifo")
    shapes = {"repeated option", "--flag=value", "--", "long argument list", "unicode", "stdin", "environment",
              "terminal", "rewritten", "symlink", "link to nothing or a loop", "fifo"}
    assert shapes <= seen, f"shapes the generator never gives: {sorted(shapes - seen)}"


def test_pairs_differ_only_in_the_chip(tmp_path):
    names = fuzz_cases.Names(("pair",))
    case = fuzz_cases.case(random.Random(3), names, tmp_path)
    slow, fast = case.argv
    assert case.kind == "pair" and slow[0] in fuzz_pairs.METRICS and "--json" in slow
    assert [a for a in slow if not a.endswith("chip.yaml")] == [a for a in fast if not a.endswith("faster.yaml")]
    assert (tmp_path / "faster.yaml").read_text().count("\n") >= 2 and fuzz_cases.PAIRED > 0
