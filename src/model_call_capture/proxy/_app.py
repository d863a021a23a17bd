"""`ProxyApp`: forwards each HTTP request to the upstream and streams the reply back."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from urllib.parse import quote

import httpx

from .._asgi import Receive, Scope, Send
from ..middleware import ModelExecutionOutcome, start_model_execution
from ._body import BodyError, BodyMismatch, BodyTooLarge, ClientGone, RequestBody
from ._guard import TargetGuard
from ._headers import declared_length, request_headers, response_headers
from ._reply import send_error, set_error_category
from ._target import BadTarget, merge_query, origin_path, resolve_dot_segments
from ._upstream import Upstream

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_TIMEOUT_S",
    "ProxyApp",
    "create_proxy_app",
]

logger = logging.getLogger("model_call_capture.proxy")

DEFAULT_TIMEOUT_S = 600.0
"""Default upstream timeout (connect, read between chunks, write, pool), in seconds."""
DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""Default largest request body forwarded; a larger one is answered 413."""
DEFAULT_BODY_TIMEOUT_S = 30.0
"""Default longest wait for the next chunk of a request body; then 408."""


def _describe(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _request_line(scope: Scope) -> str:
    """`POST /v1/chat/completions (rollout r-1)` for a log line: the target as sent (the
    raw path, in which no CR or LF can be; never the query), at most 200 characters, and
    the rollout of a captured call (an id the capture validated)."""
    raw: bytes = scope.get("raw_path") or scope["path"].encode("utf-8", "replace")
    path = raw.decode("ascii", "replace")
    line = f"{scope['method']} {path[:200]}{'...' if len(path) > 200 else ''}"
    context = (scope.get("extensions") or {}).get("model_call_capture")
    return line if context is None else f"{line} (rollout {context.rollout_id})"


class ProxyApp:
    """ASGI app forwarding every HTTP request to `upstream` and streaming the reply back.

    `upstream` is the server's base URL (`http://vllm:8000` or `https://api.openai.com`); a
    request for `/v1/chat/completions` goes to `<upstream>/v1/chat/completions`, and never
    outside the base path (see `_target`). A base URL that already ends in `/v1` is
    accepted too (`http://vllm:8000/v1`), since that is how OpenAI-compatible servers are
    usually written down. Credentials in the URL (userinfo, query) go upstream with every
    call and are never shown (see `_upstream`).

    The request body streams to the upstream as the client sends it; one larger than
    `max_request_bytes` is answered 413, one that stalls for `body_timeout_s` 408.
    Upstream failures become the HTTP error a client expects (connection error: 502,
    timeout: 504) and are named on the capture record through the middleware's
    per-request context (`scope["extensions"]["model_call_capture"].error_category`).
    The proxy also fills in the call's `ModelExecutionOutcome` (`start_model_execution`):
    `upstream_attempted` once it sends the request upstream; `response_source`
    `upstream` with the upstream's status, or `local` with the reason of a reply it made
    itself (`upstream_unreachable` for its 502, `upstream_timeout` for its 504,
    `request_too_large`, `request_body_timeout`, `invalid_request_body`,
    `invalid_request_target`).
    """

    def __init__(
        self,
        upstream: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    ) -> None:
        if max_request_bytes < 0 or body_timeout_s <= 0:
            raise ValueError("max_request_bytes must be >= 0 and body_timeout_s > 0")
        self.upstream = Upstream(upstream)
        self.max_request_bytes = max_request_bytes
        self.body_timeout_s = body_timeout_s
        self._timeout_s = timeout_s
        self._timeout = httpx.Timeout(timeout_s)
        self._client: httpx.AsyncClient | None = None

    def _client_for_loop(self) -> httpx.AsyncClient:
        # Created lazily so the app works without lifespan events (e.g. under a test client).
        if self._client is None:
            # No cap on connections: a rollout batch may hold thousands of streams open at
            # once, and the proxy must not queue what the upstream would serve (the server
            # caps its own clients: `mcc serve --max-connections`).
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
        """The upstream URL of a request; raises `BadTarget` for one the proxy refuses."""
        raw: bytes = scope.get("raw_path") or quote(scope["path"]).encode("ascii")
        query: bytes = scope.get("query_string", b"")
        path = resolve_dot_segments(origin_path(raw, query))
        base = self.upstream.base_path
        if base.endswith(b"/v1") and (path == b"/v1" or path.startswith(b"/v1/")):
            path = path[3:]
        query = merge_query(self.upstream.query, query)
        try:
            return self.upstream.origin.copy_with(
                raw_path=base + path + (b"?" + query if query else b"")
            )
        except (httpx.InvalidURL, ValueError):
            raise BadTarget("the request target is not a valid URL path") from None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets are not part of these APIs; the server closes the connection
        run = start_model_execution(scope, upstream_attempted=False)
        try:
            url = self._target(scope)
        except BadTarget as exc:
            run.response_source, run.local_response_reason = "local", "invalid_request_target"
            await send_error(send, scope["path"], 400, "invalid_request_target", str(exc))
            return
        length = declared_length(scope["headers"])
        if length is not None and length > self.max_request_bytes:
            await self._refuse(scope, run, BodyTooLarge(self._too_large(length)), send)
            return
        body = RequestBody(
            receive,
            limit=self.max_request_bytes,
            idle_timeout_s=self.body_timeout_s,
            declared=length,
        )
        forward = asyncio.ensure_future(self._forward(scope, run, url, body, send))
        watch = asyncio.ensure_future(self._wait_for_disconnect(body, receive))
        try:
            await asyncio.wait({forward, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            if not forward.done():
                # The client went away: stop reading from the upstream instead of draining it.
                set_error_category(scope, "cancelled")
                forward.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
            with contextlib.suppress(asyncio.CancelledError):
                await forward

    def _too_large(self, length: int) -> str:
        return f"the request body ({length} bytes) is larger than this proxy accepts ({self.max_request_bytes} bytes)"

    @staticmethod
    async def _wait_for_disconnect(body: RequestBody, receive: Receive) -> None:
        await body.done.wait()  # until then the body owns `receive`
        while (await receive())["type"] != "http.disconnect":
            pass

    async def _refuse(
        self, scope: Scope, run: ModelExecutionOutcome, exc: BodyError, send: Send
    ) -> None:
        """Answer a request whose body could not be read (or the client that left: nothing)."""
        if isinstance(exc, ClientGone):
            set_error_category(scope, "cancelled")
            return
        if isinstance(exc, BodyTooLarge):
            status, kind, reason = 413, "request_too_large", "request_too_large"
        elif isinstance(exc, BodyMismatch):
            status, kind, reason = 400, "invalid_request_body", "invalid_request_body"
        else:
            status, kind, reason = 408, "request_timeout", "request_body_timeout"
        run.response_source, run.local_response_reason = "local", reason
        await send_error(send, scope["path"], status, kind, str(exc), close=True)

    async def _upstream_failed(
        self,
        scope: Scope,
        run: ModelExecutionOutcome,
        body: RequestBody,
        send: Send,
        failure: tuple[int, str, str, str],
        text: str,
    ) -> None:
        """Answer 502/504, after reading what is left of the body so the capture holds it."""
        status, kind, category, reason = failure
        try:
            await body.drain()
        except BodyError as exc:
            await self._refuse(scope, run, exc, send)
            return
        set_error_category(scope, category)
        run.response_source, run.local_response_reason = "local", reason
        logger.warning("%s: %s; answered %d", _request_line(scope), text, status)
        await send_error(send, scope["path"], status, kind, text)

    async def _forward(
        self,
        scope: Scope,
        run: ModelExecutionOutcome,
        url: httpx.URL,
        body: RequestBody,
        send: Send,
    ) -> None:
        request = httpx.Request(
            scope["method"],
            url,
            headers=request_headers(scope["headers"], self.upstream.authorization),
            content=body,
            extensions={"timeout": self._timeout.as_dict()},
        )
        name = self.upstream.display
        run.upstream_attempted = True
        try:
            response = await self._client_for_loop().send(request, stream=True)
        except BodyError as exc:
            await self._refuse(scope, run, exc, send)
            return
        except httpx.TimeoutException as exc:
            why = self.upstream.scrub(_describe(exc))
            text = f"upstream {name} timed out after {self._timeout_s:g} s ({why})"
            failure = (504, "upstream_timeout", "timeout", "upstream_timeout")
            await self._upstream_failed(scope, run, body, send, failure, text)
            return
        except httpx.TransportError as exc:
            text = f"upstream {name} unreachable ({self.upstream.scrub(_describe(exc))})"
            failure = (502, "upstream_connection_error", "connection", "upstream_unreachable")
            await self._upstream_failed(scope, run, body, send, failure, text)
            return
        run.response_source, run.upstream_status_code = "upstream", response.status_code
        try:
            await self._relay(scope, response, send)
        except asyncio.CancelledError:
            logger.debug("%s: the client went away during the reply", _request_line(scope))
            raise
        finally:
            await response.aclose()

    async def _relay(self, scope: Scope, response: httpx.Response, send: Send) -> None:
        """The upstream reply to the client, chunk by chunk, still content-encoded."""
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": response_headers(response.headers.raw),
            }
        )
        try:
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.TransportError as exc:
            timeout = isinstance(exc, httpx.TimeoutException)
            set_error_category(scope, "timeout" if timeout else "connection")
            logger.warning(
                "%s: upstream %s %s mid-reply (%s); the reply to the client is cut",
                _request_line(scope),
                self.upstream.display,
                f"timed out after {self._timeout_s:g} s" if timeout else "failed",
                self.upstream.scrub(_describe(exc)),
            )
            return  # not ending the body tells the client the response was cut
        await send({"type": "http.response.body", "body": b"", "more_body": False})

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
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    capture_max_bytes: int | None = None,
    capture_memory_budget_bytes: int | None = None,
) -> Any:
    """The capturing proxy: `ProxyApp(upstream)` behind `CaptureMiddleware` writing to `capture_dir`.

    `capture_max_bytes` and `capture_memory_budget_bytes` are `CaptureConfig`'s (None:
    its defaults).

    Outermost is `TargetGuard`: it refuses a target the proxy will not forward before the
    capture sees it, and hands the capture the path the upstream will get.
    """
    from ..contracts import CaptureConfig
    from ..middleware import install_model_call_capture

    defaults = CaptureConfig()
    config = CaptureConfig(
        observability_enabled=True,
        model_call_capture_dir=capture_dir,
        capture_max_bytes=defaults.capture_max_bytes
        if capture_max_bytes is None
        else capture_max_bytes,
        capture_memory_budget_bytes=defaults.capture_memory_budget_bytes
        if capture_memory_budget_bytes is None
        else capture_memory_budget_bytes,
    )
    proxy = ProxyApp(
        upstream,
        timeout_s=timeout_s,
        max_request_bytes=max_request_bytes,
        body_timeout_s=body_timeout_s,
    )
    return TargetGuard(install_model_call_capture(proxy, config, model_server_name=name))
