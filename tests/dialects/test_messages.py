"""Anthropic Messages: wire types, schema, stream reassembly and derivation.

References: the official `anthropic` SDK (a real client replaying recorded bytes through an
`httpx2.MockTransport`, and its `accumulate_event` for generated streams), the recorded
corpus in ../shared/corpus, and NeMo Gym's derived records in ../shared/gym-reference.
Where the SDK is wrong, the expected value is spelled out from the wire format instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import jsonschema
import msgspec
import pytest
from anthropic.lib.streaming._beta_messages import accumulate_event
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion

from conftest import CORPUS, FULL_CORPUS, FULL_GYM_REFERENCE, require_capability, state_failures
from memory_tools import reassemble_in_chunks, traced_peak
from model_call_capture.contracts import ToolCall
from model_call_capture.dialects import messages
from model_call_capture.dialects.base import Derived, StreamResult
from model_call_capture.reassembly import StreamReassembler
from schema_tools import reduce_schema_file, reduce_struct

from .conftest import DERIVED_FIELDS, FORMS, undescribed_properties

SCHEMA_PATH = "v1/dialects/anthropic-messages.schema.json"
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / SCHEMA_PATH
STREAMS = sorted(p.name for p in (CORPUS / "streams" / "messages").glob("*.sse"))
BODIES = sorted(p.name for p in (CORPUS / "json" / "messages").glob("*.json"))

SDK_WRONG = {
    # The tool input is cut mid-string (stop_reason max_tokens, no content_block_stop):
    # the SDK's partial JSON parser returns an object that looks whole; we keep the text.
    "anthropic-sdk-python--incomplete_partial_json_response.sse",
    # A second message_start while the first message is open: the SDK keeps the first
    # envelope, appends the second message's blocks and concatenates both tool inputs.
    "vercel-ai--spliced-message-start.sse",
}


# --- helpers ----------------------------------------------------------------------------


def reassemble(body: bytes) -> StreamResult:
    """Our reassembly of a whole body."""
    reassembler = StreamReassembler("messages")
    reassembler.feed(body)
    return reassembler.finish()


def sdk_message(body: bytes) -> dict[str, Any]:
    """The SDK's final message: a real client streaming the recorded bytes."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = anthropic.Anthropic(
        api_key="test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with client.beta.messages.stream(
        model="claude-replay", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_message().model_dump(
            mode="json", by_alias=True, exclude_none=True, warnings=False
        )


