"""Start-up: the built-in catalog is read without pydantic and agrees with the pydantic schema entry by entry;
a command imports only what it uses (`flopcast --help` no numpy, pydantic or table code; `flopcast search` on
built-in names no pydantic)."""

import json
import subprocess
import sys

import pytest
import yaml

from flopcast import catalog
from flopcast.catalog import entries, schema
from flopcast.errors import FlopcastError


def _builtin(kind):
    for key, d in catalog.raw(kind).items():
        if kind == "model" and not d.get("moe"):
            d = {k: v for k, v in d.items() if k != "moe"}  # as build.model_from_dict hands it on
        yield key, d


@pytest.mark.parametrize("kind", sorted(entries.SCHEMAS))
def test_every_builtin_entry_passes_the_pydantic_schema_and_the_light_reader_agrees(kind):
    n = 0
    for key, d in _builtin(kind):
        checked = schema.validate(kind, d, key, "entry")  # FlopcastError on any schema error
        assert entries.read(kind, d) == checked, f"{kind} {key}: the two readers disagree"
        n += 1
    assert n >= 10


BAD = [
    ("model", {"layers": 2, "hidden": 8, "heads": 2, "vocab": 10, "layer": 3}),
    ("model", {"layers": 2.5, "hidden": 8, "heads": 2, "vocab": 10}),
    ("model", {"hidden": 8, "heads": 2, "vocab": 10}),
    ("model", {"layers": 2, "hidden": 8, "heads": 2, "vocab": 10, "moe": {"experts": 8, "topk": 2}}),
    ("model", {"layers": 2, "hidden": 8, "heads": 2, "vocab": 10, "sliding_window": {"window": 4, "evry": 1}}),
    ("model", {"layers": 2, "hidden": 8, "heads": 2, "vocab": 10, "mla": [1, 2]}),
    ("chip", {"peak_flops": {"bf16": "1 PFLOP/s"}, "memory_bandwidth": "1 TB/s", "tile": [1]}),
    ("chip", {"peak_flops": {"bf17": "1 PFLOP/s"}, "memory_bandwidth": "1 TB/s"}),
    ("chip", {"peak_flops": {"bf16": "1 PFLOP/s"}, "memory_bandwidth": "1 TB"}),
    ("system", {"chip": "trainium2", "tiers": [{"size": 8}]}),
    ("system", {"chip": "trainium2", "tiers": [{"size": 8, "bandwidth": "1 TB/s"}] * 17}),
    ("system", {"chip": "trainium2", "tiers": {"size": 8}}),
]


@pytest.mark.parametrize("kind, data", BAD)
def test_the_light_reader_refuses_what_the_schema_refuses(kind, data):
    with pytest.raises(FlopcastError):
        schema.validate(kind, data, "x", "entry")
    with pytest.raises(entries.EntryError):
        entries.read(kind, data)


def test_a_builtin_entry_that_does_not_parse_gets_the_schemas_message():
    with pytest.raises(FlopcastError, match="^unknown key 'layer' in model entry bad; did you mean 'layers'"):
        catalog.model_from_dict("bad", dict(BAD[0][1]), builtin=True)
    with pytest.raises(FlopcastError, match="^bad: field 'layers' is missing"):
        catalog.model_from_dict("bad", dict(BAD[2][1]), builtin=True)


def _imported(argv):
    """The modules a fresh `flopcast ARGV` process has imported when it exits (stdout to nowhere)."""
    code = ("import sys, json, io, contextlib\n"
            "from flopcast.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            f"        main({argv!r})\n"
            "    except SystemExit:\n"
            "        pass\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_help_imports_no_numpy_pydantic_catalog_or_tables():
    mods = _imported(["--help"])
    heavy = {m for m in mods if m.split(".")[0] in ("numpy", "pydantic", "pydantic_core", "rich", "yaml")}
    ours = {m for m in mods if m.startswith(("flopcast.catalog", "flopcast.report", "flopcast.simulate"))}
    assert not heavy and not ours, sorted(heavy | ours)


def test_search_on_builtin_names_does_not_import_pydantic():
    mods = _imported(["search", "llama3-8b", "--hardware", "p5.48xlarge", "--chips", "8", "--top", "1"])
    assert "flopcast.plan.search" in mods  # it ran
    assert not {m for m in mods if m.split(".")[0] in ("pydantic", "pydantic_core")}
    assert "flopcast.catalog.schema" not in mods


def test_a_user_file_still_goes_through_the_pydantic_schema(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({"base": "llama3-8b", "layers": 4}))
    assert catalog.load_model(str(path)).layers == 4
    assert "flopcast.catalog.schema" in sys.modules
