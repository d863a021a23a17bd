"""The I/O-free stream state of Anthropic Messages, and its terminal-marker check.

`StreamState` is fed decoded SSE events and asked for the message at the end; its
docstring gives the rules it follows where the wire format and the SDK differ.
"""

from __future__ import annotations

from typing import Any, TypeGuard

import msgspec

from ..._codec import decode, decode_object, raw_text
from ...sse import SseEvent
from .._text import TextParts
from ..base import Allowance, DroppedNotes, StreamResult, Terminal, escaped_ascii
from ._blocks import (
    KNOWN_DELTA_TYPES,
    InputJSONDelta,
    SignatureDelta,
    TextDelta,
    ThinkingDelta,
    struct_tag,
)
from ._events import ContentBlockDeltaEvent, ContentBlockStopEvent, MessageStopEvent, PingEvent

__all__ = ["END_MARKER_LEN", "MAX_ENTRIES", "StreamState", "may_end", "new_stream_state"]

MAX_ENTRIES = 4096
"""Content blocks a stream may create.

A real message has a handful of blocks (text, thinking, tens of tool uses, rarely
hundreds), so 4,096 leaves a margin of ten or more. A `content_block_start` of a few dozen
bytes creates a block of hundreds, so a stream of them multiplied its length several times
outside the server's memory budget; at the bound the blocks cost a few MB. Past it a new
block is dropped with a note; deltas of existing blocks keep merging.
"""

_DELTA_BLOCK = {"text": "text", "thinking": "thinking", "signature": "thinking"}
"""The block type that the text of a known delta field belongs to."""

_DELTA_SKIP = frozenset({"type", "partial_json", "citation"})
"""Delta fields merged by hand, or not content at all."""


class _MessageStart(msgspec.Struct, tag_field="type", tag="message_start"):
    """`message_start` as the stream state reads it: its `message`, whatever it holds."""

    message: Any = None


class _BlockStart(msgspec.Struct, tag_field="type", tag="content_block_start"):
    """`content_block_start` as the stream state reads it: its `index` and block, unchecked."""

    index: Any = None
    content_block: Any = None


class _MessageDeltaTag(msgspec.Struct, tag_field="type", tag="message_delta"):
    """A `message_delta` recognised by its tag alone."""


class _ErrorTag(msgspec.Struct, tag_field="type", tag="error"):
    """An `error` recognised by its tag alone."""


_state_decoder = msgspec.json.Decoder(
    ContentBlockDeltaEvent
    | ContentBlockStopEvent
    | PingEvent
    | MessageStopEvent
    | _MessageStart
    | _BlockStart
    | _MessageDeltaTag
    | _ErrorTag
)
"""The stream state's one decode of a payload. Deltas, stops and pings are typed as in
`StreamEvent`; the two start events keep their fields as decoded JSON, as the generic path
reads them from the payload dict; `message_delta` and `error` are recognised by their tag
alone and go to the generic path, which decodes the payload as a dict (so does any payload
this union rejects)."""


class _Block:
    """One content block being built: its starting value plus the fragments since."""

    __slots__ = ("citations", "data", "json", "kind", "parts")

    def __init__(self, data: dict[str, Any]) -> None:
        self.kind = data.get("type")
        self.data = data
        self.parts: dict[str, TextParts] = {}
        self.citations: list[Any] = []
        self.json = TextParts()

    def build(self, index: int, notes: DroppedNotes) -> dict[str, Any]:
        out = dict(self.data)
        for key, parts in self.parts.items():
            start = out.get(key)
            out[key] = (start if isinstance(start, str) else "") + parts.value()
        if self.citations:
            start = out.get("citations")
            out["citations"] = (start if isinstance(start, list) else []) + self.citations
        if self.json:
            text = self.json.value()
            if text:
                try:
                    out["input"] = decode(text)
                except (msgspec.DecodeError, RecursionError):
                    out["input"] = {"_raw": text}
                    notes.add(f"block {index}: tool input is not valid JSON; kept as _raw")
        return out


