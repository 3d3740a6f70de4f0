"""Mechanisms behind the serving holdout (validation/published_inference_runs.csv), each checked without the
measured figures: what the source ran, read from its code or its row, changes the prediction in the stated way."""

import csv

import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.validate import training as vt

HOLDOUT = vt.VALIDATION_DIR / "published_inference_runs.csv"


def _rows():
    with open(HOLDOUT, newline="") as f:
        return list(csv.DictReader(f))


def test_mistral_v02_rows_attend_to_the_whole_context():
    # The Neuron tables ran Mistral-7B-Instruct-v0.2, whose config has no sliding window (sliding_window: null);
    # v0.1's 4,096-token window would cap the KV each decode step reads at an 8,192-token context.
    v02 = [r for r in _rows() if "Mistral-7B-Instruct-v0.2" in r["notes"]]
    assert len(v02) == 8 and {r["model"] for r in v02} == {"mistral-7b-v0.2"}
    old, new = catalog.load_model("mistral-7b"), catalog.load_model("mistral-7b-v0.2")
    assert old.sliding_window and not new.sliding_window
    assert (old.layers, old.hidden, old.kv_heads, old.ffn_hidden) == (new.layers, new.hidden, new.kv_heads,
                                                                      new.ffn_hidden)
    system = catalog.load_system("inf2.48xlarge")
    t_old, _ = inf.decode_time(inf.deployment(old, system), 8, 16384)
    t_new, _ = inf.decode_time(inf.deployment(new, system), 8, 16384)
    assert float(t_new) > 1.2 * float(t_old)
    t_old, _ = inf.decode_time(inf.deployment(old, system), 8, 2048)
    t_new, _ = inf.decode_time(inf.deployment(new, system), 8, 2048)
    assert float(t_new) == pytest.approx(float(t_old))  # inside the window the two are the same model
