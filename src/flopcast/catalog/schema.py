"""The catalog schema through pydantic: a user's file checked against the declared entry kinds
(entries.py), with one line naming the file or entry, the field, the value and what is valid.

A field of the wrong type, out of its physical range, with the wrong kind of unit, or a key the schema
does not declare stops the load. Built-in entries are read without pydantic (entries.parse); one that
does not parse comes here for its message. Importing this module imports pydantic (~0.4 s): only a
user's file or a bad entry pays it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools

from pydantic import TypeAdapter, ValidationError

from ..errors import FlopcastError
from .entries import (BASE_KEY, CHIPS, HEADS, LAYERS, SCHEMAS, TOKENS_PER_SEQ, WIDTH, ChipEntry, MlaEntry,
                      MoeEntry, ModelEntry, SystemEntry, TierEntry, WindowEntry, _Nested, declared_keys, hints,
                      kind_fields)

__all__ = ["BASE_KEY", "CHIPS", "HEADS", "LAYERS", "SCHEMAS", "TOKENS_PER_SEQ", "WIDTH", "ChipEntry", "MlaEntry",
           "MoeEntry", "ModelEntry", "SystemEntry", "TierEntry", "WindowEntry", "check_keys", "declared_keys",
           "kind_fields", "validate"]
# pydantic's error types for a key the entry does not declare, and for a value that is not a mapping
_EXTRA = ("extra_forbidden", "unexpected_keyword_argument")


@functools.cache
def _adapter(kind: str) -> TypeAdapter:
    return TypeAdapter(SCHEMAS[kind])


def validate(kind: str, data: dict, label: str, what: str = "file"):
    """The entry checked against its kind's schema; FlopcastError (one line) on the first problem."""
    try:
        return _adapter(kind).validate_python(data)
    except ValidationError as exc:
        errors = sorted(exc.errors(include_url=False), key=lambda e: e["type"] not in _EXTRA)
        raise FlopcastError(_message(kind, label, what, errors[0])) from None


def check_keys(kind: str, data: dict, label: str) -> None:
    """A file's own top-level keys are all declared (or `base`)."""
    for key in data:
        if key not in hints(SCHEMAS[kind]) and key != BASE_KEY:
            raise FlopcastError(_unknown_key(kind, label, "file", str(key), declared_keys(kind) | {BASE_KEY}))


def _unknown_key(kind: str, label: str, what: str, key: str, valid: set, where: str = "") -> str:
    close = difflib.get_close_matches(key, sorted(valid), n=1, cutoff=0.6) or sorted(
        (v for v in valid if len(key) >= 3 and (v.startswith(key) or key.startswith(v))), key=len)[:1]
    hint = f"did you mean {close[0]!r}?" if close else f"valid: {', '.join(sorted(valid))}"
    return f"unknown key {key!r}{where} in {kind} {what} {label}; {hint}"


def _message(kind: str, label: str, what: str, e: dict) -> str:
    loc = _dotted(e["loc"])
    if e["type"] in _EXTRA:
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
    shape = {"dataclass_type": "a mapping of fields", "dataclass_args_type": "a mapping of fields",
             "dict_type": "a mapping of fields", "list_type": "a list", "tuple_type": "a list"}
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
    """The entry class inside an annotation (`X | None`, `list[X]`), or None."""
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
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
        annotation = hints(cls).get(str(part))
        cls = _model_of(annotation) if annotation is not None else None
    return set(hints(cls)) if cls else set()


def _doc_at(cls, loc: tuple) -> str:
    for part in loc[:-1]:
        if not isinstance(part, int) and cls is not None:
            annotation = hints(cls).get(str(part))
            cls = _model_of(annotation) if annotation is not None else None
    annotation = hints(cls).get(str(loc[-1])) if cls else None
    return "" if annotation is None else _annotated_doc(annotation)


def _annotated_doc(annotation) -> str:
    """The description inside an annotation (`Annotated[int, Check(..., description)] | None`)."""
    for meta in getattr(annotation, "__metadata__", ()):
        if getattr(meta, "description", None):
            return meta.description
    for arg in getattr(annotation, "__args__", ()) or ():
        doc = _annotated_doc(arg)
        if doc:
            return doc
    return ""
