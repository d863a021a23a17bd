"""Stream events of the OpenAI Responses API that carry the response and its messages.

Lifecycle events, output items, content parts, output and refusal text, reasoning text
and summaries, audio, errors and keepalives; the events of tool calls are in
`_tool_events`. Like the bodies they are open Structs, tagged by `type`.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from ._wire import Response

__all__ = [
    "ResponseAudioDeltaEvent",
    "ResponseAudioDoneEvent",
    "ResponseAudioTranscriptDeltaEvent",
    "ResponseAudioTranscriptDoneEvent",
    "ResponseCompletedEvent",
    "ResponseContentPartAddedEvent",
    "ResponseContentPartDoneEvent",
    "ResponseCreatedEvent",
    "ResponseErrorEvent",
    "ResponseFailedEvent",
    "ResponseInProgressEvent",
    "ResponseIncompleteEvent",
    "ResponseKeepaliveEvent",
    "ResponseOutputItemAddedEvent",
    "ResponseOutputItemDoneEvent",
    "ResponseOutputTextAnnotationAddedEvent",
    "ResponseQueuedEvent",
    "ResponseReasoningSummaryPartAddedEvent",
    "ResponseReasoningSummaryPartDoneEvent",
    "ResponseReasoningSummaryTextDeltaEvent",
    "ResponseReasoningSummaryTextDoneEvent",
    "ResponseReasoningTextDeltaEvent",
    "ResponseReasoningTextDoneEvent",
    "ResponseRefusalDeltaEvent",
    "ResponseRefusalDoneEvent",
    "ResponseTextDeltaEvent",
    "ResponseTextDoneEvent",
]

_Any = dict[str, Any]


class _Event(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type"):
    """Fields every stream event has."""

    sequence_number: int | UnsetType = UNSET
    """Position of the event in the stream."""


class _LifecycleEvent(_Event, kw_only=True):
    response: Response
    """The response as of this event."""


class ResponseCreatedEvent(_LifecycleEvent, tag="response.created", kw_only=True):
    """The response was created (first event of a stream)."""


class ResponseQueuedEvent(_LifecycleEvent, tag="response.queued", kw_only=True):
    """The response is queued (background mode; first event of a resumed stream)."""


class ResponseInProgressEvent(_LifecycleEvent, tag="response.in_progress", kw_only=True):
    """The response is being generated."""


class ResponseCompletedEvent(_LifecycleEvent, tag="response.completed", kw_only=True):
    """Terminal: the response completed; carries the final response."""


class ResponseIncompleteEvent(_LifecycleEvent, tag="response.incomplete", kw_only=True):
    """Terminal: the response finished incomplete (e.g. max_output_tokens)."""


class ResponseFailedEvent(_LifecycleEvent, tag="response.failed", kw_only=True):
    """Terminal: the response failed; `response.error` says why."""


class _OutputItemEvent(_Event, kw_only=True):
    output_index: int
    """Position of the item in `response.output`."""
    item: _Any
    """The output item (message, function_call, reasoning, ...), an open object tagged by `type`."""


class ResponseOutputItemAddedEvent(
    _OutputItemEvent, tag="response.output_item.added", kw_only=True
):
    """An output item was added."""


class ResponseOutputItemDoneEvent(_OutputItemEvent, tag="response.output_item.done", kw_only=True):
    """An output item is complete; carries the final item."""


class _ItemEvent(_Event, kw_only=True):
    item_id: str | UnsetType = UNSET
    """Id of the output item (may change from event to event with some providers)."""
    output_index: int
    """Position of the item in `response.output`."""


class _ContentEvent(_ItemEvent, kw_only=True):
    content_index: int = 0
    """Position of the content part in the item's `content`."""


class ResponseContentPartAddedEvent(_ContentEvent, tag="response.content_part.added", kw_only=True):
    """A content part was added to a message or reasoning item."""

    part: _Any
    """The content part (output_text, refusal, reasoning_text)."""


class ResponseContentPartDoneEvent(_ContentEvent, tag="response.content_part.done", kw_only=True):
    """A content part is complete; carries the final part."""

    part: _Any
    """The final content part."""


class _DeltaMixin(_ContentEvent, kw_only=True):
    delta: str
    """The text fragment to append."""
    obfuscation: str | UnsetType = UNSET
    """Random padding that hides the length of the delta."""


