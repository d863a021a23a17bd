"""What the OpenAI streams of choices share: Chat Completions and legacy Completions.

Both send chunks of the same envelope (`id`, `object`, `created`, `model`, `choices` joined
by `index`, `usage`, members a server adds) in the same SSE framing, so one base class,
`ChoiceStream`, holds what is not about a choice's content:

- the framing: `data: [DONE]` completes the stream; a data object with an `error` member,
  or an `event: error`, ends it with "error", which wins over a later `[DONE]` (OpenRouter
  and vLLM send an error chunk and then `[DONE]`); data after `[DONE]` is noted as dropped;
  `may_end` is the cheap check for these markers;
- the envelope: the first non-empty `id`, `model` and `created`, the last `usage` object,
  any other member merged by chat's rules (`_choice.merge`) beside the response;
- the choices: created by index up to the stream's bound (`Allowance`), then fed;
- the typed path: a dialect's common chunk is first tried on a typed decoder (chat's
  `_fast`, Completions' `_fast`) that applies it through the operations below (`choice`,
  `take_member`, `end_chunk`), so it ends exactly where the general path (`_chunk`, plain
  JSON values) would; a stream whose chunks it keeps refusing stops being tried (`MISSES`).

A dialect subclasses it with its choice type (`_new_choice`), its `OBJECT`, the members
its general path merges by hand (`CHUNK_SKIP`) and its typed path (`_take`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from ..._codec import decode_object
from ...sse import SseEvent
from ..base import Allowance, DroppedNotes, StreamResult, Terminal, escaped_ascii
from ._choice import merge, settle

__all__ = ["END_MARKER_LEN", "MISSES", "ChoiceStream", "may_end"]

MISSES = 4
"""Chunks in a row the typed path refused after which a stream goes to the general path only."""


class Choice(Protocol):
    """What the stream needs of one choice being built."""

    def feed(self, choice: dict[str, Any], notes: DroppedNotes) -> None:
        """Merge one choice of a chunk (plain JSON values)."""

    def build(self) -> dict[str, Any]:
        """The choice as the complete response holds it."""


C = TypeVar("C", bound=Choice)


def _error_payload(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"message": value}


def text_of(data: bytes) -> str:
    """A data line as text, for an error payload or a note (bad bytes replaced)."""
    return data.decode("utf-8", "replace")


class ChoiceStream(Generic[C]):
    """Incremental reassembly of one OpenAI stream of choices (see the module docstring)."""

    __slots__ = (
        "choices",
        "_created",
        "_error",
        "_extra",
        "_id",
        "_misses",
        "_model",
        "_notes",
        "_seen",
        "new_choices",
        "_terminal",
        "_usage",
    )

    OBJECT: ClassVar[str]
    """The `object` of the complete response (`chat.completion`, `text_completion`)."""
    CHUNK_SKIP: ClassVar[frozenset[str]]
    """Chunk members the general path merges by hand (or drops); the rest go beside the response."""
    _take: ClassVar[Callable[[Any, bytes], bool]]
    """The typed path: applies a chunk's JSON text and returns True, or False (state untouched)."""

    def __init__(self, max_choices: int) -> None:
        self._terminal: Terminal | None = None
        self._seen = False
        self._id: str | None = None
        self._model: str | None = None
        self._created: int | None = None
        self.choices: dict[int, C] = {}
        """The choices by index (read only: `choice` creates them)."""
        self.new_choices = Allowance("choices", max_choices)
        """The new choices the stream may still create (read only: `choice` takes them)."""
        self._usage: dict[str, Any] | None = None
        self._extra: dict[str, Any] = {}
        self._error: dict[str, Any] | None = None
        self._notes = DroppedNotes()
        self._misses = 0
        """Chunks in a row the typed path refused; at `MISSES` it is not tried."""

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
        if self._misses < MISSES and event.event != "error":
            if self._take(data):
                self._misses = 0
                return
            self._misses += 1
        chunk = decode_object(data)
        if event.event == "error":
            if self._error is None:
                self._error = _error_payload(
                    chunk.get("error", chunk) if chunk is not None else text_of(data)
                )
            self._terminal = "error"
            return
        if chunk is None:
            self._notes.add(f"data is not a JSON object: {text_of(data)[:80]!r}")
            return
        error = chunk.get("error")
        if error is not None:
            if self._error is None:
                self._error = _error_payload(error)
            self._terminal = "error"
        self._chunk(chunk)

    def _chunk(self, chunk: dict[str, Any]) -> None:
        """The general path: one chunk of plain JSON values."""
        notes = self._notes
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                index = choice.get("index") if isinstance(choice, dict) else None
                if type(index) is not int or index < 0:
                    notes.add("choice without an integer index")
                    continue
                state = self.choice(index)
                if state is not None:
                    state.feed(choice, notes)
        elif choices is not None:
            notes.add("choices is not a list")
        skip = self.CHUNK_SKIP
        if not skip.issuperset(chunk):  # checked in C; built only when there are others
            merge(self._extra, {k: v for k, v in chunk.items() if k not in skip})
        self.end_chunk(
            chunk.get("id"), chunk.get("model"), chunk.get("created"), chunk.get("usage")
        )

    def _new_choice(self, index: int) -> C:
        """A fresh choice `index` (within the bound: `choice` counted it)."""
        raise NotImplementedError

    def _members(self, response: dict[str, Any]) -> None:
        """Add the members a dialect keeps by hand to the response being built (after `usage`)."""

    # -- the operations both paths apply a chunk with (`_chunk`, and the typed `_take`) --

    def end_chunk(self, ident: object, model: object, created: object, usage: object) -> None:
        """The end of a chunk taken whole: what it says of the whole completion (the first
        non-empty `id`, `model` and `created`; the last `usage` object), and that the stream
        has content."""
        if isinstance(usage, dict):
            self._usage = usage
        if not self._id and isinstance(ident, str) and ident:
            self._id = ident
        if not self._model and isinstance(model, str) and model:
            self._model = model
        if not self._created and type(created) is int and created:
            self._created = created
        self._seen = True

    def choice(self, index: int) -> C | None:
        """Choice `index`, created when it is new and within the bound; None past the bound
        (the first refusal is noted)."""
        state = self.choices.get(index)
        if state is None:
            if not self.new_choices.take(self._notes, f"choice {index}"):
                return None
            state = self.choices[index] = self._new_choice(index)
        return state

    def has_member(self, key: str) -> bool:
        """Whether the stream has a chunk member `key` kept beside the response."""
        return key in self._extra

    def take_member(self, key: str, value: str | None) -> None:
        """One string member of the chunk kept beside the response, by `merge`'s rule (a
        non-empty string already there keeps it: no merge needed)."""
        old = self._extra.get(key)
        if not (isinstance(old, str) and old):
            merge(self._extra, {key: value})

    def result(self) -> StreamResult:
        """The response reassembled so far, with the terminal kind and what was dropped."""
        response: dict[str, Any] | None = None
        if self._seen:
            settle(self._extra)
            response = {
                "id": self._id,
                "object": self.OBJECT,
                "created": self._created,
                "model": self._model,
                "choices": [self.choices[i].build() for i in sorted(self.choices)],
            }
            if self._usage is not None:
                response["usage"] = self._usage
            self._members(response)
            for key, value in self._extra.items():
                response.setdefault(key, value)
        return StreamResult(
            response=response,
            terminal=self._terminal,
            truncated=self._terminal is None,
            error=self._error,
            dropped=self._notes.listed(),
        )


END_MARKER_LEN = len("[DONE]")
"""Length of the longest marker `may_end` looks for."""


def may_end(chunk: bytes) -> bool:
    """False only when SSE text holding `chunk` cannot complete the terminal event.

    What makes the state terminal: data `[DONE]`, an `error` event, or a data object with
    an `error` member.
    """
    # `find`, not `in`: `in` first tries to read a bytes operand as an int (slower).
    return chunk.find(b"[DONE]") >= 0 or chunk.find(b"error") >= 0 or escaped_ascii(chunk)
