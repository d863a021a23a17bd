"""The redaction hook: JSON paths and patterns, applied to a line before it is written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from model_call_capture.contracts import CaptureLine
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
        response_raw=f'data: {{"echo": "{KEY}"}}\n\n',
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
    # Paths do not reach the raw text; the input line is not modified.
    assert redacted.response_raw == line.response_raw
    assert line.request is not None and line.request["metadata"]["api_key"] == KEY


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
    assert redacted.response_raw == f'data: {{"echo": "{REDACTED}"}}\n\n'


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
