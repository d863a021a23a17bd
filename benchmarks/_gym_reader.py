"""NeMo Gym 0.7.0's read path (capture file -> records), rewritten as the baseline of row 8e.

The `nemo-gym` package cannot serve as the baseline as it is: importing its model-server
module pulls in its whole server stack (FastAPI, its telemetry, its token-capture
package), none of which reading needs. So its read path is rewritten here, step for
step, from Gym 0.7.0's `CaptureStore.read_available` and `build_model_call_record`
(Apache-2.0, NVIDIA-NeMo/Gym): open the file, take a shared `flock`, iterate its lines,
`strip()`, `orjson.loads` each non-blank line, keep the dicts (a line that does not parse
or is not an object is counted as invalid), then build one pydantic v2 `ModelCallRecord`
per line from plain dict lookups (usage, cache, tool calls, reasoning, finish reason).
Payloads come out as dicts, as Gym's records carry them.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field

__all__ = ["GymModelCallRecord", "read_available_model_call_records"]


class GymModelServerRef(BaseModel):
    """Gym's `ModelServerRef`: which model server recorded the call."""

    type: str
    name: str


class GymModelCallRecord(BaseModel):
    """Gym 0.7.0's `ModelCallRecord`: every field optional, payloads as dicts."""

    model_call_id: str | None = None
    response_id: str | None = None
    client_session_id: str | None = None
    call_index: int
    model_ref: GymModelServerRef | None = None
    model: str | None = None
    dialect: str | None = None
    status_code: int | None = None
    response_status: str | None = None
    finish_reason: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_reasoning: int | None = None
    tokens_total: int | None = None
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    request_raw: str | None = None
    response_raw: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    reasoning_content: str | None = None
    cache_hit: bool | None = None
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None
    error_category: str | None = None
    latency_total_ms: float | None = None
    latency_ttft_ms: float | None = None


