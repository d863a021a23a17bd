"""The in-process harness of the middleware tests, and the requests and answers they share.

`drive` calls an ASGI app the way a server would (one request, `http.disconnect` once the
response is complete) and records every message the app sends, as sent, with the number
of capture lines on disk at that moment: that is how the tests see that the end of a
response waits for its line, without a server, sockets or sleeps. `call` is its
synchronous form. `tests/middleware/test_end_to_end.py` keeps what needs a real uvicorn
server and the real SDK clients.
"""

from __future__ import annotations

import asyncio
import errno
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from model_call_capture.contracts import CaptureConfig, CaptureLine
from model_call_capture.demo.model_server import create_app
from model_call_capture.middleware import CaptureMiddleware
from model_call_capture.store import CaptureStore

SERVER_NAME = "policy_model"
MODEL_REF = {"type": "responses_api_models", "name": SERVER_NAME}
PATHS = {
    "responses": "/v1/responses",
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
    "completions": "/v1/completions",
}
DIALECTS = list(PATHS)
TERMINALS = {
    "responses": b"event: response.completed",
    "chat": b"data: [DONE]",
    "messages": b"event: message_stop",
    "completions": b"data: [DONE]",
}
CHAT_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ANSWER = "It is 18 \u00b0C with light rain in Paris: take a raincoat and an umbrella."
REASONING = "The user asks about the weather; the get_weather tool can tell me."

Message = dict[str, Any]


# -- requests ----------------------------------------------------------------------------


def config_for(directory: Path, **overrides: Any) -> CaptureConfig:
    """Capture on, into `directory`, with `overrides`."""
    return CaptureConfig(
        observability_enabled=True, model_call_capture_dir=str(directory), **overrides
    )


def capturing(directory: Path, *, app: Any = None, store: Any = None, **overrides: Any) -> Any:
    """`app` (by default the scripted model server) behind the middleware, capturing to `directory`."""
    return CaptureMiddleware(
        app or create_app(),
        config=config_for(directory, **overrides),
        model_server_name=SERVER_NAME,
        store=store,
    )


def new_rollout() -> str:
    """A fresh valid rollout id."""
    return f"r-{uuid.uuid4().hex[:12]}"


def chat_body(model: str = "demo-gpt", *, stream: bool = False, **extra: Any) -> dict[str, Any]:
    """A Chat Completions request; `model` names the scripted scenario."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }
    if stream:
        body["stream"] = True
    return body | extra


def body_for(dialect: str, model: str, *, stream: bool) -> dict[str, Any]:
    """A request of `dialect` that offers a tool (where the dialect has tools); `model` names
    the scripted scenario."""
    if dialect == "chat":
        return chat_body(model, stream=stream, tools=[CHAT_TOOL])
    if dialect == "completions":  # no tools in this dialect
        return {"model": model, "prompt": "Weather in Paris?", "max_tokens": 64, "stream": stream}
    if dialect == "responses":
        tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
        return {"model": model, "input": "Weather in Paris?", "tools": [tool], "stream": stream}
    tool = {"name": "get_weather", "input_schema": {"type": "object"}}
    return {
        "model": model,
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [tool],
        "stream": stream,
    }


# -- capture files -------------------------------------------------------------------------


def read_lines(directory: Path, rollout_id: str) -> list[dict[str, Any]]:
    """The rollout's capture lines, read with the stdlib `json` module as an independent reader."""
    path = directory / f"{rollout_id}.capture.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def only_line(directory: Path, rollout_id: str) -> dict[str, Any]:
    """The rollout's one capture line."""
    lines = read_lines(directory, rollout_id)
    assert len(lines) == 1, lines
    return lines[0]