class StreamState:
    """Incremental reassembly of one Anthropic Messages stream.

    It follows the wire format, not the SDK's accumulator, where they differ:

    - every string a delta carries is appended to the same field of its block: `text_delta`,
      `thinking_delta`, `signature_delta` and `compaction_delta` alike. The SDK *replaces* the
      signature (and the compaction fields); the API sends the signature in one delta after
      an empty start value, so both give the same result on every recorded stream, and
      appending is the rule that loses nothing if it is ever sent in pieces. A delta type
      this dialect does not know is merged by the same rule and noted in `dropped`;
    - `citations_delta` appends its citation to the text block's `citations`;
    - `input_json_delta` fragments are joined and parsed once, when the message is built;
      text that is not valid JSON (a cut stream, a model's broken arguments) is kept as
      `{"_raw": text}` as NeMo Gym does, where the SDK raises or loses a half-written string;
    - `message_delta` usage overrides `message_start` usage key by key; a null never erases a
      known value; `stop_reason`, `stop_sequence` (which NeMo Gym drops), `stop_details`,
      `container` and top-level extras such as `context_management` are kept;
    - events without an `event:` line are used (the SDK drops them); the type comes from the
      payload, else from the event name. `message_stop` completes the stream; an `error`
      event (by name or type, with or without a `type` in its payload) ends it with "error";
    - a second `message_start` for the same message before any block arrived is a duplicate
      and ignored; any other `message_start` while a message is open means the stream was
      restarted (a retrying proxy splicing two attempts): the later message replaces the
      unfinished one, which is described in `dropped`. The SDK keeps the first envelope and
      mixes both messages' blocks; vercel/ai fails the stream;
    - a `fallback` block's `to.model` becomes the message's `model`, as in the non-streaming
      body (the SDK does the same);
    - blocks are kept by their `index`, so a block that arrives out of order still lands in
      its place, and a repeated `content_block_start` for an index replaces that block.

    Nothing here raises on garbage: data that is not a JSON object, events out of order and
    deltas for unknown blocks are skipped and noted in `StreamResult.dropped`.
    """

    __slots__ = (
        "_blocks",
        "_error",
        "_new_blocks",
        "_notes",
        "_message",
        "_started",
        "_terminal",
        "_touched",
        "_usage",
    )

    def __init__(self) -> None:
        self._terminal: Terminal | None = None
        self._error: dict[str, Any] | None = None
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, Any] = {}
        self._notes = DroppedNotes()
        self._new_blocks = Allowance("blocks", MAX_ENTRIES)
        self._started = False
        """True once a message_start was taken."""
        self._touched = False
        """True once a block or message_delta event changed the open message."""

    @property
    def terminal(self) -> Terminal | None:
        """The terminal kind once `message_stop` or an error event was fed, else None."""
        return self._terminal

    def feed(self, event: SseEvent) -> None:
        """Take one decoded SSE event; never raises, whatever it holds."""
        if self._terminal is not None:
            self._notes.add(f"{event.event or 'data'} event after the terminal event")
            return
        try:
            typed = _state_decoder.decode(event.data)
        except msgspec.ValidationError:
            typed = None
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            self._not_json(event)
            return
        # The hot path: deltas of text, thinking and tool arguments, decoded straight
        # into Structs and appended inline (nearly every event of a stream takes it).
        # Everything else is rare and goes through the generic path.
        if type(typed) is ContentBlockDeltaEvent and event.event != "error":
            delta = typed.delta
            try:
                block = self._blocks[typed.index]
            except KeyError:
                self._notes.add(f"{struct_tag(type(delta))} for unknown block {typed.index}")
                return
            self._touched = True
            if type(delta) is TextDelta:
                key, text = "text", delta.text
            elif type(delta) is ThinkingDelta:
                key, text = "thinking", delta.thinking
            elif type(delta) is InputJSONDelta:
                block.json.append(delta.partial_json)
                return
            elif type(delta) is SignatureDelta:
                key, text = "signature", delta.signature
            else:
                self._generic(decode_object(event.data) or {}, event.event)
                return
            if block.kind != _DELTA_BLOCK[key]:
                self._notes.add(f"{key} delta for {block.kind} block {typed.index}")
                return
            try:
                block.parts[key].append(text)
            except KeyError:
                block.parts[key] = TextParts(text)
            return
        if event.event == "error":
            typed = None  # the generic path ends the stream on it, whatever the payload says
        kind = type(typed)
        if kind is ContentBlockStopEvent or kind is PingEvent:
            return
        elif kind is MessageStopEvent:
            self._terminal = "complete"
        elif kind is _BlockStart:
            self._block_start(typed.index, typed.content_block)
        elif kind is _MessageStart:
            self._start(typed.message)
        else:
            payload = decode_object(event.data)
            if payload is None:
                self._not_json(event)
            else:
                self._generic(payload, event.event)

    def _not_json(self, event: SseEvent) -> None:
        if event.event == "error":
            self._terminal = "error"
            self._error = {"_raw": raw_text(event.data)}
        elif event.event == "message_stop":
            self._terminal = "complete"
        else:
            self._notes.add(f"{event.event or 'data'} event whose data is not a JSON object")

    def _append(self, block: _Block, key: str, text: str, index: int) -> None:
        expected = _DELTA_BLOCK.get(key)
        if expected is not None and block.kind != expected:
            self._notes.add(f"{key} delta for {block.kind} block {index}")
            return
        parts = block.parts.get(key)
        if parts is None:
            block.parts[key] = TextParts(text)
        else:
            parts.append(text)

    def _generic(self, payload: dict[str, Any], name: str) -> None:
        kind = payload.get("type")
        if not isinstance(kind, str):
            kind = name
        if kind == "error" or name == "error":
            self._terminal = "error"
            self._error = payload
        elif kind == "message_start":
            self._start(payload.get("message"))
        elif kind == "content_block_start":
            self._block_start(payload.get("index"), payload.get("content_block"))
        elif kind == "content_block_delta":
            self._delta(payload)
        elif kind == "message_delta":
            self._message_delta(payload)
        elif kind == "message_stop":
            self._terminal = "complete"
        elif kind not in ("ping", "content_block_stop"):
            self._notes.add(f"unknown event type {kind!r}")

    def _block_start(self, index: Any, block: Any) -> None:
        if not _is_index(index) or not isinstance(block, dict):
            self._notes.add("content_block_start without an index and a block object")
            return
        if index in self._blocks:
            self._notes.add(f"content_block_start for block {index} replaced the block")
        elif not self._new_blocks.take(self._notes, f"block {index}"):
            return
        self._blocks[index] = _Block(dict(block))
        self._touched = True
        target = block.get("to")
        if (
            block.get("type") == "fallback"
            and isinstance(target, dict)
            and isinstance(target.get("model"), str)
        ):
            # The model that serves the rest of the message; the non-streaming body
            # names it in `model` too.
            if self._message is not None:
                self._message["model"] = target["model"]

    def _start(self, message: Any) -> None:
        if not isinstance(message, dict):
            self._notes.add("message_start without a message object")
            return
        pending: dict[str, Any] = {}
        if self._message is not None and not self._started:
            # Only a message_delta came before: keep what it set over the envelope.
            pending = self._message
        elif self._message is not None:
            if message.get("id") == self._message.get("id") and not self._touched:
                self._notes.add(f"duplicate message_start for {message.get('id')!r}")
                return
            self._notes.add(
                f"message_start {message.get('id')!r} replaced unfinished message "
                f"{self._message.get('id')!r} ({len(self._blocks)} blocks)"
            )
            self._blocks = {}
            self._usage = {}
        envelope = dict(message)
        envelope.update((k, v) for k, v in pending.items() if k not in ("type", "role"))
        content = envelope.get("content")
        if isinstance(content, list):
            for index, block in enumerate(content):
                if isinstance(block, dict) and index not in self._blocks:
                    if not self._new_blocks.take(self._notes, f"block {index}"):
                        break
                    self._blocks[index] = _Block(dict(block))
        usage = envelope.get("usage")
        if isinstance(usage, dict):
            self._usage = {**usage, **self._usage}
        self._message = envelope
        self._started = True
        self._touched = False

    def _delta(self, payload: dict[str, Any]) -> None:
        index, delta = payload.get("index"), payload.get("delta")
        if not _is_index(index) or not isinstance(delta, dict):
            self._notes.add("content_block_delta without an index and a delta object")
            return
        kind = delta.get("type")
        block = self._blocks.get(index)
        if block is None:
            self._notes.add(f"{kind} for unknown block {index}")
            return
        self._touched = True
        if kind not in KNOWN_DELTA_TYPES:
            self._notes.add(f"unknown delta type {kind!r} for block {index} merged by field name")
        partial = delta.get("partial_json")
        if isinstance(partial, str):
            block.json.append(partial)
        citation = delta.get("citation")
        if citation is not None:
            block.citations.append(citation)
        for key, value in delta.items():
            if key in _DELTA_SKIP or value is None:
                continue
            if isinstance(value, str):
                if kind in ("text_delta", "thinking_delta", "signature_delta"):
                    self._append(block, key, value, index)
                else:
                    parts = block.parts.get(key)
                    if parts is None:
                        block.parts[key] = TextParts(value)
                    else:
                        parts.append(value)
            else:
                block.data[key] = value

    def _message_delta(self, payload: dict[str, Any]) -> None:
        if self._message is None:
            self._message = {"type": "message", "role": "assistant"}
            self._notes.add("message_delta before message_start")
        self._touched = True
        delta = payload.get("delta")
        if isinstance(delta, dict):
            for key, value in delta.items():
                if value is not None or key not in self._message:
                    self._message[key] = value
        usage = payload.get("usage")
        if isinstance(usage, dict):
            for key, value in usage.items():
                if value is not None or key not in self._usage:
                    self._usage[key] = value
        for key, value in payload.items():
            if key not in ("type", "delta", "usage") and value is not None:
                self._message[key] = value

    def result(self) -> StreamResult:
        """The message reassembled so far; partial (and `truncated`) without `message_stop`."""
        notes = self._notes.copy()
        response: dict[str, Any] | None = None
        if self._message is not None or self._blocks:
            if not self._started:
                notes.add("no message_start: the message envelope is missing")
            response = dict(self._message or {"type": "message", "role": "assistant"})
            response["content"] = [self._blocks[i].build(i, notes) for i in sorted(self._blocks)]
            if self._usage or "usage" in response:
                response["usage"] = dict(self._usage)
        return StreamResult(
            response=response,
            terminal=self._terminal,
            truncated=self._terminal is None,
            error=self._error,
            dropped=notes.listed(),
        )


def _is_index(value: Any) -> TypeGuard[int]:
    return type(value) is int and value >= 0


END_MARKER_LEN = len("message_stop")
"""Length of the longest marker `may_end` looks for."""


def may_end(chunk: bytes) -> bool:
    """False only when SSE text holding `chunk` cannot complete the terminal event.

    What makes the state terminal: `message_stop` or `error`, as the event name or the
    data's `type`.
    """
    # `find`, not `in`: `in` first tries to read a bytes operand as an int (slower).
    return chunk.find(b"message_stop") >= 0 or chunk.find(b"error") >= 0 or escaped_ascii(chunk)


def new_stream_state() -> StreamState:
    """A fresh stream state."""
    return StreamState()
