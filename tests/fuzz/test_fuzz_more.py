"""The commands and options added since the first fuzz pass, valid and hostile: deploy, sweep, the web page's JSON
endpoints, train --emit, serving's --speculative and --prefix-tokens, --price/--power/--pue, --calibration, and
validate's measured kinds (step time, sequences/s, model TFLOP/s, MFU, time to train). The same checks as
test_fuzz_cli.py: exit code 0 or 2, one-line errors, no traceback, no hang, memory under the cap, strict JSON."""

from __future__ import annotations

import csv
import io
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import FUZZ, check_run, memory_cap, peak_rss_bytes, reset_peak_rss, strict_json
from test_fuzz_cli import COUNTS, DURATIONS, LENGTHS, REALS, SMALL, _argv

ROOT = Path(__file__).resolve().parents[2]
CALIBRATION = ROOT / "src" / "flopcast" / "catalog" / "data" / "calibration.yaml"
FEW = settings(FUZZ, max_examples=max(4, FUZZ.max_examples // 4))  # deploy and sweep examples take seconds each
FLOATS = ["40", "0", "-1", "inf", "nan", "1e308", "1e-308", "x", "1.3", "700", ""]


def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="flopcast-fuzz-"))


def _calibration(draw) -> str:
    pick = draw(st.sampled_from(["shipped", "missing", "bad", "folder", "empty"]))
    if pick == "shipped":
        return str(CALIBRATION)
    if pick == "missing":
        return "missing-calibration.yaml"
    folder = _folder()
    if pick == "folder":
        return str(folder)
    path = folder / "cal.yaml"
    text = "" if pick == "empty" else CALIBRATION.read_text().replace(": ", f": {draw(st.sampled_from(REALS))} #", 1)
    path.write_text(text)
    return str(path)


@st.composite
def economics_args(draw):
    fixed = ["llama3-8b", "-H", draw(st.sampled_from(["p5.48xlarge", "trn2.48xlarge"])), "-n", "16", "--tp", "1",
             "--pp", "1"]
    options = {"--price": FLOATS, "--power": FLOATS, "--pue": FLOATS + ["0.5", "100"],
               "--emit": ["megatron", "nemo", "neuron", "maxtext", "x"], "--tokens": ["1T", "inf", "x"]}
    argv = _argv(draw, "train", fixed, options)
    if draw(st.booleans()):
        argv += ["--calibration", _calibration(draw)]
    return argv


@st.composite
def speculative_args(draw):
    command = draw(st.sampled_from(["infer", "serve"]))
    fixed = [draw(st.sampled_from(["llama3-8b", "qwen3-30b-a3b"])), "-H", draw(st.sampled_from(["p5.48xlarge",
                                                                                              "inf2.8xlarge"]))]
    options = {"--speculative": ["draft", "eagle", "medusa", "mtp", "x", ""], "--spec-tokens": SMALL + ["1000000"],
               "--acceptance": ["0.7", "0", "1", "1.5", "-1", "nan", "inf", "x"]}
    if command == "serve":
        options.update({"--prefix-tokens": COUNTS, "--input-tokens": LENGTHS})
        fixed += ["--qps", draw(st.sampled_from(["1", "5"])), "--requests", "30"]
    argv = _argv(draw, command, fixed, options)
    if draw(st.booleans()):
        argv += ["--calibration", _calibration(draw)]
    return argv


@st.composite
def deploy_args(draw):
    fixed = ["llama3-8b", "-H", draw(st.sampled_from(["p5.48xlarge", "inf2.8xlarge", "p5.48xlarge,x", "x", ","])),
             "--requests", draw(st.sampled_from(["30", "0", "1e30", "x"]))]
    options = {"--slo-ttft": DURATIONS, "--slo-tpot": DURATIONS, "--qps": REALS + ["2"], "--input-tokens": LENGTHS,
               "--output-tokens": LENGTHS, "--weights": ["bf16", "fp8", "int4", "x"],
               "--kv-dtype": ["bf16", "fp8", "x"],
               "--seed": COUNTS, "--csv": ["", "/dev/full", str(_folder() / "out.csv"), str(_folder())]}
    return _argv(draw, "deploy", fixed, options, flags=("--emit",))


SWEEP_FIELDS = {"chips": ["[8]", "8", "[0]", "[1e30]", "{from: 8, to: 16, times: 2}", "{from: 16, to: 8, times: 2}",
                          "{from: 8, to: 1e8, times: 1}", "x"],
                "tokens": ["[1T]", "[inf]", "[x]", "[0]"], "tokens_per_param": ["20", "-1", "nan", "x"],
                "seq_len": ["[2048]", "[0]", "[1e30]"], "layout": ["{tp: 1, pp: 1}", "{tp: 0}", "{xx: 1}"],
                "what_if": ["{memory_bandwidth: [1x, 2x]}", "{memory_bandwidth: {from: 0.5x, to: 2x, steps: 1000000}}",
                            "{power: [-1 W]}", "{bogus: [1]}", "{peak_flops.bf16: [nan]}", "{scale_up_chips: [0]}"],
                "objective": ["throughput", "x", "[cost, energy]"], "serving": ["{qps: 1}"],
                "models": ["[llama3-8b]", "[]", "[x]", "5"], "systems": ["[p5.48xlarge]", "[]", "{a: 1}"]}


