"""The malformed user files of the fuzz campaign (benchmarks/fuzz_cases.py names them on command lines): model,
chip and system files with hostile fields, structural attacks on the reader (alias and merge-key bombs, nesting,
`base:` chains, bytes, sizes, devices, pipes, links, encodings, TOML), Hugging Face configs, measured-run and trace
CSVs with bad cells and past their row caps, sweep and calibration files."""

from __future__ import annotations

import dataclasses
import json
import os
import random
from pathlib import Path

import fuzz_wide

ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "validation"
HOSTILE_CELLS = ["", "0", "-1", "1e30", "inf", "nan", "-inf", "2.5", "x", "9223372036854775808", "1e-300", "\ufffd",
                 "1,000", "1e308", "   ", "NaN", "8", "64", "true", '"', "\x00", "1", "1048576", "128 256 512",
                 "512 128", "0 128", "134217729", " ".join(["128"] * 5000), "1e6", "bf16", "fp8", "50%", "-0"]


HOSTILE_VALUES = ["1.0e+308", ".inf", ".nan", "-.inf", "'abc'", "''", "null", "true", "'false'", "'no'", "[1, 2]",
                  "{a: 1}", "0", "-1", "1e-300", "'1e30'", "just a string", "[[[[[[]]]]]]", "9223372036854775808",
                  "1e30", "2.5", "-0", "'yes'", "8", "64", "4096", "{}"]