def sdk_accumulate(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """The SDK's accumulation of decoded event payloads (ping and error are the client's job)."""
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for payload in payloads:
        if payload["type"] == "ping":
            continue
        snapshot = accumulate_event(
            event=payload,  # type: ignore[arg-type]
            current_snapshot=snapshot,
            json_bufs=json_bufs,
            request_headers=httpx2.Headers(),
        )
    assert snapshot is not None
    return snapshot.model_dump(mode="json", by_alias=True, exclude_none=True, warnings=False)


def strip_none(value: Any) -> Any:
    """The value without null members (the SDK's models fill every absent field with None)."""
    if isinstance(value, dict):
        return {k: strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_none(v) for v in value]
    return value


def wire_data(body: bytes) -> list[tuple[str, str]]:
    """(event name, data) of each event, split with plain string operations as an oracle."""
    text = body.decode("utf-8").replace("\r\n", "\n")
    events = []
    for chunk in text.split("\n\n"):
        name, data = "", []
        for line in chunk.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if data:
            events.append((name, "\n".join(data)))
    return events


def wire_events(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, payload) of each event, decoded with the stdlib."""
    return [(name, json.loads(data)) for name, data in wire_data(body)]


def comparable(message: dict[str, Any]) -> dict[str, Any]:
    """The facts compared with the SDK: id, model, stop fields, each usage counter, blocks."""
    return {
        "id": message.get("id"),
        "model": message.get("model"),
        "stop_reason": message.get("stop_reason"),
        "stop_sequence": message.get("stop_sequence"),
        "usage": strip_none(message.get("usage")),
        "content": strip_none(message.get("content")),
    }


def corpus_stream(name: str) -> bytes:
    return (CORPUS / "streams" / "messages" / name).read_bytes()


def sse(*events: dict[str, Any] | tuple[str, str], named: bool = True) -> bytes:
    """SSE bytes of payloads (dicts), or of (event name, raw data) pairs."""
    out = []
    for event in events:
        if isinstance(event, tuple):
            out.append(f"event: {event[0]}\ndata: {event[1]}\n\n")
        else:
            head = f"event: {event['type']}\n" if named else ""
            out.append(f"{head}data: {json.dumps(event)}\n\n")
    return "".join(out).encode()


START: dict[str, Any] = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 1},
    },
}
STOP = {"type": "message_stop"}


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


def message_delta(stop_reason: str, usage: dict[str, Any], **delta_fields: Any) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, **delta_fields},
        "usage": usage,
    }


# --- agreement with the SDK on the recorded corpus --------------------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_corpus_stream_agrees_with_sdk(name: str, corpus_dir: Path) -> None:
    body = corpus_stream(name)
    result = reassemble(body)
    assert result.terminal == "complete"
    assert result.truncated is False
    assert result.response is not None
    agrees = comparable(result.response) == comparable(sdk_message(body))
    # Where the SDK is wrong, the wire format is pinned by the tests below.
    assert agrees is (name not in SDK_WRONG)


def test_corpus_agreement_count(corpus_dir: Path) -> None:
    # 116 recorded streams; all but the two the SDK gets wrong agree field for field.
    assert len(SDK_WRONG & set(STREAMS)) == 2
    if FULL_CORPUS:
        assert len(STREAMS) == 116


def test_cut_tool_input_is_kept_as_raw_text(corpus_dir: Path) -> None:
    body = corpus_stream("anthropic-sdk-python--incomplete_partial_json_response.sse")
    fragments = [
        p["delta"]["partial_json"]
        for _, p in wire_events(body)
        if p["type"] == "content_block_delta" and p["index"] == 1
    ]
    result = reassemble(body)
    assert result.response is not None
    tool = result.response["content"][1]
    assert tool["input"] == {"_raw": "".join(fragments)}
    assert tool["input"]["_raw"].startswith(
        '{"filename": "taxes.txt", "lines_of_text": [\n"# COMPREHENSIVE'
    )
    assert result.response["stop_reason"] == "max_tokens"
    assert result.dropped == ["block 1: tool input is not valid JSON; kept as _raw"]
    # The SDK returns a parsed object that hides the cut.
    assert sdk_message(body)["content"][1]["input"]["filename"] == "taxes.txt"


def test_spliced_message_start_keeps_the_message_that_finished(corpus_dir: Path) -> None:
    result = reassemble(corpus_stream("vercel-ai--spliced-message-start.sse"))
    assert result.terminal == "complete"
    assert result.response == {
        "id": "msg_second",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Let me call the tool.", "signature": "sig-second"},
            {
                "type": "tool_use",
                "id": "toolu_second",
                "name": "test-tool",
                "input": {"value": "Sparkle Day"},
            },
        ],
        "model": "claude-3-haiku-20240307",
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 17, "output_tokens": 65},
    }
    assert result.dropped == [
        "message_start 'msg_second' replaced unfinished message 'msg_first' (2 blocks)"
    ]


def test_duplicate_message_start_is_ignored(corpus_dir: Path) -> None:
    result = reassemble(corpus_stream("vercel-ai--duplicate-message-start.sse"))
    assert result.response is not None
    assert result.response["id"] == "msg_dup"
    assert result.response["content"] == [{"type": "text", "text": "Hello, World!"}]
    assert result.response["usage"] == {"input_tokens": 17, "output_tokens": 227}
    assert result.dropped == ["duplicate message_start for 'msg_dup'"]


def test_streams_without_final_blank_line_complete(corpus_dir: Path) -> None:
    body = corpus_stream("anthropic-sdk-python--basic_response.sse")
    assert not body.endswith(b"\n\n")
    assert reassemble(body).terminal == "complete"


def test_whitespace_padded_payloads(corpus_dir: Path) -> None:
    padding = re.compile(rb"^data: .*[^\s] +\}\s*$", re.MULTILINE)
    padded = [n for n in STREAMS if padding.search(corpus_stream(n))]
    assert padded
    if FULL_CORPUS:
        assert len(padded) == 70
    for name in padded:
        assert reassemble(corpus_stream(name)).terminal == "complete", name


@pytest.mark.parametrize("name", STREAMS)
def test_corpus_snapshot(name: str, corpus_dir: Path, snapshot_json: SnapshotAssertion) -> None:
    result = reassemble(corpus_stream(name))
    assert {
        "response": result.response,
        "terminal": result.terminal,
        "truncated": result.truncated,
        "error": result.error,
        "dropped": result.dropped,
    } == snapshot_json


@pytest.mark.parametrize("name", STREAMS)
def test_corpus_events_decode_typed(name: str, corpus_dir: Path) -> None:
    body = corpus_stream(name)
    for event_name, data in wire_data(body):
        typed = messages.decode_event(data, event_name)
        assert not isinstance(typed, messages.UnknownEvent), data
        assert msgspec.to_builtins(typed)["type"] == json.loads(data)["type"] == event_name
    # The reassembled message is a Message too.
    result = reassemble(body)
    assert messages.decode_message(msgspec.json.encode(result.response)).id == result.response["id"]  # type: ignore[index]


@pytest.mark.parametrize("name", BODIES)
def test_corpus_json_bodies_decode(name: str, corpus_dir: Path) -> None:
    data = (CORPUS / "json" / "messages" / name).read_bytes()
    if json.loads(data)["type"] == "error":
        typed: Any = msgspec.json.decode(data, type=messages.ErrorEvent)
        assert typed.error.type == "not_found_error"
        return
    message = messages.decode_message(data)
    assert message.id == json.loads(data)["id"]
    for block in json.loads(data)["content"]:
        assert messages.block_view(block) is not None, block["type"]


# --- cut, mutated and arbitrary streams -------------------------------------------------


@pytest.mark.parametrize("name", STREAMS[::4])
def test_cut_streams_keep_the_partial_message(name: str, corpus_dir: Path) -> None:
    body = corpus_stream(name)
    full = reassemble(body).response
    assert full is not None
    last = body.rindex(b"message_stop") - 40
    first = body.index(b"\n\n") + 2  # after message_start
    for cut in sorted({first, max(first, last), *range(first, last, max(1, (last - first) // 7))}):
        result = reassemble(body[:cut])
        assert result.truncated is True
        assert result.terminal is None
        assert result.response is not None
        assert result.response["id"] == full["id"]
        for part, whole in zip(result.response["content"], full["content"], strict=False):
            for key in ("text", "thinking"):
                if key in whole:
                    assert whole[key].startswith(part[key])


# Raw bytes alone almost never frame an SSE event, so the state would never be fed: mix
# them with arbitrary bytes framed as events.
_arbitrary_sse = st.lists(
    st.binary(max_size=60) | st.binary(max_size=80).map(lambda data: b"data: " + data + b"\n\n"),
    max_size=12,
).map(b"".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_arbitrary_sse)
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    result = reassemble(data)
    assert result.truncated is (result.terminal is None)
    assert state_failures(result.dropped) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_real_streams_never_raise(data: st.DataObject) -> None:
    if not STREAMS:
        require_capability("the recorded corpus", False, f"not found at {CORPUS}")
    body = bytearray(corpus_stream(data.draw(st.sampled_from(STREAMS[:40]), label="stream")))
    for _ in range(data.draw(st.integers(1, 8), label="mutations")):
        pos = data.draw(st.integers(0, len(body)), label="pos")
        action = data.draw(st.sampled_from(["delete", "insert", "replace"]), label="action")
        chunk = data.draw(st.binary(min_size=1, max_size=6), label="bytes")
        if action == "delete":
            del body[pos : pos + len(chunk)]
        elif action == "insert":
            body[pos:pos] = chunk
        else:
            body[pos : pos + len(chunk)] = chunk
    assert state_failures(reassemble(bytes(body)).dropped) == []


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_chunking_gives_the_same_result(data: st.DataObject) -> None:
    if not STREAMS:
        require_capability("the recorded corpus", False, f"not found at {CORPUS}")
    body = corpus_stream(data.draw(st.sampled_from(STREAMS), label="stream")).replace(
        b"\n", b"\r\n"
    )
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=30), label="cuts"))
    reassembler = StreamReassembler("messages")
    for start, end in zip([0, *cuts], [*cuts, len(body)], strict=False):
        reassembler.feed(body[start:end])
    assert reassembler.finish() == reassemble(body)


# --- generated streams: ground truth, and the SDK -----------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def generated_message(draw: st.DrawFn) -> dict[str, Any]:
    """A final message with every streamable block kind, and random usage and stop fields."""
    blocks: list[dict[str, Any]] = []
    for kind in draw(
        st.lists(
            st.sampled_from(["text", "thinking", "tool_use", "server_tool_use", "cited"]),
            max_size=5,
        )
    ):
        n = len(blocks)
        if kind == "text":
            blocks.append({"type": "text", "text": draw(_text)})
        elif kind == "cited":
            citation = {"type": "char_location", "cited_text": draw(_text), "document_index": 0}
            blocks.append({"type": "text", "text": draw(_text), "citations": [citation]})
        elif kind == "thinking":
            blocks.append(
                {"type": "thinking", "thinking": draw(_text), "signature": draw(_text) or "sig"}
            )
        else:
            prefix = "toolu" if kind == "tool_use" else "srvtoolu"
            arguments = draw(st.dictionaries(_text, _json_value, max_size=3))
            blocks.append(
                {"type": kind, "id": f"{prefix}_{n}", "name": f"tool_{n}", "input": arguments}
            )
    return {
        "id": "msg_" + draw(st.text("abcdef0123456789", min_size=1, max_size=8)),
        "type": "message",
        "role": "assistant",
        "model": draw(st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-1"])),
        "content": blocks,
        "stop_reason": draw(
            st.sampled_from(["end_turn", "tool_use", "max_tokens", "stop_sequence"])
        ),
        "stop_sequence": draw(st.none() | st.just("###")),
        "usage": {
            "input_tokens": draw(st.integers(0, 10**6)),
            "cache_read_input_tokens": draw(st.integers(0, 10**6)),
            "cache_creation_input_tokens": draw(st.integers(0, 10**6)),
            "output_tokens": draw(st.integers(0, 10**6)),
        },
    }


def split(draw: st.DrawFn, text: str) -> list[str]:
    """`text` cut into fragments at random places."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=4)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False)]


@st.composite
def events_of(draw: st.DrawFn, message: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream events that deliver `message`, with fragments split at random."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            events.append(block_start(index, {"type": "text", "text": ""}))
            for fragment in split(draw, block["text"]):
                events.append(delta(index, {"type": "text_delta", "text": fragment}))
            for citation in block.get("citations", []):
                events.append(delta(index, {"type": "citations_delta", "citation": citation}))
        elif kind == "thinking":
            events.append(block_start(index, {"type": "thinking", "thinking": "", "signature": ""}))
            for fragment in split(draw, block["thinking"]):
                events.append(delta(index, {"type": "thinking_delta", "thinking": fragment}))
            events.append(
                delta(index, {"type": "signature_delta", "signature": block["signature"]})
            )
        else:
            events.append(block_start(index, {**block, "input": {}}))
            for fragment in split(draw, json.dumps(block["input"])):
                events.append(delta(index, {"type": "input_json_delta", "partial_json": fragment}))
        events.append({"type": "content_block_stop", "index": index})
    delta_usage = {"output_tokens": usage["output_tokens"]}
    events.append(
        message_delta(message["stop_reason"], delta_usage, stop_sequence=message["stop_sequence"])
    )
    events.append(STOP)
    return events


def frame(
    events: list[dict[str, Any]], *, named: bool, crlf: bool, pad: bool, final_blank: bool
) -> bytes:
    """SSE bytes of `events` in one of the framings seen on the wire."""
    parts = []
    for event in events:
        data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        if pad:
            data = data[:-1] + "      }"
        parts.append((f"event: {event['type']}\n" if named else "") + f"data: {data}\n\n")
    text = "".join(parts)
    if not final_blank:
        text = text[:-2]
    if crlf:
        text = text.replace("\n", "\r\n")
    return text.encode()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_streams_match_ground_truth_and_sdk(data: st.DataObject) -> None:
    message = data.draw(generated_message(), label="message")
    events = data.draw(events_of(message), label="events")
    framing = {
        key: data.draw(st.booleans(), label=key) for key in ("named", "crlf", "pad", "final_blank")
    }
    result = reassemble(frame(events, **framing))
    assert result.terminal == "complete"
    assert result.dropped == []
    assert result.response == message
    assert comparable(result.response) == comparable(strip_none(sdk_accumulate(events)))


# --- the wire format where the SDK differs, and garbage ----------------------------------


def test_signature_deltas_are_appended() -> None:
    events = [
        START,
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "Hmm."}),
        delta(0, {"type": "signature_delta", "signature": "AAA"}),
        delta(0, {"type": "signature_delta", "signature": "BBB"}),
        STOP,
    ]
    result = reassemble(sse(*events))
    assert result.response is not None
    assert result.response["content"] == [
        {"type": "thinking", "thinking": "Hmm.", "signature": "AAABBB"}
    ]
    # The SDK replaces: only the last fragment survives.
    assert sdk_accumulate(events)["content"][0]["signature"] == "BBB"


