"""Reading a rollout's complete lines while writers append to it.

The store's part of the one streaming reader (`model_call_capture.reader`): the bytes of
a regular file in bounded chunks (`read_file_lines`: `reader.RawLines` cuts them into
numbered lines), and the lines of every file of a rollout decoded in order
(`RolloutLines`: `reader.CaptureLines` per file, indexes running on across files).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from ..contracts import CaptureLine
from ..reader import (
    DEFAULT_MAX_LINE_BYTES,
    CaptureLines,
    LineDecoder,
    RawLines,
    RunDecoder,
    decode_capture_line,
)
from ._files import open_for_reading
from ._locking import flock
from ._rollouts import Rollout

__all__ = ["RolloutLines", "read_chunks", "read_file_lines"]

_READ_CHUNK = 1 << 20


def read_chunks(path: Path, *, start: int = 0) -> Iterator[bytes]:
    """The bytes of the capture file at `path` from offset `start`, in chunks; nothing when
    it is missing (or not longer than `start`).

    The shared lock is held only to learn the size: every writer holds the exclusive lock
    for its whole write, so the bytes up to that size are complete lines (or lines torn
    by a crash, which no later write completes). Bytes appended later are not read.
    """
    fd = open_for_reading(path)
    if fd is None:
        return
    try:
        flock(fd, fcntl.LOCK_SH)
        try:
            remaining = os.fstat(fd).st_size - start
        finally:
            flock(fd, fcntl.LOCK_UN)
        if start and remaining > 0:
            os.lseek(fd, start, os.SEEK_SET)
        while remaining > 0:
            chunk = os.read(fd, min(_READ_CHUNK, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            yield chunk
    finally:
        os.close(fd)


def read_file_lines(
    path: Path,
    *,
    numbering: Literal["gym", "editor"] = "gym",
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    start: int = 0,
) -> RawLines:
    """The numbered lines of the capture file at `path` (any name), read as `read_chunks` reads.

    From byte `start` (the `size` a previous read of the file ended at, to read only what
    was appended since): lines are then numbered from 0 again.

    The file is opened when the iteration starts: `NotARegularFileError` (an `OSError`)
    for a FIFO or a directory, `OSError` when it cannot be read; nothing when it is missing.
    """
    return RawLines(
        read_chunks(path, start=start), numbering=numbering, max_line_bytes=max_line_bytes
    )


class RolloutLines:
    """The lines of every file of a rollout, decoded in order: iterate for `(index, CaptureLine)`.

    Each file is read as `read_file_lines` reads it and decoded as `reader.CaptureLines`
    decodes it (`strict`, `decode`, `decode_run` as there): a damaged line is counted in
    `damaged` and skipped, or raised naming its file and its line in that file. Indexes
    run on from one file to the next (the second file's first line follows the first
    file's last), so with one file they are that file's. `start` is the byte of the first
    file to read from (the `size` of an earlier read of a file that grew): its lines are
    then numbered from 0.

    Once iterated: `count` is the number of lines (blank ones included) and `size` the
    bytes read of the last file (where a reader of what is appended to it goes on).
    While iterating, `file` is the file being read and `offset` the index of its first line.
    """

    __slots__ = (
        "_decode",
        "_decode_run",
        "_max_line_bytes",
        "_start",
        "count",
        "damaged",
        "file",
        "offset",
        "rollout",
        "size",
        "strict",
    )

    def __init__(
        self,
        rollout: Rollout,
        *,
        strict: bool,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        decode: LineDecoder = decode_capture_line,
        decode_run: RunDecoder | None = None,
        start: int = 0,
    ) -> None:
        self.rollout = rollout
        """The rollout read."""
        self.strict = strict
        """Raise on the first damaged line instead of counting it."""
        self._max_line_bytes = max_line_bytes
        self._decode = decode
        self._decode_run = decode_run
        self._start = start
        self.damaged = 0
        """Damaged lines skipped so far, in every file."""
        self.offset = 0
        """The index of the current file's first line."""
        self.file: Path | None = None
        """The file being read (the last one read, once done); None before the first."""
        self.count = 0
        """Lines of every file, blank ones included (set when the iteration ends)."""
        self.size = 0
        """Bytes read of the last file (set when the iteration ends)."""

    def __iter__(self) -> Iterator[tuple[int, CaptureLine]]:
        start = self._start
        for path in self.rollout.files:
            self.file = path
            raw = read_file_lines(path, max_line_bytes=self._max_line_bytes, start=start)
            start = 0
            lines = CaptureLines(
                raw, path, strict=self.strict, decode=self._decode, decode_run=self._decode_run
            )
            offset = self.offset
            try:
                if offset:
                    for index, line in lines:
                        yield offset + index, line
                else:
                    yield from lines
            finally:
                self.damaged += lines.damaged
            self.offset += raw.numbered
            self.count += raw.count
            self.size = raw.size
