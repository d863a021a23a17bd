"""A scripted model server: the three dialects, JSON and streaming, and every failure on demand.

`create_app()` returns a pure ASGI app that answers

- `POST /v1/responses` (OpenAI Responses), `POST /v1/chat/completions` (OpenAI Chat
  Completions) and `POST /v1/messages` (Anthropic Messages), as JSON or, with
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
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import zlib
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import brotli
import httpx

from .. import _codec

__all__ = ["SCENARIOS", "ScriptedFailure", "ScriptedModelServer", "create_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

SCENARIOS: dict[str, str] = {
    "ok": "the ordinary reply (the default): reasoning, text, a tool call when tools are offered",
    "text": "text only, no tool call even when tools are offered",
    "incomplete": "stopped by the token limit (response.incomplete / finish_reason length / max_tokens)",
    "failed": "Responses: the stream ends with response.failed; the other dialects send an error event",
    "error_event": "the stream sends an error event after a few deltas (JSON: a 500 error body)",
    "truncate": "the stream (or JSON body) stops halfway; the response itself ends normally",
    "raise_before": "the app raises before sending anything",
    "raise_mid": "the app raises halfway through the body",
    "raise_after_terminal": "the app raises after the terminal event, before closing the response",
    "raise_after_response": "the app raises after the response is complete",
    "raise_timeout": "the app raises TimeoutError before sending anything",
    "raise_connection": "the app raises ConnectionError before sending anything",
    "raise_status": "the app raises httpx.HTTPStatusError carrying a 429 response and its body",
    "status_<code>": "an error reply with that HTTP status and the dialect's error body",
    "empty": "200 with an empty body",
    "no_content": "204 without a body",
    "text_body": "200 with a text/plain body that is not JSON",
    "json_array": "200 with the JSON array [1,2,3]",
    "gzip": "content-encoding gzip (streams: one flushed gzip member, chunk by chunk)",
    "deflate": "content-encoding deflate (zlib)",
    "br": "content-encoding br (brotli)",
    "slow": "20 ms between chunks",
    "keepalive": "SSE comments before the first event and between events",
    "crlf": "SSE lines end with CRLF",
    "split": "the body is sent in 7-byte chunks, splitting lines and UTF-8 characters",
    "uppercase_ct": "content-type Text/Event-Stream",
    "extra_after_terminal": "a comment and an unrelated event after the terminal event",
    "big_<kib>": "the text is about <kib> KiB, sent in 1 KiB deltas",
    "forever": "the stream never ends: deltas until the client disconnects",
    "hang": "nothing is sent until the client disconnects",
}
"""Scenario tokens accepted in `model` or the `x-mcc-scenario` header, with what each does."""

_CREATED = 1700000000
_SLOW_DELAY = 0.02
_SPLIT = 7
_REASONING = "The user asks about the weather; the get_weather tool can tell me."
_TOOL_TEXT = "Let me check the weather for you \u2014 one moment."
_ANSWER = "It is 18 \u00b0C with light rain in Paris: take a raincoat and an umbrella."
_ARGUMENTS = '{"city":"Paris"}'
_FILLER = "All work and no play makes a dull model. "


class ScriptedFailure(RuntimeError):
    """The exception the scripted app raises for the `raise_*` scenarios."""


@dataclass(frozen=True, slots=True)
class _Script:
    tokens: frozenset[str]
    status: int | None
    big_kib: int

    def __contains__(self, token: str) -> bool:
        return token in self.tokens


def _script(model: object, header: bytes | None) -> _Script:
    source = header.decode("latin-1") if header else model if isinstance(model, str) else ""
    tokens = {t.strip() for t in source.split("+") if t.strip()}
    status = big = None
    for token in tokens:
        kind, _, value = token.partition("_")
        if kind == "status" and value.isdigit():
            status = int(value)
        elif kind == "big" and value.isdigit():
            big = int(value)
    return _Script(frozenset(tokens), status, big or 0)


class ScriptedModelServer:
    """The scripted model server as an ASGI callable (see the module docstring)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path = scope["path"].rstrip("/")
        dialect = _PATHS.get(path)
        if path == "/v1/models" and scope["method"] == "GET":
            models = {
                "object": "list",
                "data": [
                    {"id": "demo-gpt", "object": "model", "created": _CREATED, "owned_by": "mcc"}
                ],
            }
            await _send_json(send, 200, models)
            return
        if dialect is None:
            await _send_json(send, 404, _error_body("chat", 404, f"no route for {scope['path']}"))
            return
        if scope["method"] != "POST":
            await _send_json(send, 405, _error_body(dialect, 405, "method not allowed"))
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        headers = dict(scope.get("headers") or ())
        request = _codec.decode_object(body)
        script = _script(request.get("model") if request else None, headers.get(b"x-mcc-scenario"))
        if request is None:
            await _send_json(
                send, 400, _error_body(dialect, 400, "the request body is not a JSON object")
            )
            return
        disconnected = asyncio.Event()
        watcher = asyncio.ensure_future(_watch_disconnect(receive, disconnected))
        try:
            await _reply(send, dialect, request, bytes(body), script, disconnected)
        finally:
            watcher.cancel()
            try:
                await watcher
            except asyncio.CancelledError:
                pass


