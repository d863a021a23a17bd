"""Request and response bodies of the OpenAI Responses API, as open msgspec Structs.

They mirror `schemas/v1/dialects/openai-responses.schema.json`: unknown fields are
ignored on decode and every field a provider may leave out is optional (`UNSET`).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "IncompleteDetails",
    "InputTokensDetails",
    "OutputTokensDetails",
    "Request",
    "Response",
    "ResponseError",
    "ResponseUsage",
]

_Any = dict[str, Any]


# --------------------------------------------------------------------------- request


class Request(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A `POST /v1/responses` request body (the fields people send; others are accepted)."""

    model: str | UnsetType = UNSET
    """Model id, e.g. `gpt-5`."""
    input: str | list[_Any] | UnsetType = UNSET
    """Text, or a list of input items (messages, function_call_output, reasoning, ...)."""
    instructions: str | None | UnsetType = UNSET
    """System (developer) message inserted before the input."""
    tools: list[_Any] | None | UnsetType = UNSET
    """Tools the model may call (function, custom, web_search, mcp, ...)."""
    tool_choice: str | _Any | None | UnsetType = UNSET
    """`none`, `auto`, `required`, or an object naming a tool."""
    parallel_tool_calls: bool | None | UnsetType = UNSET
    """Whether the model may call several tools at once."""
    stream: bool | None | UnsetType = UNSET
    """True to receive the response as Server-Sent Events."""
    stream_options: _Any | None | UnsetType = UNSET
    """Streaming options, e.g. `include_obfuscation`."""
    reasoning: _Any | None | UnsetType = UNSET
    """Reasoning settings: `effort`, `summary`."""
    text: _Any | None | UnsetType = UNSET
    """Text output settings: `format` (text, json_schema), `verbosity`."""
    max_output_tokens: int | None | UnsetType = UNSET
    """Upper bound on generated tokens, reasoning included."""
    max_tool_calls: int | None | UnsetType = UNSET
    """Upper bound on built-in tool calls."""
    temperature: float | None | UnsetType = UNSET
    """Sampling temperature."""
    top_p: float | None | UnsetType = UNSET
    """Nucleus sampling mass."""
    top_logprobs: int | None | UnsetType = UNSET
    """Number of most likely tokens to return log probabilities for."""
    include: list[str] | None | UnsetType = UNSET
    """Extra output to include, e.g. `reasoning.encrypted_content`."""
    previous_response_id: str | None | UnsetType = UNSET
    """Continue from this stored response."""
    conversation: str | _Any | None | UnsetType = UNSET
    """Conversation this response belongs to."""
    store: bool | None | UnsetType = UNSET
    """Whether the provider stores the response."""
    background: bool | None | UnsetType = UNSET
    """Run the response in the background."""
    metadata: dict[str, Any] | None | UnsetType = UNSET
    """Up to 16 caller-defined key/value pairs."""
    truncation: str | None | UnsetType = UNSET
    """`auto` or `disabled`: how to handle input over the context window."""
    service_tier: str | None | UnsetType = UNSET
    """Processing tier: `auto`, `default`, `flex`, `priority`, ..."""
    prompt: _Any | None | UnsetType = UNSET
    """Reference to a stored prompt template and its variables."""
    prompt_cache_key: str | None | UnsetType = UNSET
    """Key used to group requests for prompt caching."""
    prompt_cache_retention: str | None | UnsetType = UNSET
    """Prompt cache retention policy, e.g. `24h`."""
    safety_identifier: str | None | UnsetType = UNSET
    """Stable end-user identifier for abuse detection."""
    user: str | None | UnsetType = UNSET
    """Deprecated end-user identifier."""


# -------------------------------------------------------------------------- response


