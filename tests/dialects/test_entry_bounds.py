"""A stream of many tiny new entries is held to its dialect's bound (`MAX_ENTRIES`).

A fragment of a few bytes that opens a new choice, tool call, content block, output item
or part creates an entry of hundreds of bytes, outside the server's memory budget: 16 MB
of such fragments grew a chat state by 560 MB. Past the bound a new entry is dropped with
a note, which makes the stream count as gone wrong (its raw text is then kept); fragments
of existing entries keep merging. Memory is measured with tracemalloc (`memory_tools`),
never timed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_tools import reassemble_in_chunks, traced_peak
from model_call_capture.dialects import DIALECTS
from model_call_capture.dialects.chat import _choice
from model_call_capture.dialects.completions import _stream as completions_stream
from model_call_capture.dialects.messages import _state as messages_state
from model_call_capture.dialects.responses import _state as responses_state
from model_call_capture.reassembly import StreamReassembler

BOUND = 4096
"""Each dialect's `MAX_ENTRIES`, written out: the tests check the figure the docs give."""

N = 60_000
"""New entries sent: far past the bound, so that unbounded state would show in the peak."""

PEAK = 12_000_000
"""Bytes the reassembly may allocate at its peak: the bound's entries (a few hundred bytes
each, and their copy in the built response) and the transport chunks, with a margin. The
60,000 entries unbounded took 40 to 80 MB."""


def test_the_bound_is_the_same_figure_in_every_dialect() -> None:
    assert _choice.MAX_ENTRIES == BOUND
    assert completions_stream.MAX_ENTRIES == BOUND
    assert messages_state.MAX_ENTRIES == BOUND
    assert responses_state.MAX_ENTRIES == BOUND


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_dialect_bounds_its_notes_the_same_way(dialect: str) -> None:
    # One bounded-notes helper (`dialects.base.DroppedNotes`): the first 32 notes are kept,
    # the rest counted in one last note spelled the same in every dialect.
    reassembler = StreamReassembler(dialect)
    reassembler.feed(b"".join(b"data: not json %d\n\n" % i for i in range(100)))
    dropped = reassembler.finish().dropped
    assert len(dropped) == 33
    assert "not json 0" in dropped[0] or "not a JSON object" in dropped[0]
    assert dropped[-1] == "68 more notes not kept"


def _chat(chunks: list[dict[str, Any]]) -> bytes:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    lines = [b"data: " + json.dumps({**head, **c}).encode() + b"\n\n" for c in chunks]
    return b"".join(lines) + b"data: [DONE]\n\n"


