"""What every dialect provides (the `DialectModule` protocol), and helpers they share.

A dialect package (`dialects/responses/`, `dialects/chat/`, `dialects/completions/`, ...) holds
everything one API dialect knows. The rest of the library talks to it only through the
names defined here, so adding a dialect means adding one package and one line in
`dialects/__init__.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

import msgspec

from .. import _codec
from ..contracts import ObservationGap, ToolCall
from ..sse import SseEvent

__all__ = [
    "MAX_NOTES",
    "Allowance",
    "Derived",
    "DialectModule",
    "DroppedNotes",
    "NotList",
    "NotObject",
    "Part",
    "Payload",
    "RequestView",
    "StatedError",
    "StreamResult",
    "StreamState",
    "Terminal",
    "Tool",
    "Turn",
    "content_parts",
    "decode_view",
    "escaped_ascii",
    "flat_tool",
    "request_model",
    "stated_error",
    "text_of",
    "token_count",
    "tool_arguments",
    "tools_of",
]

Terminal = Literal["complete", "incomplete", "failed", "error"]
"""How a stream ended: its dialect's terminal event, or an error event."""


MAX_NOTES = 32
"""Notes a stream keeps on what it could not use; past them it only counts them."""


class DroppedNotes:
    """Short notes on what a stream state could not use, bounded: the first `MAX_NOTES` are
    kept and the rest only counted, so a hostile stream cannot grow them."""

    __slots__ = ("_kept", "_more")

    def __init__(self) -> None:
        self._kept: list[str] = []
        self._more = 0

    def add(self, note: str) -> None:
        """Note one thing not used."""
        if len(self._kept) < MAX_NOTES:
            self._kept.append(note)
        else:
            self._more += 1

    def copy(self) -> DroppedNotes:
        """The same notes, to add to without changing these (notes of a result being built)."""
        other = DroppedNotes()
        other._kept = list(self._kept)
        other._more = self._more
        return other

    def listed(self) -> list[str]:
        """The notes for `StreamResult.dropped`: those kept, then how many were not."""
        if not self._more:
            return list(self._kept)
        return [*self._kept, f"{self._more} more notes not kept"]


class Allowance:
    """How many new entries of one kind (`kind`, plural) a stream may still create: each
    dialect's `MAX_ENTRIES`, past which a new entry is dropped and only the first refusal
    is noted."""

    __slots__ = ("kind", "left", "limit")

    def __init__(self, kind: str, limit: int) -> None:
        self.kind = kind
        self.limit = limit
        self.left = limit
        """Entries that may still be created (read only: `take` counts; -1 once refused)."""

    def take(self, notes: DroppedNotes, what: str) -> bool:
        """Count one new entry (`what`, as a note names it); False past the limit."""
        if self.left > 0:
            self.left -= 1
            return True
        if self.left == 0:
            self.left = -1
            notes.add(f"{what} and further new {self.kind} dropped: past {self.limit}")
        return False


@dataclass(slots=True)
class StreamResult:
    """The outcome of reassembling one stream."""

    response: dict[str, Any] | None
    """The final response object (partial when the stream was cut); None if nothing usable arrived."""
    terminal: Terminal | None
    """The terminal event seen; None when the stream ended without one."""
    truncated: bool
    """True when the stream ended without its dialect's terminal event."""
    error: dict[str, Any] | None = None
    """The payload of an error event, when the stream carried one."""
    dropped: list[str] = field(default_factory=list)
    """Short notes on what could not be used (non-JSON data, events out of order, ...)."""


class StreamState(Protocol):
    """An incremental reassembler of one dialect, fed one decoded SSE event at a time."""

    def feed(self, event: SseEvent) -> None:
        """Take one event; never raises, whatever the event holds."""

    @property
    def terminal(self) -> Terminal | None:
        """The terminal kind once a terminal event was fed, else None."""

    def result(self) -> StreamResult:
        """The response reassembled so far (call at the end of the stream)."""