def create_app() -> ScriptedModelServer:
    """A fresh scripted model server (an ASGI app)."""
    return ScriptedModelServer()


async def _watch_disconnect(receive: Receive, disconnected: asyncio.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            disconnected.set()
            return


_PATHS = {"/v1/responses": "responses", "/v1/chat/completions": "chat", "/v1/messages": "messages"}


# -- delivery --------------------------------------------------------------------------


async def _reply(
    send: Send,
    dialect: str,
    request: dict[str, Any],
    body: bytes,
    script: _Script,
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
            send, script.status, _error_body(dialect, script.status, "scripted error"), script
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
    reply = _Reply(dialect, request, body, script)
    if request.get("stream") is True:
        await _send_stream(send, reply, script, disconnected)
    elif "error_event" in script:
        await _send_json(send, 500, _error_body(dialect, 500, "scripted server error"), script)
    else:
        await _send_raw(send, 200, b"application/json", _codec.encode(reply.json()), script)


def _content_headers(content_type: bytes, script: _Script) -> list[tuple[bytes, bytes]]:
    headers = [(b"content-type", content_type)]
    for coding in (b"gzip", b"deflate", b"br"):
        if coding.decode() in script:
            headers.append((b"content-encoding", coding))
            break
    return headers


async def _send_json(send: Send, status: int, value: Any, script: _Script | None = None) -> None:
    await _send_raw(send, status, b"application/json", _codec.encode(value), script)


async def _send_raw(
    send: Send, status: int, content_type: bytes, data: bytes, script: _Script | None
) -> None:
    script = script or _Script(frozenset(), None, 0)
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


def _compress_whole(data: bytes, script: _Script) -> bytes:
    if "gzip" in script:
        return gzip.compress(data, mtime=0)
    if "deflate" in script:
        return zlib.compress(data)
    if "br" in script:
        return bytes(brotli.compress(data))
    return data


class _StreamCompressor:
    """Compresses a stream chunk by chunk, flushing each so the client can decode it at once."""

    def __init__(self, script: _Script) -> None:
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


def _pieces(chunks: list[bytes], script: _Script) -> list[bytes]:
    if "split" not in script:
        return [c for c in chunks if c]
    data = b"".join(chunks)
    return [data[i : i + _SPLIT] for i in range(0, len(data), _SPLIT)]


async def _send_stream(
    send: Send, reply: _Reply, script: _Script, disconnected: asyncio.Event
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

    def frame(event: str | None, data: Any) -> bytes:
        payload = data if isinstance(data, bytes) else _codec.encode(data)
        head = b"event: " + event.encode() + newline if event else b""
        return head + b"data: " + payload + newline + newline

    keepalive = b": keep-alive" + newline + newline
    if "forever" in script:
        events = reply.events()
        for event, data in events[:3]:
            await send(
                {
                    "type": "http.response.body",
                    "body": compressor.chunk(frame(event, data)),
                    "more_body": True,
                }
            )
        n = 0
        while not disconnected.is_set():
            delta = reply.delta_event(f"forever {n} ", n)
            await send(
                {
                    "type": "http.response.body",
                    "body": compressor.chunk(frame(*delta)),
                    "more_body": True,
                }
            )
            n += 1
            await asyncio.sleep(0)
        return
    events = reply.events()
    if "truncate" in script:
        events = events[: len(events) // 2]
    frames = [frame(event, data) for event, data in events]
    if "keepalive" in script:
        frames = [
            keepalive,
            *[f for pair in zip(frames, [keepalive] * len(frames), strict=True) for f in pair][:-1],
        ]
    if "extra_after_terminal" in script:
        frames.append(b": after the end" + newline + newline + frame("ping", {"type": "ping"}))
    pieces = _pieces(frames, script)
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


# -- content -------------------------------------------------------------------------


def _error_body(dialect: str, status: int, message: str) -> dict[str, Any]:
    kind = {
        400: ("invalid_request_error", "invalid_request_error"),
        401: ("authentication_error", "invalid_api_key"),
        403: ("permission_error", "permission_denied"),
        404: ("not_found_error", "not_found"),
        405: ("invalid_request_error", "method_not_allowed"),
        408: ("timeout_error", "timeout"),
        413: ("request_too_large", "request_too_large"),
        429: ("rate_limit_error", "rate_limit_exceeded"),
        529: ("overloaded_error", "overloaded"),
    }.get(
        status,
        (
            "api_error" if status >= 500 else "invalid_request_error",
            "server_error" if status >= 500 else "error",
        ),
    )
    if dialect == "messages":
        return {"type": "error", "error": {"type": kind[0], "message": message}}
    return {"error": {"message": message, "type": kind[0], "param": None, "code": kind[1]}}


class _Reply:
    """The reply to one request in one dialect: its JSON body and its stream events."""

    def __init__(self, dialect: str, request: dict[str, Any], body: bytes, script: _Script) -> None:
        self.dialect = dialect
        self.model = str(request.get("model") or "demo-model")
        self.key = hashlib.sha256(body).hexdigest()[:24]
        self.script = script
        self.incomplete = "incomplete" in script
        tool = None if "text" in script or self.incomplete else _offered_tool(dialect, request)
        self.tool = tool
        if script.big_kib:
            size = script.big_kib * 1024
            self.text = (_FILLER * (size // len(_FILLER) + 1))[:size]
        else:
            self.text = _TOOL_TEXT if tool else _ANSWER
        if self.incomplete:
            self.text = self.text[: len(self.text) // 2]

    def deltas(self) -> list[str]:
        size = 1024 if self.script.big_kib else 12
        return [self.text[i : i + size] for i in range(0, len(self.text), size)]

    def json(self) -> dict[str, Any]:
        return {
            "responses": self._responses_json,
            "chat": self._chat_json,
            "messages": self._messages_json,
        }[self.dialect]()

    def events(self) -> list[tuple[str | None, Any]]:
        return {
            "responses": self._responses_events,
            "chat": self._chat_events,
            "messages": self._messages_events,
        }[self.dialect]()

    def delta_event(self, text: str, n: int) -> tuple[str | None, Any]:
        """One more text delta, for the never-ending stream."""
        if self.dialect == "responses":
            return "response.output_text.delta", {
                "type": "response.output_text.delta",
                "sequence_number": 100 + n,
                "item_id": self._id("msg"),
                "output_index": 1,
                "content_index": 0,
                "delta": text,
                "logprobs": [],
            }
        if self.dialect == "chat":
            return None, self._chunk({"content": text})
        return "content_block_delta", {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": text},
        }

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{self.key}"

    # Responses -------------------------------------------------------------------

    def _responses_usage(self) -> dict[str, Any]:
        return {
            "input_tokens": 120,
            "input_tokens_details": {"cached_tokens": 64},
            "output_tokens": 40,
            "output_tokens_details": {"reasoning_tokens": 12},
            "total_tokens": 160,
        }

    def _responses_output(self) -> list[dict[str, Any]]:
        output: list[dict[str, Any]] = [
            {
                "id": self._id("rs"),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": _REASONING}],
            },
            {
                "id": self._id("msg"),
                "type": "message",
                "role": "assistant",
                "status": "incomplete" if self.incomplete else "completed",
                "content": [
                    {"type": "output_text", "text": self.text, "annotations": [], "logprobs": []}
                ],
            },
        ]
        if self.tool:
            output.append(self._function_call("completed"))
        return output

    def _function_call(self, status: str, arguments: str = _ARGUMENTS) -> dict[str, Any]:
        return {
            "id": self._id("fc"),
            "type": "function_call",
            "call_id": self._id("call"),
            "name": self.tool,
            "arguments": arguments,
            "status": status,
        }

    def _responses_object(
        self, status: str, output: list[dict[str, Any]], usage: Any
    ) -> dict[str, Any]:
        return {
            "id": self._id("resp"),
            "object": "response",
            "created_at": _CREATED,
            "status": status,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"}
            if status == "incomplete"
            else None,
            "instructions": None,
            "max_output_tokens": None,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "store": False,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage,
            "metadata": {},
        }

    def _responses_json(self) -> dict[str, Any]:
        status = "incomplete" if self.incomplete else "completed"
        return self._responses_object(status, self._responses_output(), self._responses_usage())

    def _responses_events(self) -> list[tuple[str | None, Any]]:
        events: list[dict[str, Any]] = []

        def add(kind: str, **fields: Any) -> None:
            events.append({"type": kind, "sequence_number": len(events), **fields})

        add("response.created", response=self._responses_object("in_progress", [], None))
        add("response.in_progress", response=self._responses_object("in_progress", [], None))
        rs = {"id": self._id("rs"), "type": "reasoning", "summary": []}
        add("response.output_item.added", output_index=0, item=rs)
        part = {"type": "summary_text", "text": ""}
        add(
            "response.reasoning_summary_part.added",
            item_id=rs["id"],
            output_index=0,
            summary_index=0,
            part=part,
        )
        add(
            "response.reasoning_summary_text.delta",
            item_id=rs["id"],
            output_index=0,
            summary_index=0,
            delta=_REASONING,
        )
        add(
            "response.reasoning_summary_text.done",
            item_id=rs["id"],
            output_index=0,
            summary_index=0,
            text=_REASONING,
        )
        done_part = {"type": "summary_text", "text": _REASONING}
        add(
            "response.reasoning_summary_part.done",
            item_id=rs["id"],
            output_index=0,
            summary_index=0,
            part=done_part,
        )
        output = self._responses_output()
        add("response.output_item.done", output_index=0, item=output[0])
        msg_id = self._id("msg")
        add(
            "response.output_item.added",
            output_index=1,
            item={
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            },
        )
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        add(
            "response.content_part.added",
            item_id=msg_id,
            output_index=1,
            content_index=0,
            part=empty,
        )
        for delta in self.deltas():
            add(
                "response.output_text.delta",
                item_id=msg_id,
                output_index=1,
                content_index=0,
                delta=delta,
                logprobs=[],
            )
        if self.incomplete:
            add(
                "response.incomplete",
                response=self._responses_object("incomplete", output, self._responses_usage()),
            )
            return [(e["type"], e) for e in events]
        add(
            "response.output_text.done",
            item_id=msg_id,
            output_index=1,
            content_index=0,
            text=self.text,
            logprobs=[],
        )
        add(
            "response.content_part.done",
            item_id=msg_id,
            output_index=1,
            content_index=0,
            part=output[1]["content"][0],
        )
        add("response.output_item.done", output_index=1, item=output[1])
        if "error_event" in self.script:
            add(
                "error",
                code="server_error",
                message="The server had an error while processing your request.",
                param=None,
            )
            return [(e["type"], e) for e in events]
        if self.tool:
            fc_id = self._id("fc")
            add(
                "response.output_item.added",
                output_index=2,
                item=self._function_call("in_progress", ""),
            )
            for piece in ('{"city":', '"Paris"}'):
                add(
                    "response.function_call_arguments.delta",
                    item_id=fc_id,
                    output_index=2,
                    delta=piece,
                )
            add(
                "response.function_call_arguments.done",
                item_id=fc_id,
                output_index=2,
                arguments=_ARGUMENTS,
            )
            add("response.output_item.done", output_index=2, item=output[2])
        if "failed" in self.script:
            failed = self._responses_object("failed", output, None)
            failed["error"] = {"code": "server_error", "message": "The model failed to finish."}
            add("response.failed", response=failed)
        else:
            add("response.completed", response=self._responses_json())
        return [(e["type"], e) for e in events]

    # Chat Completions ------------------------------------------------------------

    def _chat_usage(self) -> dict[str, Any]:
        return {
            "prompt_tokens": 120,
            "completion_tokens": 40,
            "total_tokens": 160,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 12},
        }

    def _finish_reason(self) -> str:
        return "length" if self.incomplete else "tool_calls" if self.tool else "stop"

    def _chat_json(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.text,
            "reasoning_content": _REASONING,
        }
        if self.tool:
            message["tool_calls"] = [
                {
                    "id": self._id("call"),
                    "type": "function",
                    "function": {"name": self.tool, "arguments": _ARGUMENTS},
                }
            ]
        return {
            "id": f"chatcmpl-{self.key}",
            "object": "chat.completion",
            "created": _CREATED,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": self._finish_reason(),
                    "logprobs": None,
                }
            ],
            "usage": self._chat_usage(),
        }

    def _chunk(
        self, delta: dict[str, Any], finish: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{self.key}",
            "object": "chat.completion.chunk",
            "created": _CREATED,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            **extra,
        }

    def _chat_events(self) -> list[tuple[str | None, Any]]:
        chunks: list[Any] = [self._chunk({"role": "assistant", "content": ""})]
        framed: list[tuple[str | None, Any]]
        chunks.append(self._chunk({"reasoning_content": _REASONING}))
        chunks += [self._chunk({"content": delta}) for delta in self.deltas()]
        if "error_event" in self.script or "failed" in self.script:
            chunks.append(
                {
                    "error": {
                        "message": "The server had an error while processing your request.",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                }
            )
            framed = [(None, chunk) for chunk in chunks]
            return framed
        if self.tool:
            first = {
                "index": 0,
                "id": self._id("call"),
                "type": "function",
                "function": {"name": self.tool, "arguments": ""},
            }
            chunks.append(self._chunk({"tool_calls": [first]}))
            for piece in ('{"city":', '"Paris"}'):
                chunks.append(
                    self._chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                )
        chunks.append(self._chunk({}, self._finish_reason()))
        usage = self._chunk({}, usage=self._chat_usage())
        usage["choices"] = []
        chunks.append(usage)
        framed = [(None, chunk) for chunk in chunks]
        return [*framed, (None, b"[DONE]")]

    # Anthropic Messages ----------------------------------------------------------

    def _messages_usage(self, output_tokens: int = 40) -> dict[str, Any]:
        return {
            "input_tokens": 20,
            "cache_creation_input_tokens": 30,
            "cache_read_input_tokens": 70,
            "output_tokens": output_tokens,
        }

    def _stop_reason(self) -> str:
        return "max_tokens" if self.incomplete else "tool_use" if self.tool else "end_turn"

    def _messages_content(self) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": _REASONING, "signature": f"sig-{self.key}"},
            {"type": "text", "text": self.text},
        ]
        if self.tool:
            content.append(
                {
                    "type": "tool_use",
                    "id": self._id("toolu"),
                    "name": self.tool,
                    "input": {"city": "Paris"},
                }
            )
        return content

    def _messages_json(self) -> dict[str, Any]:
        return {
            "id": self._id("msg"),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self._messages_content(),
            "stop_reason": self._stop_reason(),
            "stop_sequence": None,
            "usage": self._messages_usage(),
        }

    def _messages_events(self) -> list[tuple[str | None, Any]]:
        events: list[dict[str, Any]] = []
        start = self._messages_json() | {
            "content": [],
            "stop_reason": None,
            "usage": self._messages_usage(1),
        }
        events.append({"type": "message_start", "message": start})
        events.append(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
        )
        events.append({"type": "ping"})
        events.append(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": _REASONING},
            }
        )
        events.append(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": f"sig-{self.key}"},
            }
        )
        events.append({"type": "content_block_stop", "index": 0})
        events.append(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            }
        )
        for delta in self.deltas():
            events.append(
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "text_delta", "text": delta},
                }
            )
        if "error_event" in self.script or "failed" in self.script:
            events.append(
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            )
            return [(e["type"], e) for e in events]
        events.append({"type": "content_block_stop", "index": 1})
        if self.tool:
            block = {"type": "tool_use", "id": self._id("toolu"), "name": self.tool, "input": {}}
            events.append({"type": "content_block_start", "index": 2, "content_block": block})
            for piece in ('{"city":', '"Paris"}'):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": 2,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                )
            events.append({"type": "content_block_stop", "index": 2})
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": self._stop_reason(), "stop_sequence": None},
                "usage": {"output_tokens": 40},
            }
        )
        events.append({"type": "message_stop"})
        return [(e["type"], e) for e in events]


def _offered_tool(dialect: str, request: dict[str, Any]) -> str | None:
    """The first tool the request offers, unless the conversation already ends with a tool result."""
    tools = request.get("tools")
    if not isinstance(tools, list) or not tools or not isinstance(tools[0], dict):
        return None
    tool = tools[0]
    function = tool.get("function")
    name = (
        function.get("name")
        if dialect == "chat" and isinstance(function, dict)
        else tool.get("name")
    )
    if not isinstance(name, str):
        return None
    if dialect == "chat":
        messages = request.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        if isinstance(last, dict) and last.get("role") == "tool":
            return None
    elif dialect == "responses":
        items = request.get("input")
        last = items[-1] if isinstance(items, list) and items else None
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            return None
    else:
        messages = request.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        content = last.get("content") if isinstance(last, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return None
    return name
