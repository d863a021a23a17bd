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

import functools
import re
from collections.abc import Iterable

import msgspec

__all__ = ["SseDecoder", "SseEvent"]

_BOM = b"\xef\xbb\xbf"
_CR, _LF = 0x0D, 0x0A
"""Searched as ints: `b"\r" in data` is slower, as it first tries to read `b"\r"` as an int."""


class SseEvent(msgspec.Struct, frozen=True, gc=False):
    """One dispatched event (immutable; built in C, as one comes with nearly every chunk)."""

    data: bytes
    """The `data:` lines of the event, joined with LF."""
    event: str = ""
    """The `event:` field; empty when the stream gave none (the spec's "message")."""
    id: str | None = None
    """The last event id seen so far in the stream, if any."""
    retry: int | None = None
    """The `retry:` reconnection time in ms carried by this event, if any."""


_MAX_RETRY_DIGITS = 18
"""The longest `retry:` value read (any 18 digits fit in 64 bits)."""

_one_event = re.compile(rb"(?:event: ?(.*)\n)?data: ?(.*)\n\n").fullmatch
"""One whole event in the shape model servers send, for a chunk without CR.

(`.` is any byte but LF. It runs in the regex engine's fastest loop: `[^\n]` is slower, and
`[^\r\n]` slower than this match plus a separate search for CR.)"""


@functools.lru_cache(maxsize=16)
def _name_table(names: tuple[str, ...]) -> dict[bytes | None, str]:
    """Each known event name by its bytes, so a name that comes with nearly every event is
    looked up rather than decoded; None (the fast path's match when an event has no
    `event:` line) is the empty name. Cached: every stream of a dialect shares one table.
    """
    table: dict[bytes | None, str] = {name.encode(): name for name in names}
    table[None] = ""
    return table


class SseDecoder:
    """Incremental SSE decoder: `feed(chunk)` -> completed events; `finish()` at end.

    `event_names` are the `event:` names the caller expects (its dialect's): such a name
    is looked up rather than decoded, and every event of that name shares one string.
    Any other name is decoded and delivered all the same.
    """

    __slots__ = (
        "_data",
        "_rest",
        "_event",
        "_idle",
        "_last_id",
        "_names",
        "_pending",
        "_retry",
        "_skip_lf",
        "_started",
        "comments",
        "content_seen",
    )

    def __init__(self, event_names: Iterable[str] = ()) -> None:
        self._names = _name_table(tuple(event_names))
        self._pending = bytearray()
        self._skip_lf = False
        self._started = False
        self._data: list[bytes] = []
        """The event's first `data` line (at most one entry)."""
        self._rest = bytearray()
        """Its further `data` lines, each after an LF, in one buffer: a list of short lines
        took about 40 bytes a line (64 MB of `data:xy` lines: 449 MB)."""
        self._event = ""
        self._retry: int | None = None
        self._last_id: str | None = None
        self._idle = True
        """True when nothing is held (no partial line or event): the next chunk may take the fast path."""
        self.content_seen = False
        """True once any line other than a comment or a blank line was read."""
        self.comments = 0
        """Number of comment lines (`:` keep-alives) read."""

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SseEvent]:
        """Decode one transport chunk; returns the events it completed, in order."""
        if self._idle and type(chunk) is bytes and _CR not in chunk:
            # The usual chunk: exactly one whole event (an optional `event:` line, one
            # `data:` line, a blank line, LF only) with nothing held from before. One
            # anchored match over this chunk only; any other shape takes the general path.
            match = _one_event(chunk)
            if match is not None:
                self._started = True  # past the start: a BOM later on is not stripped
                self.content_seen = True
                raw_name, payload = match.groups()
                name = self._names.get(raw_name)
                if name is None:
                    name = raw_name.decode("utf-8", "replace")
                return [SseEvent(payload, name, self._last_id)]
        events = self._feed(chunk if type(chunk) is bytes else bytes(chunk))
        self._idle = (
            self._started
            and not self._pending
            and not self._skip_lf
            and not self._data
            and not self._event
            and self._retry is None
        )
        return events

    def _feed(self, data: bytes) -> list[SseEvent]:
        if not data:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if data[:1] == b"\n":
                data = data[1:]
        has_cr = _CR in data
        if self._started and not has_cr and _LF not in data:
            # No line ends here: carry the bytes over without re-scanning what is held.
            self._pending += data
            return []
        if self._pending:
            self._pending += data
            data = bytes(self._pending)
            self._pending.clear()
            has_cr = _CR in data
        if not self._started:
            if len(data) < 3 and _BOM.startswith(data):
                self._pending += data
                return []
            self._started = True
            if data.startswith(_BOM):
                data = data[3:]
        if not has_cr:
            # LF line ends (the usual case): one split, no CR bookkeeping.
            lines = data.split(b"\n")
            tail = lines.pop()
            if tail:
                self._pending += tail
        else:
            lines = data.splitlines()
            if lines and not data.endswith((b"\n", b"\r")):
                self._pending += lines.pop()
            # A CR at the very end of the chunk may be the first half of a CRLF. (Not a CR
            # that ends the last complete line when an incomplete line follows it.)
            self._skip_lf = data.endswith(b"\r")
        # From here a long event's bytes are held once in its line, plus once in its data.
        del data
        # Blank, `data: ` and comment lines are nearly every line of a model stream: they
        # are handled inline; other fields go through `_line`.
        events: list[SseEvent] = []
        for line in lines:
            if not line:
                self._dispatch(events)
            elif line.startswith(b"data: "):
                self.content_seen = True
                if self._data:
                    self._more(line, 6)
                else:
                    self._data.append(line[6:])
            elif line[0] == 0x3A:  # ":" starts a comment
                self.comments += 1
            else:
                self._line(line, events)
        return events

    def finish(self) -> list[SseEvent]:
        """End of input: deliver the last line and the last unterminated event, if any."""
        self._idle = False
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
            self._data_line(line, 6)
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data_line(value, 0)
        elif name == b"event":
            known = self._names.get(value)
            self._event = known if known is not None else value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry":
            # A value of more digits is no reconnection time, and past 4,300 digits
            # `int()` raises: it is ignored like any value that is not all digits.
            if value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
                self._retry = int(value)

    def _data_line(self, line: bytes, start: int) -> None:
        """A `data` line of the event, its value from `start` (`feed` inlines this)."""
        if self._data:
            self._more(line, start)
        else:
            self._data.append(line[start:])

    def _more(self, line: bytes, start: int) -> None:
        """A further `data` line of the event (its value from `start`), after an LF."""
        rest = self._rest
        rest += b"\n"
        rest += memoryview(line)[start:]

    def _dispatch(self, events: list[SseEvent]) -> None:
        if not self._data:
            self._event = ""
            self._retry = None
            return
        data = self._data[0]
        if self._rest:
            data += self._rest
            self._rest = bytearray()
        events.append(SseEvent(data, self._event, self._last_id, self._retry))
        self._data = []
        self._event = ""
        self._retry = None
