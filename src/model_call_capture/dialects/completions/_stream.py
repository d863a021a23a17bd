"""Completions stream reassembly: the I/O-free stream state, fed decoded SSE events.

A legacy Completions stream is a sequence of `text_completion` chunks, each with the
choices it adds to, then (with `stream_options.include_usage`) a chunk of empty `choices`
and `usage`, then `data: [DONE]`. As in chat, the state decodes each chunk into plain JSON
values and merges those, so every field a server adds survives into the reassembled
object and one mistyped field never costs the whole chunk. Per choice (joined by `index`):

- `text` is concatenated;
- `finish_reason` is the last non-empty value and `stop_reason` (vLLM) the last non-null
  one: vLLM sends `stop_reason: null` in every chunk and the value in the last;
- `logprobs` lists (`tokens`, `token_logprobs`, `top_logprobs`, `text_offset`) are
  concatenated in order (vLLM's offsets are already counted from the choice's start);
- vLLM's token ids (`return_token_ids`): the choice's `prompt_token_ids` (in its first
  chunk only) keeps its first value; its `token_ids` (the ids of that chunk's text) are
  concatenated in order, a value that is not a list kept as one entry so that record
  derivation reports it instead of a silently shorter list;
- any other member is merged by chat's rules (`chat._choice.merge`).

The chunk's `id`, `model` and `created` keep their first non-empty value, `usage` the last
chunk that carried one. Terminal events are chat's: `data: [DONE]` completes the stream; a
data object with an `error` member (vLLM sends one, then `[DONE]`) or an `event: error`
ends it with "error", which wins over a later `[DONE]`. A stream creates at most
`MAX_ENTRIES` choices; past it a new choice is dropped with a note.
"""

from __future__ import annotations

from typing import Any

from ..._codec import decode_object
from ...sse import SseEvent
from .._text import TextParts
from ..base import Allowance, DroppedNotes, StreamResult, Terminal
from ..chat._choice import merge, settle

# The same SSE framing as chat: `[DONE]`, an `error` event or member ends a stream.
from ..chat._stream import END_MARKER_LEN, _text, may_end

__all__ = ["END_MARKER_LEN", "MAX_ENTRIES", "StreamState", "may_end", "new_stream_state"]

MAX_ENTRIES = 4096
"""Choices a stream may create (the figure of every dialect; `chat._choice.MAX_ENTRIES`
says why): `n` times the number of prompts is a handful in real streams."""

_CHUNK_SKIP = frozenset({"id", "object", "created", "model", "choices", "usage", "error"})
"""Chunk members merged by hand."""

_CHOICE_KNOWN = frozenset(
    {"index", "text", "finish_reason", "stop_reason", "logprobs", "token_ids", "prompt_token_ids"}
)
"""Choice members merged by hand; any other is merged into the choice as it comes."""


def _error_payload(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"message": value}


