"""The group-commit writer: durable appends, batched per file, one write and one fsync a batch.

While one thread of this process writes and fsyncs a file, the lines other threads append
to it wait in one batch; when it is done, the batch's first thread (its leader) writes the
whole batch (one write under one lock) and fsyncs once for all of them. Each append
returns only after an `fsync` that started after its line was written; a line is written
once, never retried.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from collections.abc import Callable, Sequence

from .. import _codec
from ..contracts import CaptureLine
from ._files import NewFileSettings, check_opened, open_unchecked
from ._locking import NO_LOCKS, flock, try_exclusive

__all__ = [
    "Write",
    "append",
    "forget",
    "line_bytes",
    "line_errors",
    "write_buffers",
    "write_locked",
]

_Buffer = bytes | bytearray
Write = Callable[[str, Sequence[_Buffer], NewFileSettings], "list[OSError | None] | None"]
"""Writes a batch of lines to the file `path` names, durably: None when all are, else one
error or None per line (`_write_durably` for a shared file, `_segments.write` for a segment)."""
_IOV_MAX = 1024  # Linux's limit on the buffers of one writev
_CACHE_MAX = 4096  # bound of `_ends`


def _held_lock() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


class _Batch:
    """Lines appended to one file while another thread was writing it: written together.

    The thread of the first line leads: once the previous leader is done, it writes every
    line of the batch with one write under one lock and fsyncs once; the others wait.
    """

    __slots__ = ("done", "errors", "lines", "turn")

    def __init__(self) -> None:
        self.lines: list[_Buffer] = []
        self.errors: list[OSError | None] | None = None
        """Per line, when something failed: None for a durable line, else its error."""
        self.turn = _held_lock()
        """Released by the previous leader: this batch's leader may write."""
        self.done = _held_lock()
        """Released by this batch's leader once its lines are durable (or failed)."""


# The files a thread of this process is writing, each with the batch that new lines join
# while it is busy (None: no line waits yet). Idle files are not in it, so it is bounded by
# the files being written. One lock for all: a lone writer takes it once to start and once
# to finish, and allocates nothing for the batching it did not need.
_busy: dict[str, _Batch | None] = {}
_busy_lock = threading.Lock()

# Where this process's last complete write to a file ended: (device, inode, size). While
# the file still ends there, nobody wrote after us (capture files only grow; `clear`
# unlinks), so its last byte is our newline and reading it back can be skipped.
_ends: dict[str, tuple[int, int, int]] = {}


def line_bytes(line: CaptureLine | bytes) -> _Buffer:
    """The line to write, newline included (the codec's own buffer: no copy of a big line)."""
    if isinstance(line, CaptureLine):
        return _codec.encode_line(line)
    data = bytes(line)
    body = len(data) - 1 if data.endswith(b"\n") else len(data)
    if data.find(b"\n", 0, body) != -1 or data.isspace() or not data:
        raise ValueError("a capture line must be one non-empty line of JSON")
    return data if body < len(data) else data + b"\n"


def forget(path: str) -> None:
    """Drop what this process knows of the file at `path` (it is being unlinked)."""
    _ends.pop(path, None)  # a new file may reuse the inode


def append(path: str, data: _Buffer, creation: NewFileSettings, write: Write | None = None) -> None:
    """Append `data` (one line, newline included) to `path` durably, in a batch if others write.

    A missing file is created as `creation` says (and its directory with it). Raises the `OSError` of the
    open, lock, write or fsync that failed this line. `write` writes a batch (the shared
    file's `_write_durably` by default); the batching is the same whatever it is.
    """
    if write is None:
        write = _write_durably
    with _busy_lock:
        if path in _busy:
            batch = _busy[path]
            if batch is None:
                batch = _busy[path] = _Batch()
            index = len(batch.lines)
            batch.lines.append(data)
        else:
            _busy[path] = None
            batch = None
    if batch is None:  # nobody else is writing this file: write this line now
        try:
            errors = write(path, (data,), creation)
        finally:
            _hand_over(path)
        if errors is not None and errors[0] is not None:
            raise errors[0]
        return
    if index == 0:
        _lead(path, batch, creation, write)
    else:
        batch.done.acquire()
        batch.done.release()
    error = batch.errors[index] if batch.errors is not None else None
    if error is not None:
        raise error if index == 0 else _copy_error(error)


