"""`mcc compact`: a finished rollout's segments rewritten into its shared file.

So that NeMo Gym's own reader, which reads `<rollout_id>.capture.jsonl` only, sees every
call. Per rollout, under the shared file's exclusive `flock` (so writers of the shared
layout wait):

1. A rollout whose segments may still be written is left alone, and said so: one names
   this host and a running pid, or changed less than `SETTLED_SECONDS` ago.
2. Its lines (shared file and segments, in the merge order of `_reading`, damaged and torn
   lines kept as they are, each ending with a newline) are written to a temporary file
   `.<rollout_id>.capture.compact-<pid>-<random>` beside it and fsynced.
3. A mark `compacted.<inode>` listing the segments written is made in the segments
   directory (fsynced): it names the temporary file's inode.
4. The temporary file is renamed over the shared file: the commit. From then on readers
   see that the shared file's inode is the mark's and skip the segments it lists, so a
   line is never read twice nor missed, whenever the process stops.
5. A segment marker becomes the shared marker; the segments, their markers and the mark
   are removed. Lines a writer appended to a segment after it was read (it cannot know
   yet that the file is unlinked) are appended to the shared file.

Running it again finishes a compaction that stopped after its commit, and does nothing to
a rollout without segments: it is idempotent.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ._files import CAPTURE_SUFFIX, INCOMPLETE_SUFFIX, NewFileSettings, open_or_create
from ._reading import SETTLED_SECONDS, MergedLines, read_file_lines, writer_may_be_writing
from ._segments import (
    COMPACTED_PREFIX,
    SEGMENT_INCOMPLETE_SUFFIX,
    SEGMENT_SUFFIX,
    names,
    this_host,
)


class CaptureStore(Protocol):
    """What compaction uses of `_store.CaptureStore` (named here, so that `_store` imports
    this module and not the other way round)."""

    @property
    def root(self) -> Path: ...

    @property
    def file_mode(self) -> int: ...

    def path(self, rollout_id: str) -> Path: ...

    def segments_path(self, rollout_id: str) -> Path: ...


__all__ = ["Compacted", "already_in_shared", "compact"]

_MARK_MAX = 1 << 20  # bytes of a compaction mark read (a name a line)
_MARKER_FLAGS = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Compacted:
    """What `compact` did to one rollout."""

    rollout_id: str
    segments: int
    """Segments written into the shared file (0 when left alone or nothing to do)."""
    lines: int
    """Lines the shared file holds afterwards (damaged ones included)."""
    left_alone: str | None = None
    """Why the rollout was left as it is (a segment may still be written), else None."""


def already_in_shared(directory: Path, shared: Path, marks: list[str]) -> set[str]:
    """The segments a committed compaction already wrote into the shared file: those its
    mark lists when the mark names the shared file's inode; else none."""
    if not marks:
        return set()
    try:
        inode = os.stat(shared, follow_symlinks=False).st_ino
    except OSError:
        return set()
    mark = f"{COMPACTED_PREFIX}{inode}"
    if mark not in marks:
        return set()
    try:
        fd = os.open(directory / mark, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return set()
    try:
        text = os.read(fd, _MARK_MAX).decode("utf-8", "replace")
    finally:
        os.close(fd)
    return {name for name in text.split("\n") if name.endswith(SEGMENT_SUFFIX) and "/" not in name}


def compact(store: CaptureStore, rollout_id: str, creation: NewFileSettings) -> Compacted:
    """Rewrite the rollout's segments into its shared file (see the module docstring)."""
    directory = store.segments_path(rollout_id)
    shared = store.path(rollout_id)
    found = names(directory)
    done = already_in_shared(directory, shared, found.compacted)
    if done or (found.compacted and not found.segments):  # an earlier run stopped after its commit
        _finish(directory, shared, sorted(done), found.incomplete, {}, creation)
        found = names(directory)
    todo = found.segments
    if not todo:
        if found.incomplete or found.compacted:  # markers of writers that wrote nothing
            _finish(directory, shared, [], found.incomplete, {}, creation)
        return Compacted(rollout_id, len(done), _count(shared))
    host = this_host()
    for name in todo:
        if writer_may_be_writing(directory / name, host):
            return Compacted(
                rollout_id,
                0,
                0,
                f"segment {directory / name} may still be written (its writer runs on this "
                f"host, or it changed less than {SETTLED_SECONDS:.0f} s ago)",
            )
    lock = _lock_shared(shared, creation)
    try:
        return _rewrite(store, rollout_id, todo, found.incomplete, creation)
    finally:
        os.close(lock)


def _rewrite(
    store: CaptureStore,
    rollout_id: str,
    todo: list[str],
    markers: list[str],
    creation: NewFileSettings,
) -> Compacted:
    """Steps 2-5 of the module docstring, under the shared file's lock."""
    directory = store.segments_path(rollout_id)
    shared = store.path(rollout_id)
    segments = [directory / name for name in todo]
    held = {name: _open_segment(path) for name, path in zip(todo, segments, strict=True)}
    try:
        before = {name: os.fstat(fd).st_size for name, fd in held.items()}
        files = [shared, *segments]  # the lock made it: it exists
        temp = store.root / f".{rollout_id}.capture.compact-{os.getpid()}-{secrets.token_hex(4)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, store.file_mode)
        try:
            lines = _write_merged(fd, MergedLines(files, locked=True))
            if any(os.fstat(held[name]).st_size != size for name, size in before.items()):
                raise _Busy
            inode = os.fstat(fd).st_ino
        except BaseException:
            os.close(fd)
            temp.unlink(missing_ok=True)
            raise
        os.close(fd)
        _make_mark(directory, f"{COMPACTED_PREFIX}{inode}", todo)
        os.rename(temp, shared)  # the commit
        _sync(store.root)
        late = {n: (held[n], before[n]) for n in todo}
        _finish(directory, shared, todo, markers, late, creation)
        return Compacted(rollout_id, len(todo), lines)
    except _Busy:
        return Compacted(rollout_id, 0, 0, f"a segment of {directory} grew while compacted")
    finally:
        for fd in held.values():
            os.close(fd)


class _Busy(Exception):
    """A segment grew while the rollout was being compacted: leave it for a later run."""


def _write_merged(fd: int, lines: MergedLines) -> int:
    """Write the merged lines to `fd`, each with its newline, then fsync; how many."""
    count = 0
    batch: list[bytes] = []
    size = 0
    for _, raw in lines:
        batch.append(bytes(raw))
        batch.append(b"\n")
        size += len(raw) + 1
        count += 1
        if size >= 1 << 20:
            _write_all(fd, b"".join(batch))
            batch.clear()
            size = 0
    _write_all(fd, b"".join(batch))
    os.fsync(fd)
    return count


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _finish(
    directory: Path,
    shared: Path,
    written: list[str],
    markers: list[str],
    held: dict[str, tuple[int, int]],
    creation: NewFileSettings,
) -> None:
    """Step 5: carry the markers over, remove what was compacted, keep late lines."""
    if markers:
        incomplete = shared.with_name(shared.name[: -len(CAPTURE_SUFFIX)] + INCOMPLETE_SUFFIX)
        os.close(open_or_create(incomplete, _MARKER_FLAGS, creation))
    for name in written:
        (directory / name).unlink(missing_ok=True)
        stem = name[: -len(SEGMENT_SUFFIX)]
        (directory / f"{stem}{SEGMENT_INCOMPLETE_SUFFIX}").unlink(missing_ok=True)
    _append_late_lines(shared, held)
    for mark in names(directory).compacted:
        (directory / mark).unlink(missing_ok=True)
    written_stems = {name[: -len(SEGMENT_SUFFIX)] for name in written}
    for marker in markers:  # markers of segments that were never written to
        if marker[: -len(SEGMENT_INCOMPLETE_SUFFIX)] not in written_stems:
            (directory / marker).unlink(missing_ok=True)
    try:
        os.rmdir(directory)
    except OSError as exc:  # a writer made a new segment meanwhile: it stays
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
            raise
    _sync(creation.root)


def _append_late_lines(shared: Path, held: dict[str, tuple[int, int]]) -> None:
    """Lines written to a segment after it was read (its writer saw it linked): appended."""
    late = []
    for fd, size in held.values():
        grown = os.fstat(fd).st_size - size
        if grown > 0:
            data = os.pread(fd, grown, size)
            end = data.rfind(b"\n") + 1  # whole lines only: a torn tail was never acknowledged
            late.append(data[:end])
    if any(late):
        out = os.open(shared, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            _write_all(out, b"".join(late))
            os.fsync(out)
        finally:
            os.close(out)


def _lock_shared(shared: Path, creation: NewFileSettings) -> int:
    """The shared file's exclusive lock (the file created when missing): its descriptor."""
    fd = open_or_create(shared, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, creation)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
            os.close(fd)
            raise
    return fd


def _open_segment(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)


def _make_mark(directory: Path, name: str, segments: list[str]) -> None:
    fd = os.open(
        directory / name,
        os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
    )
    try:
        _write_all(fd, "".join(f"{segment}\n" for segment in segments).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    _sync(directory)


def _sync(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _count(shared: Path) -> int:
    """The shared file's non-blank lines."""
    return sum(1 for _ in read_file_lines(shared))
