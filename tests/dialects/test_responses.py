"""The OpenAI Responses dialect: wire types, schema, stream reassembly and record derivation.

References used as oracles, never the code under test:
- the official `openai` SDK (3.x): each recorded stream is replayed through a real
  `OpenAI` client whose `httpx2.MockTransport` serves the recorded bytes (the only mocked
  part: there is no network here), and `client.responses.stream(...)` accumulates it;
- the wire itself, read with the stdlib `json` and a ten-line SSE splitter, where the SDK
  is wrong or gives up (each case is listed in `SDK_FAILS` with its reason);
- NeMo Gym 0.7.0's own records in `../shared/gym-reference` for `derive`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
import warnings
from pathlib import Path
from typing import Any, TypedDict

import httpx2
import jsonschema
import msgspec
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion

from conftest import (
    CORPUS,
    FULL_CORPUS,
    FULL_GYM_REFERENCE,
    GYM_REFERENCE,
    REPO,
    needs_full_corpus,
    state_failures,
)
from memory_tools import traced_peak
from model_call_capture.contracts import ToolCall
from model_call_capture.dialects import responses as R
from model_call_capture.dialects.base import Derived
from model_call_capture.reassembly import StreamReassembler, StreamResult, reassemble_stream
from model_call_capture.sse import SseEvent
from schema_tools import reduce_schema_file, reduce_struct

from .conftest import DERIVED_FIELDS, FORMS, as_json_text, undescribed_properties

STREAMS = sorted(CORPUS.glob("streams/responses/*.sse"))
BODIES = sorted(CORPUS.glob("json/responses/*.json"))
SCHEMA_PATH = REPO / "schemas/v1/dialects/openai-responses.schema.json"
SCHEMA_REL = "v1/dialects/openai-responses.schema.json"

SDK_FAILS = {
    # stream stem -> why the SDK cannot be the reference (we compare against the wire instead)
    "pydantic-ai--test_openai_responses_test_background_mode_streaming_starting_after_vcr-i1": (
        "resumed stream starts at response.queued: the SDK raises 'Expected to have received "
        "`response.created` before `response.queued`'"
    ),
    "vercel-ai--github-copilot-id-rotation.1": (
        "GitHub Copilot rotates response and item ids: the SDK raises 'Lifecycle response identity changed.'"
    ),
    "vercel-ai--openai-client-tool-search.1": (
        "the tool_search_call item's call_id changes between added and done: the SDK raises "
        "'Completed output item identity changed.'"
    ),
    "vercel-ai--openai-error.1": (
        "`event: error` then response.failed: the SDK raises APIError at the error event and never sees response.failed"
    ),
}
SDK_INCOMPLETE = {
    # get_final_response() raises without response.completed; the SDK's own yielded
    # response.incomplete event is the reference instead.
    "mirascope--test_max_tokens_openai_gpt_4o_responses_async_stream",
    "mirascope--test_max_tokens_openai_gpt_4o_responses_stream",
}


# ----------------------------------------------------------------------------- oracles


def wire_events(body: bytes) -> list[tuple[str, Any]]:
    """(event name, parsed data) of every event whose data is JSON; an independent SSE splitter."""
    events: list[tuple[str, Any]] = []
    text = body.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    for block in text.split("\n\n"):
        name, data = "", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if not data:
            continue
        try:
            events.append((name, json.loads("\n".join(data))))
        except json.JSONDecodeError:
            continue
    return events


def wire_terminal_response(body: bytes) -> dict[str, Any] | None:
    """The `response` of the stream's completed/incomplete/failed event, as sent."""
    for _, data in wire_events(body):
        if isinstance(data, dict) and data.get("type") in (
            "response.completed",
            "response.incomplete",
            "response.failed",
        ):
            return data["response"]  # type: ignore[no-any-return]
    return None


