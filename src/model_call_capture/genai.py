"""Captured calls as OpenTelemetry GenAI spans: a pure function of a record (no I/O).

`record_span(record, rollout_id)` describes the inference span of one call as the GenAI
semantic conventions v1.41.1 name it (docs/formats.md, "OpenTelemetry GenAI spans"): one
trace per rollout, one span per call, named `{gen_ai.operation.name} {gen_ai.request.model}`,
with the call's real start and end. Trace and span ids are derived from the rollout id and
the call's `model_call_id` (its `call_index` when it has none), so exporting a directory
twice describes the same spans. Content (system instructions, input and output messages,
tool definitions) is added only when asked for, from payloads the caller has redacted.

The OpenTelemetry SDK is not imported here: `otlp` turns these descriptions into SDK spans.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import msgspec

from . import _codec
from .contracts import ModelCallRecord
from .dialects import DIALECTS
from .dialects.base import Part, Turn

__all__ = [
    "AttributeValue",
    "GenAISpan",
    "content_attributes",
    "record_span",
    "span_id_for",
    "trace_id_for",
]

AttributeValue = str | bool | int | float | list[str]
"""A span attribute value as OpenTelemetry takes it (content is JSON text)."""

_OPERATION = {
    "chat": "chat",
    "responses": "chat",
    "messages": "chat",
    "completions": "text_completion",
}
_PROVIDER = {
    "chat": "openai",
    "responses": "openai",
    "messages": "anthropic",
    "completions": "openai",
}
_OPENAI_API = {"chat": "chat_completions", "responses": "responses", "completions": "completions"}
# Where each dialect's request sends its system prompt apart from the conversation: the
# conventions put that in `gen_ai.system_instructions`, and system messages of the
# conversation itself in `gen_ai.input.messages`.
_SEPARATE_SYSTEM = {"responses": "instructions", "messages": "system"}
# The request member of each sampling parameter, per dialect (first present wins).
_MAX_TOKENS = {
    "chat": ("max_completion_tokens", "max_tokens"),
    "responses": ("max_output_tokens",),
    "messages": ("max_tokens",),
    "completions": ("max_tokens",),
}
_STOP = {"chat": "stop", "completions": "stop", "messages": "stop_sequences"}
_FLOAT_PARAMS = (
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
    ("top_k", "gen_ai.request.top_k"),
    ("frequency_penalty", "gen_ai.request.frequency_penalty"),
    ("presence_penalty", "gen_ai.request.presence_penalty"),
)
# The conventions' finish reasons (gen-ai-output-messages.json); others are kept as they are.
_FINISH = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "completed": "stop",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "tool_use": "tool_call",
    "content_filter": "content_filter",
}


@dataclass(frozen=True, slots=True)
class GenAISpan:
    """The inference span of one captured call, ready to become an OpenTelemetry span."""

    name: str
    """`{gen_ai.operation.name} {gen_ai.request.model}` (the operation alone without a model)."""
    trace_id: int
    """128-bit trace id of the rollout (`trace_id_for`)."""
    span_id: int
    """64-bit span id of the call (`span_id_for`)."""
    start_ns: int
    """When the call started, UTC Unix nanoseconds."""
    end_ns: int
    """When the call ended, UTC Unix nanoseconds."""
    attributes: dict[str, AttributeValue]
    """The span's attributes (GenAI conventions, plus `model_call_capture.*`)."""
    error: str | None
    """The call's error category when it failed (the span's status is then ERROR)."""


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).digest()


def trace_id_for(rollout_id: str) -> int:
    """The trace id of a rollout: 128 bits of a hash of its id (never the invalid 0)."""
    return int.from_bytes(_digest("mcc-trace", rollout_id)[:16], "big") or 1


def span_id_for(rollout_id: str, record: ModelCallRecord) -> int:
    """The span id of a call: 64 bits of a hash of the rollout id and the call's id."""
    key = record.model_call_id if record.model_call_id else f"#{record.call_index}"
    return int.from_bytes(_digest("mcc-span", rollout_id, key)[:8], "big") or 1


