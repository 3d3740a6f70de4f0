"""The invariants the fuzz campaign asserts on JSON results (benchmarks/fuzz_invariants.py) hold on real outputs of
train and serve and catch each one broken: a check that never fires would find nothing, one that fires on a correct
result would bury the campaign's findings."""

import copy
import importlib
import json
import sys
from pathlib import Path

import pytest

from flopcast.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
fi = importlib.import_module("fuzz_invariants")


@pytest.fixture(scope="module")
def outputs():
    import contextlib  # capsys is per test; the two runs are made once, their stdout redirected
    import io

    out = {}
    for name, argv in {"train": ["train", "llama3-8b", "-H", "p5.48xlarge", "-n", "8", "--tp", "1", "--pp", "1"],
                       "serve": ["serve", "llama3-8b", "-H", "p5.48xlarge", "--qps", "20", "--requests", "60"]}.items():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(argv + ["--json"]) == 0
        out[name] = json.loads(buf.getvalue())
    return out


def test_real_results_keep_every_invariant(outputs):
    for name, data in outputs.items():
        assert fi.violation(data) is None, (name, fi.violation(data))
        assert fi.violation([{"row": data}]) is None  # nested in a list, as compare and search print them


@pytest.mark.parametrize("key,value,broken", [
    ("step_time_s", 1e-3, "step_time_s"), ("tokens", 1.0, "tokens"), ("chip_hours", 1.0, "chip_hours"),
    ("memory_gib", 1e6, "memory_breakdown_gib"), ("cost_usd", 1e9, "cost_usd"), ("time_to_train_days", 1e-3, "days"),
    ("mfu", 1.0, "mfu"), ("goodput", 1.5, "goodput"), ("expected_time_to_train_s", 1.0, "expected_time_to_train_s"),
    ("tokens_per_s_per_chip", 1.0, "tokens_per_s_per_chip")])
def test_each_training_invariant_fires(outputs, key, value, broken):
    d = copy.deepcopy(outputs["train"])
    d[key] = value
    bad = fi.violation(d)
    assert bad and broken in bad, bad


@pytest.mark.parametrize("key,part,value,broken", [
    ("ttft_s", "p50", 1e6, "ttft_s"), ("e2e_s", "p90", 1e-9, "e2e_s"), ("tpot_s", "mean", 1e6, "tpot_s"),
    ("ttft_s_low", "p99", 1e6, "ttft_s.p99"), (None, "completed", 10**6, "completed"),
    (None, "output_tokens_per_s", 1e12, "output_tokens_per_s"), (None, "slo_attainment", 1.5, "slo_attainment")])
def test_each_serving_invariant_fires(outputs, key, part, value, broken):
    d = copy.deepcopy(outputs["serve"])
    for k in ("ttft_s_low", "ttft_s_high", "e2e_s_low", "e2e_s_high", "tpot_s_low", "tpot_s_high",
              "output_tokens_per_s_low", "output_tokens_per_s_high", "slo_attainment_low", "slo_attainment_high"):
        if key is None or not key.endswith("_low"):
            d.pop(k, None)  # the interval check would name the value first
    (d[key] if key else d)[part] = value
    bad = fi.violation(d)
    assert bad and broken in bad, bad


def test_the_campaign_counts_a_broken_invariant_as_nonsense(outputs):
    camp = importlib.import_module("fuzz_campaign")
    d = copy.deepcopy(outputs["train"])
    d["fits"], d["memory_gib"] = True, d["memory_capacity_gib"] * 2
    d["memory_breakdown_gib"] = {"weights": d["memory_gib"]}
    _, verdict = camp._json_verdict(json.dumps(d))
    assert verdict and verdict[0] == "nonsense" and "fits" in verdict[1], verdict
    assert camp._json_verdict(json.dumps(outputs["train"]))[1] is None


def test_one_batch_latencies_come_in_order():
    d = {"prefill_s": 0.01, "ttft_s": 0.02, "tpot_s": 0.005, "e2e_latency_s": 0.6}
    assert fi.violation(d) is None
    assert "ttft_s" in fi.violation({**d, "ttft_s": 1.0}) and "prefill_s" in fi.violation({**d, "prefill_s": 0.03})


def test_a_faster_chip_that_is_slower_is_nonsense(tmp_path):
    pairs = importlib.import_module("fuzz_pairs")
    argv = [["train", "m", "-H", "chip.yaml", "--json"], ["train", "m", "-H", "faster.yaml", "--json"]]
    out = lambda a, b: json.dumps({"step_time_s": a}) + pairs.SEPARATOR + json.dumps({"step_time_s": b})  # noqa: E731
    assert pairs.verdict(argv, out(2.0, 1.0)) is None and pairs.verdict(argv, out(2.0, 2.0)) is None
    assert pairs.verdict(argv, out(1.0, 2.0))[0] == "nonsense"
    assert pairs.verdict(argv, "error" + pairs.SEPARATOR + "{}") is None  # a refusal is classified as any run's
    assert pairs._scaled("3.35 TB/s", 2) == "6.7 TB/s"


def test_the_nonsense_detector_passes_amds_product_names_and_catches_numbers():
    """'Infinity Fabric' and 'Infinity Cache' (the catalog's MI300X/MI355X notes) are names, not a printed infinity."""
    import importlib
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    campaign = importlib.import_module("fuzz_campaign")
    assert not campaign.NONSENSE.search("sram unknown  Infinity Cache size not confirmed")
    assert not campaign.NONSENSE.search("links: Infinity Fabric")
    assert campaign.NONSENSE.search("step time inf s") and campaign.NONSENSE.search("MFU nan%")
