"""The cases of the fuzz campaign (benchmarks/fuzz_campaign.py): a command line of random valid and hostile
values for every option of every command (read from the click commands themselves, so a new option is
fuzzed the day it is added), the malformed user files it names, and requests to the web page's JSON
endpoints. `case(rng, run_dir)` writes the run's files under run_dir and returns the Case.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "validation"

COUNTS = ["1", "2", "4", "8", "16", "64", "0", "-1", "3", "1e30", "inf", "nan", "x", "", "9223372036854775808",
          "2.5", "65536", "65537", "1e8", "1_000", "-0", "0x10", "1e-300"]
REALS = ["0", "-1", "1e-308", "1e308", "inf", "-inf", "nan", "0.5", "2", "1e6", "3.7", "x", "", "1", "10", "100"]
DURATIONS = ["0", "-1s", "1e30", "nan", "inf", "1s", "100ms", "2min", "30d", "abc", "", "5", "1e-9s", "60s", "1h",
             "1e400", "10y", "50ms", "2s"]
TOKENS = ["inf", "nan", "0", "-5", "1e40", "1T", "300B", "6e12", "chinchilla", "abc", "1e-3", "15T", "", "1e17",
          "1.1e17", "100B", "1e9"]
LENGTHS = ["512", "0", "1", "uniform:1:1e30", "lognormal:100:50", "uniform:5:1", "lognormal:0:1", "inf", "abc",
           "uniform:1:100", "lognormal:200:1", "-3", "1e30", "uniform:1", "lognormal:nan:1", "128", "2048", "134217728",
           "134217729", "uniform:0:0", "lognormal:1e8:10"]
FLOATS = ["40", "0", "-1", "inf", "nan", "1e308", "1e-308", "x", "1.3", "1", "700", "1e30", ""]
NAMED = {  # option -> values (valid and hostile); options not named here get a pool from their click type
    "--tokens": TOKENS, "--qps": REALS + ["5", "50", "1e7", "1e8"], "--duration": DURATIONS, "--interval": DURATIONS,
    "--deadline": DURATIONS, "--slo-ttft": DURATIONS, "--slo-tpot": DURATIONS, "--input-tokens": LENGTHS,
    "--output-tokens": LENGTHS, "--budget": ["2.5M", "0", "-1", "inf", "1e30", "x", "400000", "1e13", "nan", ""],
    "--weights": ["bf16", "fp8", "int8", "int4", "q4_0", "q8_0", "fp3", "", "nvfp4"],
    "--kv-dtype": ["bf16", "fp8", "int8", "x", ""], "--scheduler": ["static", "continuous", "chunked-prefill", "x", ""],
    "--router": ["round-robin", "least-loaded", "random", "x", ""],
    "--speculative": ["draft", "eagle", "medusa", "mtp", "x", "", "DRAFT", "draft:llama3-8b"],
    "--spec-tokens": ["1", "4", "0", "-1", "1000000", "1e30", "x", "64"],
    "--acceptance": ["0.7", "0", "1", "1.5", "-1", "nan", "inf", "x", "0.999999"],
    "--price": FLOATS, "--power": FLOATS, "--pue": FLOATS + ["0.5", "100"],
    "--mtbf-chip-hours": REALS + ["10", "2000", "50000", "1e9"], "--cv": REALS, "--restart-minutes": REALS,
    "--checkpoint-write-gbps": REALS, "--checkpoint-load-gbps": REALS, "--top": ["1", "5", "1e6", "0", "1e20", "x"],
    "--trials": ["1", "2", "20", "0", "-1", "1e20", "x", "1000", "1e6"],
    "--requests": ["1", "10", "50", "0", "-1", "1e30", "9223372036854775808", "x", "200", "1e7"],
    "--sweep-chips": ["8,16", "0,8", "x", "8," * 70, "1e30", "16", "1024,8192", ",", "100000000"],
    "--sizes": ["8,16", "0", "x", "1e30", "", "64,128,256", "8," * 200, "-1,8"],
    "--dtypes": ["bf16", "bf16,fp8", "x", "", ",", "fp8,fp3", "bf16," * 50],
    "--batch-range": ["1:64", "64:1", "0:10", "x", "1:1e30", "", "1:", "inf:nan", "128:1024"],
    "--max-global-batch": COUNTS, "--seed": COUNTS + ["42", "18446744073709551616"],
    "--address": ["auto", "", "x:1", "127.0.0.1:1", "ray://127.0.0.1:1"], "--engine": ["local", "x", ""],
    "--workers": ["1", "2", "0", "-1", "1000000", "x"], "--port": ["0", "-1", "70000", "x"], "--host": ["127.0.0.1"],
    "--emit": ["megatron", "nemo", "neuron", "maxtext", "x", ""],
}
# options never given: the web server (the ui endpoints are fuzzed in-process instead); `sweep --engine ray` is
# not drawn either (the engine values above): it starts a cluster of daemons that would outlive a killed run
SKIP = {("ui", "--port"), ("ui", "--host"), ("ui", "--no-browser")}
OUTPUTS = {"--html", "--png", "--csv", "--out", "--output", "-o", "--write-intervals"}
HOSTILE_CELLS = ["", "0", "-1", "1e30", "inf", "nan", "-inf", "2.5", "x", "9223372036854775808", "1e-300", "\ufffd",
                 "1,000", "1e308", "   ", "NaN", "8", "64", "true", '"', "\x00"]


# values that are refused wherever they are given; a case draws them for few of its options (see `_pick`)
HOSTILE = {"", "x", "nan", "inf", "-inf", "-1", "0", "-0", "1e30", "9223372036854775808", "2.5", "abc", "1e40",
           "-5", "0x10", "1_000", "1e-300", "1e-308", "1e308", "-1s", "1e400", "chinchilla", "1e20", "fp3", "-3",
           "uniform:1:1e30", "uniform:5:1", "lognormal:0:1", "lognormal:nan:1", "uniform:1", "18446744073709551616",
           "65537", "134217729", "1.1e17", "1e-9s", "-1,8", ",", "inf:nan", "64:1", "1:"}


def _pick(rng: random.Random, pool: list, hostile: float):
    """A value of the pool: a hostile one with probability `hostile`, else one that may be valid."""
    calm = [v for v in pool if v not in HOSTILE]
    return rng.choice(pool if rng.random() < hostile or not calm else calm)


@dataclass
class Case:
    kind: str  # "cli" or "ui"
    argv: list = field(default_factory=list)  # the command line; for "ui": [method, path, params-or-body]
    stdout_full: bool = False  # stdout is /dev/full (a write that fails)
    files: int = 0  # malformed files the case wrote

    def shown(self) -> str:
        return ("flopcast " if self.kind == "cli" else "ui ") + " ".join(repr(a) if a == "" or " " in str(a) else
                                                                       str(a) for a in self.argv)


class Names:
    """The catalog's names (read once in the parent) and the click commands."""

    def __init__(self):
        from flopcast import catalog
        from flopcast.cli import COMMANDS, cli

        self.models = sorted(catalog.raw("model"))
        self.chips = sorted(catalog.raw("chip"))
        self.systems = sorted(catalog.raw("system"))
        ctx = click.Context(cli)
        self.commands = {n: cli.get_command(ctx, n) for n in COMMANDS}


