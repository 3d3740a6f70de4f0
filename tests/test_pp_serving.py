"""Pipeline-parallel serving: tp x pp chips per replica, pp batches in flight (vLLM virtual engines), the
activations sent between stages, the decode bubble when fewer batches than stages are busy."""

import numpy as np
import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.cost.comm import tier_bandwidth
from flopcast.emit.engines import vllm_serve
from flopcast.errors import FlopcastError
from flopcast.plan import deploy as D
from flopcast.simulate import serving as S


@pytest.fixture(scope="module")
def p5():
    return catalog.system_for("p5.48xlarge")


@pytest.fixture(scope="module")
def m70():
    return catalog.load_model("llama3-70b")


def test_chips_memory_and_price(m70, p5):
    d = inf.deployment(m70, p5, tp=4, pp=2)
    assert (d.chips, d.replicas, d.virtual_engines) == (8, 1, 2)
    assert d.memory_capacity == 8 * p5.chip.memory
    assert d.price_per_hour == pytest.approx(p5.price_per_hour)
    assert d.compute_rate == pytest.approx(inf.deployment(m70, p5, chips=4, tp=4).compute_rate)  # one stage at a time


def test_stage_to_stage_sends_by_hand(m70, p5):
    """16 decode tokens x 8192 hidden x 2 bytes cross 1 stage boundary inside the node (NVSwitch)."""
    d = inf.deployment(m70, p5, tp=4, pp=2)
    _, parts = inf.step_time(d, 16.0, 16.0, 16 * 600.0, 16 * 600.0)
    nv = p5.tiers[0]
    assert float(parts["comm/pp"]) == pytest.approx(16 * 8192 * 2 / tier_bandwidth(nv, d.calibration) + nv.latency)
    over = inf.deployment(m70, p5, chips=16, tp=8, pp=2)  # one stage per instance: EFA between them
    _, far = inf.step_time(over, 16.0, 16.0, 16 * 600.0, 16 * 600.0)
    assert float(far["comm/pp"]) > 5 * float(parts["comm/pp"])


def test_two_batches_in_flight_and_the_bubble(m70, p5):
    """One request alone decodes at the full pass (both stages in turn); under load two batches flow, so the
    replica serves close to twice what one batch at a time would, with half the KV cache each."""
    d = inf.deployment(m70, p5, tp=4, pp=2)
    sim = S.Simulation(d, S.poisson_requests(1.0, np.random.default_rng(0), n=10), S.ServingConfig(), None, 0, False)
    assert len(sim.replicas) == 2 and sim.cap == inf.kv_capacity_tokens(d) // 2
    lone = S.simulate(d, S.poisson_requests(0.01, np.random.default_rng(0), n=1, input_tokens="512",
                                            output_tokens="64"))
    t_pass, _ = inf.step_time(d, 1.0, 1.0, 512 + 32, 512 + 32)
    assert lone.tpot_s["p50"] == pytest.approx(float(t_pass), rel=0.05)
    burst = S.poisson_requests(1e4, np.random.default_rng(0), n=512, input_tokens="512", output_tokens="64")
    cfg = S.ServingConfig(max_seqs=32)

    def served(engines):
        sim = S.Simulation(d, burst, cfg, None, 0, False)
        sim.replicas = sim.replicas[:engines]  # one engine: a single batch in the pipeline (all bubble)
        sim.run()
        return S.summarize(d, burst, cfg, sim.outcome()).output_tokens_per_s

    assert 1.7 < served(2) / served(1) < 2.05


def test_pp_refuses_what_it_cannot_be(m70, p5):
    with pytest.raises(FlopcastError, match="--pp must be between"):
        inf.deployment(m70, p5, tp=1, pp=81)
    with pytest.raises(FlopcastError, match="--tp must be a positive divisor"):
        inf.deployment(m70, p5, chips=8, tp=3, pp=2)


def test_deploy_searches_pipelines(p5):
    layouts = {(c.tp, c.pp, c.instances_per_replica) for c in D.candidates(p5, ("bf16",), ("bf16",), (64,))}
    assert {(4, 2, 1), (2, 4, 1), (8, 2, 2), (8, 4, 4)} <= layouts
    m405 = catalog.load_model("llama3-405b")
    c = next(c for c in D.candidates(p5, ("bf16",), ("bf16",), (64,)) if (c.tp, c.pp) == (8, 2))
    bound, d = D.roofline_bound(m405, p5, c, 512, 128, S.ServingConfig(slo_ttft_s=5, slo_tpot_s=0.2))
    assert bound is not None and bound.bound_qps > 0 and d.chips == 16  # 810 GB of bf16 over two instances
    assert "--pipeline-parallel-size 2" in vllm_serve(d).render()
