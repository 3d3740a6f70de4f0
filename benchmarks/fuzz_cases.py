"""The cases of the fuzz campaign (benchmarks/fuzz_campaign.py): a command line of random valid and hostile
values for every option of every command (read from the click commands themselves, so a new option is
fuzzed the day it is added), the malformed user files it names, and requests to the web page's JSON
endpoints. `case(rng, run_dir)` writes the run's files under run_dir and returns the Case.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path

import click

import fuzz_pairs
import fuzz_shapes
import fuzz_wide
from fuzz_files import calibration_file, csv_file, hf_config, sweep_file, user_file

ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "validation"

COUNTS = ["1", "2", "4", "8", "16", "64", "0", "-1", "3", "1e30", "inf", "nan", "x", "", "9223372036854775808",
          "2.5", "65536", "65537", "1e8", "1_000", "-0", "0x10", "1e-300", "+8", " 8", "8 ", "\uff18", "\u0663",
          "8.0", "1e5", "-1e30", "1e309", "Infinity", "NaN", "0b101", "2**10", "8e0", "1e-5", "1000000", "1048576",
          "100000000", "100000001", "2147483648", "1e6", "1 k", "8k", "1M", "1,024", "\u00b2", "1e+3", "0008",
          "0o10", "0X10", "1e1_0", "_8", "8_", "1__0", "1E3", "+0", "0.0", "-0.0", "8 chips", "1e+308", "1e-0",
          "\u0661\u0666", "\u096e", "\u2167", "1\u00a0024", "8.5e1", "1e2.5", "0e0", "4294967296", "1e-0_1"]
REALS = ["0", "-1", "1e-308", "1e308", "inf", "-inf", "nan", "0.5", "2", "1e6", "3.7", "x", "", "1", "10", "100",
         "+1", "1e309", "-0.0", "Infinity", " 2 ", "\u0663", "5e-324", "1/2", "1,5", "1e-320", "0x1p-3", "1E+3",
         "1_0.5", "0.1e1", "+inf", "-nan", ".5", "5.", "50%", "1e5%", "2.2250738585072014e-308",
         "1.7976931348623157e308"]
DURATIONS = ["0", "-1s", "1e30", "nan", "inf", "1s", "100ms", "2min", "30d", "abc", "", "5", "1e-9s", "60s", "1h",
             "1e400", "10y", "50ms", "2s", "1e30h", "5 s", "nan s", "infs", "-0s", "1e-300s", "3600000d", "1us",
             "1e9min", "0.5h", "\u0663s", "1 h", "1H", "2 days", "1d 2h", "P1D", "1e-6s", "0.001ms", "100y",
             "1e4y", "10001y", "600s", "601s", "10s", "10.000001s", "1 week", "1e-320s", "s", "h1", "1_000s", "0x10s",
             "-0.0s", "1E3s", "1e308s", "1 ms", "1\u00b5s", "1\u03bcs", "1ns", "PT1H", "1e-400s", "5e-324s", "1.5.5s"]
TOKENS = ["inf", "nan", "0", "-5", "1e40", "1T", "300B", "6e12", "chinchilla", "abc", "1e-3", "15T", "", "1e17",
          "1.1e17", "100B", "1e9", "1e17", "99999999999999999999", "1e-300", "-inf", "1e5T", "0.5", "1P", "2Q", "1 T",
          "1t", "3e9", "1.5T", "1", "2", "1e16", "100000000000000001", "2^40", "1T tokens", "1TB", "1e17 ", "+1T",
          "1_000B", "0x10T", "-0", "1e308", "1E12", "1e-0T", "1.5e3B", "1k", "1K", "1G", "1Ki", "-0T", "1e17.0"]
LENGTHS = ["512", "0", "1", "uniform:1:1e30", "lognormal:100:50", "uniform:5:1", "lognormal:0:1", "inf", "abc",
           "uniform:1:100", "lognormal:200:1", "-3", "1e30", "uniform:1", "lognormal:nan:1", "128", "2048", "134217728",
           "134217729", "uniform:0:0", "lognormal:1e8:10", "200000", "lognormal:100000:1", "uniform:100000:200000",
           "uniform:nan:5", "lognormal:100:11", "uniform:-5:5", "uniform:1:2:3", ":", "uniform::", "1048576",
           "1000000", "uniform:1000000:1048576", "lognormal:1000000:0.1", "134217727", "lognormal:1:0",
           "uniform:1:1", "UNIFORM:1:5", "uniform: 1: 5", "lognormal:100:1e30", "lognormal:1e30:1", "normal:1:1"]
FLOATS = ["40", "0", "-1", "inf", "nan", "1e308", "1e-308", "x", "1.3", "1", "700", "1e30", ""]
NAMED = {  # option -> values (valid and hostile); options not named here get a pool from their click type
    "--tokens": TOKENS, "--qps": REALS + ["5", "50", "1e7", "1e8"], "--duration": DURATIONS, "--interval": DURATIONS,
    "--deadline": DURATIONS, "--slo-ttft": DURATIONS, "--slo-tpot": DURATIONS, "--input-tokens": LENGTHS,
    "--output-tokens": LENGTHS, "--budget": ["2.5M", "0", "-1", "inf", "1e30", "x", "400000", "1e13", "nan", ""],
    "--weights": ["bf16", "fp8", "int8", "int4", "q4_0", "q8_0", "fp3", "", "nvfp4", "fp16", "awq-int4", "q4_k_m",
                  "q3_k", "bf16,fp8", "bf16,,fp8", "fp8,fp8", ",", "BF16", "mxfp4", "int4,fp3"],
    "--kv-dtype": ["bf16", "fp8", "int8", "x", "", "fp16", "q8_0", "q4_0", "bf16,fp8", "fp8,x", "int4"],
    "--scheduler": ["static", "continuous", "chunked-prefill", "x", ""],
    "--router": ["round-robin", "least-loaded", "random", "x", ""],
    "--speculative": ["draft", "eagle", "medusa", "mtp", "x", "", "DRAFT", "draft:llama3-8b"],
    "--spec-tokens": ["1", "4", "0", "-1", "1000000", "1e30", "x", "64"],
    "--acceptance": ["0.7", "0", "1", "1.5", "-1", "nan", "inf", "x", "0.999999"],
    "--price": FLOATS, "--power": FLOATS, "--pue": FLOATS + ["0.5", "100"],
    "--mtbf-chip-hours": REALS + ["10", "2000", "50000", "1e9"], "--cv": REALS, "--restart-minutes": REALS,
    "--checkpoint-write-gbps": REALS, "--checkpoint-load-gbps": REALS, "--top": ["1", "5", "1e6", "0", "1e20", "x"],
    "--trials": ["1", "2", "20", "0", "-1", "1e20", "x", "1000", "1e6", "100000", "100001"],
    "--requests": ["1", "10", "50", "0", "-1", "1e30", "9223372036854775808", "x", "200", "1e7", "250000", "250001",
                   "100000", "2000"],
    "--sweep-chips": ["8,16", "0,8", "x", "8," * 70, "1e30", "16", "1024,8192", ",", "100000000"],
    "--sizes": ["8,16", "0", "x", "1e30", "", "64,128,256", "8," * 200, "-1,8"],
    "--dtypes": ["bf16", "bf16,fp8", "x", "", ",", "fp8,fp3", "bf16," * 50],
    "--batch-range": ["1:64", "64:1", "0:10", "x", "1:1e30", "", "1:", "inf:nan", "128:1024"],
    "--max-global-batch": COUNTS, "--seed": COUNTS + ["42", "18446744073709551616"],
    "--address": ["auto", "", "x:1", "127.0.0.1:1", "ray://127.0.0.1:1"], "--engine": ["local", "x", ""],
    "--workers": ["1", "2", "0", "-1", "1000000", "x"], "--port": ["0", "-1", "70000", "x"], "--host": ["127.0.0.1"],
    "--emit": ["megatron", "nemo", "neuron", "maxtext", "x", ""],
    # serving's newest options: P prefill x D decode replicas, their chips, shared prompt prefixes
    "--disaggregate": ["1x1", "2x2", "1x3", "0x1", "1x0", "x", "", "2x", "x2", "1x1x1", "1e30x1", "-1x2", "1.5x1",
                       "9223372036854775808x1", "8x8", "100000x100000", "1X1", " 1x1", "1:1", "1,1", "1000x1000"],
    "--prefill-tp": COUNTS, "--decode-tp": COUNTS, "--replicas": COUNTS, "--threads": COUNTS, "--batch": COUNTS,
    "--prefix-tokens": ["0", "1", "128", "1000000", "134217728", "1e30", "-1", "x", "nan", "512", "2048", "1e5"],
    "--seq-len": COUNTS + ["131072", "134217728", "134217729"], "--spares": COUNTS + ["10000000", "10000001"],
    "--global-batch": COUNTS + ["1e9", "1000000000", "1e26", "1000000001", "4096", "1536"],
}
# options never given: the web server (the ui endpoints are fuzzed in-process instead); `sweep --engine ray` is
# not drawn either (the engine values above): it starts a cluster of daemons that would outlive a killed run
SKIP = {("ui", "--port"), ("ui", "--host"), ("ui", "--no-browser")}
OUTPUTS = {"--html", "--png", "--csv", "--out", "--output", "-o", "--write-intervals"}


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
    stdin: bytes | None = None  # what stdin holds (None: the null device)
    env: dict = field(default_factory=dict)  # environment variables set (a value of None: unset)
    tty: bool = False  # stdout is a terminal (a pseudo-terminal the campaign reads)
    churn: tuple = ()  # (path, [contents]): the file rewritten with each in turn while the run reads it

    def shown(self, limit: int = 3000) -> str:
        if self.kind == "pair":  # two command lines
            return " ; ".join(Case("cli", list(a)).shown(limit // 2) for a in self.argv)
        words = [repr(a) if a == "" or not str(a).isprintable() or " " in str(a) else str(a) for a in self.argv]
        text = ("flopcast " if self.kind == "cli" else "ui ") + " ".join(words)
        extra = [f"{k}={v!r}" for k, v in self.env.items()] + (["stdout a terminal"] if self.tty else [])
        extra += ([f"stdin {len(self.stdin):,} bytes {self.stdin[:60]!r}"] if self.stdin is not None else [])
        extra += [f"{self.churn[0]} rewritten while read"] if self.churn else []
        text += f"  [{'; '.join(extra)}]" if extra else ""
        return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class Names:
    """The catalog's names (read once in the parent) and the click commands."""

    def __init__(self, only=()):
        from flopcast import catalog

        self.only = tuple(only)  # the commands (and "ui") drawn; empty: every one
        from flopcast.cli import COMMANDS, cli

        self.models = sorted(catalog.raw("model"))
        self.chips = sorted(catalog.raw("chip"))
        self.systems = sorted(catalog.raw("system"))
        ctx = click.Context(cli)
        self.commands = {n: cli.get_command(ctx, n) for n in COMMANDS}


