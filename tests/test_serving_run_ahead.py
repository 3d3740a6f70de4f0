"""Running plain decode steps ahead of the event queue (Simulation.run_ahead) gives exactly the results and event
log of one event per batch iteration, for every scheduler, routing, replica count and the features built on them
(static shapes, speculation, prefix caching, closed loops, disaggregated pools)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.cost.inference.speculation import Method, Speculation
from flopcast.simulate import serving as S
from flopcast.simulate.serving.closed_loop import ClosedLoop
from flopcast.simulate.serving.simulation import Simulation


@pytest.fixture(scope="module")
def deployments():
    m8, p5 = catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge")
    return {"gpu": inf.deployment(m8, p5, chips=1),
            "eagle": inf.deployment(m8, p5, chips=1, speculation=Speculation(Method.EAGLE, 4, 0.75)),
            "neuron": inf.deployment(catalog.load_model("llama3-70b"), catalog.load_system("inf2.48xlarge"),
                                     chips=12),
            "pp": inf.deployment(m8, p5, chips=2, tp=1, pp=2)}


def _both(monkeypatch, run, *args, **kwargs):
    """(one event per iteration, run ahead) results of the same call, with their event logs."""
    out = []
    for ahead in (False, True):
        monkeypatch.setattr(Simulation, "run_ahead_steps", ahead)
        r = run(*args, **kwargs)
        out.append((r.to_dict(), r.events))
    return out


def _requests(seed: int, qps: float, n: int = 100):
    return S.poisson_requests(qps, np.random.default_rng(seed), n=n, input_tokens="lognormal:1500:1.0",
                              output_tokens="lognormal:300:0.8")


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("scheduler", list(S.Scheduler))
def test_open_loop_runs_equal_one_event_per_step(deployments, monkeypatch, seed, scheduler):
    reqs = _requests(seed, 25.0, n=40 if scheduler == S.Scheduler.STATIC else 100)  # static: a long drain
    for name, d in deployments.items():
        for replicas, routing in ((1, S.Routing.LEAST_LOADED), (3, S.Routing.ROUND_ROBIN)):
            cfg = S.ServingConfig(scheduler=scheduler, replicas=replicas, routing=routing, max_seqs=48,
                                  prefix_tokens=64 * seed)
            slow, fast = _both(monkeypatch, S.simulate, d, reqs, cfg, seed=seed, record=True)
            assert fast == slow, (name, replicas, routing)
    if scheduler == S.Scheduler.CONTINUOUS:  # TGI's router: waiting prompts join in groups
        cfg = S.ServingConfig(replicas=2, waiting_served_ratio=0.3, max_waiting_tokens=20)
        slow, fast = _both(monkeypatch, S.simulate, deployments["gpu"], reqs, cfg, seed=seed, record=True)
        assert fast == slow


@pytest.mark.parametrize("seed", [0, 1])
def test_static_shapes_disaggregated_and_closed_loops_equal(deployments, monkeypatch, seed):
    reqs = _requests(seed, 40.0)
    gpu, neuron = deployments["gpu"], deployments["neuron"]
    static = S.ServingConfig(static_batch=8, static_seq_len=4096)
    slow, fast = _both(monkeypatch, S.simulate, neuron, reqs, static, seed=seed, record=True)
    assert fast == slow
    for scheduler in (S.Scheduler.CONTINUOUS, S.Scheduler.CHUNKED):
        pd = S.disaggregated(gpu, gpu, 2, 3)
        cfg = S.ServingConfig(scheduler=scheduler, max_seqs=24)
        slow, fast = _both(monkeypatch, S.simulate_any, pd, reqs, cfg, seed=seed, record=True)
        assert fast == slow, scheduler
    inp, out = reqs.input_tokens, reqs.output_tokens
    for clients in (1, 16):
        cfg = S.ServingConfig(replicas=2, scheduler=S.Scheduler.CHUNKED)
        slow, fast = _both(monkeypatch, S.closed_loop, gpu, clients, inp, out, cfg, seed=seed)
        assert fast == slow, clients


def test_run_ahead_saves_events_not_iterations(deployments, monkeypatch):
    """The same batch iterations are simulated, with far fewer events on the queue."""
    reqs = _requests(0, 4.0, n=80)
    counts = {}
    for ahead in (False, True):
        monkeypatch.setattr(Simulation, "run_ahead_steps", ahead)
        sim = Simulation(deployments["gpu"], reqs, S.ServingConfig(replicas=2), None, 0, False)
        sim.run()
        counts[ahead] = (sim.outcome().iterations, sim.engine.processed)
    assert counts[True][0] == counts[False][0] > 1000
    assert counts[True][1] < counts[False][1] / 2


def _closed(d, clients, reqs, cfg, duration_s=math.inf):
    """A closed loop run directly: its per-request record, iterations, preemptions and the events it took."""
    sim = ClosedLoop(d, reqs, cfg, None, 0, False, 1.0, clients, duration_s)
    sim.run()
    o = sim.outcome()
    return (o.first_s, o.done_s, o.iterations, o.preemptions, sim.arr), sim.engine.processed


@pytest.mark.parametrize("seed", [0, 1])
def test_closed_loops_of_several_replicas_run_ahead_to_the_next_possible_finish(deployments, monkeypatch, seed):
    """A closed loop's request arrives only when one finishes: a replica runs its decode steps ahead of the other
    replicas' pending iterations up to the earliest time one of them could finish a request (ClosedLoop.horizon),
    and repeats a static shape's step while nothing can change it (Simulation.repeat_steps): the same record as one
    event per step, in fewer events."""
    reqs = _requests(seed, 40.0, n=300)
    gpu, neuron = deployments["gpu"], deployments["neuron"]
    tight = inf.deployment(catalog.load_model("llama3-70b"), catalog.load_system("p5.48xlarge"), chips=2, tp=2)
    small = inf.deployment(catalog.load_model("llama3-70b"), catalog.load_system("inf2.24xlarge"), chips=6)
    static = {"static_batch": 8, "static_seq_len": 4096}
    rr = S.Routing.ROUND_ROBIN
    cases = {
        "gpu round robin": (gpu, S.ServingConfig(replicas=3, routing=rr, max_seqs=24), 60, math.inf),
        "gpu least loaded": (gpu, S.ServingConfig(replicas=2, max_seqs=16), 20, math.inf),
        "neuron static shapes": (neuron, S.ServingConfig(replicas=3, routing=rr, max_seqs=8, **static), 30, 60.0),
        "neuron buckets": (neuron, S.ServingConfig(replicas=2, routing=rr, max_seqs=8, context_buckets=(1024, 4096),
                                                   **static), 12, math.inf),
        "tgi router": (neuron, S.ServingConfig(replicas=3, routing=rr, max_seqs=8, waiting_served_ratio=0.3,
                                               max_waiting_tokens=20, **static), 40, 60.0),
        "static batching": (neuron, S.ServingConfig(scheduler=S.Scheduler.STATIC, replicas=2, max_seqs=8,
                                                    **static), 20, math.inf),
        "neuron kv full": (small, S.ServingConfig(replicas=2, routing=rr, max_seqs=8, static_seq_len=4096), 16,
                           math.inf),
        "preempting": (tight, S.ServingConfig(replicas=2, routing=rr), 200, math.inf),
    }
    events = {}
    for name, (d, cfg, clients, duration) in cases.items():
        runs = {}
        for ahead in (False, True):
            monkeypatch.setattr(Simulation, "run_ahead_steps", ahead)
            runs[ahead] = _closed(d, clients, reqs, cfg, duration)
        (slow, slow_events), (fast, fast_events) = runs[False], runs[True]
        assert fast == slow, name
        monkeypatch.setattr(ClosedLoop, "horizon", lambda self, rep: -math.inf)  # no look ahead: each step after
        _, events[name] = _closed(d, clients, reqs, cfg, duration)  # another replica's pending end an event
        monkeypatch.undo()
        assert fast_events <= events[name] < slow_events, name
    assert runs[True][0][3] > 0  # the preempting case preempts (and looks ahead only until it does)
    for name in ("neuron static shapes", "tgi router"):
        d, cfg, clients, duration = cases[name]
        _, ahead = _closed(d, clients, reqs, cfg, duration)
        assert ahead < events[name] / 2, name
