"""Anthropic Messages: wire types, terminal events, stream reassembly and record derivation.

The wire types are open msgspec Structs (unknown fields are ignored, never rejected) that
mirror `schemas/v1/dialects/anthropic-messages.schema.json`. Content blocks stay plain JSON
objects inside `Message` and `ContentBlockStartEvent`: Anthropic adds block types every
few months, and msgspec cannot give a tagged union an open fallback, so a typed union
there would reject the next new block. `block_view()` gives the typed view of one block.

Stream reassembly follows the wire format, not the SDK's accumulator, where they differ:

- every string a delta carries is appended to the same field of its block: `text_delta`,
  `thinking_delta`, `signature_delta` and `compaction_delta` alike. The SDK *replaces* the
  signature (and the compaction fields); the API sends the signature in one delta after
  an empty start value, so both give the same result on every recorded stream, and
  appending is the rule that loses nothing if it is ever sent in pieces. A delta type
  this module does not know is merged by the same rule and noted in `dropped`;
- `citations_delta` appends its citation to the text block's `citations`;
- `input_json_delta` fragments are joined and parsed once, when the message is built;
  text that is not valid JSON (a cut stream, a model's broken arguments) is kept as
  `{"_raw": text}` as NeMo Gym does, where the SDK raises or loses a half-written string;
- `message_delta` usage overrides `message_start` usage key by key; a null never erases a
  known value; `stop_reason`, `stop_sequence` (which NeMo Gym drops), `stop_details`,
  `container` and top-level extras such as `context_management` are kept;
- events without an `event:` line are used (the SDK drops them); the type comes from the
  payload, else from the event name. `message_stop` completes the stream; an `error`
  event (by name or type, with or without a `type` in its payload) ends it with "error";
- a second `message_start` for the same message before any block arrived is a duplicate
  and ignored; any other `message_start` while a message is open means the stream was
  restarted (a retrying proxy splicing two attempts): the later message replaces the
  unfinished one, which is described in `dropped`. The SDK keeps the first envelope and
  mixes both messages' blocks; vercel/ai fails the stream;
- a `fallback` block's `to.model` becomes the message's `model`, as in the non-streaming
  body (the SDK does the same);
- blocks are kept by their `index`, so a block that arrives out of order still lands in
  its place, and a repeated `content_block_start` for an index replaces that block.

Nothing here raises on garbage: data that is not a JSON object, events out of order and
deltas for unknown blocks are skipped and noted in `StreamResult.dropped`.
"""

from __future__ import annotations

from typing import Any, TypeGuard, cast

import msgspec
from msgspec import UNSET, UnsetType

from .._codec import decode, decode_object, raw_text
from ..contracts import ToolCall
from ..sse import SseEvent
from ._text import TextParts
from .base import (
    Derived,
    NotList,
    NotObject,
    Payload,
    StreamResult,
    Terminal,
    decode_view,
    escaped_ascii,
    request_model,
    token_count,
)

__all__ = [
    "KNOWN_BLOCK_TYPES",
    "KNOWN_DELTA_TYPES",
    "KNOWN_EVENT_TYPES",
    "NAME",
    "PATH",
    "AdvisorToolResultBlock",
    "BashCodeExecutionToolResultBlock",
    "CacheCreation",
    "CitationsDelta",
    "CodeExecutionToolResultBlock",
    "CompactionBlock",
    "CompactionDelta",
    "ContainerUploadBlock",
    "ContentBlock",
    "ContentBlockDelta",
    "ContentBlockDeltaEvent",
    "ContentBlockStartEvent",
    "ContentBlockStopEvent",
    "ErrorBody",
    "ErrorEvent",
    "FallbackBlock",
    "InputJSONDelta",
    "MCPToolListingBlock",
    "MCPToolResultBlock",
    "MCPToolUseBlock",
    "Message",
    "MessageDelta",
    "MessageDeltaEvent",
    "MessageDeltaUsage",
    "MessageStartEvent",
    "MessageStopEvent",
    "PingEvent",
    "RedactedThinkingBlock",
    "Request",
    "ServerToolUsage",
    "ServerToolUseBlock",
    "SignatureDelta",
    "StreamEvent",
    "StreamState",
    "TextBlock",
    "TextDelta",
    "TextEditorCodeExecutionToolResultBlock",
    "ThinkingBlock",
    "ThinkingDelta",
    "ToolSearchToolResultBlock",
    "ToolUseBlock",
    "UnknownEvent",
    "Usage",
    "WebFetchToolResultBlock",
    "WebSearchToolResultBlock",
    "block_view",
    "decode_event",
    "decode_message",
    "derive",
    "new_stream_state",
]

