"""OpenAI legacy Completions wire types: the request, the `text_completion`, the stream's chunks.

Open msgspec Structs (unknown fields are ignored, never rejected) that mirror
`schemas/v1/dialects/openai-completions.schema.json`. Usage, the error envelope and the
stream options are the Chat Completions types (the API shares them, as the openai SDK
does); the stream state does not decode chunks into these types (see `_stream`), they type
the payloads for callers and the schema tests.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..chat._wire import (
    CompletionTokensDetails,
    ErrorChunk,
    ErrorObject,
    ErrorResponse,
    PromptTokensDetails,
    StreamOptions,
    Usage,
)

__all__ = [
    "EVENT_NAMES",
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
    "Usage",
    "decode_chunk",
]

EVENT_NAMES: tuple[str, ...] = ("error",)
"""The `event:` names Completions servers send: streams are data-only (an error is a data
object with an `error` member); `error` is looked up for servers that name it, as in chat."""


class Request(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A `POST /v1/completions` request body (the fields capture reads; others pass)."""

    model: str | None = None
    """The model to use."""
    prompt: str | list[Any] | None = None
    """The prompt(s): a text, a list of texts, a list of token ids, or a list of token-id lists."""
    suffix: str | None = None
    """Text that comes after the completion (insertion)."""
    echo: bool | None = None
    """Return the prompt before the completion, in `text` and in the log-probs."""
    n: int | None = None
    """How many choices to generate per prompt."""
    best_of: int | None = None
    """Candidates generated server-side per prompt, of which `n` are returned."""
    max_tokens: int | None = None
    """Cap on generated tokens."""
    temperature: float | None = None
    """Sampling temperature."""
    logprobs: int | None = None
    """Return the log-probabilities of this many most likely tokens at each position."""
    stream: bool | None = None
    """Stream the answer as Server-Sent Events."""
    stream_options: StreamOptions | None = None
    """Options of a streamed request."""
    stop: str | list[str] | None = None
    """Sequences where generation stops."""
    return_token_ids: bool | None = None
    """vLLM: return the prompt's and each choice's generated token ids."""
    return_tokens_as_token_ids: bool | None = None
    """vLLM: spell the log-probs' tokens as `token_id:N`."""
    prompt_logprobs: int | None = None
    """vLLM: return the log-probabilities of the prompt's tokens (JSON replies only)."""


class Logprobs(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Log-probabilities of a choice's tokens, as parallel lists (the legacy shape)."""

    tokens: list[str] | None = None
    """Each token's text (vLLM `return_tokens_as_token_ids`: `token_id:N`)."""
    token_logprobs: list[float | None] | None = None
    """Each token's log-probability; null where none is known (the first token of an echoed prompt)."""
    top_logprobs: list[dict[str, float] | None] | None = None
    """The most likely tokens at each position, token text -> log-probability."""
    text_offset: list[int] | None = None
    """Each token's character offset in the choice's text."""


class Choice(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One choice of a complete response."""

    index: int
    """Position of the choice (prompt index x `n` + choice number)."""
    text: str
    """The generated text (with `echo`, the prompt first)."""
    finish_reason: str | None = None
    """Why generation stopped: `stop`, `length`, `content_filter`, ..."""
    logprobs: Logprobs | None = None
    """Log-probabilities, when requested."""
    stop_reason: int | str | None = None
    """vLLM: the stop string or token id that ended generation."""
    prompt_token_ids: list[int] | None = None
    """vLLM `return_token_ids`: the prompt's token ids."""
    token_ids: list[int] | None = None
    """vLLM `return_token_ids`: the generated token ids."""
    prompt_logprobs: list[dict[str, Any] | None] | None = None
    """vLLM `prompt_logprobs`: per prompt token, its candidates by token id (null for the first)."""


class Response(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A `text_completion` response body (also the object reassembled from a stream)."""

    id: str
    """The completion's id (`cmpl-...`)."""
    object: str
    """`text_completion`."""
    created: int
    """Unix seconds when the completion was created."""
    model: str
    """The model that generated it."""
    choices: list[Choice]
    """The generated choices: `n` per prompt."""
    usage: Usage | None = None
    """Token usage, summed over every prompt and choice."""
    system_fingerprint: str | None = None
    """Backend configuration fingerprint."""


class StreamChoice(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One choice of a stream chunk: what it adds."""

    index: int
    """Which choice the chunk belongs to."""
    text: str
    """A fragment of the text; fragments are concatenated."""
    finish_reason: str | None = None
    """Set on the choice's last chunk."""
    logprobs: Logprobs | None = None
    """Log-probabilities of this chunk's tokens; lists are concatenated."""
    stop_reason: int | str | None = None
    """vLLM: the stop string or token id that ended generation (last chunk)."""
    prompt_token_ids: list[int] | None = None
    """vLLM `return_token_ids`: the prompt's token ids, in the choice's first chunk only."""
    token_ids: list[int] | None = None
    """vLLM `return_token_ids`: the token ids generated in this chunk."""


class CompletionChunk(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One chunk of a stream (also a `text_completion` object)."""

    id: str
    """The completion's id, the same in every chunk."""
    object: str
    """`text_completion`."""
    created: int
    """Unix seconds when the completion was created."""
    model: str
    """The model."""
    choices: list[StreamChoice]
    """Choice fragments; empty in the final usage chunk."""
    usage: Usage | None = None
    """Token usage, in the last chunk (`stream_options.include_usage`)."""
    system_fingerprint: str | None = None
    """Backend configuration fingerprint."""
    error: ErrorObject | None = None
    """An in-stream error carried in an ordinary chunk."""


_chunk_decoder = msgspec.json.Decoder(CompletionChunk)


def decode_chunk(data: bytes | str) -> CompletionChunk:
    """Decode one chunk payload into the typed Struct; raises `msgspec.DecodeError`/`ValidationError`."""
    return _chunk_decoder.decode(data)
