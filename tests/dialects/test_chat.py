"""OpenAI Chat Completions: wire types, schema, stream reassembly and record derivation.

The reference for reassembly is the official `openai` SDK: every recorded chat stream of
the corpus, and many generated ones, are replayed through a real `openai.OpenAI` client
(its HTTP transport is an `httpx2.MockTransport` serving the recorded bytes, since no
network is used in tests) into the SDK's `ChatCompletionStreamState`, and the two results
must agree on id, model, text, refusal, reasoning, tool calls, usage counters and the
finish reason of every choice. Where the SDK itself is wrong, the case is listed in
`SDK_WRONG` with the reason, and our value is checked against the wire format instead.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, cast

import httpx2
import msgspec
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from openai.lib.streaming.chat import ChatCompletionStreamState
from referencing import Registry
from syrupy.assertion import SnapshotAssertion

from conftest import (
    CORPUS,
    FULL_CORPUS,
    FULL_GYM_REFERENCE,
    GYM_REFERENCE,
    needs_full_corpus,
)
from memory_tools import reassemble_in_chunks, traced_peak
from model_call_capture.contracts import ToolCall
from model_call_capture.dialects import DialectModule, chat, dialect_for_path, get_dialect
from model_call_capture.dialects.base import Derived, StreamResult
from model_call_capture.reassembly import StreamReassembler, reassemble_stream
from model_call_capture.sse import SseEvent
from schema_tools import SCHEMAS_DIR, reduce_schema_file, reduce_struct, schema_registry

from .conftest import DERIVED_FIELDS, FORMS, undescribed_properties

CHAT_STREAMS = sorted(CORPUS.glob("streams/chat/*.sse"))
CHAT_JSON = sorted(CORPUS.glob("json/chat/*.json"))
SCHEMA = "v1/dialects/openai-chat.schema.json"


def reassemble(body: bytes) -> StreamResult:
    """Our reassembly of a whole chat stream."""
    reassembler = StreamReassembler("chat")
    reassembler.feed(body)
    return reassembler.finish()


def sse(*payloads: object, done: bool = True) -> bytes:
    """A chat stream body: one `data:` event per payload (str payloads are sent verbatim)."""
    body = b"".join(
        b"data: " + (p.encode() if isinstance(p, str) else json.dumps(p).encode()) + b"\n\n"
        for p in payloads
    )
    return body + (b"data: [DONE]\n\n" if done else b"")


def chunk(*choices: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A `chat.completion.chunk` with the given choices and top-level fields."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-4o",
        "choices": list(choices),
        **fields,
    }


def delta(
    index: int = 0, finish_reason: str | None = None, logprobs: Any = None, **fields: Any
) -> dict[str, Any]:
    """One choice of a chunk."""
    return {"index": index, "delta": fields, "logprobs": logprobs, "finish_reason": finish_reason}


# --- the SDK as a reference --------------------------------------------------------------


def sdk_replay(body: bytes) -> tuple[dict[str, Any] | None, BaseException | None]:
    """Replay `body` through a real openai client into `ChatCompletionStreamState`.

    Mirrors `ChatCompletionStream`: chunks whose `object` is not `chat.completion.chunk`
    (Azure's first, filter-only chunk) are skipped. Returns the snapshot so far and the
    exception the SDK raised, if any (it raises on error chunks and on some deltas).
    """

    def serve(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    raised: BaseException | None = None
    with httpx2.Client(transport=httpx2.MockTransport(serve)) as http:
        client = openai.OpenAI(
            api_key="sk-test", base_url="http://model.test/v1", http_client=http, max_retries=0
        )
        try:
            stream = client.chat.completions.create(model="gpt-4o", messages=[], stream=True)
            with stream:
                for item in stream:
                    if item.object == "chat.completion.chunk":
                        state.handle_chunk(item)
        except Exception as exc:  # the SDK's own failure is part of what we compare
            raised = exc
    try:
        snapshot = state.current_completion_snapshot
    except AssertionError:
        return None, raised
    return snapshot.model_dump(mode="json"), raised


def parsed_arguments(text: Any) -> Any:
    """Arguments as JSON, `{"_raw": text}` when not valid JSON (stdlib json as the oracle)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return {"_raw": text}


def _tokens(logprobs: Any, key: str) -> list[str] | None:
    entries = logprobs.get(key) if isinstance(logprobs, dict) else None
    return [e["token"] for e in entries] if entries else None


def facts(completion: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the SDK and we must agree on, from a `chat.completion` object."""
    if completion is None:
        return None
    usage = completion.get("usage")
    counters = None
    if usage:
        counters = [
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
            usage.get("total_tokens"),
            (usage.get("prompt_tokens_details") or {}).get("cached_tokens"),
            (usage.get("completion_tokens_details") or {}).get("reasoning_tokens"),
        ]
    choices = []
    for choice in completion["choices"]:
        message = choice["message"]
        choices.append(
            {
                "index": choice["index"],
                "finish_reason": choice.get("finish_reason"),
                "role": message.get("role"),
                "content": message.get("content"),
                "refusal": message.get("refusal"),
                "reasoning_content": message.get("reasoning_content"),
                "reasoning": message.get("reasoning"),
                "tool_calls": [
                    [
                        call.get("id"),
                        call["function"].get("name"),
                        parsed_arguments(call["function"].get("arguments")),
                    ]
                    for call in message.get("tool_calls") or []
                ],
                "logprobs": [
                    _tokens(choice.get("logprobs"), "content"),
                    _tokens(choice.get("logprobs"), "refusal"),
                ],
            }
        )
    return {
        "id": completion.get("id"),
        "model": completion.get("model"),
        "system_fingerprint": completion.get("system_fingerprint"),
        "usage": counters,
        "choices": choices,
    }


_ROLE_REPEATED = (
    "the server repeats `role` in every delta and the SDK concatenates it (`assistantassistant...`)"
)

SDK_WRONG: dict[str, dict[tuple[Any, ...], tuple[Any, str]]] = {
    "mirascope--test_openrouter_stream_openrouter_anthropic_claude_3_5_sonnet_20241022": {
        ("choices", 0, "role"): ("assistant", _ROLE_REPEATED),
    },
    "mirascope--test_openrouter_stream_openrouter_openai_gpt_4o": {
        ("choices", 0, "role"): ("assistant", _ROLE_REPEATED),
        ("system_fingerprint",): (
            "fp_deacdd5f6f",
            "the SDK takes system_fingerprint from the last chunk, and OpenRouter's usage chunk has none",
        ),
    },
    "openllmetry--openai_test_chat_test_chat_streaming": {
        ("choices", 0, "role"): ("assistant", _ROLE_REPEATED),
    },
    "pydantic-ai--test_openrouter_test_openrouter_stream_with_native_options": {
        ("choices", 0, "role"): ("assistant", _ROLE_REPEATED),
    },
    "pydantic-ai--test_openrouter_test_openrouter_streaming_reasoning": {
        ("choices", 0, "role"): ("assistant", _ROLE_REPEATED),
    },
    "pydantic-ai--test_openai_test_openai_moderation_stream": {
        ("usage",): (
            [13, 11, 24, 0, 0],
            "a moderation chunk with `usage: null` follows the usage chunk and the SDK erases usage",
        ),
    },
    "pydantic-ai--test_openrouter_test_openrouter_stream_error": {
        ("choices", 0, "role"): ("assistant", _ROLE_REPEATED),
        ("usage",): (
            [43, 10, 53, 0, 11],
            "the SDK raises on the chunk carrying `error` before reading its usage",
        ),
    },
    "pydantic-ai--test_openrouter_test_openrouter_web_search_annotations_stream": {
        ("choices", 0, "content"): (
            "The URL for Pydantic AI's GitHub repository is:  \n\nhttps://github.com/pydantic/pydantic-ai",
            "the SDK raises RuntimeError on the second `annotations` delta (list entries without `index`)",
        ),
        ("choices", 0, "finish_reason"): ("stop", "the SDK stopped at the RuntimeError"),
        ("usage",): ([2317, 53, 2370, 0, 0], "the SDK stopped at the RuntimeError"),
    },
}
"""Corpus streams where the SDK's result is wrong: path in `facts` -> (wire value, reason)."""

SDK_RAISES = {
    "pydantic-ai--test_groq_test_tool_use_failed_error_streaming-i0": openai.APIError,
    "pydantic-ai--test_groq_test_tool_use_failed_error_streaming_with_text-i0": openai.APIError,
    "pydantic-ai--test_openrouter_test_openrouter_stream_error": openai.APIError,
    "pydantic-ai--test_openrouter_test_openrouter_web_search_annotations_stream": RuntimeError,
}
"""Corpus streams on which the SDK raises (an error event is a raise by design for a client)."""


def _at(tree: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def _put(tree: Any, path: tuple[Any, ...], value: Any) -> None:
    _at(tree, path[:-1])[path[-1]] = value


@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: p.stem)
def test_corpus_stream_agrees_with_the_sdk(path: Path) -> None:
    body = path.read_bytes()
    ours = facts(reassemble(body).response)
    snapshot, raised = sdk_replay(body)
    theirs = facts(snapshot)
    expected_raise = SDK_RAISES.get(path.stem)
    assert type(raised) is expected_raise if expected_raise else raised is None, repr(raised)
    for field_path, (wire, _reason) in SDK_WRONG.get(path.stem, {}).items():
        assert _at(ours, field_path) == wire
        assert _at(theirs, field_path) != wire, (
            "the SDK got this right now: drop the SDK_WRONG entry"
        )
        _put(theirs, field_path, wire)
    assert ours == theirs


@needs_full_corpus
def test_the_sdk_disagreement_list_only_names_corpus_streams() -> None:
    stems = {p.stem for p in CHAT_STREAMS}
    assert set(SDK_WRONG) <= stems
    assert set(SDK_RAISES) <= stems


# --- generated streams -------------------------------------------------------------------

_text = st.text(max_size=6)


@st.composite
def _split(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=4))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a] or [""]