def test_events_without_event_lines_are_used() -> None:
    events = [
        START,
        block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "Hi"}),
        STOP,
    ]
    named, data_only = reassemble(sse(*events)), reassemble(sse(*events, named=False))
    assert data_only == named
    assert data_only.terminal == "complete"
    assert data_only.response is not None
    assert data_only.response["content"] == [{"type": "text", "text": "Hi"}]
    # The SDK drops every event without an `event:` line and finds no message at all.
    with pytest.raises(AssertionError):
        sdk_message(sse(*events, named=False))


def test_error_event_ends_the_stream_with_its_payload() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    result = reassemble(sse(START, block_start(0, {"type": "text", "text": ""}), error, STOP))
    assert result.terminal == "error"
    assert result.truncated is False
    assert result.error == error
    assert result.response is not None
    assert result.response["id"] == "msg_1"
    assert result.dropped == ["message_stop event after the terminal event"]


def test_error_event_without_type_and_without_space() -> None:
    body = sse(START) + b'event:error\ndata:{"error":{"message":"boom"}}\n\n'
    result = reassemble(body)
    assert result.terminal == "error"
    assert result.error == {"error": {"message": "boom"}}


def test_message_stop_is_terminal_by_event_name() -> None:
    result = reassemble(sse(START, ("message_stop", "[DONE]")))
    assert result.terminal == "complete"
    assert result.dropped == []


