"""The numbers a user types, checked once at the edge: type, finite, and a physical range.

One table (LIMITS) holds every option's bounds; the API checks its arguments with `check` (errors name
the Python argument: "tp=0 is out of range ..."), the CLI builds its click parameter types from the same
table (`click_type`, errors name the flag: "--tp 0 is out of range ..."). Past the edge the code trusts
its inputs. The upper bounds are physical: 10^8 chips is 1,000x the largest cluster built; 10^17
tokens 10,000x the largest published pre-training run; a context of 2^27 tokens 100x the longest served.

The rows of user CSV files are checked the same way: each kind of row declares its columns once (a RowSchema of
Column types and Bounds: validate.rows.TRAINING, validate.inference.SERVING, simulate.serving.requests.TRACE), so a
missing or unknown column and a cell that is not a number, not finite, not whole or out of range each give one
sentence naming the column (and its row) and what is valid.
"""

from __future__ import annotations

import math
import numbers
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import FlopcastError
from .units import DAY, parse_count, parse_duration


@dataclass(frozen=True)
class Bound:
    """A whole number (`integer`) or a real one, low..high; `open_low`: above low, not at it."""

    low: float
    high: float
    integer: bool = True
    open_low: bool = False
    unit: str = ""  # "s" for durations (accept "30d", "2h", "100ms"), "" for counts ("1.5T", "300B")

    def valid(self) -> str:
        if self.integer:
            return f"a whole number from {int(self.low):,} to {int(self.high):,}"
        low = f"above {self.low:g}" if self.open_low else f"{self.low:g} or more"
        return f"a finite number {low}, at most {self.high:g}{' ' + self.unit if self.unit else ''}"


# a model's shape, the same wherever it is read (catalog model files, Hugging Face configs, CSV rows): layers,
# widths, heads and experts, tokens per sequence, FFN widths and vocabulary
LAYERS, WIDTH, HEADS, TOKENS_PER_SEQ, FFN = 10_000, 2**20, 2**16, 2**27, 2**24

_YEARS = 365 * DAY
LIMITS = {
    # cluster and layout
    "chips": Bound(1, 1e8), "tp": Bound(1, 65_536), "pp": Bound(1, 10_000), "dp": Bound(1, 1e8),
    "cp": Bound(1, 65_536), "ep": Bound(1, 65_536), "etp": Bound(1, 65_536), "vp": Bound(1, 10_000),
    "micro_batch": Bound(1, 1e6),
    # top: a ranked list a person reads; each layout is a whole forecast (~0.5 ms and a few kB of JSON), so a
    # million of them took minutes
    "global_batch": Bound(1, 1e9), "seq_len": Bound(1, 2**27), "top": Bound(1, 1_000),
    "tokens": Bound(1, 1e17, integer=False),  # under one token the scaling laws overflow (tokens 1e-300)
    # serving (requests: simulate.serving.requests.MAX_REQUESTS, what a run's work limit holds)
    "input_tokens": Bound(1, 2**27), "output_tokens": Bound(1, 2**27), "requests": Bound(1, 250_000),
    "concurrency": Bound(1, 1e6), "max_batch": Bound(1, 1e6), "replicas": Bound(1, 1e6), "threads": Bound(1, 1e6),
    "qps": Bound(1e-6, 1e7, integer=False),  # one request in 11.6 days to ten million a second
    "duration_s": Bound(0, 100 * _YEARS, integer=False, open_low=True, unit="s"),
    "slo_ttft_s": Bound(0, 600, integer=False, open_low=True, unit="s"),  # targets past 10 minutes, or 10 s a
    "slo_tpot_s": Bound(0, 10, integer=False, open_low=True, unit="s"),  # token, are no serving objective
    # failures and plans (trials: each has its own random stream, ~2.5 KB and 30 us to set up, so 10^6 took 30 s of
    # CPU and 2.5 GB before the first event; at 10^5 the 95% interval of the mean is 0.6% of one trial's spread)
    "trials": Bound(1, 1e5), "seed": Bound(0, 2**63 - 1), "spares": Bound(0, 1e7),
    "mtbf_chip_hours": Bound(0, 1e9, integer=False, open_low=True),
    "restart_minutes": Bound(0, 1440, integer=False), "cv": Bound(0, 10, integer=False),
    "checkpoint_write_gbps": Bound(0, 1e6, integer=False, open_low=True),
    "checkpoint_load_gbps": Bound(0, 1e6, integer=False, open_low=True),
    "interval_s": Bound(0, 1e4 * _YEARS, integer=False, open_low=True, unit="s"),
    "deadline_s": Bound(0, 1e4 * _YEARS, integer=False, open_low=True, unit="s"),
    "budget_usd": Bound(0, 1e13, integer=False, open_low=True),
    # economics: a node's price (the catalog schema's bound), a chip's power (a megawatt), the facility's PUE
    "price_per_hour": Bound(0, 1e7, integer=False), "power_w": Bound(0, 1e6, integer=False),
    "pue": Bound(1, 5, integer=False),
}


