"""validation/published_training_runs.csv, the holdout of published training runs outside the calibration files:
every row is read and predicted, with the one layout flopcast cannot yet express named by its reason. This checks
that the file validates, not how close the predictions are (README, Accuracy, reports that)."""

import csv
from pathlib import Path

from flopcast import catalog
from flopcast.validate import training as vt

HOLDOUT = vt.VALIDATION_DIR / "published_training_runs.csv"
# every row is predicted (p-19, PP 16 x VP 8 for 126 layers, through the embedding's and the loss's pipeline slots)
KNOWN_GAPS: dict = {}


def test_every_holdout_row_is_predicted_or_names_a_known_gap():
    rows = vt.run_validation(HOLDOUT, catalog.calibration())
    with open(HOLDOUT, newline="") as f:
        assert len(rows) == sum(1 for _ in csv.DictReader(f))
    skipped = {r.run_id: r.reason for r in rows if r.status != "ok"}
    assert skipped.keys() == KNOWN_GAPS.keys(), skipped
    assert all(KNOWN_GAPS[k] in why for k, why in skipped.items())
    assert all(r.predicted > 0 and r.measured > 0 for r in rows if r.status == "ok")


def test_the_embedding_and_the_loss_each_take_a_pipeline_slot():
    # Megatron-Core --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split: 126 layers + 2
    # slots fill pp 16 x vp 8; one slot more does not fit
    import numpy as np

    from flopcast.model.strategy import Schedule
    from flopcast.plan.rules import PIPELINE_SLOTS_RULE, expanded_rules

    model = catalog.load_model("llama3-405b")
    pp, vp = np.array([16, 16, 8]), np.array([8, 9, 16])
    sched = np.full(3, int(Schedule.INTERLEAVED))
    ok = expanded_rules(model, np.full(3, 4), pp, vp, sched, np.ones(3, dtype=int))[PIPELINE_SLOTS_RULE]
    assert model.layers == 126 and ok.tolist() == [True, False, True]


def test_the_holdout_is_not_calibrated_on():
    assert "published_training_runs.csv" not in vt.SHIPPED["training"]
    assert [p.name for p in vt.resolve_files("published_training_runs")] == ["published_training_runs.csv"]
    data = Path(catalog.__file__).parent / "data"
    for fitted in ("calibration.yaml", "uncertainty.yaml"):
        assert "published_training_runs" not in (data / fitted).read_text()


def test_a_blank_cell_comes_from_the_relative_agreeing_with_the_stated_cells():
    # Llama 2 7B and Llama 3 8B share 32 layers of hidden 4096 and 32 heads; the stated GQA, FFN and vocabulary
    # are Llama 3's, so its 8,192-token sequence fills the blank seq_len
    row = {"run_id": "x", "source": "Someone-2025", "model": "my-8b", "layers": "32", "hidden": "4096", "heads": "32",
           "kv_heads": "8", "ffn_hidden": "14336", "vocab": "128256", "mlp": "swiglu"}
    model, said = vt.model_and_assumptions(row)
    assert model.seq_len == 8192 and any("llama3-8b" in s for s in said)
    model, said = vt.model_and_assumptions({**row, "kv_heads": "32", "ffn_hidden": "11008", "vocab": "32000"})
    assert model.seq_len == 4096 and any("llama2-7b" in s for s in said)


def test_torchtitan_h100_rows_run_on_the_grand_teton_part_their_source_describes():
    # torchtitan benchmarks: 96 GB HBM2e at 2.4 TB/s, 500 W power limit, 8 GPUs per host, 400 Gb/s RDMA per GPU
    chip = catalog.load_chip("h100-sxm-96gb")
    assert (chip.memory, chip.memory_bandwidth, chip.power) == (96e9, 2.4e12, 500.0)
    system = catalog.load_system(chip.default_system)
    assert system.chips_per_node == 8 and system.tiers[-1].bandwidth == 400e9 / 8
    with open(HOLDOUT, newline="") as f:
        titan = [r for r in csv.DictReader(f) if r["source"] in ("torchtitan-2024-12", "torchtitan-2025-06")]
    assert len(titan) == 19 and {r["hardware"] for r in titan} == {"h100-sxm-96gb"}
