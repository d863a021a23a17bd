"""The redaction hook: JSON paths and patterns, applied to a line before it is written."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest
from msgspec import UNSET

from model_call_capture.contracts import CaptureLine, ObservationGap
from model_call_capture.redaction import REDACTED, SECRET_KEY_PATTERNS, Redactor
from model_call_capture.store import CaptureStore

KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789"


def _line() -> CaptureLine:
    return CaptureLine(
        model_call_id="c1",
        dialect="chat",
        request={
            "model": "m",
            "metadata": {"api_key": KEY, "user": "u1"},
            "messages": [
                {"role": "system", "content": f"use key {KEY} for the tool"},
                {"role": "user", "content": "hi", "password": "hunter2"},
            ],
        },
        response={"choices": [{"message": {"content": "ok", "password": "p2"}}]},
        response_raw=f'{{"echo": "{KEY}", "cut": "at the c',
    )


def test_paths_replace_exactly_the_named_values() -> None:
    line = _line()
    redacted = Redactor(
        ["request.metadata.api_key", "request.messages[*].content", "$.response.**.password"]
    )(line)
    assert redacted.request == {
        "model": "m",
        "metadata": {"api_key": REDACTED, "user": "u1"},
        "messages": [
            {"role": "system", "content": REDACTED},
            {"role": "user", "content": REDACTED, "password": "hunter2"},
        ],
    }
    assert redacted.response == {"choices": [{"message": {"content": "ok", "password": REDACTED}}]}
    # A path cannot reach the raw text: it is replaced whole (see the fail-closed tests).
    assert redacted.response_raw == REDACTED
    # The input line is not modified.
    assert line.request is not None and line.request["metadata"]["api_key"] == KEY
    assert isinstance(line.response_raw, str) and KEY in line.response_raw


def test_recursive_wildcard_matches_at_every_depth_including_the_top() -> None:
    line = CaptureLine(request={"password": 1, "a": [{"password": 2}, {"b": {"password": 3}}]})
    assert Redactor(["request.**.password"], replacement="X")(line).request == {
        "password": "X",
        "a": [{"password": "X"}, {"b": {"password": "X"}}],
    }


def test_index_paths_and_missing_paths() -> None:
    line = CaptureLine(request={"messages": [{"content": "a"}, {"content": "b"}]})
    assert Redactor(["request.messages[1].content", "request.nope.deeper", "request.messages[7]"])(
        line
    ).request == {"messages": [{"content": "a"}, {"content": REDACTED}]}


def test_patterns_scrub_every_string_and_the_raw_texts() -> None:
    redacted = Redactor(patterns=SECRET_KEY_PATTERNS)(_line())
    assert redacted.request is not None
    assert redacted.request["metadata"] == {"api_key": REDACTED, "user": "u1"}
    assert redacted.request["messages"][0]["content"] == f"use key {REDACTED} for the tool"
    assert redacted.response_raw == f'{{"echo": "{REDACTED}", "cut": "at the c'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA", f"<{REDACTED}>"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc", f"<Authorization: {REDACTED}>"),
        ("AKIAIOSFODNN7EXAMPLE", f"<{REDACTED}>"),
        ("ghp_" + "a1" * 18, f"<{REDACTED}>"),
        ("sk-short", "<sk-short>"),  # too short to be a key
    ],
)
def test_the_default_patterns_catch_common_key_shapes(text: str, expected: str) -> None:
    line = CaptureLine(request_raw=f"<{text}>")
    assert Redactor(patterns=SECRET_KEY_PATTERNS)(line).request_raw == expected


def test_a_line_without_payloads_is_returned_unchanged() -> None:
    line = CaptureLine(model_call_id="c")
    assert Redactor(["request.a"], SECRET_KEY_PATTERNS)(line) is line


@pytest.mark.parametrize("path", ["headers.authorization", "", "request..a", "request[x]"])
def test_bad_paths_are_refused(path: str) -> None:
    with pytest.raises(ValueError, match="redaction path"):
        Redactor([path])


def test_a_pattern_matching_the_empty_string_is_refused() -> None:
    with pytest.raises(ValueError, match="matches the empty string"):
        Redactor(patterns=[re.compile(r"x*")])


def test_a_known_key_never_reaches_the_disk(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    redact = Redactor(patterns=SECRET_KEY_PATTERNS)
    store.append("r", redact(_line()))
    store.append("r", redact(CaptureLine(request_raw=f"{{not json {KEY}")))
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert KEY.encode() not in data
    assert b"sk-proj" not in data
    assert data.count(REDACTED.encode()) == 4


# -- failing closed ------------------------------------------------------------------------

GAP_PATHS = "redaction paths on `request` cannot reach a body kept as text"


@pytest.mark.parametrize(
    "body",
    [
        f'{{"metadata":{{"api_key":"{KEY}"}},"temperature":NaN}}',  # as the SDKs emit NaN
        f'{{"metadata":{{"api_key":"{KEY}"}},"name":"\\ud800"}}',  # a lone surrogate
        f'{{"metadata":{{"api_key":"{KEY}"}},"name":"caf\\xe9"}}',  # invalid UTF-8, as written
        f'{{"metadata":{{"api_key":"{KEY}"}},"pad":"aaaa',  # cut at capture_max_bytes
    ],
    ids=["NaN", "lone surrogate", "invalid UTF-8", "cut"],
)
def test_a_path_on_a_body_kept_as_text_replaces_the_whole_text(body: str) -> None:
    line = CaptureLine(request=None, request_raw=body, response={"id": "c"})
    redacted = Redactor(["request.metadata.api_key"])(line)
    assert redacted.request_raw == REDACTED
    assert redacted.gaps == [
        ObservationGap(code="redacted_raw", detail=f"request_raw: {GAP_PATHS}")
    ]
    assert redacted.response == {"id": "c"}  # no path on `response`: untouched
    assert line.request_raw == body  # the input line is not modified


def test_paths_on_one_payload_leave_the_other_raw_text_to_the_patterns() -> None:
    line = CaptureLine(request_raw=f"not json {KEY}", response_raw=f"<html>{KEY}</html>")
    redacted = Redactor(["response.id"], SECRET_KEY_PATTERNS)(line)
    assert redacted.request_raw == f"not json {REDACTED}"
    assert redacted.response_raw == REDACTED
    assert redacted.gaps == [
        ObservationGap(
            code="redacted_raw",
            detail="response_raw: redaction paths on `response` cannot reach a body kept as text",
        )
    ]


def _chat_delta(text: str) -> str:
    return (
        'data: {"id":"c","object":"chat.completion.chunk","choices":'
        f'[{{"index":0,"delta":{{"content":"{text}"}}}}]}}\n\n'
    )


def test_a_secret_split_across_stream_events_cannot_be_read_back_from_the_raw_text() -> None:
    # The key arrives in three deltas: no event holds it whole, so no pattern matches the
    # raw text, while the reassembled response joins it.
    raw = "".join(_chat_delta(p) for p in ("your key: " + KEY[:9], KEY[9:20], KEY[20:])) + (
        "data: [DONE]\n\n"
    )
    line = CaptureLine(
        stream=True,
        response={"choices": [{"message": {"content": f"your key: {KEY}"}}]},
        response_raw=raw,
        gaps=[ObservationGap(code="memory_budget", detail="earlier")],
    )
    assert not any(re.search(p, raw) for p in SECRET_KEY_PATTERNS)
    redacted = Redactor(patterns=SECRET_KEY_PATTERNS)(line)
    # The same text, kept as a plain body (a stream sent without its content-type).
    plain = Redactor(patterns=SECRET_KEY_PATTERNS)(msgspec.structs.replace(line, stream=UNSET))
    assert (plain.response_raw, plain.gaps) == (redacted.response_raw, redacted.gaps)
    assert redacted.response == {"choices": [{"message": {"content": f"your key: {REDACTED}"}}]}
    assert redacted.response_raw == REDACTED
    assert redacted.gaps == [
        ObservationGap(code="memory_budget", detail="earlier"),
        ObservationGap(
            code="redacted_raw",
            detail="response_raw: patterns cannot be trusted on a stream's raw text: "
            "a secret may be split across events",
        ),
    ]


def test_a_secret_hidden_by_json_escapes_replaces_the_whole_text() -> None:
    escaped = KEY.replace("p", "\\u0070").replace("-", "\\u002d")
    line = CaptureLine(request_raw=f'{{"key":"{escaped}","t":NaN}}', response_raw=f'"{KEY}"')
    redacted = Redactor(patterns=SECRET_KEY_PATTERNS)(line)
    assert redacted.request_raw == REDACTED
    assert redacted.response_raw == f'"{REDACTED}"'  # matched in place: kept, redacted
    assert redacted.gaps == [
        ObservationGap(
            code="redacted_raw",
            detail="request_raw: a pattern matches it once its JSON escapes are decoded",
        )
    ]


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"password": "hunter2", "next": value}
    return value


def test_a_body_nested_as_deep_as_the_decoder_allows_is_redacted() -> None:
    # 900 levels: the JSON decoder accepts it, a recursive walk (with the caller's frames)
    # passes the interpreter's recursion limit.
    body = _nested(900, f"the key is {KEY}")
    line = CaptureLine(request={"deep": body})
    redacted = Redactor(["request.**.password"], SECRET_KEY_PATTERNS)(line)
    assert redacted.request == {"deep": _expected_nested(900, f"the key is {REDACTED}")}
    assert line.request == {"deep": body}  # not modified


def _expected_nested(depth: int, leaf: object) -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"password": REDACTED, "next": value}
    return value
