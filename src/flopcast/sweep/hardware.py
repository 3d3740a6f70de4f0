"""Hardware what-ifs: a catalog system with some of its chip's or its fabric's numbers changed.

A what-if is written in a sweep file as `KNOB: VALUE`; each knob is declared once below
(what it changes, its unit). A value is a quantity with its unit ("5.8 TB/s"), a bare SI
number, or a multiple of the base system's own value ("2x"). The variant is built by the
catalog's own loader from a user file with `base:` (the mechanism of
`flopcast train --hardware my-chip.yaml`): the sweep writes that file, with the base's
fields it replaces, to a scratch folder and loads it, so every range check of a user file
applies to a what-if too.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from .. import catalog
from ..errors import FlopcastError
from ..limits import resolved
from ..model.system import Dtype, System, Topology
from ..units import UnitError, parse


@dataclass(frozen=True)
class Knob:
    """One hardware number a sweep can vary: `level` chip | system | scale-up | scale-out."""

    key: str
    level: str
    dimension: str  # units dimension; "count" for an integer
    unit: str  # the SI unit the variant file is written in
    doc: str


KNOBS = {k.key: k for k in (
    Knob("memory_bandwidth", "chip", "bandwidth", "B/s", "the chip's HBM bandwidth"),
    Knob("memory", "chip", "bytes", "B", "the chip's HBM capacity"),
    Knob("power", "chip", "power", "W", "the chip's power limit (energy = power x chips x time; below its "
                                        "rated tdp the compute-bound kernels run at a lower clock)"),
    *(Knob(f"peak_flops.{d.label}", "chip", "flop_rate", "FLOP/s",
           f"the chip's dense {d.label} peak; its measured matmul ceiling (mamf) scales with it")
      for d in Dtype),
    Knob("price_per_hour", "system", "price", "USD/h", "the price of one node (instance) per hour"),
    Knob("price_per_chip_hour", "system", "price", "USD/h", "the price per chip-hour (node price / chips per node)"),
    Knob("scale_up_chips", "system", "count", "",
         "chips in one scale-up domain (the node: tensor parallelism stays inside it); a size other than the "
         "base's becomes one switch of that many chips at the base's innermost link bandwidth"),
    Knob("scale_up_bandwidth", "scale-up", "bandwidth", "B/s",
         "per-chip bandwidth of every scale-up tier (within the node)"),
    Knob("scale_up_latency", "scale-up", "time", "s", "latency of every scale-up tier"),
    Knob("scale_out_bandwidth", "scale-out", "bandwidth", "B/s",
         "per-chip bandwidth of every scale-out tier (the network between nodes)"),
    Knob("scale_out_latency", "scale-out", "time", "s", "latency of every scale-out tier"),
)}


def knob(key: str) -> Knob:
    if key not in KNOBS:
        import difflib

        close = difflib.get_close_matches(key, list(KNOBS), n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise FlopcastError(f"unknown what-if {key!r}; {hint}valid: {', '.join(KNOBS)}")
    return KNOBS[key]


def is_multiple(value) -> bool:
    return isinstance(value, str) and value.strip().lower().endswith("x")


def multiple(value: str, key: str) -> float:
    try:
        out = float(value.strip()[:-1])
    except ValueError:
        raise FlopcastError(f"what-if {key}: {value!r} is not a multiple; write e.g. 2x") from None
    if not (out > 0 and math.isfinite(out)):
        raise FlopcastError(f"what-if {key}: {value!r} must be a positive multiple, e.g. 2x")
    return out


def absolute(value, k: Knob) -> float:
    """A what-if value in SI (a count for scale_up_chips); multiples are resolved against a base elsewhere."""
    if k.dimension == "count":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 1:
            raise FlopcastError(f"what-if {k.key}: {value!r} must be a positive whole number of chips")
        return float(value)
    try:
        out = parse(value, k.dimension)
    except UnitError:
        raise FlopcastError(f"what-if {k.key}: {value!r} is not a {k.dimension.replace('_', ' ')} "
                            f"(write it with its unit, or as a multiple such as 2x)") from None
    if not math.isfinite(out) or out < 0 or (out == 0 and k.dimension not in ("price", "time")):
        raise FlopcastError(f"what-if {k.key}: {value!r} is out of range; valid: a finite value above zero")
    return out


def base_value(system: System, k: Knob) -> float | None:
    """The base system's own value of a knob (the reference of a multiple), or None where it has none."""
    chip = system.chip
    if k.key.startswith("peak_flops."):
        return chip.peak_flops.get(Dtype.parse(k.key.split(".", 1)[1]))
    if k.level == "chip":
        return getattr(chip, k.key)
    if k.key == "price_per_hour":
        return system.price_per_hour
    if k.key == "price_per_chip_hour":
        return system.price_per_chip_hour
    if k.key == "scale_up_chips":
        return float(system.chips_per_node)
    tiers = [t for t in system.tiers if t.scale_out == (k.level == "scale-out")]
    if not tiers:
        return None
    return getattr(tiers[0], k.key.rsplit("_", 1)[1])


