"""`flopcast ui`: the local web page (flopcast.ui; needs the optional extra `ui`)."""

from __future__ import annotations

import click


@click.command("ui")
@click.option("--port", type=int, default=8765, show_default=True, help="Port to serve the page on.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (127.0.0.1 keeps the page on this machine).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser; print the address only.")
def ui(port, host, no_browser):
    """A local page: pick model (or upload a config.json), hardware, chips and tokens; see the forecast with
    its breakdown; compare systems side by side; download JSON, CSV or the HTML report.

    Offline: nothing is fetched from the network. Needs starlette and uvicorn: pip install 'flopcast[ui]'.
    """
    from ..ui import serve

    serve(host, port, open_browser=not no_browser)
