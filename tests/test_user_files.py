"""User model, chip and system files: range checks (QA 12), paths relative to the file (18),
chip files as --hardware and unit errors (23), `flopcast catalog FILE` and display names (24)."""

import json
import os

import pytest

from flopcast import catalog
from flopcast.report import catalog as show
from flopcast.cli import main
from flopcast.errors import FlopcastError


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def cli(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------- 12: impossible values

CHIP_CASES = [
    ("memory: -5 GiB", "memory", "'-5 GiB'", "above zero"),
    ("memory: 0 GiB", "memory", "'0 GiB'", "above zero"),
    ("memory_bandwidth: -1 TB/s", "memory_bandwidth", "'-1 TB/s'", "above zero"),
    ("peak_flops: {bf16: 0 TFLOP/s}", "peak_flops.bf16", "'0 TFLOP/s'", "above zero"),
    ("peak_flops: {bf16: -667 TFLOP/s}", "peak_flops.bf16", "'-667 TFLOP/s'", "above zero"),
    ("power: -700 W", "power", "'-700 W'", "above zero"),
    ("cores: 0", "cores", "0", "a positive integer"),
    ("cores: 2.5", "cores", "2.5", "a positive integer"),
    ("tile: [128, 0]", "tile[1]", "0", "a positive integer"),
    ("mamf: {bf16: 700 TFLOP/s}", "mamf.bf16", "'700 TFLOP/s'", "at most peak_flops.bf16"),
    ("mamf: {bf16: -1 TFLOP/s}", "mamf.bf16", "'-1 TFLOP/s'", "above zero"),
]


@pytest.mark.parametrize("line, field, value, valid", CHIP_CASES)
def test_chip_file_out_of_range(tmp_path, line, field, value, valid):
    f = write(tmp_path / "bad.yaml", f"base: trainium2\n{line}\n")
    with pytest.raises(FlopcastError) as exc:
        catalog.load_chip(f)
    msg = str(exc.value)
    assert "\n" not in msg and f in msg and f"{field}: {value}" in msg and "valid:" in msg and valid in msg


SYSTEM_CASES = [
    ("price_per_hour: -5 USD/h", "price_per_hour", "'-5 USD/h'", "zero or more"),
    ("chips_per_node: 0", "chips_per_node", "0", "a positive integer"),
    ("chips_per_node: -8", "chips_per_node", "-8", "a positive integer"),
    ("chips_per_node: 7.5", "chips_per_node", "7.5", "a positive integer"),
    ("tiers: [{name: nvl, size: 8, bandwidth: -450 GB/s}]", "bandwidth", "'-450 GB/s'", "above zero"),
    ("tiers: [{name: nvl, size: 0, bandwidth: 450 GB/s}]", "size", "0", "a positive integer"),
    ("tiers: [{name: nvl, size: 8, bandwidth: 450 GB/s, latency: -3 us}]", "latency", "'-3 us'", "zero or more"),
]


@pytest.mark.parametrize("line, field, value, valid", SYSTEM_CASES)
def test_system_file_out_of_range(tmp_path, line, field, value, valid):
    f = write(tmp_path / "bad.yaml", f"base: p5.48xlarge\n{line}\n")
    with pytest.raises(FlopcastError) as exc:
        catalog.system_for(f)
    msg = str(exc.value)
    assert "\n" not in msg and f in msg and f"{field}: {value}" in msg and valid in msg


def test_chip_memory_negative_through_a_system_file(tmp_path):
    write(tmp_path / "m.yaml", "base: trainium2\nmemory: -5 GiB\n")
    s = write(tmp_path / "s.yaml", "base: trn2.48xlarge\nchip: m.yaml\n")
    with pytest.raises(FlopcastError, match=r"memory: '-5 GiB' is out of range; valid: a size in bytes above zero"):
        catalog.load_system(s)


MODEL_CASES = [
    ("layers: 3.5", "layers", "3.5", "a positive integer"),
    ("layers: 0", "layers", "0", "a positive integer"),
    ("layers: -2", "layers", "-2", "a positive integer"),
    ("heads: 0", "heads", "0", "a positive integer"),
    ("kv_heads: 0", "kv_heads", "0", "a positive integer"),
    ("kv_heads: 5", "kv_heads", "5", "a divisor of heads (32)"),
    ("hidden: 4100", "hidden", "4100", "a multiple of heads (32)"),
    ("hidden: 0", "hidden", "0", "a positive integer"),
    ("ffn_hidden: -1", "ffn_hidden", "-1", "a positive integer"),
    ("vocab: 0", "vocab", "0", "a positive integer"),
    ("vocab: \"lots\"", "vocab", "'lots'", "a positive integer"),
    ("seq_len: 0", "seq_len", "0", "a positive integer"),
    ("heads: true", "heads", "True", "a positive integer"),
    ("moe: {experts: 0, topk: 1, expert_ffn: 1024}", "moe.experts", "0", "a positive integer"),
    ("moe: {experts: 8, topk: 9, expert_ffn: 1024}", "moe.topk", "9", "1 to moe.experts (8)"),
    ("moe: {experts: 8, topk: 2, expert_ffn: 1024.5}", "moe.expert_ffn", "1024.5", "a positive integer"),
    ("moe: {experts: 8, topk: 2, expert_ffn: 1024, layer_freq: 0}", "moe.layer_freq", "0", "a positive integer"),
    ("moe: {experts: 8, topk: 2, expert_ffn: 1024, dense_layers: -1}", "moe.dense_layers", "-1", "0 or more"),
    ("batch_tokens: -4", "batch_tokens", "-4", "zero or more"),
]


@pytest.mark.parametrize("line, field, value, valid", MODEL_CASES)
def test_model_file_out_of_range(tmp_path, line, field, value, valid):
    f = write(tmp_path / "bad.yaml", f"base: llama3-8b\n{line}\n")
    with pytest.raises(FlopcastError) as exc:
        catalog.load_model(f)
    msg = str(exc.value)
    assert "\n" not in msg and f in msg and f"{field}: {value}" in msg and valid in msg


def test_model_head_dim_lifts_the_divisibility_rule(tmp_path):
    # Model.d_head is head_dim when given, else hidden // heads: only then must heads divide hidden
    f = write(tmp_path / "ok.yaml", "base: llama3-8b\nhidden: 4100\nhead_dim: 128\n")
    m = catalog.load_model(f)
    assert m.d_head == 128 and m.q_dim == 32 * 128


def test_integral_float_counts_are_accepted(tmp_path):
    f = write(tmp_path / "ok.toml", 'base = "llama3-8b"\nlayers = 16.0\n')
    assert catalog.load_model(f).layers == 16


def test_out_of_range_is_one_line_exit_2_on_the_cli(tmp_path, capsys):
    f = write(tmp_path / "cpn0.yaml", "base: p5.48xlarge\nchips_per_node: 0\n")
    code, out, err = cli(["train", "llama3-8b", "--hardware", f, "--chips", "64"], capsys)
    assert code == 2 and not out
    assert err.strip().count("\n") == 0 and "chips_per_node: 0 is out of range; valid: a positive integer" in err
    m = write(tmp_path / "kv5.yaml", "base: llama3-8b\nkv_heads: 5\n")
    code, _, err = cli(["train", m, "--hardware", "p5.48xlarge", "--chips", "64"], capsys)
    assert code == 2 and "kv_heads: 5 is out of range" in err and "Traceback" not in err


def test_zero_price_and_a_valid_file_still_work(tmp_path):
    f = write(tmp_path / "free.yaml", "base: p5.48xlarge\nprice_per_hour: 0 USD/h\n")
    assert catalog.system_for(f).price_per_hour == 0


# ---------------------------------------------------------------- 18: paths relative to the file

def test_chip_file_in_a_system_file_is_relative_to_the_system_file(tmp_path, monkeypatch):
    write(tmp_path / "sub" / "chipx.yaml", "base: trainium2\nmemory_bandwidth: 5.8 TB/s\n")
    node = write(tmp_path / "sub" / "nodex.yaml", "base: trn2.48xlarge\nchip: chipx.yaml\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    s = catalog.system_for(node)
    assert s.chip.memory_bandwidth == pytest.approx(5.8e12) and s.chips_per_node == 16
    monkeypatch.chdir(tmp_path)
    assert catalog.system_for(os.path.join("sub", "nodex.yaml")).chip.id == "chipx"


def test_base_file_is_relative_to_the_file_naming_it(tmp_path, monkeypatch):
    write(tmp_path / "a" / "base.yaml", "base: trainium2\nmemory_bandwidth: 5.8 TB/s\n")
    child = write(tmp_path / "a" / "b" / "child.yaml", "base: ../base.yaml\nmemory: 192 GiB\n")
    monkeypatch.chdir(tmp_path)
    c = catalog.load_chip(child)
    assert c.memory == 192 * 2**30 and c.memory_bandwidth == pytest.approx(5.8e12)


def test_missing_relative_chip_file_names_where_it_looked(tmp_path, monkeypatch):
    node = write(tmp_path / "sub" / "nodey.yaml", "base: trn2.48xlarge\nchip: nochip.yaml\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FlopcastError, match=r"chip: file .*sub.nochip\.yaml does not exist"):
        catalog.system_for(node)


def test_base_loop_is_an_error(tmp_path):
    a = write(tmp_path / "a.yaml", "base: b.yaml\nlayers: 4\n")
    write(tmp_path / "b.yaml", "base: a.yaml\nlayers: 8\n")
    with pytest.raises(FlopcastError, match="loop"):
        catalog.load_model(a)


def test_readme_codesign_example_from_another_directory(tmp_path, monkeypatch, capsys):
    write(tmp_path / "w" / "trn2-2xbw.yaml", "base: trainium2\nmemory_bandwidth: 5.8 TB/s\n")
    write(tmp_path / "w" / "trn2-2xbw-node.yaml", "base: trn2.48xlarge\nchip: trn2-2xbw.yaml\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(["train", "gpt-300b", "--hardware", "w/trn2-2xbw-node.yaml", "--chips", "1024",
                          "--tp", "4", "--pp", "8", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["step_time_s"] > 0


# ---------------------------------------------------------------- 23: chip files as --hardware, unit errors

def test_chip_file_as_hardware_runs_on_its_default_system(tmp_path):
    f = write(tmp_path / "trn2-2xbw.yaml", "base: trainium2\nmemory_bandwidth: 5.8 TB/s\n")
    s = catalog.system_for(f)
    node = catalog.system_for("trainium2")
    assert s.chip.memory_bandwidth == pytest.approx(5.8e12)
    assert s.tiers == node.tiers and s.chips_per_node == node.chips_per_node
    assert s.id == "trn2-2xbw" and "trn2-2xbw (based on AWS Trainium2)" in s.name


def test_chip_file_as_hardware_on_the_cli_matches_a_system_file(tmp_path, capsys):
    chip = write(tmp_path / "trn2-2xbw.yaml", "base: trainium2\nmemory_bandwidth: 5.8 TB/s\n")
    node = write(tmp_path / "node.yaml", "base: trn2.48xlarge\nchip: trn2-2xbw.yaml\n")
    args = ["train", "gpt-300b", "--chips", "1024", "--tp", "4", "--pp", "8", "--json"]
    code, a, err = cli(args + ["--hardware", chip], capsys)
    assert code == 0, err
    code, b, err = cli(args + ["--hardware", node], capsys)
    assert code == 0, err
    assert json.loads(a)["step_time_s"] == pytest.approx(json.loads(b)["step_time_s"])


def test_chip_file_without_default_system_says_how_to_name_it(tmp_path):
    f = write(tmp_path / "mine.yaml", "name: My chip\npeak_flops: {bf16: 500 TFLOP/s}\nmemory: 64 GiB\n"
                                      "memory_bandwidth: 2 TB/s\n")
    with pytest.raises(FlopcastError, match=r"mine\.yaml is a chip file; a system file names its chip with `chip:`"):
        catalog.system_for(f)
    with pytest.raises(FlopcastError, match="is a chip file"):
        catalog.load_system(f)


def test_unit_error_in_a_chip_file_passed_as_hardware(tmp_path, capsys):
    f = write(tmp_path / "badunit.yaml", "base: trainium2\nmemory_bandwidth: 5.8 TB\n")
    code, _, err = cli(["train", "gpt-300b", "--hardware", f, "--chips", "64"], capsys)
    assert code == 2
    assert "memory_bandwidth: '5.8 TB' is not a bandwidth; write e.g. 5.8 TB/s" in err
    assert "unknown system" not in err


@pytest.mark.parametrize("base, line, expected", [
    ("trainium2", "memory: 96 GiB/s", "memory: '96 GiB/s' is not a size in bytes; write e.g. 96 GiB"),
    ("trainium2", "peak_flops: {bf16: 667 TFLOP}", "'667 TFLOP' is not a compute rate; write e.g. 667 TFLOP/s"),
    ("p5.48xlarge", "price_per_hour: 55 USD", "price_per_hour: '55 USD' is not a price; write e.g. 55 USD/h"),
    ("trainium2", "memory_bandwidth: fast", "'fast' is not a bandwidth; write e.g. 2.9 TB/s"),
])
def test_unit_errors_name_field_and_fix(tmp_path, base, line, expected):
    f = write(tmp_path / "u.yaml", f"base: {base}\n{line}\n")
    with pytest.raises(FlopcastError) as exc:
        catalog.system_for(f)
    assert expected in str(exc.value)


def test_wrong_kind_of_file(tmp_path):
    chip = write(tmp_path / "c.yaml", "base: trainium2\nmemory: 64 GiB\n")
    with pytest.raises(FlopcastError, match="is a chip file, not a model file"):
        catalog.load_model(chip)
    system = write(tmp_path / "s.yaml", "base: trn2.48xlarge\nchip: c.yaml\n")
    with pytest.raises(FlopcastError, match="is a system file, not a chip file"):
        catalog.load_chip(system)
    base_chip = write(tmp_path / "x.yaml", "base: trainium2\nchip: trainium2\n")
    with pytest.raises(FlopcastError, match="base 'trainium2' is a chip, not a system"):
        catalog.load_system(base_chip)


# ---------------------------------------------------------------- 24: catalog FILE, display names

def test_display_name_says_based_on(tmp_path):
    f = write(tmp_path / "trn2-2xbw.yaml", "base: trainium2\nmemory_bandwidth: 5.8 TB/s\n")
    assert catalog.load_chip(f).name == "trn2-2xbw (based on AWS Trainium2)"
    m = write(tmp_path / "my12b.yaml", "base: llama3-8b\nlayers: 40\n")
    assert catalog.load_model(m).name == "my12b (based on Llama 3 / 3.1 8B)"
    named = write(tmp_path / "named.yaml", "base: llama3-8b\nname: My model\n")
    assert catalog.load_model(named).name == "My model"


def test_catalog_shows_a_file_like_a_name(tmp_path, capsys):
    f = write(tmp_path / "trn2-2xbw.yaml", "base: trainium2\nmemory_bandwidth: 5.8 TB/s\n")
    code, out, err = cli(["catalog", f], capsys)
    assert code == 0, err
    first = out.splitlines()[0]
    assert first == "chip trn2-2xbw: trn2-2xbw (based on AWS Trainium2)"
    bw = next(line for line in out.splitlines() if line.strip().startswith("memory_bandwidth"))
    assert "5.8 TB/s" in bw and f"file {f}" in bw
    mem = next(line for line in out.splitlines() if line.strip().startswith("memory "))
    assert "NEURON_TRN2_CHIP" in mem
    code, out, err = cli(["catalog", f, "--json"], capsys)
    e = json.loads(out)
    assert code == 0 and e["kind"] == "chip" and e["based_on"] == "trainium2" and e["file"] == f


def test_catalog_shows_model_and_system_files(tmp_path, capsys):
    m = write(tmp_path / "my.toml", 'base = "llama3-8b"\nlayers = 16\n')
    e = show.entry_json(m)
    assert e["kind"] == "model" and e["computed_params"] < show.entry_json("llama3-8b")["computed_params"]
    write(tmp_path / "c.yaml", "base: trainium2\nmemory: 128 GiB\n")
    s = write(tmp_path / "s.yaml", "base: trn2.48xlarge\nchip: c.yaml\n")
    e = show.entry_json(s)
    assert e["kind"] == "system" and e["name"] == "s (based on Amazon EC2 trn2.48xlarge)"
    scratch = write(tmp_path / "scratch.yaml", "name: Tiny\nlayers: 2\nhidden: 256\nheads: 4\nvocab: 1000\n")
    assert show.entry_json(scratch)["name"] == "Tiny"


def test_catalog_of_a_bad_file_gives_its_error(tmp_path, capsys):
    f = write(tmp_path / "bad.yaml", "base: llama3-8b\nhidden: 4100\n")
    code, out, err = cli(["catalog", f], capsys)
    assert code == 2 and "hidden: 4100 is out of range" in err
    unclear = write(tmp_path / "unclear.yaml", "name: something\n")
    code, _, err = cli(["catalog", unclear], capsys)
    assert code == 2 and "cannot tell whether" in err


def test_schema_documents_base_and_model_files():
    text = (catalog.DATA / "SCHEMA.md").read_text()
    assert "base:" in text and "## models.yaml" in text
    for field in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab", "seq_len", "mlp",
                  "moe", "mla", "sliding_window", "batch_tokens"):
        assert f"`{field}`" in text, field