def _number(value, bound: Bound):
    """The value as an int or a finite float (strings parsed: '1.5T', '2e6', '30d'); ValueError if not one."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, str):
        value = parse_duration(value) if bound.unit == "s" else parse_count(value)
    if isinstance(value, numbers.Integral):
        out = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(float(value)):
        out = float(value)
    else:
        raise ValueError(value)
    if bound.integer and isinstance(out, float):
        if not out.is_integer():
            raise ValueError(value)
        out = int(out)
    return out


def check(name: str, value, *, label: str | None = None):
    """The value of argument `name` if it is a finite number in its range; else FlopcastError naming it
    (as `label` when given, e.g. the CLI flag). None passes through (the argument was left out)."""
    if value is None:
        return None
    bound = LIMITS[name]
    shown = f"{label} {value!r}" if label else f"`{name}={value!r}`"
    try:
        out = _number(value, bound)
    except (ValueError, TypeError, OverflowError):
        raise FlopcastError(f"{shown} is not a number; valid: {bound.valid()}") from None
    if out < bound.low or out > bound.high or (bound.open_low and out == bound.low):
        raise FlopcastError(f"{shown} is out of range; valid: {bound.valid()}")
    return out


def check_all(**values) -> dict:
    """Each keyword checked by its own bound; returns them converted."""
    return {k: check(k, v) for k, v in values.items()}


def click_type(name: str):
    """A click parameter type for argument `name`: parses '1.5T' or '30d', checks the bound; a bad value is
    a FlopcastError naming the flag (one line, exit code 2)."""
    import click

    bound = LIMITS[name]

    class Checked(click.ParamType):
        def convert(self, value, param, ctx):
            return check(name, value, label=param.opts[0] if param else None)

    Checked.name = "integer" if bound.integer else ("duration" if bound.unit else "number")
    return Checked()


def read_bounded(path, max_bytes: int, what: str = "") -> bytes:
    """The bytes of a user's file, at most `max_bytes` of them read: a FlopcastError for a path that is not a
    regular file (a device such as /dev/zero is read until memory runs out, a pipe waits for a writer forever; a
    symbolic link counts as what it points to) or one over `max_bytes`. `what` names it in the error ("--trace").
    A missing path or a folder is the caller's to name first, in its own words; here either is one line too."""
    p = Path(path)
    shown = f"{what} {p}" if what else str(p)
    try:
        st = p.stat()
    except OSError as exc:
        raise FlopcastError(" ".join(f"cannot read {shown}: {exc.strerror or exc}".split())) from None
    if stat.S_ISDIR(st.st_mode):
        raise FlopcastError(f"{shown} is a folder; valid: a file")
    if not stat.S_ISREG(st.st_mode):
        raise FlopcastError(f"{shown} is not a regular file (a device, a pipe or a socket); valid: a file")
    if st.st_size > max_bytes:
        raise FlopcastError(f"{shown} is {st.st_size:,} bytes; valid: a file of at most {max_bytes:,} bytes")
    try:
        with open(p, "rb") as f:
            data = f.read(max_bytes + 1)  # + 1: a file that grew after the stat is caught too
    except OSError as exc:
        raise FlopcastError(" ".join(f"cannot read {shown}: {exc.strerror or exc}".split())) from None
    if len(data) > max_bytes:
        raise FlopcastError(f"{shown} is over {max_bytes:,} bytes; valid: a file of at most {max_bytes:,} bytes")
    return data


def unicode_text(value) -> bool:
    """Whether every string in a value parsed from JSON (keys too) is Unicode: JSON's escapes can spell an unpaired
    surrogate (`"\\ud800"`), which no encoder writes, so printing or saving it later would fail."""
    import json

    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    except (TypeError, ValueError):
        return True  # not JSON-like (the caller's own check names what is wrong)
    return True