def args(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return {"_raw": text}


def facts(response: dict[str, Any]) -> dict[str, Any]:
    """What the comparison looks at: id, model, status, text, refusal, reasoning, tool calls, usage."""
    text, refusal, summary, reasoning_text, calls = [], [], [], [], []
    for item in response.get("output") or []:
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    text.append(part.get("text") or "")
                elif part.get("type") == "refusal":
                    refusal.append(part.get("refusal") or "")
        elif kind == "reasoning":
            summary += [p.get("text") or "" for p in item.get("summary") or []]
            reasoning_text += [p.get("text") or "" for p in item.get("content") or []]
        elif kind == "function_call":
            calls.append((item.get("call_id"), item.get("name"), args(item.get("arguments"))))
    usage = response.get("usage") or {}
    return {
        "id": response.get("id"),
        "model": response.get("model"),
        "status": response.get("status"),
        "text": "".join(text),
        "refusal": "".join(refusal),
        "reasoning_summary": "".join(summary),
        "reasoning_text": "".join(reasoning_text),
        "tool_calls": calls,
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "total_tokens": usage.get("total_tokens"),
        "cached_tokens": (usage.get("input_tokens_details") or {}).get("cached_tokens"),
        "reasoning_tokens": (usage.get("output_tokens_details") or {}).get("reasoning_tokens"),
    }


def delta_facts(events: list[tuple[str, Any]]) -> dict[str, Any]:
    """What the text events of a (possibly cut) stream say, ignoring every item and part event.

    Deltas append and `.done` events replace, per (output_index, part index); envelope facts
    come from the last response.created/queued/in_progress.
    """
    kinds = {
        "response.output_text": ("text", "content_index", "text"),
        "response.refusal": ("refusal", "content_index", "refusal"),
        "response.reasoning_summary_text": ("reasoning_summary", "summary_index", "text"),
        "response.reasoning_text": ("reasoning_text", "content_index", "text"),
        "response.function_call_arguments": ("arguments", "", "arguments"),
    }
    slots: dict[str, dict[tuple[int, int], str]] = {name: {} for name, _, _ in kinds.values()}
    envelope: dict[str, Any] = {}
    for _, data in events:
        kind = data.get("type") if isinstance(data, dict) else None
        if kind in ("response.created", "response.queued", "response.in_progress"):
            envelope = data["response"]
            continue
        stem, _, suffix = str(kind).rpartition(".")
        if stem not in kinds or suffix not in ("delta", "done"):
            continue
        name, index_key, done_key = kinds[stem]
        key = (data["output_index"], data.get(index_key, 0) if index_key else 0)
        if suffix == "delta":
            slots[name][key] = slots[name].get(key, "") + data["delta"]
        else:
            slots[name][key] = data[done_key]
    joined = {name: "".join(v for _, v in sorted(values.items())) for name, values in slots.items()}
    return {
        "id": envelope.get("id"),
        "model": envelope.get("model"),
        "text": joined["text"],
        "refusal": joined["refusal"],
        "reasoning_summary": joined["reasoning_summary"],
        "reasoning_text": joined["reasoning_text"],
        "arguments": {index: value for (index, _), value in slots["arguments"].items() if value},
    }


def our_delta_view(response: dict[str, Any]) -> dict[str, Any]:
    """The same view as `delta_facts`, read from a reassembled response."""
    f = facts(response)
    arguments = {
        index: item.get("arguments")
        for index, item in enumerate(response.get("output") or [])
        if item.get("type") == "function_call" and item.get("arguments")
    }
    return {
        "id": f["id"],
        "model": f["model"],
        "text": f["text"],
        "refusal": f["refusal"],
        "reasoning_summary": f["reasoning_summary"],
        "reasoning_text": f["reasoning_text"],
        "arguments": arguments,
    }


def sdk_replay(body: bytes) -> tuple[Any, list[Any]]:
    """Replay `body` through a real OpenAI client; (final response or the exception, events yielded)."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    client = openai.OpenAI(
        api_key="test", base_url="http://model.test/v1", http_client=http, max_retries=0
    )
    seen: list[Any] = []
    try:
        with warnings.catch_warnings():
            # The SDK's own pydantic models warn when it serializes some built-in tool items.
            warnings.simplefilter("ignore", UserWarning)
            with client.responses.stream(model="m", input="hi") as stream:
                for event in stream:
                    seen.append(event)
                return stream.get_final_response(), seen
    except Exception as exc:
        return exc, seen
    finally:
        http.close()


def sdk_dict(model: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return model.to_dict(warnings=False)  # type: ignore[no-any-return]


def reassemble(body: bytes, chunk: int = 0) -> StreamResult:
    reassembler = StreamReassembler("responses")
    if chunk:
        for start in range(0, len(body), chunk):
            reassembler.feed(body[start : start + chunk])
    else:
        reassembler.feed(body)
    return reassembler.finish()


def _id(path: Path) -> str:
    return path.stem


# ------------------------------------------------------------------ wire types, schema


@needs_full_corpus
def test_corpus_size() -> None:
    assert (len(STREAMS), len(BODIES)) == (111, 22)


def test_every_corpus_event_decodes_with_the_event_union() -> None:
    seen_types: set[str] = set()
    count = 0
    for path in STREAMS:
        for _name, data in wire_events(path.read_bytes()):
            event = R.decode_event(json.dumps(data))
            assert not isinstance(event, R.UnknownEvent), (path.name, data.get("type"))
            seen_types.add(data["type"])
            count += 1
    assert seen_types <= R.EVENT_TYPES
    if FULL_CORPUS:
        assert (count, len(seen_types)) == (6612, 53)


def test_event_union_covers_the_sdk_union() -> None:
    import typing

    from openai.types.responses import ResponseStreamEvent

    union = typing.get_args(typing.get_args(ResponseStreamEvent)[0])
    sdk_types = {typing.get_args(cls.model_fields["type"].annotation)[0] for cls in union}
    assert len(sdk_types) == 59
    # Ours adds what the API sends beyond the SDK's union: apply_patch diffs and keepalive.
    assert R.EVENT_TYPES - sdk_types == {
        "response.apply_patch_call_operation_diff.delta",
        "response.apply_patch_call_operation_diff.done",
        "keepalive",
    }
    assert sdk_types <= R.EVENT_TYPES


@pytest.mark.parametrize("path", BODIES, ids=_id)
def test_every_corpus_json_body_decodes_as_response(path: Path) -> None:
    body = path.read_bytes()
    response = msgspec.json.decode(body, type=R.Response)
    assert response.id == json.loads(body).get("id", msgspec.UNSET)


def test_unknown_fields_and_future_event_types_decode() -> None:
    event = R.decode_event(
        b'{"type":"response.output_text.delta","output_index":0,"delta":"a","brand_new":{"x":1}}'
    )
    assert event == R.ResponseTextDeltaEvent(output_index=0, delta="a")
    assert R.decode_event(
        b'{"type":"response.teleport.started","sequence_number":4}'
    ) == R.UnknownEvent(type="response.teleport.started")
    assert R.decode_event(b'{"error":{"message":"Groq body without type"}}') == R.UnknownEvent()
    assert R.decode_event(
        b'{"type":"keepalive","sequence_number":466}'
    ) == R.ResponseKeepaliveEvent(sequence_number=466)


def test_a_known_event_with_the_wrong_shape_is_rejected_like_the_schema_does() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"Expected `str`, got `int` - at `\$.delta`"):
        R.decode_event(b'{"type":"response.output_text.delta","output_index":0,"delta":5}')
    with pytest.raises(msgspec.ValidationError, match="Object missing required field `delta`"):
        R.decode_event(b'{"type":"response.output_text.delta","output_index":0}')


@pytest.mark.parametrize("name", ["Request", "Response"])
def test_structs_agree_with_the_schema(name: str) -> None:
    assert reduce_struct(getattr(R, name)) == reduce_schema_file(SCHEMA_REL, f"#/$defs/{name}")


def test_event_union_agrees_with_the_schema() -> None:
    ours = reduce_struct(R.StreamEvent)
    ours.update(reduce_struct(R.UnknownEvent))
    assert len(ours) == 62 + 1 + 6  # events, UnknownEvent, Response and its five parts
    assert ours == reduce_schema_file(SCHEMA_REL, "#/$defs/StreamEvent")


def test_schema_document() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert (
        schema["$id"]
        == "https://model-call-capture.dev/schemas/v1/dialects/openai-responses.schema.json"
    )
    assert schema["title"] == "OpenAIResponses"
    assert schema["examples"]
    assert undescribed_properties(schema) == []
    assert not any(d.get("additionalProperties") is False for d in schema["$defs"].values())


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})


def test_schema_examples_validate_and_decode() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    for name, decode in (("Request", R.Request), ("Response", R.Response)):
        for example in schema["$defs"][name]["examples"]:
            _validator(name).validate(example)
            msgspec.convert(example, decode)
    for example in schema["$defs"]["StreamEvent"]["examples"]:
        _validator("StreamEvent").validate(example)
        R.decode_event(json.dumps(example))


def test_schema_and_decoder_give_the_same_verdict() -> None:
    """One event of each type per corpus stream, plus hand-made edge cases."""
    validator = _validator("StreamEvent")
    cases: list[Any] = []
    for path in STREAMS:
        firsts: dict[str, Any] = {}
        for _, data in wire_events(path.read_bytes()):
            firsts.setdefault(data["type"], data)
        cases += firsts.values()
    cases += [
        {"type": "response.output_text.delta", "output_index": 0, "delta": 5},
        {"type": "response.output_text.delta", "output_index": 0},
        {"type": "response.completed"},
        {"type": "response.completed", "response": {"usage": {"input_tokens": "many"}}},
        {"type": "response.future", "anything": [1, 2]},
        {"error": {"message": "no type"}},
        {"type": 7},
    ]
    verdicts = {"valid": 0, "invalid": 0}
    for case in cases:
        valid = validator.is_valid(case)
        try:
            R.decode_event(json.dumps(case))
            decoded = True
        except msgspec.ValidationError:
            decoded = False
        assert valid == decoded, case
        verdicts["valid" if valid else "invalid"] += 1
    assert verdicts == {"valid": len(cases) - 5, "invalid": 5}


# ------------------------------------------------------------- reassembly vs the SDK


def _digest(value: Any) -> Any:
    """Long strings (images, encrypted reasoning) replaced by their length and hash in snapshots."""
    if isinstance(value, str) and len(value) > 400:
        return f"<{len(value)} chars sha256:{hashlib.sha256(value.encode()).hexdigest()[:16]}>"
    if isinstance(value, dict):
        return {k: _digest(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_digest(v) for v in value]
    return value


@pytest.mark.parametrize("path", STREAMS, ids=_id)
def test_corpus_stream_agrees_with_the_sdk(path: Path, snapshot_json: SnapshotAssertion) -> None:
    body = path.read_bytes()
    ours = reassemble(body)
    assert ours.response is not None
    assert ours.dropped == []
    assert ours.truncated is False
    wire = wire_terminal_response(body)
    assert wire is not None
    # Our final object is the server's terminal response, byte for byte.
    assert ours.response == wire
    sdk, yielded = sdk_replay(body)
    if path.stem in SDK_FAILS:
        assert isinstance(sdk, Exception), (
            "the SDK learned to handle this stream: move it out of SDK_FAILS"
        )
        reference = facts(wire)
    elif path.stem in SDK_INCOMPLETE:
        assert isinstance(sdk, RuntimeError)
        assert ours.terminal == "incomplete"
        reference = facts(sdk_dict(yielded[-1].response))
    else:
        assert not isinstance(sdk, Exception), sdk
        assert ours.terminal == "complete"
        reference = facts(sdk_dict(sdk))
    assert facts(ours.response) == reference
    assert (
        _digest({"terminal": ours.terminal, "error": ours.error, "response": ours.response})
        == snapshot_json
    )


@needs_full_corpus
def test_sdk_agreement_counts() -> None:
    """The headline figures of the report: how many corpus streams the SDK itself could finish."""
    finished = sum(
        1 for path in STREAMS if not isinstance(sdk_replay(path.read_bytes())[0], Exception)
    )
    assert finished == len(STREAMS) - len(SDK_FAILS) - len(SDK_INCOMPLETE) == 105


def test_error_event_then_response_failed() -> None:
    body = (CORPUS / "streams/responses/vercel-ai--openai-error.1.sse").read_bytes()
    result = reassemble(body)
    assert result.terminal == "error"
    assert result.error == {
        "type": "error",
        "sequence_number": 2,
        "error": {
            "type": "insufficient_quota",
            "code": "insufficient_quota",
            "message": (
                "You exceeded your current quota, please check your plan and billing details. For more "
                "information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
            ),
            "param": None,
        },
    }
    assert result.response is not None and result.response["status"] == "failed"


# ------------------------------------------------------------------- cut streams


def _blocks(body: bytes) -> list[bytes]:
    """The body split after every blank line (event boundaries), LF or CRLF framed."""
    return [b for b in re.split(rb"(?<=\n\n)|(?<=\r\n\r\n)", body) if b]


@pytest.mark.parametrize("path", STREAMS, ids=_id)
def test_cut_stream_keeps_the_partial_reconstruction(
    path: Path, snapshot_json: SnapshotAssertion
) -> None:
    body = path.read_bytes()
    blocks = _blocks(body)
    terminal_at = next(
        i
        for i, block in enumerate(blocks)
        if re.search(rb'"type":\s*"(response\.(completed|incomplete|failed)|error)"', block)
    )
    for fraction in (0.25, 0.5, 0.75, 1.0):
        keep = max(1, int(terminal_at * fraction))
        prefix = b"".join(blocks[:keep])
        result = reassemble(prefix, chunk=97)
        expected_terminal = (
            "error" if path.stem == "vercel-ai--openai-error.1" and keep > 2 else None
        )
        assert result.terminal == expected_terminal
        assert result.truncated is (expected_terminal is None)
        assert result.response is not None
        assert result.response["output"] is not None
        assert our_delta_view(result.response) == delta_facts(wire_events(prefix)), keep
        if fraction == 0.5:
            # Half way to its terminal event, items are still open: the reconstruction, for review.
            halfway = {
                "terminal": result.terminal,
                "dropped": result.dropped,
                "response": result.response,
            }
    assert _digest(halfway) == snapshot_json
    # Byte-level cuts, inside events: never raises, still a partial object once an envelope arrived.
    first = next(
        i for i, block in enumerate(blocks) if re.search(rb'"response\.(created|queued)"', block)
    )
    envelope_end = len(b"".join(blocks[: first + 1]))
    for cut in range(envelope_end, len(body) - 1, max(1, len(body) // 7)):
        result = reassemble(body[:cut])
        assert result.response is not None
        assert result.response.get("id") == delta_facts(wire_events(body[:cut]))["id"] is not None


# --------------------------------------------------------------- generated streams


def _sse(
    events: list[dict[str, Any]],
    *,
    data_only: bool,
    crlf: bool,
    keepalive: bool,
    done: bool,
    space: str = " ",
) -> bytes:
    nl = "\r\n" if crlf else "\n"
    out = [f": keep-alive{nl}{nl}" if keepalive else ""]
    for i, event in enumerate(events):
        event = {**event, "sequence_number": i}
        head = "" if data_only else f"event:{space}{event['type']}{nl}"
        out.append(f"{head}data:{space}{json.dumps(event)}{nl}{nl}")
        if keepalive and i % 3 == 0:
            out.append(f":{nl}{nl}")
    if done:
        out.append(f"data: [DONE]{nl}{nl}")  # see test_done_sentinel_with_odd_spacing
    return "".join(out).encode()


texts = st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=5)
Events = list[dict[str, Any]]
Stream = tuple[Events, dict[str, Any]]


def _message(index: int, chunks: list[str], refusal: bool) -> tuple[Events, dict[str, Any]]:
    """Events and final item of a message streaming one text (or refusal) part."""
    at = {"item_id": f"it_{index}", "output_index": index, "content_index": 0}
    kind, field = ("refusal", "refusal") if refusal else ("output_text", "text")
    empty: dict[str, Any] = (
        {"type": kind, field: ""} if refusal else {"type": kind, field: "", "annotations": []}
    )
    part = {**empty, field: "".join(chunks)}
    added = {
        "id": at["item_id"],
        "type": "message",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    stem = "response.refusal" if refusal else "response.output_text"
    logprobs: dict[str, Any] = {} if refusal else {"logprobs": []}
    events: Events = [
        {"type": "response.output_item.added", "output_index": index, "item": added},
        {"type": "response.content_part.added", **at, "part": empty},
        *({"type": stem + ".delta", **at, "delta": chunk, **logprobs} for chunk in chunks),
        {"type": stem + ".done", **at, field: part[field], **logprobs},
        {"type": "response.content_part.done", **at, "part": part},
    ]
    return events, {**added, "status": "completed", "content": [part]}


def _call(index: int, arguments: str, cuts: list[int]) -> tuple[Events, dict[str, Any]]:
    """Events and final item of a function call whose arguments arrive cut at `cuts`."""
    at = {"item_id": f"it_{index}", "output_index": index}
    bounds = [0, *sorted(cuts), len(arguments)]
    pieces = [arguments[a:b] for a, b in itertools.pairwise(bounds) if arguments[a:b]]
    added = {
        "id": at["item_id"],
        "type": "function_call",
        "call_id": f"call_{index}",
        "name": "get_weather",
        "arguments": "",
        "status": "in_progress",
    }
    events: Events = [
        {"type": "response.output_item.added", "output_index": index, "item": added},
        *(
            {"type": "response.function_call_arguments.delta", **at, "delta": piece}
            for piece in pieces
        ),
        {"type": "response.function_call_arguments.done", **at, "arguments": arguments},
    ]
    return events, {**added, "arguments": arguments, "status": "completed"}


def _reasoning(index: int, chunks: list[str]) -> tuple[Events, dict[str, Any]]:
    """Events and final item of a reasoning item streaming one summary part."""
    at = {"item_id": f"it_{index}", "output_index": index, "summary_index": 0}
    part = {"type": "summary_text", "text": "".join(chunks)}
    added = {"id": at["item_id"], "type": "reasoning", "summary": []}
    events: Events = [
        {"type": "response.output_item.added", "output_index": index, "item": added},
        {
            "type": "response.reasoning_summary_part.added",
            **at,
            "part": {"type": "summary_text", "text": ""},
        },
        *(
            {"type": "response.reasoning_summary_text.delta", **at, "delta": chunk}
            for chunk in chunks
        ),
        {"type": "response.reasoning_summary_text.done", **at, "text": part["text"]},
        {"type": "response.reasoning_summary_part.done", **at, "part": part},
    ]
    return events, {**added, "summary": [part]}


@st.composite
def generated_stream(draw: st.DrawFn) -> Stream:
    """A stream as the Responses API sends it, with its final response."""
    envelope = {
        "id": "resp_" + draw(st.text("abc123", min_size=3, max_size=8)),
        "object": "response",
        "created_at": 1700000000,
        "status": "in_progress",
        "model": draw(st.sampled_from(["gpt-5", "o3"])),
        "output": [],
        "usage": None,
    }
    events: Events = [
        {"type": "response.created", "response": envelope},
        {"type": "response.in_progress", "response": envelope},
    ]
    items = []
    kinds = draw(
        st.lists(
            st.sampled_from(["message", "refusal", "call", "reasoning"]), min_size=1, max_size=4
        )
    )
    for index, kind in enumerate(kinds):
        if kind in ("message", "refusal"):
            item_events, item = _message(index, draw(texts), refusal=kind == "refusal")
        elif kind == "call":
            arguments = json.dumps(
                {"city": draw(st.text(max_size=6)), "n": draw(st.integers(-5, 5))}
            )
            cuts = draw(st.lists(st.integers(1, len(arguments) - 1), max_size=4))
            item_events, item = _call(index, arguments, cuts)
        else:
            item_events, item = _reasoning(index, draw(texts))
        events += [
            *item_events,
            {"type": "response.output_item.done", "output_index": index, "item": item},
        ]
        items.append(item)
    cached, reasoning_tokens = draw(st.integers(0, 50)), draw(st.integers(0, 50))
    usage = {
        "input_tokens": 50 + cached,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": 60 + reasoning_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": 110 + cached + reasoning_tokens,
    }
    final = {**envelope, "status": "completed", "output": items, "usage": usage}
    events.append({"type": "response.completed", "response": final})
    return events, final


class Framing(TypedDict):
    """How `_sse` frames a generated stream."""

    data_only: bool
    crlf: bool
    keepalive: bool
    done: bool
    space: str


framing = st.builds(
    Framing,
    data_only=st.booleans(),
    crlf=st.booleans(),
    keepalive=st.booleans(),
    done=st.booleans(),
    space=st.sampled_from(["", " ", "   "]),  # `data:{`, `data: {`, `data:   {`
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=generated_stream(), frame=framing, chunk=st.integers(0, 64))
def test_generated_streams_agree_with_the_sdk(stream: Stream, frame: Framing, chunk: int) -> None:
    events, final = stream
    body = _sse(events, **frame)
    ours = reassemble(body, chunk)
    sdk, _ = sdk_replay(body)
    assert not isinstance(sdk, Exception), sdk
    assert (ours.terminal, ours.truncated, ours.dropped) == ("complete", False, [])
    assert facts(ours.response or {}) == facts(sdk_dict(sdk)) == facts(final)


@settings(max_examples=60, deadline=None)
@given(stream=generated_stream(), frame=framing, data=st.data())
def test_generated_streams_cut_anywhere_keep_what_arrived(
    stream: Stream, frame: Framing, data: st.DataObject
) -> None:
    """The SDK raises on every one of these; the wire (concatenated deltas) is the reference."""
    events, _ = stream
    keep = data.draw(st.integers(1, len(events) - 1))
    body = _sse(events[:keep], **(frame | {"done": False}))
    ours = reassemble(body)
    assert (ours.terminal, ours.truncated) == (None, True)
    assert ours.response is not None
    assert our_delta_view(ours.response) == delta_facts(wire_events(body))
    assert isinstance(sdk_replay(body)[0], RuntimeError)


# ------------------------------------------------------------------- odd streams


def feed_events(*events: SseEvent) -> StreamResult:
    state = R.new_stream_state()
    for event in events:
        state.feed(event)
    return state.result()


def ev(data: Any, event: str = "") -> SseEvent:
    return SseEvent(data if isinstance(data, bytes) else json.dumps(data).encode(), event)


ENVELOPE: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "status": "in_progress",
    "model": "m",
    "output": [],
    "usage": None,
}
CREATED: dict[str, Any] = {"type": "response.created", "response": ENVELOPE}


def test_done_sentinel_with_odd_spacing() -> None:
    """`data:   [DONE]` after completion: ignored here; the SDK tries to parse `  [DONE]` as JSON."""
    completed = {"type": "response.completed", "response": {**ENVELOPE, "status": "completed"}}
    body = f"data: {json.dumps(CREATED)}\n\ndata:{json.dumps(completed)}\n\ndata:   [DONE]\n\n".encode()
    result = reassemble(body)
    assert (result.terminal, result.dropped, result.response) == (
        "complete",
        [],
        completed["response"],
    )
    assert isinstance(sdk_replay(body)[0], json.JSONDecodeError)


def test_groq_style_error_body_without_type() -> None:
    body = {"error": {"message": "tool call validation failed", "code": "tool_use_failed"}}
    result = feed_events(ev(CREATED), ev(body, "error"))
    assert (result.terminal, result.truncated, result.error) == ("error", False, body)
    assert result.response == CREATED["response"]
    # Same body without an event name: still an error, found from its shape.
    assert feed_events(ev(CREATED), ev(body)).terminal == "error"
    # A non-JSON error event keeps its text.
    assert feed_events(ev(b"upstream exploded", "error")).error == {"message": "upstream exploded"}


def test_out_of_order_and_garbage_events_are_noted_not_raised() -> None:
    result = feed_events(
        ev(b"not json"),
        ev(b"[1, 2]"),
        ev(
            {
                "type": "response.output_text.delta",
                "item_id": "m1",
                "output_index": 0,
                "delta": "Hi",
            }
        ),
        ev(CREATED),
        ev({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": 5}),
        ev({"type": "response.teleport.started"}),
        ev({"no": "type"}),
        ev({"type": "response.output_text.delta", "output_index": -1, "delta": "x"}),
    )
    assert result.dropped == [
        "non-JSON or non-object data: not json",
        "non-JSON or non-object data: [1, 2]",
        "response.output_text.delta before its output item at output_index 0: item synthesized",
        "response.function_call_arguments.delta without a usable output_index, index or text",
        "unknown event type ignored: response.teleport.started",
        "event without a string type",
        "response.output_text.delta without a usable output_index, index or text",
    ]
    assert result.response == {
        "id": "resp_1",
        "object": "response",
        "status": "in_progress",
        "model": "m",
        "usage": None,
        "output": [
            {
                "type": "message",
                "id": "m1",
                "role": "assistant",
                "status": "in_progress",
                "content": [{"type": "output_text", "text": "Hi", "annotations": []}],
            }
        ],
    }
    assert (result.terminal, result.truncated) == (None, True)


def test_a_delta_with_an_odd_unrelated_field_still_counts() -> None:
    """The typed decode rejects `logprobs: "n/a"`; the event is still used, from its JSON object."""
    result = feed_events(
        ev(CREATED),
        ev(
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "delta": "a",
                "logprobs": "n/a",
            }
        ),
        ev(
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "delta": "b",
                "sequence_number": "7",
            }
        ),
        ev({"type": "response.output_text.delta", "output_index": 0, "delta": "c"}),
    )
    assert result.response is not None
    assert result.response["output"][0]["content"] == [
        {"type": "output_text", "text": "abc", "annotations": []}
    ]


def test_events_after_the_terminal_event() -> None:
    completed = {
        "type": "response.completed",
        "response": {**CREATED["response"], "status": "completed", "output": []},
    }
    late = {"type": "response.output_text.delta", "output_index": 0, "delta": "late"}
    result = feed_events(ev(CREATED), ev(completed), ev(b"[DONE]"), ev(late))
    assert result.terminal == "complete"
    assert result.response == completed["response"]
    assert result.dropped == ["event after the terminal event: response.output_text.delta"]


def test_completed_without_output_takes_the_items_seen() -> None:
    item = {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    result = feed_events(
        ev(CREATED),
        ev({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ev(
            {
                "type": "response.completed",
                "response": {"id": "resp_1", "status": "completed", "output": None},
            }
        ),
    )
    assert result.response == {"id": "resp_1", "status": "completed", "output": [item]}


def test_resumed_stream_cut_before_its_end_uses_the_queued_envelope() -> None:
    name = "pydantic-ai--test_openai_responses_test_background_mode_streaming_starting_after_vcr-i1"
    body = (CORPUS / f"streams/responses/{name}.sse").read_bytes()
    blocks = _blocks(body)
    result = reassemble(b"".join(blocks[:1]))
    assert result.response is not None
    assert result.response["status"] == "queued"
    assert result.response["id"] == "resp_0850765c843cca5300699cc47d93c0819089a181f5feeff8eb"


def test_copilot_id_rotation_joins_items_by_position() -> None:
    body = (CORPUS / "streams/responses/vercel-ai--github-copilot-id-rotation.1.sse").read_bytes()
    blocks = _blocks(body)
    terminal_at = next(i for i, b in enumerate(blocks) if b'"response.completed"' in b)
    cut = reassemble(b"".join(blocks[:terminal_at]))
    whole = reassemble(body)
    assert whole.response is not None and cut.response is not None
    assert facts(cut.response)["text"] == facts(whole.response)["text"] != ""
    assert len(cut.response["output"]) == len(whole.response["output"])


def test_reasoning_and_refusal_deltas_are_kept_on_a_cut_stream() -> None:
    """The SDK's running snapshot drops these deltas; ours keeps them."""
    result = feed_events(
        ev(CREATED),
        ev(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"id": "rs", "type": "reasoning"},
            }
        ),
        ev(
            {
                "type": "response.reasoning_summary_text.delta",
                "output_index": 0,
                "summary_index": 0,
                "delta": "Think",
            }
        ),
        ev(
            {
                "type": "response.reasoning_summary_text.delta",
                "output_index": 0,
                "summary_index": 0,
                "delta": "ing",
            }
        ),
        ev(
            {
                "type": "response.reasoning_text.delta",
                "output_index": 0,
                "content_index": 0,
                "delta": "raw",
            }
        ),
        ev(
            {
                "type": "response.output_item.added",
                "output_index": 1,
                "item": {"id": "m", "type": "message"},
            }
        ),
        ev(
            {
                "type": "response.refusal.delta",
                "output_index": 1,
                "content_index": 0,
                "delta": "No.",
            }
        ),
        ev(
            {
                "type": "response.output_item.added",
                "output_index": 2,
                "item": {"id": "ct", "type": "custom_tool_call"},
            }
        ),
        ev(
            {
                "type": "response.custom_tool_call_input.delta",
                "output_index": 2,
                "delta": "*** Begin",
            }
        ),
    )
    assert result.response is not None
    assert result.response["output"] == [
        {
            "id": "rs",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Thinking"}],
            "content": [{"type": "reasoning_text", "text": "raw"}],
        },
        {"id": "m", "type": "message", "content": [{"type": "refusal", "refusal": "No."}]},
        {"id": "ct", "type": "custom_tool_call", "input": "*** Begin"},
    ]