Payload: TypeAlias = "dict[str, Any] | msgspec.Raw | None"
"""A request or response body as `derive` takes it: the decoded JSON object, or its JSON text
(a record read from a capture file holds `msgspec.Raw` until the payload is read), or None."""


# A Struct, not a dataclass: one is built for every record read, and msgspec's `__init__`
# (in C) costs a fraction of a dataclass's.
class Derived(msgspec.Struct, gc=False):
    """Facts a dialect derives from a request and response, for `ModelCallRecord`."""

    response_id: str | None = None
    model: str | None = None
    response_status: str | None = None
    finish_reason: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_reasoning: int | None = None
    tokens_total: int | None = None
    cached_tokens: int | None = None
    cache_hit: bool | None = None
    cache_creation_tokens: int | None = None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    reasoning_content: str | None = None
    prompt_token_ids: list[int] | None = None
    generation_token_ids: list[int] | None = None
    generation_log_probs: list[float] | None = None
    derivation_problems: list[ObservationGap] | msgspec.UnsetType = msgspec.UNSET
    """Why a field is null although the response held a value for it; UNSET when none."""


PartKind: TypeAlias = Literal[
    "text", "reasoning", "tool_call", "tool_result", "attachment", "other"
]
"""What a piece of a turn is: said text, reasoning, a tool call, the result that answered one,
an attachment (an image, a file, audio: shown as a placeholder), or an item of another type."""


@dataclass(slots=True)
class Part:
    """One piece of a turn, in a form every dialect shares (for people to read, not to replay)."""

    kind: PartKind
    text: str = ""
    """The text said or reasoned, a tool result's output, or what an attachment or item is."""
    name: str | None = None
    """The tool's name (tool call, tool result when known) or the item's type (attachment, other)."""
    call_id: str | None = None
    """The tool call's id, or the id of the call a tool result answers."""
    arguments: str | None = None
    """A tool call's arguments as JSON text (as sent, not parsed)."""
    error: bool = False
    """A tool result the client marked as an error."""


@dataclass(slots=True)
class Turn:
    """One message of a conversation: who spoke (`system`, `developer`, `user`, `assistant`,
    `tool`, or the role as captured) and what, in order."""

    role: str
    parts: list[Part] = field(default_factory=list)


@dataclass(slots=True)
class Tool:
    """One tool a request offers the model, in a form every dialect shares (for people to read)."""

    name: str | None
    kind: str = "function"
    """`function`, or the tool's type as sent (`custom`, `web_search`, ...)."""
    description: str = ""
    parameters: str | None = None
    """Its input schema as JSON text (as sent, not parsed); for a tool without one (a
    built-in), what else the definition holds."""


def tools_of(value: object, definition: Callable[[dict[str, Any]], Tool]) -> list[Tool]:
    """The tools of a request's tool list (`definition` reads one); [] when it is not a list."""
    if not isinstance(value, list):
        return []
    return [
        definition(t) if isinstance(t, dict) else Tool(None, kind="?", parameters=text_of(t))
        for t in value
    ]


def flat_tool(item: dict[str, Any], schema_keys: tuple[str, ...]) -> Tool:
    """A tool defined by the members of one object: `type`, `name`, `description`, and its
    schema under the first of `schema_keys` present; a tool without one (a built-in) shows
    its other members instead."""
    schema = next((item[k] for k in schema_keys if k in item), None)
    if schema is None:
        rest = {k: v for k, v in item.items() if k not in ("type", "name", "description")}
        schema = rest or None
    return Tool(
        text_of(item.get("name")) or None,
        kind=text_of(item.get("type")) or "function",
        description=text_of(item.get("description")),
        parameters=None if schema is None else text_of(schema),
    )


