"""Prefix caching in the serving simulation: a cached shared prefix is not prefilled again and its KV is held
once per replica (vLLM automatic prefix caching; SGLang RadixAttention, Zheng et al. 2024)."""

import numpy as np

from flopcast import api, catalog
from flopcast.cli import main
from flopcast.cost import inference as inf
from flopcast.simulate import serving as S


def _run(prefix, qps, n=150, max_seqs=256):
    d = inf.deployment(catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge"), chips=1)
    reqs = S.poisson_requests(qps, np.random.default_rng(0), n=n, input_tokens="2048", output_tokens="64")
    return S.simulate(d, reqs, S.ServingConfig(prefix_tokens=prefix, max_seqs=max_seqs))


def test_cached_prefix_cuts_ttft_not_tpot():
    cold, warm = _run(0, 2.0), _run(1792, 2.0)  # 7/8 of a 2048-token prompt shared (a long system prompt)
    # prefill work falls ~8x: unloaded TTFT falls by well over half (SGLang reports up to 6.4x throughput)
    assert warm.ttft_s["p50"] < 0.5 * cold.ttft_s["p50"]
    assert warm.tpot_s["p50"] <= cold.tpot_s["p50"] * 1.02


def test_cached_prefix_raises_what_a_loaded_replica_serves():
    cold, warm = _run(0, 40.0, n=400), _run(1792, 40.0, n=400)
    assert warm.ttft_s["p90"] < cold.ttft_s["p90"]
    assert warm.makespan_s < cold.makespan_s


def test_prefix_tokens_through_api_and_cli():
    r = api.serve("llama3-8b", "p5.48xlarge", chips=1, qps=2, requests=30, prefix_tokens=256)
    assert r.config.prefix_tokens == 256
    assert main(["serve", "llama3-8b", "-H", "p5.48xlarge", "--qps", "2", "--prefix-tokens", "-1"]) == 2
