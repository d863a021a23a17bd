"""`genai.record_span`: a captured call as the GenAI semantic conventions (v1.41.1) name it.

Expected values are spelled out in full, from the conventions' attribute names and the
call's payloads, not computed by the code under test.
"""

from __future__ import annotations

import json
from typing import Any

from model_call_capture.contracts import CaptureLine, ModelRef
from model_call_capture.genai import record_span, span_id_for, trace_id_for
from model_call_capture.otlp import redacted_content
from model_call_capture.records import build_model_call_record

CHAT_REQUEST: dict[str, Any] = {
    "model": "gpt-x",
    "stream": True,
    "temperature": 0.2,
    "top_p": 0.9,
    "max_completion_tokens": 64,
    "seed": 7,
    "n": 1,
    "stop": "END",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris? key sk-abcdefghijklmnopqrstuvwx"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather.",
                "parameters": {"type": "object"},
            },
        }
    ],
}
CHAT_RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-1",
    "model": "gpt-x-2026",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 30,
        "completion_tokens": 12,
        "total_tokens": 42,
        "prompt_tokens_details": {"cached_tokens": 16},
        "completion_tokens_details": {"reasoning_tokens": 4},
    },
}


def _record(**changes: Any) -> Any:
    fields: dict[str, Any] = {
        "model_call_id": "mc-1",
        "dialect": "chat",
        "model_ref": ModelRef(type="responses_api_models", name="policy"),
        "started_at": 1_800_000_000.25,
        "completed_at": 1_800_000_001.75,
        "latency_ms": 1500.0,
        "latency_ttft_ms": 120.0,
        "status_code": 200,
        "request": CHAT_REQUEST,
        "response": CHAT_RESPONSE,
    }
    fields.update(changes)
    return build_model_call_record(CaptureLine(**fields), 3)


def test_a_chat_call_is_one_inference_span_with_the_conventions_attributes() -> None:
    span = record_span(_record(), "17-0")
    assert span is not None
    assert span.name == "chat gpt-x"
    assert span.start_ns == 1_800_000_000_250_000_000
    assert span.end_ns == 1_800_000_001_750_000_000
    assert span.error is None
    assert span.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "openai.api.type": "chat_completions",
        "gen_ai.conversation.id": "17-0",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.top_p": 0.9,
        "gen_ai.request.max_tokens": 64,
        "gen_ai.request.seed": 7,
        "gen_ai.request.stop_sequences": ["END"],
        "gen_ai.request.stream": True,
        "gen_ai.response.model": "gpt-x-2026",
        "gen_ai.response.id": "chatcmpl-1",
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 12,
        "gen_ai.usage.cache_read.input_tokens": 16,
        "gen_ai.usage.reasoning.output_tokens": 4,
        "gen_ai.response.time_to_first_chunk": 0.12,
        "http.response.status_code": 200,
        "model_call_capture.model_call_id": "mc-1",
        "model_call_capture.model_ref.name": "policy",
    }


def test_ids_depend_on_the_rollout_and_the_call_only() -> None:
    one, again = record_span(_record(), "17-0"), record_span(_record(), "17-0")
    other_rollout = record_span(_record(), "17-1")
    other_call = record_span(_record(model_call_id="mc-2"), "17-0")
    assert one is not None and again is not None and other_rollout is not None
    assert other_call is not None
    assert (one.trace_id, one.span_id) == (again.trace_id, again.span_id)
    assert one.trace_id == other_call.trace_id != other_rollout.trace_id
    assert one.span_id != other_call.span_id
    assert one.trace_id == trace_id_for("17-0") and 0 < one.trace_id < 2**128
    assert one.span_id == span_id_for("17-0", _record()) and 0 < one.span_id < 2**64


def test_a_failed_call_has_error_type_and_an_error_status() -> None:
    span = record_span(_record(status_code=429, error_category="rate_limit", response=None), "r")
    assert span is not None
    assert span.error == "rate_limit"
    assert span.attributes["error.type"] == "rate_limit"
    assert "gen_ai.usage.input_tokens" not in span.attributes  # unknown, never 0


def test_a_call_without_any_time_has_no_span() -> None:
    assert record_span(_record(started_at=None, completed_at=None), "r") is None


def test_content_is_the_conventions_messages_after_redaction() -> None:
    record = _record()
    span = record_span(record, "r", content=redacted_content(record))
    assert span is not None
    attributes = span.attributes
    assert "gen_ai.system_instructions" not in attributes  # chat sends it in the messages
    assert json.loads(str(attributes["gen_ai.input.messages"])) == [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {
            "role": "user",
            "parts": [{"type": "text", "content": "Weather in Paris? key [REDACTED]"}],
        },
    ]
    assert json.loads(str(attributes["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Checking."},
                {
                    "type": "tool_call",
                    "id": "call_1",
                    "name": "get_weather",
                    "arguments": {"city": "Paris"},
                },
            ],
            "finish_reason": "tool_call",
        }
    ]
    assert json.loads(str(attributes["gen_ai.tool.definitions"])) == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Current weather.",
            "parameters": {"type": "object"},
        }
    ]
    assert record_span(record, "r") is not None
    assert "gen_ai.input.messages" not in record_span(record, "r").attributes  # type: ignore[union-attr]


def test_messages_system_goes_to_system_instructions() -> None:
    request = {
        "model": "claude-x",
        "max_tokens": 100,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    response = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": "Hello."}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 5,
            "cache_read_input_tokens": 10,
            "cache_creation_input_tokens": 20,
            "output_tokens": 3,
        },
    }
    record = _record(dialect="messages", request=request, response=response)
    span = record_span(record, "r", content=(request, response))
    assert span is not None
    assert span.name == "chat claude-x"
    assert span.attributes["gen_ai.provider.name"] == "anthropic"
    assert "openai.api.type" not in span.attributes
    assert span.attributes["gen_ai.usage.input_tokens"] == 35  # cache reads and writes inside
    assert span.attributes["gen_ai.usage.cache_read.input_tokens"] == 10
    assert span.attributes["gen_ai.usage.cache_creation.input_tokens"] == 20
    assert "gen_ai.response.time_to_first_chunk" not in span.attributes  # not a stream
    assert json.loads(str(span.attributes["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "Be brief."}
    ]
    assert json.loads(str(span.attributes["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "Hi"}]}
    ]
    output = json.loads(str(span.attributes["gen_ai.output.messages"]))
    assert output[0]["finish_reason"] == "stop"


def test_a_completions_call_is_a_text_completion_span() -> None:
    request = {"model": "base", "prompt": "Q: hi\nA:", "max_tokens": 8, "stop": ["\n"]}
    response = {
        "id": "cmpl-1",
        "object": "text_completion",
        "model": "base",
        "choices": [{"index": 0, "text": " Hello.", "finish_reason": "length"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 8, "total_tokens": 13},
    }
    record = _record(dialect="completions", request=request, response=response)
    span = record_span(record, "r", content=(request, response))
    assert span is not None
    assert span.name == "text_completion base"
    assert span.attributes["gen_ai.operation.name"] == "text_completion"
    assert span.attributes["openai.api.type"] == "completions"
    assert span.attributes["gen_ai.request.max_tokens"] == 8
    assert span.attributes["gen_ai.request.stop_sequences"] == ["\n"]
    assert json.loads(str(span.attributes["gen_ai.input.messages"])) == [
        {"role": "prompt", "parts": [{"type": "text", "content": "Q: hi\nA:"}]}
    ]
    assert json.loads(str(span.attributes["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": " Hello."}],
            "finish_reason": "length",
        }
    ]