def _pool(option: click.Option) -> list:
    t = option.type
    if isinstance(t, click.Choice):
        return list(t.choices) + ["x", "", list(t.choices)[0].upper()]
    if type(t).__name__ == "Checked":
        return COUNTS + REALS if t.name != "integer" else COUNTS
    if isinstance(t, (click.types.IntParamType, click.IntRange)):
        return COUNTS
    if isinstance(t, click.types.FloatParamType):
        return FLOATS
    return ["x", "", "1", "-1", "nan", "a" * 300, "\u00e9", "--json"]


# ---- malformed files ----------------------------------------------------------------------------------------------

HOSTILE_VALUES = ["1.0e+308", ".inf", ".nan", "-.inf", "'abc'", "''", "null", "true", "'false'", "'no'", "[1, 2]",
                  "{a: 1}", "0", "-1", "1e-300", "'1e30'", "just a string", "[[[[[[]]]]]]", "9223372036854775808",
                  "1e30", "2.5", "-0", "'yes'", "8", "64", "4096", "{}"]
QUANTITIES = {
    "memory": ["96 GiB", "0 GiB", "-5 GiB", "1e-300 B", "1e30 TB", "96 GiB/s", "lots", "1.0e+308"],
    "memory_bandwidth": ["2.9 TB/s", "1e-300 B/s", "5.8 TB", "0 B/s", "1e30 PB/s", "fast", "nan TB/s", "inf"],
    "peak_flops": ["{bf16: 667 TFLOP/s}", "{bf16: 0 TFLOP/s}", "{fp3: 1 PFLOP/s}", "{bf16: 1e30 TFLOP/s}", "5",
                   "{bf16: nan TFLOP/s}", "{cfp8: 2 PFLOP/s}", "{bf16: null}", "{fp8: 1e-300 FLOP/s}"],
    "power": ["700 W", "-1 W", "1e9 W", "null", "0 W", "nan W"],
    "price_per_hour": ["40 USD/h", "-5 USD/h", "55 USD", "1e30 USD/h", "0 USD/h", "nan USD/h"],
    "tiers": ["[{name: a, size: 8, bandwidth: 450 GB/s, latency: 2 us}]", "[{name: a, size: 0, bandwidth: 1 TB/s}]",
              "[{name: a, size: 8}]", "5", "[{name: a, size: 8, bandwidth: 1 TB/s, latncy: 2 us}]",
              "[{size: 1e30, bandwidth: 1e-300 B/s}]", "[]"],
    "moe": ["{experts: 8, topk: 2, expert_ffn: 14336}", "{experts: 0, topk: 2}", "{experts: 8, topk: 9}",
            "{experts: 1e30, topk: 1}", "5", "{experts: 8, topk: 2, expert_ffn: -1}"],
    "mla": ["{kv_lora_rank: 512, q_lora_rank: 1536}", "{kv_lora_rank: 0}", "{kv_lora_rank: 1e30}", "x"],
}
FILE_FIELDS = {
    "model": ["layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab", "seq_len", "mlp", "moe",
              "tied_embeddings", "dropout", "batch_tokens", "published_params", "published_active_params", "notes",
              "sources", "name", "mla", "sliding_window", "mtp_layers", "norm", "position", "qkv_bias", "layer"],
    "chip": ["memory", "memory_bandwidth", "peak_flops", "power", "power_estimate", "cores", "tile", "isa", "family",
             "kind", "default_system", "sram", "clock", "mamf", "notes", "memory_channels", "simd_units",
             "vector_bits", "price"],
    "system": ["chips_per_node", "price_per_hour", "capacity_block_price_per_hour", "tiers", "vcpus", "chip",
               "sources", "memory"],
}
NESTED = {  # a valid nested value as (key, value) pairs, and the other keys its entry declares
    "moe": ({"experts": "8", "topk": "2", "expert_ffn": "14336"}, ["shared_experts", "shared_ffn", "dense_layers",
            "layer_freq", "groups", "topk_groups", "capacity_factor", "imbalance"]),
    "mla": ({"q_lora_rank": "1536", "kv_lora_rank": "512", "qk_nope_head_dim": "128", "qk_rope_head_dim": "64",
             "v_head_dim": "128"}, []),
    "sliding_window": ({"window": "4096"}, ["every"]),
    "tiers": ({"name": "a", "size": "8", "topology": "torus2d", "dims": "[2, 4]", "bandwidth": "450 GB/s",
               "latency": "2 us"}, ["scale_out"]),
    "peak_flops": ({"bf16": "667 TFLOP/s"}, ["fp8", "fp16", "int8", "nvfp4"]),
    "mamf": ({"bf16": "600 TFLOP/s"}, ["fp8"]),
}
NESTED_VALUES = HOSTILE_VALUES + ["2 us", "1e30 GB/s", "switch", "torus9d", "[0, 4]", "[1e30]", "-2 us", "1 h"]


