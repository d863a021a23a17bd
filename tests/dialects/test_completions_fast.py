"""The typed path of the Completions stream state (`dialects/completions/_fast.py`) ends where the general one does.

The general path (plain JSON values merged by hand) defines the result; the typed path
takes the common chunk shape faster. Every test here reassembles the same bytes twice,
once with the typed path off (`_choice_stream.MISSES = 0`) and once with every chunk tried
on it, and compares the two results byte for byte as JSON (so dict key order counts), with
the terminal kind, the error and the notes. The streams: the replies recorded from a real
vLLM and those written from vLLM's and OpenAI's code (`tests/data/completions`), generated
ones (hypothesis: the common shape with its members in any order, odd values, unknown
members), and hostile ones (raw JSON text with repeated keys, bad bytes, deep nesting,
huge text, choices past the bound).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from model_call_capture.dialects.chat import _choice_stream
from model_call_capture.dialects.completions import _stream as completions_stream

from .conftest import EVERY_CHUNK, both_paths, sse_body, typed_taken

DATA = Path(__file__).resolve().parents[1] / "data" / "completions"
STREAMS = sorted(DATA.glob("*.sse"))


def _both(body: bytes, pieces: int = 1, misses: int = EVERY_CHUNK) -> tuple[bytes, bytes]:
    return both_paths("completions", body, pieces, misses)


def _taken(body: bytes) -> int:
    return typed_taken("completions", body)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_recorded_streams_end_the_same_on_both_paths(path: Path) -> None:
    body = path.read_bytes()
    for pieces in (1, 7):
        general, typed = _both(body, pieces)
        assert typed == general
        general, typed = _both(body, pieces, misses=_choice_stream.MISSES)
        assert typed == general


def test_the_recorded_streams_take_the_typed_path() -> None:
    """Else the comparison above would compare the general path with itself: every data
    chunk of the recorded streams but vLLM's error object has the common shape."""
    chunks = [
        part
        for path in STREAMS
        for part in path.read_bytes().split(b"\n\n")
        if part.startswith(b"data: {")
    ]
    assert sum(_taken(path.read_bytes()) for path in STREAMS) == len(chunks) - 1


def test_a_vllm_chunk_as_the_benchmark_streams_it_is_taken() -> None:
    """The chunk of row 9c (no log-probs, no token ids), and the usage chunk after it."""
    head = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m"}
    choice = {"index": 0, "text": "a", "logprobs": None, "finish_reason": None}
    payloads = [
        {**head, "choices": [{**choice, "stop_reason": None}]},
        {**head, "choices": [{**choice, "finish_reason": "length", "stop_reason": None}]},
        {**head, "choices": [], "usage": {"prompt_tokens": 6, "total_tokens": 8}},
    ]
    assert _taken(sse_body(payloads)) == 3


# Chunks of the common shape with the values that test its rules (nulls, empty strings,
# repeats, token ids that are not lists, log-prob members in any order and of any type), and
# chunks that leave it (wrong types, negative or boolean indexes, members it does not know).
_word = st.sampled_from(["", "a", "b", "ab"])
_odd: st.SearchStrategy[Any] = st.sampled_from([True, 0, -1, 1.5, [], {}, "s", None])
_LOGPROB_KEYS = ["tokens", "token_logprobs", "top_logprobs", "text_offset"]


@st.composite
def _logprobs(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.permutations(_LOGPROB_KEYS))[: draw(st.integers(0, 4))]
    values = st.one_of(
        st.lists(st.sampled_from(["a", -0.5, None, {"a": -1.0}, 3]), max_size=2), _odd
    )
    return {key: draw(values) for key in keys}


_CHOICE_MEMBERS = {
    "text": st.one_of(_word, st.none()),
    "logprobs": st.one_of(st.none(), _logprobs()),
    "finish_reason": st.sampled_from([None, "", "stop", "length"]),
    "stop_reason": st.sampled_from([None, "x", 7, [1]]),
    "prompt_token_ids": st.sampled_from([None, [1, 2], [], 5]),
    "token_ids": st.sampled_from([None, [3], [4, 5], 6, "x"]),
}


@st.composite
def _common_choice(draw: st.DrawFn) -> dict[str, Any]:
    members = draw(st.permutations(["index", *_CHOICE_MEMBERS]))
    choice: dict[str, Any] = {}
    for member in members[: draw(st.integers(1, len(members)))]:
        if member == "index":
            choice[member] = draw(st.sampled_from([0, 0, 0, 1, 2]))
        else:
            choice[member] = draw(_CHOICE_MEMBERS[member])
    choice.setdefault("index", 0)
    return choice