def test_state_memory_grows_with_the_text_not_with_the_number_of_deltas() -> None:
    # ~20 MB of 5-character deltas, cut before any done event so that every text is built
    # from its deltas: kept as one small str per delta, the state would hold ~65 bytes of
    # object overhead per delta (~7.5 MB here for 0.6 MB of text). The bound is structural
    # (bytes traced, not time): twice the text (the final join) plus 2 MB.
    count = 114_000
    items = [
        {"type": "reasoning", "id": "rs_m", "summary": []},
        {
            "type": "message",
            "id": "msg_m",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        },
        {"type": "function_call", "id": "fc_m", "call_id": "call_m", "name": "f", "arguments": ""},
    ]
    lines = [f"event: response.created\ndata: {json.dumps(CREATED)}\n\n"]
    for index, item in enumerate(items):
        added = {"type": "response.output_item.added", "output_index": index, "item": item}
        lines.append(f"event: response.output_item.added\ndata: {json.dumps(added)}\n\n")
    kinds = (
        (
            "response.reasoning_summary_text.delta",
            '"item_id":"rs_m","output_index":0,"summary_index":0',
        ),
        ("response.output_text.delta", '"item_id":"msg_m","output_index":1,"content_index":0'),
        ("response.function_call_arguments.delta", '"item_id":"fc_m","output_index":2'),
    )
    for i in range(count):
        kind, where = kinds[i % 3]
        data = f'{{"type":"{kind}","sequence_number":{i},{where},"delta":" w{i % 1000:03d}"}}'
        lines.append(f"event: {kind}\ndata: {data}\n\n")
    body = "".join(lines).encode()
    assert len(body) > 19_000_000

    result, peak = traced_peak(lambda: reassemble(body, chunk=65536))

    assert result.response is not None and result.truncated
    reasoning, message, call = result.response["output"]
    texts = [reasoning["summary"][0]["text"], message["content"][0]["text"], call["arguments"]]
    for field, text in enumerate(texts):
        assert text == "".join(f" w{i % 1000:03d}" for i in range(field, count, 3))
    text_bytes = sum(map(len, texts))
    assert text_bytes == 570_000
    assert peak < 2 * text_bytes + 2_000_000