@st.composite
def _choice_deltas(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    """The choices (of successive chunks) of one generated choice, in order."""
    out = [delta(index, role="assistant", content="")]
    for kind in draw(
        st.lists(
            st.sampled_from(["content", "refusal", "reasoning_content", "reasoning"]), max_size=5
        )
    ):
        piece = draw(_text)
        if kind == "content" and draw(st.booleans()):
            logprobs = {
                "content": [
                    {
                        "token": piece,
                        "logprob": -0.25,
                        "bytes": list(piece.encode()),
                        "top_logprobs": [],
                    }
                ]
            }
            out.append(delta(index, logprobs=logprobs, content=piece))
        else:
            out.append(delta(index, **{kind: piece}))
    for call in range(draw(st.integers(0, 2))):
        arguments = json.dumps(
            draw(st.dictionaries(st.sampled_from(["city", "unit", "q"]), _text, max_size=2))
        )
        pieces = draw(_split(arguments))
        first = {"index": call, "id": f"call_{index}_{call}", "type": "function"}
        first["function"] = {
            "name": draw(st.sampled_from(["get_weather", "search"])),
            "arguments": "",
        }
        out.append(delta(index, tool_calls=[first]))
        out += [
            delta(index, tool_calls=[{"index": call, "function": {"arguments": p}}]) for p in pieces
        ]
    out.append(
        delta(index, draw(st.sampled_from(["stop", "length", "tool_calls", "content_filter"])))
    )
    if draw(st.booleans()):
        out.append(
            delta(index)
        )  # OpenRouter: an empty delta with finish_reason null after the finish
    return out


@st.composite
def generated_streams(draw: st.DrawFn) -> bytes:
    """A well-formed chat stream: n choices interleaved, maybe a usage chunk, maybe [DONE]."""
    n = draw(st.integers(1, 3))
    per_choice = [draw(_choice_deltas(i)) for i in range(n)]
    fingerprint = draw(st.sampled_from([None, "fp_gen"]))
    positions = [0] * n
    chunks = []
    while any(positions[i] < len(per_choice[i]) for i in range(n)):
        # A choice first appears only after the one before it, as OpenAI sends them.
        ready = [
            i
            for i in range(n)
            if positions[i] < len(per_choice[i]) and (i == 0 or positions[i - 1] > 0)
        ]
        i = draw(st.sampled_from(ready))
        chunks.append(chunk(per_choice[i][positions[i]], system_fingerprint=fingerprint))
        positions[i] += 1
    if draw(st.booleans()):
        usage = {
            "prompt_tokens": 120,
            "completion_tokens": 40,
            "total_tokens": 160,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 12},
        }
        chunks.append(chunk(system_fingerprint=fingerprint, usage=usage))
    done = draw(st.booleans())
    end = draw(st.sampled_from([b"\n", b"\r\n"]))
    return sse(*chunks, done=done).replace(b"\n", end)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated_streams())
