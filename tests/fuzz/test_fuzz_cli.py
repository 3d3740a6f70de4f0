"""Every command's options, valid and hostile, in-process: exit code 0 or 2, one-line errors, no traceback,
no hang, strict JSON, no nan/inf in text, and the train invariants wherever a train result appears."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness import FUZZ, check_run

COUNTS = ["0", "-1", "1", "2", "3", "4", "8", "16", "1e30", "inf", "nan", "9223372036854775808", "1.5", "", "x",
          "1e3", "-0", "1_000"]
SMALL = ["1", "2", "4", "8", "16", "0", "-3", "inf", "nan", "1e30", "2.5", "x"]
REALS = ["0", "-1", "1e-308", "1e308", "inf", "-inf", "nan", "0.5", "2", "1e6", "3.7", "x", ""]
DURATIONS = ["0", "-1s", "1e30", "nan", "inf", "1s", "100ms", "2min", "30d", "abc", "", "5", "1e-9s"]
TOKENS = ["inf", "nan", "0", "-5", "1e40", "1T", "300B", "6e12", "chinchilla", "abc", "1e-3", "15T", ""]
LENGTHS = ["512", "0", "1", "uniform:1:1e30", "lognormal:100:50", "uniform:5:1", "lognormal:0:1", "inf", "abc",
           "uniform:1:100", "lognormal:200:1", "-3", "1e30", "uniform:1", "lognormal:nan:1"]
MODELS = ["llama3-8b", "mixtral-8x7b", "gpt3-175b", "qwen3-30b-a3b", "nonexistent-model"]
SYSTEMS = ["p5.48xlarge", "trn2.48xlarge", "c8g.16xlarge", "inf2.8xlarge", "trainium2", "no-such-system"]

LAYOUT = {"--tp": SMALL, "--pp": SMALL, "--dp": SMALL, "--cp": SMALL, "--ep": SMALL, "--vp": SMALL,
          "--micro-batch": SMALL, "--global-batch": COUNTS, "--seq-len": COUNTS,
          "--recompute": ["none", "full", "selective", "sometimes"], "--sharding": ["zero1", "zero3", "fsdp", "x"],
          "--dtype": ["bf16", "fp8", "fp32", "int8", "fp3"], "--schedule": ["1f1b", "interleaved", "gpipe", "x"]}


def _argv(draw, command, fixed, options, flags=(), json_flag=True):
    """`command` + fixed positional/option arguments + a random subset of `options` with drawn values."""
    argv = [command] + fixed
    chosen = draw(st.lists(st.sampled_from(sorted(options)), max_size=4, unique=True))
    for option in chosen:
        argv += [option, draw(st.sampled_from(options[option]))]
    for flag in flags:
        if draw(st.booleans()):
            argv.append(flag)
    if json_flag and draw(st.booleans()):
        argv.append("--json")
    return argv


@st.composite
def train_args(draw):
    fixed = [draw(st.sampled_from(MODELS)), "-H", draw(st.sampled_from(SYSTEMS)), "-n",
             draw(st.sampled_from(["8", "16", "64"] + COUNTS[:6]))]
    return _argv(draw, "train", fixed, {**LAYOUT, "--tokens": TOKENS, "--objective": ["throughput", "cost", "x"]})


@st.composite
def search_args(draw):
    fixed = [draw(st.sampled_from(MODELS[:3])), "-H", draw(st.sampled_from(SYSTEMS[:3])), "-n",
             draw(st.sampled_from(["8", "16"] + COUNTS[:4]))]
    return _argv(draw, "search", fixed, {"--top": COUNTS, "--tokens": TOKENS, "--tp": SMALL, "--pp": SMALL,
                                         "--seq-len": COUNTS, "--dtype": ["bf16", "fp8", "x"]})


@st.composite
def serving_args(draw):
    command = draw(st.sampled_from(["infer", "serve"]))
    fixed = [draw(st.sampled_from(["llama3-8b", "mixtral-8x7b", "x"])), "-H",
             draw(st.sampled_from(["p5.48xlarge", "c8g.16xlarge", "inf2.8xlarge"]))]
    common = {"--chips": SMALL, "--tp": SMALL, "--weights": ["bf16", "int4", "q4_0", "fp3"],
              "--kv-dtype": ["bf16", "fp8", "x"], "--pp": SMALL, "--ep": SMALL}
    if command == "infer":
        options = {**common, "--batch": COUNTS, "--input-tokens": COUNTS, "--output-tokens": COUNTS}
        return _argv(draw, command, fixed, options)
    fixed += ["--qps", draw(st.sampled_from(REALS + ["1", "5"]))]
    options = {**common, "--requests": ["1", "10", "50", "0", "-1", "1e30", "9223372036854775808", "x"],
               "--duration": DURATIONS, "--input-tokens": LENGTHS, "--output-tokens": LENGTHS,
               "--slo-ttft": DURATIONS, "--slo-tpot": DURATIONS, "--seed": COUNTS, "--replicas": SMALL,
               "--scheduler": ["static", "continuous", "chunked-prefill", "x"], "--router": ["round-robin", "x"],
               "--disaggregate": ["1x1", "2x3", "1P7D", "0x1", "1x", "x", "1e30x1"], "--prefill-tp": SMALL,
               "--decode-tp": SMALL}
    argv = _argv(draw, command, fixed, options)
    if "--requests" not in argv and "--duration" not in argv:
        argv += ["--requests", "40"]  # keep each example short
    return argv


@st.composite
def reliability_args(draw):
    fixed = ["llama3-8b", "-H", "p5.48xlarge", "-n", draw(st.sampled_from(["8", "64", "1024", "0", "x"])),
             "--trials", draw(st.sampled_from(["1", "2", "20", "0", "-1", "1e20", "x"]))]
    options = {"--seed": COUNTS, "--mtbf-chip-hours": REALS + ["10", "100", "2000"], "--cv": REALS,
               "--spares": COUNTS, "--interval": DURATIONS, "--restart-minutes": REALS, "--tokens": TOKENS,
               "--checkpoint-write-gbps": REALS, "--checkpoint-load-gbps": REALS,
               "--sweep-chips": ["8,16", "0,8", "x", "8," * 70, "1e30", "16"]}
    return _argv(draw, "reliability", fixed, options, flags=("--async-checkpoint",))


@st.composite
def plan_args(draw):
    command = draw(st.sampled_from(["plan", "compare"]))
    model = draw(st.sampled_from(MODELS[:2]))
    if command == "plan":
        goal = draw(st.sampled_from([["--deadline", d] for d in DURATIONS] + [["--budget", b] for b in
                                    ["2.5M", "0", "-1", "inf", "1e30", "x", "400000"]] + [["--pareto"]]))
        return _argv(draw, command, [model, "-H", "p5.48xlarge", "--tokens", draw(st.sampled_from(TOKENS[5:9]))]
                     + goal, {"--tokens": TOKENS, "--tp": SMALL})
    fixed = [model, "-H", draw(st.sampled_from(["p5.48xlarge,p4d.24xlarge", "p5.48xlarge,x", ",", "trn2.48xlarge"])),
             "-n", draw(st.sampled_from(["8", "16", "0", "1e30"]))]
    return _argv(draw, command, fixed, {"--tokens": TOKENS, "--tp": SMALL, "--seq-len": COUNTS})


@st.composite
def misc_args(draw):
    return draw(st.sampled_from([
        ["catalog"], ["catalog", "trainium2", "--json"], ["catalog", "nope"], ["catalog", "x.yaml"],
        ["train", "llama3-8b", "--html", ""], ["train", "llama3-8b", "--png", ""], ["validate", "missing.csv"],
["nosuchcommand"], ["train", "--tp"], ["serve"], ["--version"],
    ]))


@FUZZ
@given(train_args())
def test_fuzz_train(argv):
    check_run(argv)


@FUZZ
@given(search_args())
def test_fuzz_search(argv):
    check_run(argv)


@FUZZ
@given(serving_args())
def test_fuzz_infer_and_serve(argv):
    check_run(argv)


@FUZZ
@given(reliability_args())
def test_fuzz_reliability(argv):
    check_run(argv)


@FUZZ
@given(plan_args())
def test_fuzz_plan_and_compare(argv):
    check_run(argv)


@FUZZ
@given(misc_args())
def test_fuzz_other_commands(argv):
    check_run(argv)