def test_error_event_whose_data_is_not_json() -> None:
    result = reassemble(sse(START, ("error", "upstream exploded")))
    assert result.terminal == "error"
    assert result.error == {"_raw": "upstream exploded"}


def test_broken_tool_json_is_kept_raw() -> None:
    events = [
        START,
        block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"city":'}),
        delta(0, {"type": "input_json_delta", "partial_json": "Par"}),
        {"type": "content_block_stop", "index": 0},
        message_delta("tool_use", {"output_tokens": 40}),
        STOP,
    ]
    result = reassemble(sse(*events))
    assert result.response is not None
    assert result.response["content"] == [
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "get_weather",
            "input": {"_raw": '{"city":Par'},
        }
    ]
    assert result.dropped == ["block 0: tool input is not valid JSON; kept as _raw"]
    with pytest.raises(ValueError, match="Unable to parse tool parameter JSON"):
        sdk_accumulate(events)


def test_truncated_stream_keeps_the_partial_message() -> None:
    body = sse(
        START,
        block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "Let me"}),
        block_start(1, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}),
        delta(1, {"type": "input_json_delta", "partial_json": '{"city": "Pa'}),
    )
    result = reassemble(body)
    assert result.terminal is None
    assert result.truncated is True
    assert result.response == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": "Let me"},
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"_raw": '{"city": "Pa'}},
        ],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 1},
    }


