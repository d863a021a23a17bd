"""A uvicorn server for the middleware benchmarks, run in its own process.

    python -m benchmarks._server on|off|nodisk <capture_dir> [--http h11|httptools] [--otlp URL]
                                 [--loop asyncio|uvloop] [--app demo|stream] [--spin-us US]

Serves an app behind `CaptureMiddleware`, with capture on or off, on 127.0.0.1 and a
free port, which it prints on stdout once listening. It stops when stdin closes (the
parent is gone). The app is the scripted model server (`demo`, the default) or the
200-chunk streaming chat model of the line-rate benchmark (`stream`,
`benchmarks._stream_app`). `nodisk` is capture on with a store that encodes each line
and writes nothing: the difference to `on` is what the durable append costs (row 4c'').
`--spin-us` makes the app burn that much CPU on the event loop before each body message
it sends (`benchmarks.contention --control`: an uncaptured server that spends per chunk
what capture spends on the loop thread, with no write thread).
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time

import uvicorn

from model_call_capture import _codec
from model_call_capture._asgi import ASGIApp, Message, Receive, Scope, Send
from model_call_capture.contracts import CaptureConfig, CaptureLine
from model_call_capture.demo.model_server import create_app
from model_call_capture.middleware import CaptureMiddleware
from model_call_capture.store import CaptureStore

from ._stream_app import stream_app


class _NoDiskStore(CaptureStore):
    """A store that encodes each line as `append` does, and writes nothing."""

    def append(self, rollout_id: str, line: CaptureLine | bytes) -> None:
        """Encode the line only."""
        if isinstance(line, CaptureLine):
            _codec.encode_line(line)


def _spinning(app: ASGIApp, seconds: float) -> ASGIApp:
    """`app`, burning `seconds` of CPU on the event loop before each body message it sends."""

    async def spinning_app(scope: Scope, receive: Receive, send: Send) -> None:
        async def spin_then_send(message: Message) -> None:
            if message["type"] == "http.response.body":
                end = time.perf_counter() + seconds
                while time.perf_counter() < end:
                    pass
            await send(message)

        await app(scope, receive, spin_then_send)

    return spinning_app


def main() -> None:
    """Serve until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks._server")
    parser.add_argument("mode", choices=("on", "off", "nodisk"))
    parser.add_argument("capture_dir")
    parser.add_argument("--http", default="h11", choices=("h11", "httptools"))
    parser.add_argument("--loop", default="asyncio", choices=("asyncio", "uvloop"))
    parser.add_argument("--app", default="demo", choices=("demo", "stream"))
    parser.add_argument("--spin-us", type=float, default=0.0)
    parser.add_argument("--otlp", default=None, help="otlp_endpoint: live spans of each call")
    args = parser.parse_args()
    config = CaptureConfig(
        observability_enabled=args.mode != "off",
        model_call_capture_dir=args.capture_dir,
        otlp_endpoint=args.otlp,
    )
    store = _NoDiskStore(args.capture_dir) if args.mode == "nodisk" else None
    inner: ASGIApp = create_app() if args.app == "demo" else stream_app
    if args.spin_us:
        inner = _spinning(inner, args.spin_us / 1e6)
    app = CaptureMiddleware(inner, config=config, model_server_name="bench_model", store=store)
    # proto IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only when the
    # listening socket says TCP (with proto 0, keep-alive replies wait 40 ms on delayed ACKs).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            lifespan="off",
            ws="none",
            http=args.http,
            loop=args.loop,
            log_level="warning",
            access_log=False,
            backlog=256,
        )
    )

    def watch_stdin() -> None:
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=watch_stdin, daemon=True).start()
    sock.listen(256)  # connections queue until the server accepts them
    print(sock.getsockname()[1], flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
