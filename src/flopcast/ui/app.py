"""The endpoints of `flopcast ui`: the page, the catalog, uploads, a forecast, a comparison, downloads.

Every forecast is one flopcast.api call (`train`, `compare`), its JSON is the result's `to_dict()`, the
CSV its `rows()` (report/tables.py) and the HTML report the report/ builders' page. Bad input is HTTP 400
with JSON {"error": one sentence}; nothing answers with a traceback.

    GET  /                                   the page
    GET  /api/catalog                        {"models", "chips", "systems", "defaults"}
    POST /api/upload  {"filename", "text"}   a config.json or a YAML/TOML model file -> {"model": "upload:KEY", ...}
    GET  /api/train?model=&hardware=&chips=&tokens=[&tp=&pp=&dtype=...]
    GET  /api/compare?model=&hardware=A,B[,C]&chips=&tokens=
    GET  /api/download?what=train|compare&format=json|csv|html&...   the same query, as a file
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import tempfile
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from .. import api
from ..errors import FlopcastError
from .query import Query, parse

PAGE = Path(__file__).with_name("page.html")
MAX_UPLOAD_BYTES = 1 << 20
UPLOAD_SUFFIXES = (".json", ".yaml", ".yml", ".toml")
DEFAULTS = {"model": "llama3-8b", "hardware": "trn2.48xlarge", "chips": 64, "tokens": "1T",
            "compare": "trn2.48xlarge,p5.48xlarge"}
FORMATS = {"json": "application/json", "csv": "text/csv; charset=utf-8", "html": "text/html; charset=utf-8"}


def _clean(o):
    """Strict JSON values: NaN and infinities become null, numpy scalars numbers (as `--json` prints them)."""
    if hasattr(o, "item") and not isinstance(o, (dict, list, tuple, str)):
        o = o.item()
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def to_json(obj) -> str:
    return json.dumps(_clean(obj), indent=2, default=str, allow_nan=False)


def _error(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": " ".join(str(message).split())}, status_code=status)


class Uploads:
    """Uploaded model files, kept in a folder this server owns: "upload:KEY" -> (path, the user's file name)."""

    def __init__(self, directory=None):
        self._tmp = None if directory else tempfile.TemporaryDirectory(prefix="flopcast-ui-")
        self.root = Path(directory or self._tmp.name)
        self.files: dict[str, tuple[Path, str]] = {}

    def add(self, filename: str, text: str) -> str:
        name = Path(str(filename or "model.json").replace("\\", "/")).name
        suffix = Path(name).suffix.lower()
        if suffix not in UPLOAD_SUFFIXES:
            raise FlopcastError(f"{name!r} is not a model file; valid: a Hugging Face config.json or a flopcast "
                                "model file (.yaml, .yml, .toml)")
        try:
            data = text.encode("utf-8")
            name.encode("utf-8")
        except UnicodeEncodeError:  # an unpaired surrogate from the body's JSON escapes (`"\\ud800"`)
            raise FlopcastError("the upload's file name or text holds an unpaired surrogate escape (such as \\ud800), "
                                "which is not Unicode") from None
        if len(data) > MAX_UPLOAD_BYTES:
            raise FlopcastError(f"{name} is {len(data):,} bytes; valid: at most {MAX_UPLOAD_BYTES:,} bytes")
        key = hashlib.sha256(name.encode() + b"\0" + data).hexdigest()[:12]
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(name).stem).strip("-.") or "model"
        if stem == "config":
            stem = f"uploaded-{key[:6]}"
        path = self.root / key / f"{stem}{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.files[f"upload:{key}"] = (path, name)
        return f"upload:{key}"

    def resolve(self, model: str) -> str:
        """The path an "upload:KEY" names; a catalog name as given; a path typed into the page is refused."""
        if model.startswith("upload:"):
            if model not in self.files:
                raise FlopcastError(f"{model} is not known to this server (it restarted?); upload the file again")
            return str(self.files[model][0])
        if "/" in model or "\\" in model or model.lower().endswith(UPLOAD_SUFFIXES):
            raise FlopcastError(f"model {model!r}: name a catalog model, or upload the file with the page's button")
        return model

    def hide_paths(self, message: str) -> str:
        """An error naming a stored upload's path names the user's file instead."""
        for path, name in self.files.values():
            message = message.replace(str(path), name)
        return message.replace(str(self.root) + "/", "")


def _train(q: Query):
    return api.train(q.model, hardware=q.hardware, chips=q.chips, tokens=q.tokens, **q.layout)