class InputTokensDetails(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Breakdown of the input tokens."""

    cached_tokens: int | None | UnsetType = UNSET
    """Input tokens served from the prompt cache (counted inside `input_tokens`)."""


class OutputTokensDetails(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Breakdown of the output tokens."""

    reasoning_tokens: int | None | UnsetType = UNSET
    """Reasoning tokens (counted inside `output_tokens`)."""


class ResponseUsage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Token usage of a response."""

    input_tokens: int | None | UnsetType = UNSET
    """Input tokens, cached tokens included."""
    input_tokens_details: InputTokensDetails | None | UnsetType = UNSET
    """Breakdown of the input tokens."""
    output_tokens: int | None | UnsetType = UNSET
    """Output tokens, reasoning tokens included."""
    output_tokens_details: OutputTokensDetails | None | UnsetType = UNSET
    """Breakdown of the output tokens."""
    total_tokens: int | None | UnsetType = UNSET
    """Input plus output tokens."""


class ResponseError(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Why a response failed."""

    code: str | None | UnsetType = UNSET
    """Error code, e.g. `server_error`, `rate_limit_exceeded`."""
    message: str | None | UnsetType = UNSET
    """Human-readable description."""


class IncompleteDetails(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Why a response is incomplete."""

    reason: str | None | UnsetType = UNSET
    """`max_output_tokens` or `content_filter`."""


class Response(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A Responses API response object (`object: "response"`)."""

    id: str | UnsetType = UNSET
    """Response id, `resp_...`."""
    object: str | UnsetType = UNSET
    """Always `response`."""
    created_at: float | UnsetType = UNSET
    """Unix seconds when the response was created."""
    completed_at: float | None | UnsetType = UNSET
    """Unix seconds when the response completed."""
    status: str | None | UnsetType = UNSET
    """`completed`, `failed`, `in_progress`, `cancelled`, `queued` or `incomplete`."""
    model: str | UnsetType = UNSET
    """Model that generated the response."""
    output: list[_Any] | None | UnsetType = UNSET
    """Output items (message, function_call, reasoning, web_search_call, ...), open objects tagged by `type`."""
    output_text: str | None | UnsetType = UNSET
    """Concatenated output text, sent by some providers (the OpenAI SDKs compute it)."""
    usage: ResponseUsage | None | UnsetType = UNSET
    """Token usage; null until the response is finished."""
    error: ResponseError | None | UnsetType = UNSET
    """Why the response failed; null otherwise."""
    incomplete_details: IncompleteDetails | None | UnsetType = UNSET
    """Why the response is incomplete; null otherwise."""
    instructions: str | list[_Any] | None | UnsetType = UNSET
    """The instructions the request carried."""
    metadata: dict[str, Any] | None | UnsetType = UNSET
    """Caller-defined key/value pairs."""
    tools: list[_Any] | None | UnsetType = UNSET
    """Tools the model could call."""
    tool_choice: str | _Any | None | UnsetType = UNSET
    """How the model chose tools."""
    parallel_tool_calls: bool | None | UnsetType = UNSET
    """Whether parallel tool calls were allowed."""
    temperature: float | None | UnsetType = UNSET
    """Sampling temperature."""
    top_p: float | None | UnsetType = UNSET
    """Nucleus sampling mass."""
    top_logprobs: int | None | UnsetType = UNSET
    """Number of most likely tokens with log probabilities."""
    max_output_tokens: int | None | UnsetType = UNSET
    """Upper bound on generated tokens."""
    max_tool_calls: int | None | UnsetType = UNSET
    """Upper bound on built-in tool calls."""
    previous_response_id: str | None | UnsetType = UNSET
    """The response this one continues."""
    conversation: _Any | None | UnsetType = UNSET
    """Conversation this response belongs to."""
    reasoning: _Any | None | UnsetType = UNSET
    """Reasoning settings used."""
    text: _Any | None | UnsetType = UNSET
    """Text output settings used."""
    truncation: str | None | UnsetType = UNSET
    """Truncation strategy used."""
    service_tier: str | None | UnsetType = UNSET
    """Processing tier actually used."""
    background: bool | None | UnsetType = UNSET
    """Whether the response ran in the background."""
    store: bool | None | UnsetType = UNSET
    """Whether the response is stored."""
    prompt: _Any | None | UnsetType = UNSET
    """Stored prompt template used."""
    prompt_cache_key: str | None | UnsetType = UNSET
    """Prompt cache key used."""
    prompt_cache_retention: str | None | UnsetType = UNSET
    """Prompt cache retention policy used."""
    safety_identifier: str | None | UnsetType = UNSET
    """End-user identifier for abuse detection."""
    user: str | None | UnsetType = UNSET
    """Deprecated end-user identifier."""
