"""The declared fields of every catalog entry kind (one line per field: type, range, unit, meaning), and
their reader without pydantic.

An entry kind is a frozen dataclass whose field types (fields.py) carry their checks. `parse` reads a
built-in entry with those checks alone, so a command starts without importing pydantic; schema.py hands
the same classes to pydantic for a user's file and for the one-line message of any entry that does not
parse (tests/test_startup.py checks both readers agree on every built-in entry). Cross-field rules
(kv_heads divides heads, mamf at most the peak) are checked where the values are built (build.py,
Model.shape_errors). SCHEMA.md documents every field declared here (a test checks it).

To add a field: one line in the class of its entry kind, then its use in build.py and a line in SCHEMA.md.
"""

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Annotated

from ..limits import HEADS, LAYERS, TOKENS_PER_SEQ, WIDTH
from ..model.system import Dtype, Topology
from ..model.workload import Mlp
from .fields import Check, Doc, Flag, Names, Remarks, SourceIds, Text, amount, choice, count, quantity

# physical bounds (SI): LAYERS, WIDTH, HEADS and TOKENS_PER_SEQ are limits.py's (a Hugging Face config is read
# by the same); see fields.py for why they are where they are
CHIPS = 10**8


def _rates(value):
    """A data type -> FLOP/s mapping (cfp8 stored as fp8); null rates are dropped (not published)."""
    if not isinstance(value, dict):
        raise ValueError("is not a mapping of data type -> rate; valid: e.g. {bf16: 667 TFLOP/s}")
    check = _RATE.__metadata__[0].func
    out = {}
    for key, rate in value.items():
        name = "fp8" if str(key).lower() == "cfp8" else str(key).lower()
        if name.upper() not in Dtype.__members__:
            raise _Nested(str(key), rate,
                          f"is not a known data type; valid: {', '.join([t.label for t in Dtype] + ['cfp8'])}")
        if rate is not None:
            try:
                out[Dtype[name.upper()]] = check(rate)
            except ValueError as exc:
                raise _Nested(str(key), rate, str(exc)) from None
    return out


class _Nested(ValueError):
    """A bad value one level inside a mapping field: its key, its value and the message tail."""

    def __init__(self, key, value, tail):
        super().__init__(tail)
        self.key, self.value, self.tail = key, value, tail


_RATE = quantity("flop_rate", 1e6, 1e18)
Rates = Annotated[dict, Check(_rates, "data type -> compute rate, e.g. {bf16: 667 TFLOP/s}")]


@dataclass(frozen=True, kw_only=True)
class Strict:
    """An entry kind: a frozen record of its fields, no key beyond them (pydantic reads the same config)."""

    __pydantic_config__ = {"extra": "forbid"}


@dataclass(frozen=True, kw_only=True)
class Common(Strict):
    """Fields every entry kind has."""

    name: Text | None = None
    source: Text | None = None
    sources: SourceIds | None = None
    notes: Remarks | None = None
    aliases: Names | None = None


# ---------------------------------------------------------------- models

@dataclass(frozen=True, kw_only=True)
class MoeEntry(Strict):
    experts: count(1, HEADS, doc="routed experts")
    topk: count(1, HEADS, doc="routed experts per token (1 to experts)")
    expert_ffn: count(1, 2**24, doc="each routed expert's FFN width")
    shared_experts: count(0, HEADS, doc="always-on experts") | None = None
    shared_ffn: count(1, 2**26, doc="total width of the shared experts") | None = None
    dense_layers: count(0, LAYERS, doc="the first N layers are dense") | None = None
    layer_freq: count(1, LAYERS, doc="every Nth remaining layer is MoE") | None = None
    groups: count(0, HEADS, doc="expert groups of a group-limited router (HF n_group)") | None = None
    topk_groups: count(0, HEADS, doc="groups a token's experts come from (HF topk_group)") | None = None
    capacity_factor: amount(100, doc="expert capacity / mean tokens; absent: dropless") | None = None
    imbalance: amount(100, doc="busiest rank's tokens / mean under dropless dispatch (>= 1)") | None = None


@dataclass(frozen=True, kw_only=True)
class MlaEntry(Strict):
    q_lora_rank: count(0, WIDTH, doc="query compression rank; 0: none, full-rank queries (DeepSeek-V2-Lite)")
    kv_lora_rank: count(1, WIDTH)
    qk_nope_head_dim: count(1, WIDTH)
    qk_rope_head_dim: count(1, WIDTH)
    v_head_dim: count(1, WIDTH)


