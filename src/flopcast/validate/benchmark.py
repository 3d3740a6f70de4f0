"""A serving row replayed as its benchmark ran: the tool's load through the discrete-event simulation.

A row of the serving schema may state how its figures were measured (validation/README.md, "How a serving
benchmark ran"): the load (`synchronous`, `throughput`, `concurrency`, `rate`, or `batch`), its size, the
server's batch and compiled sequence length, the benchmark's duration and the statistic of its latencies.
Such a row is predicted by simulating that load (simulate/serving): closed-loop clients for synchronous,
concurrency and throughput runs (guidellm, llmperf, vLLM benchmark_serving --max-concurrency), an open-loop
rate for rate runs (vLLM benchmark_serving --request-rate: Poisson; guidellm constant: even gaps), and the
statistic it names (mean, p50, p90, p99) is compared. Clients stated in the concurrency column are the tool's
own, spread over the instance's data-parallel replicas (`chips / tp`, behind a round-robin balancer, nginx's
default); clients derived from the server batch are one replica's. Where the tool stops counting at its end
(TOOL_COUNTS_FINISHED), only the requests finished inside the benchmark's duration are in its figures. A row
without a load is one static batch of requests
of fixed shape (llama-bench, the Neuron performance tables) and goes through the roofline (cost/inference).
No measured column is read here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from enum import Enum

import numpy as np

from ..errors import FlopcastError
from ..limits import LIMITS, TEXT, count, parse_cell, real
from ..simulate import serving as S


class Load(str, Enum):
    BATCH = "batch"  # one static batch of `batch` requests, all of the same shape
    SYNCHRONOUS = "synchronous"  # one request at a time (guidellm synchronous): one closed-loop client
    THROUGHPUT = "throughput"  # the server kept full (guidellm throughput): as many clients as the server's batch
    CONCURRENCY = "concurrency"  # `concurrency` closed-loop clients (guidellm concurrent, llmperf, --max-concurrency)
    RATE = "rate"  # open-loop arrivals at request_rate_per_s (vLLM benchmark_serving --request-rate)


class Statistic(str, Enum):
    MEAN = "mean"
    P50 = "p50"
    P90 = "p90"
    P99 = "p99"


TOOL_ARRIVALS = {"guidellm": "constant"}  # open-loop gaps by tool; the rest (vLLM benchmark_serving) Poisson
# tools whose figures cover only the requests finished before the benchmark's end: guidellm 0.1 cancels the rest
# (scheduler/base.py: asyncio.wait_for with timeout end_time - now; a timed-out request is not recorded); vLLM's
# benchmark_serving and llmperf wait for every request sent
TOOL_COUNTS_FINISHED = frozenset({"guidellm"})
# TGI's router: launcher/src/main.rs defaults --waiting-served-ratio 0.3, --max-waiting-tokens 20 (neither set by the
# benchmarks' docker-compose files); a row whose engine column names TGI is served by it
TGI_ROUTER = {"waiting_served_ratio": 0.3, "max_waiting_tokens": 20}
DEFAULT_DURATION_S = 120.0  # a benchmark of unstated length: guidellm 0.1's --max-seconds default
# a request-count sizing bound, not a prediction: 1 ms per output token (and per request at least) is faster than
# any engine in the serving files (their fastest measured TPOT is several ms), so the count below covers the duration
FASTEST_TPOT_S = 1e-3
FASTEST_REQUEST_S = 1e-3
MAX_REQUESTS = 4000  # simulated requests per row at most (a long benchmark's steady state is reached well before)
MIN_REQUESTS = 20
# the load columns of the serving schema (validate/inference.SERVING), each cell's type and physical range: the
# command line's bounds (limits.py); a benchmark of at most 1e7 s (115 days) and 1e7 requests/s
TOKENS_HIGH = LIMITS["input_tokens"].high  # tokens per request at most (limits.py), for the token columns
LOAD_SCHEMA = {
    "load_tool": TEXT, "load": TEXT, "concurrency": count(1, 1e6), "request_rate_per_s": real(1e7),
    "server_batch": count(1, LIMITS["max_batch"].high), "max_seq_len": count(1, TOKENS_HIGH), "duration_s": real(1e7),
    "statistic": TEXT, "input_tokens_spread": count(0, TOKENS_HIGH), "output_tokens_spread": count(0, TOKENS_HIGH),
}
LOAD_COLUMNS = tuple(LOAD_SCHEMA)


@dataclass(frozen=True)
class BenchmarkLoad:
    """How a row's benchmark drove the server (the columns of LOAD_COLUMNS, checked)."""

    load: Load
    tool: str = ""
    clients: int = 0  # closed-loop clients (synchronous: 1; throughput: the server batch)
    tool_clients: bool = False  # the clients are the tool's (the concurrency column), over all replicas
    tgi_router: bool = False  # the server is TGI: its router lets waiting requests join in groups (TGI_ROUTER)
    rate_per_s: float = 0.0  # open-loop requests per second
    server_batch: int = 0  # the engine's sequences in flight at most (max_num_seqs; Neuron: the compiled batch)
    max_seq_len: int = 0  # the compiled sequence length of a static-shape engine (0: not stated)
    duration_s: float = DEFAULT_DURATION_S
    statistic: Statistic = Statistic.MEAN
    input_spread: int = 0  # half-width of the uniform spread of prompt lengths around input_tokens
    output_spread: int = 0
    context_buckets: tuple = ()  # the context-encoding buckets the server compiled, ascending (() = not stated)


