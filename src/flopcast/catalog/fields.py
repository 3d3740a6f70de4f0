"""Field types of the catalog schema: each parses one kind of value at the edge and checks its range.

A field type is an `Annotated` type whose `Check` takes the raw YAML/TOML value and returns it in SI
(quantities), as an int (counts) or a bool; a bad value raises ValueError with the tail of the one-line
message ("is out of range; valid: a positive integer (at most 10,000)"), which schema.py prefixes with the
file, the field and the value. Nothing here imports pydantic: a `Check` is the plain validator pydantic
runs for user files (schema.py) and the one the built-in entries are read with (entries.py, without
pydantic, so a command starts fast). The bounds are physical: a chip of
1 EFLOP/s or 10 PB/s, a model of 10,000 layers or 2^20 hidden are past anything built or planned,
so a value beyond them is a typo or a unit slip, not a what-if.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any

from ..units import UnitError, parse, reads_not_finite

EXAMPLE = {"flop_rate": "667 TFLOP/s", "bytes": "96 GiB", "bandwidth": "2.9 TB/s", "time": "2 us", "power": "700 W",
           "frequency": "2.6 GHz", "price": "21.5 USD/h"}
WORD = {"flop_rate": "compute rate", "bytes": "size in bytes", "bandwidth": "bandwidth", "time": "time",
        "power": "power", "frequency": "frequency", "price": "price"}
TRUE_WORDS, FALSE_WORDS = ("true", "yes"), ("false", "no")


@dataclass(frozen=True)
class Check:
    """A field's validator: `func` takes the raw value and returns it parsed, or raises ValueError with the
    message tail; `description` says what is valid. To pydantic it is a plain validator (the value goes to
    `func` as it is, no coercion first); pydantic_core is imported only when pydantic builds a schema."""

    func: Callable[[Any], Any]
    description: str = ""

    def __get_pydantic_core_schema__(self, source, handler):
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(self.func)


@dataclass(frozen=True)
class Doc:
    """The description of a composite field (a list, a pair); `max_length` bounds a list's length."""

    description: str
    max_length: int | None = None

    def __get_pydantic_core_schema__(self, source, handler):
        schema = handler(source)
        if self.max_length is not None:
            schema["max_length"] = self.max_length
        return schema


def _unit_hint(value, dimension: str) -> str:
    """'5.8 TB' for a bandwidth -> '5.8 TB/s'; otherwise its number with the dimension's usual unit."""
    text = str(value).strip()
    if dimension in ("bandwidth", "flop_rate"):
        try:
            parse(text + "/s", dimension)
            return text + "/s"
        except UnitError:
            pass
    words = text.replace(",", "").split()
    try:
        float(words[0])
    except (ValueError, IndexError):
        return EXAMPLE[dimension]
    return f"{words[0]} {EXAMPLE[dimension].split()[1]}"


def _quantity_validator(dimension: str, low: float, high: float, zero_ok: bool):
    word, example = WORD[dimension], EXAMPLE[dimension]
    floor = "zero or more" if zero_ok else "above zero"

    def check(value):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"is not a {word}; write e.g. {example}")
        try:
            out = parse(value, dimension)
        except (UnitError, OverflowError):
            raise ValueError(f"is not a {word}; write e.g. {_unit_hint(value, dimension)}") from None
        if not math.isfinite(out):
            raise ValueError(f"is out of range; valid: a finite {word}, e.g. {example}")
        if out < 0 or (out == 0 and not zero_ok):
            raise ValueError(f"is out of range; valid: a {word} {floor}, e.g. {example}")
        if (out and out < low) or out > high:
            raise ValueError(f"is out of range; valid: a {word} {floor}, from {_si(low, dimension)} "
                             f"to {_si(high, dimension)}")
        return out

    return check


_SI_UNIT = {"flop_rate": "FLOP/s", "bytes": "B", "bandwidth": "B/s", "time": "s", "power": "W", "frequency": "Hz"}


