"""Anthropic Messages stream events, their SSE names and the event decoder."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from ..._codec import decode
from ._blocks import ContentBlockDelta, struct_tag
from ._wire import Message, MessageDeltaUsage

__all__ = [
    "EVENT_NAMES",
    "KNOWN_EVENT_TYPES",
    "ContentBlockDeltaEvent",
    "ContentBlockStartEvent",
    "ContentBlockStopEvent",
    "ErrorBody",
    "ErrorEvent",
    "MessageDelta",
    "MessageDeltaEvent",
    "MessageStartEvent",
    "MessageStopEvent",
    "PingEvent",
    "StreamEvent",
    "UnknownEvent",
    "decode_event",
]

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
"""The SSE `event:` names a Messages server sends."""

# The events that arrive by the thousand (delta, stop, ping) are `gc=False`, as the deltas
# in `_blocks` are and for the same reason.


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


KNOWN_EVENT_TYPES = frozenset(struct_tag(t) for t in StreamEvent.__args__)
"""The `type`s of `StreamEvent`."""

_event_decoder: msgspec.json.Decoder[StreamEvent] = msgspec.json.Decoder(StreamEvent)


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