def test_state_memory_grows_with_the_text_not_with_the_number_of_deltas() -> None:
    # ~20 MB of 5-character deltas: kept as one small str per delta, the state would hold
    # ~65 bytes of object overhead per delta (~10 MB here for 0.8 MB of text). The bound is
    # structural (bytes traced, not time): twice the text (the final join) plus 2 MB.
    count = 156_000
    blocks: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "text", "text": ""},
        {"type": "tool_use", "id": "toolu_m", "name": "f", "input": {}},
    ]
    events: list[dict[str, Any]] = [START]
    events += [block_start(index, block) for index, block in enumerate(blocks)]
    events.append(delta(2, {"type": "input_json_delta", "partial_json": '{"a":"'}))
    lines = [f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events]
    kinds = (
        '"thinking_delta","thinking"',
        '"text_delta","text"',
        '"input_json_delta","partial_json"',
    )
    for i in range(count):
        kind, field = kinds[i % 3].split(",")
        data = f'{{"type":"content_block_delta","index":{i % 3},"delta":{{"type":{kind},{field}:" w{i % 1000:03d}"}}}}'
        lines.append(f"event: content_block_delta\ndata: {data}\n\n")
    tail = [
        delta(2, {"type": "input_json_delta", "partial_json": '"}'}),
        message_delta("end_turn", {}),
        STOP,
    ]
    lines += [f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in tail]
    body = "".join(lines).encode()
    assert len(body) > 19_000_000

    result, peak = traced_peak(lambda: reassemble_in_chunks("messages", body))

    assert result.response is not None and result.terminal == "complete"
    thinking, text, tool = result.response["content"]
    texts = [thinking["thinking"], text["text"], tool["input"]["a"]]
    for block, value in enumerate(texts):
        assert value == "".join(f" w{i % 1000:03d}" for i in range(block, count, 3))
    text_bytes = sum(map(len, texts))
    assert text_bytes == 780_000
    assert peak < 2 * text_bytes + 2_000_000


