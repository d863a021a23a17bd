"""Reading a capture file's complete lines while writers append to it.

The store's part of the one streaming reader (`model_call_capture.reader`): the bytes of
a regular file in bounded chunks; `reader.RawLines` cuts them into lines.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from ..reader import DEFAULT_MAX_LINE_BYTES, RawLines
from ._files import open_for_reading
from ._locking import flock

__all__ = ["read_chunks", "read_file_lines"]

_READ_CHUNK = 1 << 20


def read_chunks(path: Path, *, start: int = 0, lock: bool = True) -> Iterator[bytes]:
    """The bytes of the capture file at `path` from offset `start`, in chunks; nothing when
    it is missing (or not longer than `start`).

    The shared lock is held only to learn the size: every writer holds the exclusive lock
    for its whole write, so the bytes up to that size are complete lines (or lines torn
    by a crash, which no later write completes). Bytes appended later are not read.
    Without `lock`, for a caller that holds the exclusive lock itself (`mcc compact`).
    """
    fd = open_for_reading(path)
    if fd is None:
        return
    try:
        if lock:
            flock(fd, fcntl.LOCK_SH)
        try:
            remaining = os.fstat(fd).st_size - start
        finally:
            if lock:
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