def count_lines(path: Path) -> int:
    """Complete lines in the capture file at `path` (0 when there is none)."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


class FullDiskStore(CaptureStore):
    """Injected fault: append fails with ENOSPC as os.write would on a full disk."""

    def append(self, rollout_id: str, line: CaptureLine | bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device (injected)")


# -- the in-process harness ----------------------------------------------------------------


@dataclass
class Exchange:
    """One request driven through an ASGI app: every message the app sent, as sent."""

    messages: list[Message] = field(default_factory=list)
    """Copies of the messages, in the order they reached the server."""
    lines_when_sent: list[int] = field(default_factory=list)
    """Capture lines on disk (of the watched file) when each message reached the server."""
    error: BaseException | None = None
    """What the app raised (the server would answer 500 or drop the connection)."""

    @property
    def status(self) -> int | None:
        """The status of `http.response.start`, None if the response never started."""
        starts = [m for m in self.messages if m["type"] == "http.response.start"]
        return starts[0]["status"] if starts else None

    @property
    def headers(self) -> dict[str, str]:
        """The response headers, lowercased names."""
        starts = [m for m in self.messages if m["type"] == "http.response.start"]
        raw = starts[0].get("headers", []) if starts else []
        return {bytes(k).decode().lower(): bytes(v).decode("latin-1") for k, v in raw}

    @property
    def body_messages(self) -> list[tuple[Message, int]]:
        """(body message, lines on disk when it was sent), in order."""
        return [
            (m, n)
            for m, n in zip(self.messages, self.lines_when_sent, strict=True)
            if m["type"] == "http.response.body"
        ]

    @property
    def body(self) -> bytes:
        """The response body as the client got it (still content-encoded)."""
        return b"".join(bytes(m.get("body", b"")) for m, _ in self.body_messages)

    @property
    def text(self) -> str:
        """The body as UTF-8 text."""
        return self.body.decode("utf-8")

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


async def drive(
    app: Any,
    path: str,
    body: bytes | list[bytes] = b"",
    *,
    method: str = "POST",
    headers: list[tuple[bytes, bytes]] | None = None,
    watch: Path | None = None,
    on_send: Callable[[Message], None] | None = None,
) -> Exchange:
    """Call `app` with one request as a server would, and record what it sends.

    `path` is the raw request target (percent-encoded); `scope["path"]` is its decoded
    form, as uvicorn gives it. `body` is sent in one message, or a list of them. After the
    request body, `receive` waits for the response to complete, then says
    `http.disconnect`. `watch` is the capture file whose lines are counted at every
    message; `on_send` is called with each message before it is recorded.
    """
    pieces = body if isinstance(body, list) else [body]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": unquote(path),
        "raw_path": path.encode("ascii"),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            *(headers or []),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    exchange = Exchange()
    complete = asyncio.Event()

    async def receive() -> Message:
        if pieces:
            chunk = pieces.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pieces)}
        await complete.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if on_send is not None:
            on_send(message)
        exchange.messages.append(dict(message))
        exchange.lines_when_sent.append(count_lines(watch) if watch is not None else 0)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            complete.set()

    try:
        await asyncio.wait_for(app(scope, receive, send), 30)
    except Exception as exc:
        exchange.error = exc
    return exchange


def call(app: Any, path: str, body: bytes | list[bytes] = b"", **options: Any) -> Exchange:
    """`drive` on a fresh event loop."""
    return asyncio.run(drive(app, path, body, **options))


def post(
    app: Any, rollout: str | None, body: Any, dialect: str = "chat", **options: Any
) -> Exchange:
    """POST `body` (bytes, or a value sent as JSON) to `dialect`'s path, prefixed for `rollout`."""
    prefix = f"/ng-rollout/{rollout}" if rollout is not None else ""
    content = body if isinstance(body, bytes | list) else json.dumps(body).encode()
    return call(app, f"{prefix}{PATHS[dialect]}", content, **options)


def capture_file(directory: Path, rollout: str) -> Path:
    """The capture file of `rollout` in `directory`."""
    return directory / f"{rollout}.capture.jsonl"


def sent_before_the_line(reply: Exchange) -> list[bytes]:
    """Body chunks that went out before the line was on disk."""
    return [bytes(m.get("body", b"")) for m, lines in reply.body_messages if lines == 0]


def sent_after_the_line(reply: Exchange) -> list[bytes]:
    """Body chunks that went out once the line was on disk."""
    return [bytes(m.get("body", b"")) for m, lines in reply.body_messages if lines == 1]


def sse_app(chunks: list[bytes], pause_after_first: float = 0.0) -> Any:
    """A raw ASGI app that streams `chunks` as they are (optionally pausing after the
    first), then closes the response."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        start = {"type": "http.response.start", "status": 200}
        headers = [(b"content-type", b"text/event-stream")]
        await send({**start, "headers": headers})
        for i, chunk in enumerate(chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if i == 0 and pause_after_first:
                await asyncio.sleep(pause_after_first)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app
