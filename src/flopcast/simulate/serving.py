"""A discrete-event simulation of LLM serving: replicas, a router, batching schedulers, KV memory.

Events run on simulate/events.Engine (heap keyed (time, priority, sequence)). At equal
times an iteration's end (priority 0) runs before an arrival (priority 1), so a
request arriving exactly when an iteration ends sees the memory that iteration freed
and can join the next one.

Schedulers (each a batch iteration = one forward pass of the replica):
- static: a batch is admitted only when the previous one has finished; KV for
  prompt + output is reserved up front (no preemption) (the pre-Orca baseline).
- continuous: iteration-level scheduling (Yu et al. 2022, Orca, OSDI sec. 4.2) as
  vLLM v0 does it: waiting prompts are prefilled in their own iteration whenever
  they fit, otherwise all running sequences decode one token; when the KV cache
  cannot grow, the most recently admitted sequence is preempted and recomputed
  later (Kwon et al. 2023, vLLM/PagedAttention, sec. 4.5).
- chunked-prefill: Sarathi-Serve (Agrawal et al. 2024, OSDI, sec. 4): every
  iteration carries all decodes plus prompt chunks up to a token budget.

Iteration times are the per-operator roofline of cost/inference.step_time, split as
dense(n tokens) [a precomputed table] + logits(sequences) + attention(kv tokens, pairs),
which equals step_time exactly and costs a few float operations per iteration.
"""

from __future__ import annotations

import csv
import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import numpy as np

from ..cost import inference as inf
from ..errors import FlopcastError
from .events import Engine

END, ARRIVAL = 0, 1  # event priorities: an iteration's end before an arrival at the same time


class Scheduler(str, Enum):
    STATIC = "static"
    CONTINUOUS = "continuous"
    CHUNKED = "chunked-prefill"


class Routing(str, Enum):
    ROUND_ROBIN = "round-robin"
    LEAST_LOADED = "least-loaded"


def parse_choice(enum, text: str, option: str):
    try:
        return enum(text.strip().lower())
    except ValueError:
        raise FlopcastError(f"{option} {text!r} is not valid; valid: {', '.join(e.value for e in enum)}") from None


# ---------------------------------------------------------------- requests


@dataclass(frozen=True)
class Requests:
    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)


MAX_TOKENS_PER_REQUEST = 2**27  # flopcast.limits' input/output token bound
MAX_SIGMA = 10.0  # a lognormal sigma past this spreads lengths over more than 8 orders of magnitude
MAX_REQUESTS = 10**7  # flopcast.limits' request bound; a duration x rate past it is refused
# batch iterations one capacity search simulates in all (~4 us each: ~15 s); lenient targets at high rates
# would otherwise run 33 rates x 50,000 requests; a search that needs more stops with a message (never a
# silently low answer). Measured: llama3-8b on p5.48xlarge at TTFT 20 s / TPOT 1 s takes 1.2M iterations.
CAPACITY_BUDGET = 3_500_000


def lengths(spec: str | int, n: int, rng: np.random.Generator, option: str = "--input-tokens") -> np.ndarray:
    """Token lengths: a fixed number, 'uniform:LO:HI' (inclusive) or 'lognormal:MEAN:SIGMA'
    (MEAN the distribution's mean in tokens, SIGMA the underlying normal's sigma); every length at most
    MAX_TOKENS_PER_REQUEST (lognormal draws are clipped to it)."""
    text = str(spec).strip().lower()
    parts = text.split(":")
    top = MAX_TOKENS_PER_REQUEST
    try:
        values = [float(x) for x in parts[len(parts) > 1:]]
        if not all(math.isfinite(v) for v in values) or len(parts) not in (1, 3):
            raise ValueError
    except ValueError:
        raise FlopcastError(f"{option} {spec!r}: give a token count, 'uniform:LO:HI' or 'lognormal:MEAN:SIGMA' "
                            f"(finite numbers)") from None
    if len(parts) == 1:
        if not 0 <= values[0] <= top:
            raise FlopcastError(f"{option} {spec!r} is out of range; valid: 0 to {top:,} tokens")
        return np.full(n, int(values[0]), dtype=np.int64)
    kind, (a, b) = parts[0], values
    if kind == "uniform" and 0 <= a <= b <= top:
        return rng.integers(int(a), int(b) + 1, size=n)
    if kind == "lognormal" and 0 < a <= top and 0 <= b <= MAX_SIGMA:
        mu = math.log(a) - b * b / 2.0  # E[X] = exp(mu + sigma^2/2)
        return np.clip(np.round(rng.lognormal(mu, b, size=n)), 1, top).astype(np.int64)
    raise FlopcastError(f"{option} {spec!r}: uniform needs 0 <= LO <= HI <= {top:,}, lognormal 0 < MEAN <= {top:,} "
                        f"and 0 <= SIGMA <= {MAX_SIGMA:g}")


