"""A scripted model server: the four dialects, JSON and streaming, and every failure on demand.

`create_app()` returns a pure ASGI app that answers

- `POST /v1/responses` (OpenAI Responses), `POST /v1/chat/completions` (OpenAI Chat
  Completions), `POST /v1/messages` (Anthropic Messages) and `POST /v1/completions`
  (OpenAI legacy Completions, shaped like vLLM's), as JSON or, with
  `"stream": true`, as Server-Sent Events shaped like the real providers' streams;
- `GET /v1/models`.

A reply carries reasoning, text, a tool call (when the request offers tools and does not
already end with a tool result) and realistic usage. Replies are deterministic: ids are
derived from the request body, timestamps are fixed, so two identical requests get
identical bytes (the capture tests compare bytes with and without the middleware).

Scenarios. The request's `model` (or an `x-mcc-scenario` header, which also works for
malformed bodies) names scenario tokens joined with `+`, e.g. `model="gzip+raise_mid"`.
A model name without known tokens (`demo-gpt`) is the ordinary reply. `SCENARIOS` lists
every token with what it does.

This module is the HTTP side: routing, status, compression, chunking and the scripted
failures of delivery. What each dialect's model says lives in `demo.scenarios`.
"""

from __future__ import annotations

import asyncio
import gzip
import zlib
from typing import Any

import brotli
import httpx

from .. import _codec
from .._asgi import Receive, Scope, Send
from .scenarios import CREATED, REPLIES, SCENARIOS, Reply, Script, error_body, read_script

__all__ = ["SCENARIOS", "ScriptedFailure", "ScriptedModelServer", "create_app"]

_SLOW_DELAY = 0.02
_SPLIT = 7
_PATHS = {
    "/v1/responses": "responses",
    "/v1/chat/completions": "chat",
    "/v1/messages": "messages",
    "/v1/completions": "completions",
}


class ScriptedFailure(RuntimeError):
    """The exception the scripted app raises for the `raise_*` scenarios."""


class ScriptedModelServer:
    """The scripted model server as an ASGI callable (see the module docstring)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["type"] == "http":
            await _http(scope, receive, send)


def create_app() -> ScriptedModelServer:
    """A fresh scripted model server (an ASGI app)."""
    return ScriptedModelServer()


# -- routing ---------------------------------------------------------------------------


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _http(scope: Scope, receive: Receive, send: Send) -> None:
    path = scope["path"].rstrip("/")
    dialect = _PATHS.get(path)
    if path == "/v1/models" and scope["method"] == "GET":
        models = {
            "object": "list",
            "data": [{"id": "demo-gpt", "object": "model", "created": CREATED, "owned_by": "mcc"}],
        }
        await _send_json(send, 200, models)
        return
    if dialect is None:
        await _send_json(send, 404, error_body("chat", 404, f"no route for {scope['path']}"))
        return
    if scope["method"] != "POST":
        await _send_json(send, 405, error_body(dialect, 405, "method not allowed"))
        return
    body = await _read_body(receive)
    if body is None:
        return
    headers = dict(scope.get("headers") or ())
    request = _codec.decode_object(body)
    script = read_script(request.get("model") if request else None, headers.get(b"x-mcc-scenario"))
    if request is None:
        await _send_json(
            send, 400, error_body(dialect, 400, "the request body is not a JSON object")
        )
        return
    disconnected = asyncio.Event()
    watcher = asyncio.ensure_future(_watch_disconnect(receive, disconnected))
    try:
        await _reply(send, dialect, request, body, script, disconnected)
    finally:
        watcher.cancel()
        try:
            await watcher
        except asyncio.CancelledError:
            pass


async def _read_body(receive: Receive) -> bytes | None:
    """The request body, or None when the client disconnects before sending all of it."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return bytes(body)


