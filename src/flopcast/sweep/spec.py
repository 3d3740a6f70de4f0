"""The sweep file: a grid of training (or serving) scenarios, declared with pydantic and checked when it is read.

    models: [llama3-8b, my-model.yaml, path/to/config.json]
    systems: [trn2.48xlarge, p5.48xlarge]
    chips: {from: 64, to: 1024, times: 2}
    tokens: [1T, 15T]                       # or tokens_per_param: 20 (the default)
    layout: {dtype: bf16}                   # pins; a list of pin sets sweeps them too
    what_if:                                # hardware variants: the product of the lists
      memory_bandwidth: [1x, 1.5x, 2x]
      peak_flops.bf16: [667 TFLOP/s, 1.3 PFLOP/s]
    objective: throughput                   # or a list: throughput, cost, energy, time_with_failures

or, instead of chips, tokens, layout and objective, a `serving:` block of SLOs and workloads (sweep/serving.py):
each scenario is then a deployment search at those targets. Every scenario is the product of one value of each
list. The schema and every field's meaning are in docs/sweep.md.
"""

from __future__ import annotations

import difflib
import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..catalog import files
from ..errors import FlopcastError
from ..model.strategy import LAYOUT_FIELDS
from ..units import parse_count
from . import hardware
from . import serving as sv

MAX_SCENARIOS = 1_000_000  # a bound on the grid a file may declare (the product of its lists)


class Range(BaseModel):
    """`{from, to, times}` (geometric: 64, 128, ... to), `{from, to, step}` (arithmetic) or
    `{from, to, steps}` (that many values evenly spaced, ends included)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    start: float | str = Field(alias="from")
    stop: float | str = Field(alias="to")
    times: float | None = Field(default=None, gt=1)
    step: float | None = Field(default=None, gt=0)
    steps: int | None = Field(default=None, ge=2, le=10_000)

    @model_validator(mode="after")
    def _one_rule(self):
        given = [k for k in ("times", "step", "steps") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a range needs exactly one of times, step or steps")
        return self

    def values(self, read=float) -> list:
        """The values, each read by `read` (SI for quantities); a multiple stays a multiple ('1.5x')."""
        multiples = hardware.is_multiple(self.start)
        lo, hi = (float(str(v)[:-1]) if multiples else read(v) for v in (self.start, self.stop))
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo or lo <= 0:
            raise ValueError(f"a range runs from a positive value up to a larger one, got {self.start} to {self.stop}")
        if self.steps:
            out = [lo + (hi - lo) * i / (self.steps - 1) for i in range(self.steps)]
        else:
            out, v = [], lo
            while v <= hi * (1 + 1e-9) and len(out) <= 10_000:
                out.append(v)
                v = v * self.times if self.times else v + self.step
        if len(out) > 10_000:
            raise ValueError("a range may hold at most 10,000 values")
        return [f"{v:.6g}x" for v in out] if multiples else out


Scalar = int | float | str
Objective = Literal["throughput", "cost", "energy", "time_with_failures"]
Values = Range | list[Scalar] | Scalar


class SweepFile(BaseModel):
    """The fields of a sweep file (docs/sweep.md)."""

    model_config = ConfigDict(extra="forbid")
    name: str = ""
    models: list[str] = Field(min_length=1)
    systems: list[str] = Field(min_length=1)
    chips: Values | None = None
    tokens: Values | None = None
    tokens_per_param: float | None = Field(default=None, gt=0, le=1e6)
    seq_len: list[int] | int | None = None
    layout: dict[str, Any] | list[dict[str, Any]] = Field(default_factory=dict)
    what_if: dict[str, Values] = Field(default_factory=dict)
    objective: Objective | list[Objective] | None = None
    serving: sv.ServingBlock | None = None

    @field_validator("models", "systems", mode="before")
    @classmethod
    def _listed(cls, v):
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _checks(self):
        if self.serving is not None:
            given = [k for k in sv.TRAINING_ONLY if k in self.model_fields_set]
            if given:
                raise ValueError(f"{given[0]!r} is a training field; a serving sweep sizes each deployment itself "
                                 "(replicas x TP per instance; serving.qps for a fleet): leave it out, or sweep "
                                 "training and serving in two files")
        elif self.chips is None:
            raise ValueError("field 'chips' is missing (see docs/sweep.md); or give a serving: block")
        if self.tokens is not None and self.tokens_per_param is not None:
            raise ValueError("give tokens or tokens_per_param, not both")
        for pins in (self.layout if isinstance(self.layout, list) else [self.layout]):
            unknown = set(pins) - set(LAYOUT_FIELDS)
            if unknown:
                raise ValueError(_unknown_key(sorted(unknown)[0], LAYOUT_FIELDS, "layout"))
            for key, value in pins.items():
                if isinstance(value, (list, dict)):
                    raise ValueError(f"layout pin {key!r} is {value!r}: a pin is one value; to sweep several, give "
                                     f"a list of pin sets (layout: [{{{key}: 1}}, {{{key}: 2}}])")
        for key in self.what_if:
            hardware.knob(key)
        return self


def _unknown_key(key: str, valid, where: str) -> str:
    close = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}?" if close else f"valid: {', '.join(valid)}"
    return f"unknown key {key!r} in {where}; {hint}"


def _message(exc: ValidationError) -> str:
    """pydantic's first error as one sentence: where, what, what is valid."""
    errors = exc.errors()
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "missing":
        return f"field {loc!r} is missing (see docs/sweep.md)"
    if err["type"] == "extra_forbidden":
        key = str(err["loc"][-1])
        where = ".".join(str(p) for p in err["loc"][:-1]) or "the sweep file"
        valid = (SweepFile.model_fields if len(err["loc"]) == 1 else
                 sv.ServingBlock.model_fields if err["loc"][0] == "serving" else Range.model_fields)
        names = [f.alias or n for n, f in valid.items()]
        return _unknown_key(key, names, where)
    text = str(err["msg"]).removeprefix("Value error, ")
    return f"{loc}: {text}" if loc else text