NAME = "messages"
PATH = "/v1/messages"
EVENT_NAMES: tuple[str, ...] = (
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
)
"""The `event:` names the SSE decoder looks up instead of decoding."""


# --- wire types -------------------------------------------------------------------------
# Open objects: msgspec ignores unknown fields by default, and no Struct here forbids them.
# `UNSET` keeps "absent" apart from "null" where the API tells them apart.


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


# Content blocks: the typed views of `Message.content` items.


class TextBlock(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="text"):
    """Text the model wrote."""

    text: str
    """The text."""
    citations: list[dict[str, Any]] | None = None
    """Sources the text cites."""


class ThinkingBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="thinking"
):
    """The model's extended thinking."""

    thinking: str
    """The thinking text."""
    signature: str | UnsetType = UNSET
    """Opaque signature to send back with the block."""


class RedactedThinkingBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="redacted_thinking"
):
    """Thinking that was encrypted by the safety system."""

    data: str
    """Opaque encrypted thinking."""


class ToolUseBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="tool_use"
):
    """A call of a client tool: the caller runs it and answers with a `tool_result`."""

    id: str
    """The call id (`toolu_...`)."""
    name: str
    """The tool's name."""
    input: Any
    """The arguments (a JSON object)."""
    caller: dict[str, Any] | UnsetType = UNSET
    """Who made the call, when not the model directly (programmatic tool calling)."""


class ServerToolUseBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="server_tool_use"
):
    """A call of a server tool (web search, code execution, ...) that the API runs itself."""

    id: str
    """The call id (`srvtoolu_...`)."""
    name: str
    """The server tool's name."""
    input: Any
    """The arguments (a JSON object)."""
    caller: dict[str, Any] | UnsetType = UNSET
    """Who made the call, when not the model directly."""


class MCPToolUseBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="mcp_tool_use"
):
    """A call of a tool on an MCP server, run by the API (beta)."""

    id: str
    """The call id."""
    name: str
    """The tool's name."""
    server_name: str
    """The MCP server's name."""
    input: Any
    """The arguments (a JSON object)."""


class MCPToolResultBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="mcp_tool_result"
):
    """The result of an MCP tool call (beta)."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """The result: a string or text blocks."""
    is_error: bool = False
    """True when the call failed."""


class WebSearchToolResultBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="web_search_tool_result"
):
    """Web search results."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """A list of results, or an error object."""
    caller: dict[str, Any] | UnsetType = UNSET
    """Who made the call, when not the model directly."""


class WebFetchToolResultBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="web_fetch_tool_result"
):
    """A fetched web page."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """The fetched document, or an error object."""
    caller: dict[str, Any] | UnsetType = UNSET
    """Who made the call, when not the model directly."""


class CodeExecutionToolResultBlock(
    msgspec.Struct,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag="code_execution_tool_result",
):
    """The result of running code."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """stdout, stderr, return code and files, or an error object."""


class BashCodeExecutionToolResultBlock(
    msgspec.Struct,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag="bash_code_execution_tool_result",
):
    """The result of a bash command run by code execution."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """stdout, stderr, return code and files, or an error object."""


class TextEditorCodeExecutionToolResultBlock(
    msgspec.Struct,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag="text_editor_code_execution_tool_result",
):
    """The result of a file operation run by code execution."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """What the operation returned, or an error object."""


class ToolSearchToolResultBlock(
    msgspec.Struct,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag="tool_search_tool_result",
):
    """Tools found by the tool search tool."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """The tool references found, or an error object."""


class AdvisorToolResultBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="advisor_tool_result"
):
    """Advice returned by the advisor tool (beta)."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """The advice, redacted advice, or an error object."""


class ContainerUploadBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="container_upload"
):
    """A file uploaded to the code-execution container."""

    file_id: str
    """The uploaded file's id."""


class CompactionBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="compaction"
):
    """A summary of earlier context written by automatic compaction (beta)."""

    content: str | None = None
    """The summary; null when compaction failed."""
    encrypted_content: str | None = None
    """Opaque metadata to send back verbatim."""
    signature: str | None = None
    """Signature over the summary."""


class FallbackBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="fallback"
):
    """The point where one model's output gives way to a fallback model's (beta)."""

    from_: dict[str, Any] = msgspec.field(name="from")
    """The model that declined."""
    to: dict[str, Any]
    """The model that continues."""
    trigger: dict[str, Any] | UnsetType = UNSET
    """What made the first model hand over."""


class MCPToolListingBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="mcp_tool_listing"
):
    """The tools the API listed on an MCP server (beta)."""

    mcp_server_name: str
    """The MCP server's name."""
    tools: list[dict[str, Any]]
    """The tools listed."""


ContentBlock = (
    TextBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolUseBlock
    | ServerToolUseBlock
    | MCPToolUseBlock
    | MCPToolResultBlock
    | WebSearchToolResultBlock
    | WebFetchToolResultBlock
    | CodeExecutionToolResultBlock
    | BashCodeExecutionToolResultBlock
    | TextEditorCodeExecutionToolResultBlock
    | ToolSearchToolResultBlock
    | AdvisorToolResultBlock
    | ContainerUploadBlock
    | CompactionBlock
    | FallbackBlock
    | MCPToolListingBlock
)
"""Every content block type the Anthropic SDK (2.14, beta included) knows, tagged by `type`."""


# Deltas of `content_block_delta`.
# The events that arrive by the thousand (deltas, stops, pings) are `gc=False`: decoded
# from JSON and short-lived, they are never in a reference cycle, so the cyclic GC need
# not track them (a tenth of their decoding time).


class TextDelta(msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="text_delta"):
    """More text for a `text` block."""

    text: str
    """The text fragment."""


class InputJSONDelta(
    msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="input_json_delta"
):
    """A fragment of a tool call's JSON arguments."""

    partial_json: str
    """The JSON text fragment; the fragments of a block joined are its `input`."""


class CitationsDelta(msgspec.Struct, kw_only=True, tag_field="type", tag="citations_delta"):
    """One more citation for a `text` block."""

    citation: dict[str, Any]
    """The citation (open object tagged by `type`)."""


class ThinkingDelta(msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="thinking_delta"):
    """More thinking text for a `thinking` block."""

    thinking: str
    """The thinking fragment."""


class SignatureDelta(
    msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="signature_delta"
):
    """The signature of a `thinking` block, sent just before its `content_block_stop`."""

    signature: str
    """The signature (appended to the block's, which starts empty)."""


class CompactionDelta(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="compaction_delta"
):
    """Content of a `compaction` block (beta)."""

    content: str | None = None
    """Summary text."""
    encrypted_content: str | None = None
    """Opaque metadata to send back verbatim."""


ContentBlockDelta = (
    TextDelta | InputJSONDelta | CitationsDelta | ThinkingDelta | SignatureDelta | CompactionDelta
)
"""Every delta type the Anthropic SDK (2.14, beta included) knows, tagged by `type`."""


# Stream events.


class MessageStartEvent(msgspec.Struct, kw_only=True, tag_field="type", tag="message_start"):
    """First event: the message envelope with empty (or prefilled) content and starting usage."""

    message: Message
    """The message so far."""