def _times(record: ModelCallRecord) -> tuple[int, int] | None:
    start, end, latency = record.started_at, record.completed_at, record.latency_total_ms
    if start is None and end is not None and latency is not None:
        start = end - latency / 1000
    if start is None:
        return None
    if end is None:
        end = start + (latency or 0) / 1000
    # A float of Unix seconds holds microseconds, not nanoseconds: round to the microsecond.
    start_ns = round(start * 1e6) * 1000
    return start_ns, max(start_ns, round(end * 1e6) * 1000)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _request_attributes(dialect: str, request: dict[str, Any]) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {}
    model = request.get("model")
    if isinstance(model, str) and model:
        attributes["gen_ai.request.model"] = model
    for member, key in _FLOAT_PARAMS:
        if (number := _number(request.get(member))) is not None:
            attributes[key] = number
    for member in _MAX_TOKENS.get(dialect, ()):
        value = request.get(member)
        if type(value) is int:
            attributes["gen_ai.request.max_tokens"] = value
            break
    seed = request.get("seed")
    if type(seed) is int:
        attributes["gen_ai.request.seed"] = seed
    count = request.get("n")
    if type(count) is int and count != 1:
        attributes["gen_ai.request.choice.count"] = count
    stop = request.get(_STOP.get(dialect, ""))
    if isinstance(stop, str):
        stop = [stop]
    if isinstance(stop, list) and stop and all(isinstance(s, str) for s in stop):
        attributes["gen_ai.request.stop_sequences"] = stop
    if request.get("stream") is True:
        attributes["gen_ai.request.stream"] = True
    return attributes


