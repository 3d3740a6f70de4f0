"""Disaggregated prefill and decode (xPyD): a prefill pool and a decode pool, each of its own size and layout,
joined by the fabric that carries each request's KV cache from one to the other.

DistServe (Zhong et al. 2024, OSDI, sec. 2-4) and Splitwise (Patel et al. 2024, ISCA, sec. 3-4) observe that a
colocated engine's decode steps stall behind every prefill iteration (vLLM v0 runs a prefill as its own iteration,
schedulers.continuous_iteration), so a tight TPOT target forces a low load; splitting the phases removes that
interference: the decode pool only ever decodes, and TTFT pays the KV-cache transfer instead
(cost/inference/transfer.py). This module runs both pools on one event engine:

- a request arrives at the prefill pool (least-loaded over its P replicas), is prefilled there by the continuous
  scheduler (which, with no decoders, only prefills), and its first token is computed;
- its KV cache goes to the least-loaded of the D decode replicas: the decode replica reserves the prompt's KV
  memory (FCFS, when it fits), and the transfer runs on that replica's link, one transfer after another;
- when the KV cache has arrived the first token is delivered (TTFT = queue + prefill + transfer) and the request
  joins the decoders at the replica's next step; decode replicas run decode steps only;
- a decoder the decode replica must preempt for memory goes back to the front of a prefill queue and is
  prefilled (prompt + generated tokens) and sent again (vLLM's recompute preemption, Kwon et al. 2023, sec. 4.5).

Deviation: the prefill replica frees a prompt's KV memory when its prefill ends (the copy it holds until the
transfer finishes is not counted; DistServe's decode instances pull the KV cache as soon as they have room).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

from ...cost import inference as inf
from ...cost.inference.transfer import KVLink, Placement, kv_link, kv_transfer_bytes, placement
from ...errors import FlopcastError
from ..events import Engine
from .budget import work_units
from .config import Scheduler, ServingConfig
from .metrics import Outcome, ServingResult, summarize
from .requests import Requests
from .schedulers import _decode, plain_continuous
from .simulation import END, Replica, Simulation, simulate


@dataclass(frozen=True)
class Disaggregated:
    """P prefill replicas of `prefill` and D decode replicas of `decode` (each a one-replica Deployment)."""

    prefill: inf.Deployment
    decode: inf.Deployment
    prefill_replicas: int
    decode_replicas: int
    link: KVLink
    placement: Placement

    @property
    def chips(self) -> int:
        return self.prefill_replicas * self.prefill.tp + self.decode_replicas * self.decode.tp

    @property
    def price_per_hour(self) -> float | None:
        s = self.prefill.system
        return None if s.price_per_hour is None else s.price_per_hour * self.chips / s.chips_per_node

    @property
    def label(self) -> str:
        return (f"{self.prefill_replicas}P{self.decode_replicas}D: prefill {self.prefill_replicas} x TP"
                f"{self.prefill.tp}, decode {self.decode_replicas} x TP{self.decode.tp}, KV over {self.link.tier}")

    def to_dict(self) -> dict:
        return {"prefill_replicas": self.prefill_replicas, "prefill_tp": self.prefill.tp,
                "decode_replicas": self.decode_replicas, "decode_tp": self.decode.tp, "chips": self.chips,
                "placement": self.placement.value, "kv_link": self.link.to_dict()}


def disaggregated(prefill: inf.Deployment, decode: inf.Deployment, prefill_replicas: int, decode_replicas: int,
                  where: Placement | None = None) -> Disaggregated:
    """The xPyD deployment; `where` the pools sit (default: one instance when their chips fit in it)."""
    if prefill_replicas < 1 or decode_replicas < 1:
        raise FlopcastError(f"--disaggregate needs at least one prefill and one decode replica, got "
                            f"{prefill_replicas}x{decode_replicas}")
    if prefill.is_cpu or decode.is_cpu:
        raise FlopcastError(f"--disaggregate applies to accelerators (NVLink, NeuronLink, EFA between the pools); "
                            f"{prefill.system.id} is a CPU instance")
    for role, d in (("prefill", prefill), ("decode", decode)):
        if inf.kv_capacity_tokens(d) < 1:
            raise FlopcastError(f"{d.model.label} in {d.weights.name} does not fit a {role} replica of tp {d.tp} on "
                                f"{d.system.id}: no memory left for a KV cache; use a larger --{role}-tp")
    if where is None:
        where = placement(prefill.system, prefill_replicas * prefill.tp, decode_replicas * decode.tp)
    return Disaggregated(prefill, decode, prefill_replicas, decode_replicas, kv_link(prefill, decode, where), where)


MAX_POOL = 1024  # replicas per pool at most (--disaggregate)


class DecodeReplica(Replica):
    __slots__ = ("ready", "link_free_s", "held")

    def __init__(self, idx):
        super().__init__(idx)
        self.ready = []  # requests whose KV cache has arrived, joining at the next step
        self.link_free_s = 0.0  # when the replica's incoming link finishes its queued transfers
        self.held = 0  # requests with KV memory reserved here, in transfer or ready


def decode_iteration(sim, rep, now: float):
    """A decode replica: start the transfers that fit, let the arrived requests join, one decode step of all."""
    sim.send(rep, now)
    if rep.ready:
        for r in rep.ready:
            rep.pre_kv -= sim.prompt[r]
            sim.enter(rep, r)
        rep.held -= len(rep.ready)
        rep.ready.clear()
    if rep.n_dec == 0:
        return ()
    sim.make_room(rep)
    return _decode(sim, rep, now)


def plain_decode_step(sim, rep):
    """decode_iteration's next step when it is a plain decode step (schedulers.PLAIN_DECODE): its seconds, else None."""
    return None if rep.ready else plain_continuous(sim, rep)