@dataclass(frozen=True)
class Scenario:
    """One point of the grid, as written (names, values): what the results table keys a row by."""

    model: str
    system: str
    chips: int | None  # None: a serving scenario (its deployment search sizes it)
    tokens: float | None  # None: tokens_per_param x the model's parameters
    tokens_per_param: float | None
    seq_len: int | None
    layout: tuple  # ((field, value), ...) pinned
    what_if: tuple  # ((knob, value as written), ...)
    objective: str
    serve: sv.Serve | None = None  # a serving scenario's targets and workload

    @property
    def id(self) -> str:
        """A stable key for resuming: every field, in order."""
        hw = ",".join(f"{k}={v}" for k, v in self.what_if)
        if self.serve is not None:
            return f"{self.model}|{self.system}|{hw}|{self.serve.key}"
        pins = ",".join(f"{k}={v}" for k, v in self.layout)
        tokens = f"{self.tokens:.6g}" if self.tokens else f"{self.tokens_per_param or 20:g}/param"
        return f"{self.model}|{self.system}|{hw}|{self.chips}|{tokens}|{self.seq_len or ''}|{pins}|{self.objective}"


@dataclass(frozen=True)
class Sweep:
    name: str
    path: str
    scenarios: tuple  # Scenario, grid order
    what_if_keys: tuple


def read(path) -> Sweep:
    """A sweep file, checked and expanded into scenarios; a bad file is one FlopcastError."""
    p = Path(path).expanduser()
    if p.suffix.lower() not in (".yaml", ".yml"):
        raise FlopcastError(f"sweep file {path}: must be a YAML file (.yaml or .yml)")
    if not p.exists():
        raise FlopcastError(f"sweep file {path} does not exist")
    try:
        data = files.read_file(p)  # the catalog's reader of user files: bounded size, nesting and aliases
    except FlopcastError as exc:
        if "must hold a mapping" in str(exc):
            raise FlopcastError(f"sweep file {path}: must hold a mapping of fields (models, systems, chips, ...)") \
                from None
        raise FlopcastError(f"sweep file: {exc}") from None
    try:
        spec = SweepFile.model_validate(data)
        return expand(spec, str(p), base=p.parent)
    except ValidationError as exc:
        raise FlopcastError(f"sweep file {path}: {_message(exc)}") from None
    except (ValueError, FlopcastError) as exc:
        raise FlopcastError(f"sweep file {path}: {exc}") from None