def _entry_fields() -> dict:
    """Every field the model, chip and system entries declare (catalog/entries.py), and the typos above."""
    from flopcast.catalog import entries

    declared = {"model": entries.ModelEntry, "chip": entries.ChipEntry, "system": entries.SystemEntry}
    return {k: sorted(set(FILE_FIELDS[k]) | {f.name for f in dataclasses.fields(cls)}) for k, cls in declared.items()}


def _nested(rng: random.Random, name: str) -> str:
    """A nested value with one key given a hostile value (or an unknown key added), as YAML flow."""
    given, others = NESTED[name]
    d = dict(given)
    d[rng.choice(list(given) + others + ["bogus_key"])] = rng.choice(NESTED_VALUES)
    text = "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"
    return f"[{text}]" if name == "tiers" else text


BASES = {"model": ["llama3-8b", "mixtral-8x7b", "gpt3-175b"], "chip": ["trainium2", "h100-sxm", "graviton4"],
         "system": ["p5.48xlarge", "trn2.48xlarge", "c8g.16xlarge"]}


def _structural(rng: random.Random, folder: Path, suffix: str) -> Path:
    """A file that attacks the reader rather than a field: bombs, depth, chains, bytes, size, emptiness."""
    path = folder / f"s{rng.randrange(10**6)}{suffix}"
    pick = rng.randrange(10)
    if pick == 0:
        text = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(  # an alias bomb: 9^9 values
            f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    elif pick == 1:
        n = rng.choice([40, 5000, 100_000])
        text = "layers: " + "[" * n + "]" * n + "\n"
    elif pick == 2:
        n = rng.choice([3, 33, 200])
        for i in range(n):
            (folder / f"chain{i}.yaml").write_text(f"base: chain{i + 1}.yaml\n" if i < n - 1 else "base: llama3-8b\n")
        return folder / "chain0.yaml"
    elif pick == 3:
        path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.choice([1, 64, 4096]))))
        return path
    elif pick == 4:
        text = rng.choice(["", "\n", "---\n", "[]\n", "- 1\n- 2\n", "null\n", "42\n", "'just a string'\n"])
    elif pick == 5:
        text = "x: " + "a" * (2 << 20) + "\n"
    elif pick == 6:
        (folder / "loop.yaml").write_text("base: loop.yaml\n")
        return folder / "loop.yaml"
    elif pick == 7:
        path.mkdir()
        return path
    elif pick == 8:
        text = "!!python/object/apply:os.system ['echo pwned']\n"
    else:
        text = "base: llama3-8b\nlayers: 4\n" + "layers: 8\n" * 3 + "\t bad: [\n"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def user_file(rng: random.Random, folder: Path, kind: str) -> Path:
    """A model, chip or system file: a few fields with valid and hostile values, or a structural attack."""
    if rng.random() < 0.2:
        return _structural(rng, folder, rng.choice([".yaml", ".yml", ".toml"]))
    lines = [] if rng.random() < 0.1 else [f"base: {rng.choice(BASES[kind])}"]
    fields = _entry_fields()[kind]
    for f in rng.sample(fields, rng.randint(1, 4)):
        if f in NESTED and rng.random() < 0.6:
            lines.append(f"{f}: {_nested(rng, f)}")
            continue
        values = QUANTITIES.get(f, HOSTILE_VALUES)
        lines.append(f"{f}: {rng.choice(values)}")
    if rng.random() < 0.5:  # one field on a valid base, so an earlier refusal does not hide a later field's fault
        lines = lines[:2]
    path = folder / f"{kind}{rng.randrange(10**6)}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def hf_config(rng: random.Random, folder: Path) -> Path:
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
           "max_position_embeddings": 8192, "tie_word_embeddings": False}
    key = rng.choice(sorted(cfg))
    cfg[key] = rng.choice([0, -1, 1e30, "x", None, [1], True, 2**63, 1.5, float("nan"), {"a": 1}])
    path = folder / f"hf{rng.randrange(10**6)}" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cfg) if rng.random() < 0.9 else "{not json")
    return path


