"""One captured call in process: the client gets every message unchanged, and the end of a
response reaches it only after the call's line is on disk.

The harness records, for every message the app sends, how many lines the capture file
held at that moment: a message "held until the line is durable" is one sent when the line
was already there, and one "sent at once" went out before it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from model_call_capture.demo.model_server import create_app
from model_call_capture.middleware import _call, _response
from model_call_capture.reassembly import StreamReassembler

from .conftest import (
    ANSWER,
    DIALECTS,
    PATHS,
    TERMINALS,
    Exchange,
    Message,
    body_for,
    call,
    capture_file,
    capturing,
    chat_body,
    new_rollout,
    only_line,
    post,
    read_lines,
    sent_after_the_line,
    sent_before_the_line,
    sse_app,
)

# -- bytes are never changed ----------------------------------------------------------

BYTE_CASES = [
    "demo-gpt",
    "text",
    "incomplete",
    "failed",
    "error_event",
    "truncate",
    "raise_before",
    "raise_mid",
    "raise_after_terminal",
    "raise_after_response",
    "raise_timeout",
    "raise_connection",
    "raise_status",
    "status_401",
    "status_429",
    "status_500",
    "status_529",
    "empty",
    "no_content",
    "text_body",
    "json_array",
    "gzip",
    "deflate",
    "br",
    "gzip+split",
    "br+raise_mid",
    "keepalive",
    "crlf",
    "split",
    "uppercase_ct",
    "extra_after_terminal",
    "big_40",
]


def sent(reply: Exchange) -> tuple[list[Message], str]:
    """Every message the client got, and what the server saw raised."""
    return reply.messages, repr(reply.error)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_client_messages_are_identical_with_and_without_capture(
    dialect: str, tmp_path: Path
) -> None:
    plain, captured = create_app(), capturing(tmp_path)
    rollout = new_rollout()
    bodies = [
        json.dumps(body_for(dialect, case, stream=stream)).encode()
        for case in BYTE_CASES
        for stream in (False, True)
    ]
    bodies += [b"{not json", b"[]", b'"hello"', b"", b"\xff\xfe"]
    for body in bodies:
        direct = call(plain, PATHS[dialect], body)
        through = call(captured, f"/ng-rollout/{rollout}{PATHS[dialect]}", body)
        assert sent(through) == sent(direct), body
    lines = read_lines(tmp_path, rollout)
    assert len(lines) == len(bodies)
    assert len({line["model_call_id"] for line in lines}) == len(bodies)


# -- the end of a response waits for its line -----------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_the_end_of_a_response_reaches_the_client_only_after_its_line_is_on_disk(
    dialect: str, stream: bool, tmp_path: Path
) -> None:
    rollout = new_rollout()
    reply = post(
        capturing(tmp_path),
        rollout,
        body_for(dialect, "demo-gpt", stream=stream),
        dialect,
        watch=capture_file(tmp_path, rollout),
    )
    assert reply.lines_when_sent[0] == 0  # http.response.start
    before, after = sent_before_the_line(reply), sent_after_the_line(reply)
    assert len(before) + len(after) == len(reply.body_messages)  # the line is written once
    if stream:
        assert before and TERMINALS[dialect] not in b"".join(before)  # everything else at once
        assert TERMINALS[dialect] in after[0]
    else:
        assert not b"".join(before)
        assert json.loads(b"".join(after))
    assert only_line(tmp_path, rollout)["error_category"] is None


def test_the_first_chunk_of_a_stream_reaches_the_client_before_capture_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real reassembler, wrapped (the only stand-in here) to log when it is fed.
    events: list[str] = []

    class WatchedReassembler(StreamReassembler):
        def feed(self, data: bytes | bytearray | memoryview) -> None:
            events.append("feed")
            super().feed(data)

    def on_send(message: Message) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            events.append("send")

    monkeypatch.setattr(_response, "StreamReassembler", WatchedReassembler)
    rollout = new_rollout()
    reply = post(
        capturing(tmp_path),
        rollout,
        chat_body(stream=True),
        watch=capture_file(tmp_path, rollout),
        on_send=on_send,
    )
    assert events[:2] == ["send", "feed"]
    assert b'"role":"assistant"' in reply.body_messages[0][0]["body"]
    assert sent_after_the_line(reply) == [b"data: [DONE]\n\n", b""]
    assert only_line(tmp_path, rollout)["response"]["choices"][0]["message"]["content"] == ANSWER


def _chat_chunk(text: str) -> bytes:
    delta = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(delta).encode() + b"\n\n"


def test_after_the_first_token_chunks_go_out_at_once_and_are_reassembled_in_a_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real reassembler, wrapped (the only stand-in here) to log when it is fed.
    events: list[str] = []

    class WatchedReassembler(StreamReassembler):
        def feed(self, data: bytes | bytearray | memoryview) -> None:
            events.append("feed")
            super().feed(data)

    def on_send(message: Message) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            events.append("send")

    monkeypatch.setattr(_response, "StreamReassembler", WatchedReassembler)
    chunks = [_chat_chunk(""), _chat_chunk("Rain"), _chat_chunk("."), b"data: [DONE]\n\n"]
    rollout = new_rollout()
    reply = post(
        capturing(tmp_path, app=sse_app(chunks)),
        rollout,
        b"{}",
        watch=capture_file(tmp_path, rollout),
        on_send=on_send,
    )
    # The first chunk goes out before capture sees it (the time to first byte); the later
    # ones without a terminal marker go out at once and are only collected; the one that
    # may complete the terminal event is fed with them in one batch, and held.
    assert events == ["send", "feed", "send", "send", "feed", "send"]
    assert sent_before_the_line(reply) == chunks[:3]
    assert sent_after_the_line(reply) == [chunks[3], b""]
    assert only_line(tmp_path, rollout)["response"]["choices"][0]["message"]["content"] == "Rain."


# Streams whose terminal event is completed by a chunk that carries no marker of its own,
# or only a marker that must be looked for with care. The last chunk must be held.
HELD_LAST_CHUNK = {
    "chat [DONE] split across chunks": (
        "chat",
        [
            b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n',
            b"data: [DO",
            b"NE]\n\n",
        ],
    ),
    "chat error event completed by a bare blank line": (
        "chat",
        [
            b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n',
            b'event: error\ndata: {"message":"boom"}\n',
            b"\n",
        ],
    ),
    "messages message_stop spelled with a JSON escape": (
        "messages",
        [
            b'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","content":[],"model":"x"}}\n\n',
            b'event: stop\ndata: {"type":"message\\u005fstop"}\n\n',
        ],
    ),
    "responses error event named in capitals": (
        "responses",
        [
            b'event: response.created\ndata: {"type":"response.created","response":{"id":"r1","object":"response","output":[]}}\n\n',
            b'event: ERROR\ndata: {"type":"ERR","message":"boom"}\n\n',
        ],
    ),
}


# Each case's error category is known: a stream that ended by its terminal event is a
# success, one that ended by an error event is the upstream's error.
HELD_CATEGORY = {
    "chat [DONE] split across chunks": None,
    "chat error event completed by a bare blank line": "upstream_error",
    "messages message_stop spelled with a JSON escape": None,
    "responses error event named in capitals": "upstream_error",
}


@pytest.mark.parametrize("case", list(HELD_LAST_CHUNK))
def test_a_chunk_that_completes_the_terminal_event_without_a_marker_of_its_own_is_held(
    case: str, tmp_path: Path
) -> None:
    dialect, chunks = HELD_LAST_CHUNK[case]
    rollout = new_rollout()
    reply = post(
        capturing(tmp_path, app=sse_app(chunks)),
        rollout,
        b"{}",
        dialect,
        watch=capture_file(tmp_path, rollout),
    )
    assert sent_before_the_line(reply) == chunks[:-1]  # everything before it went out at once
    assert sent_after_the_line(reply) == [chunks[-1], b""]
    assert only_line(tmp_path, rollout)["error_category"] == HELD_CATEGORY[case]


def test_a_failure_inside_the_reassembler_mid_stream_loses_the_capture_not_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real reassembler, made to raise when fed the fourth chunk (a bug in the SSE
    # decoder or a stream state): the stand-in is the only way to make the library's own
    # code fail.
    class FailingReassembler(StreamReassembler):
        def feed(self, data: bytes | bytearray | memoryview) -> None:
            if b" degrees" in bytes(data):
                raise RuntimeError("a bug")
            super().feed(data)

    monkeypatch.setattr(_response, "StreamReassembler", FailingReassembler)
    chunks = [_chat_chunk(word) for word in ("It", " is", " 18", " degrees", ".")]
    chunks.append(b"data: [DONE]\n\n")
    rollout = new_rollout()
    reply = post(
        capturing(tmp_path, app=sse_app(chunks)),
        rollout,
        b"{}",
        watch=capture_file(tmp_path, rollout),
    )
    assert [bytes(m["body"]) for m, _ in reply.body_messages] == [*chunks, b""]
    assert reply.error is None
    line = only_line(tmp_path, rollout)
    assert line["error_category"] == "capture_parse_error"
    assert line["response"] is None
    # Kept as the raw text of a failed capture: every chunk the reassembler was given, the
    # batch it failed on included (the chunks after the first were fed in one batch, when
    # `[DONE]` could end the stream).
    assert line["response_raw"] == b"".join(chunks).decode()


def test_stream_chunks_past_the_memory_budget_stop_the_capture_not_the_stream(
    tmp_path: Path,
) -> None:
    # 400 chunks of about 1 KB against a budget of 512 KiB: the usual chunk's short path
    # must hand over to the budget each time the kept bytes reach what was granted.
    chunks = [_chat_chunk("x" * 1000) for _ in range(400)] + [b"data: [DONE]\n\n"]
    rollout = new_rollout()
    reply = post(
        capturing(
            tmp_path,
            app=sse_app(chunks),
            capture_stream_raw="never",
            capture_memory_budget_bytes=512 * 1024,
        ),
        rollout,
        b"{}",
    )
    assert [bytes(m["body"]) for m, _ in reply.body_messages] == [*chunks, b""]
    line = only_line(tmp_path, rollout)
    assert line["capture_cut"] is True
    assert [gap["code"] for gap in line["gaps"]] == ["memory_budget"]
    kept = line["response"]["choices"][0]["message"]["content"]
    # The request takes its block of the budget first (128 KiB); the stream gets the rest.
    assert 300_000 < len(kept) < 400_000 and set(kept) == {"x"}


def test_json_final_message_waits_when_the_body_is_sent_in_pieces(tmp_path: Path) -> None:
    rollout = new_rollout()
    reply = post(
        capturing(tmp_path), rollout, chat_body("split"), watch=capture_file(tmp_path, rollout)
    )
    assert reply.json()["object"] == "chat.completion"
    before, after = sent_before_the_line(reply), sent_after_the_line(reply)
    assert len(before) > 1  # the pieces went out at once...
    assert after[0] and not b"".join(after[1:])  # ...but the one that completes the body waited


# -- an app that raises ----------------------------------------------------------------


def test_app_raising_during_a_stream_keeps_the_partial_reconstruction(tmp_path: Path) -> None:
    rollout = new_rollout()
    reply = post(capturing(tmp_path), rollout, chat_body("raise_mid", stream=True))
    assert reply.error is not None
    line = only_line(tmp_path, rollout)
    assert (line["status_code"], line["error_category"], line["stream"]) == (200, "exception", True)
    content = line["response"]["choices"][0]["message"]["content"]
    assert content and ANSWER.startswith(content) and content != ANSWER
    assert line["response_raw"].startswith("data: {")
    assert "[DONE]" not in line["response_raw"]


def test_app_raising_after_the_terminal_event_keeps_the_complete_response(
    tmp_path: Path,
) -> None:
    rollout = new_rollout()
    reply = post(
        capturing(tmp_path),
        rollout,
        body_for("messages", "raise_after_terminal", stream=True),
        "messages",
        watch=capture_file(tmp_path, rollout),
    )
    assert reply.error is not None
    assert TERMINALS["messages"] in b"".join(sent_after_the_line(reply))  # released after all
    line = only_line(tmp_path, rollout)
    assert (line["status_code"], line["error_category"]) == (200, "exception")
    assert line["response"]["stop_reason"] == "tool_use"
    assert line["response"]["content"][2] == {
        "type": "tool_use",
        "id": line["response"]["content"][2]["id"],
        "name": "get_weather",
        "input": {"city": "Paris"},
    }


def test_app_raising_after_the_response_is_complete(tmp_path: Path) -> None:
    """The client got the whole response and the line was written first: it records a success."""
    rollout = new_rollout()
    reply = post(capturing(tmp_path), rollout, chat_body("raise_after_response", stream=True))
    assert reply.error is not None
    assert reply.status == 200 and reply.text.endswith("data: [DONE]\n\n")
    line = only_line(tmp_path, rollout)
    assert (line["status_code"], line["error_category"]) == (200, None)
    assert line["response"]["choices"][0]["message"]["content"] == ANSWER


# -- timing and bounds -------------------------------------------------------------------


def test_keepalive_comments_do_not_count_as_the_first_token(tmp_path: Path) -> None:
    rollout = new_rollout()
    post(capturing(tmp_path), rollout, chat_body("keepalive+slow", stream=True))
    line = only_line(tmp_path, rollout)
    # The comment goes out at once, the first event one scripted delay later.
    assert line["latency_ttft_ms"] >= 15


def test_the_first_token_is_timed_as_it_passes_not_after_a_slow_client_took_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A client that takes an hour to accept the first chunk: the middleware's clock (and
    # only its clock, so asyncio's timeouts keep real time) jumps by an hour inside that
    # send. The first token passed before the jump; the call ended after it.
    hour = 3600.0
    jump = [0.0]

    def monotonic() -> float:
        return time.monotonic() + jump[0]

    monkeypatch.setattr(_call, "time", SimpleNamespace(monotonic=monotonic, time=time.time))

    def slow_client(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body") and not jump[0]:
            jump[0] = hour

    chunks = [
        b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    rollout = new_rollout()
    post(capturing(tmp_path, app=sse_app(chunks)), rollout, b"{}", on_send=slow_client)
    line = only_line(tmp_path, rollout)
    assert line["latency_ms"] >= hour * 1000
    assert line["latency_ttft_ms"] < hour * 1000


def test_the_byte_cap_cuts_the_capture_not_the_response(tmp_path: Path) -> None:
    rollout = new_rollout()
    cap = 4096
    app = capturing(tmp_path, capture_max_bytes=cap)
    stream_reply = post(app, rollout, chat_body("big_64", stream=True))
    json_reply = post(app, rollout, chat_body("big_64"))
    request = json.dumps(chat_body(padding="x" * 10_000)).encode()
    big_request = post(app, rollout, [request[i : i + 1000] for i in range(0, len(request), 1000)])
    assert len(stream_reply.body) > 64 * 1024 and stream_reply.text.endswith("data: [DONE]\n\n")
    assert len(json_reply.json()["choices"][0]["message"]["content"]) == 64 * 1024
    assert big_request.status == 200
    stream_line, json_line, request_line = read_lines(tmp_path, rollout)
    assert stream_line["capture_cut"] is True and stream_line["error_category"] is None
    assert stream_line["response_raw"] == stream_reply.text[:cap]
    assert stream_line["response"]["choices"][0]["message"]["content"].startswith(
        "All work and no play"
    )
    assert json_line["capture_cut"] is True and json_line["error_category"] is None
    assert json_line["response"] is None and json_line["response_raw"] == json_reply.text[:cap]
    assert request_line["capture_cut"] is True and request_line["request"] is None
    assert request_line["request_raw"] == request[:cap].decode()
    assert request_line["response"] == big_request.json()
