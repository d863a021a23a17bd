"""Reading a rollout's complete lines while writers append to it.

The store's part of the one streaming reader (`model_call_capture.reader`): the bytes of
a regular file in bounded chunks (`read_file_lines`: `reader.RawLines` cuts them into
numbered lines), and the lines of every file of a rollout decoded in order
(`RolloutLines`: `reader.CaptureLines` over one file, or over `MergedLines`).

A rollout of several files (its shared file and its segments, `_segments`) is read merged,
in one deterministic order, the order every reader gives and `call_index` numbers:

1. The files are ranked: the shared file `<rollout_id>.capture.jsonl` first, then the
   segments by name (byte order).
2. Each line's key is its `completed_at`; a line without one (damaged, or null) takes the
   key of the line before it in its file (the file's first lines: minus infinity).
3. The merge repeatedly takes, of the next unread line of every file, the one with the
   smallest (key, file rank). So each file's lines keep their order (a writer's durable
   append order), and lines of different files are interleaved by the time their calls
   completed (hosts' clocks permitting), ties going to the lower-ranked file.

Lines are numbered as NeMo Gym numbers one file: from 0, blank lines skipped, damaged
lines counted. A rollout of one shared file is read as that file, unchanged.

A segment being written is read consistently: only bytes up to its size when opened are
read, and a last line without its newline is left out while its writer may still be
writing it (a line is seen whole or not at all). It is a torn line, counted as damaged,
once its writer cannot be: the segment names this host and a pid that no longer runs, or
the segment has not changed for `SETTLED_SECONDS`.
"""

from __future__ import annotations

import fcntl
import functools
import heapq
import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import msgspec

from ..contracts import CaptureLine
from ..reader import (
    DEFAULT_MAX_LINE_BYTES,
    CaptureLines,
    LineDecoder,
    OversizedLine,
    RawLines,
    RunDecoder,
    decode_capture_line,
)
from ._files import open_for_reading
from ._locking import flock
from ._rollouts import Rollout
from ._segments import is_segment, this_host

