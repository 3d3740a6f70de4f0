"""The catalog: models, chips and systems as data files with a source for every number.

Built-in entries live in catalog/data/*.yaml. A user's own entry is a YAML or TOML
file passed by path wherever a name is accepted; `base: NAME` starts it from a
built-in entry, so "Trainium2 with twice the HBM bandwidth" is two lines:

    base: trainium2
    memory_bandwidth: 5.8 TB/s
"""

from __future__ import annotations

import difflib
import functools
import tomllib
from dataclasses import replace
from pathlib import Path

import yaml

from ..cost.efficiency import Calibration, FamilyEfficiency
from ..errors import FlopcastError
from ..model.system import Chip, Dtype, System, Tier, Topology
from ..model.workload import Mla, Mlp, Model, Moe
from ..units import UnitError, parse

DATA = Path(__file__).parent / "data"
_FILES = {"model": "models.yaml", "chip": "chips.yaml", "system": "systems.yaml"}


@functools.cache
def raw(kind: str) -> dict:
    """All built-in entries of one kind, as written in the data file."""
    path = DATA / _FILES[kind]
    if not path.exists():
        return {}
    return yaml.safe_load(path.read_text()) or {}


@functools.cache
def sources() -> dict:
    out = {}
    for name in ("sources.yaml", "model_sources.yaml"):
        path = DATA / name
        if path.exists():
            out.update(yaml.safe_load(path.read_text()) or {})
    return out


def names(kind: str) -> list[str]:
    return list(raw(kind))


def _aliases(kind: str) -> dict:
    out = {}
    for key, entry in raw(kind).items():
        out[key.lower()] = key
        for alias in entry.get("aliases", []) or []:
            out.setdefault(str(alias).lower(), key)
    return out


def resolve_name(kind: str, name: str) -> str | None:
    """The catalog key for a name or alias (case-insensitive), or None."""
    return _aliases(kind).get(name.strip().lower())


def close_matches(name: str, choices: list[str]) -> list[str]:
    return difflib.get_close_matches(name.lower(), [c.lower() for c in choices], n=3, cutoff=0.5)


def _unknown(kind: str, name: str) -> FlopcastError:
    choices = names(kind)
    close = close_matches(name, choices)
    hint = f"closest: {', '.join(close)}" if close else f"valid: {', '.join(choices)}"
    return FlopcastError(f"unknown {kind} {name!r}; {hint} (or pass a YAML/TOML file; `flopcast catalog` lists all)")


SUFFIXES = (".yaml", ".yml", ".toml")
# fields a file may name another file in; a relative path is relative to the folder of the file naming it
_PATH_FIELDS = ("base", "chip", "default_system")
# fields that tell a file's kind when it has no `base:` (memory and memory_bandwidth belong to chips and CPU instances)
_KIND_FIELDS = {
    "model": {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len", "mlp", "moe", "mla",
              "head_dim", "sliding_window", "published_params", "mtp_layers"},
    "chip": {"peak_flops", "tile", "cores", "sram", "power", "clock", "vector_bits", "simd_units", "isa",
             "memory_channels", "family", "default_system", "mamf"},
    "system": {"chip", "chips_per_node", "tiers", "price_per_hour", "vcpus"},
}
_EXAMPLE = {"flop_rate": "667 TFLOP/s", "bytes": "96 GiB", "bandwidth": "2.9 TB/s", "time": "2 us", "power": "700 W",
            "frequency": "2.6 GHz", "price": "21.5 USD/h"}
_DIMENSION_WORD = {"flop_rate": "compute rate", "bytes": "size in bytes", "bandwidth": "bandwidth", "time": "time",
                   "power": "power", "frequency": "frequency", "price": "price"}


def is_file(name) -> bool:
    """Whether a name is meant as a user file (it ends in .yaml, .yml or .toml)."""
    return Path(str(name)).suffix.lower() in SUFFIXES