class DialectModule(Protocol):
    """The names every dialect package (`dialects/<name>/__init__.py`) exports."""

    NAME: str
    """`responses`, `chat`, `messages` or `completions`."""
    PATH: str
    """The observed request path, e.g. `/v1/responses`."""
    EVENT_NAMES: tuple[str, ...]
    """The SSE `event:` names this dialect's servers send (empty for a data-only stream):
    the SSE decoder looks them up instead of decoding each one."""

    def new_stream_state(self) -> StreamState:
        """A fresh stream state."""

    def derive(self, request: Payload, response: Payload) -> Derived:
        """Derive record facts from a (possibly null) request and response; never raises."""

    def request_turns(self, request: Any) -> list[Turn]:
        """The conversation a decoded request sends (system prompt, history, new input);
        never raises: what is not understood becomes an `other` part or is left out."""

    def response_turns(self, response: Any) -> list[Turn]:
        """The assistant turns of a decoded response (one per choice); never raises."""

    def request_tools(self, request: Any) -> list[Tool]:
        """The tools a decoded request offers the model, in order; never raises."""

    def may_end(self, chunk: bytes) -> bool:
        """False only when SSE text holding `chunk` cannot complete the terminal event.

        Cheap (a few substring searches) and conservative: it looks for what makes this
        dialect's stream state terminal, spelled as it appears in the SSE text, and for a
        JSON escape that could spell it. The middleware forwards a chunk for which it is
        False before capturing it.
        """

    END_MARKER_LEN: int
    """Length of the longest marker `may_end` looks for: the overlap checked across a chunk boundary."""


def token_count(value: object) -> int | None:
    """A token count, or None when it is not a non-negative integer (bools are not counts)."""
    return value if type(value) is int and value >= 0 else None


def tool_arguments(value: object) -> Any:
    """Parsed JSON tool arguments; `{"_raw": text}` when the text is not valid JSON (as NeMo Gym does).

    A value that is not a string (already parsed, or absent) is returned as it is.
    """
    if not isinstance(value, str):
        return value
    try:
        return _codec.decode(value)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return {"_raw": value}


# --- views for derivation -----------------------------------------------------------------
# `derive` reads a few fields of a payload that can be megabytes of text: it decodes the
# payload into small "view" Structs declaring only those fields (msgspec skips every other
# member in C and builds nothing for it). A view must never reject a payload a dict-walking
# derive would read: its scalar fields are `Any`, and a field that should hold an object is
# typed `View | NotObject` (a list of objects: `list[View | NotObject] | NotList`), so a
# value of any other JSON type is kept as it is and simply not used. Views are `gc=False`:
# short-lived and never in a cycle, they need not be tracked by the cyclic collector.

NotObject: TypeAlias = None | bool | int | float | str | list[Any]
"""Every JSON value but an object."""

NotList: TypeAlias = None | bool | int | float | str | dict[str, Any]
"""Every JSON value but an array."""

_View = TypeVar("_View")


class RequestView(msgspec.Struct, gc=False):
    """The request members any dialect's `derive` reads (the rest is skipped unread).

    A reader that keeps no payloads decodes a line's request straight into this view, in
    the same pass as the line (`records.decode_line_without_payloads`), and hands `derive`
    these members as a dict: a member a `derive` starts reading must be declared here.
    """

    model: Any = None
    echo: Any = None
    """Completions: the log-probs of an echoed prompt come before the generated ones."""


_request_view = msgspec.json.Decoder(RequestView)


def decode_view(payload: Payload, decoder: msgspec.json.Decoder[_View]) -> _View | None:
    """The view Struct of a payload (`decoder` is a Decoder of that view); None when the
    payload is null, not an object, or not decodable.

    A dict (a caller holding decoded bodies) is converted in place of decoding: only the
    view's fields are looked up, as in the text.
    """
    try:
        if type(payload) is msgspec.Raw:
            return decoder.decode(payload)
        if isinstance(payload, dict):
            view: _View = msgspec.convert(payload, decoder.type)
            return view
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, TypeError, OverflowError):
        pass  # not an object, or values no JSON text can hold: nothing to derive from
    return None


_ASCII_ESCAPE = re.compile(rb"\\u00[2-7]")