def test_generated_stream_agrees_with_the_sdk(body: bytes) -> None:
    snapshot, raised = sdk_replay(body)
    assert raised is None
    result = reassemble(body)
    assert facts(result.response) == facts(snapshot)
    assert result.truncated is not body.endswith((b"[DONE]\n\n", b"[DONE]\r\n\r\n"))


# --- where the SDK is wrong, checked against the wire format ---------------------------


def test_repeated_tool_call_id_and_name_are_not_concatenated() -> None:
    # Some servers repeat id and name in every fragment; the SDK gives `call_Acall_A`.
    first = {
        "index": 0,
        "id": "call_A",
        "type": "function",
        "function": {"name": "get", "arguments": '{"a":'},
    }
    again = {
        "index": 0,
        "id": "call_A",
        "type": "function",
        "function": {"name": "get", "arguments": "1}"},
    }
    body = sse(
        chunk(delta(tool_calls=[first])),
        chunk(delta(tool_calls=[again])),
        chunk(delta(finish_reason="tool_calls")),
    )
    message = reassemble(body).response["choices"][0]["message"]  # type: ignore[index]
    assert message["tool_calls"] == [
        {"id": "call_A", "type": "function", "function": {"name": "get", "arguments": '{"a":1}'}}
    ]
    snapshot, _ = sdk_replay(body)
    assert snapshot is not None
    assert snapshot["choices"][0]["message"]["tool_calls"][0]["id"] == "call_Acall_A"
    assert snapshot["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "getget"


def test_usage_is_not_erased_by_a_later_chunk_without_usage() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    body = sse(
        chunk(delta(content="hi", finish_reason="stop")), chunk(usage=usage), chunk(usage=None)
    )
    assert reassemble(body).response["usage"] == usage  # type: ignore[index]
    snapshot, _ = sdk_replay(body)
    assert snapshot is not None and snapshot["usage"] is None


def test_numbers_inside_deltas_are_replaced_not_summed() -> None:
    audio_1 = {"id": "audio_1", "expires_at": 1700000100, "transcript": "Hel"}
    audio_2 = {"id": "audio_1", "expires_at": 1700000100, "transcript": "lo"}
    body = sse(chunk(delta(audio=audio_1)), chunk(delta(audio=audio_2, finish_reason="stop")))
    message = reassemble(body).response["choices"][0]["message"]  # type: ignore[index]
    assert message["audio"] == {"id": "audio_1", "expires_at": 1700000100, "transcript": "Hello"}
    snapshot, _ = sdk_replay(body)
    assert snapshot is not None
    assert snapshot["choices"][0]["message"]["audio"]["expires_at"] == 3400000200


def test_choices_are_kept_apart_whatever_order_they_first_appear_in() -> None:
    body = sse(
        chunk(delta(1, content="B")),
        chunk(delta(0, content="A")),
        chunk(delta(1, finish_reason="length"), delta(0, finish_reason="stop")),
    )
    choices = reassemble(body).response["choices"]  # type: ignore[index]
    assert [(c["index"], c["message"]["content"], c["finish_reason"]) for c in choices] == [
        (0, "A", "stop"),
        (1, "B", "length"),
    ]


def test_annotations_without_index_are_appended() -> None:
    one = {"type": "url_citation", "url_citation": {"url": "https://a.example"}}
    two = {"type": "url_citation", "url_citation": {"url": "https://b.example"}}
    body = sse(
        chunk(delta(content="x", annotations=[one])),
        chunk(delta(annotations=[two], finish_reason="stop")),
    )
    assert reassemble(body).response["choices"][0]["message"]["annotations"] == [one, two]  # type: ignore[index]
    _, raised = sdk_replay(body)
    assert isinstance(raised, RuntimeError)


def test_done_is_an_exact_match_not_a_prefix() -> None:
    result = reassemble(sse(chunk(delta(content="x")), "[DONE]x", done=False))
    assert result.terminal is None
    assert result.truncated is True
    assert result.dropped == ["data is not a JSON object: '[DONE]x'"]


def test_done_with_surrounding_whitespace_completes() -> None:
    result = reassemble(sse(chunk(delta(content="x")), done=False) + b"data:  [DONE] \r\n\r\n")
    assert (result.terminal, result.truncated) == ("complete", False)


# --- terminal events, errors and garbage -------------------------------------------------


def test_complete_stream_with_usage_chunk() -> None:
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 40,
        "total_tokens": 160,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    body = sse(
        chunk(
            delta(role="assistant", content=""), system_fingerprint="fp_1", service_tier="default"
        ),
        chunk(delta(reasoning_content="Need the weather.")),
        chunk(delta(content="Let me "), obfuscation="abc"),
        chunk(delta(content="check.")),
        chunk(delta(tool_calls=[call])),
        chunk(delta(tool_calls=[{"index": 0, "function": {"arguments": '{"city":'}}])),
        chunk(delta(tool_calls=[{"index": 0, "function": {"arguments": '"Paris"}'}}])),
        chunk(delta(finish_reason="tool_calls")),
        chunk(usage=usage),
    )
    result = reassemble(body)
    assert result == StreamResult(
        response={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "Let me check.",
                        "reasoning_content": "Need the weather.",
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": '{"city":"Paris"}',
                                },
                            }
                        ],
                    },
                    "logprobs": None,
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": usage,
            "system_fingerprint": "fp_1",
            "service_tier": "default",
        },
        terminal="complete",
        truncated=False,
        error=None,
        dropped=[],
    )