def _compare(q: Query):
    if len(q.systems) < 2:
        raise FlopcastError("`hardware`: name two or more systems to compare, comma-separated "
                            "(e.g. trn2.48xlarge,p5.48xlarge)")
    if q.chips is None:
        raise FlopcastError("`chips` is required to compare systems (the chips on each system)")
    return api.compare(q.model, list(q.systems), chips=q.chips, tokens=q.tokens or "chinchilla", **q.layout)


def _report_html(what: str, result) -> str:
    try:
        from ..report import figures
        from ..report.plots import matplotlib_figure

        matplotlib_figure()
    except ImportError:
        raise FlopcastError("the HTML report needs matplotlib: pip install 'flopcast[report]'") from None
    if what == "train":
        return figures.train_report(result).to_html()
    title = f"flopcast compare: {result.model.label} on {result.chips:,} chips"
    return figures.compare_report(result.systems, title).to_html()


def _body(what: str, fmt: str, result) -> str:
    from ..report import tables

    if fmt == "json":
        return to_json(result.to_dict())
    if fmt == "csv":
        return tables.csv_text(result.rows())
    return _report_html(what, result)


def _guarded(fn, uploads: Uploads):
    """An endpoint whose FlopcastError is HTTP 400 {"error": one sentence}; a bug is 500 in one line."""
    async def endpoint(request: Request):
        try:
            return await fn(request)
        except FlopcastError as exc:
            return _error(uploads.hide_paths(str(exc)))
        except Exception as exc:  # a bug: one line, never a traceback in the page
            return _error(f"internal error ({type(exc).__name__}: {exc}); please report it", 500)
    return endpoint


async def _page(request):
    return HTMLResponse(PAGE.read_text(encoding="utf-8"))


async def _catalog(request):
    from ..report import catalog as show

    return JSONResponse({**show.listing_json(), "defaults": DEFAULTS})


def _upload(uploads: Uploads):
    async def endpoint(request):
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("text"), str):
            raise FlopcastError('the upload must be JSON {"filename": ..., "text": the file\'s content}')
        key = uploads.add(str(body.get("filename") or "model.json"), body["text"])
        try:
            model = api.resolve_model(uploads.resolve(key))
        except FlopcastError as exc:
            message = uploads.hide_paths(str(exc))
            uploads.files.pop(key)
            raise FlopcastError(message) from None
        return JSONResponse({"model": key, "label": model.label, "filename": uploads.files[key][1],
                             "notes": {k: str(v) for k, v in dict(model.notes or {}).items()}})
    return endpoint


def create_app(upload_dir=None) -> Starlette:
    """The application; uploads go to `upload_dir` (a temporary folder of this app when None)."""
    uploads = Uploads(upload_dir)
    runs = {"train": _train, "compare": _compare}

    @functools.lru_cache(maxsize=64)
    def run(what: str, q: Query):  # a download repeats the forecast the page just showed: computed once
        return runs[what](q.with_model(uploads.resolve(q.model)))

    def forecast(what: str):
        async def endpoint(request):
            r = await _threaded(lambda: run(what, parse(dict(request.query_params), DEFAULTS)))
            return Response(to_json(r.to_dict()), media_type="application/json")
        return endpoint

    async def download(request):
        params = dict(request.query_params)
        what, fmt = params.pop("what", "train"), params.pop("format", "json")
        if what not in runs:
            raise FlopcastError(f"`what={what}`; valid: {', '.join(runs)}")
        if fmt not in FORMATS:
            raise FlopcastError(f"`format={fmt}`; valid: {', '.join(FORMATS)}")
        r = await _threaded(lambda: run(what, parse(params, DEFAULTS)))
        text = await _threaded(_body, what, fmt, r)
        name = f"flopcast-{what}.{fmt}"
        disposition = f'attachment; filename="{name}"'
        return Response(text, media_type=FORMATS[fmt], headers={"Content-Disposition": disposition})

    routes = [("/", _page, "GET"), ("/api/catalog", _catalog, "GET"), ("/api/upload", _upload(uploads), "POST"),
              ("/api/train", forecast("train"), "GET"), ("/api/compare", forecast("compare"), "GET"),
              ("/api/download", download, "GET")]
    app = Starlette(routes=[Route(path, _guarded(fn, uploads), methods=[method]) for path, fn, method in routes])
    app.state.uploads = uploads
    return app


async def _threaded(fn, *a):
    """Run a forecast off the event loop (a search takes seconds), so the server keeps answering."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *a)