def _read_file(path: Path) -> dict:
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix.lower() == ".toml" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        raise FlopcastError(" ".join(f"cannot read {path}: {exc}".split())) from None
    if not isinstance(data, dict):
        raise FlopcastError(f"{path} must hold a mapping of fields (e.g. `base: trainium2`)")
    for key in _PATH_FIELDS:
        value = data.get(key)
        if isinstance(value, str) and is_file(value):
            target = Path(value).expanduser()
            if not target.is_absolute():
                target = path.parent / target
            if not target.exists():
                raise FlopcastError(f"{path}: {key}: file {target} does not exist "
                                    f"(a path in a file is relative to that file's folder, {path.parent})")
            data[key] = str(target)
    return data


def _file_data(name: str) -> dict:
    path = Path(name).expanduser()
    if not path.exists():
        raise FlopcastError(f"file {name} does not exist")
    return _read_file(path)


def _catalog_kinds(name: str) -> list[str]:
    return [k for k in ("model", "chip", "system") if resolve_name(k, name)]


def _check_cycle(name: str, chain: tuple) -> tuple:
    key = str(Path(name).expanduser().resolve())
    if key in chain:
        raise FlopcastError(f"{name}: `base:` files form a loop; a file cannot be based on itself")
    return chain + (key,)


def file_kind(name: str, _chain: tuple = ()) -> str | None:
    """'model', 'chip' or 'system' for a user file: its `base:`'s kind, else the fields it sets; None if unclear."""
    _chain = _check_cycle(name, _chain)
    data = _file_data(name)
    if "chip" in data:
        return "system"
    base = data.get("base")
    if base is not None:
        base = str(base)
        if is_file(base):
            kind = file_kind(base, _chain)
            if kind:
                return kind
        else:
            kinds = _catalog_kinds(base)
            if len(kinds) == 1:
                return kinds[0]
    kinds = [k for k, fields in _KIND_FIELDS.items() if fields & set(data)]
    return kinds[0] if len(kinds) == 1 else None


def entry(kind: str, name: str, _chain: tuple = ()) -> tuple[str, dict]:
    """(id, merged raw entry) for a catalog name or a file path; `base:` is resolved.

    A file with `base:` and no `name:` is displayed as "FILE (based on BASE's name)".
    """
    if is_file(name):
        path = Path(name).expanduser()
        _chain = _check_cycle(name, _chain)
        data = _file_data(name)
        actual = file_kind(name)
        if actual and actual != kind and not (kind == "system" and actual == "chip"):
            raise FlopcastError(f"{name} is a {actual} file, not a {kind} file")
        base = data.pop("base", None)
        if base is None:
            return path.stem, data
        base = str(base)
        if not is_file(base) and resolve_name(kind, base) is None:
            other = [k for k in _catalog_kinds(base) if k != kind]
            if other:
                raise FlopcastError(f"{name}: base {base!r} is a {other[0]}, not a {kind}")
            raise FlopcastError(f"{name}: base: {_unknown(kind, base)}")
        parent_id, parent = entry(kind, base, _chain)
        merged = _merge(parent, data)
        merged.setdefault("source", parent.get("source"))
        if "name" not in data:
            merged["name"] = f"{path.stem} (based on {parent.get('name', parent_id)})"
        return path.stem, merged
    key = resolve_name(kind, name)
    if key is None:
        raise _unknown(kind, name)
    return key, raw(kind)[key]


def _merge(parent: dict, child: dict) -> dict:
    out = dict(parent)
    for k, v in child.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k not in ("moe", "mla"):
            out[k] = {**out[k], **v}
        else:
            out[k] = v
    return out


def _label(kind: str, name: str, entry_id: str) -> str:
    """How errors name an entry: the file as the user wrote it, or the catalog key."""
    return str(name) if is_file(name) else entry_id


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
        number = float(words[0]) if words else None
    except ValueError:
        number = None
    if number is None:
        return _EXAMPLE[dimension]
    return f"{words[0]} {_EXAMPLE[dimension].split()[1]}"


def _bad(label: str, key: str, value, valid: str) -> FlopcastError:
    return FlopcastError(f"{label}: {key}: {value!r} is out of range; valid: {valid}")