def poisson_requests(qps: float, rng: np.random.Generator, *, n: int | None = None, duration_s: float | None = None,
                     input_tokens="512", output_tokens="128") -> Requests:
    """Poisson arrivals at `qps` (exponential gaps), either n requests or until duration_s."""
    if not qps > 0:
        raise FlopcastError(f"--qps must be positive, got {qps}")
    if n is None:
        if duration_s is None or duration_s <= 0:
            raise FlopcastError("give --requests N (N >= 1) or --duration S (S > 0)")
        if qps * duration_s > MAX_REQUESTS:
            raise FlopcastError(f"--duration {duration_s:g} s at --qps {qps:g} would draw about {qps * duration_s:.3g} "
                                f"requests; valid: at most {MAX_REQUESTS:,} (a shorter duration or a lower rate)")
        n = int(rng.poisson(qps * duration_s)) + 1
    if n > MAX_REQUESTS:
        raise FlopcastError(f"--requests {n:,} is out of range; valid: 1 to {MAX_REQUESTS:,}")
    if n < 1:
        raise FlopcastError(f"--requests must be at least 1, got {n}")
    gaps = rng.exponential(1.0 / qps, size=n)
    arrival = np.cumsum(gaps)
    if duration_s is not None:
        keep = arrival <= duration_s
        keep[0] = True
        arrival = arrival[keep]
        n = len(arrival)
    return Requests(arrival, lengths(input_tokens, n, rng, "--input-tokens"),
                    np.maximum(1, lengths(output_tokens, n, rng, "--output-tokens")))


def _trace_column(rows, key: str, path, low: float, high: float, whole: bool) -> np.ndarray:
    """One column of a trace as numbers, each finite and in [low, high]; a one-line error naming the row."""
    out = np.empty(len(rows), dtype=np.int64 if whole else float)
    for n, r in enumerate(rows, start=2):  # row 1 is the header
        cell = r.get(key)
        cell = cell.strip() if isinstance(cell, str) else ""  # a short row leaves its last cells missing
        try:
            v = float(cell)
        except ValueError:
            raise FlopcastError(f"--trace {path}: row {n}: {key} {cell!r} is not a number") from None
        if not (math.isfinite(v) and low <= v <= high and (not whole or v.is_integer())):
            kind = "a whole number" if whole else "a number"
            raise FlopcastError(f"--trace {path}: row {n}: {key} {cell!r} is out of range; valid: {kind} from "
                                f"{low:g} to {high:g}")
        out[n - 2] = v
    return out


def _trace_rows(p: Path) -> tuple[list[str], list[dict]]:
    """(header, rows) of a trace file; one-line errors for a missing, unreadable, oversized or non-CSV file."""
    if not p.exists():
        raise FlopcastError(f"--trace {p} does not exist")
    if p.is_dir():
        raise FlopcastError(f"--trace {p} is a folder, not a CSV file")
    try:
        if p.stat().st_size > 64 * MAX_REQUESTS:
            raise FlopcastError(f"--trace {p} is {p.stat().st_size:,} bytes; valid: at most {64 * MAX_REQUESTS:,}")
        reader = csv.DictReader(p.read_text(encoding="utf-8-sig").splitlines())
        header = [(h or "").strip() for h in reader.fieldnames or []]
        rows = [{(k or "").strip(): v for k, v in r.items()} for r in reader]
    except UnicodeDecodeError:
        raise FlopcastError(f"--trace {p} is not a UTF-8 text CSV") from None
    except OSError as exc:
        raise FlopcastError(f"--trace: cannot read {p}: {exc.strerror or exc}") from None
    except csv.Error as exc:
        raise FlopcastError(f"--trace {p} is not a readable CSV: {exc}") from None
    return header, rows