class ResponseTextDeltaEvent(_DeltaMixin, tag="response.output_text.delta", kw_only=True):
    """A fragment of output text."""

    logprobs: list[_Any] | None | UnsetType = UNSET
    """Log probabilities of the tokens in the delta."""


class ResponseTextDoneEvent(_ContentEvent, tag="response.output_text.done", kw_only=True):
    """An output text part is complete."""

    text: str
    """The full text of the part."""
    logprobs: list[_Any] | None | UnsetType = UNSET
    """Log probabilities of the tokens of the part."""


class ResponseOutputTextAnnotationAddedEvent(
    _ContentEvent, tag="response.output_text.annotation.added", kw_only=True
):
    """An annotation (citation, file path, ...) was added to an output text part."""

    annotation_index: int = 0
    """Position of the annotation in the part's `annotations`."""
    annotation: _Any | None | UnsetType = UNSET
    """The annotation."""


class ResponseRefusalDeltaEvent(_DeltaMixin, tag="response.refusal.delta", kw_only=True):
    """A fragment of refusal text."""


class ResponseRefusalDoneEvent(_ContentEvent, tag="response.refusal.done", kw_only=True):
    """A refusal part is complete."""

    refusal: str
    """The full refusal text."""


class ResponseReasoningTextDeltaEvent(
    _DeltaMixin, tag="response.reasoning_text.delta", kw_only=True
):
    """A fragment of raw reasoning text."""


class ResponseReasoningTextDoneEvent(
    _ContentEvent, tag="response.reasoning_text.done", kw_only=True
):
    """A reasoning text part is complete."""

    text: str
    """The full reasoning text of the part."""


class _SummaryEvent(_ItemEvent, kw_only=True):
    summary_index: int = 0
    """Position of the summary part in the reasoning item's `summary`."""


class ResponseReasoningSummaryPartAddedEvent(
    _SummaryEvent, tag="response.reasoning_summary_part.added", kw_only=True
):
    """A reasoning summary part was added."""

    part: _Any
    """The summary part (`summary_text`)."""


class ResponseReasoningSummaryPartDoneEvent(
    _SummaryEvent, tag="response.reasoning_summary_part.done", kw_only=True
):
    """A reasoning summary part is complete."""

    part: _Any
    """The final summary part."""
    status: str | None | UnsetType = UNSET
    """`incomplete` when the part was cut."""


class ResponseReasoningSummaryTextDeltaEvent(
    _SummaryEvent, tag="response.reasoning_summary_text.delta", kw_only=True
):
    """A fragment of reasoning summary text."""

    delta: str
    """The text fragment to append."""
    obfuscation: str | UnsetType = UNSET
    """Random padding that hides the length of the delta."""


class ResponseReasoningSummaryTextDoneEvent(
    _SummaryEvent, tag="response.reasoning_summary_text.done", kw_only=True
):
    """A reasoning summary text is complete."""

    text: str
    """The full summary text."""


class ResponseAudioDeltaEvent(_Event, tag="response.audio.delta", kw_only=True):
    """A fragment of output audio."""

    delta: str
    """Base64-encoded audio bytes."""


class ResponseAudioDoneEvent(_Event, tag="response.audio.done", kw_only=True):
    """The output audio is complete."""


class ResponseAudioTranscriptDeltaEvent(
    _Event, tag="response.audio.transcript.delta", kw_only=True
):
    """A fragment of the output audio's transcript."""

    delta: str
    """The transcript fragment."""


class ResponseAudioTranscriptDoneEvent(_Event, tag="response.audio.transcript.done", kw_only=True):
    """The output audio's transcript is complete."""


class ResponseErrorEvent(_Event, tag="error", kw_only=True):
    """Terminal: an error occurred while streaming (fields flat, or nested under `error`)."""

    code: str | None | UnsetType = UNSET
    """Error code."""
    message: str | None | UnsetType = UNSET
    """Human-readable description."""
    param: str | None | UnsetType = UNSET
    """The request parameter the error is about."""
    error: _Any | None | UnsetType = UNSET
    """The error object (`type`, `code`, `message`, `param`), as the API sends it today."""


class ResponseKeepaliveEvent(_Event, tag="keepalive", kw_only=True):
    """A heartbeat sent during long-running responses; carries no response state."""