QUANTITIES = {
    "memory": ["96 GiB", "0 GiB", "-5 GiB", "1e-300 B", "1e30 TB", "96 GiB/s", "lots", "1.0e+308", "2 TiB", "3e9",
               "3e9 B", "96GiB", "96 gib", "1 PB", "1 MiB", "1048575 B", "1e15 B", "1.1e15 B", "96 GB ", "0x10 GiB",
               "96 GiB GiB", "'96 GiB'", "96 Gib", "96 GiB (HBM3)"],
    "memory_bandwidth": ["2.9 TB/s", "1e-300 B/s", "5.8 TB", "0 B/s", "1e30 PB/s", "fast", "nan TB/s", "inf",
                         "1 PB/s", "3e9", "3e9 B/s", "2 TiB/s", "1e16 B/s", "1.1e16 B/s", "1 EB/s", "2.9 tb/s",
                         "2.9 TBps", "2.9 TB/s/chip", "1 MB/s", "999999 B/s", "2.9 TB / s", "2.9e12"],
    "peak_flops": ["{bf16: 667 TFLOP/s}", "{bf16: 0 TFLOP/s}", "{fp3: 1 PFLOP/s}", "{bf16: 1e30 TFLOP/s}", "5",
                   "{bf16: nan TFLOP/s}", "{cfp8: 2 PFLOP/s}", "{bf16: null}", "{fp8: 1e-300 FLOP/s}"],
    "power": ["700 W", "-1 W", "1e9 W", "null", "0 W", "nan W", "1 kW", "1e5 W", "1 MW", "0.001 W", "700", "700 J/s"],
    "tdp": ["700 W", "0.001 W", "1e5 W", "0 W", "-1 W", "nan W", "1e6 W", "1 kW", "null"],
    "clock": ["2.4 GHz", "1 Hz", "1e11 Hz", "1 THz", "2.4", "0 GHz", "2.4 GHz/s"],
    "sram": ["24 MiB", "1 B", "1e13 B", "0 B", "1 TB", "24"],
    "price_per_hour": ["40 USD/h", "-5 USD/h", "55 USD", "1e30 USD/h", "0 USD/h", "nan USD/h"],
    "tiers": ["[{name: a, size: 8, bandwidth: 450 GB/s, latency: 2 us}]", "[{name: a, size: 0, bandwidth: 1 TB/s}]",
              "[{name: a, size: 8}]", "5", "[{name: a, size: 8, bandwidth: 1 TB/s, latncy: 2 us}]",
              "[{size: 1e30, bandwidth: 1e-300 B/s}]", "[]"],
    "moe": ["{experts: 8, topk: 2, expert_ffn: 14336}", "{experts: 0, topk: 2}", "{experts: 8, topk: 9}",
            "{experts: 1e30, topk: 1}", "5", "{experts: 8, topk: 2, expert_ffn: -1}",
            "{experts: 65536, topk: 65536, expert_ffn: 16777216}", "{experts: 1, topk: 1, expert_ffn: 1}",
            "{experts: 256, topk: 8, expert_ffn: 2048, shared_experts: 65536, shared_ffn: 67108864}",
            "{experts: 256, topk: 8, expert_ffn: 2048, dense_layers: 10000}",
            "{experts: 256, topk: 8, expert_ffn: 2048, layer_freq: 10000, capacity_factor: 1e-300}",
            "{experts: 256, topk: 8, expert_ffn: 2048, groups: 65536, topk_groups: 65536, imbalance: 100}",
            "{experts: 256, topk: 8, expert_ffn: 2048, groups: 3, topk_groups: 5}"],
    "mla": ["{kv_lora_rank: 512, q_lora_rank: 1536}", "{kv_lora_rank: 0}", "{kv_lora_rank: 1e30}", "x",
            "{q_lora_rank: 0, kv_lora_rank: 1048576, qk_nope_head_dim: 1048576, qk_rope_head_dim: 1, v_head_dim: 1}"],
}
# valid values at the edges of each field's range (catalog/entries.py): 1 chip, a huge vocabulary, one layer
EXTREMES = {
    "model": {"layers": ["1", "10000", "2"], "hidden": ["1", "2", "1048576", "3"], "heads": ["1", "65536", "7"],
              "kv_heads": ["1", "65536", "3"], "head_dim": ["1", "1048576"], "ffn_hidden": ["1", "16777216"],
              "vocab": ["1", "16777216", "2"], "seq_len": ["1", "134217728", "1048576"], "mtp_layers": ["64", "0"],
              "batch_tokens": ["1", "1e12", "1.5"], "published_params": ["1", "1e15"], "sliding_window": ["0", "1",
              "134217728", "{window: 1, every: 10000}"], "tied_embeddings": ["yes", "no", "on", "off", "True"]},
    "chip": {"memory": ["1 MiB", "1e15 B", "1 PB"], "power_estimate": ["0.001 W", "100000 W"],
             "memory_bandwidth": ["1 MB/s", "1e16 B/s", "10 PB/s"],
             "peak_flops": ["{bf16: 1 MFLOP/s}", "{bf16: 1 EFLOP/s}", "{fp8: 1e18 FLOP/s, bf16: 1e6 FLOP/s}"],
             "power": ["0.001 W", "100 kW", "1 W"], "tdp": ["0.001 W", "100000 W", "2000 W"],
             "cores": ["1", "10000000"], "tile": ["[1, 1]", "[65536, 65536]"],
             "sram": ["1 B", "10 TB"], "clock": ["1 MHz", "100 GHz"]},
    "system": {"chips_per_node": ["1", "1000000"], "price_per_hour": ["0 USD/h", "1e7 USD/h", "0.0001 USD/h"],
               "tiers": ["[{name: a, size: 100000000, bandwidth: 1 kB/s, latency: 3600 s}]",
                         "[{name: a, size: 1, bandwidth: 1e16 B/s, latency: 0 s}]",
                         "[{name: a, size: 8, bandwidth: 1 TB/s, mesh_below: 1e15 B}]",
                         "[" + ", ".join(f"{{name: t{i}, size: {2 ** i}, bandwidth: 1 TB/s}}" for i in range(1, 17))
                         + "]",
                         "[{name: a, size: 8, topology: torus3d, dims: [2, 2, 2], bandwidth: 1 TB/s}]"],
               "vcpus": ["0", "1000000"], "memory": ["1 MiB", "1e16 B"]},
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
               "latency": "2 us"}, ["scale_out", "mesh_below"]),
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
    pick = rng.randrange(20)
    if pick >= 16:
        return _odd_base(rng, folder, path)
    if pick >= 10:
        return _special(rng, folder, path, pick)
    if pick == 0:
        text = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(  # an alias bomb: 9^9 values
            f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    elif pick == 1:
        n = rng.choice([40, 5000, 100_000])
        text = "layers: " + "[" * n + "]" * n + "\n"
    elif pick == 2:
        n = rng.choice([3, 31, 32, 33, 200, 450, 1100])
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


def _special(rng: random.Random, folder: Path, path: Path, pick: int) -> Path:
    """What a reader must not read to the end or wait on: a device, a pipe, a link to either; and encodings,
    merge-key alias bombs, TOML with hostile types, a file past the size caps."""
    if pick == 10:
        os.mkfifo(path)  # opening it to read waits for a writer
        return path
    if pick == 11:
        target = rng.choice(["/dev/zero", "/dev/urandom", "/dev/null", "/dev/full"])
        if rng.random() < 0.5:
            return Path(target)
        path.symlink_to(target)
        return path
    if pick == 12:
        text = "a: &a {x: 1, y: 2, z: 3, w: 4}\n" + "".join(  # a merge-key bomb: <<: over and over
            f"{c}: &{c} {{<<: [{', '.join([f'*{p}'] * 8)}], {c}{i}: 1}}\n"
            for i, (p, c) in enumerate(zip("abcdefgh", "bcdefghi")))
        path.write_text(text)
        return path
    if pick == 13:
        body = rng.choice(["base: llama3-8b\nlayers: 4\n", "layers: \xe9\n", "\ufeffbase: llama3-8b\n"])
        path.write_bytes(body.encode(rng.choice(["utf-16", "latin-1", "utf-8", "utf-32"]), errors="replace"))
        return path
    if pick == 14:
        toml = rng.choice(['base = "llama3-8b"\nlayers = 1e400\n', 'base = "llama3-8b"\nhidden = 9223372036854775808\n',
                           'base = "llama3-8b"\n[moe]\nexperts = "8"\n', 'base = "trainium2"\nmemory = 96\n',
                           'base = "llama3-8b"\ntied_embeddings = "no"\n', "a = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]"
                           "]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n", 'base = "llama3-8b"\nlayers = nan\n', "x = 1\nx = 2\n"])
        path = path.with_suffix(".toml")
        path.write_text(toml)
        return path
    with open(path, "wb") as f:  # past every size cap: a sparse file of zeros, or a long line of text
        if rng.random() < 0.5:
            f.truncate(rng.choice([(1 << 20) + 1, 60 << 20]))
        else:
            f.write(b"layers: 8\n# " + b"a" * (5 << 20) + b"\n")
    return path


def _odd_base(rng: random.Random, folder: Path, path: Path) -> Path:
    """A `base:` that is not a name or a file, points where a reader must not go, or loops through two files;
    a mapping nested 100,000 deep; a key repeated; anchors shared between fields."""
    pick = rng.randrange(8)
    if pick == 0:
        (folder / "ping.yaml").write_text("base: pong.yaml\nlayers: 4\n")
        (folder / "pong.yaml").write_text("base: ping.yaml\nhidden: 64\n")
        return folder / "ping.yaml"
    text = {1: "base: " + rng.choice(["[llama3-8b, gpt3-175b]", "5", "null", "{a: 1}", "''", "true", ".nan"]) + "\n",
            2: "base: " + rng.choice(["/dev/zero", "/dev/full", "/etc/passwd", "../../../../etc/hostname", str(folder),
                                      str(path), "~/x.yaml", "http://example.com/m.yaml"]) + "\n",
            3: "a: " + "{b: " * 100_000 + "1" + "}" * 100_000 + "\n",
            4: "base: llama3-8b\nlayers: 4\nlayers: 5\n",
            5: "base: llama3-8b\nhidden: &h 4096\nffn_hidden: *h\nheads: *h\nkv_heads: *undefined\n",
            6: "base: llama3-8b\n" + "".join(f"k{i}: {i}\n" for i in range(rng.choice([10, 100_000]))),
            7: "base: trainium2\npeak_flops: &r {bf16: 667 TFLOP/s}\nmamf: *r\nmemory: !!binary aGVsbG8=\n"}[pick]
    path.write_text(text)
    return path


def user_file(rng: random.Random, folder: Path, kind: str) -> Path:
    """A model, chip or system file: a few fields with valid and hostile values, or a structural attack."""
    if rng.random() < 0.2:
        return _structural(rng, folder, rng.choice([".yaml", ".yml", ".toml"]))
    lines = [] if rng.random() < 0.1 else [f"base: {rng.choice(BASES[kind])}"]
    if rng.random() < 0.3:  # valid values at their range's edges, one to three of them
        edges = EXTREMES[kind]
        lines += [f"{f}: {rng.choice(edges[f])}" for f in rng.sample(sorted(edges), rng.randint(1, 3))]
        path = folder / f"{kind}{rng.randrange(10**6)}.yaml"
        path.write_text("\n".join(lines) + "\n")
        return path
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
    if rng.random() < 0.4:  # the keys of other architectures (MoE, MLA, sliding windows, nested text configs)
        cfg.update(rng.choice([{"model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2},
                               {"model_type": "deepseek_v3", "n_routed_experts": 256, "num_experts_per_tok": 8,
                                "q_lora_rank": 1536, "kv_lora_rank": 512, "moe_intermediate_size": 2048},
                               {"sliding_window": 4096, "head_dim": 128}, {"text_config": dict(cfg)},
                               {"rope_scaling": {"type": "yarn", "factor": 1e30}}]))
    key = rng.choice(sorted(cfg))
    cfg[key] = rng.choice([0, -1, 1e30, "x", None, [1], True, 2**63, 1.5, float("nan"), {"a": 1}, "8", 1e-300, [],
                           -2**63, float("inf")])
    path = folder / f"hf{rng.randrange(10**6)}" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cfg) if rng.random() < 0.9 else "{not json")
    return path