def _quantity(label: str, key: str, value, dimension: str, minimum: str = "positive") -> float:
    """A quantity with its unit, in SI; `minimum` is 'positive' (> 0) or 'nonnegative' (>= 0)."""
    word = _DIMENSION_WORD.get(dimension, dimension)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise FlopcastError(f"{label}: {key}: {value!r} is not a {word}; write e.g. {_EXAMPLE[dimension]}")
    try:
        out = parse(value, dimension)
    except UnitError:
        raise FlopcastError(f"{label}: {key}: {value!r} is not a {word}; "
                            f"write e.g. {_unit_hint(value, dimension)}") from None
    if out != out or out in (float("inf"), float("-inf")):
        raise _bad(label, key, value, f"a finite {word}, e.g. {_EXAMPLE[dimension]}")
    if minimum == "positive" and out <= 0:
        raise _bad(label, key, value, f"a {word} above zero, e.g. {_EXAMPLE[dimension]}")
    if minimum == "nonnegative" and out < 0:
        raise _bad(label, key, value, f"a {word} of zero or more, e.g. {_EXAMPLE[dimension]}")
    return out


def _q(entry_id: str, data: dict, key: str, dimension: str, required: bool = True, minimum: str = "positive",
       path: str | None = None):
    value = data.get(key)
    if value is None:
        if required:
            word = _DIMENSION_WORD.get(dimension, dimension)
            raise FlopcastError(f"{entry_id}: field {path or key!r} is missing (a {word} such as "
                                f"{_EXAMPLE[dimension]})")
        return None
    return _quantity(entry_id, path or key, value, dimension, minimum)


def _int(entry_id: str, data: dict, key: str, default=None, minimum: int = 1, path: str | None = None) -> int:
    """A count: an integer, at least `minimum` (1 unless said otherwise)."""
    value = data.get(key, default)
    field_name = path or key
    valid = "a positive integer" if minimum == 1 else f"an integer of {minimum} or more"
    if value is None:
        raise FlopcastError(f"{entry_id}: field {field_name!r} is missing ({valid})")
    if isinstance(value, bool):
        raise _bad(entry_id, field_name, value, valid)
    if isinstance(value, float):
        if not value.is_integer():
            raise FlopcastError(f"{entry_id}: {field_name}: {value!r} is not an integer; valid: {valid}")
        out = int(value)
    elif isinstance(value, int):
        out = value
    else:
        try:
            out = int(str(value).replace(",", "").replace("_", "").strip())
        except ValueError:
            raise FlopcastError(f"{entry_id}: {field_name}: {value!r} is not an integer; valid: {valid}") from None
    if out < minimum:
        raise _bad(entry_id, field_name, value, valid)
    return out


def _opt_int(entry_id: str, data: dict, key: str, minimum: int = 0, path: str | None = None) -> int:
    """An optional count: 0 where absent or null."""
    return 0 if data.get(key) is None else _int(entry_id, data, key, minimum=minimum, path=path)


def _ratio(label: str, data: dict, key: str) -> float:
    """A positive plain number (moe.capacity_factor, moe.imbalance)."""
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise FlopcastError(f"{label}: moe.{key} {value!r}; valid: a number > 0 (e.g. 1.25)")
    return float(value)


def _mapping(label: str, data: dict, key: str) -> dict:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FlopcastError(f"{label}: {key}: {value!r} must be a mapping of fields")
    return value


def _rates(label: str, d: dict, field: str, limit: dict | None = None) -> dict:
    """A chip's `field` mapping of data type -> FLOP/s (cfp8 is stored as fp8); with `limit`, each rate is at
    most the limit's rate of the same type."""
    out = {}
    for key, value in _mapping(label, d, field).items():
        dtype_name = "fp8" if str(key).lower() == "cfp8" else str(key).lower()
        if dtype_name.upper() not in Dtype.__members__:
            valid_types = ", ".join([t.label for t in Dtype] + ["cfp8"])
            raise FlopcastError(f"{label}: {field}.{key}: unknown data type; valid: {valid_types}")
        if value is None:
            continue
        dtype = Dtype[dtype_name.upper()]
        out[dtype] = _quantity(label, f"{field}.{key}", value, "flop_rate")
        if limit is not None and (dtype not in limit or out[dtype] > limit[dtype]):
            raise FlopcastError(f"{label}: {field}.{key}: {value!r} is out of range; valid: at most peak_flops.{key}")
    return out


