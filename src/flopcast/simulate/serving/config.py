"""What a serving run is asked to do: the scheduler, the routing and the limits of each replica."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ...errors import FlopcastError


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
    # automatic prefix caching (vLLM APC; SGLang RadixAttention, Zheng et al. 2024): tokens at the start of
    # every prompt that are shared and already cached: not prefilled again, their KV held once per replica
    prefix_tokens: int = 0
    # the shapes a static-shape engine (Neuron: transformers-neuronx, NxD Inference, optimum-neuron) compiled its
    # graphs for; 0 = not stated (decode then runs the live batch over each request's own window)
    static_batch: int = 0  # the compiled batch: every decode step runs this many rows, padding the empty slots
    static_seq_len: int = 0  # the compiled sequence length: every decode row reads this many KV positions
    # the context-encoding graphs compiled (NxD Inference --context-encoding-buckets, ascending): a prompt is
    # padded to the smallest that holds it; () = the default power-of-two buckets up to static_seq_len
    context_buckets: tuple = ()
    # when waiting requests may join a running batch (continuous scheduler). 0: whenever one fits (vLLM). TGI's
    # router (backends/v2/src/backend.rs `batching_task`; defaults in launcher/src/main.rs: 0.3 and 20): only when
    # at least floor(running x waiting_served_ratio) of them can join, or max_waiting_tokens decode steps have run
    # since the last join; then all that fit join at once
    waiting_served_ratio: float = 0.0
    max_waiting_tokens: int = 0
