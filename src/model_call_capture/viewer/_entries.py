"""The calls and damaged lines of one rollout, in its order, read through the one line reader.

`Entries` is `records.RecordStream` plus what a viewer needs on top: where each damaged
line is and why it is damaged (the stream only counts them), the gaps each line
records, and reading on from where a previous read of a file stopped, so a growing file
is read once, not once per look.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import msgspec

from .. import _codec
from ..contracts import ModelCallRecord, ObservationGap
from ..errors import UnsupportedFormatError
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..records import build_model_call_record, decode_line_lazily
from ..store import Rollout, RolloutLines

__all__ = ["Call", "DamagedLine", "Entries", "damaged_reason"]

_REASON_MAX = 300  # characters of a decoder's message kept as a damaged line's reason


class DamagedLine(msgspec.Struct, kw_only=True, tag="damaged", tag_field="kind"):
    """A line of the rollout's files that is not a readable call, where it is."""

    line: int
    """Its number in its file as editors and `mcc validate` show it (from 1, blank lines
    counted); read on from a byte offset (`Entries(start=)`), from that offset."""
    reason: str
    """Why it could not be read."""


@dataclass(frozen=True, slots=True)
class Call:
    """A readable line: its record, and what the line says of itself that a record does not keep."""

    record: ModelCallRecord
    gaps: list[ObservationGap]
    """What the capture left out of this line or replaced, and why (the line's `gaps`)."""
    stream: bool | None
    """The response was a Server-Sent Events stream; None when the line does not say."""


class Entries:
    """Iterate for the rollout's `Call`s and `DamagedLine`s in its order (`store.RolloutLines`).

    From byte `start` of its first file (the `size` of an earlier read of that file),
    numbering on from `first_index`; after the iteration, `size` is where the next read
    of the last file starts and `damaged` the number of damaged lines met. Memory: one
    line at a time.
    """

    __slots__ = ("_capture", "_first", "_reasons", "damaged", "newer")

    def __init__(
        self,
        rollout: Rollout,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        start: int = 0,
        first_index: int = 0,
    ):
        self._first = first_index
        self._reasons: dict[int, tuple[int, str]] = {}  # damaged lines met, not yet yielded
        self._capture = RolloutLines(
            rollout,
            strict=False,
            max_line_bytes=max_line_bytes,
            decode=decode_line_lazily,
            start=start,
        )
        self._capture.on_damaged = self._note
        self.damaged = 0
        """Damaged lines met so far."""
        self.newer: str | None = None
        """Why reading stopped at a line of a newer format (it ends the entries), if it did."""

    @property
    def size(self) -> int:
        """Bytes read of the last file (valid once iterated to the end)."""
        return self._capture.size

    def _note(self, index: int, line: int, exc: BaseException | None) -> None:
        self._reasons[index] = (line, damaged_reason(exc))

    def _damaged(self, index: int) -> DamagedLine:
        self.damaged += 1
        line, reason = self._reasons.pop(index, (0, "unreadable"))
        return DamagedLine(line=line, reason=reason)

    def __iter__(self) -> Iterator[Call | DamagedLine]:
        expected = 0
        newer = None
        try:
            with _codec.bulk_decoding():
                for index, line in self._capture:
                    for missing in range(expected, index):
                        yield self._damaged(missing)
                    expected = index + 1
                    record = build_model_call_record(line, self._first + index)
                    gaps = [] if line.gaps is msgspec.UNSET else line.gaps
                    stream = None if line.stream is msgspec.UNSET else line.stream
                    yield Call(record, gaps, stream)
        except UnsupportedFormatError as exc:  # the reader stops at it: named, and the end
            newer = exc
        for _ in range(self._capture.damaged - self.damaged):
            yield self._damaged(expected)
            expected += 1
        if newer is not None:
            self.newer = " ".join(str(newer).split())
            self.damaged += 1
            reason = f"{self.newer}; the lines after it are not read"
            yield DamagedLine(line=newer.line or 0, reason=reason)


def damaged_reason(exc: BaseException | None) -> str:
    """Why a line is damaged (the reader's error; None: over the line cap), in one short line.

    The viewer's damaged lines and the notes of `mcc stats --json` say it the same way.
    """
    if exc is None:
        return "longer than the longest line this reader keeps"
    if isinstance(exc, RecursionError):
        return "nested deeper than the decoder goes"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= _REASON_MAX else text[: _REASON_MAX - 1] + "…"