def read_trace(path, notes: list | None = None) -> Requests:
    """A trace CSV with columns arrival_s,input_tokens,output_tokens (header required), at most MAX_REQUESTS rows.

    Rows out of arrival order are sorted; `notes`, when given, gets one line saying how many were."""
    header, rows = _trace_rows(Path(path))
    need = ("arrival_s", "input_tokens", "output_tokens")
    missing = [k for k in need if k not in header]
    if missing:
        raise FlopcastError(f"--trace {path} lacks column(s) {', '.join(missing)}; a trace has columns {', '.join(need)}")
    if not rows:
        raise FlopcastError(f"--trace {path} has no rows (only a header)")
    if len(rows) > MAX_REQUESTS:
        raise FlopcastError(f"--trace {path} has {len(rows):,} rows; valid: at most {MAX_REQUESTS:,}")
    a = _trace_column(rows, "arrival_s", path, 0, 1e10, whole=False)
    i = _trace_column(rows, "input_tokens", path, 0, MAX_TOKENS_PER_REQUEST, whole=True)
    o = _trace_column(rows, "output_tokens", path, 1, MAX_TOKENS_PER_REQUEST, whole=True)
    # arrivals out of order are sorted (a trace may be merged from several sources), and counted
    order = np.argsort(a, kind="stable")
    moved = int((order != np.arange(len(a))).sum())
    if moved and notes is not None:
        notes.append(f"trace rows sorted by arrival_s: {moved} of {len(a)} were out of order")
    return Requests(a[order], i[order], o[order])


# ---------------------------------------------------------------- iteration cost


@dataclass(frozen=True)
class IterationCost:
    """step_time split for speed: dense[n] + max(lf s, lb) + max(cf pairs, cb kv) seconds."""

    dense: tuple  # seconds for n new tokens, n = 0..max_tokens (comm and overhead included)
    logit_flop_s: float  # seconds per sequence producing logits (compute side)
    logit_bytes_s: float  # seconds to stream the output layer once
    attn_pair_s: float  # seconds per query-key pair (compute side)
    attn_kv_s: float  # seconds per KV token read

    @classmethod
    def of(cls, d: inf.Deployment, max_tokens: int) -> "IterationCost":
        n = np.arange(max_tokens + 1, dtype=float)
        zero = np.zeros_like(n)
        total, parts = inf.step_time(d, n, zero, zero, zero)
        lb = float(parts["logits"][0])
        dense = np.asarray(total) - lb - np.asarray(parts["attention/core"])
        m = d.model
        return cls(tuple(dense.tolist()), 2.0 * m.vocab * m.hidden / d.compute_rate, lb,
                   2.0 * m.layers * (m.q_dim + m.attn_out_dim) / d.compute_rate,
                   d.kv_bytes_per_token / d.memory_rate)

    def time(self, new_tokens: int, seqs: int, kv_tokens: float, pairs: float) -> float:
        a = self.logit_flop_s * seqs
        b = self.attn_pair_s * pairs
        c = self.attn_kv_s * kv_tokens
        return self.dense[new_tokens] + (a if a > self.logit_bytes_s else self.logit_bytes_s) + (b if b > c else c)


# ---------------------------------------------------------------- a replica


class _Replica:
    __slots__ = ("idx", "waiting", "prefilling", "pre_kv", "fin", "order", "n_dec", "ctx_sum", "win_sum", "step",
                 "busy", "outstanding", "iterations", "static_left", "preemptions")

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
        self.step = 0  # decode steps taken by this replica
        self.busy = False
        self.outstanding = 0
        self.iterations = 0
        self.static_left = 0
        self.preemptions = 0


