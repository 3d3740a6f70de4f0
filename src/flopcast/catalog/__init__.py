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


def _read_file(path: Path) -> dict:
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (OSError, yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        raise FlopcastError(f"cannot read {path}: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise FlopcastError(f"{path} must hold a mapping of fields (e.g. `base: trainium2`)")
    return data


def entry(kind: str, name: str) -> tuple[str, dict]:
    """(id, merged raw entry) for a catalog name or a file path; `base:` is resolved."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml", ".toml") and path.exists():
        data = _read_file(path)
        base = data.pop("base", None)
        if base:
            _, parent = entry(kind, str(base))
            merged = _merge(parent, data)
            merged.setdefault("source", parent.get("source"))
            return path.stem, merged
        return path.stem, data
    if path.suffix in (".yaml", ".yml", ".toml"):
        raise FlopcastError(f"file {name} does not exist")
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


def _q(entry_id: str, data: dict, key: str, dimension: str, required: bool = True):
    value = data.get(key)
    if value is None:
        if required:
            raise FlopcastError(f"{entry_id}: field {key!r} is missing (a {dimension} such as the catalog's)")
        return None
    try:
        return parse(value, dimension)
    except UnitError as exc:
        raise FlopcastError(f"{entry_id}: field {key!r}: {exc}") from None


def _int(entry_id: str, data: dict, key: str, default=None) -> int:
    value = data.get(key, default)
    if value is None:
        raise FlopcastError(f"{entry_id}: field {key!r} is missing (a positive integer)")
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise FlopcastError(f"{entry_id}: field {key!r} must be an integer, got {value!r}") from None
    if out < 0:
        raise FlopcastError(f"{entry_id}: field {key!r} must not be negative, got {out}")
    return out


def load_chip(name: str) -> Chip:
    cid, d = entry("chip", name)
    peaks = {}
    for key, value in (d.get("peak_flops") or {}).items():
        dtype_name = "fp8" if key == "cfp8" else key
        if dtype_name.upper() not in Dtype.__members__ or value is None:
            continue
        try:
            peaks[Dtype[dtype_name.upper()]] = parse(value, "flop_rate")
        except UnitError as exc:
            raise FlopcastError(f"{cid}: peak_flops.{key}: {exc}") from None
    if not peaks:
        raise FlopcastError(f"{cid}: field 'peak_flops' needs at least one data type, e.g. `bf16: 667 TFLOP/s`")
    return Chip(
        id=cid,
        name=d.get("name", cid),
        kind=d.get("kind", "accelerator"),
        family=d.get("family", cid),
        peak_flops=peaks,
        memory=_q(cid, d, "memory", "bytes", required=d.get("kind") != "cpu"),
        memory_bandwidth=_q(cid, d, "memory_bandwidth", "bandwidth"),
        sram=_q(cid, d, "sram", "bytes", required=False),
        power=_q(cid, d, "power", "power", required=False),
        tile=tuple(d.get("tile") or (128, 128)),
        cores=_int(cid, d, "cores", 1) or 1,
        default_system=d.get("default_system", ""),
        clock=_q(cid, d, "clock", "frequency", required=False),
        vector_bits=int(d.get("vector_bits") or 0),
        simd_units=int(d.get("simd_units") or 0),
        isa=tuple(d.get("isa") or ()),
        memory_channels=int(d.get("memory_channels") or 0),
        sources=_source_map(d),
        notes=dict(d.get("notes") or {}),
    )


def _source_map(d: dict) -> dict:
    return {"*": d.get("source"), **(d.get("sources") or {})}


def load_system(name: str) -> System:
    sid, d = entry("system", name)
    if "chip" not in d:
        raise FlopcastError(f"{sid}: field 'chip' is missing (a chip name such as trainium2, or a chip file)")
    chip = load_chip(str(d["chip"]))
    tiers = []
    for i, t in enumerate(d.get("tiers") or []):
        tid = f"{sid} tier {i}"
        if t.get("bandwidth") is None and sid in raw("system"):
            continue  # a link the catalog has no figure for (its note says why); not modelled
        try:
            topology = Topology(t.get("topology", "switch"))
        except ValueError:
            raise FlopcastError(f"{tid}: topology {t.get('topology')!r}; valid: "
                                f"{', '.join(x.value for x in Topology)}") from None
        tiers.append(Tier(
            name=t.get("name", f"tier{i}"),
            size=_int(tid, t, "size"),
            topology=topology,
            bandwidth=_q(tid, t, "bandwidth", "bandwidth"),
            latency=_q(tid, t, "latency", "time", required=False) or 0.0,
            dims=tuple(t.get("dims") or ()),
            scale_out=bool(t.get("scale_out", i > 0 and t.get("size", 0) > _int(sid, d, "chips_per_node", 1))),
        ))
    chips_per_node = _int(sid, d, "chips_per_node", 1) or 1
    if not tiers:
        # no published link: the system is modelled as one node, its chips unable to exchange data fast
        tiers.append(Tier("unpublished", chips_per_node, Topology.SWITCH, 1e9, 1e-5))
    return System(
        id=sid,
        name=d.get("name", sid),
        chip=chip,
        chips_per_node=chips_per_node,
        tiers=tuple(tiers),
        price_per_hour=_q(sid, d, "price_per_hour", "price", required=False),
        vcpus=int(d.get("vcpus") or 0),
        host_memory=_q(sid, d, "memory", "bytes", required=False),
        memory_bandwidth=_q(sid, d, "memory_bandwidth", "bandwidth", required=False),
        sources=_source_map(d),
        notes=dict(d.get("notes") or {}),
    )


def system_for(name: str) -> System:
    """A system by name; a chip name gives that chip's default system."""
    if resolve_name("system", name) is not None or Path(name).suffix in (".yaml", ".yml", ".toml"):
        return load_system(name)
    chip_key = resolve_name("chip", name)
    if chip_key is not None:
        default = raw("chip")[chip_key].get("default_system")
        if default:
            return load_system(default)
    raise _unknown("system", name)


def load_model(name: str) -> Model:
    mid, d = entry("model", name)
    return model_from_dict(mid, d)


def model_from_dict(mid: str, d: dict) -> Model:
    try:
        mlp = Mlp(str(d.get("mlp", "gelu")).lower())
    except ValueError:
        raise FlopcastError(f"{mid}: mlp {d.get('mlp')!r}; valid: gelu, swiglu") from None
    moe = None
    if d.get("moe"):
        e = d["moe"]
        moe = Moe(
            experts=_int(mid, e, "experts"),
            topk=_int(mid, e, "topk"),
            expert_ffn=_int(mid, e, "expert_ffn"),
            shared_experts=_int(mid, e, "shared_experts", 0),
            shared_ffn=e.get("shared_ffn"),
            dense_layers=_int(mid, e, "dense_layers", 0),
            layer_freq=_int(mid, e, "layer_freq", 1) or 1,
        )
    mla = Mla(**{k: _int(mid, d["mla"], k) for k in Mla.__dataclass_fields__}) if d.get("mla") else None
    heads = _int(mid, d, "heads")
    layers = _int(mid, d, "layers")
    if layers == 0 or heads == 0:
        raise FlopcastError(f"{mid}: layers and heads must be positive")
    sw = d.get("sliding_window") or {}
    ffn = d.get("ffn_hidden")
    if ffn is None:
        if moe and moe.dense_layers == 0:
            ffn = moe.expert_ffn
        else:
            ffn = 4 * _int(mid, d, "hidden")
    return Model(
        id=mid,
        name=d.get("name", mid),
        layers=layers,
        hidden=_int(mid, d, "hidden"),
        heads=heads,
        kv_heads=_int(mid, d, "kv_heads", heads) or heads,
        ffn_hidden=int(ffn),
        vocab=_int(mid, d, "vocab"),
        seq_len=_int(mid, d, "seq_len", 2048),
        mlp=mlp,
        head_dim=int(d.get("head_dim") or 0),
        tied_embeddings=bool(d.get("tied_embeddings", False)),
        dropout=bool(d.get("dropout", False)),
        moe=moe,
        mla=mla,
        sliding_window=int(sw.get("window", 0)) if isinstance(sw, dict) else int(sw or 0),
        sliding_every=int(sw.get("every", 0)) if isinstance(sw, dict) else 0,
        batch_tokens=float(d.get("batch_tokens") or 0.0),
        published_params=float(d.get("published_params") or 0.0),
        published_active_params=float(d.get("published_active_params") or 0.0),
        source=str(d.get("source", "")),
        notes=dict(d.get("notes") or {}),
    )


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
    return Calibration(families=fams, provenance=d.get("provenance") or {}, **glob)