def _hand_over(path: str) -> None:
    """A leader is done: start the waiting batch's leader, or mark the file idle."""
    with _busy_lock:
        after = _busy.pop(path, None)
        if after is not None:
            _busy[path] = None  # still busy: the detached batch's leader writes next
    if after is not None:
        after.turn.release()


def _lead(path: str, batch: _Batch, creation: NewFileSettings, write: Write) -> None:
    """Write and fsync a batch once the previous leader is done (it detached the batch)."""
    try:
        batch.turn.acquire()
        errors = write(path, batch.lines, creation)
    except BaseException as exc:  # not an OSError (interrupted): release the others all the same
        _hand_over(path)  # first: a batch still waiting is detached, so no line joins it now
        batch.errors = [OSError(errno.EIO, f"capture write interrupted: {exc!r}")] * len(
            batch.lines
        )
        batch.done.release()
        raise
    _hand_over(path)
    batch.errors = errors
    batch.done.release()


def write_locked(
    path: str, lines: Sequence[_Buffer], creation: NewFileSettings
) -> list[OSError | None] | None:
    """`_write_durably`, failing every line (nothing written) when the filesystem refuses
    `flock`: what `capture_layout: auto` writes a shared file with."""
    return _write_durably(path, lines, creation, strict=True)


def _write_durably(
    path: str, lines: Sequence[_Buffer], creation: NewFileSettings, *, strict: bool = False
) -> list[OSError | None] | None:
    """Write `lines` with one write under the file's lock, then fsync once.

    None when every line is durable; else one entry per line: None for a durable
    line, the error of a line that is not (a line cut by a failed write is not
    retried; the whole lines before it are still fsynced).
    """
    try:
        fd, st = _open_locked(path, creation, strict=strict)
    except OSError as exc:
        return [exc] * len(lines)
    try:
        buffers = lines
        try:
            try:
                # Under the lock no writer is mid-write, so a last byte that is not a
                # newline is a line torn by a crashed writer.
                if (
                    st.st_size
                    and _ends.get(path) != (st.st_dev, st.st_ino, st.st_size)
                    and os.pread(fd, 1, st.st_size - 1) != b"\n"
                ):
                    buffers = [b"\n", *lines]
                written, write_error = write_buffers(fd, buffers)
            finally:
                try:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                except OSError:  # a filesystem without locks, or a real error
                    flock(fd, fcntl.LOCK_UN)
        except OSError as exc:
            return [exc] * len(lines)
        errors: list[OSError | None] | None = None
        if write_error is None:
            if len(_ends) >= _CACHE_MAX:
                _ends.clear()
            _ends[path] = (st.st_dev, st.st_ino, st.st_size + written)
        else:
            _ends.pop(path, None)
            errors = line_errors(lines, len(buffers) - len(lines), written, write_error)
            if errors[0] is not None:
                return errors  # no whole line written: nothing to fsync
        try:
            os.fsync(fd)
        except OSError as exc:
            # After a failed fsync the kernel may drop the dirty pages and report
            # success next time: every line written here must be reported as lost.
            _ends.pop(path, None)
            failed = OSError(exc.errno, f"fsync failed: {exc.strerror}")
            failed.__cause__ = exc
            return [failed if error is None else error for error in errors or [None] * len(lines)]
        return errors
    finally:
        os.close(fd)


_OPEN_FLAGS = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_LOCK_NOW = fcntl.LOCK_EX | fcntl.LOCK_NB


