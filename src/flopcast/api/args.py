"""Arguments as users write them: numbers, or the strings the command line takes ("15T", "30d", "2s").

Each reader names the Python argument in its error (`tokens='lots' is not a count ...`); the command
line renames arguments to its flags.
"""

from __future__ import annotations

import functools

from ..errors import FlopcastError, python_names
from ..limits import LIMITS, check
from ..units import parse_count, parse_duration

CHINCHILLA = ("chinchilla", "20x", "auto")


def python_errors(fn):
    """An API function whose errors name its arguments (`tp=3`), also where a lower module named a flag."""

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except FlopcastError as exc:
            raise FlopcastError(python_names(str(exc))) from None

    return wrapper


def _number(value, name: str, parser, example: str) -> float:
    if isinstance(value, bool):
        raise FlopcastError(f"`{name}={value!r}` is not a number; write e.g. {example}")
    if isinstance(value, (int, float)) or hasattr(value, "item"):
        return float(value)
    try:
        return parser(str(value).strip())
    except ValueError:
        raise FlopcastError(f"`{name}={value!r}` is not a number; write e.g. {example}") from None


def count(value, name: str, example: str = "300B or 1.5T") -> float:
    """A count: 6e12, '300B', '1.5T', '2.5M'."""
    return _number(value, name, parse_count, example)


def positive(value: float, name: str, shown: str | None = None) -> float:
    """value if it is > 0; else an error naming `name` and showing `shown` (what the user wrote) or value."""
    if not value > 0:
        raise FlopcastError(f"`{name}` must be positive, got {shown if shown is not None else repr(value)}")
    return value


def tokens(value, model, name: str = "tokens") -> float | None:
    """Training tokens: a count, or 'chinchilla' (20 per parameter of `model`, a Model)."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in CHINCHILLA:
        from ..plan.forecast import default_tokens

        return default_tokens(model)
    return bounded("tokens", count(value, name, "6e12, 300B or 1.5T"), name)


def duration(value, name: str, example: str = "30d, 12h or 90min", unit_required: bool = False) -> float:
    """A positive duration in seconds: a number of seconds, or '30d', '12h', '90min', '500ms'."""
    if isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        if unit_required and text.replace(".", "", 1).lstrip("+-").isdigit():
            raise FlopcastError(f"`{name}={value!r}` needs a unit: write e.g. {example}")
        try:
            v = parse_duration(text)
        except ValueError:
            raise FlopcastError(f"`{name}={value!r}` is not a duration; write e.g. {example}") from None
    else:
        v = _number(value, name, float, example)
    v = positive(v, name, repr(value) if isinstance(value, str) else None)
    return bounded(f"{name}_s", v, name)


def bounded(limit: str, value, name: str):
    """value within flopcast.limits' bound `limit` (finite, a physical range); an error naming `name`."""
    if limit not in LIMITS or value is None:
        return value
    try:
        return check(limit, value)
    except FlopcastError as exc:
        raise FlopcastError(str(exc).replace(f"`{limit}=", f"`{name}=", 1)) from None


# the most distinct names one list may hold (systems to compare or deploy on, dtypes, weight and KV formats): each
# is a search or a simulation of its own, so the list's length is a loop a user controls; 16 columns side by side is
# more than a person compares (the catalog's formats and dtypes are fewer)
MAX_NAMES = 16


def shown(value, limit: int = 80) -> str:
    """A user's value as an error repeats it: repr, cut to `limit` characters (an argument may be megabytes)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def names(value, name: str, most: int | None = MAX_NAMES) -> list[str]:
    """'a,b,c' or ['a', 'b', 'c'] -> ['a', 'b', 'c'] (blanks and repeats dropped, the first kept in place); at most
    `most` distinct names (None: any number, the caller bounds them)."""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    out = list(dict.fromkeys(str(v).strip() for v in items if str(v).strip()))
    if not out:
        raise FlopcastError(f"`{name}`: name at least one")
    if most is not None and len(out) > most:
        raise FlopcastError(f"`{name}` names {len(out):,} distinct values ({', '.join(out[:3])}, ...); valid: at most "
                            f"{most}, comma-separated")
    return out


def batch_range(value, name: str = "batch_range") -> tuple[int, int] | None:
    """'512:4096' or (512, 4096): the global batch range in sequences."""
    if value is None or value == "":
        return None
    try:
        lo, hi = (int(v) for v in (value.split(":") if isinstance(value, str) else value))
    except (TypeError, ValueError):
        raise FlopcastError(f"`{name}={value!r}`: write MIN:MAX in sequences, e.g. 512:4096") from None
    if lo < 1 or hi < lo or hi > LIMITS["global_batch"].high:
        raise FlopcastError(f"`{name}={value!r}`: need 1 <= MIN <= MAX")
    return (lo, hi)


def chip_counts(value, name: str, most: int = 64) -> list[int]:
    """'1024,8192' or [1024, 8192] -> sorted distinct positive chip counts, at most `most` of them given."""
    try:
        out = [check("chips", count(x, name)) for x in names(value, name, most=None)]
    except FlopcastError:
        out = []
    if not out or len(out) > most:
        raise FlopcastError(f"`{name}` must be a comma-separated list of at most {most} chip counts, each 1 to "
                            f"100,000,000, such as 1024,8192, got {shown(value)}")
    return sorted(set(out))


def executor_map(engine: str = "local", workers: int = 1, address: str | None = None):
    """None for one local worker (compute in this process), else mapper(fn, tasks) -> [fn(task), ...] in the
    tasks' order on the sweep executor (sweep/executors.py: a process pool, or Ray tasks); a task's error is
    raised here as a FlopcastError with the worker's one-line message (its type is not carried back)."""
    from ..sweep import executors

    if executors.Engine.parse(engine) == executors.Engine.LOCAL and workers == 1 and address is None:
        return None

    def mapper(fn, tasks):
        out = [None] * len(tasks)
        for o in executors.run(tasks, fn, engine=engine, workers=workers, address=address):
            if not o.ok:
                raise FlopcastError(o.error)
            out[o.index] = o.value
        return out

    return mapper