def _cell(row, key) -> str:
    v = row.get(key)
    return v.strip() if isinstance(v, str) else ""


def _number(row, key):
    """A load cell checked against its column's type and range (LOAD_SCHEMA); None when blank."""
    return parse_cell(key, row.get(key), LOAD_SCHEMA[key].bound)


def _choice(enum, row, key, default):
    text = _cell(row, key).lower()
    if not text:
        return default
    try:
        return enum(text)
    except ValueError:
        raise FlopcastError(f"{key} {text!r} is not valid; valid: {', '.join(e.value for e in enum)}") from None


def context_buckets(row) -> tuple:
    """The context_buckets cell: prompt lengths, separated by spaces, each a whole number of tokens in range."""
    text = _cell(row, "context_buckets")
    if not text:
        return ()
    try:
        buckets = sorted({int(t) for t in text.replace(",", " ").split()})
    except ValueError:
        buckets = []
    if not buckets or not all(1 <= b <= TOKENS_HIGH for b in buckets):
        raise FlopcastError(f"context_buckets {text!r} is not valid; valid: prompt lengths in tokens separated by "
                            f"spaces, each from 1 to {TOKENS_HIGH:,}")
    return tuple(buckets)


def load_of(row, batch: int) -> tuple[BenchmarkLoad | None, list[str]]:
    """The row's benchmark load, or None for a static batch (load blank or `batch`); with the notes it assumed.

    A blank load whose row names guidellm (its load_tool or engine cell) is read as the serving files' README states
    a guidellm row without load columns (validation/README.md, "more_inference_runs.csv"): batch 1 a synchronous
    run, a larger batch a throughput run keeping the server's compiled batch (`batch`) of requests in flight."""
    load = _choice(Load, row, "load", Load.BATCH)
    notes = []
    server = _number(row, "server_batch") or 0
    if not _cell(row, "load") and "guidellm" in (_cell(row, "load_tool") + " " + _cell(row, "engine")).lower():
        load = Load.SYNCHRONOUS if batch <= 1 else Load.THROUGHPUT
        server = server or (batch if load == Load.THROUGHPUT else 0)
        notes.append(f"load blank, the row names guidellm: a guidellm {load.value} run (batch {batch}"
                     + (f", the server's compiled batch {server}" if load == Load.THROUGHPUT else "")
                     + "; the serving files' README), simulated as it ran")
    if load == Load.BATCH:
        return None, []
    stated_clients = clients = _number(row, "concurrency") or 0
    rate = _number(row, "request_rate_per_s") or 0.0
    if load == Load.SYNCHRONOUS:
        clients = 1
    elif load == Load.THROUGHPUT and not clients:
        clients = server or batch
        notes.append(f"throughput run: {clients} closed-loop clients, the server's batch kept full (requests past "
                     "it wait in the tool, before the measured TTFT)")
    elif load == Load.CONCURRENCY and not clients:
        raise FlopcastError("load concurrency needs the concurrency column (closed-loop clients)")
    if load == Load.RATE and not rate > 0:
        raise FlopcastError("load rate needs a positive request_rate_per_s")
    duration = _number(row, "duration_s")
    if not duration:
        duration = DEFAULT_DURATION_S
        notes.append(f"duration_s blank: {DEFAULT_DURATION_S:g} s (guidellm 0.1's default benchmark length)")
    spreads = [_number(row, k) or 0 for k in ("input_tokens_spread", "output_tokens_spread")]
    stated = load in (Load.THROUGHPUT, Load.CONCURRENCY) and bool(stated_clients)
    engine = _cell(row, "engine").lower()
    tgi = engine.startswith("tgi") or "text-generation-inference" in engine
    return BenchmarkLoad(load, _cell(row, "load_tool").lower(), clients, stated, tgi, rate, server,
                         _number(row, "max_seq_len") or 0, duration,
                         _choice(Statistic, row, "statistic", Statistic.MEAN), *spreads, context_buckets(row)), notes