class DecodePool(Simulation):
    """The decode replicas; the per-request state is the prefill pool's (a request is in one pool at a time)."""

    SHARED = ("arr", "inp", "out", "cached", "prefix", "prompt", "gen", "start", "base", "epoch", "first", "done",
              "rejected", "engine", "events")

    def __init__(self, parent: PrefillPool, pd: Disaggregated, reqs: Requests, config: ServingConfig, seed: int,
                 record: bool, speed: float):
        super().__init__(pd.decode, reqs, replace(config, replicas=pd.decode_replicas), None, seed, record, speed)
        for name in self.SHARED:
            setattr(self, name, getattr(parent, name))
        self.parent = parent
        self.replicas = [DecodeReplica(i) for i in range(pd.decode_replicas)]
        self.policy, self.plain, self.sums_runs = decode_iteration, plain_decode_step, True
        self.link = pd.link
        self.token_bytes = float(kv_transfer_bytes(pd.prefill, 1))
        self.transfers = 0
        self.transfer_s = 0.0

    def account(self, now: float, delta: int) -> None:
        self.parent.account(now, delta)

    def blocked(self, rep: DecodeReplica) -> bool:
        """No waiting request's transfer can start before a decoder finishes (send's test fails: no KV room or no
        batch slot, and the KV cache only grows until a finish)."""
        used = rep.ctx_sum + rep.pre_kv + rep.n_dec
        return used + self.prompt[rep.waiting[0]] > self.cap or rep.n_dec + rep.held >= self.max_seqs

    def receive(self, r: int, now: float) -> None:
        """Request r is prefilled: queue it at the least-loaded decode replica and start what transfers fit."""
        rep = self.route()
        rep.outstanding += 1
        rep.waiting.append(r)
        self.send(rep, now)

    def send(self, rep: DecodeReplica, now: float) -> None:
        """Reserve KV memory and a batch slot (max_seqs) for waiting requests, FCFS, and queue their transfers on the
        replica's link; the rest wait for room (their first token with them)."""
        used = rep.ctx_sum + rep.pre_kv + rep.n_dec
        prompt, cap = self.prompt, self.cap
        while rep.waiting and used + prompt[rep.waiting[0]] <= cap and rep.n_dec + rep.held < self.max_seqs:
            r = rep.waiting.popleft()
            used += prompt[r]
            rep.held += 1
            rep.pre_kv += prompt[r]
            t = float(self.link.time_s(prompt[r] * self.token_bytes))
            rep.link_free_s = max(now, rep.link_free_s) + t
            self.transfers += 1
            self.transfer_s += t
            self.engine.at(rep.link_free_s, partial(self.arrived, rep, r), END)

    def arrived(self, rep: DecodeReplica, r: int, e: Engine):
        """Request r's KV cache is in the decode replica: its first token goes out; it decodes from the next step."""
        if self.first[r] != self.first[r]:
            self.first[r] = e.now
        rep.ready.append(r)
        return self.start_iteration(rep, e.now)

    def requeue(self, rep: Replica, r: int) -> None:
        """Preempted for memory: back to the front of a prefill queue (prompt + generated recomputed)."""
        rep.outstanding -= 1
        self.parent.readmit(r)