SPECIAL = {"--calibration": "calibration file", "--trace": "trace CSV", "--serve-model": "model",
           "--serve-hardware": "hardware", "--hardware": "hardware"}


def pool_source(command: str, flag: str, param: click.Option) -> str:
    """Where the values of one option come from (tests/test_fuzz_generators.py: none from the generic pool)."""
    if param.is_flag:
        return "flag"
    if flag in OUTPUTS:
        return "output path"
    if flag in SPECIAL:
        return SPECIAL[flag]
    if flag in NAMED:
        return "named"
    t = param.type
    if isinstance(t, click.Choice):
        return "choice"
    if type(t).__name__ == "Checked":
        return "counts" if t.name == "integer" else "numbers"
    if isinstance(t, (click.types.IntParamType, click.IntRange)):
        return "counts"
    return "floats" if isinstance(t, click.types.FloatParamType) else "generic"


def drawn_flags(names: Names, command: str) -> set:
    """Every flag (and its --no- form) that command_line may give to the command."""
    cmd = names.commands[command]
    return {o for p in cmd.params if isinstance(p, click.Option) and (command, p.opts[0]) not in SKIP
            for o in p.opts + p.secondary_opts}


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


# ---- command lines ------------------------------------------------------------------------------------------------

FILE_KINDS = ("model", "chip", "system")


