"""The request side of a call: `client_session_id` from `x-session-id`, as NeMo Gym 0.7.0 reads it.

Gym keeps the header's value when exactly one distinct non-empty value was sent and
writes the field only then (its reference files: `routing/r-session` has `sess-42`,
`routing/r-session2`, sent two different values, has no field). The expected values
below are written by hand.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from model_call_capture.middleware._request import MAX_SESSION_ID_BYTES, client_session_id
from model_call_capture.records import read_model_call_records
from model_call_capture.store import CaptureStore
from servers import serve

from .conftest import capturing, chat_body, new_rollout, only_line, post


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ([(b"x-session-id", b"sess-42")], "sess-42"),
        ([(b"x-session-id", b"sess-42"), (b"x-session-id", b"sess-42")], "sess-42"),
        ([(b"x-session-id", b"sess-42"), (b"x-session-id", b"sess-43")], None),
        ([(b"x-session-id", b"")], None),
        ([(b"x-session-id", b""), (b"x-session-id", b"sess-42")], "sess-42"),  # empty: not a value
        ([(b"X-Session-ID", b"sess-42")], "sess-42"),  # header names are case-insensitive
        ([(b"x-session-id", b"caf\xe9")], "caf\u00e9"),  # header bytes are latin-1
        ([(b"x-session", b"sess-42"), (b"session-id", b"s")], None),
        ([], None),
    ],
    ids=[
        "once",
        "twice-same",
        "twice-different",
        "empty",
        "empty-and-one",
        "any-case",
        "latin-1",
        "other-headers",
        "none",
    ],
)
def test_the_session_is_the_one_distinct_non_empty_value(
    tmp_path: Path, headers: list[tuple[bytes, bytes]], expected: str | None
) -> None:
    rollout = new_rollout()
    exchange = post(capturing(tmp_path), rollout, chat_body(), headers=headers)
    assert exchange.status == 200
    line = only_line(tmp_path, rollout)
    if expected is None:
        assert "client_session_id" not in line  # as Gym: written only when known
    else:
        assert line["client_session_id"] == expected
    (record,) = read_model_call_records(CaptureStore(tmp_path), rollout)
    assert record.client_session_id == expected


def test_a_session_id_longer_than_the_bound_is_dropped_with_a_gap(tmp_path: Path) -> None:
    rollout = new_rollout()
    long = b"s" * (MAX_SESSION_ID_BYTES + 1)
    post(capturing(tmp_path), rollout, chat_body(), headers=[(b"x-session-id", long)])
    line = only_line(tmp_path, rollout)
    assert "client_session_id" not in line
    assert line["gaps"] == [
        {
            "code": "field_dropped",
            "detail": "client_session_id: the x-session-id value has 1025 bytes, more than 1024",
        }
    ]
    assert line["status_code"] == 200 and line["response"]["object"] == "chat.completion"


def test_a_session_id_of_exactly_the_bound_is_kept() -> None:
    value = b"s" * MAX_SESSION_ID_BYTES
    assert client_session_id([(b"x-session-id", value)]) == ("s" * 1024, None)


def test_hostile_header_items_are_skipped_not_fatal() -> None:
    odd: list[Any] = [("x-session-id", "text"), (b"x-session-id", None), (None, b"x")]
    assert client_session_id(odd) == (None, None)
    with_one: list[Any] = [*odd, (b"x-session-id", bytearray(b"s1"))]
    assert client_session_id(with_one) == ("s1", None)
    assert client_session_id(None) == (None, None)


def test_a_real_client_sending_the_header_twice_over_uvicorn(tmp_path: Path) -> None:
    # h11 delivers repeated headers as separate items, as the in-process driver does.
    same, different = new_rollout(), new_rollout()
    with serve(capturing(tmp_path)) as server, httpx.Client(base_url=server.url) as client:
        for rollout, values in ((same, ["a1", "a1"]), (different, ["a1", "b2"])):
            response = client.post(
                f"/ng-rollout/{rollout}/v1/chat/completions",
                json=chat_body(),
                headers=[("x-session-id", v) for v in values],
            )
            assert response.status_code == 200
    assert only_line(tmp_path, same)["client_session_id"] == "a1"
    assert "client_session_id" not in only_line(tmp_path, different)


async def _answers_after_reading(parts: int | None, scope: Any, receive: Any, send: Any) -> None:
    """A model app that reads `parts` body messages (None: all of them), then answers 400."""
    read = 0
    while parts is None or read < parts:
        message = await receive()
        read += 1
        if not message.get("more_body", False):
            break
    body = b'{"error": {"message": "refused"}}'
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _two_chunks() -> Any:
    yield b'{"model": "m", "messages": '
    time.sleep(0.2)  # the app has answered by then when it reads one part only
    yield b"[]}"


@pytest.mark.parametrize(
    ("parts", "request_", "request_raw", "gaps"),
    [
        (0, None, None, [{"code": "request_unread", "detail": "the app answered before it read the whole request body"}]),
        (1, None, '{"model": "m", "messages": ', [{"code": "request_unread", "detail": "the app answered before it read the whole request body"}]),
        (None, {"model": "m", "messages": []}, None, None),
    ],
    ids=["none", "a-part", "all"],
)  # fmt: skip
def test_a_body_the_app_did_not_read_is_a_request_unread_gap(
    tmp_path: Path, parts: int | None, request_: Any, request_raw: Any, gaps: Any
) -> None:
    """The tee keeps what the app reads; the line says when that is not the whole body."""
    rollout = new_rollout()
    app = capturing(tmp_path, app=functools.partial(_answers_after_reading, parts))
    with serve(app) as server:
        response = httpx.post(
            f"{server.url}/ng-rollout/{rollout}/v1/chat/completions",
            content=_two_chunks(),  # chunked: the body comes in two parts
            headers={"content-type": "application/json"},
        )
    assert response.status_code == 400
    line = only_line(tmp_path, rollout)
    assert (line["request"], line.get("request_raw"), line.get("gaps")) == (
        request_,
        request_raw,
        gaps,
    )


def test_a_request_without_a_body_has_no_unread_gap(tmp_path: Path) -> None:
    rollout = new_rollout()
    app = capturing(tmp_path, app=functools.partial(_answers_after_reading, 0))
    with serve(app) as server:
        response = httpx.post(f"{server.url}/ng-rollout/{rollout}/v1/chat/completions")
    assert response.status_code == 400
    line = only_line(tmp_path, rollout)
    assert (line["request"], "gaps" in line) == (None, False)
