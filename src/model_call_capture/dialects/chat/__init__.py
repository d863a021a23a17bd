"""OpenAI Chat Completions (`POST /v1/chat/completions`): everything the library knows of it.

One module per concern: `_wire` holds the wire types (open msgspec Structs mirroring
`schemas/v1/dialects/openai-chat.schema.json`) and the `event:` names its servers send,
`_stream` the I/O-free stream state that reassembles a stream into a `chat.completion`
and the terminal-marker check, `_derive` the record facts derived from a request and a
response. This module is the dialect's surface (`dialects.base.DialectModule`) plus its
public wire types.
"""

from __future__ import annotations

from ._derive import derive
from ._stream import END_MARKER_LEN, StreamState, may_end, new_stream_state
from ._turns import request_tools, request_turns, response_turns
from ._wire import (
    EVENT_NAMES,
    ChatCompletionChunk,
    Choice,
    ChoiceLogprobs,
    ChunkChoice,
    CompletionTokensDetails,
    Delta,
    ErrorChunk,
    ErrorObject,
    ErrorResponse,
    FunctionCall,
    FunctionCallDelta,
    Message,
    MessageToolCall,
    PromptTokensDetails,
    Request,
    Response,
    StreamOptions,
    TokenLogprob,
    ToolCallDelta,
    TopLogprob,
    Usage,
    decode_chunk,
)

__all__ = [
    "END_MARKER_LEN",
    "EVENT_NAMES",
    "NAME",
    "PATH",
    "ChatCompletionChunk",
    "Choice",
    "ChoiceLogprobs",
    "ChunkChoice",
    "CompletionTokensDetails",
    "Delta",
    "ErrorChunk",
    "ErrorObject",
    "ErrorResponse",
    "FunctionCall",
    "FunctionCallDelta",
    "Message",
    "MessageToolCall",
    "PromptTokensDetails",
    "Request",
    "Response",
    "StreamOptions",
    "StreamState",
    "TokenLogprob",
    "ToolCallDelta",
    "TopLogprob",
    "Usage",
    "decode_chunk",
    "derive",
    "may_end",
    "new_stream_state",
    "request_tools",
    "request_turns",
    "response_turns",
]

NAME = "chat"
"""The dialect's name, as a capture line's `dialect` holds it."""
PATH = "/v1/chat/completions"
"""The request path this dialect is observed at."""
