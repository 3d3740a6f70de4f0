"""Catalog entries (built-in or a user's file) -> the model's frozen values, through the declared schema."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import replace
from pathlib import Path

from ..errors import FlopcastError
from ..model import hf
from ..model.system import Chip, System, Tier, Topology
from ..model.workload import Mla, Mlp, Model, Moe
from . import entries
from .files import entry, file_kind, is_file
from .names import raw, resolve_name, unknown


def _validated(kind: str, d: dict, label: str, what: str, builtin: bool):
    """The entry through the schema. A built-in one is read without pydantic (tests/test_startup.py holds
    every built-in entry to the pydantic schema and to this reader's agreement with it); a user's data, or
    a built-in entry that does not parse, goes through pydantic for its one-line message."""
    if builtin:
        try:
            return entries.read(kind, d)
        except ValueError:
            pass
    from . import schema

    return schema.validate(kind, d, label, what)


def _checked(kind: str, name: str, key: str, d: dict):
    label, what = (str(name), "file") if is_file(name) else (key, "entry")
    return _validated(kind, d, label, what, builtin=not is_file(name)), label


def _source_map(e) -> dict:
    return {"*": e.source, **(e.sources or {})}


def load_chip(name: str) -> Chip:
    return _build_chip(name) if is_file(name) else _builtin("chip", name)


def load_system(name: str) -> System:
    return _build_system(name) if is_file(name) else _builtin("system", name)


@functools.lru_cache(maxsize=1024)
def _builtin(kind: str, name: str):
    """A built-in chip, system or model (frozen), built once per name: a serving fit rebuilds each of its rows'
    model and system for every evaluation of its objective (thousands of times: half of `calibrate`'s time)."""
    return {"chip": _build_chip, "system": _build_system, "model": _build_model}[kind](name)


def _build_chip(name: str) -> Chip:
    cid, d = entry("chip", name)
    e, label = _checked("chip", name, cid, d)
    if not e.peak_flops:
        raise FlopcastError(f"{label}: field 'peak_flops' needs at least one data type, e.g. `bf16: 667 TFLOP/s`")
    kind = e.kind or "accelerator"
    if kind not in ("accelerator", "cpu"):
        raise FlopcastError(f"{label}: kind: {kind!r} is not a chip kind; valid: accelerator, cpu")
    if e.memory is None and kind != "cpu":
        raise FlopcastError(f"{label}: field 'memory' is missing (a size in bytes such as 96 GiB)")
    for dtype, value in (e.mamf or {}).items():
        if dtype not in e.peak_flops or value > e.peak_flops[dtype]:
            raw_value = (d.get("mamf") or {}).get(dtype.label, value)
            raise FlopcastError(f"{label}: mamf.{dtype.label}: {raw_value!r} is out of range; "
                                f"valid: at most peak_flops.{dtype.label}")
    return Chip(
        id=cid, name=e.name or cid, kind=kind, family=e.family or cid, peak_flops=e.peak_flops,
        memory=e.memory, memory_bandwidth=e.memory_bandwidth, sram=e.sram, power=e.power,
        power_estimate=e.power_estimate, tdp=e.tdp if e.tdp is not None else e.power,
        tile=tuple(e.tile or (128, 128)), cores=e.cores or 1, default_system=e.default_system or "",
        clock=e.clock, vector_bits=e.vector_bits or 0, simd_units=e.simd_units or 0, isa=e.isa or (),
        memory_channels=e.memory_channels or 0, mamf=e.mamf or {},
        mamf_peaks={d: e.peak_flops[d] for d in (e.mamf or {})}, sources=_source_map(e), notes=dict(e.notes or {}),
    )


def _chip_file_hint(name: str) -> str:
    return (f"{name} is a chip file; a system file names its chip with `chip:` "
            f"(e.g. `base: trn2.48xlarge` and `chip: {Path(name).name}`)")


def _tiers(e, chips_per_node: int) -> tuple:
    """The modelled tiers, innermost first; a tier with `bandwidth: null` (no published figure) is left out."""
    tiers = []
    for i, t in enumerate(e.tiers or ()):
        if t.bandwidth is None:
            continue
        tiers.append(Tier(
            name=t.name or f"tier{i}", size=t.size, topology=t.topology or Topology.SWITCH, bandwidth=t.bandwidth,
            latency=t.latency or 0.0, dims=tuple(t.dims or ()),
            scale_out=t.scale_out if t.scale_out is not None else (i > 0 and t.size > chips_per_node),
            mesh_below=t.mesh_below or 0.0,
        ))
    if not tiers:
        # no published link: the system is modelled as one node, its chips unable to exchange data fast
        tiers.append(Tier("unpublished", chips_per_node, Topology.SWITCH, 1e9, 1e-5))
    return tuple(tiers)


def _build_system(name: str) -> System:
    if is_file(name) and file_kind(name) == "chip":
        raise FlopcastError(_chip_file_hint(name))
    sid, d = entry("system", name)
    if d.get("chip") is None:
        label = str(name) if is_file(name) else sid
        raise FlopcastError(f"{label}: field 'chip' is missing (a chip name such as trainium2, or a chip file)")
    e, label = _checked("system", name, sid, d)
    chip = load_chip(e.chip)
    chips_per_node = e.chips_per_node or 1
    return System(
        id=sid, name=e.name or sid, chip=chip, chips_per_node=chips_per_node, tiers=_tiers(e, chips_per_node),
        price_per_hour=e.price_per_hour, capacity_block_price_per_hour=e.capacity_block_price_per_hour,
        vcpus=e.vcpus or 0, host_memory=e.memory,
        memory_bandwidth=e.memory_bandwidth, sources=_source_map(e), notes=dict(e.notes or {}),
    )


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
    raise unknown("system", name)


def load_model(name: str) -> Model:
    """A catalog model, a YAML/TOML model file, or a Hugging Face config.json (or a folder holding one)."""
    config = hf.config_path(name)
    if config is not None:
        return _imported(hf.load(config), str(name))
    return _build_model(name) if is_file(name) else _builtin("model", name)


def _build_model(name: str) -> Model:
    mid, d = entry("model", name)
    return model_from_dict(mid, d, label=str(name) if is_file(name) else mid,
                           what="file" if is_file(name) else "entry", builtin=not is_file(name))


def _imported(m: Model, label: str) -> Model:
    """A model read from a Hugging Face config, held to the schema's bounds like a model file (the importer
    maps the config's keys; the bounds live in one place, entries.py)."""
    moe = None
    if m.moe:
        fields = entries.hints(entries.MoeEntry)
        moe = {k: v for k, v in dataclasses.asdict(m.moe).items() if k in fields and v is not None}
    fields = {"layers": m.layers, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads,
              "head_dim": m.head_dim or None, "ffn_hidden": m.ffn_hidden, "vocab": m.vocab, "seq_len": m.seq_len,
              "sliding_window": m.sliding_window or None, "mtp_layers": getattr(m, "mtp_layers", 0) or None,
              "moe": moe, "mla": dataclasses.asdict(m.mla) if m.mla else None}
    declared = entries.hints(entries.ModelEntry)
    _validated("model", {k: v for k, v in fields.items() if k in declared}, f"{label} (as imported)", "file",
               builtin=False)
    return m


def _window(e) -> tuple[int, int]:
    sw = e.sliding_window
    if sw is None:
        return 0, 0
    if isinstance(sw, int):
        return sw, 0
    return sw.window or 0, sw.every or 0


def _moe(m) -> Moe | None:
    if m is None:
        return None
    return Moe(experts=m.experts, topk=m.topk, expert_ffn=m.expert_ffn, shared_experts=m.shared_experts or 0,
               shared_ffn=m.shared_ffn, dense_layers=m.dense_layers or 0, layer_freq=m.layer_freq or 1,
               groups=m.groups or 0, topk_groups=m.topk_groups or 0, capacity_factor=m.capacity_factor,
               imbalance=1.0 if m.imbalance is None else m.imbalance)


def model_from_dict(mid: str, d: dict, label: str | None = None, what: str = "entry", builtin: bool = False) -> Model:
    """A Model from its catalog fields, checked against the schema and for consistent dimensions; `builtin`
    for a built-in entry (read without pydantic)."""
    label = label or mid
    if not d.get("moe"):
        d = {k: v for k, v in d.items() if k != "moe"}  # `moe: {}` or null: a dense model
    e = _validated("model", d, label, what, builtin)
    moe = _moe(e.moe)
    mla = Mla(**dataclasses.asdict(e.mla)) if e.mla else None
    if e.ffn_hidden is not None:
        ffn = e.ffn_hidden
    elif moe and moe.dense_layers == 0:
        ffn = moe.expert_ffn
    else:
        ffn = 4 * e.hidden
    window, every = _window(e)
    model = Model(
        id=mid, name=e.name or mid, layers=e.layers, hidden=e.hidden, heads=e.heads,
        kv_heads=e.heads if e.kv_heads is None else e.kv_heads, ffn_hidden=ffn, vocab=e.vocab,
        seq_len=e.seq_len or 2048, mlp=e.mlp or Mlp.GELU, head_dim=e.head_dim or 0,
        tied_embeddings=bool(e.tied_embeddings), dropout=bool(e.dropout), moe=moe, mla=mla,
        sliding_window=window, sliding_every=every, mtp_layers=e.mtp_layers or 0, batch_tokens=e.batch_tokens or 0.0,
        published_params=e.published_params or 0.0, published_active_params=e.published_active_params or 0.0,
        source=e.source or "", notes=dict(e.notes or {}),
    )
    for key, value, valid in model.shape_errors():
        raise FlopcastError(f"{label}: {key}: {value!r} is out of range; valid: {valid}")
    return model
