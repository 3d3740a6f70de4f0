"""The declared schema of user files (issue 16 file classes, issue 17 item 6): strict keys, booleans,
physical bounds, bounded reading (size, nesting, aliases, `base:` chains); SCHEMA.md documents every field."""

import re
import time

import pytest

from flopcast import catalog
from flopcast.catalog import entries, files, schema
from flopcast.cli import main
from flopcast.errors import FlopcastError

BASE = {"model": "llama3-8b", "chip": "trainium2", "system": "p5.48xlarge"}
LOAD = {"model": catalog.load_model, "chip": catalog.load_chip, "system": catalog.load_system}


def load(tmp_path, kind, text, name="f.yaml"):
    path = tmp_path / name
    path.write_text(f"base: {BASE[kind]}\n{text}\n")
    return LOAD[kind](str(path))


def refused(tmp_path, kind, text):
    with pytest.raises(FlopcastError) as exc:
        load(tmp_path, kind, text)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("kind, line, expected", [
    ("model", "layer: 16", "unknown key 'layer' in model file .*f.yaml; did you mean 'layers'\\?"),
    ("system", "price: 40 USD/h", "unknown key 'price' in system file .*; did you mean 'price_per_hour'\\?"),
    ("chip", "memory_bandwith: 3 TB/s", "did you mean 'memory_bandwidth'\\?"),
    ("model", "moe: {experts: 8, topk: 2, expert_ffn: 1024, expertz: 3}", "'expertz' \\(in moe\\).*'experts'"),
    ("system", "tiers: [{name: a, size: 8, bandwidth: 1 TB/s, latncy: 2 us}]", "'latncy' \\(in tiers\\[0\\]\\)"),
    ("model", "sliding_window: {window: 4, evry: 2}", "sliding_window.evry: 2 is not a key"),
])
def test_unknown_keys_name_the_closest_valid_key(tmp_path, kind, line, expected):
    assert re.search(expected, refused(tmp_path, kind, line))


@pytest.mark.parametrize("kind, line, expected", [
    ("model", "notes: just a string", "notes: 'just a string' is not a mapping"),
    ("model", "sources: abc", "sources: 'abc' is not a mapping"),
    ("chip", "isa: 5", "isa: 5 is not a list of names"),
    ("chip", "family: [a, b]", "family: ['a', 'b'] is not a name"),
    ("chip", "default_system: [x]", "default_system: ['x'] is not a name"),
    ("model", "hidden: 1.0e+308", "hidden: 1e+308 is out of range; valid: a positive integer (at most 1,048,576)"),
    ("model", f"hidden: {2**63}", "is out of range"),
    ("model", "layers: .inf", "layers: inf is not an integer"),
    ("chip", "memory_bandwidth: 1e-300 B/s", "memory_bandwidth: '1e-300 B/s' is out of range"),
    ("chip", "peak_flops: {bf16: 1e30 TFLOP/s}", "peak_flops.bf16: '1e30 TFLOP/s' is out of range"),
    ("chip", "peak_flops: {fp3: 1 PFLOP/s}", "peak_flops.fp3: '1 PFLOP/s' is not a known data type"),
    ("chip", "tile: 5", "tile: 5 is out of range; valid: two integers"),
    ("model", "batch_tokens: 1.0e+30", "batch_tokens: 1e+30 is out of range"),
    ("model", "dropout: maybe", "dropout: 'maybe' is not a boolean; valid: true, false, yes or no"),
    ("model", "dropout: 1", "dropout: 1 is not a boolean"),
    ("system", "tiers: [{name: a, size: 8}]", "field 'tiers[0].bandwidth' is missing"),
    ("system", "tiers: 5", "tiers: 5 is out of range; valid: a list"),
    ("system", "chips_per_node: 1e30", "chips_per_node: '1e30' is not an integer"),
])
def test_hostile_values_are_one_line_errors(tmp_path, kind, line, expected):
    assert expected in refused(tmp_path, kind, line)


@pytest.mark.parametrize("text, value", [("'false'", False), ("'no'", False), ("'yes'", True), ("'True'", True),
                                         ("false", False), ("yes", True)])
def test_booleans_are_booleans_or_the_four_words(tmp_path, text, value):
    m = load(tmp_path, "model", f"dropout: {text}\ntied_embeddings: {text}")
    assert m.dropout is value and m.tied_embeddings is value


def test_bad_files_are_refused_quickly(tmp_path):
    cases = {
        "deep.yaml": "base: llama3-8b\nnotes: " + "[" * 5000 + "]" * 5000 + "\n",
        "bomb.yaml": "base: llama3-8b\na: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)),
        "self.yaml": "base: llama3-8b\nnotes: &a {x: *a}\n",
        "big.yaml": "base: llama3-8b\n" + "# padding\n" * 200_000,
        "deep.toml": 'base = "llama3-8b"\nx = ' + "[" * 3000 + "]" * 3000 + "\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        started = time.perf_counter()
        with pytest.raises(FlopcastError, match="nested|nesting depth|too many|contains itself|bytes"):
            catalog.load_model(str(tmp_path / name))
        assert time.perf_counter() - started < 2, name
    (tmp_path / "bin.yaml").write_bytes(b"base: llama3-8b\nname: \xff\xfe\n")
    with pytest.raises(FlopcastError, match="cannot read"):
        catalog.load_model(str(tmp_path / "bin.yaml"))
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(FlopcastError, match="is a folder"):
        catalog.load_model(str(tmp_path / "dir.yaml"))


def test_long_base_chains_are_capped_and_short_ones_fast(tmp_path):
    n = files.MAX_BASE_CHAIN + 5
    for i in range(n):
        parent = f"c{i + 1}.yaml" if i < n - 1 else "llama3-8b"
        (tmp_path / f"c{i}.yaml").write_text(f"base: {parent}\nlayers: {i + 1}\n")
    with pytest.raises(FlopcastError, match="chain of more than"):
        catalog.load_model(str(tmp_path / "c0.yaml"))
    started = time.perf_counter()
    assert catalog.load_model(str(tmp_path / "c6.yaml")).layers == 7  # 31 files to the catalog entry
    assert time.perf_counter() - started < 2


def test_the_error_reaches_the_cli_as_one_line(tmp_path, capsys):
    (tmp_path / "m.yaml").write_text("base: llama3-8b\nlayer: 16\n")
    assert main(["catalog", str(tmp_path / "m.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean 'layers'" in err


def _fields(cls, prefix=""):
    for name, annotation in entries.hints(cls).items():
        yield name
        inner = schema._model_of(annotation)
        if inner is not None:
            yield from _fields(inner)


def test_schema_md_documents_every_declared_field():
    text = (catalog.DATA / "SCHEMA.md").read_text()
    for kind, cls in schema.SCHEMAS.items():
        for name in _fields(cls):
            assert f"`{name}" in text, f"{kind} field {name} is not documented in SCHEMA.md"


def test_kind_fields_come_from_the_schema():
    kinds = schema.kind_fields()
    assert {"layers", "hidden"} <= kinds["model"] and "peak_flops" in kinds["chip"] and "tiers" in kinds["system"]
    assert not (kinds["model"] & kinds["chip"]) and "memory" not in kinds["chip"]
