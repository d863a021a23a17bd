"""Anthropic Messages wire types: the request, the response message and its usage.

Open objects: msgspec ignores unknown fields by default, and no Struct here forbids them.
`UNSET` keeps "absent" apart from "null" where the API tells them apart.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "CacheCreation",
    "Message",
    "MessageDeltaUsage",
    "Request",
    "ServerToolUsage",
    "Usage",
    "decode_message",
]


class Request(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A `POST /v1/messages` request body (the fields capture reads; others pass through)."""

    model: str
    """The model that will complete the prompt."""
    messages: list[dict[str, Any]]
    """The conversation so far: alternating `user` / `assistant` turns."""
    max_tokens: int
    """The most tokens to generate before stopping."""
    system: str | list[dict[str, Any]] | UnsetType = UNSET
    """The system prompt: a string or a list of text blocks."""
    tools: list[dict[str, Any]] | UnsetType = UNSET
    """Tools the model may use: client tools with `input_schema`, or server tools by `type`."""
    tool_choice: dict[str, Any] | UnsetType = UNSET
    """How the model must choose a tool (`auto`, `any`, `tool`, `none`)."""
    stream: bool | UnsetType = UNSET
    """Stream the answer as Server-Sent Events."""
    thinking: dict[str, Any] | UnsetType = UNSET
    """Extended thinking settings (`{"type": "enabled", "budget_tokens": n}` or `disabled`)."""
    temperature: float | UnsetType = UNSET
    """Sampling temperature."""
    top_p: float | UnsetType = UNSET
    """Nucleus sampling mass."""
    top_k: int | UnsetType = UNSET
    """Sample only from the k most likely tokens."""
    stop_sequences: list[str] | UnsetType = UNSET
    """Custom sequences that stop generation."""
    metadata: dict[str, Any] | UnsetType = UNSET
    """Request metadata (`user_id`)."""
    service_tier: str | UnsetType = UNSET
    """`auto` or `standard_only`."""
    container: str | dict[str, Any] | None | UnsetType = UNSET
    """The container to reuse for code execution."""
    mcp_servers: list[dict[str, Any]] | UnsetType = UNSET
    """MCP servers the API may call (beta)."""
    context_management: dict[str, Any] | UnsetType = UNSET
    """Context editing settings (beta)."""


class CacheCreation(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Cache-write tokens by time to live."""

    ephemeral_5m_input_tokens: int | None = None
    """Input tokens written to the 5-minute cache."""
    ephemeral_1h_input_tokens: int | None = None
    """Input tokens written to the 1-hour cache."""


class ServerToolUsage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How often server tools ran."""

    web_search_requests: int | None = None
    """Web searches run."""
    web_fetch_requests: int | None = None
    """Web fetches run."""


class Usage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Token usage of a message. `input_tokens` excludes cache reads and writes."""

    input_tokens: int | None = None
    """Input tokens that were neither read from nor written to the prompt cache."""
    output_tokens: int | None = None
    """Generated tokens (thinking included; not reported apart)."""
    cache_creation_input_tokens: int | None = None
    """Input tokens written to the prompt cache."""
    cache_read_input_tokens: int | None = None
    """Input tokens read from the prompt cache."""
    cache_creation: CacheCreation | None = None
    """Cache-write tokens by time to live."""
    server_tool_use: ServerToolUsage | None = None
    """How often server tools ran."""
    service_tier: str | None = None
    """The tier that served the request."""


class MessageDeltaUsage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Cumulative usage carried by `message_delta`; each present count overrides the start's."""

    output_tokens: int | None = None
    """Generated tokens so far."""
    input_tokens: int | None = None
    """Input tokens, when the server reports them late."""
    cache_creation_input_tokens: int | None = None
    """Input tokens written to the prompt cache."""
    cache_read_input_tokens: int | None = None
    """Input tokens read from the prompt cache."""
    server_tool_use: ServerToolUsage | None = None
    """How often server tools ran."""


class Message(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A Messages API response body, and the `message` of `message_start`."""

    id: str
    """Unique message id (`msg_...`)."""
    type: str = "message"
    """Always `message`."""
    role: str = "assistant"
    """Always `assistant`."""
    model: str
    """The model that produced the message."""
    content: list[dict[str, Any]]
    """Content blocks in order; each an open object tagged by `type` (see `ContentBlock`)."""
    stop_reason: str | None = None
    """Why generation stopped (`end_turn`, `max_tokens`, `stop_sequence`, `tool_use`, ...)."""
    stop_sequence: str | None = None
    """The custom stop sequence that was generated, if any."""
    stop_details: dict[str, Any] | None | UnsetType = UNSET
    """Structured detail on why output stopped (refusals)."""
    usage: Usage
    """Token usage."""
    container: dict[str, Any] | None | UnsetType = UNSET
    """The container used by code execution, if any."""
    context_management: dict[str, Any] | None | UnsetType = UNSET
    """What context editing did (beta)."""


_message_decoder = msgspec.json.Decoder(Message)


def decode_message(data: bytes | str) -> Message:
    """Decode a Messages response body; raises `msgspec.DecodeError` when it is not one."""
    return _message_decoder.decode(data)
