"""The one error type a user sees: a sentence naming the problem and what is valid.

An argument is named in a message as `name` or `name=value` (backticks included), the way a Python
caller wrote it (`tp=3` must divide the 32 attention heads). The command line shows the same message
with its flags (--tp 3 must divide ...): `flag_names` renames them, `python_names` turns a message
that names flags (from a module written for the command line) back into argument names.
"""

from __future__ import annotations

import re

ARGUMENT = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)(?:=([^`]*))?`")
FLAG = re.compile(r"(?<![\w-])--(no-)?([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?: ('[^']*'|\"[^\"]*\"|-?\d[\w.+-]*))?")


class FlopcastError(ValueError):
    """Bad input. The CLI prints the message on one line and exits with code 2."""


def python_names(message: str) -> str:
    """'--tp 3 must divide --chips' -> '`tp=3` must divide `chips`'; '--no-x' -> '`x=False`'."""

    def one(m: re.Match) -> str:
        negated, name, value = m.group(1), m.group(2).replace("-", "_"), m.group(3)
        if negated:
            return f"`{name}=False`"
        return f"`{name}={value}`" if value is not None else f"`{name}`"

    return FLAG.sub(one, message)


def flag_names(message: str, flags: dict[str, tuple[str, str | None]]) -> str:
    """'`tp=3` must divide' -> '--tp 3 must divide', with flags {argument: (flag, negated flag or None)}.

    A boolean argument set True is its flag, set False its negated flag; an argument the command has
    no flag for keeps its Python spelling, without the backticks."""

    def one(m: re.Match) -> str:
        name, value = m.group(1), m.group(2)
        if name not in flags:
            return name if value is None else f"{name}={value}"
        flag, negated = flags[name]
        if value == "True":
            return flag
        if value == "False" and negated:
            return negated
        return flag if value is None else f"{flag} {value}"

    return ARGUMENT.sub(one, message)
