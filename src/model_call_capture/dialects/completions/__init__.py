"""OpenAI legacy Completions (`POST /v1/completions`): everything the library knows of it.

The dialect RL stacks use for token-in/token-out rollouts (vLLM answers it with token ids
under `return_token_ids`). One module per concern: `_wire` holds the wire types (open
msgspec Structs mirroring `schemas/v1/dialects/openai-completions.schema.json`) and the
`event:` names its servers send, `_stream` the I/O-free stream state that reassembles a
stream into a `text_completion` and the terminal-marker check, `_derive` the record facts
derived from a request and a response, `_turns` what they say as turns. This module is the
dialect's surface (`dialects.base.DialectModule`) plus its public wire types.
"""

from __future__ import annotations

from ._derive import derive
from ._stream import END_MARKER_LEN, MAX_ENTRIES, StreamState, may_end, new_stream_state
from ._turns import request_tools, request_turns, response_turns
from ._wire import (
    EVENT_NAMES,
    Choice,
    CompletionChunk,
    CompletionTokensDetails,
    ErrorChunk,
    ErrorObject,
    ErrorResponse,
    Logprobs,
    PromptTokensDetails,
    Request,
    Response,
    StreamChoice,
    StreamOptions,
    Usage,
    decode_chunk,
)

__all__ = [
    "END_MARKER_LEN",
    "EVENT_NAMES",
    "MAX_ENTRIES",
    "NAME",
    "PATH",
    "Choice",
    "CompletionChunk",
    "CompletionTokensDetails",
    "ErrorChunk",
    "ErrorObject",
    "ErrorResponse",
    "Logprobs",
    "PromptTokensDetails",
    "Request",
    "Response",
    "StreamChoice",
    "StreamOptions",
    "StreamState",
    "Usage",
    "decode_chunk",
    "derive",
    "may_end",
    "new_stream_state",
    "request_tools",
    "request_turns",
    "response_turns",
]

NAME = "completions"
"""The dialect's name, as a capture line's `dialect` holds it."""
PATH = "/v1/completions"
"""The request path this dialect is observed at."""
