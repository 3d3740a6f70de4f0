"""The page's fields as one frozen, hashable query: strings from the URL read once, each error one sentence.

Counts and durations stay the strings the user typed ("1T", "chinchilla"): flopcast.api reads them and
names the argument when one is wrong. Only what the API takes as a number is checked here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import FlopcastError

INTEGER_FIELDS = ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch")
CHOICE_FIELDS = ("recompute", "sharding", "dtype", "schedule")
KNOWN = {"model", "hardware", "chips", "tokens", *INTEGER_FIELDS, *CHOICE_FIELDS}


@dataclass(frozen=True)
class Query:
    model: str
    hardware: str
    chips: int | None
    tokens: str | None
    layout_items: tuple = ()

    @property
    def layout(self) -> dict:
        return dict(self.layout_items)

    @property
    def systems(self) -> tuple:
        return tuple(s.strip() for s in self.hardware.split(",") if s.strip())

    def with_model(self, model: str) -> Query:
        return replace(self, model=model)


def _integer(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise FlopcastError(f"`{name}` must be a positive whole number, got {text!r}")
    return value


def parse(params: dict, defaults: dict) -> Query:
    """A Query from the URL's parameters (str -> str); blanks take `defaults` or are left to the search."""
    unknown = sorted(set(params) - KNOWN)
    if unknown:
        raise FlopcastError(f"unknown field(s) {', '.join(unknown)}; valid: {', '.join(sorted(KNOWN))}")
    given = {k: str(v).strip() for k, v in params.items() if str(v).strip()}
    chips = given.get("chips")
    layout = tuple((k, _integer(k, given[k])) for k in INTEGER_FIELDS if k in given)
    layout += tuple((k, given[k]) for k in CHOICE_FIELDS if k in given)
    return Query(model=given.get("model", defaults["model"]), hardware=given.get("hardware", defaults["hardware"]),
                 chips=None if chips is None else _integer("chips", chips), tokens=given.get("tokens"),
                 layout_items=layout)