def load_chip(name: str) -> Chip:
    cid, d = entry("chip", name)
    label = _label("chip", name, cid)
    peaks = _rates(label, d, "peak_flops")
    if not peaks:
        raise FlopcastError(f"{label}: field 'peak_flops' needs at least one data type, e.g. `bf16: 667 TFLOP/s`")
    kind = d.get("kind", "accelerator")
    if kind not in ("accelerator", "cpu"):
        raise FlopcastError(f"{label}: kind: {kind!r} is not a chip kind; valid: accelerator, cpu")
    mamf = _rates(label, d, "mamf", limit=peaks)
    tile = d.get("tile") or (128, 128)
    if not isinstance(tile, (list, tuple)) or len(tile) != 2:
        raise FlopcastError(f"{label}: tile: {tile!r} is out of range; valid: two positive integers, e.g. [128, 128]")
    tile = tuple(_int(label, {"tile": t}, "tile", path=f"tile[{i}]") for i, t in enumerate(tile))
    return Chip(
        id=cid,
        name=str(d.get("name", cid)),
        kind=kind,
        family=d.get("family", cid),
        peak_flops=peaks,
        memory=_q(label, d, "memory", "bytes", required=kind != "cpu"),
        memory_bandwidth=_q(label, d, "memory_bandwidth", "bandwidth"),
        sram=_q(label, d, "sram", "bytes", required=False),
        power=_q(label, d, "power", "power", required=False),
        tile=tile,
        cores=_int(label, d, "cores", 1),
        default_system=d.get("default_system", "") or "",
        clock=_q(label, d, "clock", "frequency", required=False),
        vector_bits=_opt_int(label, d, "vector_bits"),
        simd_units=_opt_int(label, d, "simd_units"),
        isa=tuple(d.get("isa") or ()),
        memory_channels=_opt_int(label, d, "memory_channels"),
        mamf=mamf,
        sources=_source_map(d),
        notes=dict(d.get("notes") or {}),
    )


def _source_map(d: dict) -> dict:
    return {"*": d.get("source"), **(d.get("sources") or {})}


def _chip_file_hint(name: str) -> str:
    return (f"{name} is a chip file; a system file names its chip with `chip:` "
            f"(e.g. `base: trn2.48xlarge` and `chip: {Path(name).name}`)")


def load_system(name: str) -> System:
    if is_file(name) and file_kind(name) == "chip":
        raise FlopcastError(_chip_file_hint(name))
    sid, d = entry("system", name)
    label = _label("system", name, sid)
    if d.get("chip") is None:
        raise FlopcastError(f"{label}: field 'chip' is missing (a chip name such as trainium2, or a chip file)")
    chip = load_chip(str(d["chip"]))
    chips_per_node = _int(label, d, "chips_per_node", 1)
    tier_list = d.get("tiers") or []
    if not isinstance(tier_list, list):
        raise FlopcastError(f"{label}: tiers: must be a list of tiers, innermost first (see SCHEMA.md)")
    tiers = []
    for i, t in enumerate(tier_list):
        if not isinstance(t, dict):
            raise FlopcastError(f"{label}: tiers[{i}]: {t!r} must be a mapping (name, size, topology, bandwidth, latency)")
        tid = f"{label} tier {t.get('name', i)}"
        if t.get("bandwidth") is None and any(t is c for c in _catalog_tiers()):
            continue  # a link the catalog has no figure for (its note says why); not modelled
        try:
            topology = Topology(t.get("topology", "switch"))
        except ValueError:
            raise FlopcastError(f"{tid}: topology {t.get('topology')!r}; valid: "
                                f"{', '.join(x.value for x in Topology)}") from None
        size = _int(tid, t, "size")
        dims = t.get("dims") or ()
        if not isinstance(dims, (list, tuple)):
            raise FlopcastError(f"{tid}: dims: {dims!r} must be a list of positive integers, e.g. [4, 4]")
        tiers.append(Tier(
            name=t.get("name", f"tier{i}"),
            size=size,
            topology=topology,
            bandwidth=_q(tid, t, "bandwidth", "bandwidth"),
            latency=_q(tid, t, "latency", "time", required=False, minimum="nonnegative") or 0.0,
            dims=tuple(_int(tid, {"dims": x}, "dims", path=f"dims[{j}]") for j, x in enumerate(dims)),
            scale_out=bool(t.get("scale_out", i > 0 and size > chips_per_node)),
        ))
    if not tiers:
        # no published link: the system is modelled as one node, its chips unable to exchange data fast
        tiers.append(Tier("unpublished", chips_per_node, Topology.SWITCH, 1e9, 1e-5))
    return System(
        id=sid,
        name=str(d.get("name", sid)),
        chip=chip,
        chips_per_node=chips_per_node,
        tiers=tuple(tiers),
        price_per_hour=_q(label, d, "price_per_hour", "price", required=False, minimum="nonnegative"),
        vcpus=_opt_int(label, d, "vcpus"),
        host_memory=_q(label, d, "memory", "bytes", required=False),
        memory_bandwidth=_q(label, d, "memory_bandwidth", "bandwidth", required=False),
        sources=_source_map(d),
        notes=dict(d.get("notes") or {}),
    )


