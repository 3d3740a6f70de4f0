"""`flopcast catalog`: list entries, or show one with the source of every number."""

from __future__ import annotations

from ..cost.params import active_params, total_params
from ..errors import FlopcastError
from ..model import hf
from ..model.system import Dtype
from ..units import GiB
from .text_table import Column, fold, render
from ..catalog import (read_file, close_matches, entry, file_kind, is_file, load_chip, load_model, load_system, names,
                       raw,
               resolve_name, sources, system_for)


def _model_row(key):
    m = load_model(key)
    active = f"{active_params(m) / 1e9:,.1f}B" if m.moe else ""
    return [key, f"{total_params(m) / 1e9:,.1f}B", active, m.layers, m.hidden, f"{m.heads}/{m.kv_heads}", m.seq_len,
            m.name]


def _chip_row(key):
    c = load_chip(key)
    bf16 = c.peak_flops.get(Dtype.BF16)
    return [key, bf16 / 1e12 if bf16 else None, c.memory / GiB if c.memory else "per instance",
            c.memory_bandwidth / 1e9, c.power, c.name]


def _system_row(key):
    s = load_system(key)
    out = s.tiers[-1] if len(s.tiers) > 1 else None
    return [key, s.chip.id, s.chips_per_node, out.bandwidth * 8 / 1e9 if out else None, s.max_chips,
            s.price_per_hour or None]


def listing() -> str:
    from .text import catalog_list

    return catalog_list([_model_row(k) for k in names("model")], [_chip_row(k) for k in names("chip")],
                        [_system_row(k) for k in names("system")])


def listing_json() -> dict:
    return {"models": names("model"), "chips": names("chip"), "systems": names("system")}


def _kind_of(name: str) -> str:
    if is_file(name):
        kind = file_kind(name)
        if kind is None:
            raise FlopcastError(f"cannot tell whether {name} is a model, chip or system file: give it `base: NAME` "
                                "or the fields of one kind (see src/flopcast/catalog/data/SCHEMA.md)")
        return kind
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
    """One entry, field by field with its source: a catalog name, or a user file as it resolves (after `base:`)."""
    if hf.config_path(name) is not None:
        return _config_json(name)
    kind = _kind_of(name)
    if is_file(name):
        return _file_json(kind, name)
    key = resolve_name(kind, name)
    d = raw(kind)[key]
    notes = d.get("notes") or {}
    fields = [{"field": p, "value": v, "source": _source_of(d, p), "note": notes.get(p)} for p, v in _flatten(d)]
    out = {"kind": kind, "id": key, "name": d.get("name", key), "fields": fields, "sources": _refs(fields, d)}
    if kind == "model":
        _add_params(out, load_model(key))
    return out


def _refs(fields: list, d: dict) -> dict:
    used = {f["source"] for f in fields} | {d.get("source")}
    refs = {}
    for s in used:
        for sid in str(s).split(", "):
            if sid in sources():
                refs[sid] = sources()[sid]
    return refs


def _add_params(out: dict, m) -> None:
    out["computed_params"] = total_params(m)
    out["computed_active_params"] = active_params(m)


def _config_json(name: str) -> dict:
    """A Hugging Face config.json as the model flopcast reads from it: each field, and the keys it could not map."""
    from dataclasses import asdict
    from dataclasses import fields as dc_fields

    m = load_model(name)
    skip = {"name", "id", "source", "notes", "published_params", "published_active_params", "batch_tokens"}
    values = {f.name: getattr(m, f.name) for f in dc_fields(m) if f.name not in skip}
    flat = {}
    for k, v in values.items():
        if hasattr(v, "__dataclass_fields__"):
            flat.update({f"{k}.{kk}": vv for kk, vv in asdict(v).items()})
        else:
            flat[k] = getattr(v, "value", v)
    fields = [{"field": k, "value": v, "source": "config.json", "note": m.notes.get(k.split(".")[0])}
              for k, v in flat.items()]
    fields += [{"field": k, "value": "", "source": "config.json", "note": m.notes[k]}
               for k in ("not_modelled", "no_cost_effect", "defaults") if k in m.notes]
    out = {"kind": "model", "id": m.id, "name": m.name, "file": name, "based_on": None, "fields": fields,
           "sources": {}, "hugging_face_config": True}
    _add_params(out, m)
    return out


def _file_json(kind: str, name: str) -> dict:
    """A user file: the merged entry; fields the file sets cite the file (or its own `source:`), the rest the base."""
    from pathlib import Path

    # load it as the commands do, so a file that would be refused there is refused here, with the same error
    if kind == "model":
        obj = load_model(name)
    elif kind == "chip":
        obj = load_chip(name)
    else:
        obj = load_system(name)
    eid, d = entry(kind, name)
    own = read_file(Path(name).expanduser())
    base = own.pop("base", None)
    own_paths = {p for p, _ in _flatten(own)}
    own_sources, own_notes = own.get("sources") or {}, own.get("notes") or {}
    own_default = own.get("source") or f"file {name}"
    notes = d.get("notes") or {}
    fields = []
    for p, v in _flatten(d):
        if p in own_paths or p.split(".")[0] in own and p.split(".")[0] in ("tiers", "moe", "mla"):
            sid = own_sources.get(p) or own_sources.get(p.split(".")[0]) or own_default
            fields.append({"field": p, "value": v, "source": ", ".join(sid) if isinstance(sid, list) else sid,
                           "note": own_notes.get(p)})
        else:
            fields.append({"field": p, "value": v, "source": _source_of(d, p), "note": notes.get(p)})
    out = {"kind": kind, "id": eid, "name": obj.name, "file": name, "based_on": None if base is None else str(base),
           "fields": fields, "sources": _refs(fields, d)}
    if kind == "chip" and obj.default_system:
        out["hardware"] = system_for(name).name  # what `--hardware FILE` gives
    if kind == "model":
        _add_params(out, obj)
    return out


def entry_text(name: str) -> str:
    e = entry_json(name)
    lines = [f"{e['kind']} {e['id']}: {e['name']}"]
    if e.get("hugging_face_config"):
        lines.append(f"  Hugging Face config {e['file']}; every field read from it, the keys it could not map below")
    elif "file" in e:
        lines.append(f"  user file {e['file']}" + (f", based on {e['based_on']}" if e["based_on"] else "")
                     + "; fields it sets cite it, the rest its base's sources")
        if e.get("hardware"):
            lines.append(f"  as --hardware: {e['hardware']}")
    if e["kind"] == "model":
        lines.append(f"  parameters (computed from the dimensions): {e['computed_params'] / 1e9:.2f}B"
                     + (f", {e['computed_active_params'] / 1e9:.2f}B active per token"
                        if e["computed_active_params"] != e["computed_params"] else ""))
    rows = [[f["field"], "unknown" if f["value"] is None else str(f["value"]), f"[{f['source']}]", f["note"] or ""]
            for f in e["fields"]]
    columns = [Column("field", text=True), Column("value", decimal=False), Column("source", text=True),
               Column("note", text=True)]
    lines += render(columns, rows, indent="  ", header=False)
    lines.append("sources:")
    for sid, s in e["sources"].items():
        lines += fold(f"  [{sid}] {s.get('title', '')}. {s.get('url', '')} ({s.get('date', 'undated')})")
    return "\n".join(lines)