# Raw bytes alone almost never frame an SSE event, so the state would never be fed: mix
# them with arbitrary bytes framed as events.
_arbitrary_sse = st.lists(
    st.binary(max_size=60) | st.binary(max_size=80).map(lambda data: b"data: " + data + b"\n\n"),
    max_size=12,
).map(b"".join)


@settings(max_examples=200, deadline=None)
@given(_arbitrary_sse)
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    result = reassemble(data, chunk=13)
    assert result.truncated is (result.terminal is None)
    assert state_failures(result.dropped) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(STREAMS) - 1), seed=st.integers(0, 2**32 - 1))
def test_mutated_real_streams_never_raise(index: int, seed: int) -> None:
    rng = random.Random(seed)
    body = bytearray(STREAMS[index].read_bytes())
    for _ in range(rng.randint(1, 20)):
        position = rng.randrange(len(body))
        action = rng.choice(("flip", "delete", "insert", "dup"))
        if action == "flip":
            body[position] = rng.randrange(256)
        elif action == "delete":
            del body[position : position + rng.randint(1, 50)]
        elif action == "insert":
            body[position:position] = rng.choice(
                (b"\n\n", b"data: ", b"{", b"\xff", b'"type":"error"', b"\r")
            )
        else:
            body[position:position] = body[position : position + rng.randint(1, 300)]
        if not body:
            break
    result = reassemble(bytes(body), chunk=rng.randint(1, 512))
    assert state_failures(result.dropped) == []


