"""The declared schema of every catalog entry kind: one line per field (type, range, unit, meaning).

Built-in entries and user files go through the same schema (pydantic v2): a field of the wrong type, out
of its physical range, with the wrong kind of unit, or a key the schema does not declare stops the load
with one line naming the file or entry, the field, the value and what is valid. Cross-field rules (kv_heads
divides heads, mamf at most the peak) are checked where the values are built (build.py, Model.shape_errors).
SCHEMA.md documents every field declared here (a test checks it).

To add a field: one line in the class of its entry kind, then its use in build.py and a line in SCHEMA.md.
"""

from __future__ import annotations

import difflib
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError

from ..errors import FlopcastError
from ..model.system import Dtype, Topology
from ..model.workload import Mlp
from .fields import Flag, Names, Remarks, SourceIds, Text, amount, choice, count, quantity

# physical bounds (SI); see fields.py for why they are where they are
LAYERS, WIDTH, HEADS, TOKENS_PER_SEQ = 10_000, 2**20, 2**16, 2**27
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
Rates = Annotated[dict, PlainValidator(_rates),
                  Field(description="data type -> compute rate, e.g. {bf16: 667 TFLOP/s}")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class Common(Strict):
    """Fields every entry kind has."""

    name: Text | None = None
    source: Text | None = None
    sources: SourceIds | None = None
    notes: Remarks | None = None
    aliases: Names | None = None


# ---------------------------------------------------------------- models

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


class MlaEntry(Strict):
    q_lora_rank: count(0, WIDTH, doc="query compression rank; 0: none, full-rank queries (DeepSeek-V2-Lite)")
    kv_lora_rank: count(1, WIDTH)
    qk_nope_head_dim: count(1, WIDTH)
    qk_rope_head_dim: count(1, WIDTH)
    v_head_dim: count(1, WIDTH)


class WindowEntry(Strict):
    window: count(0, TOKENS_PER_SEQ, doc="tokens each query attends") | None = None
    every: count(0, LAYERS, doc="one layer in N attends the full context") | None = None


_WINDOW = count(0, TOKENS_PER_SEQ).__metadata__[0].func


def _sliding_window(value):
    """A bare window in tokens, or {window: W, every: N}."""
    if not isinstance(value, dict):
        return _WINDOW(value)
    try:
        return WindowEntry.model_validate(value)
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        key = str(e["loc"][0]) if e["loc"] else ""
        if e["type"] == "extra_forbidden":
            raise _Nested(key, e["input"], "is not a key of sliding_window; valid: window, every") from None
        raise _Nested(key, e["input"], e["msg"].split(", ", 1)[-1]) from None


Window = Annotated[object, PlainValidator(_sliding_window),
                   Field(description="a window in tokens, or {window: W, every: N}")]


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
    tile: Annotated[tuple[count(1, 2**16), count(1, 2**16)],
                    Field(description="two integers, e.g. [128, 128]")] | None = None
    cores: count(1, 10**7) | None = None
    default_system: Text | None = None
    clock: quantity("frequency", 1e6, 1e11) | None = None
    vector_bits: count(0, 2**16) | None = None
    simd_units: count(0, 2**16) | None = None
    isa: Names | None = None
    memory_channels: count(0, 2**16) | None = None


class TierEntry(Strict):
    name: Text | None = None
    size: count(1, CHIPS, doc="chips the tier joins")
    topology: choice(Topology) | None = None
    dims: Annotated[tuple[count(1, CHIPS), ...], Field(description="a list of integers, e.g. [4, 4]")] | None = None
    bandwidth: quantity("bandwidth", 1e3, 1e16, doc="per chip per direction; null: not published, not modelled") | None
    latency: quantity("time", 0.0, 3600.0, zero_ok=True) | None = None
    scale_out: Flag | None = None


class SystemEntry(Common):
    chip: Text
    chips_per_node: count(1, 10**6) | None = None
    tiers: Annotated[list[TierEntry], Field(max_length=16, description="a list of at most 16 tiers, innermost first "
                                                                   "(name, size, topology, bandwidth, "
                                                                   "latency)")] | None = None
    price_per_hour: quantity("price", 0.0, 1e7, zero_ok=True) | None = None
    capacity_block_price_per_hour: quantity("price", 0.0, 1e7, zero_ok=True) | None = None
    vcpus: count(0, 10**6) | None = None
    memory: quantity("bytes", 2**20, 1e16) | None = None
    memory_bandwidth: quantity("bandwidth", 1e6, 1e17) | None = None


SCHEMAS = {"model": ModelEntry, "chip": ChipEntry, "system": SystemEntry}
BASE_KEY = "base"  # a file's parent entry; resolved before the schema sees the merged entry


def declared_keys(kind: str) -> set[str]:
    return set(SCHEMAS[kind].model_fields)


def kind_fields() -> dict[str, set[str]]:
    """The fields only one kind declares: they tell a file's kind when it has no `base:`."""
    out = {}
    for kind in SCHEMAS:
        others = set().union(*(declared_keys(k) for k in SCHEMAS if k != kind))
        out[kind] = declared_keys(kind) - others
    return out


def validate(kind: str, data: dict, label: str, what: str = "file"):
    """The entry checked against its kind's schema; FlopcastError (one line) on the first problem."""
    try:
        return SCHEMAS[kind].model_validate(data)
    except ValidationError as exc:
        errors = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
        raise FlopcastError(_message(kind, label, what, errors[0])) from None


def check_keys(kind: str, data: dict, label: str) -> None:
    """A file's own top-level keys are all declared (or `base`)."""
    for key in data:
        if key not in SCHEMAS[kind].model_fields and key != BASE_KEY:
            raise FlopcastError(_unknown_key(kind, label, "file", str(key), declared_keys(kind) | {BASE_KEY}))


def _unknown_key(kind: str, label: str, what: str, key: str, valid: set, where: str = "") -> str:
    close = difflib.get_close_matches(key, sorted(valid), n=1, cutoff=0.6) or sorted(
        (v for v in valid if len(key) >= 3 and (v.startswith(key) or key.startswith(v))), key=len)[:1]
    hint = f"did you mean {close[0]!r}?" if close else f"valid: {', '.join(sorted(valid))}"
    return f"unknown key {key!r}{where} in {kind} {what} {label}; {hint}"


def _message(kind: str, label: str, what: str, e: dict) -> str:
    loc = _dotted(e["loc"])
    if e["type"] == "extra_forbidden":
        valid = _fields_at(SCHEMAS[kind], e["loc"][:-1]) | ({BASE_KEY} if what == "file" and len(e["loc"]) == 1
                                                            else set())
        where = f" (in {loc.rsplit('.', 1)[0]})" if "." in loc else ""
        return _unknown_key(kind, label, what, str(e["loc"][-1]), valid, where)
    if e["type"] == "missing":
        doc = _doc_at(SCHEMAS[kind], e["loc"])
        return f"{label}: field {loc!r} is missing" + (f" ({doc})" if doc else "")
    error = (e.get("ctx") or {}).get("error")
    if isinstance(error, _Nested):
        return f"{label}: {loc}.{error.key}: {error.value!r} {error.tail}"
    if e["type"] in ("value_error", "assertion_error"):
        return f"{label}: {loc}: {e['input']!r} {e['msg'].split(', ', 1)[-1]}"
    shape = {"model_type": "a mapping of fields", "dict_type": "a mapping of fields", "list_type": "a list",
             "tuple_type": "a list"}
    wanted = _doc_at(SCHEMAS[kind], e["loc"]) or shape.get(e["type"], e["msg"].lower())
    return f"{label}: {loc}: {_short(e['input'])} is out of range; valid: {wanted}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).startswith(("function-", "tuple[", "list[", "WindowEntry", "int")):
            out += ("." if out else "") + str(part)
    return out


def _model_of(annotation):
    """The pydantic entry class inside an annotation (`X | None`, `list[X]`), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_of(arg)
        if found:
            return found
    return None


def _fields_at(cls, loc: tuple) -> set[str]:
    for part in loc:
        if isinstance(part, int) or cls is None:
            continue
        info = cls.model_fields.get(str(part))
        cls = _model_of(info.annotation) if info else None
    return set(cls.model_fields) if cls else set()


def _doc_at(cls, loc: tuple) -> str:
    for part in loc[:-1]:
        if not isinstance(part, int) and cls is not None:
            info = cls.model_fields.get(str(part))
            cls = _model_of(info.annotation) if info else None
    info = cls.model_fields.get(str(loc[-1])) if cls else None
    if info is None:
        return ""
    return info.description or _annotated_doc(info.annotation)


def _annotated_doc(annotation) -> str:
    """The description inside an annotation (`Annotated[..., Field(description=...)] | None`)."""
    for meta in getattr(annotation, "__metadata__", ()):
        if getattr(meta, "description", None):
            return meta.description
    for arg in getattr(annotation, "__args__", ()) or ():
        doc = _annotated_doc(arg)
        if doc:
            return doc
    return ""
