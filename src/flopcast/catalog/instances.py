"""Graviton instance families (data/instances.yaml) expanded into one system entry per size AWS sells.

Every size follows from its vCPU count: sockets = ceil(vCPUs / socket cores), DRAM = vCPUs x the family's
GiB per vCPU, price = vCPUs x the family's per-vCPU price, memory bandwidth by the stated partial-socket
model of instances.yaml: B_socket x min(1, vCPUs per socket / saturation vCPUs). The entries are plain
dicts in the systems.yaml format, so the schema checks them as any other entry.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

_PATH = Path(__file__).parent / "data" / "instances.yaml"


def _bandwidth_gbps(chip: dict, info: dict, vcpus: int, sockets: int) -> float:
    per_socket = vcpus / sockets
    share = min(1.0, per_socket / info["saturation_vcpus"])
    socket_gbps = float(str(chip["memory_bandwidth"]).split()[0])
    return round(sockets * socket_gbps * share, 2)


def _entry(family: str, size: str, vcpus: int, spec: dict, info: dict, chip: dict) -> dict:
    sockets = math.ceil(vcpus / info["socket_vcpus"])
    bw = _bandwidth_gbps(chip, info, vcpus, sockets)
    price = spec.get("price_per_vcpu_hour")
    shown = f"{vcpus} of {info['socket_vcpus']} {chip['name'].split(' (')[0]} cores" if sockets == 1 else \
        f"{sockets} x {chip['name'].split(' (')[0]}"
    tiers = [{"name": "socket-link", "size": sockets, "topology": "switch", "bandwidth": None, "latency": None}] \
        if sockets > 1 else []
    return {
        "name": f"Amazon EC2 {family}.{size} ({shown})",
        "chip": spec["chip"], "chips_per_node": sockets, "vcpus": vcpus,
        "memory": f"{vcpus * spec['gib_per_vcpu']} GiB", "memory_bandwidth": f"{bw} GB/s",
        "source": "GRAVITON_GUIDE",
        "price_per_hour": None if price is None else f"{round(price * vcpus, 6)} USD/h",
        "tiers": tiers,
        "sources": {"memory": "FLOPCAST_ASSUMPTIONS", "memory_bandwidth": info["source"],
                    **({"price_per_hour": spec["price_source"]} if price is not None else {})},
        "notes": {
            "vcpus": f"{size} = {vcpus} vCPU (1 vCPU = 1 physical core on Graviton); {sockets} socket(s)",
            "memory": f"assumption: AWS {family[0].upper()}-family ratio of {spec['gib_per_vcpu']} GiB per vCPU",
            "memory_bandwidth": (f"model: {sockets} x {chip['memory_bandwidth']} x min(1, {vcpus // sockets} / "
                                 f"{info['saturation_vcpus']}) vCPUs per socket (data/instances.yaml states the "
                                 f"model and the measurement behind it)"),
            "price_per_hour": (f"derived: {vcpus} vCPU x {price} USD/vCPU-h; " if price is not None else "")
            + spec.get("price_note", ""),
            "tiers": "network bandwidth not catalogued for this size; multi-instance not modelled",
            "source": f"generated from the {family} family of data/instances.yaml",
        },
    }


def generated(chips: dict) -> dict:
    """name -> system entry for every size of every family in instances.yaml (`chips`: the raw chip entries)."""
    if not _PATH.exists():
        return {}
    data = yaml.load(_PATH.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}  # C parser
    sizes, infos = data.get("sizes") or {}, data.get("chips") or {}
    out = {}
    for family, spec in (data.get("families") or {}).items():
        info, chip = infos[spec["chip"]], chips[spec["chip"]]
        for size in spec["sizes"]:
            out[f"{family}.{size}"] = _entry(family, size, sizes[size], spec, info, chip)
    return out
