"""Ring all-gather / reduce-scatter latency across nodes: one ring over all n ranks, n - 1 steps, each paying
the latency of the tier it crosses (NCCL's ring model, src/graph/tuning.cc)."""

import pytest

from flopcast import catalog
from flopcast.cost import comm
from flopcast.cost.comm import Collective
from flopcast.model.strategy import ERA_2021_SOFTWARE, Layout, LayoutBatch, Recompute, Sharding
from flopcast.model.system import Dtype
from flopcast.simulate import training


@pytest.fixture
def p5():
    return catalog.system_for("p5.48xlarge")


def _latency(kind, n, system, cal):
    return float(comm.collective_time(kind, 0.0, n, 1, system, cal))


@pytest.mark.parametrize("kind", [Collective.ALL_GATHER, Collective.REDUCE_SCATTER])
def test_ring_across_nodes_takes_n_minus_1_steps(p5, kind):
    cal = catalog.calibration()
    nvswitch, efa = (t.latency for t in p5.tiers)
    # 4 nodes of 8: 31 steps, 3 of them from one node into the next
    assert _latency(kind, 32, p5, cal) == pytest.approx(28 * nvswitch + 3 * efa, rel=1e-9)
    # within one node the ring is the node's own: 7 steps
    assert _latency(kind, 8, p5, cal) == pytest.approx(7 * nvswitch, rel=1e-9)


def test_ring_latency_grows_with_every_rank_not_only_every_node(p5):
    cal = catalog.calibration()
    nvswitch, efa = (t.latency for t in p5.tiers)
    per_node = _latency(Collective.ALL_GATHER, 1024, p5, cal) - _latency(Collective.ALL_GATHER, 512, p5, cal)
    assert per_node == pytest.approx(512 * nvswitch + (64 - 0) * (efa - nvswitch), rel=1e-9)


def test_all_reduce_across_switches_stays_a_tree(p5):
    cal = catalog.calibration()
    nvswitch, efa = (t.latency for t in p5.tiers)
    assert _latency(Collective.ALL_REDUCE, 64, p5, cal) == pytest.approx(2 * (3 * nvswitch + 3 * efa), rel=1e-9)


def test_zero3_per_tensor_gathers_make_deepspeed_2021_slower_as_dp_grows():
    """Narayanan et al. 2021 Table 2: GPT-3 175B under ZeRO-3, one micro-batch per step, ran the same step time
    at 768 GPUs (micro-batch 2) as at 1536 (micro-batch 1), though each GPU computes half as much: the per-tensor
    gathers' ring latency doubles with the ranks. Per sequence, the 1536-GPU layout must be clearly slower."""
    model, system, cal = catalog.load_model("gpt3-175b"), catalog.system_for("a100-80gb"), catalog.calibration()

    def step(dp, mb):
        lay = Layout(tp=1, pp=1, dp=dp, micro_batch=mb, global_batch=1536, recompute=Recompute.FULL,
                     sharding=Sharding.ZERO3, sequence_parallel=False, dtype=Dtype.FP16)
        res = training.evaluate(model, system, LayoutBatch.of([lay]), cal, software=ERA_2021_SOFTWARE)
        return float(res["step_time_s"][0]), float(res["time_parts"]["comm/dp"][0])

    (t768, c768), (t1536, c1536) = step(768, 2), step(1536, 1)
    assert c1536 > c768
    assert t1536 > 0.7 * t768  # half the compute per GPU, yet far from half the step time


@pytest.mark.parametrize("system", ["trn1.32xlarge", "inf2.48xlarge", "trn2.48xlarge"])
def test_neuronlink_runs_small_collectives_as_a_mesh(system):
    """Under the tier's mesh_below (1 MB on NeuronLink, Neuron docs "Intra-node Collective Communications") an
    all-reduce is a reduce-scatter and an all-gather of one step each, whatever the ranks: a decode step's 8 KB
    all-reduce pays two hops on 4 chips and on 16; from 1 MB on, each phase takes the torus's or ring's steps."""
    s, cal = catalog.system_for(system), catalog.calibration()
    link = s.tiers[0]
    assert link.mesh_below == 1e6

    def expected(nbytes, n, rounds):
        bw = comm.tier_bandwidth(link, cal) * float(comm._topology_factor(link, n))
        return 2 * ((n - 1) / n * nbytes / bw + rounds * link.latency)

    for n in (4, link.size):
        assert float(comm.collective_time(Collective.ALL_REDUCE, 8192.0, n, 1, s, cal)) == pytest.approx(
            expected(8192.0, n, 1))
        ring = float(comm._latency_rounds(link, n))
        assert ring >= 2
        assert float(comm.collective_time(Collective.ALL_REDUCE, 2e6, n, 1, s, cal)) == pytest.approx(
            expected(2e6, n, ring))


def test_a_tier_without_mesh_keeps_its_ring_at_every_size(p5):
    cal = catalog.calibration()
    assert all(t.mesh_below == 0 for t in p5.tiers)
    nvswitch = p5.tiers[0].latency
    assert _latency(Collective.ALL_GATHER, 8, p5, cal) == pytest.approx(7 * nvswitch, rel=1e-9)
