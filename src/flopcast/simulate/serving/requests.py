"""The load: request lengths, Poisson arrivals and traces read from CSV."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import FlopcastError
from ...limits import RowSchema, count, read_bounded, real


@dataclass(frozen=True)
class Requests:
    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    prefix_tokens: np.ndarray | None = None  # per request, its prompt's cached shared prefix (a trace's column)

    def __len__(self) -> int:
        return len(self.arrival_s)


MAX_TOKENS_PER_REQUEST = 2**27  # flopcast.limits' input/output token bound
MAX_SIGMA = 10.0  # a lognormal sigma past this spreads lengths over more than 8 orders of magnitude
# flopcast.limits' request bound; a duration x rate past it is refused, and a trace of more rows: no run's work
# (budget.RUN_WORK; deploy's and find-capacity's budgets are larger) holds more requests, and 10^7 of them took 2.2 GB
MAX_REQUESTS = 250_000
MAX_TRACE_BYTES = 64 * MAX_REQUESTS  # a trace row is under 64 bytes


def lengths(spec: str | int, n: int, rng: np.random.Generator, option: str = "--input-tokens") -> np.ndarray:
    """Token lengths: a fixed number, 'uniform:LO:HI' (inclusive) or 'lognormal:MEAN:SIGMA'
    (MEAN the distribution's mean in tokens, SIGMA the underlying normal's sigma); every length at most
    MAX_TOKENS_PER_REQUEST (lognormal draws are clipped to it); or a sequence of lengths (e.g. a trace's), drawn
    from with replacement (their empirical distribution)."""
    if isinstance(spec, (tuple, list, np.ndarray)):
        sample = np.asarray(spec, dtype=np.int64)
        if sample.size == 0:
            raise FlopcastError(f"{option}: the trace holds no requests")
        return rng.choice(sample, size=n)
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



def median_length(spec, rng: np.random.Generator, option: str = "--input-tokens") -> float:
    """The median of 256 lengths drawn from `spec` (as `lengths`): what the planners size rooflines and runs by."""
    return float(np.median(lengths(spec, 256, rng, option)))


def median_lengths(input_tokens, output_tokens, seed: int) -> tuple[int, int]:
    """(input, output) median lengths in whole tokens, drawn in that order from one generator seeded `seed`."""
    rng = np.random.default_rng(seed)
    return int(median_length(input_tokens, rng, "--input-tokens")), int(median_length(output_tokens, rng,
                                                                                      "--output-tokens"))


def median_output(output_tokens, seed: int) -> float:
    """The median output length, from a generator of its own seeded `seed`: what a run's span is sized by."""
    return median_length(output_tokens, np.random.default_rng(seed), "--output-tokens")

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


# A trace row (serve --trace): its arrival time and lengths; every other column is refused by name.
TRACE = RowSchema("a trace", {"arrival_s": real(1e10, open_low=False, required=True),
                              "input_tokens": count(0, MAX_TOKENS_PER_REQUEST, required=True),
                              "output_tokens": count(1, MAX_TOKENS_PER_REQUEST, required=True),
                              # optional: the tokens at the start of the prompt shared with earlier requests
                              # (a prefix-cache hit)
                              "prefix_tokens": count(0, MAX_TOKENS_PER_REQUEST)})


def _trace_column(rows, key: str, path) -> np.ndarray:
    """One column of a trace as numbers, each of TRACE's type and range; a one-line error naming the row."""
    out = np.empty(len(rows), dtype=np.int64 if TRACE.columns[key].bound.integer else float)
    for n, r in enumerate(rows, start=2):  # row 1 is the header
        cell = r.get(key)
        if not isinstance(cell, str) or not cell.strip():  # a short row leaves its last cells missing
            raise FlopcastError(f"--trace {path}: row {n}: {key} is missing; every row has arrival_s, input_tokens "
                                "and output_tokens (and prefix_tokens when the header names it)")
        try:
            out[n - 2] = TRACE.cell(key, cell)
        except FlopcastError as exc:
            valid = "" if "valid:" in str(exc) else f"; valid: {TRACE.columns[key].bound.valid()}"
            raise FlopcastError(f"--trace {path}: row {n}: {exc}{valid}") from None
    return out


def _trace_rows(p: Path) -> tuple[list[str], list[dict]]:
    """(header, rows) of a trace file; one-line errors for a missing, unreadable, oversized or non-CSV file."""
    if not p.exists():
        raise FlopcastError(f"--trace {p} does not exist")
    if p.is_dir():
        raise FlopcastError(f"--trace {p} is a folder, not a CSV file")
    try:
        lines = read_bounded(p, MAX_TRACE_BYTES, "--trace").decode("utf-8-sig").splitlines()
        if len(lines) > MAX_REQUESTS + 1:  # counted before the rows are parsed: a long file is refused at once
            raise FlopcastError(f"--trace {p} has {len(lines) - 1:,} rows; valid: at most {MAX_REQUESTS:,}")
        reader = csv.DictReader(lines)
        header = [(h or "").strip() for h in reader.fieldnames or []]
        rows = [{k if k is None else k.strip(): v for k, v in r.items()} for r in reader]
    except UnicodeDecodeError:
        raise FlopcastError(f"--trace {p} is not a UTF-8 text CSV") from None
    except OSError as exc:
        raise FlopcastError(f"--trace: cannot read {p}: {exc.strerror or exc}") from None
    except csv.Error as exc:
        raise FlopcastError(f"--trace {p} is not a readable CSV: {exc}") from None
    return header, rows


def read_trace(path, notes: list | None = None) -> Requests:
    """A trace CSV with columns arrival_s,input_tokens,output_tokens (header required) and optionally prefix_tokens
    (per request, the cached shared prefix of its prompt), at most MAX_REQUESTS rows.

    Rows out of arrival order are sorted; `notes`, when given, gets one line saying how many were."""
    header, rows = _trace_rows(Path(path))
    if not header:
        raise FlopcastError(f"--trace {path} is empty; a trace has columns {', '.join(TRACE.columns)}")
    missing = TRACE.missing(header)
    if missing:
        raise FlopcastError(f"--trace {path} lacks column(s) {', '.join(missing)}; a trace has columns "
                            f"{', '.join(TRACE.columns)}")
    TRACE.check_header(header, f"--trace {path}")
    if not rows:
        raise FlopcastError(f"--trace {path} has no rows (only a header)")
    long = next((n for n, r in enumerate(rows, start=2) if r.get(None)), None)
    if long:
        raise FlopcastError(f"--trace {path}: row {long} has more cells than the header's {len(header)} columns")
    a, i, o = (_trace_column(rows, key, path) for key in ("arrival_s", "input_tokens", "output_tokens"))
    p = _trace_column(rows, "prefix_tokens", path) if "prefix_tokens" in header else None
    # arrivals out of order are sorted (a trace may be merged from several sources), and counted
    order = np.argsort(a, kind="stable")
    moved = int((order != np.arange(len(a))).sum())
    if moved and notes is not None:
        notes.append(f"trace rows sorted by arrival_s: {moved} of {len(a)} were out of order")
    if p is not None and notes is not None:
        notes.append(f"prefix caching from the trace's prefix_tokens: {p.sum() / max(1, i.sum()):.1%} of prompt "
                     "tokens cached (not prefilled; the shared blocks held once per replica)")
    return Requests(a[order], i[order], o[order], None if p is None else p[order])
