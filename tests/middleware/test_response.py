"""The response's capture buffer on its own (`middleware/_response.py`): no ASGI, no server.

`ResponseCapture` is fed body bytes and asked what it kept, as the middleware's routing
(`_call`) does; the middleware tests drive the same code through the ASGI shell.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

from model_call_capture.contracts import ModelRef, StreamRawPolicy
from model_call_capture.middleware._budget import MemoryBudget
from model_call_capture.middleware._line import CallFacts
from model_call_capture.middleware._response import ResponseCapture

SSE = [(b"content-type", b"text/event-stream")]


def _capture(
    max_bytes: int = 1 << 20, keep_raw: StreamRawPolicy = "on_failure"
) -> tuple[ResponseCapture, list[Exception]]:
    reports: list[Exception] = []
    capture = ResponseCapture(
        "chat",
        max_bytes=max_bytes,
        keep_raw=keep_raw,
        budget=MemoryBudget(1 << 30),
        report=reports.append,
    )
    return capture, reports


def _facts(capture: ResponseCapture) -> CallFacts:
    facts = CallFacts(
        model_call_id="m",
        dialect="chat",
        model_ref=ModelRef(type="responses_api_models", name="s"),
        started_at=0.0,
        completed_at=0.0,
        latency_ms=0.0,
    )
    capture.fill(facts)
    return facts


def _chunk(**delta: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": "stop" if not delta else None}
    return b"data: " + json.dumps({"id": "c1", "choices": [choice]}).encode() + b"\n\n"


def _body(data: bytes, more: bool = True) -> dict[str, Any]:
    return {"type": "http.response.body", "body": data, "more_body": more}


def test_a_stream_is_reassembled_and_its_first_content_timed_by_its_chunk() -> None:
    capture, reports = _capture()
    capture.start(SSE, stream=True, sized=False)
    capture.feed(b": keep-alive\n\n", 1.0)
    assert capture.first_content_at is None  # a comment is not content
    capture.feed(_chunk(role="assistant", content="Hel"), 2.0)
    capture.feed(_chunk(content="lo"), 3.0)
    assert not capture.terminal_seen()
    capture.feed(_chunk(), 4.0)
    capture.feed(b"data: [DONE]\n\n", 5.0)
    assert capture.terminal_seen()
    assert capture.first_content_at == 2.0
    facts = _facts(capture)
    assert facts.stream is True
    assert facts.stream_result is not None
    assert facts.stream_result.terminal == "complete"
    response = facts.stream_result.response
    assert response is not None
    assert response["choices"][0]["message"]["content"] == "Hello"
    assert response["choices"][0]["finish_reason"] == "stop"
    assert reports == []


def test_chunks_that_cannot_end_the_stream_wait_in_a_batch_until_one_that_may() -> None:
    capture, _ = _capture()
    capture.start(SSE, stream=True, sized=False)
    first = _chunk(role="assistant", content="a")
    assert not capture.batch(_body(first))  # before the first content: never batched
    capture.feed(first, None)
    assert capture.batch(_body(_chunk(content="b")))
    assert capture.batch(_body(_chunk(content="c")))
    assert capture.captured == len(first)  # kept, not yet reassembled
    done = b"data: [DONE]\n\n"
    assert not capture.batch(_body(done))  # may end the stream
    assert not capture.batch(_body(_chunk(content="d"), more=False))  # the last message
    capture.take(done)
    assert capture.terminal_seen()
    assert capture.pending == []
    result = _facts(capture).stream_result
    assert result is not None and result.response is not None
    assert result.response["choices"][0]["message"]["content"] == "abc"


def test_a_sized_stream_is_never_batched() -> None:
    capture, _ = _capture()
    capture.start(SSE, stream=True, sized=True)
    capture.feed(_chunk(content="a"), None)
    assert not capture.batch(_body(_chunk(content="b")))


def test_an_encoded_body_is_decoded_and_cut_at_the_cap() -> None:
    body = json.dumps({"id": "r", "text": "x" * 100}).encode()
    capture, _ = _capture(max_bytes=20)
    capture.start([(b"content-encoding", b"gzip")], stream=False, sized=True)
    compressed = gzip.compress(body)
    capture.feed(compressed[:10], None)
    capture.feed(compressed[10:], None)
    facts = _facts(capture)
    assert bytes(facts.body) == body[:20]
    assert facts.response_cut is True
    assert facts.stream is False and facts.stream_result is None


def test_an_unsupported_encoding_keeps_nothing_and_says_why() -> None:
    capture, reports = _capture()
    capture.start([(b"content-encoding", b"zstd"), *SSE], stream=True, sized=False)
    assert not capture.searchable
    capture.feed(_chunk(content="a"), 1.0)
    assert capture.first_content_at == 1.0  # the first byte, when nothing is reassembled
    facts = _facts(capture)
    assert facts.capture_failed is True
    assert facts.stream_result is None
    assert [(g.code, g.detail) for g in capture.gaps] == [
        ("response_undecodable", "content-encoding zstd is not supported")
    ]
    assert reports == []


def test_a_stream_keeps_its_raw_text_as_the_policy_says() -> None:
    text = _chunk(content="a") + b"data: [DONE]\n\n"
    cases: list[tuple[StreamRawPolicy, bytes | None]] = [("never", None), ("always", text)]
    for policy, kept in cases:
        capture, _ = _capture(keep_raw=policy)
        capture.start(SSE, stream=True, sized=False)
        capture.feed(text, None)
        facts = _facts(capture)
        assert (None if facts.raw is None else bytes(facts.raw([]) or b"")) == kept
        capture.release()
