"""Speculative decoding (cost/inference/speculation.py): Leviathan et al.'s expected tokens, the direction
and rough size of the speedups the method papers report, in infer and in the serving simulation."""

import numpy as np
import pytest

from flopcast import api, catalog
from flopcast.cli import main
from flopcast.cost import inference as inf
from flopcast.cost.inference.speculation import Method, Speculation, speculation
from flopcast.errors import FlopcastError
from flopcast.simulate import serving as S


def test_expected_tokens_per_pass():
    assert Speculation(Method.EAGLE, 4, 0.75).expected_tokens == pytest.approx((1 - 0.75 ** 5) / 0.25)  # 3.05
    assert Speculation(Method.MTP, 1, 0.85).expected_tokens == pytest.approx(1.85)
    assert Speculation(Method.DRAFT, 3, 0.0).expected_tokens == pytest.approx(1.0)


def _tpot(batch, method=None):
    return api.infer("llama3-8b", "p5.48xlarge", chips=1, batch=batch, speculative=method).prediction.tpot_s


def test_speedups_match_the_papers_direction_and_size():
    # DeepSeek-V3 (sec. 5.4.3): MTP with one extra token at 85-90% acceptance gives 1.8x tokens per second
    assert 1.5 < _tpot(1) / _tpot(1, "mtp") < 1.9
    # EAGLE (Li et al. 2024): 2.7-3.5x at batch 1 with tree drafts; a chain of 4 gets less, still > 1.8x
    eagle_1 = _tpot(1) / _tpot(1, "eagle")
    assert 1.8 < eagle_1 < 3.5
    # speculation spends compute that large batches no longer have spare: the gain shrinks with the batch
    assert 1.0 < _tpot(128) / _tpot(128, "eagle") < eagle_1


def test_serving_simulation_decodes_faster_with_speculation():
    m, s = catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge")
    reqs = S.poisson_requests(2.0, np.random.default_rng(0), n=60)
    cfg = S.ServingConfig(slo_ttft_s=2.0, slo_tpot_s=0.05)
    plain = S.simulate(inf.deployment(m, s, chips=1), reqs, cfg)
    spec = S.simulate(inf.deployment(m, s, chips=1, speculation=speculation("eagle")), reqs, cfg)
    assert 1.5 < plain.tpot_s["p50"] / spec.tpot_s["p50"] < 3.5
    assert spec.ttft_s["p50"] <= plain.ttft_s["p50"] * 1.05  # prefill is untouched


def test_bad_speculation_is_one_line():
    with pytest.raises(FlopcastError, match="valid: draft, eagle, medusa, mtp"):
        speculation("lookahead")
    with pytest.raises(FlopcastError, match="acceptance"):
        speculation("eagle", alpha=1.5)
    assert main(["infer", "llama3-8b", "-H", "p5.48xlarge", "--spec-tokens", "3"]) == 2
