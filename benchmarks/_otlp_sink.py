"""An OTLP/HTTP sink for the live-spans benchmark: `python -m benchmarks._otlp_sink`.

Accepts every POST (reads the whole body, answers 200 with an empty protobuf reply),
counts the requests it took, prints its port, and serves until stdin closes.
"""

from __future__ import annotations

import socket
import sys
import threading

import uvicorn

from model_call_capture._asgi import Receive, Scope, Send


async def sink(scope: Scope, receive: Receive, send: Send) -> None:
    """Take a request's body and answer 200."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    headers = [(b"content-type", b"application/x-protobuf"), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def main() -> None:
    """Serve until stdin closes."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(sink, lifespan="off", ws="none", log_level="warning", access_log=False)
    )

    def watch_stdin() -> None:
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=watch_stdin, daemon=True).start()
    sock.listen(256)
    print(sock.getsockname()[1], flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