class ContentBlockStartEvent(
    msgspec.Struct, kw_only=True, tag_field="type", tag="content_block_start"
):
    """A content block begins at `index`."""

    index: int
    """The block's position in `content`."""
    content_block: dict[str, Any]
    """The block's starting value (open object tagged by `type`, see `ContentBlock`)."""


class ContentBlockDeltaEvent(
    msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="content_block_delta"
):
    """More content for the block at `index`."""

    index: int
    """The block's position in `content`."""
    delta: ContentBlockDelta
    """What to add."""


class ContentBlockStopEvent(
    msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="content_block_stop"
):
    """The block at `index` is complete."""

    index: int
    """The block's position in `content`."""


class MessageDelta(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Top-level message fields changed by `message_delta`."""

    stop_reason: str | None = None
    """Why generation stopped."""
    stop_sequence: str | None = None
    """The custom stop sequence that was generated, if any."""
    stop_details: dict[str, Any] | None | UnsetType = UNSET
    """Structured detail on why output stopped."""
    container: dict[str, Any] | None | UnsetType = UNSET
    """The container used by code execution."""


class MessageDeltaEvent(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="message_delta"
):
    """Final top-level changes and cumulative usage, just before `message_stop`."""

    delta: MessageDelta
    """Changed message fields."""
    usage: MessageDeltaUsage | None = None
    """Cumulative usage."""
    context_management: dict[str, Any] | None | UnsetType = UNSET
    """What context editing did (beta)."""


class MessageStopEvent(
    msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="message_stop"
):
    """Last event of a complete stream."""


class PingEvent(msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="ping"):
    """Keep-alive; carries nothing."""


class ErrorBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What went wrong."""

    type: str | UnsetType = UNSET
    """Error kind (`overloaded_error`, `api_error`, ...)."""
    message: str | UnsetType = UNSET
    """Human-readable description."""


class ErrorEvent(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="error"):
    """An error that ends the stream."""

    error: ErrorBody
    """What went wrong."""
    request_id: str | None | UnsetType = UNSET
    """The request's id, when the server sends it."""


StreamEvent = (
    MessageStartEvent
    | ContentBlockStartEvent
    | ContentBlockDeltaEvent
    | ContentBlockStopEvent
    | MessageDeltaEvent
    | MessageStopEvent
    | PingEvent
    | ErrorEvent
)
"""Every stream event type the Anthropic SDK (2.14, beta included) knows, tagged by `type`."""


class UnknownEvent(msgspec.Struct, kw_only=True):
    """The open fallback of `decode_event`: an event the typed union does not describe."""

    type: str | None
    """The payload's `type` (else the SSE event name); None when neither gives one."""
    payload: Any
    """The decoded JSON payload, as sent."""


def _tag(tp: Any) -> str:
    return str(tp.__struct_config__.tag)


KNOWN_BLOCK_TYPES = frozenset(_tag(t) for t in ContentBlock.__args__)
"""The `type`s of `ContentBlock`."""
KNOWN_DELTA_TYPES = frozenset(_tag(t) for t in ContentBlockDelta.__args__)
"""The `type`s of `ContentBlockDelta`."""
KNOWN_EVENT_TYPES = frozenset(_tag(t) for t in StreamEvent.__args__)
"""The `type`s of `StreamEvent`."""

_event_decoder: msgspec.json.Decoder[StreamEvent] = msgspec.json.Decoder(StreamEvent)
_message_decoder = msgspec.json.Decoder(Message)


def decode_event(data: bytes | str, event: str = "") -> StreamEvent | UnknownEvent:
    """Decode one event payload into its typed Struct, or `UnknownEvent` when it is not one.

    An unknown event or delta type, or a known one with unexpected fields, decodes as
    `UnknownEvent` instead of being rejected; only data that is not JSON raises
    `msgspec.DecodeError`.
    """
    try:
        return _event_decoder.decode(data)
    except msgspec.ValidationError:
        payload = decode(data)
    kind = payload.get("type") if isinstance(payload, dict) else None
    return UnknownEvent(type=kind if isinstance(kind, str) else (event or None), payload=payload)


def decode_message(data: bytes | str) -> Message:
    """Decode a Messages response body; raises `msgspec.DecodeError` when it is not one."""
    return _message_decoder.decode(data)


def block_view(block: Any) -> ContentBlock | None:
    """The typed view of one content block; None for an unknown type or a malformed block."""
    try:
        return cast("ContentBlock", msgspec.convert(block, ContentBlock))
    except msgspec.ValidationError:
        return None


# --- stream reassembly ------------------------------------------------------------------

_MAX_DROPPED = 32
"""Notes kept per stream; a garbage stream must not grow memory with its length."""

_DELTA_BLOCK = {"text": "text", "thinking": "thinking", "signature": "thinking"}
"""The block type that the text of a known delta field belongs to."""

_DELTA_SKIP = frozenset({"type", "partial_json", "citation"})
"""Delta fields merged by hand, or not content at all."""


class _MessageStart(msgspec.Struct, tag_field="type", tag="message_start"):
    """`message_start` as the stream state reads it: its `message`, whatever it holds."""

    message: Any = None


class _BlockStart(msgspec.Struct, tag_field="type", tag="content_block_start"):
    """`content_block_start` as the stream state reads it: its `index` and block, unchecked."""

    index: Any = None
    content_block: Any = None


class _MessageDeltaTag(msgspec.Struct, tag_field="type", tag="message_delta"):
    """A `message_delta` recognised by its tag alone."""


class _ErrorTag(msgspec.Struct, tag_field="type", tag="error"):
    """An `error` recognised by its tag alone."""


_state_decoder = msgspec.json.Decoder(
    ContentBlockDeltaEvent
    | ContentBlockStopEvent
    | PingEvent
    | MessageStopEvent
    | _MessageStart
    | _BlockStart
    | _MessageDeltaTag
    | _ErrorTag
)
"""The stream state's one decode of a payload. Deltas, stops and pings are typed as in
`StreamEvent`; the two start events keep their fields as decoded JSON, as the generic path
reads them from the payload dict; `message_delta` and `error` are recognised by their tag
alone and go to the generic path, which decodes the payload as a dict (so does any payload
this union rejects)."""


class _Block:
    """One content block being built: its starting value plus the fragments since."""

    __slots__ = ("citations", "data", "json", "kind", "parts")

    def __init__(self, data: dict[str, Any]) -> None:
        self.kind = data.get("type")
        self.data = data
        self.parts: dict[str, TextParts] = {}
        self.citations: list[Any] = []
        self.json = TextParts()

    def build(self, index: int, dropped: list[str]) -> dict[str, Any]:
        out = dict(self.data)
        for key, parts in self.parts.items():
            start = out.get(key)
            out[key] = (start if isinstance(start, str) else "") + parts.value()
        if self.citations:
            start = out.get("citations")
            out["citations"] = (start if isinstance(start, list) else []) + self.citations
        if self.json:
            text = self.json.value()
            if text:
                try:
                    out["input"] = decode(text)
                except (msgspec.DecodeError, RecursionError):
                    out["input"] = {"_raw": text}
                    dropped.append(f"block {index}: tool input is not valid JSON; kept as _raw")
        return out


class StreamState:
    """Incremental reassembly of one Anthropic Messages stream (see the module docstring)."""

    __slots__ = (
        "_blocks",
        "_dropped",
        "_error",
        "_lost",
        "_message",
        "_started",
        "_terminal",
        "_touched",
        "_usage",
    )

    def __init__(self) -> None:
        self._terminal: Terminal | None = None
        self._error: dict[str, Any] | None = None
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, Any] = {}
        self._dropped: list[str] = []
        self._lost = 0
        self._started = False
        """True once a message_start was taken."""
        self._touched = False
        """True once a block or message_delta event changed the open message."""

    @property
    def terminal(self) -> Terminal | None:
        """The terminal kind once `message_stop` or an error event was fed, else None."""
        return self._terminal

    def feed(self, event: SseEvent) -> None:
        """Take one decoded SSE event; never raises, whatever it holds."""
        if self._terminal is not None:
            self._drop(f"{event.event or 'data'} event after the terminal event")
            return
        try:
            typed = _state_decoder.decode(event.data)
        except msgspec.ValidationError:
            typed = None
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            self._not_json(event)
            return
        # The hot path: deltas of text, thinking and tool arguments, decoded straight
        # into Structs and appended inline (nearly every event of a stream takes it).
        # Everything else is rare and goes through the generic path.
        if type(typed) is ContentBlockDeltaEvent and event.event != "error":
            delta = typed.delta
            try:
                block = self._blocks[typed.index]
            except KeyError:
                self._drop(f"{_tag(type(delta))} for unknown block {typed.index}")
                return
            self._touched = True
            if type(delta) is TextDelta:
                key, text = "text", delta.text
            elif type(delta) is ThinkingDelta:
                key, text = "thinking", delta.thinking
            elif type(delta) is InputJSONDelta:
                block.json.append(delta.partial_json)
                return
            elif type(delta) is SignatureDelta:
                key, text = "signature", delta.signature
            else:
                self._generic(decode_object(event.data) or {}, event.event)
                return
            if block.kind != _DELTA_BLOCK[key]:
                self._drop(f"{key} delta for {block.kind} block {typed.index}")
                return
            try:
                block.parts[key].append(text)
            except KeyError:
                block.parts[key] = TextParts(text)
            return
        if event.event == "error":
            typed = None  # the generic path ends the stream on it, whatever the payload says
        kind = type(typed)
        if kind is ContentBlockStopEvent or kind is PingEvent:
            return
        elif kind is MessageStopEvent:
            self._terminal = "complete"
        elif kind is _BlockStart:
            self._block_start(typed.index, typed.content_block)
        elif kind is _MessageStart:
            self._start(typed.message)
        else:
            payload = decode_object(event.data)
            if payload is None:
                self._not_json(event)
            else:
                self._generic(payload, event.event)

    def _not_json(self, event: SseEvent) -> None:
        if event.event == "error":
            self._terminal = "error"
            self._error = {"_raw": raw_text(event.data)}
        elif event.event == "message_stop":
            self._terminal = "complete"
        else:
            self._drop(f"{event.event or 'data'} event whose data is not a JSON object")

    def _append(self, block: _Block, key: str, text: str, index: int) -> None:
        expected = _DELTA_BLOCK.get(key)
        if expected is not None and block.kind != expected:
            self._drop(f"{key} delta for {block.kind} block {index}")
            return
        parts = block.parts.get(key)
        if parts is None:
            block.parts[key] = TextParts(text)
        else:
            parts.append(text)

    def _generic(self, payload: dict[str, Any], name: str) -> None:
        kind = payload.get("type")
        if not isinstance(kind, str):
            kind = name
        if kind == "error" or name == "error":
            self._terminal = "error"
            self._error = payload
        elif kind == "message_start":
            self._start(payload.get("message"))
        elif kind == "content_block_start":
            self._block_start(payload.get("index"), payload.get("content_block"))
        elif kind == "content_block_delta":
            self._delta(payload)
        elif kind == "message_delta":
            self._message_delta(payload)
        elif kind == "message_stop":
            self._terminal = "complete"
        elif kind not in ("ping", "content_block_stop"):
            self._drop(f"unknown event type {kind!r}")

    def _block_start(self, index: Any, block: Any) -> None:
        if not _is_index(index) or not isinstance(block, dict):
            self._drop("content_block_start without an index and a block object")
            return
        if index in self._blocks:
            self._drop(f"content_block_start for block {index} replaced the block")
        self._blocks[index] = _Block(dict(block))
        self._touched = True
        target = block.get("to")
        if (
            block.get("type") == "fallback"
            and isinstance(target, dict)
            and isinstance(target.get("model"), str)
        ):
            # The model that serves the rest of the message; the non-streaming body
            # names it in `model` too.
            if self._message is not None:
                self._message["model"] = target["model"]

    def _start(self, message: Any) -> None:
        if not isinstance(message, dict):
            self._drop("message_start without a message object")
            return
        pending: dict[str, Any] = {}
        if self._message is not None and not self._started:
            # Only a message_delta came before: keep what it set over the envelope.
            pending = self._message
        elif self._message is not None:
            if message.get("id") == self._message.get("id") and not self._touched:
                self._drop(f"duplicate message_start for {message.get('id')!r}")
                return
            self._drop(
                f"message_start {message.get('id')!r} replaced unfinished message "
                f"{self._message.get('id')!r} ({len(self._blocks)} blocks)"
            )
            self._blocks = {}
            self._usage = {}
        envelope = dict(message)
        envelope.update((k, v) for k, v in pending.items() if k not in ("type", "role"))
        content = envelope.get("content")
        if isinstance(content, list):
            for index, block in enumerate(content):
                if isinstance(block, dict) and index not in self._blocks:
                    self._blocks[index] = _Block(dict(block))
        usage = envelope.get("usage")
        if isinstance(usage, dict):
            self._usage = {**usage, **self._usage}
        self._message = envelope
        self._started = True
        self._touched = False

    def _delta(self, payload: dict[str, Any]) -> None:
        index, delta = payload.get("index"), payload.get("delta")
        if not _is_index(index) or not isinstance(delta, dict):
            self._drop("content_block_delta without an index and a delta object")
            return
        kind = delta.get("type")
        block = self._blocks.get(index)
        if block is None:
            self._drop(f"{kind} for unknown block {index}")
            return
        self._touched = True
        if kind not in KNOWN_DELTA_TYPES:
            self._drop(f"unknown delta type {kind!r} for block {index} merged by field name")
        partial = delta.get("partial_json")
        if isinstance(partial, str):
            block.json.append(partial)
        citation = delta.get("citation")
        if citation is not None:
            block.citations.append(citation)
        for key, value in delta.items():
            if key in _DELTA_SKIP or value is None:
                continue
            if isinstance(value, str):
                if kind in ("text_delta", "thinking_delta", "signature_delta"):
                    self._append(block, key, value, index)
                else:
                    parts = block.parts.get(key)
                    if parts is None:
                        block.parts[key] = TextParts(value)
                    else:
                        parts.append(value)
            else:
                block.data[key] = value

    def _message_delta(self, payload: dict[str, Any]) -> None:
        if self._message is None:
            self._message = {"type": "message", "role": "assistant"}
            self._drop("message_delta before message_start")
        self._touched = True
        delta = payload.get("delta")
        if isinstance(delta, dict):
            for key, value in delta.items():
                if value is not None or key not in self._message:
                    self._message[key] = value
        usage = payload.get("usage")
        if isinstance(usage, dict):
            for key, value in usage.items():
                if value is not None or key not in self._usage:
                    self._usage[key] = value
        for key, value in payload.items():
            if key not in ("type", "delta", "usage") and value is not None:
                self._message[key] = value

    def _drop(self, note: str) -> None:
        if len(self._dropped) < _MAX_DROPPED:
            self._dropped.append(note)
        else:
            self._lost += 1

    def result(self) -> StreamResult:
        """The message reassembled so far; partial (and `truncated`) without `message_stop`."""
        dropped = list(self._dropped)
        response: dict[str, Any] | None = None
        if self._message is not None or self._blocks:
            if not self._started:
                dropped.append("no message_start: the message envelope is missing")
            response = dict(self._message or {"type": "message", "role": "assistant"})
            response["content"] = [self._blocks[i].build(i, dropped) for i in sorted(self._blocks)]
            if self._usage or "usage" in response:
                response["usage"] = dict(self._usage)
        if self._lost:
            dropped.append(f"{self._lost} more notes not kept")
        return StreamResult(
            response=response,
            terminal=self._terminal,
            truncated=self._terminal is None,
            error=self._error,
            dropped=dropped,
        )