def _open_locked(
    path: str, creation: NewFileSettings, *, strict: bool = False
) -> tuple[int, os.stat_result]:
    """Open the capture file for appending and take its exclusive lock: (fd, its stat).

    A filesystem that refuses `flock` raises its `OSError` when `strict`, else the file is
    written without the lock (`_locking.flock`).

    What is not a regular file of ours is refused (`check_opened`) before we wait for its
    lock: a file planted by another user, who holds its lock, would otherwise hold this
    writer forever. A lock taken at once (the usual case) is checked with one `fstat`
    taken under it, which also gives the size and the links below.

    `clear()` unlinks under the same lock, so a file found unlinked once the lock is
    held was cleared after we opened it: open the fresh one instead of writing a
    line nobody will read.
    """
    while True:
        try:  # `open_unchecked`'s first step, inlined: this runs once per batch
            fd = os.open(path, _OPEN_FLAGS)
        except OSError:  # missing (created there) or refused (explained there)
            fd = open_unchecked(path, _OPEN_FLAGS, creation)
        try:
            try:  # `try_exclusive`, inlined
                fcntl.flock(fd, _LOCK_NOW)
                free = True
            except BlockingIOError:
                free = False
            except OSError as exc:  # a filesystem without locks, or a real error
                check_opened(fd, path, creation)  # what is not ours is refused as such first
                if strict and exc.errno in NO_LOCKS:
                    raise  # the store writes segments instead (`capture_layout: auto`)
                free = try_exclusive(fd)
            if free:
                st = check_opened(fd, path, creation)
            else:
                check_opened(fd, path, creation)
                flock(fd, fcntl.LOCK_EX)
                st = os.fstat(fd)
            if st.st_nlink > 0:
                return fd, st
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def line_errors(
    lines: Sequence[_Buffer], prefix: int, written: int, error: OSError
) -> list[OSError | None]:
    """Per line of a write that `error` stopped after `written` bytes: None for a line
    written whole, else `error`. `prefix` bytes (the newline that ends a torn line) came first."""
    end = prefix
    errors: list[OSError | None] = []
    for line in lines:
        end += len(line)
        errors.append(None if end <= written else error)
    return errors


def write_buffers(fd: int, buffers: Sequence[_Buffer]) -> tuple[int, OSError | None]:
    """Write `buffers` in order, one `writev` for all; (bytes written, the error that stopped it)."""
    if len(buffers) == 1:  # one writer alone, the usual case
        try:
            n = os.write(fd, buffers[0])
        except OSError as exc:
            return 0, exc
        return (n, None) if n == len(buffers[0]) else _write_rest(fd, buffers[0], n, 0)
    written = 0
    for start in range(0, len(buffers), _IOV_MAX):
        part = buffers if len(buffers) <= _IOV_MAX else buffers[start : start + _IOV_MAX]
        try:
            n = os.writev(fd, part)
        except OSError as exc:
            return written, exc
        if n < sum(map(len, part)):  # short (the disk filled up): write the rest, or get its error
            written, error = _write_rest(fd, b"".join(part), n, written)
            if error is not None:
                return written, error
        else:
            written += n
    return written, None


def _write_rest(fd: int, data: _Buffer, n: int, before: int) -> tuple[int, OSError | None]:
    """After a short write of `n` bytes of `data`: write the rest, or get the error that
    stops it; (bytes written in all, counting `before`, the error)."""
    written = before + n
    rest = memoryview(data)[n:]
    try:
        while rest:
            n = os.write(fd, rest)
            if n <= 0:  # pragma: no cover - a regular file never returns 0 for a non-empty write
                raise OSError(errno.EIO, "write returned 0")
            written += n
            rest = rest[n:]
    except OSError as exc:
        return written, exc
    return written, None


def _copy_error(error: OSError) -> OSError:
    """A fresh exception for another thread of the batch (one object is not raised twice)."""
    copy = OSError(error.errno, error.strerror, error.filename)
    copy.__cause__ = error
    return copy