def lengths(load: BenchmarkLoad, n: int, input_tokens: int, output_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-request prompt and output lengths: the row's means, spread uniformly by the stated half-widths (read-only
    arrays, drawn once per process for the same numbers: a fit simulates a row hundreds of times)."""
    return _lengths(load.input_spread, load.output_spread, n, input_tokens, output_tokens)


@functools.lru_cache(maxsize=256)
def _lengths(input_spread: int, output_spread: int, n: int, input_tokens: int, output_tokens: int):
    rng = np.random.default_rng(0)
    i = rng.integers(max(0, input_tokens - input_spread), input_tokens + input_spread + 1, n)
    o = rng.integers(max(1, output_tokens - output_spread), output_tokens + output_spread + 1, n)
    i.flags.writeable = o.flags.writeable = False
    return i, o


def serving_config(d, load: BenchmarkLoad, batch: int) -> S.ServingConfig:
    """The server the benchmark ran against: continuous batching up to its batch; a static-shape engine runs its
    compiled batch and sequence length."""
    if load.server_batch:
        server = load.server_batch
    elif load.load == Load.RATE:  # an open-loop queue: the engine's own default limit (vLLM max_num_seqs)
        server = S.ServingConfig().max_seqs
    else:  # closed loop: never more in flight than the clients
        server = max(batch, load.clients, 1)
    return S.ServingConfig(max_seqs=server, static_batch=server if load.server_batch else 0,
                           static_seq_len=load.max_seq_len, context_buckets=load.context_buckets,
                           **(TGI_ROUTER if load.tgi_router else {}))


def simulate_row(d, load: BenchmarkLoad, batch: int, input_tokens: int, output_tokens: int,
                 runs=None) -> S.ServingResult:
    """The simulated run of a row's benchmark: the tool's clients over `d.replicas` replicas of `d` when the row
    states them, else one replica's load on one replica; throughput per replica either way.

    runs: the row's earlier runs in a fit (validate/fitmemo.RowRuns): the result of one that read the same iteration
    costs and KV capacity as this deployment gives, else this run, kept there."""
    from ..cost import inference as inf

    config = serving_config(d, load, batch)
    capacity = None if runs is None else inf.kv_capacity_tokens(d)
    if runs is None or capacity < 1:  # (no KV cache: the run says so)
        return _simulate(d, load, config, input_tokens, output_tokens)
    cost = S.IterationCost.for_config(d, config, runs.tokens)
    result = runs.find(cost, capacity)
    if result is None:
        result = _simulate(d, load, config, input_tokens, output_tokens, cost)
        runs.add(cost, capacity, result)
    return result


def _simulate(d, load: BenchmarkLoad, config: S.ServingConfig, input_tokens: int, output_tokens: int,
              cost: S.IterationCost | None = None) -> S.ServingResult:
    """simulate_row's run, on the iteration costs `cost` when given (those the run would build)."""
    if load.load == Load.RATE:
        n = int(min(MAX_REQUESTS, max(MIN_REQUESTS, math.ceil(load.rate_per_s * load.duration_s))))
        i, o = lengths(load, n, input_tokens, output_tokens)
        if TOOL_ARRIVALS.get(load.tool) == "constant":
            arrival = np.arange(n) / load.rate_per_s
        else:
            arrival = np.cumsum(np.random.default_rng(1).exponential(1.0 / load.rate_per_s, n))
        return S.simulate(d, S.Requests(arrival, i, o), config, cost=cost)
    replicas = d.replicas if load.tool_clients else 1
    if replicas > 1:
        config = replace(config, replicas=replicas, routing=S.Routing.ROUND_ROBIN)
    # enough requests for the duration at the fastest the server could take them, within the bounds
    e2e_guess = max(FASTEST_REQUEST_S, output_tokens * FASTEST_TPOT_S)
    n = int(min(MAX_REQUESTS, max(MIN_REQUESTS, load.clients * math.ceil(load.duration_s / e2e_guess) + load.clients)))
    i, o = lengths(load, n, input_tokens, output_tokens)
    until = load.duration_s if load.tool in TOOL_COUNTS_FINISHED else math.inf
    result = S.closed_loop(d, load.clients, i, o, config, duration_s=load.duration_s, counted_until_s=until,
                           cost=cost)
    if replicas == 1:
        return result
    return replace(result, output_tokens_per_s=result.output_tokens_per_s / replicas,
                   total_tokens_per_s=result.total_tokens_per_s / replicas,
                   throughput_requests_per_s=result.throughput_requests_per_s / replicas)


