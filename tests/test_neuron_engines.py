"""NeuronCore-v2 serving engines by software stack, and a static batch on the shapes an engine compiled."""

import csv

import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.validate import benchmark as vb
from flopcast.validate import inference as vi
from flopcast.validate import training as vt


def _row(run_id):
    with open(vt.VALIDATION_DIR / "more_inference_runs.csv", newline="") as f:
        return next(r for r in csv.DictReader(f) if r["run_id"] == run_id)


@pytest.mark.parametrize("system, engine, family", [
    ("inf2.48xlarge", "transformers-neuronx", "transformers-neuronx"),
    ("trn1.32xlarge", "transformers-neuronx (LMI)", "transformers-neuronx"),
    ("inf2.48xlarge", "TGI neuron (latest-neuron image), guidellm", "neuronx"),
    ("inf2.48xlarge", "optimum-neuron 0.3.0.dev5 NeuronModelForCausalLM", "neuronx"),
    ("inf2.48xlarge", None, "neuronx"),
    ("trn2.48xlarge", "transformers-neuronx", "neuronx-v3"),
])
def test_neuroncore_v2_engines_are_split_by_software_stack(system, engine, family):
    assert inf.engine_family(engine, catalog.load_system(system)) == family


def test_the_shipped_serving_fit_has_one_family_per_neuroncore_v2_stack():
    # each stack's family is fitted on its own sources only
    sources = catalog.load_yaml((catalog.DATA / "inference_calibration.yaml").read_text())["provenance"][
        "sources_per_family"]
    assert all("HF-optimum-neuron" in s for s in sources["neuronx"])
    assert sources["transformers-neuronx"] and not any("HF-" in s for s in sources["transformers-neuronx"])
    table = inf.load_inference_calibration()
    assert table["neuronx"] != table["transformers-neuronx"]


def test_a_static_batch_on_compiled_shapes_encodes_each_prompt_padded_alone():
    # optimum-neuron's docs benchmark: 48 prompts of 1,024 tokens, one 4,096-token context-encoding graph taking one
    # prompt, a 4,096-position decode graph (the row's context_buckets and max_seq_len)
    row = _row("di-33")
    assert (row["batch"], row["input_tokens"], row["context_buckets"], row["max_seq_len"]) == ("48", "1024", "4096",
                                                                                              "4096")
    d, b, i, o, _ = vi.configure(row)
    figures, note = vb.static_batch(d, row, b, i, o)
    one = float(inf.prefill_time(d, 1, 4096)[0]) + d.efficiency.request_overhead_s
    assert figures["ttft_ms"] == pytest.approx(48 * one * 1e3)
    assert figures["tpot_ms"] == pytest.approx(float(inf.decode_time(d, 48, 4096)[0]) * 1e3)
    assert "4096-token context-encoding graph" in note
    # without the compiled shapes the row is the roofline's batch of fixed shape: the prompts unpadded
    assert vb.static_batch(d, {**row, "context_buckets": ""}, b, i, o) is None
    assert vi.predict_row({**row, "context_buckets": ""})[0]["ttft_ms"] < figures["ttft_ms"] / 2