class _Choice:
    """One choice being built: its text grows in `TextParts`, joined at the end."""

    __slots__ = (
        "extra",
        "finish_reason",
        "index",
        "logprobs",
        "prompt_token_ids",
        "stop_reason",
        "stopped",
        "text",
        "token_ids",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.text = TextParts()
        self.finish_reason: str | None = None
        self.stop_reason: Any = None
        self.stopped = False
        """True once a chunk carried `stop_reason` (even null): the built choice has the key."""
        self.logprobs: dict[str, Any] | None = None
        self.prompt_token_ids: Any = None
        self.token_ids: list[Any] | None = None
        self.extra: dict[str, Any] = {}

    def feed(self, choice: dict[str, Any], notes: DroppedNotes) -> None:
        text = choice.get("text")
        if isinstance(text, str):
            if text:
                self.text.append(text)
        elif text is not None:
            notes.add(f"choice {self.index}: text is not a string")
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            self.finish_reason = finish
        if "stop_reason" in choice:
            self.stopped = True
            if choice["stop_reason"] is not None:
                self.stop_reason = choice["stop_reason"]
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict):
            self._logprobs(logprobs)
        elif logprobs is not None:
            notes.add(f"choice {self.index}: logprobs is not an object")
        if self.prompt_token_ids is None:
            self.prompt_token_ids = choice.get("prompt_token_ids")
        token_ids = choice.get("token_ids")
        if token_ids is not None:
            if self.token_ids is None:
                self.token_ids = []
            if isinstance(token_ids, list):
                self.token_ids.extend(token_ids)
            else:
                self.token_ids.append(token_ids)
        if not _CHOICE_KNOWN.issuperset(choice):  # checked in C; built only when there are others
            merge(self.extra, {k: v for k, v in choice.items() if k not in _CHOICE_KNOWN})

    def _logprobs(self, logprobs: dict[str, Any]) -> None:
        kept = self.logprobs
        if kept is None:
            kept = self.logprobs = {}
        for key, value in logprobs.items():
            if isinstance(value, list):
                old = kept.get(key)
                if isinstance(old, list):
                    old.extend(value)
                else:
                    kept[key] = list(value)
            else:
                kept.setdefault(key, value)

    def build(self) -> dict[str, Any]:
        settle(self.extra)
        choice: dict[str, Any] = {
            "index": self.index,
            "text": self.text.value(),
            "logprobs": self.logprobs,
            "finish_reason": self.finish_reason,
        }
        if self.stopped:
            choice["stop_reason"] = self.stop_reason
        if self.prompt_token_ids is not None:
            choice["prompt_token_ids"] = self.prompt_token_ids
        if self.token_ids is not None:
            choice["token_ids"] = self.token_ids
        for key, value in self.extra.items():
            choice.setdefault(key, value)
        return choice


class StreamState:
    """Incremental reassembly of one legacy Completions stream into a `text_completion`."""

    __slots__ = (
        "_choices",
        "_created",
        "_error",
        "_extra",
        "_id",
        "_model",
        "_new_choices",
        "_notes",
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
        self._new_choices = Allowance("choices", MAX_ENTRIES)
        self._usage: dict[str, Any] | None = None
        self._extra: dict[str, Any] = {}
        self._error: dict[str, Any] | None = None
        self._notes = DroppedNotes()

    @property
    def terminal(self) -> Terminal | None:
        """ "complete" after `[DONE]`, "error" after an error event or chunk, else None."""
        return self._terminal

    def feed(self, event: SseEvent) -> None:
        """Take one decoded SSE event; never raises, whatever it holds."""
        try:
            self._feed(event)
        except Exception as exc:  # a bug must not cost the capture: note it and go on
            self._notes.add(f"event not used ({type(exc).__name__}: {exc})")

    def _feed(self, event: SseEvent) -> None:
        data = event.data
        if data == b"[DONE]" or (len(data) < 64 and data.strip() == b"[DONE]"):
            if self._terminal is None:
                self._terminal = "complete"
            return
        if self._terminal == "complete":
            self._notes.add("data after [DONE] ignored")
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
            self._notes.add(f"data is not a JSON object: {_text(data)[:80]!r}")
            return
        error = chunk.get("error")
        if error is not None:
            if self._error is None:
                self._error = _error_payload(error)
            self._terminal = "error"
        self._chunk(chunk)

    def _chunk(self, chunk: dict[str, Any]) -> None:
        notes = self._notes
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
                self._choice(choice, notes)
        elif choices is not None:
            notes.add("choices is not a list")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
        if not _CHUNK_SKIP.issuperset(chunk):  # checked in C; built only when there are others
            merge(self._extra, {k: v for k, v in chunk.items() if k not in _CHUNK_SKIP})
        self._seen = True

    def _choice(self, choice: object, notes: DroppedNotes) -> None:
        index = choice.get("index") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or type(index) is not int or index < 0:
            notes.add("choice without an integer index")
            return
        state = self._choices.get(index)
        if state is None:
            if not self._new_choices.take(notes, f"choice {index}"):
                return
            state = self._choices[index] = _Choice(index)
        state.feed(choice, notes)

    def result(self) -> StreamResult:
        """The `text_completion` reassembled so far, with the terminal kind and what was dropped."""
        response: dict[str, Any] | None = None
        if self._seen:
            settle(self._extra)
            response = {
                "id": self._id,
                "object": "text_completion",
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
            dropped=self._notes.listed(),
        )


def new_stream_state() -> StreamState:
    """A fresh Completions stream state."""
    return StreamState()
