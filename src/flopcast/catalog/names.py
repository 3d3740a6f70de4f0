"""The built-in entries and how a name (or alias, any case) resolves to one."""

from __future__ import annotations

import difflib
import functools
from pathlib import Path

import yaml

from ..errors import FlopcastError
from . import instances

DATA = Path(__file__).parent / "data"
_FILES = {"model": "models.yaml", "chip": "chips.yaml", "system": "systems.yaml"}
KINDS = tuple(_FILES)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def raw(kind: str) -> dict:
    """All built-in entries of one kind, as written in the data file."""
    path = DATA / _FILES[kind]
    if not path.exists():
        return {}
    entries = yaml.load(path.read_text(), Loader=_Loader) or {}
    if kind == "system":  # every Graviton size AWS sells; a systems.yaml entry of the same name wins
        entries = {**instances.generated(raw("chip")), **entries}
    return entries


@functools.cache
def sources() -> dict:
    out = {}
    for name in ("sources.yaml", "model_sources.yaml"):
        path = DATA / name
        if path.exists():
            out.update(yaml.load(path.read_text(), Loader=_Loader) or {})
    return out


def names(kind: str) -> list[str]:
    return list(raw(kind))


@functools.cache
def _aliases(kind: str) -> dict:
    out = {}
    for key, entry in raw(kind).items():
        out[key.lower()] = key
        for alias in entry.get("aliases", []) or []:
            out.setdefault(str(alias).lower(), key)
    return out


def resolve_name(kind: str, name: str) -> str | None:
    """The catalog key for a name or alias (case-insensitive), or None."""
    return _aliases(kind).get(str(name).strip().lower())


def catalog_kinds(name: str) -> list[str]:
    """The kinds that have an entry of this name."""
    return [k for k in KINDS if resolve_name(k, name)]


def close_matches(name: str, choices: list[str]) -> list[str]:
    return difflib.get_close_matches(str(name).lower(), [c.lower() for c in choices], n=3, cutoff=0.5)


def unknown(kind: str, name: str) -> FlopcastError:
    choices = names(kind)
    family = str(name).strip().lower().split(".")[0] + "."
    sizes = [c for c in choices if c.lower().startswith(family)] if kind == "system" and "." in str(name) else []
    if sizes:
        return FlopcastError(f"unknown system {name!r}; valid {family[:-1]} sizes: {', '.join(sizes)}")
    close = close_matches(name, choices)
    hint = f"closest: {', '.join(close)}" if close else f"valid: {', '.join(choices)}"
    return FlopcastError(f"unknown {kind} {name!r}; {hint} (or pass a YAML/TOML file; `flopcast catalog` lists all)")