@dataclass(frozen=True)
class ServingConfig:
    scheduler: Scheduler = Scheduler.CONTINUOUS
    replicas: int = 1
    routing: Routing = Routing.LEAST_LOADED
    max_seqs: int = 256  # vLLM max_num_seqs default
    max_batched_tokens: int = 8192  # prefill tokens per iteration (continuous/static)
    chunk_tokens: int = 512  # Sarathi-Serve token budget per iteration
    slo_ttft_s: float = 1.0
    slo_tpot_s: float = 0.05


@dataclass(frozen=True)
class ServingResult:
    requests: int
    completed: int
    rejected: int
    ttft_s: dict  # p50/p90/p99
    tpot_s: dict
    e2e_s: dict
    makespan_s: float
    throughput_requests_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    slo_attainment: float
    cost_per_million_output_tokens_usd: float | None
    cost_per_million_tokens_usd: float | None
    iterations: int
    preemptions: int
    mean_in_system: float  # time-average requests in the system (Little's L)
    arrival_rate_per_s: float
    mean_e2e_s: float
    events: tuple = field(default=(), compare=False, repr=False)  # (time, kind, rid) when recorded

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "events"}


def _pct(x) -> dict:
    if len(x) == 0:
        return {"p50": None, "p90": None, "p99": None, "mean": None}
    q = np.percentile(x, [50, 90, 99])
    return {"p50": float(q[0]), "p90": float(q[1]), "p99": float(q[2]), "mean": float(np.mean(x))}


