"""OpenAI Chat Completions wire types: the request, the response, the stream's chunks.

Open msgspec Structs (unknown fields are ignored, never rejected) that mirror
`schemas/v1/dialects/openai-chat.schema.json`. The stream state does not decode chunks
into them (see `_stream`); they type the payloads for callers and the schema tests.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "EVENT_NAMES",
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
    "TokenLogprob",
    "ToolCallDelta",
    "TopLogprob",
    "Usage",
    "decode_chunk",
]

EVENT_NAMES: tuple[str, ...] = ("error",)
"""The `event:` names Chat Completions servers send: streams are data-only, but Groq names
its in-stream error event `error`."""


class StreamOptions(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Options of a streamed request."""

    include_usage: bool | None = None
    """Send a last chunk with `usage` (and empty `choices`) before `[DONE]`."""


class Request(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A `POST /v1/chat/completions` request body (the fields capture reads; others pass)."""

    model: str | None = None
    """The model to use."""
    messages: list[dict[str, Any]] = []
    """The conversation so far."""
    tools: list[dict[str, Any]] | None = None
    """Tools the model may call."""
    tool_choice: str | dict[str, Any] | None = None
    """How the model must choose a tool."""
    stream: bool | None = None
    """Stream the answer as Server-Sent Events."""
    stream_options: StreamOptions | None = None
    """Options of a streamed request."""
    n: int | None = None
    """How many choices to generate."""
    max_tokens: int | None = None
    """Legacy cap on generated tokens."""
    max_completion_tokens: int | None = None
    """Cap on generated tokens, reasoning included."""
    temperature: float | None = None
    """Sampling temperature."""
    logprobs: bool | None = None
    """Return log probabilities of the output tokens."""
    response_format: dict[str, Any] | None = None
    """Structured-output format."""


class PromptTokensDetails(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Breakdown of the prompt tokens."""

    cached_tokens: int | None = None
    """Prompt tokens served from the prompt cache (counted inside `prompt_tokens`)."""
    audio_tokens: int | None = None
    """Audio input tokens."""


class CompletionTokensDetails(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Breakdown of the completion tokens."""

    reasoning_tokens: int | None = None
    """Reasoning tokens (counted inside `completion_tokens`)."""
    audio_tokens: int | None = None
    """Audio output tokens."""
    accepted_prediction_tokens: int | None = None
    """Predicted-output tokens that appeared in the completion."""
    rejected_prediction_tokens: int | None = None
    """Predicted-output tokens that did not appear in the completion."""


class Usage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Token usage of a completion."""

    prompt_tokens: int | None = None
    """Input tokens, cached ones included."""
    completion_tokens: int | None = None
    """Generated tokens, reasoning included."""
    total_tokens: int | None = None
    """prompt_tokens + completion_tokens."""
    prompt_tokens_details: PromptTokensDetails | None = None
    """Breakdown of the prompt tokens."""
    completion_tokens_details: CompletionTokensDetails | None = None
    """Breakdown of the completion tokens."""


class TopLogprob(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One of the most likely tokens at a position."""

    token: str
    """The token."""
    logprob: float
    """Its log probability."""
    bytes: list[int] | None = None
    """Its UTF-8 bytes."""


class TokenLogprob(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Log probability of one output token."""

    token: str
    """The token."""
    logprob: float
    """Its log probability."""
    bytes: list[int] | None = None
    """Its UTF-8 bytes."""
    top_logprobs: list[TopLogprob] = []
    """The most likely tokens at this position."""


class ChoiceLogprobs(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Log probabilities of a choice's content and refusal tokens."""

    content: list[TokenLogprob] | None = None
    """Per content token."""
    refusal: list[TokenLogprob] | None = None
    """Per refusal token."""


class FunctionCall(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The function a tool call invokes."""

    name: str | None = None
    """The function's name."""
    arguments: str | None = None
    """The arguments as JSON text, as generated (possibly invalid JSON)."""


class MessageToolCall(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A tool call in a complete message."""

    id: str | None = None
    """The call's id (`call_...`); some compatible servers omit it."""
    type: str | None = None
    """`function` (or `custom`)."""
    function: FunctionCall | None = None
    """The function called."""


class Message(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The assistant message of a choice."""

    role: str | None = None
    """`assistant`."""
    content: str | None = None
    """The text, null when the model only called tools or refused."""
    refusal: str | None = None
    """The refusal text, when the model refused."""
    reasoning_content: str | None = None
    """Reasoning text (DeepSeek, vLLM, SGLang)."""
    reasoning: str | None = None
    """Reasoning text (OpenRouter, Groq)."""
    tool_calls: list[MessageToolCall] | None = None
    """Tool calls the model asked for."""
    function_call: FunctionCall | None = None
    """Deprecated single function call."""
    annotations: list[dict[str, Any]] | None = None
    """URL citations and other annotations of the content."""


class Choice(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One choice of a complete response."""

    index: int
    """Position of the choice (0 .. n-1)."""
    message: Message
    """The generated message."""
    finish_reason: str | None = None
    """Why generation stopped: `stop`, `length`, `tool_calls`, `content_filter`, ..."""
    logprobs: ChoiceLogprobs | None = None
    """Log probabilities, when requested."""


class Response(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A `chat.completion` response body (also the object reassembled from a stream)."""

    id: str
    """The completion's id (`chatcmpl-...`)."""
    object: str
    """`chat.completion`."""
    created: int
    """Unix seconds when the completion was created."""
    model: str
    """The model that generated it."""
    choices: list[Choice]
    """The generated choices, one per `n`."""
    usage: Usage | None = None
    """Token usage."""
    system_fingerprint: str | None = None
    """Backend configuration fingerprint."""
    service_tier: str | None = None
    """The service tier that served the request."""


class ErrorObject(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An error reported by the API or a compatible server."""

    message: str | None = None
    """Human-readable description."""
    type: str | None = None
    """Error class (`invalid_request_error`, `server_error`, ...); Groq's stream omits it."""
    code: str | int | None = None
    """Machine-readable code; a string at OpenAI, a number at OpenRouter."""
    param: str | None = None
    """The request parameter at fault."""


class ErrorResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An error envelope sent instead of a completion (HTTP 4xx/5xx body)."""

    error: ErrorObject
    """The error."""


class FunctionCallDelta(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A fragment of a tool call's function."""

    name: str | None = None
    """The function's name, usually in the first fragment only."""
    arguments: str | None = None
    """A fragment of the arguments text; fragments are concatenated."""


class ToolCallDelta(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A fragment of one tool call, joined to the others by `index`."""

    index: int | None = None
    """Which tool call of the choice this fragment belongs to."""
    id: str | None = None
    """The call's id, usually in the first fragment only."""
    type: str | None = None
    """`function`, usually in the first fragment only."""
    function: FunctionCallDelta | None = None
    """The function fragment."""


class Delta(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What one chunk adds to a choice's message."""

    role: str | None = None
    """`assistant`, usually in the first chunk only."""
    content: str | None = None
    """A fragment of the text."""
    refusal: str | None = None
    """A fragment of the refusal."""
    reasoning_content: str | None = None
    """A fragment of reasoning text (DeepSeek, vLLM, SGLang)."""
    reasoning: str | None = None
    """A fragment of reasoning text (OpenRouter, Groq)."""
    tool_calls: list[ToolCallDelta] | None = None
    """Tool-call fragments."""
    function_call: FunctionCallDelta | None = None
    """Deprecated single function-call fragment."""


class ChunkChoice(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One choice of a stream chunk."""

    index: int
    """Which choice the delta belongs to."""
    delta: Delta
    """What the chunk adds to the message."""
    finish_reason: str | None = None
    """Set on the choice's last content chunk."""
    logprobs: ChoiceLogprobs | None = None
    """Log probabilities of the tokens in this delta."""


class ChatCompletionChunk(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One `chat.completion.chunk` of a stream."""

    id: str
    """The completion's id, the same in every chunk; empty in Azure's first chunk."""
    object: str
    """`chat.completion.chunk` (empty in Azure's first chunk)."""
    created: int
    """Unix seconds when the completion was created (0 in Azure's first chunk)."""
    model: str
    """The model; empty in Azure's first chunk."""
    choices: list[ChunkChoice]
    """Choice deltas; empty in the final usage chunk."""
    usage: Usage | None = None
    """Token usage, in the last chunk (OpenAI) or the finish chunk (DeepSeek)."""
    system_fingerprint: str | None = None
    """Backend configuration fingerprint."""
    service_tier: str | None = None
    """The service tier that served the request."""
    error: ErrorObject | None = None
    """An in-stream error (OpenRouter puts it in an ordinary chunk)."""


class ErrorChunk(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The data of an in-stream error event (Groq's `event: error`, an error-only chunk)."""

    error: ErrorObject
    """The error."""


_chunk_decoder = msgspec.json.Decoder(ChatCompletionChunk)


def decode_chunk(data: bytes | str) -> ChatCompletionChunk:
    """Decode one chunk payload into the typed Struct; raises `msgspec.DecodeError`/`ValidationError`."""
    return _chunk_decoder.decode(data)
