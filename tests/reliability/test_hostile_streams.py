"""Hostile model streams through the real middleware on a real uvicorn server.

What a model (or an upstream pretending to be one) may put in a stream that the decoders
must take without raising: the client gets every byte unchanged, and the capture line
holds the reassembled response. Lines are read with the stdlib `json` module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from .apps import capturing, read_json_lines, stream_app, wait_for

CHAT = "/v1/chat/completions"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


def test_a_retry_field_of_thousands_of_digits_keeps_the_stream_captured(tmp_path: Path) -> None:
    # `retry:` is plain SSE; a value past Python's 4,300-digit int limit used to raise out
    # of the SSE decoder, which made the capture of the whole stream fail (no response in
    # the line, the rollout marked incomplete).
    chunks = [
        _chunk({"role": "assistant", "content": "Hel"}),
        b"retry: " + b"7" * 5000 + b"\n" + _chunk({"content": "lo"}),
        _chunk({}, finish="stop"),
        b"data: [DONE]\n\n",
    ]
    with capturing(stream_app(chunks), tmp_path) as server:
        reply = httpx.post(f"{server.url}/ng-rollout/r{CHAT}", content=b"{}", timeout=30)
        assert wait_for(lambda: (tmp_path / "r.capture.jsonl").exists())
    assert reply.content == b"".join(chunks)
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert line["error_category"] is None
    assert line["response"]["choices"][0]["message"]["content"] == "Hello"
    assert line["response"]["choices"][0]["finish_reason"] == "stop"
    assert not (tmp_path / "r.capture.incomplete").exists()
