"""User files: reading them safely (bounded size, nesting and alias expansion) and resolving `base:` chains.

A file is parsed once per version (cached by path, modification time and size); a `base:` chain is at most
MAX_BASE_CHAIN files deep, each level read once.
"""

from __future__ import annotations

import copy
import functools
import stat
import tomllib
from pathlib import Path

import yaml

from ..errors import FlopcastError
from ..limits import read_bounded, resolved
from . import entries
from .names import catalog_kinds, raw, resolve_name, unknown

SUFFIXES = (".yaml", ".yml", ".toml")
MAX_FILE_BYTES = 1 << 20  # the largest built-in data file is ~50 kB
MAX_NESTING = 32  # mappings and lists inside each other
MAX_NODES = 100_000  # values after YAML aliases are expanded (an alias bomb expands to billions)
MAX_BASE_CHAIN = 32
# fields a file may name another file in; a relative path is relative to the folder of the file naming it
PATH_FIELDS = ("base", "chip", "default_system")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def is_file(name) -> bool:
    """Whether a name is meant as a user file (it ends in .yaml, .yml or .toml)."""
    return Path(str(name)).suffix.lower() in SUFFIXES


def _version(path: Path) -> tuple:
    try:
        st = path.stat()
    except OSError as exc:
        raise FlopcastError(" ".join(f"cannot read {path}: {exc.strerror or exc}".split())) from None
    if path.is_dir():
        raise FlopcastError(f"{path} is a folder; pass a YAML or TOML file")
    if not stat.S_ISREG(st.st_mode):  # /dev/zero would be read until memory ran out, a pipe waited on forever
        raise FlopcastError(f"{path} is not a regular file (a device, a pipe or a socket); pass a YAML or TOML file")
    if st.st_size > MAX_FILE_BYTES:
        raise FlopcastError(f"{path} is {st.st_size:,} bytes; valid: a file of at most {MAX_FILE_BYTES:,} bytes")
    return str(resolved(path)), st.st_mtime_ns, st.st_size


def read_file(path: Path) -> dict:
    """The file's mapping of fields (paths in it made relative to its folder); a fresh copy each call."""
    return copy.deepcopy(_parsed(*_version(path)))


@functools.lru_cache(maxsize=256)
def _parsed(key: str, mtime_ns: int, size: int) -> dict:
    path = Path(key)
    try:
        text = read_bounded(path, MAX_FILE_BYTES).decode("utf-8")
        data = tomllib.loads(text) if path.suffix.lower() == ".toml" else _yaml(text, path)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        raise FlopcastError(" ".join(f"cannot read {path}: {exc}".split())[:300]) from None
    except RecursionError:
        raise FlopcastError(f"{path}: values nested too deeply; valid: at most {MAX_NESTING} levels") from None
    if not isinstance(data, dict):
        raise FlopcastError(f"{path} must hold a mapping of fields (e.g. `base: trainium2`)")
    _check_shape(data, path)
    for field in PATH_FIELDS:
        value = data.get(field)
        if isinstance(value, str) and is_file(value):
            target = Path(value).expanduser()
            if not target.is_absolute():
                target = path.parent / target
            if not target.exists():
                raise FlopcastError(f"{path}: {field}: file {target} does not exist "
                                    f"(a path in a file is relative to that file's folder, {path.parent})")
            data[field] = str(target)
    return data


def _yaml(text: str, path: Path):
    """YAML after a scan of its events: nesting at most MAX_NESTING (the scan itself keeps no tree)."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_NESTING:
                raise FlopcastError(f"{path}: values nested too deeply; valid: at most {MAX_NESTING} levels")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    if "<<" in text and _merged_size(yaml.compose(text, Loader=_Loader), {}) > MAX_NODES:
        raise FlopcastError(f"{path}: too many values once YAML merge keys (<<) are expanded; valid: at most "
                            f"{MAX_NODES:,}")
    return yaml.load(text, Loader=_Loader)


_MERGE = "tag:yaml.org,2002:merge"


def _merged_size(node, memo: dict) -> int:
    """The key-value pairs and items a composed YAML node holds once its merge keys are expanded (the loader copies
    every merged mapping's pairs, so nested merges of shared anchors grow geometrically: 8 levels of 8 merges are
    16 million pairs from 600 bytes); each shared node sized once (memo by identity), so this is linear in the file."""
    if node is None or id(node) in memo:
        return memo.get(id(node), 0)
    memo[id(node)] = 0  # a node inside itself counts once (the loader refuses such recursion later)
    if isinstance(node, yaml.MappingNode):
        size = sum(_merged_size(v, memo) if k.tag == _MERGE else 1 + _merged_size(v, memo) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = sum(1 + _merged_size(v, memo) for v in node.value)
    else:
        size = 0
    memo[id(node)] = size
    return size


def _check_shape(data, path: Path) -> None:
    """At most MAX_NODES values once aliases are expanded and MAX_NESTING levels; no value inside itself.
    Shared values (YAML aliases) are sized once (memo by identity), so the check is linear in the file."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_ids: set[int] = set()
    stack = [(data, False)]
    while stack:
        obj, done = stack.pop()
        kids = [v for v in (obj.values() if isinstance(obj, dict) else obj) if isinstance(v, (dict, list))]
        if done:
            open_ids.discard(id(obj))
            size[id(obj)] = len(obj) + 1 + sum(size[id(k)] for k in kids)
            depth[id(obj)] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[id(obj)] > MAX_NODES or depth[id(obj)] > MAX_NESTING:
                raise FlopcastError(f"{path}: too many or too deeply nested values (after YAML aliases); valid: "
                                    f"at most {MAX_NODES:,} values and {MAX_NESTING} levels")
            continue
        if id(obj) in size:
            continue
        if id(obj) in open_ids:
            raise FlopcastError(f"{path}: a value contains itself (a recursive YAML alias)")
        open_ids.add(id(obj))
        stack.append((obj, True))
        stack.extend((k, False) for k in kids if id(k) not in size)


