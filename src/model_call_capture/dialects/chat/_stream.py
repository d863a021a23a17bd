"""Chat Completions stream reassembly: the I/O-free stream state, fed decoded SSE events.

The state does not decode chunks into the wire types: it decodes each chunk with msgspec
into plain JSON values and merges those, so every field a provider adds
(`reasoning_details`, `x_groq`, Azure's `content_filter_results`, ...) survives into the
reassembled object and one mistyped field never costs the whole chunk. Merge rules for
the fields of a delta:

- text (`content`, `refusal`, `reasoning_content`, `reasoning`, `arguments`, `text`, ...)
  is concatenated;
- any other string (ids, names, `role`, `type`) keeps its first non-empty value: the SDK
  concatenates repeats into `call_Acall_A`, and Azure's first chunk has an empty id;
- numbers and booleans take the last non-null value (the SDK sums numbers), and null never
  erases a value;
- lists whose entries carry an integer `index` are merged entry by entry, other lists are
  extended;
- `finish_reason` is the last non-null value, since OpenRouter sends a usage chunk with
  `finish_reason: null` after the `stop` chunk; usage is the last chunk that carried one;
- vLLM's token ids (`return_token_ids`): the chunk's `prompt_token_ids` (sent in the first
  chunk) keeps its first value; each choice's `token_ids` (the ids of that chunk's delta)
  are concatenated in order, a value that is not a list kept as one entry so that record
  derivation reports it instead of a silently shorter list; `logprobs` lists are
  concatenated in order too.

Terminal events: `data: [DONE]` completes the stream; a data object with an `error`
member, or an `event: error`, ends it with "error". When both arrive (OpenRouter sends an
error chunk and then `[DONE]`), "error" wins: the generation failed even though the
transport closed cleanly. Data after the terminal event is ignored and noted as dropped.
"""

from __future__ import annotations

from typing import Any

from ..._codec import decode_object
from ...sse import SseEvent
from .._text import TextParts
from ..base import StreamResult, Terminal, escaped_ascii

__all__ = ["END_MARKER_LEN", "StreamState", "may_end", "new_stream_state"]


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
    {
        "id",
        "object",
        "created",
        "model",
        "choices",
        "usage",
        "error",
        "obfuscation",
        "prompt_token_ids",
    }
)
"""Chunk fields merged by hand (or per-chunk padding that means nothing once joined)."""

_CHOICE_KNOWN = frozenset({"index", "delta", "finish_reason", "logprobs", "token_ids"})
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
        "token_ids",
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
        self.token_ids: list[Any] | None = None
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
        token_ids = choice.get("token_ids")
        if token_ids is not None:
            if self.token_ids is None:
                self.token_ids = []
            if isinstance(token_ids, list):
                self.token_ids += token_ids
            else:
                self.token_ids.append(token_ids)
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
        if self.token_ids is not None:
            choice["token_ids"] = self.token_ids
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
        "_prompt_token_ids",
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
        self._prompt_token_ids: Any = None
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
        if self._prompt_token_ids is None:
            self._prompt_token_ids = chunk.get("prompt_token_ids")
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
            if self._prompt_token_ids is not None:
                response["prompt_token_ids"] = self._prompt_token_ids
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