def _si(value: float, dimension: str) -> str:
    from ..units import fmt

    return f"{value:g} USD/h" if dimension == "price" else fmt(value, _SI_UNIT[dimension])


def quantity(dimension: str, low: float, high: float, *, zero_ok: bool = False, doc: str = ""):
    """A number with its unit ('2.9 TB/s'), in SI; above zero (zero too with zero_ok), within [low, high]."""
    word = WORD[dimension]
    floor = "zero or more" if zero_ok else "above zero"
    check = _quantity_validator(dimension, low, high, zero_ok)
    return Annotated[float, Check(check, doc or f"a {word} {floor} such as {EXAMPLE[dimension]}")]


def _integer(value, valid: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"is out of range; valid: {valid}")
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise ValueError(f"is not an integer; valid: {valid}")
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.replace(",", "").replace("_", "").strip())
        except ValueError:
            pass
    raise ValueError(f"is not an integer; valid: {valid}")


def count(low: int = 1, high: int = 10**6, *, doc: str = ""):
    """A whole number from low to high (a float with no fraction, or '8,192', is accepted)."""
    valid = ("a positive integer" if low == 1 else f"an integer of {low} or more") + f" (at most {high:,})"

    def check(value):
        out = _integer(value, valid)
        if not low <= out <= high:
            raise ValueError(f"is out of range; valid: {valid}")
        return out

    return Annotated[int, Check(check, doc or valid)]


def amount(high: float, *, doc: str = ""):
    """A large count that may be written as a float or a string ('8.03e9'): parameters, tokens; >= 0."""
    valid = f"a count of zero or more (at most {high:.0e})"

    def check(value):
        if isinstance(value, bool):
            raise ValueError(f"is out of range; valid: {valid}")
        try:
            out = float(str(value).replace(",", "").replace("_", "")) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise ValueError(f"is not a number; valid: {valid}, e.g. 8030000000") from None
        if not 0 <= out <= high:
            raise ValueError(f"is out of range; valid: {valid}")
        return out

    return Annotated[float, Check(check, doc or valid)]


def _flag(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    raise ValueError("is not a boolean; valid: true, false, yes or no")


Flag = Annotated[bool, Check(_flag, "true / false (or yes / no)")]


def _text(value):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError("is not a name; valid: text such as `my-chip`")
    if reads_not_finite(value):
        raise ValueError("reads as a number that is not finite, not a name; valid: text such as `my-chip`")
    return str(value)


Text = Annotated[str, Check(_text, "text")]


def _names(value):
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                                       for v in value):
        raise ValueError("is not a list of names; valid: e.g. [neon, sve2]")
    if len(value) > 256:
        raise ValueError("is out of range; valid: a list of at most 256 names")
    return tuple(str(v) for v in value)


Names = Annotated[tuple, Check(_names, "a list of names, e.g. [neon, sve2]")]


def _remarks(value):
    if not isinstance(value, dict) or not all(isinstance(v, (str, int, float, bool)) or v is None
                                              for v in value.values()):
        raise ValueError("is not a mapping of field -> remark; valid: e.g. {power: \"not published\"}")
    return {str(k): v for k, v in value.items()}


Remarks = Annotated[dict, Check(_remarks, "a mapping of field -> remark")]


def _source_ids(value):
    def ok(v):
        return isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))

    if not isinstance(value, dict) or not all(ok(v) for v in value.values()):
        raise ValueError("is not a mapping of field -> source id; valid: e.g. {tile: NKI_TRN2}")
    return {str(k): v for k, v in value.items()}


SourceIds = Annotated[dict, Check(_source_ids, "a mapping of field -> source id")]


def choice(enum: type[Enum], *, doc: str = ""):
    """One of an enum's values, any case."""
    values = [e.value for e in enum]

    def check(value):
        if isinstance(value, str) and value.strip().lower() in values:
            return enum(value.strip().lower())
        raise ValueError(f"is not one of the choices; valid: {', '.join(values)}")

    return Annotated[Any, Check(check, doc or " | ".join(values))]