__all__ = [
    "SETTLED_SECONDS",
    "MergedLines",
    "RolloutLines",
    "read_chunks",
    "read_file_lines",
    "writer_may_be_writing",
]

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
    lock: bool = True,
) -> RawLines:
    """The numbered lines of the capture file at `path` (any name), read as `read_chunks` reads.

    From byte `start` (the `size` a previous read of the file ended at, to read only what
    was appended since): lines are then numbered from 0 again. A segment's last line
    without its newline is left out while its writer may still be writing it (module
    docstring).

    The file is opened when the iteration starts: `NotARegularFileError` (an `OSError`)
    for a FIFO or a directory, `OSError` when it cannot be read; nothing when it is missing.
    """
    hold = (lambda: writer_may_be_writing(path, this_host())) if is_segment(path) else None
    return RawLines(
        read_chunks(path, start=start, lock=lock),
        numbering=numbering,
        max_line_bytes=max_line_bytes,
        hold_tail=hold,
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
    While iterating, `file` is the file of the line just yielded and `position` that line's
    number in its own file (NeMo Gym's numbering: what an incremental export resumes from).
    """

    __slots__ = (
        "_decode",
        "_decode_run",
        "_max_line_bytes",
        "_start",
        "count",
        "damaged",
        "damaged_files",
        "file",
        "offset",
        "on_damaged",
        "position",
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
        self.damaged_files: dict[Path, int] = {}
        """Damaged lines skipped so far, by the file they are in."""
        self.offset = 0
        """The index of the current file's first line."""
        self.file: Path | None = None
        """The file being read (the last one read, once done); None before the first."""
        self.position = 0
        """The number of the line last yielded in its own file."""
        self.on_damaged: Callable[[int, int, BaseException | None], None] | None = None
        """Told of each damaged line skipped (`reader.CaptureLines.on_damaged`), its index
        numbered on across files as a good line's."""
        self.count = 0
        """Lines of every file, blank ones included (set when the iteration ends)."""
        self.size = 0
        """Bytes read of the last file (set when the iteration ends)."""

    def __iter__(self) -> Iterator[tuple[int, CaptureLine]]:
        files = self.rollout.files
        if len(files) > 1:
            yield from self._merged()
            return
        start = self._start
        for path in files:
            self.file = path
            raw = read_file_lines(path, max_line_bytes=self._max_line_bytes, start=start)
            start = 0
            lines = CaptureLines(
                raw, path, strict=self.strict, decode=self._decode, decode_run=self._decode_run
            )
            offset = self.offset
            if self.on_damaged is not None:
                lines.on_damaged = functools.partial(_told_at, self.on_damaged, offset)
            try:
                for index, line in lines:
                    self.position = index
                    yield offset + index, line
            finally:
                self._add_damaged(lines)
            self.offset += raw.numbered
            self.count += raw.count
            self.size = raw.size

    def _merged(self) -> Iterator[tuple[int, CaptureLine]]:
        """A rollout of several files, or of segments: read merged (module docstring)."""
        if self._start:
            raise ValueError(f"rollout {self.rollout.id}: a merged rollout is read from its start")
        files = list(self.rollout.files)
        merged = MergedLines(files, max_line_bytes=self._max_line_bytes)
        lines = CaptureLines(merged, files[0], strict=self.strict, decode=self._decode)
        told = self.on_damaged
        if told is not None:  # `file` names the damaged line's file while it is told

            def on_damaged(index: int, line: int, exc: BaseException | None) -> None:
                self.file = merged.source
                told(index, line, exc)

            lines.on_damaged = on_damaged
        try:
            for item in lines:
                self.file = merged.source
                self.position = merged.position
                yield item
        finally:
            self._add_damaged(lines)
            self.file = merged.source
        self.count = merged.count

    def _add_damaged(self, lines: CaptureLines) -> None:
        self.damaged += lines.damaged
        for path, count in lines.damaged_files.items():
            self.damaged_files[path] = self.damaged_files.get(path, 0) + count


def _told_at(
    told: Callable[[int, int, BaseException | None], None],
    offset: int,
    index: int,
    line: int,
    exc: BaseException | None,
) -> None:
    """`told` of a damaged line of a rollout's later file: its index numbered on from `offset`."""
    told(offset + index, line, exc)


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

    `files` are ranked (shared file first, then segments by name); each is read as
    `read_file_lines` reads it. While iterating, `source` is the file of the line just
    yielded and `position` its number in that file. Once iterated, `count` holds the
    lines of all files (blank ones included) and `unterminated` whether a torn last line
    of a file was yielded. `locked`: the caller holds the shared file's exclusive lock
    (`mcc compact`), so it is read without taking one.
    """

    __slots__ = (
        "_locked",
        "count",
        "files",
        "line",
        "max_line_bytes",
        "position",
        "source",
        "unterminated",
    )

    def __init__(
        self,
        files: list[Path],
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        locked: bool = False,
    ) -> None:
        self.files = files
        """The rollout's files, in rank order."""
        self.max_line_bytes = max_line_bytes
        """Lines longer than this are yielded as `OversizedLine`."""
        self.source: Path = files[0]
        """The file of the line last yielded."""
        self.position = 0
        """The number of the line last yielded in its own file (NeMo Gym's numbering)."""
        self.line = 0
        """Its number in its file as editors show it (from 1, blank lines counted)."""
        self.count = 0
        """Lines of every file, blank ones included (set when the iteration ends)."""
        self.unterminated = False
        """True once a file's last line was yielded without its newline (a torn write)."""
        self._locked = locked

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        files = [self._keyed(rank, path) for rank, path in enumerate(self.files)]
        number = 0
        for _key, rank, position, line, raw in heapq.merge(*files):
            self.source = self.files[rank]
            self.position = position
            self.line = line
            yield number, raw
            number += 1

    def _keyed(self, rank: int, path: Path) -> Iterator[tuple[float, int, int, int, bytes]]:
        """The lines of one file with their merge keys (see the module docstring)."""
        lines = read_file_lines(path, max_line_bytes=self.max_line_bytes, lock=not self._locked)
        key = -math.inf
        for position, raw in lines:
            if type(raw) is not OversizedLine:
                try:
                    when = _when.decode(raw).completed_at
                except _DAMAGED:
                    when = None
                if when is not None and math.isfinite(when):
                    key = when
            # (position is unique in its file: the tuples never compare past it)
            yield key, rank, position, lines.line_number(position), raw
        self.unterminated = self.unterminated or lines.unterminated
        self.count += lines.count
