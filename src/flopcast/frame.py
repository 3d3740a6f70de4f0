"""Results as tables: `to_frame()` on every result, pandas imported only when it is called.

A result says which rows make its table (`rows()`: a list of flat dicts whose keys are the JSON keys;
nested objects are flattened with a slash, as the breakdowns are keyed: `time_breakdown_s/compute`).
"""

from __future__ import annotations


def flatten(d: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}, "c": [1, 2]} -> {"a/b": 1, "c": "1; 2"}: one level of scalars, keys joined by '/'.

    Lists of objects (a table inside the result) are left out: they are rows of another table."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, f"{key}/"))
        elif isinstance(v, (list, tuple)):
            if not any(isinstance(x, dict) for x in v):
                out[key] = "; ".join(str(x) for x in v)
        else:
            out[key] = v
    return out


def pandas():
    """The pandas module, or a one-line FlopcastError saying how to install it."""
    try:
        import pandas as pd
    except ImportError:
        from .errors import FlopcastError

        raise FlopcastError("to_frame() needs pandas: pip install pandas (or 'flopcast[frame]')") from None
    return pd


class Tabular:
    """Mixin: `to_frame()` from `rows()`, by default one row, the flattened `to_dict()`."""

    def rows(self) -> list[dict]:
        return [flatten(self.to_dict())]

    def to_frame(self):
        """A pandas DataFrame of this result's rows (columns are the JSON keys)."""
        return pandas().DataFrame(self.rows())