def _model(rng, names, folder, made):
    r = rng.random()
    if r < 0.15:
        made.append(1)
        return str(user_file(rng, folder, "model"))
    if r < 0.2:
        made.append(1)
        made_hf = (fuzz_wide.hf_config if rng.random() < 0.6 else hf_config)(rng, folder)
        return str(made_hf.parent if rng.random() < 0.5 else made_hf)
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
        odd = ["", "/dev/full", str(folder), "fifo", "/dev/null", "/nonexistent/dir/out" + suffix,
               str(folder / "a/b/c") + suffix]
        pick = rng.choice([str(folder / f"out{suffix}")] * 6 + odd)
        if pick == "fifo":  # a named pipe that no process reads: opening it to write waits forever
            pick = str(folder / f"pipe{rng.randrange(10**6)}{suffix}")
            os.mkfifo(pick)
        elif command == "sweep" and rng.random() < 0.3 and pick == str(folder / f"out{suffix}") and suffix:
            Path(pick).write_bytes(rng.choice([b"\xff\xfe\x00garbage", b"scenario,model\n1,2,3,4\n", b"", b"PAR1"]))
            Path(pick + ".partial.jsonl").write_text(rng.choice(['{"a": 1}\n', "[1, 2]\n", "null\n", "{\n"]))
        return pick
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
        return rng.choice(["1", "8", "16", "32", "64", "256", "1024", "8192", "1", "100000", "1000000"])
    if option in ("--input-tokens", "--output-tokens") and command == "infer":
        return _pick(rng, COUNTS + ["128", "2048", "134217728", "134217729"], hostile)
    return _pick(rng, NAMED.get(option) or _pool(param), hostile)


