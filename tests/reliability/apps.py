"""Tiny raw ASGI model apps and a capturing server for the reliability suite.

The apps are written inline in the starlette style: they send fixed bytes, so a test can
compare what the client received with exactly what the app sent.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from model_call_capture.contracts import CaptureConfig, CaptureLine
from model_call_capture.middleware import CaptureMiddleware
from model_call_capture.store import CaptureStore
from servers import RunningServer, serve

SERVER_NAME = "policy_model"
CHAT_REPLY = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    },
    separators=(",", ":"),
).encode()

ASGIApp = Callable[..., Any]


def reply_app(
    body: bytes = CHAT_REPLY,
    *,
    status: int = 200,
    headers: Sequence[tuple[bytes, bytes]] = ((b"content-type", b"application/json"),),
    chunks: int = 1,
) -> ASGIApp:
    """An app that reads the whole request, then sends `body` (in `chunks` pieces)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": status, "headers": list(headers)})
        step = max(1, -(-len(body) // chunks))
        pieces = [body[i : i + step] for i in range(0, len(body), step)] or [b""]
        for n, piece in enumerate(pieces):
            await send(
                {"type": "http.response.body", "body": piece, "more_body": n < len(pieces) - 1}
            )

    return app


def endless_sse_app(event: bytes, *, pause: float = 0.0) -> ASGIApp:
    """An app whose SSE stream never ends until the client goes away.

    Like Starlette's StreamingResponse it listens for `http.disconnect` while it streams
    (uvicorn drops sends after a disconnect silently, so that is how an app learns of it).
    """

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body", False):
            pass
        gone = asyncio.Event()

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        listener = asyncio.ensure_future(listen())
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        try:
            while not gone.is_set():
                await send({"type": "http.response.body", "body": event, "more_body": True})
                await asyncio.sleep(pause)
        finally:
            listener.cancel()

    return app


class AckingStore(CaptureStore):
    """The real store, remembering the model_call_id of every append that returned."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.acked: list[tuple[str, str | None]] = []

    def append(self, rollout_id: str, line: Any) -> None:
        super().append(rollout_id, line)
        self.acked.append((rollout_id, getattr(line, "model_call_id", None)))


def config_for(directory: Path, **overrides: Any) -> CaptureConfig:
    """Capture on, into `directory`."""
    return CaptureConfig(
        observability_enabled=True, model_call_capture_dir=str(directory), **overrides
    )


@contextmanager
def capturing(
    app: ASGIApp,
    directory: Path,
    *,
    store: CaptureStore | None = None,
    redact: Callable[[CaptureLine], CaptureLine] | None = None,
    **overrides: Any,
) -> Iterator[RunningServer]:
    """`app` behind the capture middleware on a real uvicorn server."""
    wrapped = CaptureMiddleware(
        app,
        config=config_for(directory, **overrides),
        model_server_name=SERVER_NAME,
        store=store,
        redact=redact,
    )
    with serve(wrapped) as server:
        yield server


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    """Every non-blank line of a capture file, decoded with the stdlib (raises on damage)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll `predicate` until it holds or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@contextmanager
def mounted(kind: str, target: Path, *options: str) -> Iterator[str | None]:
    """Mount a filesystem for the block; yields None and mounts nothing when not allowed.

    `kind` is `tmpfs` (`options` like `size=64k`) or `bind-ro` (a read-only bind mount of
    `target` on itself). The reason a mount failed is yielded as a string instead.
    """
    target.mkdir(parents=True, exist_ok=True)
    if kind == "tmpfs":
        commands = [
            ["mount", "-t", "tmpfs", "-o", ",".join(options) or "size=64k", "tmpfs", str(target)]
        ]
    else:
        commands = [
            ["mount", "--bind", str(target), str(target)],
            ["mount", "-o", "remount,bind,ro", str(target)],
        ]
    done = 0
    try:
        for command in commands:
            try:
                result = subprocess.run(command, capture_output=True, text=True, timeout=60)
            except FileNotFoundError:
                yield "no mount command"
                return
            if result.returncode != 0:
                yield f"{' '.join(command[:3])} failed: {result.stderr.strip() or result.returncode}"
                return
            done += 1
        yield None
    finally:
        if done:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)


def stream_app(chunks: list[bytes]) -> Any:
    """An SSE app that sends `chunks` one message each, yielding between them, then ends."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body", False):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(0)  # a model server waits for its next tokens
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app
