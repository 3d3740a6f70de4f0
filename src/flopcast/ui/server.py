"""Serve the page with uvicorn on a local address and open it in the user's browser."""

from __future__ import annotations

import socket
import threading
import webbrowser

from ..errors import FlopcastError


def serve(host: str = "127.0.0.1", port: int = 8765, open_browser: bool = True) -> None:
    """Run until interrupted; a port in use or a host that cannot be bound is one sentence."""
    try:
        import uvicorn
    except ImportError:
        raise FlopcastError("`flopcast ui` needs starlette and uvicorn: pip install 'flopcast[ui]'") from None
    from .app import create_app

    if not 0 < port < 65536:
        raise FlopcastError(f"--port {port}: valid ports are 1 to 65535")
    _check_free(host, port)
    config = uvicorn.Config(create_app(), host=host, port=port, log_level="warning")
    server = uvicorn.Server(config)
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/"
    print(f"flopcast ui at {url} (Ctrl-C stops it)", flush=True)
    if open_browser:
        threading.Timer(1.0, lambda: server.started and webbrowser.open(url)).start()
    try:
        server.run()
    except OSError as exc:
        raise FlopcastError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    except SystemExit:  # uvicorn exits when it cannot bind (the port taken since the check)
        raise FlopcastError(f"cannot serve on {host}:{port}: the address is in use or not available") from None


def _check_free(host: str, port: int) -> None:
    """One sentence, before uvicorn logs its own, when the address cannot be bound."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise FlopcastError(f"--host {host}: not an address of this machine; valid: e.g. 127.0.0.1") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as exc:
            raise FlopcastError(f"cannot serve on {host}:{port}: {exc.strerror or exc}; "
                                "pick another --port") from None