def resolve(system: System, key: str, value) -> float:
    """A what-if value in SI for this base system: a multiple of its own value, or the value itself."""
    k = knob(key)
    if not is_multiple(value):
        return absolute(value, k)
    ref = base_value(system, k)
    if ref is None:
        raise FlopcastError(f"what-if {key}: {value}: {system.id} has no {key.replace('_', ' ')} to multiply; "
                            f"give an absolute value")
    out = ref * multiple(value, key)
    return float(round(out)) if k.dimension == "count" else out


def _si(value: float, k: Knob):
    return int(value) if k.dimension == "count" else f"{value!r} {k.unit}"


def chip_fields(system: System, changes: dict) -> dict:
    """The chip-file fields (besides `base:`) for the chip-level changes, mamf scaled with its peak."""
    out: dict = {}
    for key, value in changes.items():
        k = KNOBS[key]
        if k.level != "chip":
            continue
        if key.startswith("peak_flops."):
            dtype = Dtype.parse(key.split(".", 1)[1])
            out.setdefault("peak_flops", {})[dtype.label] = _si(value, k)
            old, measured = system.chip.peak_flops.get(dtype), system.chip.mamf.get(dtype)
            if old and measured:
                out.setdefault("mamf", {})[dtype.label] = f"{measured * value / old!r} FLOP/s"
        else:
            out[key] = _si(value, k)
    return out


def _tier_dict(t, **changes) -> dict:
    d = {"name": t.name, "size": t.size, "topology": t.topology.value, "bandwidth": f"{t.bandwidth!r} B/s",
         "latency": f"{t.latency!r} s", "scale_out": t.scale_out}
    if t.dims:
        d["dims"] = list(t.dims)
    d.update(changes)
    return d


def system_fields(system: System, changes: dict) -> dict:
    """The system-file fields (besides `base:` and `chip:`) for the system- and tier-level changes."""
    out: dict = {}
    node = system.chips_per_node
    if "scale_up_chips" in changes and int(changes["scale_up_chips"]) != node:
        node = int(changes["scale_up_chips"])
        inner = [t for t in system.tiers if not t.scale_out]
        ref = inner[0] if inner else system.tiers[0]
        outer = [t for t in system.tiers if t.scale_out]
        if outer and node > outer[-1].size:
            raise FlopcastError(f"what-if scale_up_chips: {node} is more than the {outer[-1].size} chips "
                                f"{system.id} scales to")
        tiers = [_tier_dict(ref, name=f"{ref.name}-switch{node}", size=node, topology=Topology.SWITCH.value,
                            scale_out=False)]
        tiers[0].pop("dims", None)
        tiers += [_tier_dict(t) for t in outer]
        out["tiers"] = tiers
        out["chips_per_node"] = node
        if system.price_per_hour is not None:
            out["price_per_hour"] = f"{system.price_per_chip_hour * node!r} USD/h"  # the same price per chip
    tier_changes = {k: v for k, v in changes.items() if KNOBS[k].level in ("scale-up", "scale-out")}
    if tier_changes:
        base_tiers = out.get("tiers") or [_tier_dict(t) for t in system.tiers]
        for t in base_tiers:
            for key, value in tier_changes.items():
                level, field = KNOBS[key].level, key.rsplit("_", 1)[1]
                if t["scale_out"] == (level == "scale-out"):
                    t[field] = _si(value, KNOBS[key])
        out["tiers"] = base_tiers
    if "price_per_hour" in changes:
        out["price_per_hour"] = _si(changes["price_per_hour"], KNOBS["price_per_hour"])
    if "price_per_chip_hour" in changes:
        out["price_per_hour"] = f"{changes['price_per_chip_hour'] * node!r} USD/h"
    return out


