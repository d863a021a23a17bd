"""A rollout written in several files, read as one sequence of numbered lines.

A rollout's files are its shared capture file and its segments (`_segments`). They are
merged in one deterministic order, the order every reader gives and `call_index` numbers:

1. The files are ranked: the shared file `<rollout_id>.capture.jsonl` first, then the
   segments by name (byte order).
2. Each line's key is its `completed_at`; a line without one (damaged, or null) takes the
   key of the line before it in its file (the file's first lines: minus infinity).
3. The merge repeatedly takes, of the next unread line of every file, the one with the
   smallest (key, file rank). So each file's lines keep their order (a writer's durable
   append order), and lines of different files are interleaved by the time their calls
   completed (hosts' clocks permitting), ties going to the lower-ranked file.

Lines are numbered as NeMo Gym numbers one file: from 0, blank lines skipped, damaged
lines counted. A rollout of one file is read as that file, unchanged.

A segment being written is read consistently: only bytes up to its size when opened are
read, and a last line without its newline is left out while its writer may still be
writing it (a line is seen whole or not at all). It is a torn line, counted as damaged,
once its writer cannot be: the segment names this host and a pid that no longer runs, or
the segment has not changed for `SETTLED_SECONDS`.
"""

from __future__ import annotations

import heapq
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

from ..reader import DEFAULT_MAX_LINE_BYTES, OversizedLine, RawLines
from ._reading import read_chunks

__all__ = ["SETTLED_SECONDS", "MergedLines", "writer_may_be_writing"]

SETTLED_SECONDS = 60.0
"""How long a segment's unterminated last line must be unchanged to count as torn."""


class _When(msgspec.Struct):
    completed_at: float | None = None


_when = msgspec.json.Decoder(_When)
_DAMAGED = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


def writer_may_be_writing(path: Path, host: str, now: float | None = None) -> bool:
    """Whether the writer of the segment at `path` may still be writing its last line:
    False when the name says this host (`host`) and a pid that no longer runs, or when the
    file has not changed for `SETTLED_SECONDS`."""
    parts = path.name.split(".")
    if len(parts) == 4 and parts[0] == host and parts[1].isdigit():
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            return False
        except (PermissionError, OverflowError, ValueError):
            pass  # another user's process: alive; a pid out of range: not ours to say
    try:
        changed = os.stat(path, follow_symlinks=False).st_mtime
    except OSError:
        return False
    return (time.time() if now is None else now) - changed < SETTLED_SECONDS


class MergedLines:
    """The non-blank lines of a rollout's files in merge order: iterate for `(number, raw)`.

    `files` are ranked (shared file first, then segments by name); `segments` holds those
    that are segments (their unterminated last line may be left out, see the module
    docstring). While iterating, `source` is the file of the line just yielded and
    `position` its number in that file. Once
    iterated, `count` holds the lines of all files (blank ones included) and
    `unterminated` whether a torn last line of a file was yielded. `locked`: the caller
    holds the shared file's exclusive lock (`mcc compact`), so it is read without taking one.
    """

    __slots__ = (
        "_host",
        "_locked",
        "count",
        "files",
        "max_line_bytes",
        "position",
        "segments",
        "source",
        "unterminated",
    )

    def __init__(
        self,
        files: list[Path],
        segments: frozenset[Path],
        *,
        host: str,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        locked: bool = False,
    ) -> None:
        self.files = files
        """The rollout's files, in rank order."""
        self.segments = segments
        """Those of `files` that are segments."""
        self.max_line_bytes = max_line_bytes
        """Lines longer than this are yielded as `OversizedLine`."""
        self.source: Path = files[0]
        """The file of the line last yielded."""
        self.position = 0
        """The number of the line last yielded in its own file (NeMo Gym's numbering)."""
        self.count = 0
        """Lines of every file, blank ones included (set when the iteration ends)."""
        self.unterminated = False
        """True once a file's last line was yielded without its newline (a torn write)."""
        self._host = host
        self._locked = locked

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        files = [self._keyed(rank, path) for rank, path in enumerate(self.files)]
        number = 0
        for _key, rank, position, raw in heapq.merge(*files):
            self.source = self.files[rank]
            self.position = position
            yield number, raw
            number += 1

    def _keyed(self, rank: int, path: Path) -> Iterator[tuple[float, int, int, bytes]]:
        """The lines of one file with their merge keys (see the module docstring)."""
        chunks = read_chunks(path, lock=not self._locked)
        lines = RawLines(chunks, max_line_bytes=self.max_line_bytes)
        key = -math.inf
        for position, raw in lines:
            if lines.unterminated:
                if path in self.segments and writer_may_be_writing(path, self._host):
                    break  # being written: not seen until it is whole
                self.unterminated = True
            if type(raw) is not OversizedLine:
                try:
                    when = _when.decode(raw).completed_at
                except _DAMAGED:
                    when = None
                if when is not None and math.isfinite(when):
                    key = when
            yield key, rank, position, raw
        self.count += lines.count
