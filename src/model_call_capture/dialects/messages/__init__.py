"""Anthropic Messages: wire types, stream reassembly and record derivation.

The wire types are open msgspec Structs (unknown fields are ignored, never rejected) that
mirror `schemas/v1/dialects/anthropic-messages.schema.json`: the request, message and
usage in `_wire`, content blocks and deltas in `_blocks` (blocks stay plain JSON objects
inside a message; `block_view()` gives the typed view of one), stream events and their
decoder in `_events`. `StreamState` (in `_state`, with `may_end`) reassembles a stream
without I/O and documents where it departs from the SDK; `derive` (in `_derive`) reads
record facts from a request and response. This module is the dialect's public surface.
"""

from __future__ import annotations

from ._blocks import (
    KNOWN_BLOCK_TYPES,
    KNOWN_DELTA_TYPES,
    AdvisorToolResultBlock,
    BashCodeExecutionToolResultBlock,
    CitationsDelta,
    CodeExecutionToolResultBlock,
    CompactionBlock,
    CompactionDelta,
    ContainerUploadBlock,
    ContentBlock,
    ContentBlockDelta,
    FallbackBlock,
    InputJSONDelta,
    MCPToolListingBlock,
    MCPToolResultBlock,
    MCPToolUseBlock,
    RedactedThinkingBlock,
    ServerToolUseBlock,
    SignatureDelta,
    TextBlock,
    TextDelta,
    TextEditorCodeExecutionToolResultBlock,
    ThinkingBlock,
    ThinkingDelta,
    ToolSearchToolResultBlock,
    ToolUseBlock,
    WebFetchToolResultBlock,
    WebSearchToolResultBlock,
    block_view,
)
from ._derive import derive
from ._events import (
    EVENT_NAMES,
    KNOWN_EVENT_TYPES,
    ContentBlockDeltaEvent,
    ContentBlockStartEvent,
    ContentBlockStopEvent,
    ErrorBody,
    ErrorEvent,
    MessageDelta,
    MessageDeltaEvent,
    MessageStartEvent,
    MessageStopEvent,
    PingEvent,
    StreamEvent,
    UnknownEvent,
    decode_event,
)
from ._state import (
    END_MARKER_LEN,
    StreamState,
    may_end,
    new_stream_state,
)
from ._turns import request_tools, request_turns, response_turns
from ._wire import (
    CacheCreation,
    Message,
    MessageDeltaUsage,
    Request,
    ServerToolUsage,
    Usage,
    decode_message,
)

__all__ = [
    "END_MARKER_LEN",
    "EVENT_NAMES",
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
    "may_end",
    "new_stream_state",
    "request_tools",
    "request_turns",
    "response_turns",
]

NAME = "messages"
PATH = "/v1/messages"