def test_usage_merge_and_message_delta_fields() -> None:
    result = reassemble(
        sse(
            START,
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "stop_sequence",
                    "stop_sequence": "###",
                    "container": None,
                },
                "usage": {"output_tokens": 7, "input_tokens": 12, "cache_read_input_tokens": None},
                "context_management": {"applied_edits": []},
            },
            STOP,
        )
    )
    assert result.response is not None
    assert result.response["stop_reason"] == "stop_sequence"
    assert result.response["stop_sequence"] == "###"
    assert result.response["container"] is None
    assert result.response["context_management"] == {"applied_edits": []}
    assert result.response["usage"] == {
        "input_tokens": 12,
        "cache_read_input_tokens": 5,
        "output_tokens": 7,
    }


def test_unknown_event_block_and_delta_types() -> None:
    result = reassemble(
        sse(
            START,
            {"type": "hologram_start", "beam": 1},
            block_start(0, {"type": "hologram", "frames": "", "meta": {"v": 1}}),
            delta(0, {"type": "hologram_delta", "frames": "ab", "meta": {"v": 2}}),
            delta(0, {"type": "hologram_delta", "frames": "cd"}),
            STOP,
        )
    )
    assert result.terminal == "complete"
    assert result.response is not None
    assert result.response["content"] == [{"type": "hologram", "frames": "abcd", "meta": {"v": 2}}]
    assert result.dropped == [
        "unknown event type 'hologram_start'",
        "unknown delta type 'hologram_delta' for block 0 merged by field name",
        "unknown delta type 'hologram_delta' for block 0 merged by field name",
    ]
    future = {**START["message"], "content": [{"type": "hologram", "frames": "x"}]}
    assert messages.decode_message(json.dumps(future)).content == [
        {"type": "hologram", "frames": "x"}
    ]
    unknown = messages.decode_event(json.dumps(delta(0, {"type": "hologram_delta", "frames": "x"})))
    assert unknown == messages.UnknownEvent(
        type="content_block_delta",
        payload={
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "hologram_delta", "frames": "x"},
        },
    )


def test_events_out_of_order_are_noted() -> None:
    result = reassemble(
        sse(
            delta(0, {"type": "text_delta", "text": "orphan"}),
            block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}),
            delta(0, {"type": "text_delta", "text": "wrong block"}),
            block_start(0, {"type": "text", "text": "again"}),
            (
                "content_block_start",
                '{"type":"content_block_start","index":"x","content_block":{}}',
            ),
            ("ping", "not json"),
            ("content_block_delta", "[1, 2]"),
        )
    )
    assert result.truncated is True
    assert result.response == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "again"}],
    }
    assert result.dropped == [
        "text_delta for unknown block 0",
        "text delta for tool_use block 0",
        "content_block_start for block 0 replaced the block",
        "content_block_start without an index and a block object",
        "ping event whose data is not a JSON object",
        "content_block_delta event whose data is not a JSON object",
        "no message_start: the message envelope is missing",
    ]