def test_openrouter_null_finish_reason_after_stop_keeps_stop() -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}
    body = sse(
        chunk(delta(role="assistant", content="Hello!")),
        chunk(delta(role="assistant", content="", finish_reason="stop")),
        chunk(delta(role="assistant", content=""), usage=usage),
    )
    choice = reassemble(body).response["choices"][0]  # type: ignore[index]
    assert (choice["finish_reason"], choice["message"]["role"]) == ("stop", "assistant")


def test_azure_empty_first_chunk_does_not_hide_id_and_model() -> None:
    filters = [
        {
            "prompt_index": 0,
            "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}},
        }
    ]
    first = {
        "id": "",
        "object": "",
        "created": 0,
        "model": "",
        "choices": [],
        "prompt_filter_results": filters,
    }
    body = sse(first, chunk(delta(content="Hi", finish_reason="stop"), model="gpt-4o-2024-08-06"))
    response = reassemble(body).response
    assert response is not None
    assert (response["id"], response["model"], response["created"]) == (
        "chatcmpl-1",
        "gpt-4o-2024-08-06",
        1700000000,
    )
    assert response["prompt_filter_results"] == filters


def test_logprobs_lists_are_concatenated_per_choice() -> None:
    def lp(token: str) -> dict[str, Any]:
        return {"token": token, "logprob": -0.5, "bytes": list(token.encode()), "top_logprobs": []}

    body = sse(
        chunk(delta(content="Fo", logprobs={"content": [lp("Fo")], "refusal": None})),
        chunk(
            delta(
                content="o!",
                logprobs={"content": [lp("o!")], "refusal": None},
                finish_reason="stop",
            )
        ),
    )
    choice = reassemble(body).response["choices"][0]  # type: ignore[index]
    assert choice["logprobs"] == {"content": [lp("Fo"), lp("o!")], "refusal": None}


def test_openrouter_error_chunk_then_done_ends_with_error() -> None:
    usage = {"prompt_tokens": 43, "completion_tokens": 10, "total_tokens": 53}
    error_chunk = chunk(
        delta(role="assistant", content=""),
        error={"code": 400, "message": "Token limit reached"},
        usage=usage,
    )
    result = reassemble(sse(chunk(delta(reasoning="We need")), error_chunk))
    assert (result.terminal, result.truncated) == ("error", False)
    assert result.error == {"code": 400, "message": "Token limit reached"}
    assert result.response is not None
    assert result.response["usage"] == usage
    assert result.response["choices"][0]["message"]["reasoning"] == "We need"
    assert "error" not in result.response


def test_groq_error_event_without_type_ends_with_error() -> None:
    error = {"message": "Tool choice is required", "code": "tool_use_failed", "status_code": 400}
    body = (
        sse(chunk(delta(content="maybe")), done=False)
        + b"event: error\ndata: "
        + json.dumps({"error": error}).encode()
        + b"\n\n"
    )
    result = reassemble(body)
    assert (result.terminal, result.truncated, result.error) == ("error", False, error)
    assert result.response["choices"][0]["message"]["content"] == "maybe"  # type: ignore[index]


def test_error_event_with_text_data_keeps_the_text() -> None:
    result = reassemble(b"event: error\ndata: upstream exploded\n\n")
    assert (result.response, result.terminal, result.error) == (
        None,
        "error",
        {"message": "upstream exploded"},
    )


def test_events_after_done_are_ignored() -> None:
    body = sse(chunk(delta(content="a"))) + sse(chunk(delta(content="b")), done=False)
    result = reassemble(body)
    assert result.response["choices"][0]["message"]["content"] == "a"  # type: ignore[index]
    assert result.dropped == ["data after [DONE] ignored"]


def test_garbage_is_dropped_with_notes_and_never_raises() -> None:
    body = sse(
        "not json",
        "[1, 2]",
        {"choices": "nope"},
        {"choices": [{"index": "0", "delta": {}}, {"index": 0, "delta": ["x"]}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": {"index": 0}}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": ["x"], "content": "ok"}}]},
        done=False,
    )
    result = reassemble(body)
    assert result.dropped == [
        "data is not a JSON object: 'not json'",
        "data is not a JSON object: '[1, 2]'",
        "choices is not a list",
        "choice without an integer index",
        "choice 0: delta is not an object",
        "choice 0: tool_calls is not a list",
        "choice 0: tool call fragment is not an object",
    ]
    assert result.truncated is True
    assert result.response is not None
    assert result.response["choices"][0]["message"]["content"] == "ok"