def simulate(d: inf.Deployment, reqs: Requests, config: ServingConfig = ServingConfig(), *, seed: int = 0,
             record: bool = False, cost: IterationCost | None = None) -> ServingResult:
    """Run the requests through `config.replicas` replicas of deployment `d`; returns latency percentiles etc."""
    if config.replicas < 1:
        raise FlopcastError(f"--replicas must be at least 1, got {config.replicas}")
    cap = inf.kv_capacity_tokens(d)
    if cap < 1:
        raise FlopcastError(f"{d.model.label} in {d.weights.name} does not fit in {d.system.id} with tp {d.tp}: "
                            "no memory left for a KV cache; use more chips or a smaller --weights format")
    sched = config.scheduler
    # static-shape engines (Neuron) read each decoding request's whole KV window every step (inf.decode_window)
    static_shapes = d.family in inf.STATIC_SHAPE_FAMILIES
    budget = config.chunk_tokens if sched == Scheduler.CHUNKED else config.max_batched_tokens
    max_tokens = max(budget, config.max_seqs) + 1
    cost = cost or IterationCost.of(d, max_tokens)
    ct = cost.time
    n = len(reqs)
    arr = reqs.arrival_s.tolist()
    inp = reqs.input_tokens.tolist()
    out = reqs.output_tokens.tolist()
    prompt = list(inp)  # tokens to prefill (a preempted sequence recomputes prompt + generated)
    gen = [0] * n  # tokens generated when joining the decoders
    start = [0] * n
    base = [0] * n  # KV tokens when joining the decoders
    epoch = [0] * n
    first = [math.nan] * n
    done = [math.nan] * n
    rejected = [False] * n
    eng = Engine(seed)
    reps = [_Replica(i) for i in range(config.replicas)]
    events = []
    state = {"rr": 0, "in_sys": 0, "area": 0.0, "last": 0.0}
    max_seqs = config.max_seqs

    def account(now, delta):
        state["area"] += state["in_sys"] * (now - state["last"])
        state["last"] = now
        state["in_sys"] += delta

    def finish(rep, r, now):
        done[r] = now
        rep.outstanding -= 1
        account(now, -1)
        if record:
            events.append((now, "finish", r))

    def join(rep, r, now):
        """Prompt r is prefilled: its first token exists; it decodes from the next step."""
        if first[r] != first[r]:
            first[r] = now
        gen[r] += 1
        if gen[r] >= out[r]:
            finish(rep, r, now)
            return False
        start[r] = rep.step
        base[r] = prompt[r]
        heapq.heappush(rep.fin, (rep.step + out[r] - gen[r], r, epoch[r]))
        rep.order.append(r)
        rep.n_dec += 1
        rep.ctx_sum += prompt[r]
        rep.win_sum += inp[r] + out[r]
        return True

    def preempt(rep):
        while rep.order:
            r = rep.order.pop()
            if done[r] == done[r] or epoch[r] < 0:
                continue
            g = gen[r] + rep.step - start[r]
            ctx = base[r] + rep.step - start[r]
            epoch[r] += 1
            rep.n_dec -= 1
            rep.ctx_sum -= ctx
            rep.win_sum -= inp[r] + out[r]
            gen[r] = g
            prompt[r] = inp[r] + g  # recompute the prompt and what was generated
            rep.waiting.appendleft(r)
            rep.preemptions += 1
            return True
        return False

    def fits_ever(r):
        need = inp[r] + out[r]
        return need <= cap

    def admit_prefill(rep, limit_tokens, reserve_output):
        """Pop waiting prompts that fit into this iteration; returns (rids, tokens, pairs)."""
        rids, tokens, pairs = [], 0, 0.0
        used = rep.ctx_sum + rep.pre_kv
        while rep.waiting and rep.n_dec + len(rids) < max_seqs:
            r = rep.waiting[0]
            p = prompt[r]
            need = p + (out[r] - gen[r] if reserve_output else 0)
            if p > limit_tokens:
                if not rids and p <= cap:
                    pass  # a long prompt runs alone (beyond the per-iteration budget, timed on the fly)
                else:
                    break
            elif tokens + p > limit_tokens:
                break
            if used + need > cap:
                break
            rep.waiting.popleft()
            rids.append(r)
            tokens += p
            pairs += p * (p + 1) / 2.0
            used += need
        return rids, tokens, pairs

    def dense_time(tokens, seqs, kv, pairs):
        if tokens < len(cost.dense):
            return ct(tokens, seqs, kv, pairs)
        t, _ = inf.step_time(d, tokens, seqs, kv, pairs)
        return float(t)

    def start_iteration(rep, now):
        if rep.busy:
            return
        if sched == Scheduler.CHUNKED:
            _chunked(rep, now)
            return
        if sched == Scheduler.STATIC and rep.n_dec > 0:
            rids = []
        else:
            rids, tokens, pairs = admit_prefill(rep, budget, sched == Scheduler.STATIC)
        if rids:
            t = dense_time(tokens, len(rids), tokens, pairs)
            rep.pre_kv += tokens
            rep.busy = True
            rep.iterations += 1
            eng.at(now + t, lambda e, rep=rep, rids=rids, tokens=tokens: end_prefill(e, rep, rids, tokens), END)
            return
        if rep.n_dec == 0:
            return
        if sched != Scheduler.STATIC:
            while rep.ctx_sum + rep.pre_kv + rep.n_dec > cap and rep.n_dec > 1:
                preempt(rep)
        kv = rep.win_sum if static_shapes else rep.ctx_sum
        t = ct(rep.n_dec, rep.n_dec, kv, kv)
        rep.busy = True
        rep.iterations += 1
        eng.at(now + t, lambda e, rep=rep: end_decode(e, rep), END)

    def advance_decoders(rep, now):
        rep.step += 1
        rep.ctx_sum += rep.n_dec
        fin = rep.fin
        step = rep.step
        while fin and fin[0][0] <= step:
            _, r, ep = heapq.heappop(fin)
            if ep != epoch[r] or done[r] == done[r]:
                continue
            rep.n_dec -= 1
            rep.ctx_sum -= base[r] + step - start[r]
            rep.win_sum -= inp[r] + out[r]
            finish(rep, r, now)

    def end_decode(e, rep):
        rep.busy = False
        advance_decoders(rep, e.now)
        start_iteration(rep, e.now)

    def end_prefill(e, rep, rids, tokens):
        rep.busy = False
        rep.pre_kv -= tokens
        for r in rids:
            join(rep, r, e.now)
        start_iteration(rep, e.now)

    def _chunked(rep, now):
        if rep.n_dec and rep.ctx_sum + rep.pre_kv + rep.n_dec > cap:
            while rep.ctx_sum + rep.pre_kv + rep.n_dec > cap and rep.n_dec > 1:
                preempt(rep)
        left = budget - rep.n_dec
        chunks = []  # (entry, chunk tokens)
        pairs = kv = float(rep.win_sum if static_shapes else rep.ctx_sum)
        for entry in rep.prefilling:
            if left <= 0:
                break
            r, got = entry
            c = min(prompt[r] - got, left)
            chunks.append((entry, c))
            left -= c
            pairs += c * (got + (c + 1) / 2.0)
            kv += got + c
        used = rep.ctx_sum + rep.pre_kv
        while left > 0 and rep.waiting and rep.n_dec + len(rep.prefilling) < max_seqs:
            r = rep.waiting[0]
            if used + prompt[r] > cap:
                break
            rep.waiting.popleft()
            entry = [r, 0]
            rep.prefilling.append(entry)
            used += prompt[r]
            rep.pre_kv += prompt[r]  # KV blocks reserved for the whole prompt
            c = min(prompt[r], left)
            chunks.append((entry, c))
            left -= c
            pairs += c * (c + 1) / 2.0
            kv += c
        tokens = rep.n_dec + sum(c for _, c in chunks)
        if tokens == 0:
            return
        seqs = rep.n_dec + sum(1 for entry, c in chunks if entry[1] + c >= prompt[entry[0]])
        t = ct(tokens, seqs, kv, pairs)
        rep.busy = True
        rep.iterations += 1
        eng.at(now + t, lambda e, rep=rep, chunks=chunks: end_chunked(e, rep, chunks), END)

    def end_chunked(e, rep, chunks):
        rep.busy = False
        had = rep.n_dec > 0
        if had:
            advance_decoders(rep, e.now)
        for entry, c in chunks:
            entry[1] += c
        still = []
        for entry in rep.prefilling:
            r, got = entry
            if got >= prompt[r]:
                rep.pre_kv -= prompt[r]
                join(rep, r, e.now)
            else:
                still.append(entry)
        rep.prefilling = still
        start_iteration(rep, e.now)

    def arrive(e, r):
        account(e.now, +1)
        if record:
            events.append((e.now, "arrive", r))
        if config.routing == Routing.ROUND_ROBIN:
            rep = reps[state["rr"] % len(reps)]
            state["rr"] += 1
        else:
            rep = min(reps, key=lambda x: (x.outstanding, x.idx))
        if not fits_ever(r):
            rejected[r] = True
            account(e.now, -1)
        else:
            rep.outstanding += 1
            rep.waiting.append(r)
            start_iteration(rep, e.now)
        if r + 1 < n:
            eng.at(arr[r + 1], lambda e2, r=r + 1: arrive(e2, r), ARRIVAL)

    if n:
        eng.at(arr[0], lambda e: arrive(e, 0), ARRIVAL)
    eng.run()
    return _result(d, reqs, config, first, done, rejected, reps, state, eng, events)


