"""OpenAI Chat Completions: wire types, terminal events, stream reassembly and record derivation.

The wire types are open msgspec Structs (unknown fields are ignored, never rejected) that
mirror `schemas/v1/dialects/openai-chat.schema.json`. The stream state does not decode
chunks into them: it decodes each chunk with msgspec into plain JSON values and merges
those, so every field a provider adds (`reasoning_details`, `x_groq`, Azure's
`content_filter_results`, ...) survives into the reassembled object and one mistyped field
never costs the whole chunk. Merge rules for the fields of a delta:

- text (`content`, `refusal`, `reasoning_content`, `reasoning`, `arguments`, `text`, ...)
  is concatenated;
- any other string (ids, names, `role`, `type`) keeps its first non-empty value: the SDK
  concatenates repeats into `call_Acall_A`, and Azure's first chunk has an empty id;
- numbers and booleans take the last non-null value (the SDK sums numbers), and null never
  erases a value;
- lists whose entries carry an integer `index` are merged entry by entry, other lists are
  extended;
- `finish_reason` is the last non-null value, since OpenRouter sends a usage chunk with
  `finish_reason: null` after the `stop` chunk; usage is the last chunk that carried one.

Terminal events: `data: [DONE]` completes the stream; a data object with an `error`
member, or an `event: error`, ends it with "error". When both arrive (OpenRouter sends an
error chunk and then `[DONE]`), "error" wins: the generation failed even though the
transport closed cleanly. Data after the terminal event is ignored and noted as dropped.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._codec import decode_object
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
    tool_arguments,
)

__all__ = [
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
    "new_stream_state",
]

NAME = "chat"
PATH = "/v1/chat/completions"


# --- wire types -------------------------------------------------------------------------
# Open objects: msgspec ignores unknown fields by default, and no Struct here forbids them.


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


# --- stream reassembly ------------------------------------------------------------------

_CONCAT = frozenset(
    {
        "content",
        "refusal",
        "reasoning_content",
        "reasoning",
        "arguments",
        "text",
        "data",
        "transcript",
        "summary",
    }
)
"""Delta fields whose fragments are concatenated; every other string keeps its first value."""

_CHUNK_SKIP = frozenset(
    {"id", "object", "created", "model", "choices", "usage", "error", "obfuscation"}
)
"""Chunk fields merged by hand (or per-chunk padding that means nothing once joined)."""

_CHOICE_KNOWN = frozenset({"index", "delta", "finish_reason", "logprobs"})
"""Choice fields handled by hand; any other is merged into the choice as it comes."""

_MAX_DROPPED = 32


def _merge(acc: dict[str, Any], delta: dict[str, Any]) -> None:
    """Merge one delta object into the accumulated one, by the rules in the module docstring."""
    for key, value in delta.items():
        if value is None:
            acc.setdefault(key, None)
            continue
        old = acc.get(key)
        if old is None:
            if isinstance(value, list):
                acc[key] = []
                _merge_list(acc[key], value)
            elif isinstance(value, dict):
                acc[key] = {}
                _merge(acc[key], value)
            else:
                acc[key] = value
        elif isinstance(value, str):
            if isinstance(old, str) and key in _CONCAT:
                acc[key] = old + value
            elif not old and value:
                acc[key] = value
        elif isinstance(value, dict) and isinstance(old, dict):
            _merge(old, value)
        elif isinstance(value, list) and isinstance(old, list):
            _merge_list(old, value)
        else:
            acc[key] = value


def _merge_list(acc: list[Any], values: list[Any]) -> None:
    """Entries with an integer `index` merge into the entry of that index; others are appended."""
    for value in values:
        index = value.get("index") if isinstance(value, dict) else None
        if isinstance(index, int) and not isinstance(index, bool):
            for entry in acc:
                if isinstance(entry, dict) and entry.get("index") == index:
                    _merge(entry, value)
                    break
            else:
                entry = {}
                _merge(entry, value)
                acc.append(entry)
        else:
            acc.append(value)


class _Choice:
    """One choice being built: text fields grow in `TextParts`, joined at the end."""

    __slots__ = (
        "extra",
        "finish_reason",
        "index",
        "logprobs",
        "message_extra",
        "parts",
        "role",
        "tool_calls",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.role: str | None = None
        self.parts: dict[str, TextParts | None] = {}
        """Text fields by name; None while the server sent only null for the field."""
        self.tool_calls: dict[int, dict[str, Any]] = {}
        self.message_extra: dict[str, Any] = {}
        self.logprobs: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.extra: dict[str, Any] = {}

    def feed(self, choice: dict[str, Any], dropped: list[str]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            self._feed_delta(delta, dropped)
        elif delta is not None:
            _note(dropped, f"choice {self.index}: delta is not an object")
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            self.finish_reason = finish
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict):
            if self.logprobs is None:
                self.logprobs = {}
            for key, value in logprobs.items():
                if isinstance(value, list):
                    self.logprobs.setdefault(key, [])
                    if not isinstance(self.logprobs[key], list):
                        self.logprobs[key] = []
                    self.logprobs[key].extend(value)
                else:
                    self.logprobs.setdefault(key, value)
        if not _CHOICE_KNOWN.issuperset(choice):  # checked in C; built only when there are others
            _merge(self.extra, {k: v for k, v in choice.items() if k not in _CHOICE_KNOWN})

    def _feed_delta(self, delta: dict[str, Any], dropped: list[str]) -> None:
        for key, value in delta.items():
            if key == "role":
                if isinstance(value, str) and value and not self.role:
                    self.role = value
            elif key == "tool_calls":
                if isinstance(value, list):
                    for call in value:
                        self._feed_tool_call(call, dropped)
                elif value is not None:
                    _note(dropped, f"choice {self.index}: tool_calls is not a list")
            elif key in _CONCAT and (value is None or isinstance(value, str)):
                parts = self.parts.get(key)
                if value is None:
                    self.parts.setdefault(key, None)
                elif parts is None:
                    self.parts[key] = TextParts(value)
                else:
                    parts.append(value)
            else:
                _merge(self.message_extra, {key: value})

    def _feed_tool_call(self, call: object, dropped: list[str]) -> None:
        if not isinstance(call, dict):
            _note(dropped, f"choice {self.index}: tool call fragment is not an object")
            return
        index = call.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            # No index (some compatible servers): a new id starts a new call, else continue the last.
            call_id = call.get("id")
            known = {c.get("id") for c in self.tool_calls.values()}
            if self.tool_calls and (not call_id or call_id in known):
                index = max(self.tool_calls)
            else:
                index = max(self.tool_calls, default=-1) + 1
        entry = self.tool_calls.get(index)
        if entry is None:
            entry = self.tool_calls[index] = {"_args": TextParts()}
        for key, value in call.items():
            if key == "index":
                continue
            if key == "function" and isinstance(value, dict):
                fn = entry.get("function")
                if not isinstance(fn, dict):
                    fn = entry["function"] = {}
                for fkey, fvalue in value.items():
                    if fkey == "arguments" and isinstance(fvalue, str):
                        entry["_args"].append(fvalue)
                    else:
                        _merge(fn, {fkey: fvalue})
            else:
                _merge(entry, {key: value})

    def build(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self.role or "assistant", "content": None}
        for key, parts in self.parts.items():
            message[key] = None if parts is None else parts.value()
        for key, value in self.message_extra.items():
            message.setdefault(key, value)
        if self.tool_calls:
            calls = []
            for index in sorted(self.tool_calls):
                entry = self.tool_calls[index]
                fn = entry.get("function")
                function = dict(fn) if isinstance(fn, dict) else {}
                function["arguments"] = entry["_args"].value()
                call = {
                    "id": entry.get("id"),
                    "type": entry.get("type") or "function",
                    "function": function,
                }
                for key, value in entry.items():
                    if key != "_args":
                        call.setdefault(key, value)
                calls.append(call)
            message["tool_calls"] = calls
        choice: dict[str, Any] = {
            "index": self.index,
            "message": message,
            "logprobs": self.logprobs,
            "finish_reason": self.finish_reason,
        }
        for key, value in self.extra.items():
            choice.setdefault(key, value)
        return choice


def _note(dropped: list[str], note: str) -> None:
    if len(dropped) < _MAX_DROPPED:
        dropped.append(note)
    elif len(dropped) == _MAX_DROPPED:
        dropped.append("further drops not listed")


def _error_payload(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"message": value}


class StreamState:
    """Incremental reassembly of one OpenAI Chat Completions stream into a `chat.completion`."""

    __slots__ = (
        "_choices",
        "_created",
        "_dropped",
        "_error",
        "_extra",
        "_id",
        "_model",
        "_seen",
        "_terminal",
        "_usage",
    )

    def __init__(self) -> None:
        self._terminal: Terminal | None = None
        self._seen = False
        self._id: str | None = None
        self._model: str | None = None
        self._created: int | None = None
        self._choices: dict[int, _Choice] = {}
        self._usage: dict[str, Any] | None = None
        self._extra: dict[str, Any] = {}
        self._error: dict[str, Any] | None = None
        self._dropped: list[str] = []

    @property
    def terminal(self) -> Terminal | None:
        """ "complete" after `[DONE]`, "error" after an error event or chunk, else None."""
        return self._terminal

    def feed(self, event: SseEvent) -> None:
        """Take one decoded SSE event; never raises, whatever it holds."""
        try:
            self._feed(event)
        except Exception as exc:  # a bug must not cost the capture: note it and go on
            _note(self._dropped, f"event not used ({type(exc).__name__}: {exc})")

    def _feed(self, event: SseEvent) -> None:
        data = event.data
        if data == b"[DONE]" or (len(data) < 64 and data.strip() == b"[DONE]"):
            if self._terminal is None:
                self._terminal = "complete"
            return
        if self._terminal == "complete":
            _note(self._dropped, "data after [DONE] ignored")
            return
        chunk = decode_object(data)
        if event.event == "error":
            if self._error is None:
                self._error = _error_payload(
                    chunk.get("error", chunk) if chunk is not None else _text(data)
                )
            self._terminal = "error"
            return
        if chunk is None:
            _note(self._dropped, f"data is not a JSON object: {_text(data)[:80]!r}")
            return
        error = chunk.get("error")
        if error is not None:
            if self._error is None:
                self._error = _error_payload(error)
            self._terminal = "error"
        self._chunk(chunk)

    def _chunk(self, chunk: dict[str, Any]) -> None:
        dropped = self._dropped
        ident, model, created = chunk.get("id"), chunk.get("model"), chunk.get("created")
        if not self._id and isinstance(ident, str) and ident:
            self._id = ident
        if not self._model and isinstance(model, str) and model:
            self._model = model
        if (
            not self._created
            and isinstance(created, int)
            and not isinstance(created, bool)
            and created
        ):
            self._created = created
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                index = choice.get("index") if isinstance(choice, dict) else None
                if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                    _note(dropped, "choice without an integer index")
                    continue
                state = self._choices.get(index)
                if state is None:
                    state = self._choices[index] = _Choice(index)
                state.feed(choice, dropped)
        elif choices is not None:
            _note(dropped, "choices is not a list")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
        if not _CHUNK_SKIP.issuperset(chunk):  # checked in C; built only when there are others
            _merge(self._extra, {k: v for k, v in chunk.items() if k not in _CHUNK_SKIP})
        self._seen = True

    def result(self) -> StreamResult:
        """The `chat.completion` reassembled so far, with the terminal kind and what was dropped."""
        response: dict[str, Any] | None = None
        if self._seen:
            response = {
                "id": self._id,
                "object": "chat.completion",
                "created": self._created,
                "model": self._model,
                "choices": [self._choices[i].build() for i in sorted(self._choices)],
            }
            if self._usage is not None:
                response["usage"] = self._usage
            for key, value in self._extra.items():
                response.setdefault(key, value)
        return StreamResult(
            response=response,
            terminal=self._terminal,
            truncated=self._terminal is None,
            error=self._error,
            dropped=list(self._dropped),
        )


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


END_MARKER_LEN = len("[DONE]")
"""Length of the longest marker `may_end` looks for."""


def may_end(chunk: bytes) -> bool:
    """False only when SSE text holding `chunk` cannot complete the terminal event.

    What makes the state terminal: data `[DONE]`, an `error` event, or a data object with
    an `error` member.
    """
    return b"[DONE]" in chunk or b"error" in chunk or escaped_ascii(chunk)


def new_stream_state() -> StreamState:
    """A fresh Chat Completions stream state."""
    return StreamState()


# --- record derivation ------------------------------------------------------------------


class _TokenDetails(msgspec.Struct, gc=False):
    cached_tokens: Any = None
    reasoning_tokens: Any = None


class _UsageView(msgspec.Struct, gc=False):
    prompt_tokens: Any = None
    completion_tokens: Any = None
    total_tokens: Any = None
    prompt_cache_hit_tokens: Any = None
    prompt_tokens_details: _TokenDetails | NotObject = None
    completion_tokens_details: _TokenDetails | NotObject = None


class _FunctionView(msgspec.Struct, gc=False):
    name: Any = None
    arguments: Any = None


class _ToolCallView(msgspec.Struct, gc=False):
    id: Any = None
    function: _FunctionView | NotObject = None


class _MessageView(msgspec.Struct, gc=False):
    tool_calls: list[_ToolCallView | NotObject] | NotList = None
    function_call: _FunctionView | NotObject = None
    reasoning_content: Any = None
    reasoning: Any = None


class _ChoiceView(msgspec.Struct, gc=False):
    message: _MessageView | NotObject = None
    finish_reason: Any = None


class _ResponseView(msgspec.Struct, gc=False):
    """The members of a `chat.completion` that `derive` reads; the rest is skipped unread."""

    id: Any = None
    model: Any = None
    usage: _UsageView | NotObject = None
    choices: list[_ChoiceView | NotObject] | NotList = None


_response_view = msgspec.json.Decoder(_ResponseView)
_NO_USAGE = _UsageView()
_NO_MESSAGE = _MessageView()
_NO_CHOICE = _ChoiceView()


def _nonempty(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _detail(details: object, name: str) -> object:
    return getattr(details, name) if isinstance(details, _TokenDetails) else None


def derive(request: Payload, response: Payload) -> Derived:
    """Derive record facts from a request and a `chat.completion` (possibly null); never raises.

    finish_reason, tool_calls and reasoning_content describe the first choice, which is the
    one clients use; with `n > 1` the other choices stay in the response.
    """
    try:
        return _derive(request, decode_view(response, _response_view) or _ResponseView())
    except Exception:  # a malformed body must still give a record
        return Derived(model=_nonempty(request_model(request)))


def _derive(request: Payload, resp: _ResponseView) -> Derived:
    usage = resp.usage if isinstance(resp.usage, _UsageView) else _NO_USAGE
    tokens_in = token_count(usage.prompt_tokens)
    tokens_out = token_count(usage.completion_tokens)
    total = token_count(usage.total_tokens)
    if total is None and tokens_in is not None and tokens_out is not None:
        total = tokens_in + tokens_out
    cached = token_count(_detail(usage.prompt_tokens_details, "cached_tokens"))
    if cached is None:
        cached = token_count(usage.prompt_cache_hit_tokens)  # DeepSeek
    choices = resp.choices
    first = (
        choices[0]
        if isinstance(choices, list) and choices and isinstance(choices[0], _ChoiceView)
        else _NO_CHOICE
    )
    message = first.message if isinstance(first.message, _MessageView) else _NO_MESSAGE
    tool_calls: list[ToolCall] = []
    raw_calls = message.tool_calls
    for call in raw_calls if isinstance(raw_calls, list) else []:
        if not isinstance(call, _ToolCallView):
            continue
        function = call.function if isinstance(call.function, _FunctionView) else None
        tool_calls.append(
            ToolCall(
                call_id=_nonempty(call.id),
                name=None if function is None else _nonempty(function.name),
                arguments=None if function is None else tool_arguments(function.arguments),
            )
        )
    legacy = message.function_call
    if isinstance(legacy, _FunctionView):
        tool_calls.append(
            ToolCall(
                call_id=None,
                name=_nonempty(legacy.name),
                arguments=tool_arguments(legacy.arguments),
            )
        )
    return Derived(
        response_id=_nonempty(resp.id),
        model=_nonempty(resp.model) or _nonempty(request_model(request)),
        response_status=None,
        finish_reason=_nonempty(first.finish_reason),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        tokens_reasoning=token_count(_detail(usage.completion_tokens_details, "reasoning_tokens")),
        tokens_total=total,
        cached_tokens=cached,
        cache_hit=None if cached is None else cached > 0,
        cache_creation_tokens=None,
        tool_calls=tool_calls,
        reasoning_content=_nonempty(message.reasoning_content) or _nonempty(message.reasoning),
    )