def _choices(*deltas: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return {"choices": [{"index": index, "delta": d} for d in deltas]}


def _bounded_note(dropped: list[str], what: str) -> None:
    assert [n for n in dropped if f"further new {what} dropped: past 4096" in n], dropped


def test_chat_choices_past_the_bound_are_dropped() -> None:
    chunks = [_choices({"content": "x"}, index=i) for i in range(N)]
    chunks.append(_choices({"content": "y"}, index=0))  # an existing choice keeps merging
    body = _chat(chunks)
    result, peak = traced_peak(lambda: reassemble_in_chunks("chat", body))
    assert result.response is not None
    choices = result.response["choices"]
    assert len(choices) == BOUND
    assert [c["index"] for c in choices] == list(range(BOUND))
    assert choices[0]["message"]["content"] == "xy"
    assert choices[-1]["message"]["content"] == "x"
    assert result.dropped == ["choice 4096 and further new choices dropped: past 4096"]
    assert peak < PEAK


def test_completions_choices_past_the_bound_are_dropped() -> None:
    head = {"id": "c", "object": "text_completion", "created": 1, "model": "m"}
    chunks = [{**head, "choices": [{"index": i, "text": "x"}]} for i in range(N)]
    chunks.append({**head, "choices": [{"index": 0, "text": "y"}]})  # an existing one merges
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    result, peak = traced_peak(lambda: reassemble_in_chunks("completions", body))
    assert result.response is not None
    choices = result.response["choices"]
    assert [c["index"] for c in choices] == list(range(BOUND))
    assert (choices[0]["text"], choices[-1]["text"]) == ("xy", "x")
    assert result.dropped == ["choice 4096 and further new choices dropped: past 4096"]
    assert peak < PEAK


def _calls(result: Any) -> list[list[dict[str, Any]]]:
    return [c["message"].get("tool_calls", []) for c in result.response["choices"]]


@pytest.mark.parametrize("indexed", [False, True], ids=["ids-only", "indexed"])
def test_chat_tool_calls_past_the_bound_are_dropped(indexed: bool) -> None:
    def call(i: int) -> dict[str, Any]:
        return {"index": i} if indexed else {"id": f"c{i}"}

    chunks = [
        _choices({"tool_calls": [call(i) for i in range(j, j + 100)]}) for j in range(0, N, 100)
    ]
    # A kept call still merges: by its index, or (no index) by a known id, which continues
    # the last call kept. A fragment without either continues the dropped call: dropped.
    kept = {"index": 0} if indexed else {"id": "c4095"}
    chunks.append(_choices({"tool_calls": [{"function": {"arguments": "[]"}}]}))
    chunks.append(_choices({"tool_calls": [{**kept, "function": {"arguments": "{}"}}]}))
    body = _chat(chunks)
    result, peak = traced_peak(lambda: reassemble_in_chunks("chat", body))
    (calls,) = _calls(result)
    assert len(calls) == BOUND
    arguments = [c["function"]["arguments"] for c in calls]
    if indexed:  # the fragment without an index continues the last call, which was kept
        assert arguments == ["{}"] + [""] * (BOUND - 2) + ["[]"]
    else:
        assert arguments == [""] * (BOUND - 1) + ["{}"]
        assert [c["id"] for c in calls] == [f"c{i}" for i in range(BOUND)]
    _bounded_note(result.dropped, "tool calls")
    assert len(result.dropped) == 1
    assert peak < PEAK


def test_chat_tool_calls_of_all_choices_share_one_bound() -> None:
    # 100 calls in each of 600 choices: a bound per choice alone would keep them all.
    chunks = [
        _choices({"tool_calls": [{"index": i} for i in range(100)]}, index=c) for c in range(600)
    ]
    body = _chat(chunks)
    result, peak = traced_peak(lambda: reassemble_in_chunks("chat", body))
    calls = _calls(result)
    assert len(calls) == 600
    assert sum(map(len, calls)) == BOUND
    assert [len(c) for c in calls[:42]] == [100] * 40 + [96, 0]
    _bounded_note(result.dropped, "tool calls")
    assert peak < PEAK


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _message_start(content: list[Any]) -> dict[str, Any]:
    message = {"id": "m", "type": "message", "role": "assistant", "content": content}
    return {"type": "message_start", "message": message}


def test_messages_blocks_past_the_bound_are_dropped() -> None:
    events = [_message_start([])]
    events += [
        {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}
        for i in range(N)
    ]
    events += [
        {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": "a"}}
        for i in (0, BOUND - 1, BOUND)
    ]
    events.append({"type": "message_stop"})
    body = _sse(events)
    result, peak = traced_peak(lambda: reassemble_in_chunks("messages", body))
    assert result.response is not None
    content = result.response["content"]
    assert len(content) == BOUND
    assert content[0] == content[-1] == {"type": "text", "text": "a"}
    assert result.dropped == [
        "block 4096 and further new blocks dropped: past 4096",
        "text_delta for unknown block 4096",
    ]
    assert peak < PEAK


def test_messages_blocks_of_the_envelope_count_against_the_bound() -> None:
    events = [_message_start([{"type": "text", "text": "t"}] * (BOUND + 10))]
    events.append({"type": "message_stop"})
    result = reassemble_in_chunks("messages", _sse(events))
    assert result.response is not None
    assert len(result.response["content"]) == BOUND
    assert result.dropped == ["block 4096 and further new blocks dropped: past 4096"]


def _responses(events: list[dict[str, Any]]) -> bytes:
    created = {"type": "response.created", "response": {"id": "r", "status": "in_progress"}}
    return _sse([created, *events])  # no final response: the output is rebuilt


def test_responses_items_past_the_bound_are_dropped() -> None:
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": i, "item": {"type": "x"}}
        for i in range(N)
    ]
    events += [
        {"type": "response.function_call_arguments.delta", "output_index": i, "delta": "{}"}
        for i in (0, BOUND)
    ]
    body = _responses(events)
    result, peak = traced_peak(lambda: reassemble_in_chunks("responses", body))
    assert result.response is not None
    output = result.response["output"]
    assert len(output) == BOUND
    assert output[0] == {"type": "x", "arguments": "{}"}
    assert output[-1] == {"type": "x"}
    assert result.dropped == [
        "response.output_item.added at output_index 4096 and further new items dropped: past 4096"
    ]
    assert peak < PEAK


def _part_event(kind: str, i: int) -> dict[str, Any]:
    if kind == "content_part":
        return {
            "type": "response.content_part.added",
            "output_index": 0,
            "content_index": i,
            "part": {"type": "output_text", "text": ""},
        }
    if kind == "text_delta":
        return {
            "type": "response.output_text.delta",
            "output_index": 0,
            "content_index": i,
            "delta": "a",
            "logprobs": [{"token": "a", "logprob": 0}],
        }
    if kind == "annotation":
        return {
            "type": "response.output_text.annotation.added",
            "output_index": 0,
            "content_index": i,
            "annotation": 1,
        }
    return {
        "type": "response.shell_call_command.delta",
        "output_index": 0,
        "command_index": i,
        "delta": "a",
    }


@pytest.mark.parametrize("kind", ["content_part", "text_delta", "annotation", "shell_command"])
def test_responses_parts_past_the_bound_are_dropped(kind: str) -> None:
    item_type = "shell_call" if kind == "shell_command" else "message"
    item = {"type": item_type, "content": []}
    events = [{"type": "response.output_item.added", "output_index": 0, "item": item}]
    events += [_part_event(kind, i) for i in range(N)]
    body = _responses(events)
    result, peak = traced_peak(lambda: reassemble_in_chunks("responses", body))
    assert result.response is not None
    (built,) = result.response["output"]
    if kind == "shell_command":
        assert built["action"]["commands"] == ["a"] * BOUND
    else:
        assert len(built["content"]) == BOUND
    assert len(result.dropped) == 1
    _bounded_note(result.dropped, "parts")
    assert result.dropped[0].endswith(" at 4096 and further new parts dropped: past 4096")
    assert peak < PEAK


def test_responses_parts_of_all_items_share_one_bound() -> None:
    events: list[dict[str, Any]] = []
    for item in range(600):
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": item,
                "item": {"type": "message"},
            }
        )
        events += [{**_part_event("content_part", i), "output_index": item} for i in range(100)]
    result = reassemble_in_chunks("responses", _responses(events))
    assert result.response is not None
    output = result.response["output"]
    assert len(output) == 600
    assert sum(len(item.get("content", [])) for item in output) == BOUND
    _bounded_note(result.dropped, "parts")
