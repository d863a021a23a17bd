"""The typed path of the chat stream state (`dialects/chat/_fast.py`) ends where the general one does.

The general path (plain JSON values merged by hand) defines the result; the typed path
takes the common chunk shape faster. Every test here reassembles the same bytes twice,
once with the typed path off (`_choice_stream.MISSES = 0`), and compares the two results
byte for byte as JSON (so dict key order counts), with the terminal kind, the error and
the notes (`conftest.both_paths`, shared with `test_completions_fast.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import CORPUS
from model_call_capture.dialects.chat import _choice, _choice_stream
from model_call_capture.dialects.chat._stream import StreamState
from model_call_capture.sse import SseEvent

from .conftest import both_paths, sse_body, typed_taken

CHAT_STREAMS = sorted(CORPUS.glob("streams/chat/*.sse"))


def _both(body: bytes, chunks: int = 1) -> tuple[bytes, bytes]:
    """The general path's result, then the typed path's as a stream takes it."""
    return both_paths("chat", body, chunks, misses=_choice_stream.MISSES)


def _taken(body: bytes) -> int:
    return typed_taken("chat", body)


@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: p.stem)
def test_corpus_streams_end_the_same_on_both_paths(path: Path) -> None:
    body = path.read_bytes()
    general, typed = _both(body)
    assert typed == general
    general, typed = _both(body, chunks=7)
    assert typed == general


def test_the_corpus_takes_the_typed_path() -> None:
    """Else the comparison above would compare the general path with itself."""
    taken = sum(_taken(path.read_bytes()) for path in CHAT_STREAMS)
    assert taken > 2 * len(CHAT_STREAMS)


def test_a_plain_text_stream_is_taken_whole() -> None:
    chunks = [
        {"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m", "choices": []}
    ] + [
        {"id": "c1", "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]}
        for w in ("a", "b", "c")
    ]
    assert _taken(sse_body(chunks)) == 4


# Chunks of the common shape, with the values that test its rules (nulls, empty strings,
# repeats, two new text members at once, extra members in either order), and chunks that
# leave it (wrong types, negative or boolean indexes, members it does not know).
_word = st.sampled_from(["", "a", "b", "ab"])
_maybe = st.one_of(st.none(), _word)
_odd = st.sampled_from([True, 0, -1, 1.5, [], {}])


@st.composite
def _common_choice(draw: st.DrawFn) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": draw(st.sampled_from([0, 0, 0, 1]))}
    if draw(st.integers(0, 5)):
        keys = draw(
            st.lists(
                st.sampled_from(["role", "content", "reasoning_content", "reasoning"]),
                unique=True,
                max_size=3,
            )
        )
        choice["delta"] = {
            key: draw(st.sampled_from(["assistant", "tool", "", None]) if key == "role" else _maybe)
            for key in keys
        }
    if draw(st.booleans()):
        choice["finish_reason"] = draw(st.sampled_from([None, "", "stop", "length"]))
    if draw(st.booleans()):
        choice["logprobs"] = None
    return choice


@st.composite
def _common_chunk(draw: st.DrawFn) -> dict[str, Any]:
    members = draw(
        st.permutations(
            [
                "id",
                "object",
                "created",
                "model",
                "choices",
                "usage",
                "system_fingerprint",
                "service_tier",
                "obfuscation",
            ]
        )
    )
    chunk: dict[str, Any] = {}
    for member in members[: draw(st.integers(0, len(members)))]:
        if member == "choices":
            chunk[member] = draw(st.lists(_common_choice(), max_size=2))
        elif member == "created":
            chunk[member] = draw(st.sampled_from([0, 7, 9]))
        elif member == "usage":
            chunk[member] = draw(st.sampled_from([None, {"total_tokens": 3}, {}]))
        elif member in ("id", "model"):
            chunk[member] = draw(st.sampled_from(["", "a", "b"]))
        elif member == "object":
            chunk[member] = draw(st.sampled_from(["chat.completion.chunk", None, 3]))
        else:
            chunk[member] = draw(_maybe)
    return chunk


@st.composite
def _odd_chunk(draw: st.DrawFn) -> dict[str, Any]:
    """A common chunk with one member made odd (or one the shape does not know)."""
    chunk = draw(_common_chunk())
    choices = chunk.get("choices")
    where = draw(st.sampled_from(["top", "choice", "delta"]))
    if where == "choice" and choices:
        choices[0][draw(st.sampled_from(["index", "finish_reason", "logprobs", "token_ids"]))] = (
            draw(_odd)
        )
    elif where == "delta" and choices and isinstance(choices[0].get("delta"), dict):
        choices[0]["delta"][draw(st.sampled_from(["content", "refusal", "tool_calls"]))] = draw(
            _odd
        )
    else:
        chunk[draw(st.sampled_from(["id", "created", "model", "usage", "error", "x"]))] = draw(
            st.one_of(_odd, st.just("boom"))
        )
    return chunk


_streams = st.lists(
    st.one_of(_common_chunk(), _common_chunk(), _common_chunk(), _odd_chunk()),
    min_size=1,
    max_size=8,
)


def _delta(**members: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": members}]}


@settings(max_examples=600, deadline=None)
@given(_streams)
# Each rule of the general path, once by hand (the search finds them too, but not always).
@example([_delta(role="assistant"), _delta(role="tool")])
@example([_delta(content="a"), _delta(content=None), _delta(content="b")])
@example([_delta(reasoning=None), _delta(reasoning="r"), _delta(content="c")])
@example([{"choices": [{"index": 0, "finish_reason": f}]} for f in ("stop", "", None)])
@example([{"system_fingerprint": v} for v in ("", None, "x", "y")])
@example([{"id": v, "model": v, "created": n} for v, n in (("", 0), ("a", 7), ("b", 9))])
@example([{"usage": {"total_tokens": 3}}, {"usage": None}])
def test_generated_streams_end_the_same_on_both_paths(payloads: list[dict[str, Any]]) -> None:
    body = sse_body(payloads)
    # Every chunk tried on the typed path, however many it refused before.
    general, typed = both_paths("chat", body)
    assert typed == general


@settings(max_examples=300, deadline=None)
@given(_streams)
@example([{"choices": [{"index": 1, "delta": {"content": "a"}}]}, _delta(content="b")])
@example([{"choices": [{"index": 1}, {"index": 0}]}, _delta(content="b")])
def test_generated_streams_past_the_bound_end_the_same_on_both_paths(
    payloads: list[dict[str, Any]],
) -> None:
    """With a bound of one choice, the generated streams (choices 0 and 1) pass it."""
    body = sse_body(payloads)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_choice, "MAX_ENTRIES", 1)
        general, typed = both_paths("chat", body)
    assert typed == general


def test_a_stream_past_the_bound_ends_the_same_on_both_paths() -> None:
    # New choices up to one short of the bound, a chunk of a new one (the last kept) and an
    # old one, a chunk of a new one (the first dropped) and an old one, then new choices
    # (refused by the typed path) between text for kept choices (which it takes).
    bound = _choice.MAX_ENTRIES
    payloads = [{"choices": [{"index": i, "delta": {"content": "a"}}]} for i in range(bound - 1)]
    payloads.append({"choices": [{"index": i, "delta": {"content": "b"}} for i in (bound + 5, 0)]})
    payloads.append({"choices": [{"index": bound - 1, "delta": {"content": "c"}}, {"index": 2}]})
    for i in range(bound, bound + 40):
        payloads.append({"choices": [{"index": i, "delta": {"content": "d"}}]})
        payloads.append({"choices": [{"index": i % 7, "delta": {"reasoning": "e"}}]})
    body = sse_body(payloads)
    general, typed = _both(body)
    assert typed == general
    general, typed = _both(body, chunks=7)
    assert typed == general
    result = json.loads(general)
    assert len(result[0]["choices"]) == bound
    assert result[4] == [f"choice {bound - 1} and further new choices dropped: past {bound}"]
    # The typed path took the kept choices' chunks past the bound, not only those before.
    assert _taken(body) >= bound - 1 + 40


@settings(max_examples=200, deadline=None)
@given(_common_chunk())
def test_a_common_chunk_takes_the_typed_path(payload: dict[str, Any]) -> None:
    """Else the comparison above would compare the general path with itself.

    A chunk of the common shape is refused only when it would add two new keys to one
    dict of the state (written out here from the rule, not from the code).
    """
    choices = payload.get("choices") or []
    refused = (
        ("system_fingerprint" in payload and "service_tier" in payload)
        or len({c["index"] for c in choices}) < len(choices)
        or any(
            sum(key in c.get("delta", {}) for key in ("content", "reasoning_content", "reasoning"))
            > 1
            for c in choices
            if isinstance(c.get("delta"), dict)
        )
    )
    assert _taken(sse_body([payload])) == (not refused)


def test_a_stream_the_shape_keeps_refusing_stops_being_tried() -> None:
    state = StreamState()
    odd = json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": []}}]}).encode()
    for _ in range(_choice_stream.MISSES + 3):
        state.feed(SseEvent(data=odd))
    assert state._misses == _choice_stream.MISSES
    plain = json.dumps({"choices": [{"index": 0, "delta": {"content": "a"}}]}).encode()
    state.feed(SseEvent(data=plain))
    assert state._misses == _choice_stream.MISSES  # not tried again: the general path took it