async def _watch_disconnect(receive: Receive, disconnected: asyncio.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            disconnected.set()
            return


# -- delivery --------------------------------------------------------------------------


async def _reply(
    send: Send,
    dialect: str,
    request: dict[str, Any],
    body: bytes,
    script: Script,
    disconnected: asyncio.Event,
) -> None:
    if "hang" in script:
        await disconnected.wait()
        return
    if "raise_before" in script:
        raise ScriptedFailure("scripted failure before the response")
    if "raise_timeout" in script:
        raise TimeoutError("scripted upstream timeout")
    if "raise_connection" in script:
        raise ConnectionError("scripted upstream connection failure")
    if "raise_status" in script:
        upstream = httpx.Request("POST", "http://upstream.invalid/v1")
        response = httpx.Response(429, content=b'{"error":"slow down"}', request=upstream)
        raise httpx.HTTPStatusError("upstream said 429", request=upstream, response=response)
    if script.status is not None:
        await _send_json(
            send, script.status, error_body(dialect, script.status, "scripted error"), script
        )
        return
    if "empty" in script:
        await _send_raw(send, 200, b"application/json", b"", script)
        return
    if "no_content" in script:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    if "text_body" in script:
        await _send_raw(send, 200, b"text/plain; charset=utf-8", b"not json", script)
        return
    if "json_array" in script:
        await _send_raw(send, 200, b"application/json", b"[1,2,3]", script)
        return
    reply = REPLIES[dialect](request, body, script)
    if request.get("stream") is True:
        await _send_stream(send, reply, script, disconnected)
    elif "error_event" in script:
        await _send_json(send, 500, error_body(dialect, 500, "scripted server error"), script)
    else:
        await _send_raw(send, 200, b"application/json", _codec.encode(reply.json()), script)


def _content_headers(content_type: bytes, script: Script) -> list[tuple[bytes, bytes]]:
    headers = [(b"content-type", content_type)]
    for coding in (b"gzip", b"deflate", b"br"):
        if coding.decode() in script:
            headers.append((b"content-encoding", coding))
            break
    return headers


async def _send_json(send: Send, status: int, value: Any, script: Script | None = None) -> None:
    await _send_raw(send, status, b"application/json", _codec.encode(value), script)


async def _send_raw(
    send: Send, status: int, content_type: bytes, data: bytes, script: Script | None
) -> None:
    script = script or Script()
    headers = _content_headers(content_type, script)
    data = _compress_whole(data, script)
    if "truncate" in script:
        data = data[: len(data) // 2]
    headers.append((b"content-length", str(len(data)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    if "raise_mid" in script:
        await send(
            {"type": "http.response.body", "body": data[: len(data) // 2], "more_body": True}
        )
        raise ScriptedFailure("scripted failure in the middle of the body")
    if "raise_after_terminal" in script:
        await send({"type": "http.response.body", "body": data, "more_body": True})
        raise ScriptedFailure("scripted failure after the body, before closing the response")
    if "split" in script or "slow" in script:
        for piece in _pieces([data], script):
            if "slow" in script:
                await asyncio.sleep(_SLOW_DELAY)
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        data = b""
    await send({"type": "http.response.body", "body": data})
    if "raise_after_response" in script:
        raise ScriptedFailure("scripted failure after the response")


def _compress_whole(data: bytes, script: Script) -> bytes:
    if "gzip" in script:
        return gzip.compress(data, mtime=0)
    if "deflate" in script:
        return zlib.compress(data)
    if "br" in script:
        return bytes(brotli.compress(data))
    return data


class _StreamCompressor:
    """Compresses a stream chunk by chunk, flushing each so the client can decode it at once."""

    def __init__(self, script: Script) -> None:
        self._zlib: Any = None
        self._br: Any = None
        if "gzip" in script:
            self._zlib = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
        elif "deflate" in script:
            self._zlib = zlib.compressobj()
        elif "br" in script:
            self._br = brotli.Compressor()

    def chunk(self, data: bytes, last: bool = False) -> bytes:
        if self._zlib is not None:
            flush = zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH
            return bytes(self._zlib.compress(data) + self._zlib.flush(flush))
        if self._br is not None:
            out = self._br.process(data)
            return bytes(out + (self._br.finish() if last else self._br.flush()))
        return data


def _pieces(chunks: list[bytes], script: Script) -> list[bytes]:
    if "split" not in script:
        return [c for c in chunks if c]
    data = b"".join(chunks)
    return [data[i : i + _SPLIT] for i in range(0, len(data), _SPLIT)]


async def _send_stream(
    send: Send, reply: Reply, script: Script, disconnected: asyncio.Event
) -> None:
    content_type = (
        b"Text/Event-Stream; charset=utf-8"
        if "uppercase_ct" in script
        else b"text/event-stream; charset=utf-8"
    )
    headers = [*_content_headers(content_type, script), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    compressor = _StreamCompressor(script)
    newline = b"\r\n" if "crlf" in script else b"\n"
    if "forever" in script:
        await _send_forever(send, reply, compressor, newline, disconnected)
        return
    pieces = _pieces(_frames(reply, script, newline), script)
    middle = len(pieces) // 2
    for index, piece in enumerate(pieces):
        if disconnected.is_set():
            return
        if "raise_mid" in script and index == middle:
            raise ScriptedFailure("scripted failure in the middle of the stream")
        if "slow" in script and index:
            await asyncio.sleep(_SLOW_DELAY)
        await send(
            {"type": "http.response.body", "body": compressor.chunk(piece), "more_body": True}
        )
    if "raise_after_terminal" in script:
        raise ScriptedFailure("scripted failure after the terminal event")
    await send({"type": "http.response.body", "body": compressor.chunk(b"", last=True)})
    if "raise_after_response" in script:
        raise ScriptedFailure("scripted failure after the response")


def _frame(event: str | None, data: Any, newline: bytes) -> bytes:
    """One SSE event: its `event:` line when named, its data (JSON unless bytes), a blank line."""
    payload = data if isinstance(data, bytes) else _codec.encode(data)
    head = b"event: " + event.encode() + newline if event else b""
    return head + b"data: " + payload + newline + newline


def _frames(reply: Reply, script: Script, newline: bytes) -> list[bytes]:
    """The SSE frames of the stream, cut, padded with keep-alives or extended as scripted."""
    events = reply.events()
    if "truncate" in script:
        events = events[: len(events) // 2]
    frames = [_frame(event, data, newline) for event, data in events]
    keepalive = b": keep-alive" + newline + newline
    if "keepalive" in script:
        frames = [
            keepalive,
            *[f for pair in zip(frames, [keepalive] * len(frames), strict=True) for f in pair][:-1],
        ]
    if "extra_after_terminal" in script:
        frames.append(
            b": after the end" + newline + newline + _frame("ping", {"type": "ping"}, newline)
        )
    return frames


async def _send_forever(
    send: Send,
    reply: Reply,
    compressor: _StreamCompressor,
    newline: bytes,
    disconnected: asyncio.Event,
) -> None:
    """The first events of the reply, then text deltas until the client disconnects."""
    for event, data in reply.events()[:3]:
        body = compressor.chunk(_frame(event, data, newline))
        await send({"type": "http.response.body", "body": body, "more_body": True})
    n = 0
    while not disconnected.is_set():
        event, data = reply.delta_event(f"forever {n} ", n)
        body = compressor.chunk(_frame(event, data, newline))
        await send({"type": "http.response.body", "body": body, "more_body": True})
        n += 1
        await asyncio.sleep(0)
