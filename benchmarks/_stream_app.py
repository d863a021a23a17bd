"""A minimal streaming chat model for the line-rate benchmark (issue 19): 200 chunks a call.

The app reads the request body, then sends a chat completion stream the way an inference
server flushes it: one SSE event per body message, a role chunk, text deltas of a few
characters, a finish chunk, a usage chunk and `[DONE]`. The chunks are built once, so the
app itself costs next to nothing and what capture adds shows in full.
"""

from __future__ import annotations

from model_call_capture import _codec
from model_call_capture._asgi import Receive, Scope, Send

__all__ = ["CHUNKS", "stream_app", "stream_chunks"]

CHUNKS = 200
"""Body messages of one streamed call (the issue's 200-chunk chat streams)."""

_WORDS = ("The", " weather", " in", " Paris", " is", " mild", ",", " with", " light", " rain")


def stream_chunks(n: int = CHUNKS) -> list[bytes]:
    """The `n` SSE chunks of one call (`n` >= 5): role, deltas, finish, usage, `[DONE]`."""

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        event = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "bench-model",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return b"data: " + _codec.encode(event) + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": _WORDS[i % len(_WORDS)]}) for i in range(n - 4)]
    out.append(chunk({}, "stop"))
    usage = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "bench-model",
        "choices": [],
        "usage": {"prompt_tokens": 12, "completion_tokens": n - 4, "total_tokens": n + 8},
    }
    out.append(b"data: " + _codec.encode(usage) + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return out


_BODIES = stream_chunks()
_START = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
}


async def stream_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer any HTTP request with the 200-chunk stream (after reading its body)."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False) and message["type"] == "http.request"
    await send(_START)
    for body in _BODIES:
        await send({"type": "http.response.body", "body": body, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