class PrefillPool(Simulation):
    """The prefill replicas (continuous batching with no decoders: prefill iterations only) and the decode pool."""

    replicas_independent = False  # a prefill's end reaches a decode replica

    def __init__(self, pd: Disaggregated, reqs: Requests, config: ServingConfig, seed: int, record: bool,
                 speed: float, budget=None):
        cfg = replace(config, replicas=pd.prefill_replicas, scheduler=Scheduler.CONTINUOUS)
        super().__init__(pd.prefill, reqs, cfg, None, seed, record, speed, budget)
        self.pool = DecodePool(self, pd, reqs, config, seed, record, speed)

    def work(self) -> int:
        pool = self.pool
        return super().work() + work_units(sum(r.iterations for r in pool.replicas), pool.launched, pool.summed, 0)

    def never_fits(self, r: int) -> bool:
        return self.prompt[r] > self.cap or self.prompt[r] + self.out[r] > self.pool.cap

    def join(self, rep: Replica, r: int, now: float) -> bool:
        """Prompt r is prefilled (its first token computed): it finishes here or its KV cache goes to decode."""
        self.gen[r] += 1
        if self.gen[r] >= self.out[r]:
            if self.first[r] != self.first[r]:
                self.first[r] = now
            self.finish(rep, r, now)
            return False
        rep.outstanding -= 1
        self.pool.receive(r, now)
        return True

    def readmit(self, r: int) -> None:
        rep = self.route()
        rep.outstanding += 1
        rep.waiting.appendleft(r)
        if not rep.busy:
            self.engine.at(self.engine.now, lambda e: self.start_iteration(rep, e.now), END)

    def outcome(self) -> Outcome:
        reps = self.replicas + self.pool.replicas
        return Outcome(self.first, self.done, self.rejected, sum(r.iterations for r in reps),
                       sum(r.preemptions for r in reps), self.area, self.last, tuple(self.events))


def run_disaggregated(pd: Disaggregated, reqs: Requests, config: ServingConfig, *, seed: int = 0,
                      record: bool = False, speed: float = 1.0, budget=None
                      ) -> tuple[Outcome, ServingResult, PrefillPool]:
    """(outcome, result, simulation) of the requests on the xPyD deployment; the cost is both pools'."""
    if config.scheduler == Scheduler.STATIC:
        raise FlopcastError("--disaggregate runs continuous batching on both pools; leave out --scheduler static")
    sim = PrefillPool(pd, reqs, config, seed, record, speed, budget)
    sim.run()
    o = sim.outcome()
    res = summarize(pd.prefill, reqs, config, o)
    return o, _priced(pd, res), sim


def _priced(pd: Disaggregated, res: ServingResult) -> ServingResult:
    """The result with the cost per token of both pools' chips."""
    price = pd.price_per_hour
    if price is None or res.makespan_s <= 0:
        return replace(res, cost_per_million_output_tokens_usd=None, cost_per_million_tokens_usd=None)
    usd = price * res.makespan_s / 3600.0
    out = res.output_tokens_per_s * res.makespan_s
    total = res.total_tokens_per_s * res.makespan_s
    return replace(res, cost_per_million_output_tokens_usd=usd / (out / 1e6) if out else None,
                   cost_per_million_tokens_usd=usd / (total / 1e6) if total else None)


def simulate_any(target, reqs: Requests, config: ServingConfig = ServingConfig(), *, seed: int = 0,
                 record: bool = False, cost=None, speed: float = 1.0, budget=None) -> ServingResult:
    """simulate() for a Deployment (config.replicas of it), run_disaggregated() for a Disaggregated one; `budget`:
    the work the run may take (budget.WorkBudget)."""
    if isinstance(target, Disaggregated):
        return run_disaggregated(target, reqs, config, seed=seed, record=record, speed=speed, budget=budget)[1]
    return simulate(target, reqs, config, seed=seed, record=record, cost=cost, speed=speed, budget=budget)


def run_any(target, reqs: Requests, config: ServingConfig, *, seed: int = 0,
            budget=None, speed: float = 1.0) -> tuple[Outcome, ServingResult]:
    """(outcome, result) of one run of either kind of deployment; `speed`: every batch iteration that many times as
    fast as the roofline says (an end of its prediction interval)."""
    if isinstance(target, Disaggregated):
        o, res, _ = run_disaggregated(target, reqs, config, seed=seed, budget=budget, speed=speed)
        return o, res
    sim = Simulation(target, reqs, config, None, seed, False, speed=speed, budget=budget)
    sim.run()
    o = sim.outcome()
    return o, summarize(target, reqs, config, o)


def parse_split(text: str) -> tuple[int, int]:
    """'2x1', '2P1D' or '2:1' -> (prefill replicas, decode replicas)."""
    t = str(text).strip().lower().replace("p", "x").replace("d", "").replace(":", "x")
    parts = [p for p in t.split("x") if p != ""]
    try:
        p, d = (int(x) for x in parts)
    except ValueError:
        p = d = 0
    if not (1 <= p <= MAX_POOL and 1 <= d <= MAX_POOL) or len(parts) != 2:
        raise FlopcastError(f"--disaggregate {text!r} is not valid; give prefill x decode replicas (1 to {MAX_POOL} "
                            "each), e.g. 1x1, 2x3 or 2P3D")
    return p, d


def transfer_mean_s(pd: Disaggregated, prompt_tokens: float) -> float:
    """Seconds one prompt of `prompt_tokens` takes to cross the link (for notes and tests)."""
    return float(pd.link.time_s(prompt_tokens * float(kv_transfer_bytes(pd.prefill, 1))))


__all__ = ["DecodePool", "Disaggregated", "PrefillPool", "decode_iteration", "disaggregated", "parse_split",
           "run_any", "run_disaggregated", "simulate_any", "transfer_mean_s"]