def figures(result: S.ServingResult, load: BenchmarkLoad, input_tokens: int) -> dict:
    """The figures a serving row may state, from a simulated run, latencies at the row's statistic."""
    key = load.statistic.value
    ttft, tpot = result.ttft_s.get(key), result.tpot_s.get(key)
    if ttft is None or tpot is None or not tpot > 0:
        raise FlopcastError("the simulated benchmark completed no request with more than one output token")
    return {
        "decode_tokens_per_s_per_stream": 1.0 / tpot,
        "output_tokens_per_s_total": result.output_tokens_per_s,
        "tpot_ms": tpot * 1e3,
        "ttft_ms": ttft * 1e3,
        "prefill_tokens_per_s": max(input_tokens, 1) / ttft,
    }


def static_batch(d, row, batch: int, input_tokens: int, output_tokens: int) -> tuple[dict, str] | None:
    """(figures, note) of one static batch on a static-shape engine whose compiled shapes the row states
    (`context_buckets` with `max_seq_len`), else None (the roofline's batch of fixed shape, cost/inference).

    Each prompt is padded to the smallest bucket that holds it and encoded alone, one after another (a compiled
    context-encoding graph takes one prompt, as the simulation's schedulers run it; optimum-neuron compiles it
    for one under continuous batching, backend/config.py ctx_batch_size), so the batch's first tokens come after
    `batch` passes; then every decode step reads the compiled `max_seq_len` KV positions of each sequence."""
    from ..cost import inference as inf

    buckets, seq = context_buckets(row), _number(row, "max_seq_len") or 0
    if not (buckets and seq) or d.family not in inf.STATIC_SHAPE_FAMILIES:
        return None
    bucket = next((b for b in buckets if b >= input_tokens), input_tokens)
    ttft = batch * (float(inf.prefill_time(d, 1, bucket)[0]) + d.efficiency.request_overhead_s)
    tpot = float(inf.decode_time(d, batch, max(seq, input_tokens + output_tokens))[0])
    figures = {"decode_tokens_per_s_per_stream": 1.0 / tpot, "output_tokens_per_s_total": batch / tpot,
               "tpot_ms": tpot * 1e3, "ttft_ms": ttft * 1e3,
               "prefill_tokens_per_s": batch * max(input_tokens, 1) / ttft}
    return figures, (f"static batch on compiled shapes: {batch} prompts padded to the {bucket}-token context-encoding "
                     f"graph, encoded one per pass; decode reads {seq} KV positions per sequence")


def describe(load: BenchmarkLoad) -> str:
    """One line for a row's assumptions: the load simulated."""
    what = {Load.SYNCHRONOUS: "1 closed-loop client", Load.THROUGHPUT: f"{load.clients} closed-loop clients",
            Load.CONCURRENCY: f"{load.clients} closed-loop clients",
            Load.RATE: f"open-loop {load.rate_per_s:g} requests/s"}[load.load]
    if load.tool_clients:
        what += " (the tool's, spread round-robin over the instance's replicas)"
    if load.tgi_router:
        what += (f"; TGI's router: waiting requests join a running batch in groups (waiting_served_ratio "
                 f"{TGI_ROUTER['waiting_served_ratio']}, max_waiting_tokens {TGI_ROUTER['max_waiting_tokens']})")
    shapes = (f"; static shapes: batch {load.server_batch}, sequence {load.max_seq_len}"
              if load.max_seq_len else "")
    if load.context_buckets:
        shapes += f", context-encoding buckets {' '.join(map(str, load.context_buckets))}"
    counted = ("; only requests finished within it counted, as the tool records them"
               if load.tool in TOOL_COUNTS_FINISHED else "")
    return (f"simulated as the benchmark ran ({load.tool or 'tool not stated'} {load.load.value}): {what} for "
            f"{load.duration_s:g} s{counted}, server batch {load.server_batch or 'not stated'}{shapes}; "
            f"latencies compared at their {load.statistic.value}")