def test_event_name_error_wins_over_a_delta_payload_and_odd_starts_are_noted() -> None:
    text_delta = delta(0, {"type": "text_delta", "text": "lost"})
    negative_index = '{"type":"content_block_start","index":-1,"content_block":{"type":"text"}}'
    # A repeated key: the last one counts, as in a dict.
    index_twice = '{"type":"content_block_start","index":0,"index":1,"content_block":{"type":"text","text":""}}'
    result = reassemble(
        sse(
            {"type": "message_start", "message": "not an object"},
            START,
            ("content_block_start", negative_index),
            ("content_block_start", index_twice),
            delta(1, {"type": "text_delta", "text": "kept"}),
            ("error", json.dumps(text_delta)),
        )
    )
    assert result.terminal == "error"
    assert result.error == text_delta
    assert result.response is not None
    assert result.response["content"] == [{"type": "text", "text": "kept"}]
    assert result.dropped == [
        "message_start without a message object",
        "content_block_start without an index and a block object",
    ]


def test_prefilled_content_in_message_start_is_kept() -> None:
    prefilled = {"type": "tool_use", "id": "toolu_1", "name": "rollDie", "input": {"player": "p2"}}
    start = {
        **START,
        "message": {**START["message"], "content": [prefilled], "stop_reason": "tool_use"},
    }
    result = reassemble(sse(start, STOP))
    assert result.response is not None
    assert result.response["content"] == [prefilled]
    assert result.response["stop_reason"] == "tool_use"


def test_dropped_notes_are_bounded() -> None:
    result = reassemble(sse(*[("ping", "garbage")] * 100))
    assert len(result.dropped) == 33
    assert result.dropped[-1] == "68 more notes not kept"


# --- derivation -------------------------------------------------------------------------

GYM_DIFFERENCES = {
    # A Responses-shaped body recorded on /v1/messages: Gym reads its `status`, but a
    # Messages response has no status; we keep response_status null for this dialect.
    ("matrix/messages-json-nan.expected.json", "response_status"): (None, "completed"),
}


def gym_messages_records(root: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(root.rglob("*.expected.json")):
        for record in json.loads(path.read_text()).get("records", []):
            if record["dialect"] == "messages":
                out.append((str(path.relative_to(root)), record))
    return out


def test_derive_matches_gym(gym_reference_dir: Path) -> None:
    records = gym_messages_records(gym_reference_dir)
    compared = equal = 0
    differences = {}
    for where, record in records:
        derived = messages.derive(record["request"], record["response"])
        for field in DERIVED_FIELDS:
            ours = msgspec.to_builtins(getattr(derived, field))
            compared += 1
            if ours == record[field]:
                equal += 1
            else:
                differences[(where, field)] = (ours, record[field])
    assert differences == GYM_DIFFERENCES
    assert (compared, equal) == (len(records) * 13, len(records) * 13 - 1)
    if FULL_GYM_REFERENCE:
        assert len(records) == 40


@FORMS
def test_derive_folds_cache_tokens_into_tokens_in(form: Any) -> None:
    response = {
        "id": "msg_1",
        "model": "claude-sonnet-4-5",
        "stop_reason": "tool_use",
        "content": [
            {"type": "thinking", "thinking": "First.", "signature": "s"},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "x"},
            },
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"_raw": '{"a":'}},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "thinking", "thinking": "Second.", "signature": "t"},
        ],
        "usage": {
            "input_tokens": 20,
            "cache_read_input_tokens": 70,
            "cache_creation_input_tokens": 30,
            "output_tokens": 40,
        },
    }
    assert messages.derive(form({"model": "alias"}), form(response)) == Derived(
        response_id="msg_1",
        model="claude-sonnet-4-5",
        response_status=None,
        finish_reason="tool_use",
        tokens_in=120,
        tokens_out=40,
        tokens_reasoning=None,
        tokens_total=160,
        cached_tokens=70,
        cache_hit=True,
        cache_creation_tokens=30,
        tool_calls=[ToolCall(call_id="toolu_1", name="f", arguments={"_raw": '{"a":'})],
        reasoning_content="First.\nSecond.",
    )


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"input_tokens": 5, "output_tokens": 2}, (5, 2, 7, None, None, None)),
        (
            {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": 0},
            (5, 2, 7, 0, False, None),
        ),
        ({"input_tokens": -1, "output_tokens": 2}, (None, 2, None, None, None, None)),
        ({"input_tokens": 5.0, "output_tokens": True}, (None, None, None, None, None, None)),
        (
            {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": "3"},
            (None, 2, None, None, None, None),
        ),
        (
            {"input_tokens": 5, "output_tokens": 2, "cache_creation_input_tokens": -4},
            (None, 2, None, None, None, None),
        ),
    ],
)
@FORMS
def test_derive_rejects_bad_counts(
    usage: dict[str, Any], expected: tuple[Any, ...], form: Any
) -> None:
    derived = messages.derive(None, form({"usage": usage}))
    assert (
        derived.tokens_in,
        derived.tokens_out,
        derived.tokens_total,
        derived.cached_tokens,
        derived.cache_hit,
        derived.cache_creation_tokens,
    ) == expected


