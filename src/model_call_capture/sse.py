"""An incremental Server-Sent Events decoder (WHATWG HTML, "Parsing an event stream").

Fed transport chunks as they arrive, it returns the events completed by each chunk. It
works on bytes: line ends (LF, CR, CRLF) are ASCII, so a UTF-8 character split across
chunks is simply carried over with the incomplete line, and `data` stays bytes for the
JSON decoder to read without a round trip through `str`. It holds at most one incomplete
line and one incomplete event, and does no I/O.

Deliberate difference from the specification: `finish()` delivers an event whose
closing blank line never arrived (real recordings end that way); the specification
discards it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SseDecoder", "SseEvent"]

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event."""

    data: bytes
    """The `data:` lines of the event, joined with LF."""
    event: str = ""
    """The `event:` field; empty when the stream gave none (the spec's "message")."""
    id: str | None = None
    """The last event id seen so far in the stream, if any."""
    retry: int | None = None
    """The `retry:` reconnection time in ms carried by this event, if any."""


class SseDecoder:
    """Incremental SSE decoder: `feed(chunk)` -> completed events; `finish()` at end."""

    __slots__ = (
        "_pending",
        "_skip_lf",
        "_started",
        "_data",
        "_event",
        "_retry",
        "_last_id",
        "content_seen",
        "comments",
    )

    def __init__(self) -> None:
        self._pending = bytearray()
        self._skip_lf = False
        self._started = False
        self._data: list[bytes] = []
        self._event = ""
        self._retry: int | None = None
        self._last_id: str | None = None
        self.content_seen = False
        """True once any line other than a comment or a blank line was read."""
        self.comments = 0
        """Number of comment lines (`:` keep-alives) read."""

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SseEvent]:
        """Decode one transport chunk; returns the events it completed, in order."""
        data = bytes(chunk)
        if not data:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if data[:1] == b"\n":
                data = data[1:]
        if self._started and b"\n" not in data and b"\r" not in data:
            # No line ends here: carry the bytes over without re-scanning what is held.
            self._pending += data
            return []
        if self._pending:
            self._pending += data
            data = bytes(self._pending)
            self._pending.clear()
        if not self._started:
            if len(data) < 3 and _BOM.startswith(data):
                self._pending += data
                return []
            self._started = True
            if data.startswith(_BOM):
                data = data[3:]
        lines = data.splitlines()
        if lines and not data.endswith((b"\n", b"\r")):
            self._pending += lines.pop()
        # A CR at the very end of the chunk may be the first half of a CRLF. (Not a CR that
        # ends the last complete line when an incomplete line follows it in this chunk.)
        self._skip_lf = data.endswith(b"\r")
        # From here a long event's bytes are held once in its line, plus once in its data.
        del data
        events: list[SseEvent] = []
        for line in lines:
            self._line(line, events)
        return events

    def finish(self) -> list[SseEvent]:
        """End of input: deliver the last line and the last unterminated event, if any."""
        events: list[SseEvent] = []
        if self._pending:
            line = bytes(self._pending)
            self._pending.clear()
            if not self._started:
                self._started = True
                if line.startswith(_BOM):
                    line = line[3:]
            self._line(line, events)
        self._dispatch(events)
        return events

    def _line(self, line: bytes, events: list[SseEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[0] == 0x3A:  # ":" starts a comment
            self.comments += 1
            return
        self.content_seen = True
        if line.startswith(b"data: "):  # nearly every line: one slice, not partition's copies
            self._data.append(line[6:])
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry":
            if value.isdigit():
                self._retry = int(value)

    def _dispatch(self, events: list[SseEvent]) -> None:
        if not self._data:
            self._event = ""
            self._retry = None
            return
        data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
        events.append(SseEvent(data, self._event, self._last_id, self._retry))
        self._data = []
        self._event = ""
        self._retry = None