@st.composite
def sweep_args(draw):
    fields = {"models": "[llama3-8b]", "systems": "[p5.48xlarge]", "chips": "[8]", "layout": "{tp: 1, pp: 1}"}
    for f in draw(st.lists(st.sampled_from(sorted(SWEEP_FIELDS)), max_size=2, unique=True)):
        fields[f] = draw(st.sampled_from(SWEEP_FIELDS[f]))
    folder = _folder()
    spec = folder / "sweep.yaml"
    spec.write_text("".join(f"{k}: {v}\n" for k, v in fields.items()))
    out = draw(st.sampled_from(["out.csv", "out.txt", "", "a/b/out.csv"]))
    argv = ["sweep", str(spec), "--out", str(folder / out) if out else "", "--workers", "1"]
    return argv + (["--json"] if draw(st.booleans()) else [])


@FUZZ
@given(economics_args())
def test_fuzz_emit_price_power_pue_calibration(argv):
    check_run(argv)


@FUZZ
@given(speculative_args())
def test_fuzz_speculative_and_prefix_tokens(argv):
    check_run(argv)


@FEW
@given(deploy_args())
def test_fuzz_deploy(argv):
    check_run(argv)


@FEW
@given(sweep_args())
def test_fuzz_sweep(argv):
    check_run(argv)


MEASURED = {"measured_step_time_s": ["3.03", "0", "-1", "nan", "1e30", "x"],
            "measured_sequences_per_s": ["100", "0", "inf", "1e30"],
            "measured_model_tflops_per_chip": ["150", "0", "nan", "1e30"],
            "measured_mfu": ["0.4", "40%", "0", "101", "nan", "-5%"],
            "measured_time_to_train_s": ["86400", "0", "inf", "1e30"]}
COMPANIONS = {"measured_flops_convention": ["6n", "palm", "maxtext", "x", ""], "train_tokens": ["1e12", "0", "inf", ""]}


@FUZZ
@given(st.sampled_from(sorted(MEASURED)), st.data(), st.booleans())
def test_fuzz_validate_measured_kinds(kind, data, as_json):
    text = (ROOT / "validation" / "calibration_runs.csv").read_text()
    rows = list(csv.DictReader(io.StringIO(text)))[:2]
    header = list(rows[0]) + [kind] + list(COMPANIONS)
    for r in rows:
        r["measured_tokens_per_s_per_chip"] = ""
        r[kind] = data.draw(st.sampled_from(MEASURED[kind]))
        for c, values in COMPANIONS.items():
            r[c] = data.draw(st.sampled_from(values))
    path = _folder() / "runs.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, header)
        w.writeheader()
        w.writerows(rows)
    check_run(["validate", str(path)] + (["--json"] if as_json else []))


UI_VALUES = {"model": ["narayanan-gpt-1.7b", "x", "", "upload:nope"], "hardware": ["trn1.32xlarge", "x", ""],
             "chips": ["16", "0", "-1", "inf", "nan", "1e30", "x", ""], "tokens": ["100B", "inf", "0", "x", ""],
             "tp": ["1", "0", "3", "x"], "pp": ["1", "0", "1e30"], "dtype": ["bf16", "x"],
             "global_batch": ["64", "0", "1e30"], "seq_len": ["2048", "0", "9223372036854775808"]}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    pytest.importorskip("starlette")
    pytest.importorskip("httpx")
    from starlette.testclient import TestClient

    from flopcast.ui import create_app

    with TestClient(create_app(tmp_path_factory.mktemp("uploads")), raise_server_exceptions=False) as c:
        yield c


@FUZZ
@given(st.sampled_from(["/api/train", "/api/compare", "/api/download"]),
       st.fixed_dictionaries({}, optional={k: st.sampled_from(v) for k, v in UI_VALUES.items()}),
       st.sampled_from(["json", "csv", "x"]))
def test_fuzz_ui_json_endpoints(client, path, params, fmt):
    params = {"model": "narayanan-gpt-1.7b", "hardware": "trn1.32xlarge", "chips": "16", "tokens": "100B", **params}
    if path == "/api/compare":
        params["hardware"] = params["hardware"] + ",trn2.48xlarge"
    if path == "/api/download":
        params.update(what="train", format=fmt)
    with memory_cap([path]):
        r = client.get(path, params=params)
    assert r.status_code in (200, 400), (path, params, r.status_code, r.text[:500])
    if "json" in r.headers.get("content-type", ""):
        body = strict_json(r.text)
        if r.status_code == 400:
            assert body["error"] and "\n" not in body["error"], body


@FUZZ
@given(st.sampled_from(["config.json", "m.yaml", "m.toml", "x.exe", ""]),
       st.sampled_from(["{", "{}", '{"hidden_size": 1e30}', "layers: .nan", "base: llama3-8b\nlayers: 4", "a" * 5000,
                        "x = 1", "[1, 2]", json.dumps({"architectures": [5], "model_type": "llama"})]))
def test_fuzz_ui_upload(client, filename, text):
    r = client.post("/api/upload", json={"filename": filename, "text": text})
    assert r.status_code in (200, 400), (filename, text[:80], r.status_code, r.text[:500])
    strict_json(r.text)


def test_the_memory_cap_stops_a_runaway_allocation_and_measures_the_peak():
    with pytest.raises(MemoryError):
        with memory_cap(["runaway"]):
            bytearray(3 << 30)  # past the address-space allowance: refused at once, not swapped
    reset_peak_rss()
    before = peak_rss_bytes()
    block = bytearray(200 << 20)
    block[::4096] = b"x" * math.ceil(len(block) / 4096)  # touch every page
    assert peak_rss_bytes() >= before + (190 << 20)
