"""Reports of figures and tables: one self-contained HTML file, or one PNG per figure.

The HTML opens offline: figures are inline SVG, the style sheet and the one small script are
inline, and nothing is fetched (no CDN, no web fonts). The script checks, once the page has
loaded, that every figure has a non-zero rendered size and writes `ok N` (N figures) or
`error: ...` into <div id="render-check">; a headless browser reads that back (tests).

Commands offer them as `--html FILE` and `--png DIR`.
"""

from __future__ import annotations

import html as _html
import re
from dataclasses import dataclass, field
from pathlib import Path

from .plots.common import slug

RENDER_CHECK_ID = "render-check"


@dataclass(frozen=True)
class Section:
    """A titled block of a report: text paragraphs, an optional table (header + rows) and figures."""

    title: str
    text: str = ""
    header: tuple = ()
    rows: tuple = ()
    figures: tuple = ()


@dataclass
class Report:
    title: str
    subtitle: str = ""
    sections: list = field(default_factory=list)

    def add(self, title: str, text: str = "", *, header=(), rows=(), figures=()) -> "Report":
        """Append a section; returns the report so calls chain."""
        self.sections.append(Section(title, text, tuple(header), tuple(tuple(r) for r in rows), tuple(figures)))
        return self

    @property
    def figures(self) -> list:
        return [f for s in self.sections for f in s.figures]

    def file_names(self) -> list[str]:
        """Stable, unique file stems of the figures, in order (the PNG names without '.png')."""
        seen, out = {}, []
        for f in self.figures:
            stem = slug(f.name)
            seen[stem] = seen.get(stem, 0) + 1
            out.append(stem if seen[stem] == 1 else f"{stem}-{seen[stem]}")
        return out

    def to_html(self) -> str:
        return render_html(self)

    def write_html(self, path) -> Path:
        p = Path(path)
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.to_html(), encoding="utf-8")
        return p

    def write_png(self, directory, dpi: int | None = None) -> list[Path]:
        """One PNG per figure (`<name>.png`, about 110 dpi) into `directory`, created if missing."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        out = []
        for stem, f in zip(self.file_names(), self.figures):
            path = d / f"{stem}.png"
            f.write_png(path, **({"dpi": dpi} if dpi else {}))
            out.append(path)
        return out


# ---------------------------------------------------------------- rendering

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.1em; } h2 { font-size: 1.25em; margin-top: 1.8em;
     border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.subtitle { color: #555; margin-top: 0; }
nav ol { columns: 2; color: #444; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
figure.chart { margin: 1em 0 1.6em 0; }
figure.chart svg { max-width: 100%; height: auto; display: block; }
figcaption { color: #555; font-size: 0.88em; margin-top: 0.3em; }
#render-check { color: #888; font-size: 0.8em; margin-top: 2em; }
footer { color: #888; font-size: 0.8em; }
"""

# the checker: runs first so it sees errors of anything after it; `ok N` only if none happened
_SCRIPT = """
(function () {
  var failed = null;  // the first error's message; shown again on load if the check's div came later
  function show(text) { var e = document.getElementById("%(id)s"); if (e) { e.textContent = text; } }
  window.onerror = function (message) { failed = failed || ("error: " + message); show(failed); return false; };
  window.addEventListener("load", function () {
    if (failed) { show(failed); return; }
    var figures = document.querySelectorAll("figure.chart");
    var empty = [];
    for (var i = 0; i < figures.length; i++) {
      var svg = figures[i].querySelector("svg");
      var box = svg ? svg.getBoundingClientRect() : null;
      if (!box || !(box.width > 0) || !(box.height > 0)) { empty.push(figures[i].id || String(i)); }
    }
    show(empty.length ? "error: empty figure(s): " + empty.join(", ") : "ok " + figures.length);
  });
})();
""" % {"id": RENDER_CHECK_ID}

_XML_DECL = re.compile(r"<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*|<!--.*?-->\s*", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_ID = re.compile(r'\bid="([^"]+)"')


def inline_svg(svg: str, prefix: str) -> str:
    """An SVG document made fit to sit inline in HTML: no XML prolog or metadata, and every id
    (clip paths, markers) prefixed so figures on one page cannot capture each other's references."""
    s = _METADATA.sub("", _XML_DECL.sub("", svg)).strip()
    ids = set(_ID.findall(s))
    for i in sorted(ids, key=len, reverse=True):
        s = s.replace(f'id="{i}"', f'id="{prefix}-{i}"').replace(f"#{i})", f"#{prefix}-{i})") \
             .replace(f'href="#{i}"', f'href="#{prefix}-{i}"')
    return s


def _paragraphs(text: str) -> str:
    return "".join(f"<p>{_html.escape(p.strip())}</p>\n" for p in text.split("\n\n") if p.strip())


def _table(header, rows) -> str:
    head = "".join(f"<th>{_html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_html.escape(str(c))}</td>" for c in r) + "</tr>\n" for r in rows)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n"


def render_html(report: Report) -> str:
    stems = iter(report.file_names())
    parts = []
    for k, s in enumerate(report.sections, 1):
        parts.append(f'<section id="section-{k}">\n<h2>{k}. {_html.escape(s.title)}</h2>\n')
        parts.append(_paragraphs(s.text))
        if s.header:
            parts.append(_table(s.header, s.rows))
        for f in s.figures:
            stem = next(stems)
            parts.append(f'<figure class="chart" id="fig-{stem}">\n{inline_svg(f.svg(), "fig-" + stem)}\n'
                         f"<figcaption><b>{_html.escape(f.title)}.</b> {_html.escape(f.caption)}</figcaption>\n</figure>\n")
        parts.append("</section>\n")
    toc = "".join(f'<li><a href="#section-{k}">{_html.escape(s.title)}</a></li>' for k, s in enumerate(report.sections, 1))
    title = _html.escape(report.title)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{title}</title>\n<style>{_STYLE}</style>\n<script>{_SCRIPT}</script>\n</head>\n<body>\n"
        f"<h1>{title}</h1>\n" + (f'<p class="subtitle">{_html.escape(report.subtitle)}</p>\n' if report.subtitle else "")
        + (f"<nav><ol>{toc}</ol></nav>\n" if len(report.sections) > 1 else "")
        + "".join(parts)
        + f'<div id="{RENDER_CHECK_ID}">not checked (scripts disabled)</div>\n'
        + f"<footer>flopcast {_version()}: a forecast, not a measurement; every formula cites its source in "
          "the code.</footer>\n</body>\n</html>\n"
    )


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("flopcast")
    except Exception:  # not installed as a distribution (e.g. run from a source tree)
        return ""