# the short names of the measured runs validate and calibrate read (validate.rows.SHIPPED; a test checks each is here)
SHIPPED_NAMES = ["training", "calibration_runs", "more_training_runs", "published_training_runs", "inference",
                 "inference_runs", "more_inference_runs", "published_inference_runs"]


def _positional(rng, command, names, folder, made) -> list:
    if command in ("validate", "calibrate"):
        made.append(1)
        r = rng.random()
        if r < 0.1:
            return [rng.choice(SHIPPED_NAMES + ["x", "", "Training", "training.csv", "inference_runs.csv"])]
        if r < 0.15:
            return [rng.choice(["missing.csv", str(folder), "/dev/null"])]
        return [str(csv_file(rng, folder, rng.choice(["training", "training", "serving", "memory"])))]
    if command == "sweep":
        made.append(1)
        return [str((fuzz_wide.sweep_file if rng.random() < 0.5 else sweep_file)(rng, folder))]
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


SHAPED = 0.25  # the share of command lines reshaped (fuzz_shapes.py)


def command_line(rng: random.Random, names: Names, folder: Path, command: str | None = None,
                 shape: bool = True) -> Case:
    """One command (`command`, or one drawn) with its positional argument, -H and a random subset of its options;
    reshaped (fuzz_shapes.py) one time in four when `shape`."""
    command = command or rng.choice([c for c in names.commands if c != "ui" and (not names.only or c in names.only)])
    if command in ("claims", "report") and rng.random() < 0.7 and not names.only:  # slow (10-20 s each), fewer
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
    # what a run needs to get past its first refusal: serve a rate (or a trace, or --find-capacity), plan one goal
    if command == "serve" and not chosen & {"--qps", "--trace", "--find-capacity"} and rng.random() < 0.85:
        argv += ["--qps", rng.choice(["0.5", "5", "50", "500", "1e-6", "1e4"])]
    if command == "plan" and not chosen & {"--deadline", "--budget", "--pareto"} and rng.random() < 0.85:
        chosen.add(rng.choice(["--deadline", "--budget", "--pareto"]))
    if rng.random() < 0.2:  # options that interact, drawn together
        together = fuzz_wide.combo(rng, command, set(by_flag) | {s for p in options for s in p.secondary_opts})
        chosen -= {f for f in together if f.startswith("-")} | ({"--chips"} if "-n" in together else set())
        argv += together
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
    case = Case("cli", argv, stdout_full=rng.random() < 0.01, files=len(made))
    if shape and rng.random() < SHAPED:
        every = {o: p for p in options for o in p.opts}

        def value_of(flag, draw=True):
            p = every.get(flag)
            if p is None or p.is_flag or not draw:
                return None if p is None or p.is_flag else ""
            if p.opts[0] == "--hardware":
                return _hardware(rng, names, folder, made)
            return _value(rng, command, p.opts[0], p, names, folder, made, hostile)

        fuzz_shapes.reshape(rng, case, names, folder, value_of)
        case.files = len(made)
    return case


UI_PARAMS = {"model": lambda rng, n: rng.choice(n.models[:10] + ["x", "", "upload:nope", "upload:../../x"]),
             "hardware": lambda rng, n: rng.choice(n.systems[:30] + ["x", "", ","]),
             "chips": lambda rng, n: rng.choice(COUNTS), "tokens": lambda rng, n: rng.choice(TOKENS),
             "tp": lambda rng, n: rng.choice(COUNTS), "pp": lambda rng, n: rng.choice(COUNTS),
             "dtype": lambda rng, n: rng.choice(["bf16", "fp8", "x", ""]),
             "recompute": lambda rng, n: rng.choice(["none", "full", "x"]),
             "micro_batch": lambda rng, n: rng.choice(COUNTS), "global_batch": lambda rng, n: rng.choice(COUNTS),
             "seq_len": lambda rng, n: rng.choice(COUNTS), "bogus": lambda rng, n: "1",
             "dp": lambda rng, n: rng.choice(COUNTS), "cp": lambda rng, n: rng.choice(COUNTS),
             "ep": lambda rng, n: rng.choice(COUNTS), "vp": lambda rng, n: rng.choice(COUNTS),
             "sharding": lambda rng, n: rng.choice(["none", "zero1", "zero3", "fsdp", "x", ""]),
             "schedule": lambda rng, n: rng.choice(["1f1b", "interleaved", "dualpipe", "zb", "x", ""]),
             "format": lambda rng, n: rng.choice(["json", "csv", "x"])}