def _csv_text(rng: random.Random, source: Path, kind: str, header_extra: list[str] = ()) -> str:
    """A shipped CSV's header and a few rows, with cells, columns and bytes mutated."""
    lines = source.read_text(encoding="utf-8").splitlines()
    import csv as _csv
    import io

    rows = list(_csv.reader(io.StringIO("\n".join(lines))))
    header, body = rows[0], rng.sample(rows[1:], min(len(rows) - 1, rng.randint(1, 4)))
    if rng.random() < 0.3:  # the schema's columns this file leaves out, with edge and hostile cells
        fuzz_wide.extra_columns(rng, kind, header, body)
    for _ in range(rng.randint(1, 3)):
        r, c = rng.randrange(len(body)), rng.randrange(len(header))
        body[r][c] = rng.choice(HOSTILE_CELLS)
    if rng.random() < 0.2:
        header.pop(rng.randrange(len(header)))
    if rng.random() < 0.1:
        header.append(rng.choice(["extra_col", "measured_bogus", ""] + list(header_extra)))
    if rng.random() < 0.1:
        body[-1] = body[-1][: rng.randrange(len(body[-1]))]
    if rng.random() < 0.04:  # past the row caps (validate.rows.MAX_ROWS, MAX_FIT_ROWS), or just under them
        body = (body * 3000)[: rng.choice([161, 401, 3000, 40_000])]
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
        n = rng.choice([1, 3, 20, 20, 20, 20, 20, 20, 50_000, 250_001])
        rows = [[str(i * rng.choice([0.1, 1, 1e9])), str(rng.choice([16, 512, 4096])), str(rng.choice([1, 64, 256]))]
                for i in range(n)]
        for _ in range(rng.randint(0, 2)):
            rows[rng.randrange(n)][rng.randrange(3)] = rng.choice(HOSTILE_CELLS)
        header = ["arrival_s", "input_tokens", "output_tokens"]
        if rng.random() < 0.15:
            header[rng.randrange(3)] = rng.choice(["arrival", "extra", ""])
        if rng.random() < 0.15:  # shared prefixes (some longer than their prompt)
            header.append("prefix_tokens")
            for r in rows:
                r.append(str(rng.choice([0, 8, 512, 5000])))
        elif rng.random() < 0.1:  # prefix_tokens at its bounds and past them
            fuzz_wide.extra_columns(rng, "trace", header, rows)
        if rng.random() < 0.15:  # 1M-token prompts, arrivals out of order, quoted or padded cells, CRLF
            r = rows[rng.randrange(n)]
            r[rng.randrange(len(r))] = rng.choice(["1048576", "134217728", '"512"', " 512 ", "-0.0", "5e-324",
                                                   "1e10", "10000000001", "0x10", "1_000"])
            if n > 2 and rng.random() < 0.5:
                rows.reverse()
        path.write_text(rng.choice(["\n", "\r\n"]).join([",".join(header)] + [",".join(r) for r in rows]) + "\n")
        return path
    source = {"training": rng.choice(["calibration_runs.csv", "more_training_runs.csv", "moe_training_runs.csv",
                                      "published_training_runs.csv"]),
              "serving": rng.choice(["inference_runs.csv", "more_inference_runs.csv", "published_inference_runs.csv"]),
              "memory": "memory_runs.csv"}[kind]
    path.write_text(_csv_text(rng, VALIDATION / source, kind))
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
