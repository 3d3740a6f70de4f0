"""The serving simulation: each request's state, the replicas, and the events that move them.

Events run on simulate/events.Engine (heap keyed (time, priority, sequence)); each handler returns
its successor events (time, handler, priority), as vidur's events do. At equal times an iteration's
end (priority 0) runs before an arrival (priority 1), so a request arriving exactly when an iteration
ends sees the memory that iteration freed and can join the next one.

A request arrives, is routed to a replica and waits; the replica's scheduler (schedulers.py) starts
an iteration whenever the replica is idle; a prefilled prompt joins the decoders, a decoder finishes
after its output tokens, or is preempted (its KV freed, its prompt and output recomputed later).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from functools import partial
from operator import attrgetter

from ...cost import inference as inf
from ...errors import FlopcastError
from ..events import Engine
from .budget import CHECK_EVERY, RUN_WORK, BudgetSpent, WorkBudget, work_limit, work_units
from .config import Routing, Scheduler, ServingConfig
from .iteration import IterationCost
from .metrics import Outcome, ServingResult, summarize
from .requests import Requests
from .ahead import repeat_steps
from .schedulers import PLAIN_DECODE, POLICIES, plain_continuous, plain_static

END, ARRIVAL = 0, 1  # event priorities: an iteration's end before an arrival at the same time
_OUTSTANDING = attrgetter("outstanding")


class Replica:
    __slots__ = ("idx", "waiting", "prefilling", "pre_kv", "fin", "order", "n_dec", "ctx_sum", "win_sum", "cached_sum",
                 "step",
                 "busy", "outstanding", "iterations", "static_left", "preemptions", "joining", "joined_step",
                 "pend_end", "pend_step")

    def __init__(self, idx):
        self.idx = idx
        self.waiting = deque()  # request ids, FCFS (preempted ones go to the front)
        self.prefilling = []  # [rid, tokens prefilled so far] (chunked-prefill)
        self.pre_kv = 0  # KV tokens held by partly prefilled prompts
        self.fin = []  # heap of (finish step, rid, epoch) of decoding sequences
        self.order = []  # decoding rids in admission order (lazy: stale entries skipped)
        self.n_dec = 0
        self.ctx_sum = 0  # KV tokens of the decoding sequences
        self.win_sum = 0  # their whole KV windows (input + output tokens): what a static-shape decode reads
        self.cached_sum = 0  # their cached prefixes (held once, read by each)
        self.step = 0  # decode steps taken by this replica
        self.busy = False
        self.outstanding = 0
        self.iterations = 0
        self.static_left = 0
        self.preemptions = 0
        self.joining = 0  # requests still to prefill of the group the router let join (TGI's next_batch)
        self.joined_step = 0  # the decode step at which the last group joined
        self.pend_end = 0.0  # while busy: when its iteration ends
        self.pend_step = -1  # and its decode steps then (-1: not said; Simulation.launch)


def simulate(d: inf.Deployment, reqs: Requests, config: ServingConfig = ServingConfig(), *, seed: int = 0,
             record: bool = False, cost: IterationCost | None = None, speed: float = 1.0,
             budget: WorkBudget | None = None) -> ServingResult:
    """Run the requests through `config.replicas` replicas of deployment `d`; returns latency percentiles etc.

    speed: every batch iteration `speed` times as fast as the roofline says (an end of its prediction interval).
    budget: the work it may take (budget.WorkBudget, charged; BudgetSpent when it would take more); without one,
    at most RUN_WORK."""
    if config.replicas < 1:
        raise FlopcastError(f"--replicas must be at least 1, got {config.replicas}")
    if inf.kv_capacity_tokens(d) < 1:
        raise FlopcastError(f"{d.model.label} in {d.weights.name} does not fit in {d.system.id} with tp {d.tp}: "
                            "no memory left for a KV cache; use more chips or a smaller --weights format")
    sim = Simulation(d, reqs, config, cost, seed, record, speed, budget)
    sim.run()
    return summarize(d, reqs, config, sim.outcome())


class Simulation:
    """One run: per-request state in lists indexed by request id, the replicas, the event engine."""

    run_ahead_steps = True  # False: every batch iteration its own event (run_ahead; the tests compare both)
    # True: only an arrival reaches a replica from outside (an open loop of colocated replicas; run_ahead)
    replicas_independent = True
    looks_ahead = False  # True: horizon() bounds when the next arrival can come (a closed loop's; run_ahead)

    def __init__(self, d: inf.Deployment, reqs: Requests, config: ServingConfig, cost: IterationCost | None,
                 seed: int, record: bool, speed: float = 1.0, budget: WorkBudget | None = None):
        self.d, self.config, self.record = d, config, record
        self.work_budget = budget  # checked every CHECK_EVERY arrivals and launches, charged when the run ends
        self.work_cap = RUN_WORK if budget is None else budget.left
        self.admitted, self.ticks = 0, 0
        self.launched, self.summed = 0, 0  # iterations started as events; steps summed into one (decode_run)
        # KV tokens a replica (a pipeline's virtual engine: d.virtual_engines per replica) holds
        self.cap = inf.kv_capacity_tokens(d) // d.virtual_engines
        # static-shape engines (Neuron) read each decoding request's whole KV window every step (inf.decode_window)
        self.static_shapes = d.family in inf.STATIC_SHAPE_FAMILIES
        self.static_batch = config.static_batch if self.static_shapes else 0
        self.static_seq_len = config.static_seq_len if self.static_shapes else 0
        self.budget = config.chunk_tokens if config.scheduler == Scheduler.CHUNKED else config.max_batched_tokens
        self.max_seqs = config.max_seqs
        self.cost = (cost or IterationCost.for_config(d, config)).scaled(speed)
        self.ct = self.cost.time
        self.spec = d.speculation  # speculative decoding: schedulers time a decode step per expected token
        self.spec_tokens = d.speculation.expected_tokens if d.speculation else 1.0
        self.spec_draft = d.speculation.k * d.speculation.drafter_fraction(d.model) if d.speculation else 0.0
        self.policy = POLICIES[config.scheduler]
        # a static-shape engine with a compiled sequence length times a decode step by its rows alone, and a prefill by
        # its prompt's tokens alone (padded to its bucket): each time computed once (schedulers.decode_step_s, _prefill)
        self.step_times = {} if self.static_seq_len and self.spec is None else None
        self.prefill_times = {}
        self.live_plain = not self.static_shapes and self.spec is None  # a decode step is ct(n, n, kv, kv)
        self.plain = PLAIN_DECODE[config.scheduler]  # its next iteration's seconds when a plain decode step
        self.sums_runs = config.scheduler != Scheduler.CHUNKED  # with nothing pending, its decode runs one event
        n = self.n = len(reqs)
        self.arr = reqs.arrival_s.tolist()
        self.inp = reqs.input_tokens.tolist()
        self.out = reqs.output_tokens.tolist()
        # cached shared prefix per request (prefix caching): the config's for all, or a trace's prefix_tokens column
        pre = max(0, int(config.prefix_tokens))
        if pre == 0 and reqs.prefix_tokens is None:  # no prefix: min(0, i - 1) is 0 for every i >= 1
            self.cached = [0] * n
        else:
            per = [pre] * n if reqs.prefix_tokens is None else reqs.prefix_tokens.tolist()
            self.cached = [min(p, i - 1) if i > 0 else 0 for p, i in zip(per, self.inp)]
        # the shared prefix's KV blocks, held once per replica (of a trace's prefixes, the longest: they share one
        # prefix tree, vLLM's hashed blocks or SGLang's radix tree, whose longest path holds the others)
        self.cap -= pre if reqs.prefix_tokens is None else max(self.cached, default=0)
        self.prefix = pre
        # tokens to prefill (a preempted sequence recomputes prompt + generated; its cached prefix stays cached)
        self.prompt = list(self.inp) if pre == 0 and reqs.prefix_tokens is None else [
            i - c for i, c in zip(self.inp, self.cached)]
        self.gen = [0] * n  # tokens generated when joining the decoders
        self.start = [0] * n  # the replica's decode step when joining
        self.base = [0] * n  # KV tokens when joining the decoders
        self.epoch = [0] * n  # bumped by each preemption: stale finish entries are skipped
        self.first = [math.nan] * n
        self.done = [math.nan] * n
        self.rejected = [False] * n
        self.engine = Engine(seed)
        self.replicas = [Replica(i) for i in range(config.replicas * d.virtual_engines)]
        self.events = []  # (time, kind, rid) when recorded
        self.rr = 0  # round-robin cursor
        self.in_system, self.area, self.last = 0, 0.0, 0.0
        self.quiet_until_s = -math.inf  # nothing but an arrival can reach a replica before it (run_ahead)

    @property
    def engine(self) -> Engine:
        return self._engine

    @engine.setter
    def engine(self, engine: Engine) -> None:
        """The event engine, and its queue itself as `heap` (empty when nothing else can happen; pools that share
        one engine share its queue)."""
        self._engine = engine
        self.heap = engine.pending_events

    def run(self) -> None:
        self.begin()
        self.engine.run()
        if self.work_budget is not None:
            self.work_budget.charge(self.work())

    def begin(self) -> None:
        """The first events: the first arrival (the rest follow one another)."""
        if self.n:
            self.engine.at(self.arr[0], partial(self.arrive, 0), ARRIVAL)

    def work(self) -> int:
        """Units of work done so far (budget.work_units)."""
        return work_units(sum(r.iterations for r in self.replicas), self.launched, self.summed, self.admitted)

    def tick(self) -> None:
        """Every CHECK_EVERY calls: stop the run (BudgetSpent) once its work passes what the budget had left."""
        self.ticks += 1
        if self.ticks % CHECK_EVERY == 0 and self.work() > self.work_cap:
            if self.work_budget is None:
                raise BudgetSpent(work_limit(f"after {self.admitted:,} requests"))
            self.work_budget.charge(self.work())
            self.work_budget.mark_cut()
            raise BudgetSpent(f"the simulation work budget ({self.work_budget.total:,.0f} units) is spent")

    def outcome(self) -> Outcome:
        reps = self.replicas
        return Outcome(self.first, self.done, self.rejected, sum(r.iterations for r in reps),
                       sum(r.preemptions for r in reps), self.area, self.last, tuple(self.events))

    # ------------------------------------------------------------ events

    def arrive(self, r: int, e: Engine):
        """Request r arrives: routed, queued (or rejected if it can never fit); the next arrival follows."""
        successors = self.admit(r, e.now)
        if r + 1 < self.n:
            successors += ((self.arr[r + 1], partial(self.arrive, r + 1), ARRIVAL),)
        if self.replicas_independent:  # after the last arrival, none: the queue may then empty, and a replica left
            # alone sums its steps in closed form (decode_run) where one that had stepped past the others would not
            self.quiet_until_s = self.arr[r + 1] if r + 1 < self.n else -math.inf
        return successors

    def admit(self, r: int, now: float):
        """Request r enters the system: routed and queued, or rejected when it can never fit; () or one event."""
        self.account(now, +1)
        self.admitted += 1
        self.ticks += 1  # tick(), inlined
        if not self.ticks % CHECK_EVERY:
            self.ticks -= 1
            self.tick()
        if self.record:
            self.events.append((now, "arrive", r))
        rep = self.route()
        if self.never_fits(r):
            self.rejected[r] = True
            self.account(now, -1)
            self.released(r, now)
            return ()
        rep.outstanding += 1
        rep.waiting.append(r)
        return self.start_iteration(rep, now)

    def released(self, r: int, now: float) -> None:
        """Request r has left the system (finished or rejected); an open-loop load ignores it."""

    def end_decode(self, rep: Replica, e: Engine, steps: int = 1):
        rep.busy = False
        self.advance_decoders(rep, e.now, steps)
        return self.run_ahead(rep, e)

    def end_prefill(self, rep: Replica, rids: list, tokens: int, e: Engine):
        rep.busy = False
        rep.pre_kv -= tokens
        for r in rids:
            self.join(rep, r, e.now)
        return self.run_ahead(rep, e)

    def end_chunked(self, rep: Replica, chunks: list, e: Engine):
        """A mixed iteration ends: the decoders advance, prompts whose last chunk ran join them."""
        rep.busy = False
        if rep.n_dec > 0:
            self.advance_decoders(rep, e.now)
        for entry, _, c in chunks:
            entry[1] += c
        prompt, still = self.prompt, []
        for entry in rep.prefilling:
            r, got = entry
            if got >= prompt[r]:
                rep.pre_kv -= prompt[r]
                self.join(rep, r, e.now)
            else:
                still.append(entry)
        rep.prefilling = still
        return self.run_ahead(rep, e)

    def run_ahead(self, rep: Replica, e: Engine):
        """The idle replica's next iterations from e.now: while each is a plain decode step (schedulers.PLAIN_DECODE)
        that ends before anything else can touch the replica, it runs here, with the clock moved to its end; the
        first that is not is started as an event, as start_iteration does.

        A step that finishes a request runs here only when it ends before every pending event (its finish then
        comes in time order); one that finishes none changes nothing but the replica, so it may also pass other
        replicas' pending iterations, up to the next arrival (`quiet_until_s`, an open loop's; only an arrival can
        reach this replica), or, where no arrival time is known beforehand (a closed loop's: `looks_ahead`), up to the
        earliest time one can come (`horizon`). These are the very steps, times and finishes one event per step
        gives; only the event queue's work is saved. run_ahead_steps = False: one event per step."""
        heap, plain, now, quiet = self.heap, self.plain, e.now, self.quiet_until_s
        horizon = None  # self.horizon(rep) once needed: only this replica changes as it runs ahead, until it finishes
        while self.run_ahead_steps:
            t = plain(self, rep)
            if t is None:
                break
            end = now + t
            finishes = rep.fin[0][0] <= rep.step + 1  # (or a stale entry, skipped by advance_decoders)
            if not heap:  # nothing else can happen; but a policy that would sum the steps to the next finish does so
                if self.sums_runs and self.decode_run(rep) > 1:
                    break
            elif end >= heap[0][0] and (finishes or end >= quiet):
                if finishes or not self.looks_ahead:
                    return self.launch(rep, end, partial(self.end_decode, rep), 1)
                if horizon is None:
                    horizon = self.horizon(rep)
                if end >= horizon:
                    return self.launch(rep, end, partial(self.end_decode, rep), 1)
            rep.iterations += 1
            self.ticks += 1  # tick(), inlined: the steps run here are work too (a long output is thousands of them)
            if not self.ticks % CHECK_EVERY:
                self.ticks -= 1
                self.tick()
            now = e.now = end
            if finishes:
                self.advance_decoders(rep, now)
                horizon = None  # its finish sent a request (a closed loop's)
            else:  # advance_decoders, nothing to finish
                rep.step += 1
                rep.ctx_sum += rep.n_dec
                if heap and self.step_times is not None and (plain is plain_continuous or plain is plain_static):
                    if horizon is None and self.looks_ahead:
                        horizon = self.horizon(rep)
                    limit = max(heap[0][0], quiet, -math.inf if horizon is None else horizon)
                    now = e.now = repeat_steps(self, rep, t, now, limit)
        return self.start_iteration(rep, now)

    # ------------------------------------------------------------ what the events do

    def never_fits(self, r: int) -> bool:
        """Request r's prompt and output exceed the KV memory of a replica: rejected on arrival."""
        return self.prompt[r] + self.out[r] > self.cap

    def start_iteration(self, rep: Replica, now: float):
        """The replica's next iteration, if it is idle and its scheduler finds work: () or one end event."""
        if rep.busy:
            return ()
        return self.policy(self, rep, now)

    def horizon(self, rep: Replica) -> float:
        """A time before which no request can arrive at `rep` (looks_ahead); -inf: none known."""
        return -math.inf

    def launch(self, rep: Replica, end_s: float, handler, steps: int = -1):
        """The replica's iteration ending at end_s (its end event), which takes `steps` decode steps (-1: not said)."""
        rep.busy = True
        rep.pend_end, rep.pend_step = end_s, (rep.step + steps if steps >= 0 else -1)
        rep.iterations += 1
        self.launched += 1
        self.ticks += 1  # tick(), inlined
        if not self.ticks % CHECK_EVERY:
            self.ticks -= 1
            self.tick()
        return ((end_s, handler, END),)

    def route(self) -> Replica:
        reps = self.replicas
        if len(reps) == 1:
            return reps[0]
        if self.config.routing == Routing.ROUND_ROBIN:
            rep = reps[self.rr % len(reps)]
            self.rr += 1
            return rep
        return min(reps, key=_OUTSTANDING)  # the first of the least loaded: replicas are in index order

    def account(self, now: float, delta: int) -> None:
        """Requests in the system change by `delta` at `now` (for the time-average, Little's L)."""
        self.area += self.in_system * (now - self.last)
        self.last = now
        self.in_system += delta

    def finish(self, rep: Replica, r: int, now: float) -> None:
        self.done[r] = now
        rep.outstanding -= 1
        self.account(now, -1)
        if self.record:
            self.events.append((now, "finish", r))
        self.released(r, now)

    def join(self, rep: Replica, r: int, now: float) -> bool:
        """Prompt r is prefilled: its first token exists; it decodes from the next step."""
        if self.first[r] != self.first[r]:
            self.first[r] = now
        gen, out = self.gen, self.out
        gen[r] += 1
        if gen[r] >= out[r]:
            self.finish(rep, r, now)
            return False
        self.enter(rep, r)
        return True

    def enter(self, rep: Replica, r: int) -> None:
        """Request r, its prompt's KV in the replica, joins the decoders from the replica's next step."""
        self.start[r] = rep.step
        self.base[r] = self.prompt[r]
        heapq.heappush(rep.fin, (rep.step + self.out[r] - self.gen[r], r, self.epoch[r]))
        rep.order.append(r)
        rep.n_dec += 1
        rep.ctx_sum += self.prompt[r]
        rep.win_sum += self.inp[r] + self.out[r]
        rep.cached_sum += self.cached[r]

    def advance_decoders(self, rep: Replica, now: float, steps: int = 1) -> None:
        """`steps` decode steps: every decoder's context grows by a token each; those at their last token finish."""
        rep.step += steps
        rep.ctx_sum += rep.n_dec * steps
        fin, step, epoch, done = rep.fin, rep.step, self.epoch, self.done
        while fin and fin[0][0] <= step:
            _, r, ep = heapq.heappop(fin)
            if ep != epoch[r] or done[r] == done[r]:
                continue
            rep.n_dec -= 1
            rep.ctx_sum -= self.base[r] + step - self.start[r]
            rep.win_sum -= self.inp[r] + self.out[r]
            rep.cached_sum -= self.cached[r]
            self.finish(rep, r, now)

    def make_room(self, rep: Replica) -> None:
        """Preempt the most recently admitted decoders until one more token each fits (vLLM recompute)."""
        cap = self.cap
        while rep.ctx_sum + rep.pre_kv + rep.n_dec > cap and rep.n_dec > 1:
            self.preempt(rep)

    def preempt(self, rep: Replica) -> bool:
        """Evict the most recently admitted live decoder to the front of the queue (Kwon et al. 2023, sec. 4.5)."""
        done, epoch, gen = self.done, self.epoch, self.gen
        while rep.order:
            r = rep.order.pop()
            if done[r] == done[r] or epoch[r] < 0:
                continue
            g = gen[r] + rep.step - self.start[r]
            ctx = self.base[r] + rep.step - self.start[r]
            epoch[r] += 1
            rep.n_dec -= 1
            rep.ctx_sum -= ctx
            rep.win_sum -= self.inp[r] + self.out[r]
            rep.cached_sum -= self.cached[r]
            gen[r] = g
            self.prompt[r] = self.inp[r] - self.cached[r] + g  # recompute the prompt and what was generated
            rep.preemptions += 1
            self.requeue(rep, r)
            return True
        return False

    def requeue(self, rep: Replica, r: int) -> None:
        """A preempted request waits at the front of its replica's queue to be prefilled again."""
        rep.waiting.appendleft(r)

    def decode_shape(self, rep: Replica) -> tuple[int, float]:
        """(rows, KV positions read) of one decode step of the replica's n_dec sequences.

        Live shapes: n rows over their contexts (and the shared cached prefix). A static-shape engine runs the
        compiled batch (padding rows included) and reads each row's whole KV window: the compiled sequence
        length when stated, else the request's input + output ("every decode step reads ceil(max_model_len /
        block_size) KV blocks per request ... regardless of the request's actual position", Neuron docs, vLLM
        Neuron "Decode Context-Length Bucketing")."""
        n = rep.n_dec
        if not self.static_shapes:
            return n, rep.ctx_sum + rep.cached_sum
        rows = max(n, self.static_batch)
        if self.static_seq_len:
            return rows, float(rows * self.static_seq_len)
        return rows, rep.win_sum * rows / n

    def decode_run(self, rep: Replica) -> int:
        """Decode steps the replica can take back to back before anything else can happen there.

        More than 1 only when no other event is pending (a closed loop's single replica between a finish and
        the next, or the last arrival's queue: no arrival can come), no prompt can join (none waits, or the
        first waiting one is `blocked`) and decoding is plain (no speculation): then the steps up to the next
        finish, or up to the last whose new tokens the KV cache holds (the next must preempt), are identical but
        for the KV they read, and IterationCost.decode_run sums them exactly."""
        if self.heap or rep.prefilling or self.spec is not None or not rep.fin:
            return 1
        if rep.waiting and not self.blocked(rep):
            return 1
        k = rep.fin[0][0] - rep.step
        if not self.static_shapes or rep.waiting:  # no further than the KV cache holds every step's new tokens
            k = min(k, (self.cap - rep.ctx_sum - rep.pre_kv) // max(rep.n_dec, 1))
        return k if k > 1 else 1

    def blocked(self, rep: Replica) -> bool:
        """No waiting prompt can join the replica's decoders before one of them finishes: the batch is full
        (max_seqs) or the first waiting prompt's KV does not fit (FCFS: the others wait behind it), and the KV
        cache only grows until a finish. A static batch admits nothing while it decodes. TGI's router (a
        waiting_served_ratio) offers a group only from the free slots, and its prompts join FCFS as their KV fits
        (schedulers._may_join, admit_prefill), so it is blocked by the same two; only a group it let in whose rest
        is still to be prefilled (rep.joining) is not."""
        if self.config.scheduler == Scheduler.STATIC:
            return True
        if rep.joining:
            return False
        return rep.n_dec >= self.max_seqs or rep.ctx_sum + rep.pre_kv + self.prompt[rep.waiting[0]] > self.cap

    def prefill_tokens(self, tokens: int) -> int:
        """Tokens a prefill pass computes for a prompt of `tokens`: a static-shape engine with a compiled sequence
        length pads the prompt to its context-encoding bucket: the smallest of the buckets the server compiled
        (config.context_buckets, NxD Inference's --context-encoding-buckets) that holds it, else the next power of
        two from 128 up to that length (NxD Inference's default buckets, "Bucketing" in its developer guide);
        other engines compute the prompt."""
        if not self.static_seq_len:
            return tokens
        if self.config.context_buckets:
            return next((b for b in self.config.context_buckets if b >= tokens), tokens)
        return min(max(128, 1 << max(0, tokens - 1).bit_length()), max(self.static_seq_len, tokens))

    def iteration_time(self, tokens: int, seqs: int, kv: float, pairs: float) -> float:
        """Seconds of a pass; beyond the precomputed table (a long prompt alone) timed by step_time itself."""
        if tokens < len(self.cost.dense):
            return self.ct(tokens, seqs, kv, pairs)
        self.cost.dense.past = True
        t, _ = inf.step_time(self.d, tokens, seqs, kv, pairs)
        return float(t) / self.cost.speed
