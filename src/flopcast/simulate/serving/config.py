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