# ------------------------------------------------------------------------ derive


def gym_responses_records() -> list[tuple[str, dict[str, Any]]]:
    records = []
    for path in sorted(GYM_REFERENCE.rglob("*.expected.json")):
        for record in json.loads(path.read_text()).get("records", []):
            if record.get("dialect") == "responses":
                records.append((str(path.relative_to(GYM_REFERENCE)), record))
    return records


def test_derive_matches_gym_on_every_field() -> None:
    records = gym_responses_records()
    compared = equal = 0
    for name, record in records:
        derived = msgspec.to_builtins(R.derive(record["request"], record["response"]))
        for field in DERIVED_FIELDS:
            compared += 1
            assert derived[field] == record[field], (name, field)
            equal += 1
    assert compared == equal == len(records) * len(DERIVED_FIELDS) > 0
    if FULL_GYM_REFERENCE:
        assert len(records) == 94


GYM_STREAM_DIFFERENCES = {
    # file: (terminal, truncated, output item types we keep, reasoning_content derived from them)
    # Gym keeps an empty in-progress envelope where we keep the reconstruction.
    "matrix/responses-sse-error-nospace.expected.json": ("error", False, ["reasoning"], None),
    "matrix/responses-sse-error.expected.json": ("error", False, ["reasoning"], None),
    "matrix/responses-sse-truncated.expected.json": (
        None,
        True,
        ["reasoning", "message", "function_call"],
        "Need the weather.",
    ),
    # The app raised after part of the stream: Gym recorded no response at all.
    "matrix/responses-sse-raise-mid.expected.json": (
        None,
        True,
        ["reasoning"],
        "Need the weather.",
    ),
    "timeline/tl-raise-mid.expected.json": (None, True, ["reasoning"], None),
    # `Content-Type: TEXT/EVENT-STREAM`: Gym did not parse it (capture_parse_error); it is a whole stream.
    "matrix/responses-sse-uppercase-ct.expected.json": (
        "complete",
        False,
        ["reasoning", "message", "function_call"],
        "Need the weather.",
    ),
}


