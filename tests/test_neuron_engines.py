"""NeuronCore-v2 serving engines by software stack, and a static batch on the shapes an engine compiled."""

import csv
from dataclasses import replace

import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.validate import benchmark as vb
from flopcast.validate import inference as vi
from flopcast.validate.fitparams import MISSING_SCIPY
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


def test_a_serving_fit_draws_a_family_towards_the_hardware_share_its_kind_reaches():
    """fit_prior: partial pooling of the hardware fractions within a kind. A kin engine reaching 0.3 of compute on
    chips whose known fraction is 0.6 reaches half of its hardware; on chips of fraction 1.0 the prior is then 0.5.
    Software costs keep PRIORS, and a family whose kind has nothing fitted (or another kind) keeps PRIORS whole."""
    kin = replace(inf.PRIORS["neuronx"], compute=0.3, memory=0.4, compute_basis=0.6, memory_basis=0.8)
    prior = inf.fit_prior({"neuronx": kin}, "neuronx-v3", (1.0, 0.92))
    assert prior.compute == pytest.approx(0.5) and prior.memory == pytest.approx(0.46)
    assert prior.layer_overhead_s == inf.PRIORS["neuronx-v3"].layer_overhead_s
    assert inf.fit_prior({}, "neuronx-v3", (1.0, 0.92)) == inf.PRIORS["neuronx-v3"]
    assert inf.fit_prior({"neuronx": kin}, "gpu", (0.7, 0.7)) == inf.PRIORS["gpu"]
    assert inf.fit_prior({"neuronx": replace(kin, compute=0.9)}, "neuronx-v3", (1.0, 0.92)).compute == 1.0  # capped


def test_the_serving_fit_anchors_each_kind_on_its_best_measured_family(monkeypatch):
    """fit_families fits the family with the most rows first (towards PRIORS) and the others of its kind towards
    what it reached: the prior each _fit_family call receives says so."""
    seen = {}

    def fake(fam, mine, start=None, memo=None, prior=None):
        seen[fam] = prior
        return replace(prior, compute=0.25 if fam == "neuronx" else prior.compute)

    monkeypatch.setattr(vi, "_fit_family", fake)
    rows = vi._fit_rows("inference")
    table = vi.fit_families(rows)
    counts = {}
    for r in rows:
        d = vi.configure(r, {})[0]
        counts[d.family] = counts.get(d.family, 0) + 1
    assert max(counts, key=counts.get) == "neuronx" and seen["neuronx"] == inf.PRIORS["neuronx"]
    share = 0.25 / table["neuronx"].compute_basis
    v3 = table["neuronx-v3"]
    assert seen["neuronx-v3"].compute == pytest.approx(min(1.0, share * v3.compute_basis))
    assert seen["gpu"] == inf.PRIORS["gpu"]


@pytest.mark.parametrize("argv", [["calibrate", "inference", "--out", "x.yaml"],
                                  ["validate", "inference", "--cross-validate", "--json"]])
def test_the_serving_fit_without_scipy_is_one_line_naming_the_extra(argv, monkeypatch, capsys, tmp_path):
    """scipy is the `calibrate` extra (pyproject.toml), not a core dependency: without it the serving fit says so in
    one line, exit 2, instead of a traceback (found from a fresh clone with `pip install -e .` alone)."""
    import sys

    from flopcast.cli import main

    monkeypatch.setitem(sys.modules, "scipy.optimize", None)  # import raises ImportError
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.err == f"error: {MISSING_SCIPY}\n" and out.out == ""
    assert not (tmp_path / "x.yaml").exists()