def _result(d, reqs, config, first, done, rejected, reps, state, eng, events) -> ServingResult:
    first = np.array(first)
    done = np.array(done)
    arr = reqs.arrival_s
    out = reqs.output_tokens
    ok = ~np.isnan(done)
    ttft = first[ok] - arr[ok]
    e2e = done[ok] - arr[ok]
    multi = ok & (out > 1)
    tpot = (done[multi] - first[multi]) / (out[multi] - 1)
    tpot_all = np.zeros(len(arr))
    tpot_all[multi] = tpot
    t0 = float(arr[0]) if len(arr) else 0.0
    makespan = float(np.nanmax(done) - t0) if ok.any() else 0.0
    toks = float(out[ok].sum())
    all_toks = toks + float(reqs.input_tokens[ok].sum())
    meets = ok & (first - arr <= config.slo_ttft_s) & (tpot_all <= config.slo_tpot_s)
    price = d.price_per_hour
    hours = makespan / 3600.0
    replicas_price = None if price is None else price / d.replicas * config.replicas
    cpm = None if replicas_price is None or toks == 0 else replicas_price * hours / (toks / 1e6)
    cpm_all = None if replicas_price is None or all_toks == 0 else replicas_price * hours / (all_toks / 1e6)
    span = state["last"] - t0
    return ServingResult(
        requests=len(arr), completed=int(ok.sum()), rejected=int(sum(rejected)),
        ttft_s=_pct(ttft), tpot_s=_pct(tpot), e2e_s=_pct(e2e), makespan_s=makespan,
        throughput_requests_per_s=ok.sum() / makespan if makespan else 0.0,
        output_tokens_per_s=toks / makespan if makespan else 0.0,
        total_tokens_per_s=all_toks / makespan if makespan else 0.0,
        slo_attainment=float(meets.sum() / len(arr)) if len(arr) else 0.0,
        cost_per_million_output_tokens_usd=cpm, cost_per_million_tokens_usd=cpm_all,
        iterations=sum(r.iterations for r in reps), preemptions=sum(r.preemptions for r in reps),
        mean_in_system=state["area"] / span if span > 0 else 0.0,
        arrival_rate_per_s=(len(arr) - 1) / float(arr[-1] - arr[0]) if len(arr) > 1 and arr[-1] > arr[0] else 0.0,
        mean_e2e_s=float(e2e.mean()) if len(e2e) else 0.0, events=tuple(events))