def _record_attributes(record: ModelCallRecord, rollout_id: str) -> dict[str, AttributeValue]:
    dialect = record.dialect or ""
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": _OPERATION.get(dialect, "chat"),
        "gen_ai.provider.name": _PROVIDER.get(dialect, "openai"),
        "gen_ai.conversation.id": rollout_id,
    }
    if dialect in _OPENAI_API:
        attributes["openai.api.type"] = _OPENAI_API[dialect]
    request = record.request if isinstance(record.request, dict) else None
    if request is not None:
        attributes.update(_request_attributes(dialect, request))
    if "gen_ai.request.model" not in attributes and record.model:
        attributes["gen_ai.request.model"] = record.model
    response = record.response if isinstance(record.response, dict) else None
    response_model = response.get("model") if response is not None else None
    if isinstance(response_model, str) and response_model:
        attributes["gen_ai.response.model"] = response_model
    if record.response_id:
        attributes["gen_ai.response.id"] = record.response_id
    if record.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = [record.finish_reason]
    for key, value in (
        ("gen_ai.usage.input_tokens", record.tokens_in),
        ("gen_ai.usage.output_tokens", record.tokens_out),
        ("gen_ai.usage.cache_read.input_tokens", record.cached_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", record.cache_creation_tokens),
        ("gen_ai.usage.reasoning.output_tokens", record.tokens_reasoning),
    ):
        if value is not None:
            attributes[key] = value
    if record.latency_ttft_ms is not None and attributes.get("gen_ai.request.stream") is True:
        attributes["gen_ai.response.time_to_first_chunk"] = record.latency_ttft_ms / 1000
    if record.error_category is not None:
        attributes["error.type"] = record.error_category
    if record.status_code is not None:
        attributes["http.response.status_code"] = record.status_code
    if record.model_call_id:
        attributes["model_call_capture.model_call_id"] = record.model_call_id
    if record.model_ref is not None:
        attributes["model_call_capture.model_ref.name"] = record.model_ref.name
    return attributes


def _json(value: Any) -> str:
    return _codec.encode(value).decode()


def _arguments(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return _codec.decode(text)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return text


def _part(part: Part) -> dict[str, Any]:
    """A turn's part as the conventions' message part (gen-ai-input-messages.json)."""
    if part.kind == "text":
        return {"type": "text", "content": part.text}
    if part.kind == "reasoning":
        return {"type": "reasoning", "content": part.text}
    if part.kind == "tool_call":
        call = {"type": "tool_call", "id": part.call_id, "name": part.name or ""}
        return {**call, "arguments": _arguments(part.arguments)}
    if part.kind == "tool_result":
        return {"type": "tool_call_response", "id": part.call_id, "response": part.text}
    # An attachment or an item of another type: a generic part saying what it was.
    return {"type": part.name or part.kind, "content": part.text}


def _message(turn: Turn) -> dict[str, Any]:
    return {"role": turn.role, "parts": [_part(p) for p in turn.parts]}


def _tool_definition(tool: object) -> dict[str, Any] | None:
    if not isinstance(tool, dict):
        return None
    inner = tool.get("function")
    function: dict[str, Any] = inner if isinstance(inner, dict) else tool
    name = function.get("name")
    if not isinstance(name, str):
        return None
    kind = tool.get("type")
    definition: dict[str, Any] = {
        "type": kind if isinstance(kind, str) else "function",
        "name": name,
    }
    if isinstance(function.get("description"), str):
        definition["description"] = function["description"]
    parameters = function.get("parameters", function.get("input_schema"))
    if isinstance(parameters, dict):
        definition["parameters"] = parameters
    return definition


def content_attributes(
    dialect: str | None,
    request: dict[str, Any] | None,
    response: dict[str, Any] | None,
    finish_reason: str | None,
) -> dict[str, AttributeValue]:
    """`gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages` and
    `gen_ai.tool.definitions` (JSON text) of a call's payloads, which the caller has redacted."""
    module = DIALECTS.get(dialect) if dialect is not None else None
    if module is None:
        return {}
    attributes: dict[str, AttributeValue] = {}
    turns = module.request_turns(request) if request is not None else []
    member = _SEPARATE_SYSTEM.get(dialect or "")
    if (
        member
        and request is not None
        and request.get(member)
        and turns
        and turns[0].role == "system"
    ):
        attributes["gen_ai.system_instructions"] = _json([_part(p) for p in turns[0].parts])
        turns = turns[1:]
    if turns:
        attributes["gen_ai.input.messages"] = _json([_message(t) for t in turns])
    outputs = module.response_turns(response) if response is not None else []
    if outputs:
        reason = _FINISH.get(finish_reason or "", finish_reason or "")
        messages = [{**_message(t), "finish_reason": reason} for t in outputs]
        attributes["gen_ai.output.messages"] = _json(messages)
    tools = request.get("tools") if request is not None else None
    if isinstance(tools, list):
        definitions = [d for d in map(_tool_definition, tools) if d is not None]
        if definitions:
            attributes["gen_ai.tool.definitions"] = _json(definitions)
    return attributes


def record_span(
    record: ModelCallRecord,
    rollout_id: str,
    *,
    content: tuple[dict[str, Any] | None, dict[str, Any] | None] | None = None,
) -> GenAISpan | None:
    """The inference span of `record`, a call of rollout `rollout_id`; None when the call
    has no time to place it at (neither `started_at` nor `completed_at` with a latency).

    `content`, when given, is the call's (request, response) after redaction: its messages
    and tool definitions are added (`content_attributes`). Without it no content is sent.
    """
    times = _times(record)
    if times is None:
        return None
    attributes = _record_attributes(record, rollout_id)
    if content is not None:
        request, response = content
        attributes.update(
            content_attributes(record.dialect, request, response, record.finish_reason)
        )
    model = attributes.get("gen_ai.request.model")
    operation = str(attributes["gen_ai.operation.name"])
    return GenAISpan(
        name=f"{operation} {model}" if model else operation,
        trace_id=trace_id_for(rollout_id),
        span_id=span_id_for(rollout_id, record),
        start_ns=times[0],
        end_ns=times[1],
        attributes=attributes,
        error=record.error_category,
    )