def _values(v, what: str, read=float) -> list:
    if v is None:
        return [None]
    if isinstance(v, Range):
        return v.values(read)
    out = v if isinstance(v, list) else [v]
    if not out:
        raise ValueError(f"{what}: the list is empty")
    return out


def _count(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < 1:
        raise ValueError(f"{what}: {v!r} must be a positive whole number")
    return int(v)


def _tokens(v) -> float | None:
    if v is None:
        return None
    try:
        out = parse_count(v) if isinstance(v, str) else float(v)
    except ValueError:
        raise ValueError(f"tokens: {v!r} is not a token count; write e.g. 15T or 1.5e12") from None
    if not (0 < out <= 1e17) or isinstance(v, bool):
        raise ValueError(f"tokens: {v!r} must be positive and at most 1e17")
    return out


def _path(ref: str, base: Path) -> str:
    """A model or system given as a file is relative to the sweep file's folder."""
    p = Path(ref).expanduser()
    looks_like_file = p.suffix.lower() in (".yaml", ".yml", ".toml", ".json") or "/" in ref
    if looks_like_file and not p.is_absolute() and (base / p).exists():
        return str(base / p)
    return ref


def _what_ifs(spec: SweepFile) -> list:
    """The hardware variants: ((knob, value as written), ...) per combination of the what-if lists."""
    keys, grids = tuple(spec.what_if), []
    for key in keys:
        k = hardware.knob(key)
        values = _values(spec.what_if[key], f"what_if.{key}", lambda v, k=k: hardware.absolute(v, k))
        for v in values:  # checked now, kept as written (a multiple resolves against each system later)
            hardware.multiple(v, key) if hardware.is_multiple(v) else hardware.absolute(v, k)
        grids.append(values)
    return [tuple(zip(keys, combo)) for combo in itertools.product(*grids)] if keys else [()]


def _bounded(n: int) -> None:
    if n > MAX_SCENARIOS:
        raise ValueError(f"the grid holds {n:,} scenarios; at most {MAX_SCENARIOS:,} per file")


def expand(spec: SweepFile, path: str, base: Path = Path(".")) -> Sweep:
    hw = _what_ifs(spec)
    models = [_path(m, base) for m in spec.models]
    systems = [_path(s, base) for s in spec.systems]
    name, keys = spec.name or Path(path).stem, tuple(spec.what_if)
    if spec.serving is not None:
        serves = sv.points(spec.serving)
        _bounded(math.prod(map(len, (models, systems, hw, serves))))
        out = tuple(Scenario(model=m, system=s, chips=None, tokens=None, tokens_per_param=None, seq_len=None,
                             layout=(), what_if=w, objective=sv.OBJECTIVE, serve=v)
                    for m, s, w, v in itertools.product(models, systems, hw, serves))
        return Sweep(name=name, path=path, scenarios=out, what_if_keys=keys)
    chips = [_count(c, "chips") for c in _values(spec.chips, "chips")]
    tokens = [_tokens(t) for t in _values(spec.tokens, "tokens", _tokens)]
    seqs = [None if s is None else _count(s, "seq_len") for s in _values(spec.seq_len, "seq_len")]
    pin_sets = spec.layout if isinstance(spec.layout, list) else [spec.layout]
    pins = [tuple(sorted(p.items())) for p in pin_sets] or [()]
    objective = spec.objective or "throughput"
    objectives = objective if isinstance(objective, list) else [objective]
    _bounded(math.prod(map(len, (models, systems, hw, chips, tokens, seqs, pins, objectives))))
    out = tuple(
        Scenario(model=m, system=s, chips=c, tokens=t, tokens_per_param=spec.tokens_per_param, seq_len=q,
                 layout=p, what_if=w, objective=o)
        for m, s, w, c, t, q, p, o in itertools.product(models, systems, hw, chips, tokens, seqs, pins, objectives)
    )
    return Sweep(name=name, path=path, scenarios=out, what_if_keys=keys)