def resolved(path, what: str = "") -> Path:
    """The absolute path with its symbolic links followed; a FlopcastError for links that form a loop (before
    Python 3.13 `Path.resolve` raises RuntimeError there) or a path the system cannot resolve (a name too long)."""
    p = Path(path).expanduser()
    shown = f"{what} {p}" if what else str(p)
    try:
        return p.resolve()
    except RuntimeError:
        raise FlopcastError(f"cannot read {shown}: its symbolic links form a loop; valid: a file") from None
    except OSError as exc:
        raise FlopcastError(" ".join(f"cannot read {shown}: {exc.strerror or exc}".split())) from None


def check_output(path, label: str) -> None:
    """A FlopcastError for an output target that would block forever: a named pipe (or socket) no process reads
    (opening it to write waits for a reader). A pipe being read, /dev/null and /dev/full pass (a full device's
    write fails later, with its own one-line error); so does a path that does not exist yet."""
    import errno
    import os

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISSOCK(mode):
        raise FlopcastError(f"{label} {path} is a socket; valid: a file")
    if not stat.S_ISFIFO(mode):
        return
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise FlopcastError(f"{label} {path} is a pipe that no process reads; valid: a file, or a pipe being "
                                "read") from None


# ---- the rows of user CSV files (validate's measured runs, serve's --trace): one declared schema per row kind ----


@dataclass(frozen=True)
class Column:
    """A CSV column: a number within `bound` (None: a text cell); `required`: the header must name it;
    `percent`: a trailing % is allowed (the cell is then a percentage)."""

    bound: Bound | None = None
    required: bool = False
    percent: bool = False


def count(low: int, high: float, **kw) -> Column:
    return Column(Bound(low, high), **kw)


def real(high: float, low: float = 0.0, open_low: bool = True, **kw) -> Column:
    return Column(Bound(low, high, integer=False, open_low=open_low), **kw)


TEXT = Column()
REQUIRED_TEXT = Column(required=True)


@dataclass(frozen=True)
class RowSchema:
    """The columns a kind of CSV row may have (every other column is refused by name), with each cell's type
    and physical range; `one_of`: the header names at least one of these (the measured figures)."""

    what: str  # "the training schema", "a trace"
    columns: dict
    one_of: tuple = ()

    def check_header(self, header, where: str) -> None:
        """A one-line FlopcastError for a column the schema does not know, naming the closest known one."""
        import difflib

        for name in header:
            if name and name not in self.columns:  # a blank name: a spreadsheet's trailing comma, no column
                close = difflib.get_close_matches(name, list(self.columns), n=1)
                hint = f"did you mean {close[0]}? " if close else ""
                raise FlopcastError(f"{where}: column {name!r} is not a column of {self.what}; {hint}valid: "
                                    f"{', '.join(self.columns)}")

    def missing(self, header) -> list[str]:
        """The required columns the header lacks, and 'one of ...' when it names none of `one_of`."""
        out = [c for c, col in self.columns.items() if col.required and c not in header]
        if self.one_of and not any(c in header for c in self.one_of):
            out.append(self.one_of[0] if len(self.one_of) == 1 else "one of " + ", ".join(self.one_of))
        return out

    def cell(self, name: str, value):
        """The cell of column `name` as a number (None when blank): FlopcastError naming the column, the value
        and what is valid when it is not a number, not finite, not whole, or outside the column's range."""
        col = self.columns.get(name)
        return parse_cell(name, value, col.bound if col else None, col.percent if col else False)


def parse_cell(name: str, value, bound: Bound | None, percent: bool = False):
    """A CSV cell as a number checked against `bound` (None: only finite); None when blank."""
    s = (value or "").strip() if isinstance(value, str) or value is None else str(value)
    if not s:
        return None
    shown = s
    if percent and s.endswith("%"):
        s = s[:-1].strip()
    try:
        v = float(s)
    except ValueError:
        raise FlopcastError(f"{name} {shown!r} is not a number") from None
    if not math.isfinite(v):
        raise FlopcastError(f"{name} {shown!r} is not a finite number")
    if bound is None:
        return v
    if bound.integer:
        if not v.is_integer():
            raise FlopcastError(f"{name} {shown!r} is not a whole number")
        v = int(v)
    if v < bound.low or (bound.open_low and v == bound.low):
        what = "positive" if (bound.low == 0 and bound.open_low) or (bound.integer and bound.low == 1) else (
            f"at least {bound.low:g}")
        raise FlopcastError(f"{name} must be {what}, got {shown}")
    if v > bound.high:
        raise FlopcastError(f"{name} {shown} is out of range; valid: {bound.valid()}")
    return v
