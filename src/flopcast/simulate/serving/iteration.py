"""What one batch iteration costs: cost/inference.step_time split for speed.

dense(n tokens) [a table] + logits(sequences) + attention(kv tokens, pairs) equals
step_time exactly and costs a few float operations per iteration.

The table is filled on first use, CHUNK entries at a time: step_time is elementwise in its token counts, so an
entry computed in a chunk is the very float the whole table's array gives (tests/test_iteration_table.py), and
a run touches a few chunks (its batch sizes, its prompts' lengths) of the thousands of entries its token budget
allows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...cost import inference as inf


CHUNK = 64  # table entries computed together


def table_tokens(config) -> int:
    """The largest iteration (new tokens) a simulation of `config` (a ServingConfig) times from its table: the
    scheduler's token budget or its batch, whichever is more."""
    from .config import Scheduler

    return max(config.chunk_tokens if config.scheduler == Scheduler.CHUNKED else config.max_batched_tokens,
               config.max_seqs)


class DenseTable(dict):
    """n -> seconds of the dense part of a pass over n new tokens, n = 0..size - 1 (len), computed on first use:
    `compute(n array)` gives a chunk's seconds, or `of[n] / factor` a scaled table's."""

    def __init__(self, size: int, compute=None, of: DenseTable | None = None, factor: float = 1.0):
        super().__init__()
        self.size, self.compute, self.of, self.factor = size, compute, of, factor
        self.past = False  # a pass longer than the table was timed apart (Simulation.iteration_time)

    def __len__(self) -> int:
        return self.size

    def __missing__(self, n: int) -> float:
        if not 0 <= n < self.size:
            raise IndexError(f"dense table index {n} out of range 0..{self.size - 1}")
        if self.of is not None:
            t = self[n] = self.of[n] / self.factor
            return t
        lo = n - n % CHUNK
        self.update(zip(range(lo, min(lo + CHUNK, self.size)), self.compute(lo, min(lo + CHUNK, self.size))))
        return dict.__getitem__(self, n)

    def __iter__(self):
        return (self[n] for n in range(self.size))


@dataclass(frozen=True)
class IterationCost:
    """step_time split for speed: dense[n] + max(lf s, lb) + max(cf pairs, cb kv) seconds."""

    dense: DenseTable  # seconds for n new tokens, n = 0..max_tokens (comm and overhead included)
    logit_flop_s: float  # seconds per sequence producing logits (compute side)
    logit_bytes_s: float  # seconds to stream the output layer once
    attn_pair_s: float  # seconds per query-key pair (compute side)
    attn_kv_s: float  # seconds per KV token read
    speed: float = 1.0  # every time divided by it: an end of the forecast's prediction interval

    def scaled(self, speed: float) -> IterationCost:
        """The same costs on an engine `speed` times as fast (speed < 1: slower)."""
        if speed == self.speed:
            return self
        f = speed / self.speed
        return IterationCost(DenseTable(len(self.dense), of=self.dense, factor=f), self.logit_flop_s / f,
                             self.logit_bytes_s / f, self.attn_pair_s / f, self.attn_kv_s / f, speed)

    @classmethod
    def for_config(cls, d: inf.Deployment, config, prefetch=()) -> IterationCost:
        """The table a simulation of `config` (a ServingConfig) builds (one entry past its largest iteration)."""
        return cls.of(d, table_tokens(config) + 1, prefetch)

    @classmethod
    def of(cls, d: inf.Deployment, max_tokens: int, prefetch=()) -> IterationCost:
        """The costs of deployment d's iterations of up to max_tokens + 1 new tokens. prefetch: table entries a run
        is known to read (those an earlier run of the same shapes read): their chunks are computed at once, in the
        one call of step_time that times the logit layer (elementwise: the very floats computed apart)."""
        size = max_tokens + 1
        starts = sorted({n - n % CHUNK for n in prefetch if 0 <= n < size})
        # the logit layer streamed once: an empty pass's logits (no sequence: its weights read, nothing computed)
        n = np.concatenate([np.zeros(1)] + [np.arange(lo, min(lo + CHUNK, size), dtype=float) for lo in starts])
        zero = np.zeros_like(n)
        total, parts = inf.step_time(d, n, zero, zero, zero)
        lb = float(parts["logits"][0])

        def dense(lo: int, hi: int) -> list:
            n = np.arange(lo, hi, dtype=float)
            zero = np.zeros_like(n)
            total, parts = inf.step_time(d, n, zero, zero, zero)
            return (np.asarray(total) - lb - np.asarray(parts["attention/core"])).tolist()

        table = DenseTable(size, dense)
        if starts:
            values = (np.asarray(total) - lb - np.asarray(parts["attention/core"]))[1:].tolist()
            table.update(zip((k for lo in starts for k in range(lo, min(lo + CHUNK, size))), values))
        m = d.model
        return cls(table, 2.0 * m.vocab * m.hidden / d.compute_rate, lb,
                   2.0 * m.layers * (m.q_dim + m.attn_out_dim) / d.compute_rate,
                   d.kv_bytes_per_token / d.memory_rate)

    def time(self, new_tokens: int, seqs: int, kv_tokens: float, pairs: float) -> float:
        a = self.logit_flop_s * seqs
        b = self.attn_pair_s * pairs
        c = self.attn_kv_s * kv_tokens
        return self.dense[new_tokens] + (a if a > self.logit_bytes_s else self.logit_bytes_s) + (b if b > c else c)

    def decode_run(self, seqs: int, kv_tokens: float, steps: int, growth: float) -> float:
        """Seconds of `steps` decode steps of `seqs` sequences, the first reading `kv_tokens` KV tokens and each
        later one `growth` more: the sum of time(seqs, seqs, kv, kv) over the steps, in closed form (the
        attention term is linear in kv when pairs = kv)."""
        a = self.logit_flop_s * seqs
        per_step = self.dense[seqs] + (a if a > self.logit_bytes_s else self.logit_bytes_s)
        kv = steps * kv_tokens + growth * steps * (steps - 1) / 2.0
        return steps * per_step + max(self.attn_pair_s, self.attn_kv_s) * kv
