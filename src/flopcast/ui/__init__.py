"""`flopcast ui`: a local web page over flopcast.api (starlette + uvicorn, the optional extra `ui`).

app.py holds the endpoints (every forecast is one flopcast.api call; bad input is HTTP 400 with
JSON {"error": one sentence}), page.html the page (its style sheet and script inline, nothing
fetched from the network), server.py starts uvicorn on a local address and opens a browser.
"""

from __future__ import annotations

__all__ = ["create_app", "serve"]


def create_app(upload_dir=None):
    from .app import create_app as _create

    return _create(upload_dir)


def serve(host: str = "127.0.0.1", port: int = 8765, open_browser: bool = True) -> None:
    from .server import serve as _serve

    _serve(host, port, open_browser)