def _is_index(value: Any) -> TypeGuard[int]:
    return type(value) is int and value >= 0


END_MARKER_LEN = len("message_stop")
"""Length of the longest marker `may_end` looks for."""


def may_end(chunk: bytes) -> bool:
    """False only when SSE text holding `chunk` cannot complete the terminal event.

    What makes the state terminal: `message_stop` or `error`, as the event name or the
    data's `type`.
    """
    return b"message_stop" in chunk or b"error" in chunk or escaped_ascii(chunk)


def new_stream_state() -> StreamState:
    """A fresh stream state."""
    return StreamState()


# --- derivation -------------------------------------------------------------------------


class _UsageView(msgspec.Struct, gc=False):
    input_tokens: Any = None
    output_tokens: Any = None
    cache_read_input_tokens: Any = None
    cache_creation_input_tokens: Any = None


class _BlockView(msgspec.Struct, gc=False):
    type: Any = None
    id: Any = None
    name: Any = None
    input: Any = None
    thinking: Any = None


class _ResponseView(msgspec.Struct, gc=False):
    """The members of a Messages response that `derive` reads; the rest is skipped unread."""

    id: Any = None
    model: Any = None
    stop_reason: Any = None
    usage: _UsageView | NotObject = None
    content: list[_BlockView | NotObject] | NotList = None