@dataclass(frozen=True, kw_only=True)
class WindowEntry(Strict):
    window: count(0, TOKENS_PER_SEQ, doc="tokens each query attends") | None = None
    every: count(0, LAYERS, doc="one layer in N attends the full context") | None = None


_WINDOW = count(0, TOKENS_PER_SEQ).__metadata__[0].func


def _sliding_window(value):
    """A bare window in tokens, or {window: W, every: N}."""
    if not isinstance(value, dict):
        return _WINDOW(value)
    try:
        return parse(WindowEntry, value)
    except EntryError as exc:
        key = str(exc.loc[0]) if exc.loc else ""
        if exc.kind == "unknown":
            raise _Nested(key, exc.value, "is not a key of sliding_window; valid: window, every") from None
        raise _Nested(key, exc.value, exc.tail) from None


Window = Annotated[object, Check(_sliding_window, "a window in tokens, or {window: W, every: N}")]


@dataclass(frozen=True, kw_only=True)
class ModelEntry(Common):
    layers: count(1, LAYERS, doc="transformer blocks")
    hidden: count(1, WIDTH, doc="model width d_model")
    heads: count(1, HEADS, doc="query heads")
    kv_heads: count(1, HEADS, doc="key/value heads; divides heads") | None = None
    head_dim: count(1, WIDTH, doc="width of one head") | None = None
    ffn_hidden: count(1, 2**24, doc="dense MLP width") | None = None
    vocab: count(1, 2**24, doc="vocabulary size")
    seq_len: count(1, TOKENS_PER_SEQ, doc="training context in tokens") | None = None
    mlp: choice(Mlp) | None = None
    tied_embeddings: Flag | None = None
    dropout: Flag | None = None
    moe: MoeEntry | None = None
    mla: MlaEntry | None = None
    sliding_window: Window | None = None
    mtp_layers: count(0, 64, doc="multi-token-prediction modules (HF num_nextn_predict_layers)") | None = None
    batch_tokens: amount(1e12, doc="customary global batch in tokens") | None = None
    published_params: amount(1e15) | None = None
    published_active_params: amount(1e15) | None = None
    position: Text | None = None
    norm: Text | None = None
    qkv_bias: Flag | None = None


# ---------------------------------------------------------------- chips and systems

@dataclass(frozen=True, kw_only=True)
class ChipEntry(Common):
    kind: Text | None = None
    family: Text | None = None
    peak_flops: Rates
    mamf: Rates | None = None
    memory: quantity("bytes", 2**20, 1e15) | None = None
    memory_bandwidth: quantity("bandwidth", 1e6, 1e16)
    sram: quantity("bytes", 1.0, 1e13) | None = None
    power: quantity("power", 1e-3, 1e5) | None = None
    power_estimate: quantity("power", 1e-3, 1e5, doc="a sourced estimate where no power is published") | None = None
    tdp: quantity("power", 1e-3, 1e5, doc="the rated board power the peaks hold at; a lower `power` limit lowers the "
                  "sustained clock") | None = None
    tile: Annotated[tuple[count(1, 2**16), count(1, 2**16)], Doc("two integers, e.g. [128, 128]")] | None = None
    cores: count(1, 10**7) | None = None
    default_system: Text | None = None
    clock: quantity("frequency", 1e6, 1e11) | None = None
    vector_bits: count(0, 2**16) | None = None
    simd_units: count(0, 2**16) | None = None
    isa: Names | None = None
    memory_channels: count(0, 2**16) | None = None


@dataclass(frozen=True, kw_only=True)
class TierEntry(Strict):
    name: Text | None = None
    size: count(1, CHIPS, doc="chips the tier joins")
    topology: choice(Topology) | None = None
    dims: Annotated[tuple[count(1, CHIPS), ...], Doc("a list of integers, e.g. [4, 4]")] | None = None
    bandwidth: quantity("bandwidth", 1e3, 1e16, doc="per chip per direction; null: not published, not modelled") | None
    latency: quantity("time", 0.0, 3600.0, zero_ok=True) | None = None
    scale_out: Flag | None = None
    mesh_below: quantity("bytes", 0.0, 1e15, zero_ok=True, doc="a buffer size such as 1 MB below which the "
                         "fabric's runtime runs all-reduce, reduce-scatter and all-gather as a mesh (one step, "
                         "whatever the ranks); 0 or null: no mesh") | None = None