def _catalog_tiers() -> list:
    return [t for e in raw("system").values() for t in (e.get("tiers") or [])]


def system_for(name: str) -> System:
    """A system by name; a chip name gives that chip's default system, a chip file that system with its chip."""
    if is_file(name):
        if file_kind(name) != "chip":
            return load_system(name)
        chip = load_chip(name)
        if not chip.default_system:
            raise FlopcastError(_chip_file_hint(name) + "; or give the chip file a `default_system:`")
        node = load_system(chip.default_system)
        return replace(node, id=chip.id, name=f"{node.name} with {chip.name}", chip=chip)
    if resolve_name("system", name) is not None:
        return load_system(name)
    chip_key = resolve_name("chip", name)
    if chip_key is not None:
        default = raw("chip")[chip_key].get("default_system")
        if default:
            return load_system(default)
    raise _unknown("system", name)


def load_model(name: str) -> Model:
    mid, d = entry("model", name)
    return model_from_dict(mid, d, label=_label("model", name, mid))


def model_from_dict(mid: str, d: dict, label: str | None = None) -> Model:
    """A Model from its catalog fields; every count is checked (positive integer) and the dims for consistency."""
    label = label or mid
    try:
        mlp = Mlp(str(d.get("mlp", "gelu")).lower())
    except ValueError:
        raise FlopcastError(f"{label}: mlp {d.get('mlp')!r}; valid: gelu, swiglu") from None
    moe = None
    if d.get("moe"):
        e = _mapping(label, d, "moe")
        moe = Moe(
            experts=_int(label, e, "experts", path="moe.experts"),
            topk=_int(label, e, "topk", path="moe.topk"),
            expert_ffn=_int(label, e, "expert_ffn", path="moe.expert_ffn"),
            shared_experts=_opt_int(label, e, "shared_experts", path="moe.shared_experts"),
            shared_ffn=None if e.get("shared_ffn") is None else _int(label, e, "shared_ffn", path="moe.shared_ffn"),
            dense_layers=_opt_int(label, e, "dense_layers", path="moe.dense_layers"),
            layer_freq=_int(label, e, "layer_freq", 1, path="moe.layer_freq"),
            groups=_opt_int(label, e, "groups", path="moe.groups"),
            topk_groups=_opt_int(label, e, "topk_groups", path="moe.topk_groups"),
            capacity_factor=None if e.get("capacity_factor") is None else _ratio(label, e, "capacity_factor"),
            imbalance=1.0 if e.get("imbalance") is None else _ratio(label, e, "imbalance"),
        )
    mla = None
    if d.get("mla"):
        a = _mapping(label, d, "mla")
        mla = Mla(**{k: _int(label, a, k, path=f"mla.{k}") for k in Mla.__dataclass_fields__})
    layers = _int(label, d, "layers")
    heads = _int(label, d, "heads")
    hidden = _int(label, d, "hidden")
    kv_heads = heads if d.get("kv_heads") is None else _int(label, d, "kv_heads")
    sw = d.get("sliding_window") or {}
    if isinstance(sw, dict):
        window = _opt_int(label, sw, "window", path="sliding_window.window")
        every = _opt_int(label, sw, "every", path="sliding_window.every")
    else:
        window, every = _opt_int(label, d, "sliding_window"), 0
    if d.get("ffn_hidden") is not None:
        ffn = _int(label, d, "ffn_hidden")
    elif moe and moe.dense_layers == 0:
        ffn = moe.expert_ffn
    else:
        ffn = 4 * hidden
    model = Model(
        id=mid,
        name=str(d.get("name", mid)),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        ffn_hidden=ffn,
        vocab=_int(label, d, "vocab"),
        seq_len=_int(label, d, "seq_len", 2048),
        mlp=mlp,
        head_dim=0 if d.get("head_dim") is None else _int(label, d, "head_dim"),
        tied_embeddings=bool(d.get("tied_embeddings", False)),
        dropout=bool(d.get("dropout", False)),
        moe=moe,
        mla=mla,
        sliding_window=window,
        sliding_every=every,
        mtp_layers=_opt_int(label, d, "mtp_layers"),
        batch_tokens=_count(label, d, "batch_tokens"),
        published_params=_count(label, d, "published_params"),
        published_active_params=_count(label, d, "published_active_params"),
        source=str(d.get("source", "")),
        notes=dict(d.get("notes") or {}),
    )
    for key, value, valid in model.shape_errors():
        raise _bad(label, key, value, valid)
    return model