def test_dropped_notes_are_bounded() -> None:
    result = reassemble(sse(*["x"] * 100, done=False))
    assert len(result.dropped) == 33
    assert result.dropped[-1] == "68 more notes not kept"


def test_nothing_usable_gives_no_response() -> None:
    assert reassemble(b": keep-alive\n\n") == StreamResult(
        response=None, terminal=None, truncated=True
    )
    assert reassemble(b"data: [DONE]\n\n") == StreamResult(
        response=None, terminal="complete", truncated=False
    )


def test_tool_call_fragments_without_index() -> None:
    # Some compatible servers omit `index`: a new id starts a new call, fragments continue the last.
    body = sse(
        chunk(delta(tool_calls=[{"id": "a", "function": {"name": "f", "arguments": "{"}}])),
        chunk(delta(tool_calls=[{"function": {"arguments": "}"}}])),
        chunk(
            delta(
                tool_calls=[{"id": "b", "function": {"name": "g", "arguments": "[]"}}],
                finish_reason="tool_calls",
            )
        ),
    )
    calls = reassemble(body).response["choices"][0]["message"]["tool_calls"]  # type: ignore[index]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("a", "f", "{}"),
        ("b", "g", "[]"),
    ]


def test_state_never_raises_on_a_hostile_event() -> None:
    state = chat.new_stream_state()
    state.feed(
        SseEvent(b'{"choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":5}}]}')
    )
    state.feed(SseEvent(b'{"choices":[{"index":0,"delta":{},"logprobs":{"content":[1]}}]}'))
    state.feed(SseEvent(b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":true}]}}]}'))
    result = state.result()
    assert result.response is not None
    assert result.response["choices"][0]["logprobs"] == {"content": [1]}


def test_tool_call_function_that_is_not_an_object_is_replaced_by_a_later_one() -> None:
    body = sse(
        chunk(delta(tool_calls=[{"index": 0, "id": "c", "function": None}])),
        chunk(delta(tool_calls=[{"index": 0, "function": "junk"}])),
        chunk(delta(tool_calls=[{"index": 0, "function": {"name": "f", "arguments": "{}"}}])),
    )
    result = reassemble(body)
    assert result.response["choices"][0]["message"]["tool_calls"] == [  # type: ignore[index]
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ]
    assert result.dropped == []


# --- cut streams -------------------------------------------------------------------------

TOOL_STREAM = "openai-python--test_parse_pydantic_tool-c6aa7e397b71"


def test_cut_stream_keeps_the_partial_reconstruction() -> None:
    body = (CORPUS / "streams/chat" / f"{TOOL_STREAM}.sse").read_bytes()
    cut_at = body.index(b'"arguments":"inburgh')
    result = reassemble(body[:cut_at])
    assert (result.terminal, result.truncated) == (None, True)
    assert result.response is not None
    call = result.response["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "GetWeatherArgs", "arguments": '{"city":"Ed'}
    assert result.response["choices"][0]["finish_reason"] is None
    assert chat.derive(None, result.response).tool_calls == [
        ToolCall(call_id=call["id"], name="GetWeatherArgs", arguments={"_raw": '{"city":"Ed'})
    ]


def test_state_memory_grows_with_the_text_not_with_the_number_of_deltas() -> None:
    # ~20 MB of 5-character deltas: kept as one small str per delta, the state would hold
    # ~65 bytes of object overhead per delta (~8 MB here for 0.6 MB of text). The bound is
    # structural (bytes traced, not time): twice the text (the final join) plus 2 MB.
    count = 120_000
    head = '{"id":"chatcmpl-m","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":'
    first = '{"role":"assistant","tool_calls":[{"index":0,"id":"call_m","type":"function","function":{"name":"f"}}]}'
    lines = [f"data: {head}{first}}}]}}\n\n"]
    for i in range(count):
        word = f" w{i % 1000:03d}"
        delta = (
            f'{{"content":"{word}"}}',
            f'{{"reasoning_content":"{word}"}}',
            f'{{"tool_calls":[{{"index":0,"function":{{"arguments":"{word}"}}}}]}}',
        )[i % 3]
        lines.append(f'data: {head}{delta},"finish_reason":null}}]}}\n\n')
    lines.append("data: [DONE]\n\n")
    body = "".join(lines).encode()
    assert len(body) > 19_000_000

    result, peak = traced_peak(lambda: reassemble_in_chunks("chat", body))

    assert result.response is not None
    message = result.response["choices"][0]["message"]
    texts = [
        message["content"],
        message["reasoning_content"],
        message["tool_calls"][0]["function"]["arguments"],
    ]
    for field, text in enumerate(texts):
        assert text == "".join(f" w{i % 1000:03d}" for i in range(field, count, 3))
    text_bytes = sum(map(len, texts))
    assert text_bytes == 600_000
    assert peak < 2 * text_bytes + 2_000_000


@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: p.stem)
def test_every_cut_before_the_terminal_is_truncated_and_a_prefix(path: Path) -> None:
    body = path.read_bytes()
    full = reassemble(body).response
    assert full is not None
    # Cut before the first terminal event: [DONE], an `event: error`, or a chunk with `error`.
    marks = [body.find(m) for m in (b"data: [DONE]", b"event: error", b'"error":')]
    end = min(body.rfind(b"\n", 0, m) + 1 for m in marks if m != -1)
    for cut_at in sorted({end // 3, end // 2, end - 1}):
        partial = reassemble(body[:cut_at])
        assert (partial.terminal, partial.truncated) == (None, True)
        if partial.response is None:
            continue
        for mine, whole in zip(partial.response["choices"], full["choices"], strict=False):
            for key in ("content", "reasoning_content", "reasoning", "refusal"):
                assert (whole["message"].get(key) or "").startswith(mine["message"].get(key) or "")


def test_manifest_terminal_flags_match() -> None:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    seen = {}
    for entry in manifest:
        if entry["dialect"] == "chat" and entry["kind"] == "stream":
            result = reassemble((CORPUS / entry["file"]).read_bytes())
            errors = "error_event" in entry["features"]
            seen[entry["file"]] = (result.terminal, entry["complete"], errors)
            assert result.terminal == ("error" if errors else "complete")
            assert result.truncated is False
    assert sum(1 for terminal, complete, _ in seen.values() if not complete) == 2
    if FULL_CORPUS:
        assert len(seen) == 92


# --- wire types and schema ---------------------------------------------------------------


def _payloads(body: bytes) -> list[bytes]:
    """Every non-[DONE] data payload of a stream, through our own SSE decoder."""
    from model_call_capture.sse import SseDecoder

    decoder = SseDecoder()
    events = decoder.feed(body) + decoder.finish()
    return [e.data for e in events if e.data.strip() != b"[DONE]"]


def test_every_corpus_chunk_decodes_with_the_chunk_struct() -> None:
    chunks = errors = 0
    error_decoder = msgspec.json.Decoder(chat.ErrorChunk)
    for path in CHAT_STREAMS:
        for data in _payloads(path.read_bytes()):
            if b'"object"' in data:
                chat.decode_chunk(data)
                chunks += 1
            else:
                error_decoder.decode(data)
                errors += 1
    assert errors == 2
    if FULL_CORPUS:
        assert chunks == 3828


def test_the_event_names_chat_declares_are_those_of_the_corpus() -> None:
    # Streams are data-only but for Groq's in-stream error event.
    from model_call_capture.sse import SseDecoder

    names = set()
    for path in CHAT_STREAMS:
        decoder = SseDecoder()
        names |= {e.event for e in decoder.feed(path.read_bytes()) + decoder.finish()}
    assert names - {""} == set(chat.EVENT_NAMES) == {"error"}


def test_every_corpus_chat_body_decodes() -> None:
    responses = msgspec.json.Decoder(chat.Response)
    envelopes = msgspec.json.Decoder(chat.ErrorResponse)
    kinds = {"response": 0, "error": 0}
    for path in CHAT_JSON:
        data = path.read_bytes()
        if b'"choices"' in data:
            responses.decode(data)
            kinds["response"] += 1
        else:
            envelopes.decode(data)
            kinds["error"] += 1
    if FULL_CORPUS:
        assert kinds == {"response": 19, "error": 3}


@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: p.stem)
def test_reassembled_object_decodes_as_a_response(path: Path) -> None:
    response = reassemble(path.read_bytes()).response
    decoded = msgspec.convert(response, chat.Response)
    assert decoded.object == "chat.completion"


def test_chunk_struct_rejects_a_wrong_type_with_its_path() -> None:
    with pytest.raises(
        msgspec.ValidationError, match=r"Expected `int`, got `str` - at `\$.choices\[0\].index`"
    ):
        chat.decode_chunk(
            b'{"id":"c","object":"o","created":1,"model":"m","choices":[{"index":"0","delta":{}}]}'
        )


def test_structs_ignore_unknown_fields() -> None:
    data = b'{"id":"c","object":"o","created":1,"model":"m","choices":[],"x_groq":{"id":"r"},"future":1}'
    assert chat.decode_chunk(data) == chat.ChatCompletionChunk(
        id="c", object="o", created=1, model="m", choices=[]
    )


STRUCTS = [
    chat.Request,
    chat.Response,
    chat.ErrorResponse,
    chat.ChatCompletionChunk,
    chat.ErrorChunk,
]


@pytest.mark.parametrize("struct", STRUCTS, ids=lambda t: t.__name__)
def test_struct_agrees_with_the_schema(struct: type[msgspec.Struct]) -> None:
    assert reduce_struct(struct) == reduce_schema_file(SCHEMA, f"#/$defs/{struct.__name__}")


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS_DIR / SCHEMA).read_text())
    return schema


def _validator(definition: str) -> Draft202012Validator:
    registry: Registry[Any] = schema_registry()
    schema = {"$ref": f"{_schema()['$id']}#/$defs/{definition}"}
    return Draft202012Validator(schema, registry=registry)


def test_schema_document_is_valid_and_described() -> None:
    schema = _schema()
    Draft202012Validator.check_schema(schema)
    assert (
        schema["$id"]
        == "https://model-call-capture.dev/schemas/v1/dialects/openai-chat.schema.json"
    )
    assert schema["examples"]
    assert undescribed_properties(schema) == []
    assert {"Request", "Response", "ChatCompletionChunk", "ChatStreamEvent"} <= set(schema["$defs"])
    for name, definition in schema["$defs"].items():
        assert definition.get("additionalProperties") is not False, name
        for example in definition.get("examples", []):
            assert _validator(name).is_valid(example), name


def test_every_corpus_payload_validates_against_the_stream_event_union() -> None:
    validator = _validator("ChatStreamEvent")
    chunk_validator = _validator("ChatCompletionChunk")
    count = 0
    for path in CHAT_STREAMS:
        for data in _payloads(path.read_bytes()):
            payload = json.loads(data)
            assert validator.is_valid(payload)
            if "object" in payload:
                assert chunk_validator.is_valid(payload), data[:200]
            count += 1
    if FULL_CORPUS:
        assert count == 3830
    assert _validator("ChatStreamEvent").is_valid({"type": "future.event"})


def test_every_corpus_response_body_validates() -> None:
    response, envelope = _validator("Response"), _validator("ErrorResponse")
    for path in CHAT_JSON:
        body = json.loads(path.read_bytes())
        assert (response if "choices" in body else envelope).is_valid(body), path.name


# --- snapshots ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: p.stem)
def test_reassembled_object_snapshot(path: Path, snapshot_json: SnapshotAssertion) -> None:
    result = reassemble(path.read_bytes())
    assert {
        "terminal": result.terminal,
        "truncated": result.truncated,
        "error": result.error,
        "dropped": result.dropped,
        "response": result.response,
    } == snapshot_json


# --- the dialect module ------------------------------------------------------------------


def test_dialect_is_registered_by_name_and_path() -> None:
    assert get_dialect("chat") is cast(DialectModule, chat)
    assert dialect_for_path("/v1/chat/completions") == "chat"
    assert dialect_for_path("/v1/chat/completions/") == "chat"


def test_one_shot_reassembly() -> None:
    body = sse(chunk(delta(content="hi", finish_reason="stop")))
    assert reassemble_stream("chat", body) == {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "hi"},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
    }


