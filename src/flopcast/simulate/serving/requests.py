"""The load: request lengths, Poisson arrivals and traces read from CSV."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import FlopcastError


@dataclass(frozen=True)
class Requests:
    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)


def lengths(spec: str | int, n: int, rng: np.random.Generator, option: str = "--input-tokens") -> np.ndarray:
    """Token lengths: a fixed number, 'uniform:LO:HI' (inclusive) or 'lognormal:MEAN:SIGMA'
    (MEAN the distribution's mean in tokens, SIGMA the underlying normal's sigma)."""
    text = str(spec).strip().lower()
    parts = text.split(":")
    try:
        if len(parts) == 1:
            v = int(float(parts[0]))
            if v < 0:
                raise ValueError
            return np.full(n, v, dtype=np.int64)
        kind, a, b = parts[0], float(parts[1]), float(parts[2])
    except (ValueError, IndexError):
        raise FlopcastError(f"{option} {spec!r}: give a token count, 'uniform:LO:HI' or 'lognormal:MEAN:SIGMA'") from None
    if kind == "uniform" and 0 <= a <= b:
        return rng.integers(int(a), int(b) + 1, size=n)
    if kind == "lognormal" and a > 0 and b >= 0:
        mu = math.log(a) - b * b / 2.0  # E[X] = exp(mu + sigma^2/2)
        return np.maximum(1, np.round(rng.lognormal(mu, b, size=n))).astype(np.int64)
    raise FlopcastError(f"{option} {spec!r}: uniform needs 0 <= LO <= HI, lognormal MEAN > 0 and SIGMA >= 0")


def poisson_requests(qps: float, rng: np.random.Generator, *, n: int | None = None, duration_s: float | None = None,
                     input_tokens="512", output_tokens="128") -> Requests:
    """Poisson arrivals at `qps` (exponential gaps), either n requests or until duration_s."""
    if not qps > 0:
        raise FlopcastError(f"--qps must be positive, got {qps}")
    if n is None:
        if duration_s is None or duration_s <= 0:
            raise FlopcastError("give --requests N (N >= 1) or --duration S (S > 0)")
        n = int(rng.poisson(qps * duration_s)) + 1
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


def read_trace(path, notes: list | None = None) -> Requests:
    """A trace CSV with columns arrival_s,input_tokens,output_tokens (header required).

    Rows out of arrival order are sorted; `notes`, when given, gets one line saying how many were."""
    p = Path(path)
    if not p.exists():
        raise FlopcastError(f"--trace {path} does not exist")
    with p.open(newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        header = [h.strip() for h in (reader.fieldnames or [])]
    need = ("arrival_s", "input_tokens", "output_tokens")
    missing = [k for k in need if k not in header]
    if missing:
        raise FlopcastError(f"--trace {path} lacks column(s) {', '.join(missing)}; a trace has columns {', '.join(need)}")
    if not rows:
        raise FlopcastError(f"--trace {path} has no rows (only a header)")
    rows = [{(k or "").strip(): v for k, v in r.items()} for r in rows]
    try:
        a = np.array([float(r["arrival_s"]) for r in rows])
        i = np.array([int(float(r["input_tokens"])) for r in rows])
        o = np.array([int(float(r["output_tokens"])) for r in rows])
    except ValueError:
        raise FlopcastError(f"--trace {path}: arrival_s must be a number and token counts integers") from None
    if (a < 0).any() or (i < 0).any() or (o < 1).any():
        raise FlopcastError(f"--trace {path}: arrival_s >= 0, input_tokens >= 0, output_tokens >= 1")
    # arrivals out of order are sorted (a trace may be merged from several sources), and counted
    order = np.argsort(a, kind="stable")
    moved = int((order != np.arange(len(a))).sum())
    if moved and notes is not None:
        notes.append(f"trace rows sorted by arrival_s: {moved} of {len(a)} were out of order")
    return Requests(a[order], i[order], o[order])
