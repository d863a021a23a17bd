"""Reading a capture file's complete lines while writers append to it."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from ._files import open_for_reading
from ._locking import flock

__all__ = ["read_chunks"]

_READ_CHUNK = 1 << 20


def read_chunks(path: Path) -> Iterator[bytes]:
    """The bytes of the capture file at `path`, in chunks; nothing when it is missing.

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
            remaining = os.fstat(fd).st_size
        finally:
            flock(fd, fcntl.LOCK_UN)
        while remaining > 0:
            chunk = os.read(fd, min(_READ_CHUNK, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            yield chunk
    finally:
        os.close(fd)