DOWNLOAD_WHAT = ["train", "compare", "x", "", "TRAIN", "train\u200b"]  # /api/download's what= and format=
DOWNLOAD_FORMATS = ["json", "csv", "html", "x", "", "JSON", "png", "json "]
UI_HUGE = ["9" * 30, "9" * 5000, "1e400", "0x10", "  8  ", "\u0663", "8;drop", "<script>", "%00"]


def ui_request(rng: random.Random, names: Names, folder: Path) -> Case:
    """A request to one of the page's JSON endpoints (or the upload), with random and hostile query values."""
    path = rng.choice(["/api/train", "/api/train", "/api/compare", "/api/download", "/api/catalog", "/api/upload",
                       "/api/nothing"])
    if path == "/api/upload":
        made = user_file(rng, folder, "model") if rng.random() < 0.6 else hf_config(rng, folder)
        body = {"filename": rng.choice([made.name, "x.exe", "", "../../etc/passwd.yaml"]),
                "text": made.read_text(errors="replace") if made.is_file() else "x"}
        if rng.random() < 0.2:
            body = rng.choice([{}, {"filename": 5}, [1], {"filename": "a.yaml", "text": "a" * (2 << 20)},
                               {"filename": "m.yaml", "text": "base: llama3-8b\nname: \ud800\n"},
                               {"filename": "\udcff.yaml", "text": "base: llama3-8b\n"}])
        return Case("ui", ["POST", path, body], files=1)
    params = {k: UI_PARAMS[k](rng, names) for k in rng.sample(sorted(UI_PARAMS), rng.randint(0, 6))}
    if path in ("/api/train", "/api/compare") and rng.random() < 0.25:  # an uploaded model, then a forecast of it
        made = user_file(rng, folder, "model") if rng.random() < 0.5 else fuzz_wide.hf_config(rng, folder)
        body = {"filename": made.name, "text": made.read_text(errors="replace") if made.is_file() else "x"}
        params.pop("model", None)
        if path == "/api/compare":
            params["hardware"] = ",".join(rng.sample(names.systems[:40], rng.randint(1, 3)))
        return Case("ui", ["POST+GET", path, {"upload": body, "params": params}], files=1)
    if params and rng.random() < 0.3:  # huge, odd or injected text in one field
        params[rng.choice(sorted(params))] = rng.choice(UI_HUGE)
    if path == "/api/compare":
        params["hardware"] = ",".join(rng.sample(names.systems[:40], rng.randint(1, 4)))
    if path == "/api/download":
        params["what"] = rng.choice(DOWNLOAD_WHAT)
        params["format"] = rng.choice(DOWNLOAD_FORMATS)
    if params and rng.random() < 0.15:  # a key given twice (`?tp=1&tp=0`), the later value hostile
        key = rng.choice(sorted(params))
        params = list(params.items()) + [(key, rng.choice(UI_HUGE + COUNTS[:12]))]
    return Case("ui", ["GET", path, params])


def case(rng: random.Random, names: Names, folder: Path) -> Case:
    ui = rng.random() < 0.04 if not names.only else "ui" in names.only and (names.only == ("ui",) or rng.random() < 0.5)
    only_pairs = names.only == ("pair",)
    if not ui and (not names.only or "pair" in names.only) and (only_pairs or rng.random() < PAIRED):
        for _ in range(10):  # a chip without the field drawn gives no pair: draw again
            argvs = fuzz_pairs.pair(rng, names, folder, lambda r, n, f, c: command_line(r, n, f, c, shape=False).argv)
            if argvs:
                return Case("pair", argvs, files=1)
    return ui_request(rng, names, folder) if ui else command_line(rng, names, folder)


PAIRED = 0.04  # the share of cases that are a pair of runs: a chip and a faster one (fuzz_pairs.py)