@pytest.mark.parametrize(
    "response", [None, {}, [], "text", {"usage": [1], "content": "x", "id": 3, "model": ""}]
)
@FORMS
def test_derive_never_raises(response: Any, form: Any) -> None:
    assert messages.derive(form({"model": "claude-x"}), form(response)) == Derived(model="claude-x")


# --- schema -----------------------------------------------------------------------------


def schema() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    return document


def validator(name: str) -> jsonschema.Draft202012Validator:
    document = schema()
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": document["$defs"]})


STRUCTS = {
    name: getattr(messages, name)
    for name in schema()["$defs"]
    if name not in ("ContentBlock", "StreamEvent")
}


def test_schema_is_valid_and_self_describing() -> None:
    document = schema()
    jsonschema.Draft202012Validator.check_schema(document)
    assert (
        document["$id"]
        == "https://model-call-capture.dev/schemas/v1/dialects/anthropic-messages.schema.json"
    )
    assert undescribed_properties(document) == []
    for example in document["examples"]:
        validator("Message").validate(example)


@pytest.mark.parametrize("name", sorted(STRUCTS))
def test_struct_agrees_with_schema(name: str) -> None:
    assert reduce_struct(STRUCTS[name]) == reduce_schema_file(SCHEMA_PATH, f"#/$defs/{name}")


def test_unions_agree_with_schema() -> None:
    assert reduce_struct(messages.StreamEvent) == reduce_schema_file(
        SCHEMA_PATH, "#/$defs/StreamEvent"
    )
    tags = {name: t.__struct_config__.tag for name, t in STRUCTS.items() if t.__struct_config__.tag}
    assert set(messages.KNOWN_BLOCK_TYPES) | set(messages.KNOWN_DELTA_TYPES) | set(
        messages.KNOWN_EVENT_TYPES
    ) == set(tags.values())


@pytest.mark.parametrize("name", STREAMS[::3])
def test_corpus_validates_against_schema(name: str, corpus_dir: Path) -> None:
    body = corpus_stream(name)
    events = validator("StreamEvent")
    for _, payload in wire_events(body):
        events.validate(payload)
    validator("Message").validate(reassemble(body).response)


def test_schema_is_open_where_the_structs_are() -> None:
    events, message = validator("StreamEvent"), validator("Message")
    events.validate({"type": "hologram_start"})
    events.validate({"error": {"message": "no type"}})
    events.validate(delta(0, {"type": "hologram_delta", "x": 1}))
    events.validate(block_start(0, {"type": "hologram", "x": 1}))
    message.validate({**START["message"], "content": [{"type": "hologram"}], "surprise": True})
    assert not events.is_valid(delta(0, {"type": "text_delta", "text": 3}))
    assert not events.is_valid(block_start(0, {"type": "tool_use", "name": "f"}))
    assert not message.is_valid({**START["message"], "content": [{"type": "text"}]})
    assert not message.is_valid({**START["message"], "content": [{"no": "type"}]})