# Arrivals of a capacity run span this many SLO horizons (see find_capacity).
SPAN_HORIZONS = 4.0


def find_capacity(d: inf.Deployment, config: ServingConfig, *, requests: int = 400, input_tokens="512",
                  output_tokens="128", seed: int = 0, attainment: float = 0.9, iterations: int = 12,
                  max_requests: int = 50_000):
    """Highest Poisson QPS whose SLO attainment (TTFT and TPOT both met) is >= `attainment`, by bisection.

    Goodput as in DistServe (Zhong et al. 2024, OSDI, sec. 2.2). A finite run at a rate the replica
    cannot sustain may still meet lenient SLOs (its burst drains before the targets expire), so each
    run lasts at least SPAN_HORIZONS x (TTFT target + median output x TPOT target) of arrivals, up to
    `max_requests`: a sustained overload then builds a backlog that breaks the TTFT target.
    Returns (qps, result at that qps); (0, None) when no rate meets the SLOs."""
    out_median = float(np.median(lengths(output_tokens, 256, np.random.default_rng(seed), "--output-tokens")))
    horizon = SPAN_HORIZONS * (config.slo_ttft_s + out_median * config.slo_tpot_s)

    budget = [CAPACITY_BUDGET]  # batch iterations left to simulate over the whole search (bounded work)

    def run(q):
        rng = np.random.default_rng(seed)
        n = int(min(max(requests, math.ceil(q * horizon)), max(requests, max_requests)))
        if budget[0] <= 0:
            raise FlopcastError(f"the capacity search at these targets (TTFT {config.slo_ttft_s:g} s, TPOT "
                                f"{config.slo_tpot_s:g} s) needs more than {CAPACITY_BUDGET:,} simulated batch "
                                "iterations (each rate runs for several SLO horizons); use tighter --slo-ttft / "
                                "--slo-tpot or simulate one --qps")
        reqs = poisson_requests(q, rng, n=n, input_tokens=input_tokens, output_tokens=output_tokens)
        out = simulate(d, reqs, config, seed=seed, cost=cost)
        budget[0] -= out.iterations
        return out

    cost = IterationCost.of(d, max(config.chunk_tokens if config.scheduler == Scheduler.CHUNKED
                                   else config.max_batched_tokens, config.max_seqs) + 1)
    lo, hi = 0.0, 0.5
    best = None
    r = run(hi)
    while r.slo_attainment >= attainment and hi < 1e6:
        lo, best = hi, r
        hi *= 2.0
        r = run(hi)
    if best is None:
        lo = 0.0
    for _ in range(iterations):
        mid = (lo + hi) / 2.0 if lo > 0 else hi / 2.0
        if mid < 1e-4:
            break
        r = run(mid)
        if r.slo_attainment >= attainment:
            lo, best = mid, r
        else:
            hi = mid
    return lo, best