_CHUNK_MEMBERS = ["id", "object", "created", "model", "choices", "usage", "system_fingerprint"]


@st.composite
def _common_chunk(draw: st.DrawFn) -> dict[str, Any]:
    members = draw(st.permutations(_CHUNK_MEMBERS))
    chunk: dict[str, Any] = {}
    for member in members[: draw(st.integers(0, len(members)))]:
        if member == "choices":
            chunk[member] = draw(st.one_of(st.lists(_common_choice(), max_size=3), st.none()))
        elif member == "created":
            chunk[member] = draw(st.sampled_from([0, 7, 9]))
        elif member == "usage":
            chunk[member] = draw(st.sampled_from([None, {"total_tokens": 3}, {}]))
        elif member in ("id", "model"):
            chunk[member] = draw(st.sampled_from(["", "a", "b"]))
        elif member == "object":
            chunk[member] = draw(st.sampled_from(["text_completion", None, 3]))
        else:
            chunk[member] = draw(st.one_of(_word, st.none()))
    return chunk


@st.composite
def _odd_chunk(draw: st.DrawFn) -> dict[str, Any]:
    """A common chunk with one member made odd (or one the shape does not know)."""
    chunk = draw(_common_chunk())
    choices = chunk.get("choices")
    if draw(st.booleans()) and choices:
        member = draw(st.sampled_from(["index", "text", "finish_reason", "logprobs", "x"]))
        choices[0][member] = draw(_odd)
    else:
        member = draw(
            st.sampled_from(
                ["id", "created", "model", "usage", "choices", "error", "service_tier", "x"]
            )
        )
        chunk[member] = draw(st.one_of(_odd, st.just("boom"), st.just({"message": "m"})))
    return chunk


_streams = st.lists(
    st.one_of(_common_chunk(), _common_chunk(), _common_chunk(), _odd_chunk()),
    min_size=1,
    max_size=8,
)


def _part(**members: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, **members}]}


@settings(max_examples=800, deadline=None)
@given(_streams)
# Each rule of the general path, once by hand (the search finds them too, but not always).
@example([_part(text="a"), _part(text=None), _part(text="b")])
@example([_part(finish_reason=f) for f in ("stop", "", None)])
@example([_part(stop_reason="x"), _part(stop_reason=None), _part()])
@example([_part(logprobs={"tokens": ["a"], "text_offset": 1}), _part(logprobs={"tokens": 2})])
@example([_part(logprobs={"text_offset": [0]}), _part(logprobs={"tokens": ["a"], "x": [1]})])
@example([_part(prompt_token_ids=None), _part(prompt_token_ids=[1]), _part(prompt_token_ids=2)])
@example([_part(token_ids=[1]), _part(token_ids=2), _part(token_ids=None)])
@example([{"system_fingerprint": v} for v in ("", None, "x", "y")])
@example([{"id": v, "model": v, "created": n} for v, n in (("", 0), ("a", 7), ("b", 9))])
@example([{"usage": {"total_tokens": 3}}, {"usage": None}, {"usage": 4}])
@example([{"choices": [{"index": 1, "text": "a"}, {"index": 1, "text": "b"}, {"index": 0}]}])
def test_generated_streams_end_the_same_on_both_paths(payloads: list[dict[str, Any]]) -> None:
    general, typed = _both(sse_body(payloads))
    assert typed == general


