"""The stream state of the Responses dialect: rebuilds the final response from its events.

The response carried by `response.completed` / `.incomplete` / `.failed` is the result,
as the server sent it. When the stream ends without one, the response is rebuilt from
the last lifecycle envelope (`response.created`, `.queued` or `.in_progress`), the
output items added and done, and every delta seen. Items are joined by `output_index`,
never by item id: some providers (GitHub Copilot) give each event of one item a
different id. No I/O here: the state is fed decoded SSE events and asked for a result.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ... import _codec
from ...sse import SseEvent
from .._text import TextParts
from ..base import Allowance, DroppedNotes, StreamResult, Terminal, escaped_ascii
from . import _decoder, _slots
from ._decoder import EVENT_TYPES
from ._items import ItemState, as_index
from ._slots import PART_EVENTS, SLOTS, Slot, new_part

__all__ = ["END_MARKER_LEN", "MAX_ENTRIES", "StreamState", "may_end", "new_stream_state"]

_Any = dict[str, Any]

# Objects whose methods run for every event are bound here by assignment, not imported by
# name: CPython 3.11 compiles `obj.method(...)` on a name bound by an import as an
# attribute load, building a bound method object on every call, where it compiles a
# plain module global to a method call.
_event_decoder = _decoder.event_decoder
_SLOT_CLASSES = _slots.SLOT_CLASSES
_PART_TEXT_FIELD = _slots.PART_TEXT_FIELD
_TEXT_DELTA = _slots.SLOTS["response.output_text.delta"]
_TEXT_DONE = _slots.SLOTS["response.output_text.done"]

_LIFECYCLE: Final = {
    "response.created": None,
    "response.queued": None,
    "response.in_progress": None,
    "response.completed": "complete",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}

MAX_ENTRIES = 4096
"""Output items a stream may create, and parts (content and summary parts, shell commands,
annotated content indexes) all its items together may create.