def _csv_text(rng: random.Random, source: Path, header_extra: list[str] = ()) -> str:
    """A shipped CSV's header and a few rows, with cells, columns and bytes mutated."""
    lines = source.read_text(encoding="utf-8").splitlines()
    import csv as _csv
    import io

    rows = list(_csv.reader(io.StringIO("\n".join(lines))))
    header, body = rows[0], rng.sample(rows[1:], min(len(rows) - 1, rng.randint(1, 4)))
    for _ in range(rng.randint(1, 3)):
        r, c = rng.randrange(len(body)), rng.randrange(len(header))
        body[r][c] = rng.choice(HOSTILE_CELLS)
    if rng.random() < 0.2:
        header.pop(rng.randrange(len(header)))
    if rng.random() < 0.1:
        header.append(rng.choice(["extra_col", "measured_bogus", ""] + list(header_extra)))
    if rng.random() < 0.1:
        body[-1] = body[-1][: rng.randrange(len(body[-1]))]
    out = io.StringIO()
    w = _csv.writer(out)
    w.writerow(header)
    w.writerows(body)
    return out.getvalue() if rng.random() > 0.1 else header[0] + "\n"


def csv_file(rng: random.Random, folder: Path, kind: str) -> Path:
    """A validate CSV (training, serving or memory) or a serve --trace; a structural attack one time in five."""
    if rng.random() < 0.2:
        return _structural(rng, folder, ".csv")
    path = folder / f"{kind}{rng.randrange(10**6)}.csv"
    if kind == "trace":
        n = rng.choice([1, 3, 20])
        rows = [[str(i * rng.choice([0.1, 1, 1e9])), str(rng.choice([16, 512, 4096])), str(rng.choice([1, 64, 256]))]
                for i in range(n)]
        for _ in range(rng.randint(0, 2)):
            rows[rng.randrange(n)][rng.randrange(3)] = rng.choice(HOSTILE_CELLS)
        header = ["arrival_s", "input_tokens", "output_tokens"]
        if rng.random() < 0.15:
            header[rng.randrange(3)] = rng.choice(["arrival", "extra", ""])
        path.write_text("\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n")
        return path
    source = {"training": rng.choice(["calibration_runs.csv", "more_training_runs.csv", "moe_training_runs.csv"]),
              "serving": rng.choice(["inference_runs.csv", "more_inference_runs.csv"]),
              "memory": "memory_runs.csv"}[kind]
    path.write_text(_csv_text(rng, VALIDATION / source))
    return path


