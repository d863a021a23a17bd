"""The capturing reverse proxy behind `mcc serve`.

`ProxyApp` is a plain ASGI app that forwards every HTTP request to an upstream OpenAI- or
Anthropic-compatible server and streams the response back chunk by chunk, byte for byte
(compressed bodies stay compressed: it forwards `aiter_raw()`). `create_proxy_app` wraps it
in `CaptureMiddleware`, which strips `/ng-rollout/<id>` and records the prefixed calls; the
proxy itself never sees or records anything.

Upstream failures become the HTTP error a client expects (connection error: 502, timeout:
504) and are named on the capture record through the middleware's per-request context
(`scope["extensions"]["model_call_capture"].error_category`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx

from . import _codec
from ._asgi import Receive, Scope, Send

__all__ = ["DEFAULT_TIMEOUT_S", "HOP_BY_HOP_HEADERS", "ProxyApp", "create_proxy_app"]

DEFAULT_TIMEOUT_S = 600.0
"""Default upstream timeout (connect, read between chunks, write, pool), in seconds."""

HOP_BY_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
"""Headers that describe one connection, not the message (RFC 9110 section 7.6.1)."""

# Recomputed by httpx from the upstream URL and the buffered body.
_REQUEST_ONLY_DROPPED = frozenset({"host", "content-length"})


def _forwarded_headers(
    raw: list[tuple[bytes, bytes]], drop: frozenset[str]
) -> list[tuple[bytes, bytes]]:
    """Headers without hop-by-hop ones, those named in `Connection`, and `drop`."""
    named: set[str] = set()
    for key, value in raw:
        if key.lower() == b"connection":
            named.update(t.strip().lower() for t in value.decode("latin-1").split(","))
    return [
        (key, value)
        for key, value in raw
        if (k := key.decode("latin-1").lower()) not in HOP_BY_HOP_HEADERS
        and k not in named
        and k not in drop
    ]


def _set_error_category(scope: Scope, category: str) -> None:
    """Name the failure on the capture record, when a capture middleware is listening."""
    context = scope.get("extensions", {}).get("model_call_capture")
    if context is not None:
        context.error_category = category


def _describe(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _send_error(send: Send, status: int, kind: str, message: str) -> None:
    """A JSON error reply in the shape both OpenAI and Anthropic clients parse (an APIStatusError)."""
    body = _codec.encode({"type": "error", "error": {"type": kind, "message": message}})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class ProxyApp:
    """ASGI app forwarding every HTTP request to `upstream` and streaming the reply back.

    `upstream` is the server's base URL (`http://vllm:8000` or `https://api.openai.com`); a
    request for `/v1/chat/completions` goes to `<upstream>/v1/chat/completions`. A base URL
    that already ends in `/v1` is accepted too (`http://vllm:8000/v1`), since that is how
    OpenAI-compatible servers are usually written down.
    """

    def __init__(self, upstream: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        url = httpx.URL(upstream)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"upstream must be an http(s) URL, got {upstream!r}")
        self.upstream = url
        self._base_path = url.raw_path.split(b"?", 1)[0].rstrip(b"/")
        self._timeout_s = timeout_s
        self._timeout = httpx.Timeout(timeout_s)
        self._client: httpx.AsyncClient | None = None

    def _client_for_loop(self) -> httpx.AsyncClient:
        # Created lazily so the app works without lifespan events (e.g. under a test client).
        if self._client is None:
            # No cap on connections: a rollout batch may hold thousands of streams open at
            # once, and the proxy must not queue what the upstream would serve.
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
            self._client = httpx.AsyncClient(
                timeout=self._timeout, limits=limits, follow_redirects=False
            )
        return self._client

    async def aclose(self) -> None:
        """Close the upstream connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _target(self, scope: Scope) -> httpx.URL:
        path: bytes = scope.get("raw_path") or scope["path"].encode()
        path = path.split(b"?", 1)[0]
        if self._base_path.endswith(b"/v1") and (path == b"/v1" or path.startswith(b"/v1/")):
            path = path[3:]
        query: bytes = scope.get("query_string", b"")
        return self.upstream.copy_with(
            raw_path=self._base_path + path + (b"?" + query if query else b"")
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets are not part of these APIs; the server closes the connection
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                _set_error_category(scope, "cancelled")
                return
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        forward = asyncio.ensure_future(self._forward(scope, bytes(body), send))
        watch = asyncio.ensure_future(self._wait_for_disconnect(receive))
        try:
            await asyncio.wait({forward, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            if not forward.done():
                # The client went away: stop reading from the upstream instead of draining it.
                _set_error_category(scope, "cancelled")
                forward.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
            with contextlib.suppress(asyncio.CancelledError):
                await forward

    @staticmethod
    async def _wait_for_disconnect(receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    async def _forward(self, scope: Scope, body: bytes, send: Send) -> None:
        request = httpx.Request(
            scope["method"],
            self._target(scope),
            headers=_forwarded_headers(scope["headers"], _REQUEST_ONLY_DROPPED),
            content=body,
            extensions={"timeout": self._timeout.as_dict()},
        )
        client = self._client_for_loop()
        try:
            response = await client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            _set_error_category(scope, "timeout")
            await _send_error(
                send,
                504,
                "upstream_timeout",
                f"upstream {self.upstream} timed out after {self._timeout_s:g} s ({_describe(exc)})",
            )
            return
        except httpx.TransportError as exc:
            _set_error_category(scope, "connection")
            await _send_error(
                send,
                502,
                "upstream_connection_error",
                f"upstream {self.upstream} unreachable ({_describe(exc)})",
            )
            return
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": _forwarded_headers(response.headers.raw, frozenset()),
                }
            )
            try:
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except httpx.TimeoutException:
                _set_error_category(scope, "timeout")
                return  # not ending the body tells the client the response was cut
            except httpx.TransportError:
                _set_error_category(scope, "connection")
                return
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


def create_proxy_app(
    upstream: str,
    capture_dir: str,
    *,
    name: str = "proxy",
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Any:
    """The capturing proxy: `ProxyApp(upstream)` behind `CaptureMiddleware` writing to `capture_dir`."""
    from .contracts import CaptureConfig
    from .middleware import install_model_call_capture

    config = CaptureConfig(observability_enabled=True, model_call_capture_dir=capture_dir)
    return install_model_call_capture(
        ProxyApp(upstream, timeout_s=timeout_s), config, model_server_name=name
    )
