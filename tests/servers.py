"""Run an ASGI app on a real uvicorn server on 127.0.0.1, in a background thread.

    with serve(app) as server:
        httpx.get(server.url + "/v1/models")

The socket is bound by the helper (port 0, so the kernel picks a free port) before the
server starts, so there is no race on the port number. The server runs its own event
loop in a daemon thread; leaving the block asks it to exit and waits for it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn

__all__ = ["RunningServer", "serve"]


@dataclass(frozen=True)
class RunningServer:
    """A uvicorn server started by `serve`."""

    host: str
    port: int
    server: uvicorn.Server

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`, without a trailing slash."""
        return f"http://{self.host}:{self.port}"


@contextmanager
def serve(
    app: Any, *, startup_timeout: float = 10.0, port: int = 0, **config: Any
) -> Iterator[RunningServer]:
    """Serve `app` on 127.0.0.1 on a free port (or `port`) for the duration of the block.

    Keyword arguments go to `uvicorn.Config` (e.g. `http="h11"`); by default lifespan,
    websockets and the access log are off so tests stay quiet and fast.
    """
    options: dict[str, Any] = {
        "lifespan": "off",
        "ws": "none",
        "log_level": "warning",
        "access_log": False,
        "timeout_graceful_shutdown": 2,
    }
    options.update(config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted sockets inherit TCP_NODELAY from the listener. uvicorn does not set it on
    # sockets it is handed, and without it every reply written as headers + body waits
    # ~40 ms for a delayed ACK on loopback.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **options))
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # reported to the test thread below
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if failure or not thread.is_alive():
            sock.close()
            raise RuntimeError(f"uvicorn failed to start: {failure[0] if failure else 'exited'}")
        if time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise TimeoutError(f"uvicorn did not start within {startup_timeout} s")
        time.sleep(0.005)
    try:
        yield RunningServer("127.0.0.1", port, server)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        if failure:
            raise RuntimeError("uvicorn stopped with an error") from failure[0]