def escaped_ascii(chunk: bytes) -> bool:
    """Whether `chunk` holds a JSON `\\u00XX` escape of an ASCII character in 0x20-0x7f.

    A JSON string may spell any letter of a terminal marker that way; `may_end` of every
    dialect counts such an escape as a possible marker.
    """
    return chunk.find(b"\\u00") >= 0 and _ASCII_ESCAPE.search(chunk) is not None


def request_model(request: Payload) -> Any:
    """The request's `model` member as it is (unchecked), None when absent."""
    view = decode_view(request, _request_view)
    return None if view is None else view.model


def content_parts(
    content: object,
    text_kinds: Collection[str | None],
    attachment_kinds: Collection[str],
    describe_attachment: Callable[[dict[str, Any]], str],
) -> list[Part]:
    """A message's `content` (a string or a list of typed parts) as `Part`s.

    A part whose `type` is in `text_kinds` is text (`None` there: an untyped part with a
    `text` member is too); one in `attachment_kinds` is named by `describe_attachment`,
    never carried with its bytes; a refusal is text named `refusal`; anything else is
    kept as its JSON text. Hostile content never raises.
    """
    if content is None or content == "":
        return []
    if not isinstance(content, list):
        return [Part("text", text_of(content))]
    parts = []
    for item in content:
        if not isinstance(item, dict):
            parts.append(Part("text", text_of(item)))
            continue
        kind = item.get("type")
        if kind in text_kinds and (kind is not None or "text" in item):
            parts.append(Part("text", text_of(item.get("text"))))
        elif kind == "refusal":
            parts.append(Part("text", text_of(item.get("refusal")), name="refusal"))
        elif kind in attachment_kinds:
            parts.append(Part("attachment", describe_attachment(item), name=str(kind)))
        else:
            parts.append(Part("other", text_of(item), name=text_of(kind)))
    return parts


def text_of(value: object) -> str:
    """`value` when it is a string, else its JSON text (so nothing captured is lost or guessed)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return _codec.encode(value).decode()
    except (TypeError, ValueError, OverflowError):
        return repr(value)


class StatedError(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An error as the API stated it: what its error object says, each member as sent."""

    message: str | None = None
    type: str | None = None
    """The error's kind (`rate_limit_error`, `invalid_request_error`, `overloaded_error`)."""
    code: str | None = None
    """OpenAI's `code` (`rate_limit_exceeded`, `context_length_exceeded`), as text."""
    param: str | None = None


_ERROR_TEXT = 2_000  # characters of one member kept: an error body is not a payload


def _member(value: object) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)):
        text = str(value)
        return text if len(text) <= _ERROR_TEXT else text[: _ERROR_TEXT - 1] + "…"
    return None


def stated_error(value: object, *, event: bool = False) -> StatedError | None:
    """The error a response body (or, with `event`, a stream's error payload) states.

    Every dialect states an error as an object with `message` and a kind: OpenAI's
    `{"error": {"message", "type", "code", "param"}}` (a JSON reply of any OpenAI path, a
    chat stream's error chunk, a failed Responses object's `error`), Anthropic's
    `{"type": "error", "error": {"type", "message"}}` (a reply, or a stream's `error`
    event), and the Responses `error` event, whose members are at the top
    (`{"type": "error", "code", "message"}`). A body whose `error` is a string states
    only a message. None when `value` states no error.
    """
    if not isinstance(value, dict):
        return None
    inner = value.get("error")
    if isinstance(inner, str):
        return StatedError(message=_member(inner))
    if not isinstance(inner, dict):
        if not event:
            return None
        inner = value  # the error itself: a Responses error event, a chat error payload
    kind = inner.get("type")
    message = inner.get("message", inner.get("_raw"))  # `_raw`: an error event not JSON
    found = StatedError(
        message=_member(message) if message is not None else None,
        type=_member(kind) if kind != "error" else None,  # "error" names the event
        code=_member(inner.get("code")),
        param=_member(inner.get("param")),
    )
    return found if found != StatedError() else None
