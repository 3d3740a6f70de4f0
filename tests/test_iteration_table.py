"""The iteration cost's dense table filled on first use (simulate/serving/iteration.py): every entry the very float
the whole table's array gives, a run computing a few chunks of it; and TGI's router, whose full batch or declined
group leaves only decode steps to run, runs them ahead as the other schedulers do, with the same figures."""

from __future__ import annotations

import numpy as np
import pytest

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.simulate import serving as S
from flopcast.simulate.serving import iteration as it
from flopcast.simulate.serving import schedulers
from flopcast.simulate.serving.closed_loop import ClosedLoop
from flopcast.simulate.serving.simulation import Simulation

CASES = {  # model, system, deployment options: dense, tensor-parallel, MoE on a static-shape engine, expert
    # parallel, pipeline, CPU
    "gpu tp": ("llama3-70b", "p5.48xlarge", {}),
    "neuron moe": ("qwen3-30b-a3b", "trn2.48xlarge", {"chips": 16, "tp": 16}),
    "ep": ("qwen3-30b-a3b", "p5.48xlarge", {"ep": 8}),
    "pp": ("llama3-8b", "p5.48xlarge", {"chips": 2, "tp": 1, "pp": 2}),
    "cpu": ("llama3-8b", "c7g.16xlarge", {"weights": "q4_0"}),
}


def _whole_table(d, size: int) -> list:
    """The table as one array over every token count (how it was computed before it was filled lazily)."""
    n = np.arange(size, dtype=float)
    zero = np.zeros_like(n)
    total, parts = inf.step_time(d, n, zero, zero, zero)
    return (np.asarray(total) - float(parts["logits"][0]) - np.asarray(parts["attention/core"])).tolist()


@pytest.mark.parametrize("case", list(CASES))
def test_lazy_table_entries_equal_the_whole_arrays(case):
    model, system, kw = CASES[case]
    d = inf.deployment(catalog.load_model(model), catalog.load_system(system), **kw)
    size = 3 * it.CHUNK + 5
    cost = it.IterationCost.of(d, size - 1)
    whole = _whole_table(d, size)
    order = [size - 1, 0, it.CHUNK + 3, 7, 2 * it.CHUNK, size - 2]  # chunks filled out of order
    assert [cost.dense[n] for n in order] == [whole[n] for n in order]
    assert list(cost.dense) == whole and len(cost.dense) == size
    half = cost.scaled(0.5)
    assert [half.dense[n] for n in order] == [t / 0.5 for t in (whole[n] for n in order)]  # speed 0.5: slower
    with pytest.raises(IndexError):
        cost.dense[size]


def test_a_run_fills_few_chunks(monkeypatch):
    d = inf.deployment(catalog.load_model("llama3-8b"), catalog.load_system("p5.48xlarge"), chips=1)
    filled = []
    real = it.DenseTable.__missing__

    def counted(self, n):
        filled.append(n)
        return real(self, n)

    monkeypatch.setattr(it.DenseTable, "__missing__", counted)
    sim = Simulation(d, S.Requests(np.zeros(40), np.full(40, 1000), np.full(40, 100)), S.ServingConfig(), None, 0,
                     False)
    sim.run()
    assert len(sim.cost.dense) == 8194 and 0 < len(filled) <= 10


def _tgi_stepped(monkeypatch):
    """The router as it ran before: never blocked, and each decode step an event of its own."""
    monkeypatch.setattr(Simulation, "blocked", lambda self, rep: (self.config.scheduler == S.Scheduler.STATIC or (
        not rep.joining and self.config.waiting_served_ratio <= 0 and (
            rep.n_dec >= self.max_seqs or rep.ctx_sum + rep.pre_kv + self.prompt[rep.waiting[0]] > self.cap))))
    monkeypatch.setattr(schedulers, "_router_declines", lambda sim, rep: False)


@pytest.mark.parametrize("clients", [8, 40])
def test_tgi_router_runs_its_decode_steps_ahead_with_the_same_figures(monkeypatch, clients):
    d = inf.deployment(catalog.load_model("llama3-8b"), catalog.load_system("inf2.48xlarge"), chips=4)
    rng = np.random.default_rng(0)
    i, o = rng.integers(900, 1100, 200), rng.integers(150, 250, 200)
    cfg = S.ServingConfig(max_seqs=16, static_batch=16, static_seq_len=2048, waiting_served_ratio=0.3,
                          max_waiting_tokens=20)
    runs = {}
    for ahead in (True, False):
        if not ahead:
            _tgi_stepped(monkeypatch)
        sim = ClosedLoop(d, S.Requests(np.zeros(len(i)), i, o), cfg, None, 0, False, 1.0, clients, 60.0)
        sim.run()
        runs[ahead] = S.closed_loop(d, clients, i, o, cfg, duration_s=60.0).to_dict(), sim.engine.processed
    (fast, fast_events), (slow, slow_events) = runs[True], runs[False]
    assert fast.keys() == slow.keys() and fast["completed"] > 50
    for k, v in slow.items():  # steps summed in closed form: equal but for rounding
        assert fast[k] == pytest.approx(v, rel=1e-12), k
    assert fast_events < slow_events / 2


@pytest.mark.parametrize("case", list(CASES))
def test_prefetched_entries_are_the_lazy_table_s(case):
    """IterationCost.of(prefetch=...) computes the chunks of the given entries with the logit layer's time, in one
    call of step_time: the same floats as computing each apart."""
    model, system, kw = CASES[case]
    d = inf.deployment(catalog.load_model(model), catalog.load_system(system), **kw)
    size = 3 * it.CHUNK + 5
    lazy = it.IterationCost.of(d, size - 1)
    want = [0, 5, 2 * it.CHUNK + 1, size - 1]
    ahead = it.IterationCost.of(d, size - 1, prefetch=want + [size + 10])  # (an entry past the table: ignored)
    computed = sorted(dict.keys(ahead.dense))
    assert computed == [n for n in range(size) if n // it.CHUNK in {w // it.CHUNK for w in want}]
    assert [ahead.dense[n] for n in computed] == [lazy.dense[n] for n in computed]
    assert (ahead.logit_bytes_s, ahead.logit_flop_s, ahead.attn_pair_s, ahead.attn_kv_s) == (
        lazy.logit_bytes_s, lazy.logit_flop_s, lazy.attn_pair_s, lazy.attn_kv_s)
    assert list(ahead.dense) == list(lazy.dense)
