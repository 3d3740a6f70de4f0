"""Units: SI inside, prefixes only at the edges.

Catalog files write quantities as strings with their unit ("667 TFLOP/s",
"96 GiB", "200 Gbit/s"); `parse` converts them to SI (FLOP/s, bytes, bytes/s,
seconds, watts, hertz) once, at load. Prices stay in USD per hour.
"""

from __future__ import annotations

import math
import re

KILO, MEGA, GIGA, TERA, PETA, EXA = 1e3, 1e6, 1e9, 1e12, 1e15, 1e18
KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40
TFLOPS = TERA
HOUR, DAY = 3600.0, 86400.0

_DECIMAL = {"": 1.0, "k": KILO, "K": KILO, "M": MEGA, "G": GIGA, "T": TERA, "P": PETA, "E": EXA}
_BINARY = {"Ki": KiB, "Mi": MiB, "Gi": GiB, "Ti": TiB}

# unit name (without prefix) -> (dimension, factor to SI)
_BASE = {
    "FLOP/s": ("flop_rate", 1.0),
    "OP/s": ("flop_rate", 1.0),
    "B": ("bytes", 1.0),
    "B/s": ("bandwidth", 1.0),
    "bit/s": ("bandwidth", 1.0 / 8),
    "s": ("time", 1.0),
    "W": ("power", 1.0),
    "Hz": ("frequency", 1.0),
}
_TIME = {"us": 1e-6, "ms": 1e-3, "ns": 1e-9, "s": 1.0, "h": HOUR, "d": DAY}

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_PATTERN = re.compile(rf"^\s*({_NUMBER})\s*(\S+)\s*$")


class UnitError(ValueError):
    """A quantity string that does not parse."""


def parse(text: str | int | float, dimension: str | None = None) -> float:
    """Parse '667 TFLOP/s' -> 6.67e14. Bare numbers pass through unchanged.

    `dimension` (flop_rate, bytes, bandwidth, time, power, frequency, price) checks
    that the unit measures what the caller expects.
    """
    if isinstance(text, bool):
        raise UnitError(f"expected a quantity, got {text!r}")
    if isinstance(text, (int, float)):
        return float(text)
    m = _PATTERN.match(text.replace(",", ""))
    if not m:
        raise UnitError(f"cannot read quantity {text!r}: expected a number and a unit such as '96 GiB'")
    value, unit = float(m.group(1)), m.group(2)
    dim, factor = _unit(unit)
    if dimension is not None and dim != dimension:
        raise UnitError(f"{text!r} is a {dim}, expected a {dimension}")
    return value * factor


def _unit(unit: str) -> tuple[str, float]:
    if unit == "USD/h":
        return "price", 1.0
    if unit in _TIME:
        return "time", _TIME[unit]
    for base, (dim, factor) in _BASE.items():
        if unit.endswith(base):
            prefix = unit[: -len(base)]
            if prefix in _BINARY:
                return dim, factor * _BINARY[prefix]
            if prefix in _DECIMAL:
                return dim, factor * _DECIMAL[prefix]
    raise UnitError(f"unknown unit {unit!r}")


def fmt(value: float, unit: str, digits: int = 3) -> str:
    """Render an SI value with a decimal prefix: fmt(6.67e14, 'FLOP/s') -> '667 TFLOP/s'."""
    if value is None:
        return "n/a"
    for prefix, factor in (("E", EXA), ("P", PETA), ("T", TERA), ("G", GIGA), ("M", MEGA), ("k", KILO)):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def fmt_count(n: float) -> str:
    """A count as a person writes it: 15T, 1.5T, 300B, 6.2T, 512."""
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:.3g}"


def fmt_duration(seconds: float) -> str:
    """Human duration: 0.8 s, 12.3 min, 4.1 h, 18.2 days, 1,307.6 days; 'never' for an infinite one (the slow end
    of a run's interval when faults there come faster than its checkpoints save progress), 'n/a' for no number."""
    if seconds != seconds:
        return "n/a"
    if seconds == float("inf"):
        return "never"
    if 0 < seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 120:
        return f"{seconds:.2f} s"
    if seconds < 2 * HOUR:
        return f"{seconds / 60:.1f} min"
    if seconds < 2 * DAY:
        return f"{seconds / HOUR:.1f} h"
    return f"{seconds / DAY:,.1f} days"


def reads_not_finite(text) -> bool:
    """Whether a text reads as a number that is not finite: 'nan', 'inf', '-Infinity' as Python reads them, or YAML's
    '.nan' and '-.inf' (what a spreadsheet, a dataframe or a YAML tool writes for a missing value); no name is one."""
    s = str(text).strip()
    sign = s[:1] if s[:1] in "+-" else ""
    body = s[len(sign):]
    try:
        return not math.isfinite(float(sign + (body[1:] if body.startswith(".") else body)))
    except ValueError:
        return False


def _finite(value: float, text: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value


# duration suffixes, longest first so that "ms" is not read as "s" and "min" not as "in"
_DURATION_SUFFIXES = (("weeks", 7 * DAY), ("week", 7 * DAY), ("days", DAY), ("day", DAY), ("hours", HOUR),
                      ("hour", HOUR), ("mins", 60.0), ("min", 60.0), ("ms", 1e-3), ("us", 1e-6), ("w", 7 * DAY),
                      ("d", DAY), ("h", HOUR), ("s", 1.0))


def parse_duration(text: str) -> float:
    """'30d', '12h', '90 min', '500ms', '2w', '3600' (seconds) -> seconds; ValueError for text that is not a
    finite duration."""
    t = str(text).strip().lower().replace(" ", "")
    for suffix, factor in _DURATION_SUFFIXES:
        if t.endswith(suffix) and t != suffix:
            return _finite(float(t[: -len(suffix)]) * factor, text)
    return _finite(float(t), text)


def parse_count(text: str) -> float:
    """'1.5T' -> 1.5e12, '300B' -> 3e11, '2.5M' -> 2.5e6, '1e12' -> 1e12; a whole number stays an int.
    ValueError for text that is not a finite count."""
    t = str(text).strip().replace(",", "").replace("_", "").replace("$", "")
    if t.isdigit():
        return int(t)
    factors = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
    if t and t[-1] in factors:
        return _finite(float(t[:-1]) * factors[t[-1]], text)
    return _finite(float(t), text)
