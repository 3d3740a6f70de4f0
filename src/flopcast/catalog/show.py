"""`flopcast catalog`: list entries, or show one with the source of every number."""

from __future__ import annotations

from ..cost.params import active_params, total_params
from ..errors import FlopcastError
from ..model.system import Dtype
from ..units import GiB, fmt
from . import close_matches, load_chip, load_model, load_system, names, raw, resolve_name, sources


def _model_row(key):
    m = load_model(key)
    p = total_params(m)
    params = f"{p / 1e9:.1f}B" + (f" ({active_params(m) / 1e9:.1f}B active)" if m.moe else "")
    return [key, m.name, params, str(m.layers), str(m.hidden), f"{m.heads}/{m.kv_heads}", str(m.seq_len)]


def _chip_row(key):
    c = load_chip(key)
    bf16 = c.peak_flops.get(Dtype.BF16)
    return [key, c.name, fmt(bf16, "FLOP/s") if bf16 else "n/a", f"{c.memory / GiB:.0f} GiB" if c.memory else "per instance",
            fmt(c.memory_bandwidth, "B/s"), f"{c.power:.0f} W" if c.power else "n/a"]


def _system_row(key):
    s = load_system(key)
    out = s.tiers[-1] if len(s.tiers) > 1 else None
    price = f"{s.price_per_hour:.2f} USD/h" if s.price_per_hour else "n/a"
    return [key, s.chip.id, str(s.chips_per_node), fmt(out.bandwidth * 8, "bit/s") if out else "n/a",
            f"{s.max_chips:,}", price]


def listing() -> str:
    from ..report.text import catalog_list

    return catalog_list([_model_row(k) for k in names("model")], [_chip_row(k) for k in names("chip")],
                        [_system_row(k) for k in names("system")])


def listing_json() -> dict:
    return {"models": names("model"), "chips": names("chip"), "systems": names("system")}


def _kind_of(name: str) -> str:
    for kind in ("model", "chip", "system"):
        if resolve_name(kind, name):
            return kind
    close = close_matches(name, names("model") + names("chip") + names("system"))
    raise FlopcastError(f"no catalog entry {name!r}; " + (f"closest: {', '.join(close)}" if close else
                                                          "`flopcast catalog` lists them all"))


def _source_of(d: dict, path: str) -> str:
    srcs = d.get("sources") or {}
    sid = srcs.get(path) or srcs.get(path.split(".")[0]) or d.get("source")
    if isinstance(sid, list):
        return ", ".join(sid)
    return sid or "?"


def _flatten(d, prefix=""):
    skip = {"source", "sources", "notes", "name", "aliases"}
    for k, v in d.items():
        if not prefix and k in skip:
            continue
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from _flatten(v, path + ".")
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for item in v:
                name = item.get("name", "?")
                yield from _flatten({kk: vv for kk, vv in item.items() if kk != "name"}, f"{path}.{name}.")
        else:
            yield path, v


def entry_json(name: str) -> dict:
    kind = _kind_of(name)
    key = resolve_name(kind, name)
    d = raw(kind)[key]
    notes = d.get("notes") or {}
    fields = [{"field": p, "value": v, "source": _source_of(d, p), "note": notes.get(p)} for p, v in _flatten(d)]
    used = {f["source"] for f in fields} | {d.get("source")}
    refs = {}
    for s in used:
        for sid in str(s).split(", "):
            if sid in sources():
                refs[sid] = sources()[sid]
    out = {"kind": kind, "id": key, "name": d.get("name", key), "fields": fields, "sources": refs}
    if kind == "model":
        m = load_model(key)
        out["computed_params"] = total_params(m)
        out["computed_active_params"] = active_params(m)
    return out


def entry_text(name: str) -> str:
    e = entry_json(name)
    lines = [f"{e['kind']} {e['id']}: {e['name']}"]
    if e["kind"] == "model":
        lines.append(f"  parameters (computed from the dimensions): {e['computed_params'] / 1e9:.2f}B"
                     + (f", {e['computed_active_params'] / 1e9:.2f}B active per token"
                        if e["computed_active_params"] != e["computed_params"] else ""))
    width = max(len(f["field"]) for f in e["fields"]) if e["fields"] else 10
    for f in e["fields"]:
        val = "unknown" if f["value"] is None else f["value"]
        lines.append(f"  {f['field']:<{width}}  {str(val):<22} [{f['source']}]" + (f"  {f['note']}" if f["note"] else ""))
    lines.append("sources:")
    for sid, s in e["sources"].items():
        lines.append(f"  [{sid}] {s.get('title', '')}. {s.get('url', '')} ({s.get('date', 'undated')})")
    return "\n".join(lines)