@settings(max_examples=300, deadline=None)
@given(_streams)
@example([{"choices": [{"index": 1, "text": "a"}]}, _part(text="b")])
@example([{"choices": [{"index": 2}, {"index": 0, "text": "x"}, {"index": 1}]}])
def test_generated_streams_past_the_bound_end_the_same_on_both_paths(
    payloads: list[dict[str, Any]],
) -> None:
    """With a bound of one choice, the generated streams (choices 0 to 2) pass it."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(completions_stream, "MAX_ENTRIES", 1)
        general, typed = _both(sse_body(payloads))
    assert typed == general


def test_a_stream_past_the_real_bound_ends_the_same_on_both_paths() -> None:
    """New choices up to the bound, one chunk that crosses it, then more new choices between
    text for kept ones: the typed path refuses nothing of that, and notes the same choice."""
    bound = completions_stream.MAX_ENTRIES
    payloads: list[Any] = [{"choices": [{"index": i, "text": "a"}]} for i in range(bound - 1)]
    payloads.append({"choices": [{"index": i, "text": "b"} for i in (bound + 5, bound - 1, 0)]})
    for i in range(bound, bound + 40):
        payloads.append({"choices": [{"index": i, "text": "d"}]})
        payloads.append({"choices": [{"index": i % 7, "text": "e", "token_ids": [i]}]})
    body = sse_body(payloads)
    general, typed = _both(body)
    assert typed == general
    assert _both(body, 7) == (general, general)
    result = json.loads(general)
    assert len(result[0]["choices"]) == bound
    # The crossing chunk's first new choice is the last kept, its second the first dropped.
    assert result[0]["choices"][-1]["index"] == bound + 5
    assert result[4] == [f"choice {bound - 1} and further new choices dropped: past {bound}"]
    assert _taken(body) == len(payloads)


_DEEP = '{"choices":[{"index":0,"logprobs":{"tokens":' + "[" * 3000 + "]" * 3000 + "}}]}"

_HOSTILE = {
    # Repeated members: msgspec keeps the last, into a dict or a Struct alike.
    "repeated keys": [
        '{"id":"a","id":"b","choices":[{"index":0,"text":"x","text":"y","index":1}]}',
        '{"choices":[{"index":0,"text":"p"}],"choices":[{"index":0,"text":"q"}]}',
        '{"choices":[{"index":0,"logprobs":{"tokens":["a"],"text_offset":[1],"tokens":["b"]}}]}',
    ],
    "wrong types": [
        '{"choices":[{"index":true,"text":"a"}]}',
        '{"choices":[{"index":-1,"text":"a"}]}',
        '{"choices":[{"index":0.0,"text":"a"}]}',
        '{"choices":{"index":0}}',
        '{"choices":[7,{"index":0,"text":"ok"}]}',
        '{"choices":[{"index":0,"text":5,"logprobs":[1]}]}',
        '{"created":true,"id":7,"model":[],"usage":[]}',
        '{"created":1.5}',
        '{"created":123456789012345678901234567890}',
        '{"choices":[{"index":18446744073709551616,"text":"a"}]}',
        "[1, 2]",
        '"text"',
        "not json",
    ],
    "bad bytes and escapes": [
        '{"choices":[{"index":0,"text":"\\ud800"}]}',
        '{"choices":[{"index":0,"text":"\\u0061\\u00e9"}]}',
    ],
    "deep nesting": [_DEEP],
    "huge text": ['{"choices":[{"index":0,"text":"' + "x" * 2_000_000 + '"}]}'],
    "error members": [
        '{"choices":[{"index":0,"text":"a"}],"error":null}',
        '{"error":{"message":"m","code":500}}',
        '{"choices":[{"index":0,"text":"after the error"}]}',
    ],
}


@pytest.mark.parametrize("name", list(_HOSTILE))
def test_hostile_streams_end_the_same_on_both_paths(name: str) -> None:
    plain = json.dumps({"id": "c", "choices": [{"index": 0, "text": "t"}]})
    body = sse_body([plain, *_HOSTILE[name], plain])
    body += b"data: \xff\xfe{\n\n"  # bytes that are not UTF-8, after [DONE]
    for pieces in (1, 5):
        general, typed = _both(body, pieces)
        assert typed == general


def test_invalid_utf8_in_a_chunk_ends_the_same_on_both_paths() -> None:
    body = b'data: {"choices":[{"index":0,"text":"a\xff"}]}\n\ndata: {"id":"x"}\n\ndata: [DONE]\n\n'
    general, typed = _both(body)
    assert typed == general


def test_many_choices_in_one_chunk_end_the_same_on_both_paths() -> None:
    """`n` of 1,000, all choices in every chunk, with log-probs and token ids."""
    lp = {"text_offset": [0], "token_logprobs": [-0.5], "tokens": ["a"], "top_logprobs": [None]}
    payloads = [
        {
            "choices": [
                {"index": i, "text": "a", "logprobs": lp, "token_ids": [i]} for i in range(1000)
            ]
        }
        for _ in range(3)
    ]
    general, typed = _both(sse_body(payloads))
    assert typed == general
    assert _taken(sse_body(payloads)) == 3