def test_reassembling_gyms_raw_streams() -> None:
    """Our reassembly of each stream Gym kept raw equals Gym's response, except where Gym is wrong."""
    same, different = 0, {}
    for name, record in gym_responses_records():
        raw = record.get("response_raw")
        if not isinstance(raw, str) or "data:" not in raw:
            continue
        result = reassemble(raw.encode())
        if result.response == record["response"]:
            same += 1
            continue
        assert result.response is not None
        derived = R.derive(record["request"], result.response)
        different[name] = (
            result.terminal,
            result.truncated,
            [item["type"] for item in result.response["output"]],
            derived.reasoning_content,
        )
    assert different == GYM_STREAM_DIFFERENCES
    if FULL_GYM_REFERENCE:
        assert same == 14


def test_derive_truncated_call_keeps_the_broken_arguments_raw() -> None:
    record = dict(gym_responses_records())["matrix/responses-sse-truncated.expected.json"]
    derived = R.derive(record["request"], reassemble(record["response_raw"].encode()).response)
    assert derived.tool_calls == [
        ToolCall(call_id="call_1", name="get_weather", arguments={"_raw": '{"city":'})
    ]


@FORMS
def test_derive_spelled_out(form: Any) -> None:
    response = {
        "id": "resp_9",
        "model": "gpt-5",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {
                "type": "reasoning",
                "summary": [
                    {"type": "summary_text", "text": "First."},
                    {"type": "summary_text", "text": "Second."},
                ],
                "content": [{"type": "reasoning_text", "text": "raw thought"}],
            },
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": [1, 2]}'},
            {"type": "function_call", "call_id": "c2", "name": "g", "arguments": '{"a": '},
            {
                "type": "custom_tool_call",
                "call_id": "c3",
                "name": "patch",
                "input": "*** Begin Patch",
            },
            {"type": "message", "content": [{"type": "output_text", "text": "ignored"}]},
        ],
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 30,
            "output_tokens_details": {"reasoning_tokens": 10},
        },
    }
    assert R.derive(form({"model": "asked-for"}), form(response)) == Derived(
        response_id="resp_9",
        model="gpt-5",
        response_status="incomplete",
        finish_reason="max_output_tokens",
        tokens_in=100,
        tokens_out=30,
        tokens_reasoning=10,
        tokens_total=130,
        cached_tokens=0,
        cache_hit=False,
        cache_creation_tokens=None,
        tool_calls=[
            ToolCall(call_id="c1", name="f", arguments={"a": [1, 2]}),
            ToolCall(call_id="c2", name="g", arguments={"_raw": '{"a": '}),
            ToolCall(call_id="c3", name="patch", arguments={"_raw": "*** Begin Patch"}),
        ],
        reasoning_content="First.\nSecond.\nraw thought",
    )


