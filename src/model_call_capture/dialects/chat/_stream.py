"""Chat Completions stream reassembly: the I/O-free stream state, fed decoded SSE events.

The state does not decode chunks into the wire types: it decodes each chunk with msgspec
into plain JSON values and merges those, so every field a provider adds
(`reasoning_details`, `x_groq`, Azure's `content_filter_results`, ...) survives into the
reassembled object and one mistyped field never costs the whole chunk. (The common chunk,
ids and one delta of text, is first tried on a typed path, `_fast`, which ends exactly
where this general path would.) The merge rules live with the choice being built
(`_choice`); for the fields of a delta:

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
from ..base import Allowance, DroppedNotes, StreamResult, Terminal, escaped_ascii
from . import _choice, _fast
from ._choice import ChoiceState, merge, settle

__all__ = ["END_MARKER_LEN", "StreamState", "may_end", "new_stream_state"]


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


def _error_payload(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"message": value}


class StreamState:
    """Incremental reassembly of one OpenAI Chat Completions stream into a `chat.completion`."""

    __slots__ = (
        "choices",
        "_created",
        "_error",
        "_extra",
        "_id",
        "_misses",
        "_model",
        "_new_tool_calls",
        "_notes",
        "_prompt_token_ids",
        "_seen",
        "new_choices",
        "_terminal",
        "_usage",
    )

    def __init__(self) -> None:
        self._terminal: Terminal | None = None
        self._seen = False
        self._id: str | None = None
        self._model: str | None = None
        self._created: int | None = None
        self.choices: dict[int, ChoiceState] = {}
        """The choices by index (read only: `choice` creates them)."""
        self.new_choices = Allowance("choices", _choice.MAX_ENTRIES)
        """The new choices the stream may still create (read only: `choice` takes them)."""
        self._new_tool_calls = Allowance("tool calls", _choice.MAX_ENTRIES)
        """Shared by all the choices: their tool calls count against one bound."""
        self._usage: dict[str, Any] | None = None
        self._extra: dict[str, Any] = {}
        self._error: dict[str, Any] | None = None
        self._prompt_token_ids: Any = None
        self._notes = DroppedNotes()
        self._misses = 0
        """Chunks in a row the typed path refused (`_fast`); at `_fast.MISSES` it is not tried."""

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
        if self._misses < _fast.MISSES and event.event != "error":
            if _fast.take(self, data):
                self._misses = 0
                return
            self._misses += 1
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
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                index = choice.get("index") if isinstance(choice, dict) else None
                if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                    notes.add("choice without an integer index")
                    continue
                state = self.choice(index)
                if state is not None:
                    state.feed(choice, notes)
        elif choices is not None:
            notes.add("choices is not a list")
        if self._prompt_token_ids is None:
            self._prompt_token_ids = chunk.get("prompt_token_ids")
        if not _CHUNK_SKIP.issuperset(chunk):  # checked in C; built only when there are others
            merge(self._extra, {k: v for k, v in chunk.items() if k not in _CHUNK_SKIP})
        self.end_chunk(
            chunk.get("id"), chunk.get("model"), chunk.get("created"), chunk.get("usage")
        )

    # -- the operations both paths apply a chunk with (`_chunk`, and `_fast`'s typed one) --

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
        if (
            not self._created
            and isinstance(created, int)
            and not isinstance(created, bool)
            and created
        ):
            self._created = created
        self._seen = True

    def choice(self, index: int) -> ChoiceState | None:
        """Choice `index`, created when it is new and within the bound; None past the bound
        (the first refusal is noted)."""
        state = self.choices.get(index)
        if state is None:
            if not self.new_choices.take(self._notes, f"choice {index}"):
                return None
            state = self.choices[index] = ChoiceState(index, self._new_tool_calls)
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
        """The `chat.completion` reassembled so far, with the terminal kind and what was dropped."""
        response: dict[str, Any] | None = None
        if self._seen:
            settle(self._extra)
            response = {
                "id": self._id,
                "object": "chat.completion",
                "created": self._created,
                "model": self._model,
                "choices": [self.choices[i].build() for i in sorted(self.choices)],
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
            dropped=self._notes.listed(),
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
    # `find`, not `in`: `in` first tries to read a bytes operand as an int (slower).
    return chunk.find(b"[DONE]") >= 0 or chunk.find(b"error") >= 0 or escaped_ascii(chunk)


def new_stream_state() -> StreamState:
    """A fresh Chat Completions stream state."""
    return StreamState()