def sweep_file(rng: random.Random, folder: Path) -> Path:
    fields = {"models": ["[llama3-8b]", "llama3-8b", "[]", "[x]", "5", "[llama3-8b, gpt3-175b]"],
              "systems": ["[p5.48xlarge]", "[trn2.48xlarge, p5.48xlarge]", "[]", "[x]", "{a: 1}"],
              "chips": ["[8, 16]", "8", "{from: 8, to: 64, times: 2}", "{from: 1, to: 1e8, step: 1}", "[0]", "[1e30]",
                        "{from: 64, to: 8, times: 2}", "x", "{from: 8, to: 1e8, times: 1}"],
              "tokens": ["[1T]", "[inf]", "[x]", "1e12", "[0]"], "tokens_per_param": ["20", "-1", "nan", "x"],
              "seq_len": ["[2048]", "[0]", "[1e30]"], "layout": ["{tp: 1}", "{tp: 0}", "[{tp: 1}, {tp: 2}]", "{xx: 1}"],
              "what_if": ["{memory_bandwidth: [1x, 2x]}", "{memory_bandwidth: {from: 0.5x, to: 2x, steps: 1000000}}",
                          "{power: [-1 W]}", "{bogus: [1]}", "{peak_flops.bf16: [nan]}", "{scale_up_chips: [0, 8]}"],
              "objective": ["throughput", "[cost, energy]", "x", "time_with_failures"], "serving": ["{qps: 1}"],
              "name": ["a", "[1]"]}
    lines = ["models: [llama3-8b]", "systems: [p5.48xlarge]", "chips: [8]"]
    for f in rng.sample(sorted(fields), rng.randint(1, 3)):
        lines.append(f"{f}: {rng.choice(fields[f])}")
    path = folder / f"sweep{rng.randrange(10**6)}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path if rng.random() > 0.15 else _structural(rng, folder, ".yaml")


