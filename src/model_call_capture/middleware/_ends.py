"""Whether a stream chunk may complete its dialect's terminal event (`EndMarkerSearch`).

The middleware holds the chunk that completes a stream's terminal event until the call's
line is durable, and sends every other chunk at once, most of them before they are
reassembled (`_call`, `_response`). What lets it send a chunk unread is a marker search: a chunk in
which none of the dialect's terminal markers (`may_end` of `dialects/<name>/`) occurs
cannot complete the terminal event, unless a marker straddles the boundary with the
chunk before (the end of a chunk that ended inside a line is kept, `tail`) or an event
that a chunk with a marker left open is still open (`doubt`).
"""

from __future__ import annotations

from ..contracts import Dialect
from ..dialects import get_dialect

__all__ = ["EndMarkerSearch"]


class EndMarkerSearch:
    """The marker search over one stream, chunk after chunk (SSE text, not encoded bytes)."""

    __slots__ = ("_may_end", "_overlap", "doubt", "tail")

    def __init__(self, dialect: Dialect) -> None:
        module = get_dialect(dialect)
        self._may_end = module.may_end
        self._overlap = module.END_MARKER_LEN
        self.doubt = False
        """True while an open event may hold a terminal marker seen in an earlier chunk."""
        self.tail: bytes | None = None
        """The end of the previous chunk when it ended inside a line (a marker may straddle)."""

    def may_end(self, body: bytes) -> bool:
        """False only when `body` (not empty) cannot complete the terminal event.

        Looks for the markers in `body` and, when the previous chunk ended inside a line,
        across the boundary. After a True, the caller reassembles `body` and, unless that
        completed the terminal event, says so with `fed`.
        """
        if self.doubt or self._may_end(body):
            return True
        tail = self.tail
        if tail is None:  # the usual chunk: it ends a line, nothing straddles
            if body[-1] != 0x0A:
                self.tail = body[-self._overlap :]
            return False
        if self._may_end(tail + body[: self._overlap]):
            return True
        self.tail = None if body[-1] == 0x0A else (tail + body)[-self._overlap :]
        return False

    def fed(self, body: bytes) -> None:
        """`body`, a chunk `may_end` let through, was reassembled and did not end the stream.

        A marker seen in an event that is still open may be completed by a chunk without
        one: the scan stays in doubt until the stream is between events again.
        """
        self.doubt = not body.endswith(b"\n\n")
        self.tail = None
