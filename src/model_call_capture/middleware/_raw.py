"""A stream's raw SSE text: in memory up to `MEMORY_BYTES`, beyond that in a temporary file.

With `capture_stream_raw: on_failure` (the default) the raw text of a stream must be kept
until the stream ends, because only then is it known whether the stream failed; with
`always` it is kept to the end in any case. `RawText` is that text: a `bytearray` holding
the part in memory, which the call appends each chunk to with `+=` (the same C call as
for a plain `bytearray`, so the chunk path pays nothing for the spill), and the part
before it in an anonymous file. The capture (`_response.ResponseCapture._beyond`, which runs once per block of
bytes, not per chunk) moves the part in memory to the file before it would pass
`MEMORY_BYTES`: one `write` per megabyte of stream, on the event loop thread (a write
into the page cache; docs/performance.md, target 5, has what it costs), and a stream
shorter than that never opens a file. In memory there is at most `MEMORY_BYTES`, or one decoded chunk when a chunk
is bigger (until the next chunk). When the line needs the text (a failed stream, or
`always`) it is read back whole in the writer's worker thread (`read_back`), bounded by
`capture_max_bytes` like everything the call keeps; otherwise the file is closed and its
blocks are freed, never read.

Where the file lives: the system temporary directory (`tempfile.gettempdir()`: `TMPDIR`,
else `/tmp`), never the capture directory. The capture directory may be on NFS, where a
file cannot be anonymous (an unlinked open file becomes a visible `.nfs*` file) and every
megabyte is a round trip; and a spill there would take space from the lines themselves,
so a big stream could make other calls' appends fail on a nearly full disk. A full or
failing temporary directory costs only the raw texts. A temporary directory on tmpfs
keeps the spill in RAM, but as page cache outside the process (counted neither in its
RSS nor in the capture budget, and swappable); an operator who wants it on a disk sets
`TMPDIR`.

Who can read it: nobody else. The file is created with `O_TMPFILE` where the kernel and
filesystem allow it (it never has a name) and otherwise created 0600 with a random name
and unlinked at once (`tempfile.TemporaryFile`); its descriptor is close-on-exec. The
descriptor is closed when the line is built, when the text is dropped, and in any case
when the call gives its budget back; the file object also closes it if it is collected.

Failure never reaches the request: `spill` and `read` raise `OSError` (ENOSPC, EDQUOT,
EIO, EMFILE, ...); the call drops the raw text and records a `raw_text_spill_failed` gap
(`spill_gap`) instead.
"""

from __future__ import annotations

import errno
import io
import logging
import tempfile

from ..contracts import ObservationGap
from ._budget import STREAM_RAW_WEIGHT, BudgetShare, MemoryBudget, budget_gap

__all__ = ["MEMORY_BYTES", "RawText", "read_back", "spill_gap"]

logger = logging.getLogger("model_call_capture.middleware")

MEMORY_BYTES = 1 << 20
"""Raw stream text a call keeps in memory; beyond it the text goes to the `RawText`'s file."""


class RawText(bytearray):
    """One stream's raw text: the bytes of this `bytearray`, after the `spilled` ones in its file."""

    __slots__ = ("_file", "spilled")

    def __init__(self) -> None:
        super().__init__()
        self._file: io.FileIO | None = None
        self.spilled = 0
        """Bytes written to the file so far."""

    def spill(self) -> None:
        """Append the bytes in memory to the file (opened the first time) and empty them.

        Raises `OSError` when the file cannot be opened or written, or was closed.
        """
        file, done = self._file, self.spilled
        if file is None:
            if self.spilled:
                raise OSError(errno.EBADF, "the temporary file was closed")
            file = self._file = tempfile.TemporaryFile(buffering=0)
        with memoryview(self) as view:
            while self.spilled < done + len(view):
                written = file.write(view[self.spilled - done :])
                if not written:  # a regular file takes at least a byte or raises
                    raise OSError(errno.EIO, "the temporary file took no bytes")
                self.spilled += written
        self.clear()

    def read(self) -> bytearray:
        """The whole text: the file's bytes, then those in memory; raises `OSError`."""
        file = self._file
        if self.spilled and file is None:
            raise OSError(errno.EBADF, "the temporary file was closed")
        text = bytearray(self.spilled + len(self))
        with memoryview(text) as view:
            if file is not None and self.spilled:
                file.seek(0)
                done = 0
                while done < self.spilled:
                    got = file.readinto(view[done : self.spilled])
                    if not got:
                        raise OSError(errno.EIO, "the temporary file is shorter than written")
                    done += got
            view[self.spilled :] = self
        return text

    def close(self) -> None:
        """Close the file (its blocks are freed); safe to call again, never raises."""
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError:  # the text is not needed any more: nothing is lost
                logger.debug("could not close a raw-text spill file", exc_info=True)


def read_back(
    raw: RawText, budget: MemoryBudget, share: BudgetShare, gaps: list[ObservationGap]
) -> bytes | bytearray | None:
    """`raw`'s whole text for the line, its file closed after; None (and a gap) if it cannot be.

    A text that never spilled is returned as it is. A spilled one needs its copies in the
    budget again (`share` to `STREAM_RAW_WEIGHT`, see `_budget`).
    """
    if not raw.spilled:
        return raw
    try:
        kept = raw.spilled + len(raw)
        share.reweigh(STREAM_RAW_WEIGHT)
        if not budget.grow(share, kept, 0):
            gaps.append(
                budget_gap(f"response_raw: the raw stream text was dropped after {kept} bytes")
            )
            return None
        try:
            return raw.read()
        except OSError as exc:
            gaps.append(spill_gap(exc, kept))
            return None
    finally:
        raw.close()


def spill_gap(exc: OSError, kept: int) -> ObservationGap:
    """The gap of a raw text dropped after `kept` bytes because its file failed with `exc`."""
    name = errno.errorcode.get(exc.errno or 0, "an I/O error")
    why = exc.strerror or type(exc).__name__  # never str(exc): it may name the file
    return ObservationGap(
        code="raw_text_spill_failed",
        detail=f"response_raw: the raw stream text was dropped after {kept} bytes: "
        f"its temporary file failed ({name}: {why})",
    )