A real response has a handful of items (messages, reasoning, tens of tool calls, rarely
hundreds) with a few parts each, so 4,096 leaves a margin of ten or more. An event of a few
dozen bytes creates an item or part of hundreds, so a stream of them multiplied its length
several times outside the server's memory budget; at the bound they cost a few MB. Past it
a new item or part is dropped with a note; events of existing ones keep merging.
"""


class StreamState:
    """Incremental reassembly of one OpenAI Responses API stream; no I/O, never raises."""

    __slots__ = (
        "_envelope",
        "_error",
        "_final",
        "_items",
        "_new_items",
        "_new_parts",
        "_notes",
        "_terminal",
    )

    def __init__(self) -> None:
        self._terminal: Terminal | None = None
        self._final: _Any | None = None
        self._envelope: _Any | None = None
        self._items: dict[int, ItemState] = {}
        self._error: _Any | None = None
        self._notes = DroppedNotes()
        self._new_items = Allowance("items", MAX_ENTRIES)
        self._new_parts = Allowance("parts", MAX_ENTRIES)

    @property
    def terminal(self) -> Terminal | None:
        """The terminal kind once `response.completed|incomplete|failed` or `error` was fed."""
        return self._terminal

    def feed(self, event: SseEvent) -> None:
        """Take one decoded SSE event; never raises, whatever it holds."""
        try:
            self._feed(event)
        except Exception as exc:
            self._notes.add(f"event could not be used ({type(exc).__name__})")

    def result(self) -> StreamResult:
        """The final response, or the partial reconstruction when the stream was cut."""
        response: _Any | None
        if self._final is not None:
            response = self._final
            if response.get("output") is None and self._items:
                response = {**response, "output": self._output()}
        else:
            output = self._output()
            if self._envelope is None and not output:
                response = None
            else:
                response = (
                    dict(self._envelope) if self._envelope is not None else {"object": "response"}
                )
                if output or not isinstance(response.get("output"), list):
                    response["output"] = output
        return StreamResult(
            response=response,
            terminal=self._terminal,
            truncated=self._terminal is None,
            error=self._error,
            dropped=self._notes.listed(),
        )

    # -- internals ------------------------------------------------------------------

    def _output(self) -> list[_Any]:
        return [self._items[index].build() for index in sorted(self._items)]

    def _feed(self, event: SseEvent) -> None:
        data = event.data
        if event.event.strip().lower() == "error":
            self._on_error(_codec.decode_object(data) or {"message": _codec.raw_text(data)})
            return
        try:
            typed = _event_decoder.decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            typed = None
        slot = _SLOT_CLASSES.get(type(typed))
        if slot is not None:
            if self._after_terminal(typed.__struct_config__.tag):
                return
            index = getattr(typed, slot.index_key) if slot.index_key else 0
            value = getattr(typed, slot.value_key)
            self._on_slot(
                slot,
                typed.output_index,
                index,
                value,
                typed.item_id,
                str(typed.__struct_config__.tag),
            )
            if (slot is _TEXT_DELTA or slot is _TEXT_DONE) and typed.logprobs:
                self._on_logprobs(slot, typed.output_index, index, typed.logprobs)
            return
        # A final event carries the whole output: don't hold it twice while decoding it again.
        del typed
        stripped = data.strip()
        if not stripped or stripped == b"[DONE]":
            return
        payload = _codec.decode_object(data)
        if payload is None:
            self._notes.add("non-JSON or non-object data: " + _codec.raw_text(stripped[:40]))
            return
        self._on_payload(payload)

    def _after_terminal(self, kind: object) -> bool:
        if self._terminal is None or (self._terminal == "error" and kind in _LIFECYCLE):
            return False
        self._notes.add(f"event after the terminal event: {kind!s:.60}")
        return True

    def _on_payload(self, payload: _Any) -> None:
        kind = payload.get("type")
        if kind is None and isinstance(payload.get("error"), dict):
            self._on_error(payload)  # an error body without `type` (Groq, OpenRouter)
            return
        if not isinstance(kind, str):
            self._notes.add("event without a string type")
            return
        if self._after_terminal(kind):
            return
        if kind == "error":
            self._on_error(payload)
        elif kind in _LIFECYCLE:
            self._on_lifecycle(kind, payload.get("response"))
        elif kind == "response.output_item.added" or kind == "response.output_item.done":
            self._on_item(kind, payload)
        elif kind in PART_EVENTS:
            self._on_part(kind, payload)
        elif kind in SLOTS:
            slot = SLOTS[kind]
            index = payload.get(slot.index_key, 0) if slot.index_key else 0
            self._on_slot(
                slot,
                payload.get("output_index"),
                index,
                payload.get(slot.value_key),
                payload.get("item_id"),
                kind,
            )
        elif kind == "response.output_text.annotation.added":
            self._on_annotation(payload)
        elif kind not in EVENT_TYPES:
            self._notes.add(f"unknown event type ignored: {kind:.60}")
        # Other known events (status changes, audio, partial images, shell output) carry
        # nothing that the final item does not repeat.

    def _on_error(self, payload: _Any) -> None:
        if self._terminal is None:
            self._terminal = "error"
            self._error = payload
        else:
            self._notes.add("error event after the terminal event")

    def _on_lifecycle(self, kind: str, response: Any) -> None:
        terminal = _LIFECYCLE[kind]
        if not isinstance(response, dict):
            self._notes.add(f"{kind} without a response object")
            if terminal is not None and self._terminal is None:
                self._terminal = terminal  # type: ignore[assignment]
            return
        if terminal is None:
            self._envelope = response
            return
        self._final = response
        if isinstance(response.get("output"), list):
            # The final response carries every item: the rebuilt ones would be a second copy.
            self._items.clear()
        if self._terminal is None:
            self._terminal = terminal  # type: ignore[assignment]

    def _on_item(self, kind: str, payload: _Any) -> None:
        index = as_index(payload.get("output_index"))
        item = payload.get("item")
        if index is None or not isinstance(item, dict):
            self._notes.add(f"{kind} without output_index or item")
            return
        state = self._items.get(index)
        if state is None and not self._new_items.take(
            self._notes, f"{kind} at output_index {index}"
        ):
            return
        if kind == "response.output_item.added":
            if state is None:
                self._items[index] = ItemState(item)
            elif state.done:
                self._notes.add(f"output_item.added after output_item.done at output_index {index}")
            else:
                state.item = item
        else:
            if state is None:
                state = self._items[index] = ItemState(item)
            state.item = item
            state.done = True
            # The done item carries the whole text and every part; keep it once, not twice.
            state.texts.clear()
            state.parts.clear()
            state.annotations.clear()
            state.logprobs.clear()

    def _item_for(self, index: int, item_type: str, item_id: Any, kind: str) -> ItemState | None:
        state = self._items.get(index)
        if state is None:
            if not self._new_items.take(self._notes, f"{kind} at output_index {index}"):
                return None
            self._notes.add(
                f"{kind} before its output item at output_index {index}: item synthesized"
            )
            item: _Any = {"type": item_type}
            if isinstance(item_id, str):
                item["id"] = item_id
            if item_type == "message":
                item.update(role="assistant", status="in_progress", content=[])
            state = self._items[index] = ItemState(item)
        elif state.done:
            self._notes.add(f"{kind} after output_item.done at output_index {index} ignored")
            return None
        return state

    def _on_part(self, kind: str, payload: _Any) -> None:
        container, index_key, final = PART_EVENTS[kind]
        output_index = as_index(payload.get("output_index"))
        index = as_index(payload.get(index_key, 0))
        part = payload.get("part")
        if output_index is None or index is None or not isinstance(part, dict):
            self._notes.add(f"{kind} without output_index, {index_key} or part")
            return
        item_type = (
            "message"
            if container == "content" and part.get("type") != "reasoning_text"
            else "reasoning"
        )
        state = self._item_for(output_index, item_type, payload.get("item_id"), kind)
        if state is None:
            return
        if (container, index) not in state.parts and not self._new_parts.take(
            self._notes, f"{kind} at {index}"
        ):
            return
        state.parts[(container, index)] = part
        field = _PART_TEXT_FIELD.get(part.get("type"))  # type: ignore[arg-type]
        if final:
            state.final_parts.add((container, index))
            if field is not None and isinstance(part.get(field), str):
                state.texts.pop((container, field, index), None)

    def _on_slot(
        self, slot: Slot, output_index: Any, index: Any, value: Any, item_id: Any, kind: str
    ) -> None:
        output_index = as_index(output_index)
        index = as_index(index)
        if output_index is None or index is None or not isinstance(value, str):
            self._notes.add(f"{kind} without a usable output_index, index or text")
            return
        state = self._item_for(output_index, slot.item_type, item_id, kind)
        if state is None:
            return
        if slot.where == "part":
            key = (slot.container, slot.field, index)
            if (slot.container, index) not in state.parts:
                if not self._new_parts.take(self._notes, f"{kind} at {index}"):
                    return
                state.parts[(slot.container, index)] = new_part(slot, state.item)
        elif slot.where == "command":
            key = ("command", slot.field, index)
            if key not in state.texts and not self._new_parts.take(
                self._notes, f"{kind} at {index}"
            ):
                return
        else:
            key = (slot.where, slot.field, index)
        fragments = state.texts.get(key)
        if fragments is None or not slot.append:
            state.texts[key] = TextParts(value)
        else:
            fragments.append(value)

    def _on_logprobs(self, slot: Slot, output_index: Any, index: Any, logprobs: list[Any]) -> None:
        """Output-text log-probs: a delta's are appended in order, a done event's replace them."""
        state = self._items.get(as_index(output_index))  # type: ignore[arg-type]
        index = as_index(index)
        if state is None or state.done or index is None or ("content", index) not in state.parts:
            return  # (no part: its text event was dropped)
        if slot.append:
            state.logprobs.setdefault(index, []).extend(logprobs)
        else:
            state.logprobs[index] = list(logprobs)

    def _on_annotation(self, payload: _Any) -> None:
        output_index = as_index(payload.get("output_index"))
        content_index = as_index(payload.get("content_index", 0))
        annotation = payload.get("annotation")
        if output_index is None or content_index is None or annotation is None:
            self._notes.add(
                "output_text.annotation.added without output_index, content_index or annotation"
            )
            return
        kind = "response.output_text.annotation.added"
        state = self._item_for(output_index, "message", payload.get("item_id"), kind)
        if state is None:
            return
        if content_index not in state.annotations and not self._new_parts.take(
            self._notes, f"{kind} at {content_index}"
        ):
            return
        position = as_index(payload.get("annotation_index")) or 0
        state.annotations.setdefault(content_index, []).append((position, annotation))


END_MARKER_LEN = len("response.incomplete")
"""Length of the longest marker `may_end` looks for."""


def may_end(chunk: bytes) -> bool:
    """False only when SSE text holding `chunk` cannot complete the terminal event.

    What makes the state terminal: `response.completed`, `response.incomplete` or
    `response.failed`; an `error` event (its name compared case-insensitively, hence the
    lower-casing); a data object of type `error` or with an `error` member.
    """
    chunk = chunk.lower()
    # `find`, not `in`: `in` first tries to read a bytes operand as an int (slower).
    return (
        chunk.find(b"error") >= 0
        or chunk.find(b"response.completed") >= 0
        or chunk.find(b"response.incomplete") >= 0
        or chunk.find(b"response.failed") >= 0
        or escaped_ascii(chunk)
    )


def new_stream_state() -> StreamState:
    """A fresh stream state."""
    return StreamState()
