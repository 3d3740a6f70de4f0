"""Write docs/api.md from the API's docstrings: `python docs/api_doc.py` (or `--check`: exit 1 if it is stale)."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

PAGE = Path(__file__).with_name("api.md")


def _fenced(doc: str) -> str:
    """A docstring with its examples (paragraphs that start with >>>) in fenced code blocks."""
    parts = inspect.cleandoc(doc or "").split("\n\n")
    return "\n\n".join(f"```pycon\n{p}\n```" if p.lstrip().startswith(">>>") else p for p in parts)


def render() -> str:
    from flopcast import api

    out = ["# The Python API", "",
           "Generated from the docstrings by `python docs/api_doc.py`; a test checks that it is in sync.", "",
           inspect.cleandoc(api.__doc__), "", "| function | returns |", "|---|---|"]
    for name in api.FUNCTIONS:
        fn = getattr(api, name)
        ret = inspect.signature(fn).return_annotation
        out.append(f"| [`flopcast.{name}`](#{name}) | `{ret}` |")
    for name in api.FUNCTIONS:
        fn = getattr(api, name)
        out += ["", f"## {name}", "", "```python", f"flopcast.{name}{inspect.signature(fn)}", "```", "",
                _fenced(fn.__doc__)]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is out of date: run python docs/api_doc.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