# --- derive ------------------------------------------------------------------------------

RESPONSE = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Let me check.",
                "reasoning_content": "Need the weather.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": '{"tz":'},
                    },
                ],
            },
            "finish_reason": "tool_calls",
        },
        {"index": 1, "message": {"role": "assistant", "content": "Other"}, "finish_reason": "stop"},
    ],
    "usage": {
        "prompt_tokens": 120,
        "completion_tokens": 40,
        "total_tokens": 160,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 12},
    },
}


@FORMS
def test_derive_from_a_full_response(form: Any) -> None:
    assert chat.derive(form({"model": "gpt-4o"}), form(RESPONSE)) == Derived(
        response_id="chatcmpl-1",
        model="gpt-4o-2024-08-06",
        response_status=None,
        finish_reason="tool_calls",
        tokens_in=120,
        tokens_out=40,
        tokens_reasoning=12,
        tokens_total=160,
        cached_tokens=64,
        cache_hit=True,
        cache_creation_tokens=None,
        tool_calls=[
            ToolCall(call_id="call_1", name="get_weather", arguments={"city": "Paris"}),
            ToolCall(call_id="call_2", name="get_time", arguments={"_raw": '{"tz":'}),
        ],
        reasoning_content="Need the weather.",
    )


def test_derive_with_nothing() -> None:
    assert chat.derive(None, None) == Derived()
    assert chat.derive({"model": "m"}, {}) == Derived(model="m")


