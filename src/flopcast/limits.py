"""The numbers a user types, checked once at the edge: type, finite, and a physical range.

One table (LIMITS) holds every option's bounds; the API checks its arguments with `check` (errors name
the Python argument: "tp=0 is out of range ..."), the CLI builds its click parameter types from the same
table (`click_type`, errors name the flag: "--tp 0 is out of range ..."). Past the edge the code trusts
its inputs. The upper bounds are physical: 10^8 chips is 1,000x the largest cluster built; 10^17
tokens 10,000x the largest published pre-training run; a context of 2^27 tokens 100x the longest served.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

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


_YEARS = 365 * DAY
LIMITS = {
    # cluster and layout
    "chips": Bound(1, 1e8), "tp": Bound(1, 65_536), "pp": Bound(1, 10_000), "dp": Bound(1, 1e8),
    "cp": Bound(1, 65_536), "ep": Bound(1, 65_536), "etp": Bound(1, 65_536), "vp": Bound(1, 10_000),
    "micro_batch": Bound(1, 1e6),
    "global_batch": Bound(1, 1e9), "seq_len": Bound(1, 2**27), "top": Bound(1, 1e6),
    "tokens": Bound(0, 1e17, integer=False, open_low=True),
    # serving
    "input_tokens": Bound(1, 2**27), "output_tokens": Bound(1, 2**27), "requests": Bound(1, 1e7),
    "concurrency": Bound(1, 1e6), "max_batch": Bound(1, 1e6), "replicas": Bound(1, 1e6), "threads": Bound(1, 1e6),
    "qps": Bound(1e-6, 1e7, integer=False),  # one request in 11.6 days to ten million a second
    "duration_s": Bound(0, 100 * _YEARS, integer=False, open_low=True, unit="s"),
    "slo_ttft_s": Bound(0, 600, integer=False, open_low=True, unit="s"),  # targets past 10 minutes, or 10 s a
    "slo_tpot_s": Bound(0, 10, integer=False, open_low=True, unit="s"),  # token, are no serving objective
    # failures and plans
    "trials": Bound(1, 1e6), "seed": Bound(0, 2**63 - 1), "spares": Bound(0, 1e7),
    "mtbf_chip_hours": Bound(0, 1e9, integer=False, open_low=True),
    "restart_minutes": Bound(0, 1440, integer=False), "cv": Bound(0, 10, integer=False),
    "checkpoint_write_gbps": Bound(0, 1e6, integer=False, open_low=True),
    "checkpoint_load_gbps": Bound(0, 1e6, integer=False, open_low=True),
    "interval_s": Bound(0, 1e4 * _YEARS, integer=False, open_low=True, unit="s"),
    "deadline_s": Bound(0, 1e4 * _YEARS, integer=False, open_low=True, unit="s"),
    "budget_usd": Bound(0, 1e13, integer=False, open_low=True),
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