def _read_available(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """Gym's `CaptureStore.read_available`: (index, exchange) of valid lines, invalid count."""
    if not path.exists():
        return [], 0
    exchanges: list[tuple[int, dict[str, Any]]] = []
    invalid = 0
    index = 0
    with path.open("rb") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        try:
            for line in handle:
                stripped = line.strip()
                if not stripped:
                    continue
                try:
                    exchange = orjson.loads(stripped)
                except orjson.JSONDecodeError:
                    invalid += 1
                else:
                    if isinstance(exchange, dict):
                        exchanges.append((index, exchange))
                    else:
                        invalid += 1
                index += 1
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return exchanges, invalid


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _detail(
    usage: Mapping[str, Any], groups: tuple[str, ...], names: tuple[str, ...]
) -> int | None:
    for group in groups:
        details = usage.get(group)
        if isinstance(details, Mapping):
            for name in names:
                value = _count(details.get(name))
                if value is not None:
                    return value
    return None


def _tokens(usage: Any) -> dict[str, int | None]:
    keys = ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cache_creation_tokens")
    if not isinstance(usage, Mapping):
        return dict.fromkeys(keys)
    tokens_in = _count(usage.get("input_tokens"))
    if tokens_in is None:
        tokens_in = _count(usage.get("prompt_tokens"))
    tokens_out = _count(usage.get("output_tokens"))
    if tokens_out is None:
        tokens_out = _count(usage.get("completion_tokens"))
    cache_read = _count(usage.get("cache_read_input_tokens"))
    cache_creation = _count(usage.get("cache_creation_input_tokens"))
    if cache_read is not None or cache_creation is not None:
        cached = (cache_read or 0) + (cache_creation or 0)
        if tokens_in is not None or cached > 0:
            tokens_in = (tokens_in or 0) + cached
    total = _count(usage.get("total_tokens"))
    if total is None and tokens_in is not None and tokens_out is not None:
        total = tokens_in + tokens_out
    reasoning = _detail(
        usage, ("output_tokens_details", "completion_tokens_details"), ("reasoning_tokens",)
    )
    if reasoning is None:
        reasoning = _count(usage.get("reasoning_output_tokens"))
    return dict(zip(keys, (tokens_in, tokens_out, reasoning, total, cache_creation), strict=True))


def _cache(usage: Any) -> tuple[bool | None, int | None]:
    if not isinstance(usage, Mapping):
        return None, None
    cached = _detail(
        usage,
        ("prompt_tokens_details", "input_tokens_details"),
        ("cached_tokens", "cached_input_tokens"),
    )
    if cached is None:
        cached = _count(usage.get("cache_read_input_tokens"))
    if cached is None:
        cached = _count(usage.get("cached_input_tokens"))
    return (None, None) if cached is None else (cached > 0, cached)


def _arguments(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            value: dict[str, Any] = json.loads(arguments)
            return value
        except Exception:
            return {"_raw": arguments}
    return {}


def _tools_and_reasoning(response: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    tools: list[dict[str, Any]] = []
    reasoning: list[str] = []
    output = response.get("output")
    if isinstance(output, list):  # Responses
        for item in output:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                tools.append(
                    {
                        "call_id": item.get("call_id") or item.get("id"),
                        "name": item.get("name"),
                        "arguments": _arguments(item.get("arguments")),
                    }
                )
            elif item.get("type") == "reasoning":
                for summary in item.get("summary") or []:
                    text = summary.get("text") if isinstance(summary, dict) else None
                    if isinstance(text, str) and text:
                        reasoning.append(text)
        return tools, "\n".join(reasoning) or None
    choices = response.get("choices")
    if isinstance(choices, list):  # Chat Completions
        for choice in choices:
            message = choice.get("message") if isinstance(choice, dict) else None
            if not isinstance(message, Mapping):
                continue
            for call in message.get("tool_calls") or []:
                if not isinstance(call, dict):
                    continue
                function = call.get("function") or {}
                if not isinstance(function, Mapping):
                    function = {}
                tools.append(
                    {
                        "call_id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": _arguments(function.get("arguments")),
                    }
                )
            text = message.get("reasoning_content") or message.get("reasoning")
            if isinstance(text, str) and text:
                reasoning.append(text)
        return tools, "\n".join(reasoning) or None
    content = response.get("content")
    if isinstance(content, list):  # Anthropic Messages
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                tools.append(
                    {
                        "call_id": block.get("id"),
                        "name": block.get("name"),
                        "arguments": block.get("input") or {},
                    }
                )
            elif block.get("type") in ("thinking", "redacted_thinking") and isinstance(
                block.get("thinking"), str
            ):
                reasoning.append(block["thinking"])
        return tools, "\n".join(reasoning) or None
    return tools, None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _record(exchange: dict[str, Any], index: int) -> GymModelCallRecord:
    """Gym's `build_model_call_record`."""
    raw_response = exchange.get("response")
    response = raw_response if isinstance(raw_response, dict) else {}
    usage = response.get("usage")
    tools, reasoning = _tools_and_reasoning(response)
    cache_hit, cached = _cache(usage)
    raw_request = exchange.get("request")
    request = raw_request if isinstance(raw_request, dict) else {}
    choices = response.get("choices")
    first = (
        choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    )
    incomplete = response.get("incomplete_details")
    if not isinstance(incomplete, dict):
        incomplete = {}
    finish = next(
        (
            value
            for value in (
                response.get("stop_reason"),
                first.get("finish_reason"),
                incomplete.get("reason"),
            )
            if isinstance(value, str)
        ),
        None,
    )
    model = response.get("model") or request.get("model")
    return GymModelCallRecord(
        model_call_id=exchange.get("model_call_id"),
        response_id=_str(response.get("id")),
        client_session_id=_str(exchange.get("client_session_id")),
        call_index=index,
        model_ref=exchange.get("model_ref"),
        model=_str(model),
        dialect=exchange.get("dialect"),
        status_code=exchange.get("status_code"),
        response_status=_str(response.get("status")),
        finish_reason=finish,
        started_at=exchange.get("started_at"),
        completed_at=exchange.get("completed_at"),
        request=raw_request if isinstance(raw_request, dict) else None,
        response=raw_response if isinstance(raw_response, dict) else None,
        request_raw=_str(exchange.get("request_raw")),
        response_raw=_str(exchange.get("response_raw")),
        tool_calls=tools,
        reasoning_content=reasoning,
        cache_hit=cache_hit,
        cached_tokens=cached,
        error_category=exchange.get("error_category"),
        latency_total_ms=exchange.get("latency_ms"),
        latency_ttft_ms=exchange.get("latency_ttft_ms"),
        **_tokens(usage),
    )


def read_available_model_call_records(path: Path) -> tuple[list[GymModelCallRecord], int]:
    """Gym's `read_available_model_call_records` over one capture file: (records, invalid)."""
    exchanges, invalid = _read_available(path)
    records = []
    for index, exchange in exchanges:
        try:
            records.append(_record(exchange, index))
        except Exception:
            invalid += 1
    return records, invalid
