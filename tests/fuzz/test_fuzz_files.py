"""Every user-file field, valid and hostile: a model, chip or system file loads to values within the schema's
bounds or is refused with one line; the command line then gives exit code 0 or 2 and valid output. And the
physics: more peak or more bandwidth is never slower."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from flopcast import api, catalog
from flopcast.errors import FlopcastError
from harness import FUZZ, check_run

INTS = st.one_of(st.integers(-5, 70_000), st.sampled_from([2**63, 10**30, -(2**63)]))
HOSTILE = st.one_of(
    st.sampled_from(["1.0e+308", ".inf", ".nan", "-.inf", "'abc'", "''", "null", "true", "'false'", "'no'", "[1, 2]",
                     "{a: 1}", "0", "-1", "1e-300", "'1e30'", "just a string", "[[[[[[]]]]]]"]),
    INTS.map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
QUANTITIES = {
    "memory": ["96 GiB", "0 GiB", "-5 GiB", "1e-300 B", "1e30 TB", "96 GiB/s", "lots", "1.0e+308"],
    "memory_bandwidth": ["2.9 TB/s", "1e-300 B/s", "5.8 TB", "0 B/s", "1e30 PB/s", "fast", "nan TB/s", "inf"],
    "peak_flops": ["{bf16: 667 TFLOP/s}", "{bf16: 0 TFLOP/s}", "{fp3: 1 PFLOP/s}", "{bf16: 1e30 TFLOP/s}", "5",
                   "{bf16: nan TFLOP/s}", "{cfp8: 2 PFLOP/s}", "{bf16: null}"],
    "power": ["700 W", "-1 W", "1e9 W", "null"],
    "price_per_hour": ["40 USD/h", "-5 USD/h", "55 USD", "1e30 USD/h", "0 USD/h"],
    "tiers": ["[{name: a, size: 8, bandwidth: 450 GB/s, latency: 2 us}]", "[{name: a, size: 0, bandwidth: 1 TB/s}]",
              "[{name: a, size: 8}]", "5", "[{name: a, size: 8, bandwidth: 1 TB/s, latncy: 2 us}]",
              "[{size: 1e30, bandwidth: 1e-300 B/s}]", "[]"],
}
FIELDS = {
    "model": ["layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab", "seq_len", "mlp",
              "tied_embeddings", "dropout", "batch_tokens", "published_params", "notes", "sources", "name", "layer",
              "moe", "mla", "sliding_window"],
    "chip": ["memory", "memory_bandwidth", "peak_flops", "power", "cores", "tile", "isa", "family", "kind",
             "default_system", "sram", "clock", "mamf", "notes", "price"],
    "system": ["chips_per_node", "price_per_hour", "tiers", "vcpus", "memory", "chip", "sources", "price"],
}
BASE = {"model": "llama3-8b", "chip": "trainium2", "system": "p5.48xlarge"}
LOAD = {"model": catalog.load_model, "chip": catalog.load_chip, "system": catalog.system_for}


@st.composite
def user_file(draw):
    kind = draw(st.sampled_from(sorted(FIELDS)))
    fields = draw(st.lists(st.sampled_from(FIELDS[kind]), min_size=1, max_size=3, unique=True))
    lines = [] if draw(st.integers(0, 9)) == 0 else [f"base: {BASE[kind]}"]
    for f in fields:
        values = st.sampled_from(QUANTITIES[f]) if f in QUANTITIES else HOSTILE
        lines.append(f"{f}: {draw(values)}")
    return kind, "\n".join(lines) + "\n"


def _write(text: str) -> str:
    folder = Path(tempfile.mkdtemp(prefix="flopcast-fuzz-"))
    path = folder / "user.yaml"
    path.write_text(text)
    return str(path)


def _in_bounds(kind: str, obj) -> None:
    if kind == "model":
        assert 1 <= obj.layers <= 10_000 and 1 <= obj.hidden <= 2**20 and 1 <= obj.heads <= 2**16
        assert obj.heads % obj.kv_heads == 0 and 1 <= obj.vocab <= 2**24 and 1 <= obj.seq_len <= 2**27
        assert isinstance(obj.dropout, bool) and isinstance(obj.tied_embeddings, bool)
    else:
        chip = obj if kind == "chip" else obj.chip
        assert all(1e6 <= p <= 1e18 for p in chip.peak_flops.values()) and 1e6 <= chip.memory_bandwidth <= 1e16
        if kind == "system":
            assert all(1e3 <= t.bandwidth <= 1e16 and t.size >= 1 for t in obj.tiers)
            assert obj.price_per_hour is None or 0 <= obj.price_per_hour <= 1e7


@FUZZ
@given(user_file())
def test_fuzz_user_files_load_in_bounds_or_are_refused(case):
    kind, text = case
    path = _write(text)
    try:
        obj = LOAD[kind](path)
    except FlopcastError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    _in_bounds(kind, obj)


@FUZZ
@given(user_file(), st.booleans())
def test_fuzz_user_files_on_the_command_line(case, as_json):
    kind, text = case
    path = _write(text)
    model, hardware = (path, "p5.48xlarge") if kind == "model" else ("llama3-8b", path)
    argv = ["train", model, "-H", hardware, "-n", "8", "--tp", "1", "--pp", "1"] + (["--json"] if as_json else [])
    check_run(argv)
    check_run(["catalog", path] + (["--json"] if as_json else []))


@FUZZ
@given(st.sampled_from(["memory_bandwidth", "peak_flops"]), st.floats(1.0, 64.0),
       st.sampled_from([(1, 1), (8, 1), (2, 4)]), st.sampled_from(["trainium2", "h100-sxm"]))
def test_more_peak_or_bandwidth_is_never_slower(field, factor, layout, chip_name):
    chip = catalog.load_chip(chip_name)
    base = catalog.raw("chip")[chip.id]
    if field == "memory_bandwidth":
        line = f"memory_bandwidth: {chip.memory_bandwidth * factor:.6g} B/s"
    else:
        peaks = chip.peak_flops.items()
        rates = ", ".join(f"{d.label}: {v * factor:.6g} FLOP/s" for d, v in peaks if v * factor <= 1e18)
        line = f"peak_flops: {{{rates}}}"
    faster = _write(f"base: {chip.id}\n{line}\n")
    system = base["default_system"]
    tp, pp = layout
    kw = dict(chips=16, tp=tp, pp=pp, tokens=1e9)
    slow = api.train("llama3-8b", system, **kw)
    fast_system = catalog.system_for(faster)
    fast = api.train("llama3-8b", fast_system, **kw)
    assert fast.step_time_s <= slow.step_time_s * (1 + 1e-9), (field, factor, layout)


CELLS = st.sampled_from(["", "0", "1", "-1", "8", "64", "1e30", "inf", "nan", "-inf", "2.5", "x", "9223372036854775808",
                         "1e-300", "\ufffd", "1,000"])


@FUZZ
@given(st.lists(st.tuples(CELLS, CELLS, CELLS), min_size=1, max_size=5), st.booleans())
def test_fuzz_trace_rows(rows, short_row):
    lines = ["arrival_s,input_tokens,output_tokens"] + [",".join(r) for r in rows]
    if short_row:
        lines[-1] = lines[-1].rsplit(",", 1)[0]
    path = Path(tempfile.mkdtemp(prefix="flopcast-fuzz-")) / "trace.csv"
    path.write_text("\n".join(lines) + "\n")
    check_run(["serve", "llama3-8b", "-H", "p5.48xlarge", "--trace", str(path), "--json"])


@FUZZ
@given(st.sampled_from(["chips", "tp", "pp", "dp", "layers", "hidden", "heads", "seq_len", "global_batch",
                        "micro_batch", "measured_tokens_per_s_per_chip", "moe_experts", "vocab"]), CELLS,
       st.booleans())
def test_fuzz_validate_rows(column, cell, as_json):
    lines = (Path(__file__).resolve().parents[2] / "validation" / "calibration_runs.csv").read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index(column)] = cell if "," not in cell else f'"{cell}"'
    path = Path(tempfile.mkdtemp(prefix="flopcast-fuzz-")) / "runs.csv"
    path.write_text("\n".join([lines[0], ",".join(row)]) + "\n")
    check_run(["validate", str(path)] + (["--json"] if as_json else []))