def label(base: str, changes: dict) -> str:
    """'trn2.48xlarge [memory_bandwidth=5.8e+12, scale_up_chips=64]': how tables name a variant."""
    if not changes:
        return base
    return f"{base} [{', '.join(f'{k}={v:.4g}' for k, v in changes.items())}]"


def variant(system_name: str, overrides: dict, folder: Path | None = None) -> System:
    """The catalog system `system_name` (a name or a system file) with `overrides` (knob -> value as written,
    quantities, SI numbers or multiples such as "2x") applied through a `base:` user file."""
    base = catalog.system_for(system_name)
    if not overrides:
        return base
    changes = {key: resolve(base, key, value) for key, value in overrides.items()}
    changes = {k: v for k, v in changes.items() if v != base_value(base, KNOBS[k])}  # 1x is the catalog's own
    if not changes:
        return base
    with tempfile.TemporaryDirectory(prefix="flopcast-sweep-") if folder is None else _Keep(folder) as tmp:
        where = Path(tmp)
        chip_data = chip_fields(base, changes)
        system_data = {"base": base_ref(system_name, base), **system_fields(base, changes)}
        if chip_data:
            chip_path = where / "variant-chip.yaml"
            chip_path.write_text(_dump({"base": chip_ref(base), **chip_data}))
            system_data["chip"] = str(chip_path)
        path = where / "variant-system.yaml"
        path.write_text(_dump(system_data))
        try:
            out = catalog.load_system(str(path))
        except FlopcastError as exc:
            text = str(exc).replace(str(where / "variant-chip.yaml"), "chip").replace(str(path), "system")
            raise FlopcastError(f"what-if {label(base.id, changes)}: {text}") from None
    name = label(base.id, changes)
    chip = replace(out.chip, id=f"{base.chip.id} what-if" if chip_data else base.chip.id,
                   name=f"{base.chip.name} (what-if)" if chip_data else base.chip.name)
    return replace(out, id=name, name=f"{base.name} (what-if)", chip=chip)


def _dump(data: dict) -> str:
    """YAML text of a variant file (libyaml's emitter where PyYAML has it: the sweep writes one file per variant)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(data, Dumper=dumper, sort_keys=False)


class _Keep:
    """A folder used as-is (not removed), for callers that keep the variant files."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def __enter__(self) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        return str(self.folder)

    def __exit__(self, *exc) -> None:
        return None


def base_ref(name: str, system: System) -> str:
    """What a variant file names as its base: the file (absolute) or the catalog key."""
    return str(resolved(name)) if catalog.is_file(name) else system.id


def chip_ref(system: System) -> str:
    """The chip a variant chip file is based on: its catalog key, or its file when the base named a chip file."""
    if catalog.resolve_name("chip", system.chip.id):
        return system.chip.id
    raise FlopcastError(f"{system.id}: chip what-ifs need a catalog chip or a chip file as the system's chip; "
                        f"{system.chip.id} is neither")