_response_view = msgspec.json.Decoder(_ResponseView)


def derive(request: Payload, response: Payload) -> Derived:
    """Derive record facts from a request and a Messages response; never raises.

    `tokens_in` folds cache reads and writes into `input_tokens`, which excludes them;
    Anthropic reports no reasoning tokens, so `tokens_reasoning` stays None. Tool calls
    are the `tool_use` blocks (the calls the caller must run); server and MCP tool calls
    are run by the API and answered inside the same message. `reasoning_content` is the
    text of the `thinking` blocks joined with a newline (redacted thinking is opaque).
    `response_status` stays None: a Messages response has no status (NeMo Gym reads a
    `status` member of any body).
    """
    derived = Derived()
    resp = decode_view(response, _response_view) or _ResponseView()
    if isinstance(resp.id, str):
        derived.response_id = resp.id
    model = resp.model
    if not (isinstance(model, str) and model):
        model = request_model(request)
    if isinstance(model, str) and model:
        derived.model = model
    if isinstance(resp.stop_reason, str):
        derived.finish_reason = resp.stop_reason
    if isinstance(resp.usage, _UsageView):
        _derive_usage(derived, resp.usage)
    content = resp.content
    thinking: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, _BlockView):
                continue
            kind = block.type
            if kind == "tool_use":
                call_id, name = block.id, block.name
                derived.tool_calls.append(
                    ToolCall(
                        call_id=call_id if isinstance(call_id, str) else None,
                        name=name if isinstance(name, str) else None,
                        arguments=block.input,
                    )
                )
            elif kind == "thinking" and isinstance(block.thinking, str) and block.thinking:
                thinking.append(block.thinking)
    derived.reasoning_content = "\n".join(thinking) or None
    return derived


def _derive_usage(derived: Derived, usage: _UsageView) -> None:
    plain = token_count(usage.input_tokens)
    cached = usage.cache_read_input_tokens
    created = usage.cache_creation_input_tokens
    read_count, create_count = token_count(cached), token_count(created)
    derived.cached_tokens = read_count
    derived.cache_creation_tokens = create_count
    if read_count is not None:
        derived.cache_hit = read_count > 0
    # An absent cache count means no cache traffic; a present but invalid one is unknown.
    cache_known = (cached is None or read_count is not None) and (
        created is None or create_count is not None
    )
    if plain is not None and cache_known:
        derived.tokens_in = plain + (read_count or 0) + (create_count or 0)
    derived.tokens_out = token_count(usage.output_tokens)
    if derived.tokens_in is not None and derived.tokens_out is not None:
        derived.tokens_total = derived.tokens_in + derived.tokens_out