@FORMS
def test_derive_bad_counts_are_null_and_nothing_is_double_counted(form: Any) -> None:
    response = {
        "usage": {
            "input_tokens": -1,
            "output_tokens": 2.5,
            "total_tokens": True,
            "input_tokens_details": {"cached_tokens": "9"},
            "output_tokens_details": None,
        }
    }
    assert R.derive(form({"model": "asked-for"}), form(response)) == Derived(model="asked-for")
    cached = {
        "usage": {
            "input_tokens": 120,
            "input_tokens_details": {"cached_tokens": 64},
            "output_tokens": 40,
        }
    }
    derived = R.derive(None, form(cached))
    assert (derived.tokens_in, derived.cached_tokens, derived.tokens_total, derived.cache_hit) == (
        120,
        64,
        160,
        True,
    )


@pytest.mark.parametrize(
    "request_body, response",
    [(None, None), ([], "x"), ({"model": 3}, {"output": "nope", "usage": []})],
)
def test_derive_never_raises_on_odd_input(request_body: Any, response: Any) -> None:
    assert R.derive(request_body, response) == Derived()
    assert R.derive(as_json_text(request_body), as_json_text(response)) == Derived()


def test_a_cut_shell_call_keeps_its_commands_in_index_order_whatever_order_they_arrived_in() -> (
    None
):
    body = (
        b'data: {"type":"response.output_item.added","output_index":0,"item":{"type":"shell_call","action":{}}}\n\n'
        b'data: {"type":"response.shell_call_command.delta","output_index":0,"command_index":1,"delta":"pwd"}\n\n'
        b'data: {"type":"response.shell_call_command.delta","output_index":0,"command_index":0,"delta":"ls"}\n\n'
        b'data: {"type":"response.shell_call_command.delta","output_index":0,"command_index":7,"delta":"id"}\n\n'
    )
    response = reassemble_stream("responses", body)
    assert response is not None
    assert response["output"] == [
        {"type": "shell_call", "action": {"commands": ["ls", "pwd", "id"]}}
    ]