def calibration_file(rng: random.Random, folder: Path) -> Path | str:
    pick = rng.randrange(6)
    if pick == 0:
        return str(ROOT / "src/flopcast/catalog/data/calibration.yaml")
    if pick == 1:
        return rng.choice(["missing.yaml", "", "default", "x.csv"])
    if pick == 2:
        return _structural(rng, folder, ".yaml")
    path = folder / f"cal{rng.randrange(10**6)}.yaml"
    text = (ROOT / "src/flopcast/catalog/data/calibration.yaml").read_text()
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        if ":" in lines[i]:
            lines[i] = lines[i].split(":")[0] + ": " + rng.choice(HOSTILE_VALUES)
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- command lines ------------------------------------------------------------------------------------------------

FILE_KINDS = ("model", "chip", "system")


def _model(rng, names, folder, made):
    r = rng.random()
    if r < 0.15:
        made.append(1)
        return str(user_file(rng, folder, "model"))
    if r < 0.2:
        made.append(1)
        return str(hf_config(rng, folder).parent if rng.random() < 0.5 else hf_config(rng, folder))
    if r < 0.23:
        return rng.choice(["x", "", "missing.yaml", "LLAMA3-8B", "llama3_8b", "../etc/passwd", "a" * 500])
    return rng.choice(names.models[:20] if rng.random() < 0.7 else names.models)


def _hardware(rng, names, folder, made, several=False):
    r = rng.random()
    if r < 0.15:
        made.append(1)
        return str(user_file(rng, folder, rng.choice(("chip", "system"))))
    if r < 0.18:
        return rng.choice(["x", "", ",", "p5.48xlarge,", "p5.48xlarge,x", "P5.48XLARGE", "missing.yaml"])
    pool = names.systems if rng.random() < 0.8 else names.chips
    k = rng.randint(2, 4) if several else 1
    return ",".join(rng.sample(pool, k))


def _value(rng, command, option, param, names, folder, made, hostile):
    if option in OUTPUTS:
        suffix = {"--html": ".html", "--png": "", "--csv": ".csv", "--write-intervals": ".yaml"}.get(option, "")
        if command == "sweep" and option in ("--out", "-o"):
            suffix = rng.choice([".csv", ".parquet", ".txt", ""])
        if command == "validate" and option == "--out":
            suffix = ".yaml"
        return rng.choice([str(folder / f"out{suffix}")] * 6 + ["", "/dev/full", str(folder), "/nonexistent/dir/out" +
                                                               suffix, str(folder / "a/b/c") + suffix])
    if option == "--calibration":
        made.append(1)
        return str(calibration_file(rng, folder))
    if option == "--trace":
        made.append(1)
        return str(csv_file(rng, folder, "trace")) if rng.random() < 0.9 else rng.choice(["missing.csv", str(folder)])
    if option in ("--serve-model",):
        return _model(rng, names, folder, made)
    if option in ("--serve-hardware",):
        return _hardware(rng, names, folder, made)
    if option in ("--chips", "--serve-chips") and rng.random() < 0.6:
        return rng.choice(["1", "8", "16", "32", "64", "256", "1024", "8192"])
    if option in ("--input-tokens", "--output-tokens") and command == "infer":
        return _pick(rng, COUNTS + ["128", "2048", "134217728", "134217729"], hostile)
    return _pick(rng, NAMED.get(option) or _pool(param), hostile)


def _positional(rng, command, names, folder, made) -> list:
    if command in ("validate", "calibrate"):
        made.append(1)
        r = rng.random()
        if r < 0.1:
            return [rng.choice(["training", "calibration_runs", "inference_runs", "more_training_runs", "x", ""])]
        if r < 0.15:
            return [rng.choice(["missing.csv", str(folder), "/dev/null"])]
        return [str(csv_file(rng, folder, rng.choice(["training", "training", "serving", "memory"])))]
    if command == "sweep":
        made.append(1)
        return [str(sweep_file(rng, folder))]
    if command == "catalog":
        r = rng.random()
        if r < 0.3:
            return []
        if r < 0.6:
            made.append(1)
            return [str(user_file(rng, folder, rng.choice(FILE_KINDS)))]
        return [rng.choice(names.models + names.chips + names.systems + ["x", ""])]
    if command == "claims":
        return []
    return [_model(rng, names, folder, made)]