def test_derive_falls_back_to_the_request_model_and_reasoning_field() -> None:
    response = {
        "id": "x",
        "model": "",
        "choices": [{"index": 0, "message": {"reasoning": "hmm"}, "finish_reason": None}],
    }
    derived = chat.derive({"model": "fake-model-1"}, response)
    assert (derived.model, derived.reasoning_content, derived.finish_reason) == (
        "fake-model-1",
        "hmm",
        None,
    )


@FORMS
@pytest.mark.parametrize("bad", [-1, 1.5, "12", True, None, [3], {"n": 3}])
def test_derive_non_integer_or_negative_counts_are_unknown(bad: Any, form: Any) -> None:
    usage = {"prompt_tokens": bad, "completion_tokens": bad, "total_tokens": bad}
    usage |= {
        "prompt_tokens_details": {"cached_tokens": bad},
        "completion_tokens_details": {"reasoning_tokens": bad},
    }
    derived = chat.derive(None, form({"usage": usage}))
    assert [
        derived.tokens_in,
        derived.tokens_out,
        derived.tokens_total,
        derived.cached_tokens,
        derived.cache_hit,
    ] == [None] * 5
    assert derived.tokens_reasoning is None


def test_derive_total_from_parts_and_cache_miss() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    derived = chat.derive(None, {"usage": usage})
    assert (derived.tokens_total, derived.cached_tokens, derived.cache_hit) == (15, 0, False)


def test_derive_deepseek_cache_hit_tokens() -> None:
    usage = {
        "prompt_tokens": 6,
        "completion_tokens": 2,
        "prompt_cache_hit_tokens": 4,
        "prompt_cache_miss_tokens": 2,
    }
    derived = chat.derive(None, {"usage": usage})
    assert (derived.tokens_in, derived.cached_tokens, derived.cache_hit) == (6, 4, True)


@FORMS
def test_derive_legacy_function_call_and_odd_tool_calls(form: Any) -> None:
    message = {
        "function_call": {"name": "f", "arguments": "{}"},
        "tool_calls": [
            "junk",
            {"id": "", "function": {"name": "g", "arguments": {"already": "parsed"}}},
            {"id": "c3"},
        ],
    }
    derived = chat.derive(None, form({"choices": [{"index": 0, "message": message}]}))
    assert derived.tool_calls == [
        ToolCall(call_id=None, name="g", arguments={"already": "parsed"}),
        ToolCall(call_id="c3", name=None, arguments=None),
        ToolCall(call_id=None, name="f", arguments={}),
    ]


# --- derive against NeMo Gym -------------------------------------------------------------

GYM_DIFFERENCES = {
    ("matrix/chat-json-nan", "response_status"): (
        None,
        "Gym reads `status` from any response; a chat completion has none, so ours is always null",
    ),
}
"""(rollout, field) -> (our value, reason) where derive() deliberately differs from Gym."""

