"""The union of every Responses stream event, and the decoder that falls back on `UnknownEvent`."""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType

from ._events import (
    ResponseAudioDeltaEvent,
    ResponseAudioDoneEvent,
    ResponseAudioTranscriptDeltaEvent,
    ResponseAudioTranscriptDoneEvent,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseIncompleteEvent,
    ResponseInProgressEvent,
    ResponseKeepaliveEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputTextAnnotationAddedEvent,
    ResponseQueuedEvent,
    ResponseReasoningSummaryPartAddedEvent,
    ResponseReasoningSummaryPartDoneEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningSummaryTextDoneEvent,
    ResponseReasoningTextDeltaEvent,
    ResponseReasoningTextDoneEvent,
    ResponseRefusalDeltaEvent,
    ResponseRefusalDoneEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)
from ._tool_events import (
    ResponseApplyPatchCallOperationDiffDeltaEvent,
    ResponseApplyPatchCallOperationDiffDoneEvent,
    ResponseCodeInterpreterCallCodeDeltaEvent,
    ResponseCodeInterpreterCallCodeDoneEvent,
    ResponseCodeInterpreterCallCompletedEvent,
    ResponseCodeInterpreterCallInProgressEvent,
    ResponseCodeInterpreterCallInterpretingEvent,
    ResponseCompactionCompactingEvent,
    ResponseCustomToolCallInputDeltaEvent,
    ResponseCustomToolCallInputDoneEvent,
    ResponseFileSearchCallCompletedEvent,
    ResponseFileSearchCallInProgressEvent,
    ResponseFileSearchCallSearchingEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseImageGenCallCompletedEvent,
    ResponseImageGenCallGeneratingEvent,
    ResponseImageGenCallInProgressEvent,
    ResponseImageGenCallPartialImageEvent,
    ResponseMcpCallArgumentsDeltaEvent,
    ResponseMcpCallArgumentsDoneEvent,
    ResponseMcpCallCompletedEvent,
    ResponseMcpCallFailedEvent,
    ResponseMcpCallInProgressEvent,
    ResponseMcpListToolsCompletedEvent,
    ResponseMcpListToolsFailedEvent,
    ResponseMcpListToolsInProgressEvent,
    ResponseShellCallCommandAddedEvent,
    ResponseShellCallCommandDeltaEvent,
    ResponseShellCallCommandDoneEvent,
    ResponseShellCallOutputContentDeltaEvent,
    ResponseShellCallOutputContentDoneEvent,
    ResponseWebSearchCallCompletedEvent,
    ResponseWebSearchCallInProgressEvent,
    ResponseWebSearchCallSearchingEvent,
)

__all__ = ["EVENT_TYPES", "StreamEvent", "UnknownEvent", "decode_event", "event_decoder"]


class UnknownEvent(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Any event whose `type` is not one of `EVENT_TYPES` (a future or provider-specific event)."""

    type: str | UnsetType = UNSET
    """The event type, if the payload names one."""


StreamEvent = (
    ResponseCreatedEvent
    | ResponseQueuedEvent
    | ResponseInProgressEvent
    | ResponseCompletedEvent
    | ResponseIncompleteEvent
    | ResponseFailedEvent
    | ResponseOutputItemAddedEvent
    | ResponseOutputItemDoneEvent
    | ResponseContentPartAddedEvent
    | ResponseContentPartDoneEvent
    | ResponseTextDeltaEvent
    | ResponseTextDoneEvent
    | ResponseOutputTextAnnotationAddedEvent
    | ResponseRefusalDeltaEvent
    | ResponseRefusalDoneEvent
    | ResponseReasoningTextDeltaEvent
    | ResponseReasoningTextDoneEvent
    | ResponseReasoningSummaryPartAddedEvent
    | ResponseReasoningSummaryPartDoneEvent
    | ResponseReasoningSummaryTextDeltaEvent
    | ResponseReasoningSummaryTextDoneEvent
    | ResponseFunctionCallArgumentsDeltaEvent
    | ResponseFunctionCallArgumentsDoneEvent
    | ResponseCustomToolCallInputDeltaEvent
    | ResponseCustomToolCallInputDoneEvent
    | ResponseMcpCallArgumentsDeltaEvent
    | ResponseMcpCallArgumentsDoneEvent
    | ResponseCodeInterpreterCallCodeDeltaEvent
    | ResponseCodeInterpreterCallCodeDoneEvent
    | ResponseApplyPatchCallOperationDiffDeltaEvent
    | ResponseApplyPatchCallOperationDiffDoneEvent
    | ResponseShellCallCommandAddedEvent
    | ResponseShellCallCommandDeltaEvent
    | ResponseShellCallCommandDoneEvent
    | ResponseShellCallOutputContentDeltaEvent
    | ResponseShellCallOutputContentDoneEvent
    | ResponseFileSearchCallInProgressEvent
    | ResponseFileSearchCallSearchingEvent
    | ResponseFileSearchCallCompletedEvent
    | ResponseWebSearchCallInProgressEvent
    | ResponseWebSearchCallSearchingEvent
    | ResponseWebSearchCallCompletedEvent
    | ResponseCodeInterpreterCallInProgressEvent
    | ResponseCodeInterpreterCallInterpretingEvent
    | ResponseCodeInterpreterCallCompletedEvent
    | ResponseImageGenCallInProgressEvent
    | ResponseImageGenCallGeneratingEvent
    | ResponseImageGenCallCompletedEvent
    | ResponseImageGenCallPartialImageEvent
    | ResponseMcpCallInProgressEvent
    | ResponseMcpCallCompletedEvent
    | ResponseMcpCallFailedEvent
    | ResponseMcpListToolsInProgressEvent
    | ResponseMcpListToolsCompletedEvent
    | ResponseMcpListToolsFailedEvent
    | ResponseCompactionCompactingEvent
    | ResponseAudioDeltaEvent
    | ResponseAudioDoneEvent
    | ResponseAudioTranscriptDeltaEvent
    | ResponseAudioTranscriptDoneEvent
    | ResponseErrorEvent
    | ResponseKeepaliveEvent
)
"""Every stream event the Responses API documents, tagged by `type` (see `decode_event` for the fallback)."""

EVENT_TYPES: Final[frozenset[str]] = frozenset(
    str(cls.__struct_config__.tag) for cls in StreamEvent.__args__
)
"""The `type` of every event in `StreamEvent`."""

event_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(StreamEvent)
"""Decodes one event payload as a `StreamEvent`; the stream state's first try at every event."""
_unknown_decoder = msgspec.json.Decoder(UnknownEvent)


def decode_event(data: bytes | str) -> Any:
    """Decode one event payload as a `StreamEvent`, or `UnknownEvent` when its type is not a known one.

    Raises `msgspec.DecodeError` / `msgspec.ValidationError` for invalid JSON, a non-object,
    or a known event type whose fields have the wrong shape (what the JSON Schema rejects too).
    """
    try:
        return event_decoder.decode(data)
    except msgspec.ValidationError:
        unknown = _unknown_decoder.decode(data)
        if isinstance(unknown.type, str) and unknown.type in EVENT_TYPES:
            raise
        return unknown