def command_line(rng: random.Random, names: Names, folder: Path) -> Case:
    """One command with its positional argument, -H and a random subset of its options."""
    command = rng.choice([c for c in names.commands if c != "ui"])
    if command in ("claims", "report") and rng.random() < 0.7:  # slow commands (each 10-20 s), fewer of them
        command = rng.choice(["train", "search", "serve", "infer", "validate"])
    cmd = names.commands[command]
    made: list = []
    hostile = rng.choice([0.05, 0.2, 0.5])  # the chance that an option's value is one that is always refused
    argv = [command] + _positional(rng, command, names, folder, made)
    options = [p for p in cmd.params if isinstance(p, click.Option) and (command, p.opts[0]) not in SKIP]
    by_flag = {p.opts[0]: p for p in options}
    chosen = set(rng.sample(sorted(by_flag), min(len(by_flag), rng.randint(0, 5))))
    if "--hardware" in by_flag and rng.random() < 0.9:
        chosen.add("--hardware")
    if command == "claims":
        chosen.add("--quick") if rng.random() < 0.9 else None
    if command == "serve" and not chosen & {"--requests", "--duration", "--trace"}:
        argv += ["--requests", rng.choice(["20", "50", "200"])]  # the default (a few thousand) is a slow example
    for flag in sorted(chosen):
        p = by_flag[flag]
        if p.is_flag:
            argv.append(flag if not p.secondary_opts or rng.random() < 0.5 else p.secondary_opts[0])
        elif flag == "--hardware":
            argv += ["-H", _hardware(rng, names, folder, made, several=command in ("compare", "deploy"))]
        else:
            argv += [flag, _value(rng, command, flag, p, names, folder, made, hostile)]
    if "--json" in by_flag and "--json" not in argv and rng.random() < 0.5:
        argv.append("--json")
    return Case("cli", argv, stdout_full=rng.random() < 0.01, files=len(made))


UI_PARAMS = {"model": lambda rng, n: rng.choice(n.models[:10] + ["x", "", "upload:nope", "upload:../../x"]),
             "hardware": lambda rng, n: rng.choice(n.systems[:30] + ["x", "", ","]),
             "chips": lambda rng, n: rng.choice(COUNTS), "tokens": lambda rng, n: rng.choice(TOKENS),
             "tp": lambda rng, n: rng.choice(COUNTS), "pp": lambda rng, n: rng.choice(COUNTS),
             "dtype": lambda rng, n: rng.choice(["bf16", "fp8", "x", ""]),
             "recompute": lambda rng, n: rng.choice(["none", "full", "x"]),
             "micro_batch": lambda rng, n: rng.choice(COUNTS), "global_batch": lambda rng, n: rng.choice(COUNTS),
             "seq_len": lambda rng, n: rng.choice(COUNTS), "bogus": lambda rng, n: "1"}


def ui_request(rng: random.Random, names: Names, folder: Path) -> Case:
    """A request to one of the page's JSON endpoints (or the upload), with random and hostile query values."""
    path = rng.choice(["/api/train", "/api/train", "/api/compare", "/api/download", "/api/catalog", "/api/upload",
                       "/api/nothing"])
    if path == "/api/upload":
        made = user_file(rng, folder, "model") if rng.random() < 0.6 else hf_config(rng, folder)
        body = {"filename": rng.choice([made.name, "x.exe", "", "../../etc/passwd.yaml"]),
                "text": made.read_text(errors="replace") if made.is_file() else "x"}
        if rng.random() < 0.2:
            body = rng.choice([{}, {"filename": 5}, [1], {"filename": "a.yaml", "text": "a" * (2 << 20)}])
        return Case("ui", ["POST", path, body], files=1)
    params = {k: UI_PARAMS[k](rng, names) for k in rng.sample(sorted(UI_PARAMS), rng.randint(0, 6))}
    if path == "/api/compare":
        params["hardware"] = ",".join(rng.sample(names.systems[:40], rng.randint(1, 4)))
    if path == "/api/download":
        params["what"] = rng.choice(["train", "compare", "x"])
        params["format"] = rng.choice(["json", "csv", "html", "x"])
    return Case("ui", ["GET", path, params])


def case(rng: random.Random, names: Names, folder: Path) -> Case:
    return ui_request(rng, names, folder) if rng.random() < 0.04 else command_line(rng, names, folder)