OUR_REASSEMBLY_DIFFERENCES = {
    ("matrix/chat-sse-multichoice", "finish_reason"): (
        "stop",
        "Gym merges the n>1 choices into one message with the last finish_reason; we keep choices apart and "
        "describe choice 0",
    ),
    **{
        ("matrix/chat-sse-only-usage", field): (
            value,
            "Gym records no response for a stream without choices; we keep the usage chunk",
        )
        for field, value in [
            ("response_id", "chatcmpl-1"),
            ("tokens_in", 120),
            ("tokens_out", 40),
            ("tokens_reasoning", 12),
            ("tokens_total", 160),
            ("cached_tokens", 64),
            ("cache_hit", True),
        ]
    },
    **{
        ("matrix/chat-sse-raise-mid", field): (
            value,
            "Gym drops the partial reconstruction when the app raises mid-stream; we keep it",
        )
        for field, value in [
            ("response_id", "chatcmpl-1"),
            ("reasoning_content", "Need the weather."),
        ]
    },
    **{
        ("matrix/chat-sse-uppercase-ct", field): (
            value,
            "Gym does not recognise `Text/Event-Stream` and records a parse error; the stream is complete",
        )
        for field, value in [
            ("response_id", "chatcmpl-1"),
            ("finish_reason", "tool_calls"),
            ("tokens_in", 120),
            ("tokens_out", 40),
            ("tokens_reasoning", 12),
            ("tokens_total", 160),
            ("cached_tokens", 64),
            ("cache_hit", True),
            (
                "tool_calls",
                [{"call_id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
            ),
            ("reasoning_content", "Need the weather."),
        ]
    },
    **{
        ("timeline/tl-cancelled", field): (
            value,
            "Gym records nothing of a cancelled stream; we keep what arrived",
        )
        for field, value in [("response_id", "chatcmpl-1"), ("model", "fake-model-1")]
    },
}
"""(rollout, field) -> (our value, reason) where our reassembly of Gym's raw stream differs."""


def gym_chat_records() -> list[tuple[str, dict[str, Any]]]:
    """(rollout, record) for every chat record in Gym's expected files."""
    out = []
    for path in sorted(GYM_REFERENCE.glob("**/*.expected.json")):
        rollout = str(path.relative_to(GYM_REFERENCE)).removesuffix(".expected.json")
        for record in json.loads(path.read_text()).get("records", []):
            if record.get("dialect") == "chat":
                out.append((rollout, record))
    return out


def _compare(
    rollout: str, record: dict[str, Any], derived: Derived, allowed: dict[Any, Any]
) -> tuple[int, int]:
    ours = msgspec.to_builtins(derived)
    same = different = 0
    for field in DERIVED_FIELDS:
        if (rollout, field) in allowed:
            expected, _reason = allowed[(rollout, field)]
            assert ours[field] == expected, (rollout, field)
            assert record[field] != expected, (rollout, field)
            different += 1
        else:
            assert ours[field] == record[field], (rollout, field)
            same += 1
    return same, different


def test_derive_matches_gym_on_every_chat_record(gym_reference_dir: Path) -> None:
    same = different = 0
    records = gym_chat_records()
    for rollout, record in records:
        s, d = _compare(
            rollout, record, chat.derive(record["request"], record["response"]), GYM_DIFFERENCES
        )
        same, different = same + s, different + d
    assert (same, different) == (len(records) * 13 - 1, 1)
    if FULL_GYM_REFERENCE:
        assert len(records) == 255


def test_every_gym_chat_request_decodes_with_the_request_struct(gym_reference_dir: Path) -> None:
    requests = [
        record["request"] for _, record in gym_chat_records() if record["request"] is not None
    ]
    decoded = [msgspec.convert(request, chat.Request) for request in requests]
    if FULL_GYM_REFERENCE:
        assert len(decoded) == 255
    assert {d.model for d in decoded} == {"fake-model-1", None}


def test_our_reassembly_of_gym_streams_matches_gym_records(gym_reference_dir: Path) -> None:
    same = different = streams = 0
    for rollout, record in gym_chat_records():
        raw = record.get("response_raw")
        if not raw or not raw.lstrip().startswith(("data:", "event:", ":")):
            continue
        streams += 1
        response = reassemble_stream("chat", raw.encode())
        s, d = _compare(
            rollout, record, chat.derive(record["request"], response), OUR_REASSEMBLY_DIFFERENCES
        )
        same, different = same + s, different + d
    if FULL_GYM_REFERENCE:
        assert streams == 23
    assert different == len(OUR_REASSEMBLY_DIFFERENCES)
    assert same == streams * 13 - different


_scalar = st.none() | st.booleans() | st.integers(-1, 2) | st.text(max_size=3)
_hostile = (
    _scalar
    | st.lists(_scalar, max_size=2)
    | st.dictionaries(
        st.sampled_from(["index", "id", "text", "content", "type"]), _scalar, max_size=2
    )
)


def _optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


_function = _hostile | _optional(name=_hostile, arguments=_hostile)
_tool_call = _hostile | _optional(
    index=st.integers(0, 2) | _hostile, id=_hostile, type=_hostile, function=_function
)
_delta = _hostile | _optional(
    role=_hostile,
    content=_hostile,
    reasoning=_hostile,
    refusal=_hostile,
    tool_calls=_hostile | st.lists(_tool_call, max_size=3),
    annotations=_hostile,
    audio=_hostile,
)
_logprobs = _hostile | st.dictionaries(
    st.sampled_from(["content", "refusal"]), _hostile, max_size=2
)
_choice = _hostile | _optional(
    index=st.integers(0, 2) | _hostile,
    delta=_delta,
    finish_reason=_hostile,
    logprobs=_logprobs,
    extra=_hostile,
)
_hostile_chunk = _optional(
    id=_hostile,
    model=_hostile,
    created=_hostile,
    choices=_hostile | st.lists(_choice, max_size=3),
    usage=_hostile,
    error=_hostile,
    provider=_hostile,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_hostile_chunk, max_size=6))
def test_hostile_chunks_never_reach_an_internal_error(payloads: list[dict[str, Any]]) -> None:
    # Whatever the types, the state must handle them by its rules, not by its exception net.
    state = chat.new_stream_state()
    for payload in payloads:
        state.feed(SseEvent(json.dumps(payload).encode()))
    result = state.result()
    assert not [note for note in result.dropped if note.startswith("event not used")]
    if result.response is not None:
        msgspec.json.encode(result.response)