def file_data(name: str) -> dict:
    path = Path(str(name)).expanduser()
    if not path.exists():
        raise FlopcastError(f"file {name} does not exist")
    return read_file(path)


def _extend_chain(name: str, chain: tuple) -> tuple:
    key = str(resolved(str(name)))
    if key in chain:
        raise FlopcastError(f"{name}: `base:` files form a loop; a file cannot be based on itself")
    if len(chain) >= MAX_BASE_CHAIN:
        raise FlopcastError(f"{name}: `base:` chain of more than {MAX_BASE_CHAIN} files; valid: at most "
                            f"{MAX_BASE_CHAIN} (base a file on a catalog name or a shorter chain)")
    return chain + (key,)


def file_kind(name: str, _chain: tuple = ()) -> str | None:
    """'model', 'chip' or 'system' for a user file: its `base:`'s kind, else the fields it sets; None if unclear."""
    _chain = _extend_chain(name, _chain)
    data = file_data(name)
    if "chip" in data:
        return "system"
    base = data.get("base")
    if isinstance(base, str):
        if is_file(base):
            kind = file_kind(base, _chain)
            if kind:
                return kind
        else:
            kinds = catalog_kinds(base)
            if len(kinds) == 1:
                return kinds[0]
    kinds = [k for k, fields in entries.kind_fields().items() if fields & set(data)]
    return kinds[0] if len(kinds) == 1 else None


def entry(kind: str, name: str, _chain: tuple = ()) -> tuple[str, dict]:
    """(id, merged raw entry) for a catalog name or a file path; `base:` is resolved.

    A file with `base:` and no `name:` is displayed as "FILE (based on BASE's name)".
    """
    if not is_file(name):
        key = resolve_name(kind, name)
        if key is None:
            raise unknown(kind, name)
        return key, raw(kind)[key]
    path = Path(str(name)).expanduser()
    _chain = _extend_chain(name, _chain)
    data = file_data(name)
    actual = file_kind(name)
    if actual and actual != kind and not (kind == "system" and actual == "chip"):
        raise FlopcastError(f"{name} is a {actual} file, not a {kind} file")
    from . import schema  # a user's file: pydantic's messages

    schema.check_keys(kind, data, str(name))  # each file's own keys; the merged entry's nested ones later
    base = data.pop("base", None)
    if base is None:
        return path.stem, data
    if not isinstance(base, str):
        raise FlopcastError(f"{name}: base: {base!r} is not a name; valid: a catalog name or a file path")
    if not is_file(base) and resolve_name(kind, base) is None:
        other = [k for k in catalog_kinds(base) if k != kind]
        if other:
            raise FlopcastError(f"{name}: base {base!r} is a {other[0]}, not a {kind}")
        raise FlopcastError(f"{name}: base: {unknown(kind, base)}")
    parent_id, parent = entry(kind, base, _chain)
    merged = merge(parent, data)
    if kind == "chip" and "power" in data and "tdp" not in merged and parent.get("power") is not None:
        merged["tdp"] = parent["power"]  # a file that lowers its base's power sets a limit below the base's rating
    merged.setdefault("source", parent.get("source"))
    if "name" not in data:
        merged["name"] = f"{path.stem} (based on {parent.get('name', parent_id)})"
    return path.stem, merged


def merge(parent: dict, child: dict) -> dict:
    """The child's fields over the parent's; mappings key by key, except moe and mla (replaced whole)."""
    out = dict(parent)
    for k, v in child.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k not in ("moe", "mla"):
            out[k] = {**out[k], **v}
        else:
            out[k] = v
    return out