def _count(label: str, d: dict, key: str) -> float:
    """A large optional count such as parameters or tokens (0 where unknown); never negative."""
    value = d.get(key)
    if value is None:
        return 0.0
    try:
        out = float(value) if not isinstance(value, bool) else -1.0
    except (TypeError, ValueError):
        raise FlopcastError(f"{label}: {key}: {value!r} is not a number; valid: a count of zero or more, "
                            "e.g. 8030000000") from None
    if not out >= 0 or out == float("inf"):
        raise _bad(label, key, value, "a count of zero or more")
    return out


@functools.cache
def calibration() -> Calibration:
    """The shipped calibration (written by `flopcast calibrate`); defaults if none was written yet."""
    path = DATA / "calibration.yaml"
    if not path.exists():
        return Calibration()
    return calibration_from_dict(yaml.safe_load(path.read_text()) or {})


def calibration_from_dict(d: dict) -> Calibration:
    fams = {k: FamilyEfficiency(**v) for k, v in (d.get("families") or {}).items()}
    glob = d.get("global") or {}
    return with_mamf_transfer(Calibration(families=fams, provenance=d.get("provenance") or {}, **glob))


@functools.lru_cache(maxsize=None)
def family_mamf(family: str, dtype: Dtype) -> float | None:
    """Mean measured maximum achievable matmul fraction of peak (chip field `mamf`) over the catalogued chips
    of a family, or None when none has one."""
    fractions = []
    for cid, d in raw("chip").items():
        if d.get("family", cid) == family and d.get("mamf"):
            f = load_chip(cid).mamf_fraction(dtype)
            if f:
                fractions.append(f)
    return sum(fractions) / len(fractions) if fractions else None


def with_mamf_transfer(cal: Calibration) -> Calibration:
    """The calibration with its fitted/MAMF ratio per GEMM kind, which chips of unfitted families scale their
    own MAMF by (Calibration.for_chip)."""
    transfer = {}
    for key, dtype in (("gemm", Dtype.BF16), ("gemm_fp8", Dtype.FP8)):
        ratios = [getattr(v, key) / m for f, v in cal.families.items() if (m := family_mamf(f, dtype))]
        if ratios:
            transfer[key] = sum(ratios) / len(ratios)
    return replace(cal, mamf_transfer=transfer)