@dataclass(frozen=True, kw_only=True)
class SystemEntry(Common):
    chip: Text
    chips_per_node: count(1, 10**6) | None = None
    tiers: Annotated[list[TierEntry], Doc("a list of at most 16 tiers, innermost first (name, size, topology, "
                                          "bandwidth, latency)", max_length=16)] | None = None
    price_per_hour: quantity("price", 0.0, 1e7, zero_ok=True) | None = None
    capacity_block_price_per_hour: quantity("price", 0.0, 1e7, zero_ok=True) | None = None
    vcpus: count(0, 10**6) | None = None
    memory: quantity("bytes", 2**20, 1e16) | None = None
    memory_bandwidth: quantity("bandwidth", 1e6, 1e17) | None = None


SCHEMAS = {"model": ModelEntry, "chip": ChipEntry, "system": SystemEntry}
BASE_KEY = "base"  # a file's parent entry; resolved before the schema sees the merged entry


def declared_keys(kind: str) -> set[str]:
    return set(hints(SCHEMAS[kind]))


def kind_fields() -> dict[str, set[str]]:
    """The fields only one kind declares: they tell a file's kind when it has no `base:`."""
    out = {}
    for kind in SCHEMAS:
        others = set().union(*(declared_keys(k) for k in SCHEMAS if k != kind))
        out[kind] = declared_keys(kind) - others
    return out


# ---------------------------------------------------------------- the reader without pydantic

class EntryError(ValueError):
    """An entry that does not parse: where (`loc`), what went wrong (`kind`: unknown, missing, value or
    shape), the value and the message tail."""

    def __init__(self, loc: tuple, kind: str, value, tail: str):
        super().__init__(f"{'.'.join(map(str, loc))}: {tail}")
        self.loc, self.kind, self.value, self.tail = loc, kind, value, tail


@functools.cache
def hints(cls) -> dict:
    """An entry class's fields -> their declared types (with their checks)."""
    return typing.get_type_hints(cls, include_extras=True)


@functools.cache
def _required(cls) -> tuple:
    return tuple(f.name for f in dataclasses.fields(cls)
                 if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)


def parse(cls, data, loc: tuple = ()):
    """`data` (a mapping from YAML) as an entry of class `cls`: every value through its field's check."""
    if not isinstance(data, dict):
        raise EntryError(loc, "shape", data, "is not a mapping of fields")
    fields = hints(cls)
    for key in _required(cls):
        if key not in data:
            raise EntryError(loc + (key,), "missing", None, "is missing")
    values = {}
    for key, value in data.items():
        if key not in fields:
            raise EntryError(loc + (key,), "unknown", value, "is not a declared key")
        values[key] = _value(fields[key], value, loc + (key,))
    return cls(**values)


def _value(kind, value, loc: tuple):
    """One value through its declared type: a check, `X | None`, a list, a tuple or a nested entry."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Annotated:
        meta = kind.__metadata__
        check = next((m for m in meta if isinstance(m, Check)), None)
        if check is not None:
            try:
                return check.func(value)
            except ValueError as exc:
                raise EntryError(loc, "value", value, str(exc)) from None
        out = _value(args[0], value, loc)
        longest = min((m.max_length for m in meta if isinstance(m, Doc) and m.max_length is not None), default=None)
        if longest is not None and len(out) > longest:
            raise EntryError(loc, "shape", value, f"has more than {longest} items")
        return out
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _value(inner, value, loc)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise EntryError(loc, "shape", value, "is not a list")
        if origin is list or args[-1] is Ellipsis:
            out = [_value(args[0], v, loc + (i,)) for i, v in enumerate(value)]
            return out if origin is list else tuple(out)
        if len(value) != len(args):
            raise EntryError(loc, "shape", value, f"is not a list of {len(args)}")
        return tuple(_value(a, v, loc + (i,)) for i, (a, v) in enumerate(zip(args, value)))
    if dataclasses.is_dataclass(kind):
        return parse(kind, value, loc)
    raise TypeError(f"no reader for the declared type {kind!r}")


def read(kind: str, data: dict):
    """A built-in entry of `kind` read without pydantic; EntryError if it does not parse."""
    return parse(SCHEMAS[kind], data)
