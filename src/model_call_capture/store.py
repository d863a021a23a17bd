"""CaptureStore: durable, append-only, per-rollout JSONL capture files.

Layout of a capture directory (`root`):

- `<rollout_id>.capture.jsonl` — one `CaptureLine` per line, append-only;
- `<rollout_id>.capture.incomplete` — an empty marker: a capture for this rollout failed.

Writing. Lines are written with one `os.write` (`os.writev` for several) to a file opened
with `O_APPEND`, under an exclusive `flock` on the file, then one `fsync`. The lock
serializes writers of every process (and of every host on a shared filesystem that
supports `flock`), so lines never interleave. Group commit: while one thread of this
process writes and fsyncs a file, the lines other threads append to it wait in one batch;
when it is done, the batch's first thread writes the whole batch (one write under one
lock) and fsyncs once for all of them. Each call returns only after an `fsync` that
started after its line was written, so a returned append is on disk; a line is written
once, never retried. A crashed writer can leave a torn last line without its newline; the
next append sees the missing newline under the lock and starts on a fresh line, so the
torn line stays one damaged line and every later line stays readable.

Reading. Readers take a shared `flock` only to learn the file's size: every writer holds
the exclusive lock for its whole write, so the bytes up to that size are complete lines
(or lines torn by a crash, which no later write completes). Lines are numbered as NeMo Gym
numbers them: blank and whitespace-only lines are skipped and not counted; every other
line takes the next index, whether it is valid or damaged.

Without `flock` (some NFS and FUSE mounts refuse it with ENOLCK/EOPNOTSUPP) the store
warns once and appends without the lock: one `O_APPEND` write of a whole line still does
not interleave on one host; only writers on several hosts lose their serialization.

Security. Rollout ids are validated before they touch a path, and files are opened with
`O_NOFOLLOW`, so a symlink placed in the directory cannot redirect a read or a write.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from . import _codec
from .contracts import CAPTURE_LINE_FORMAT, CaptureLine

__all__ = [
    "CAPTURE_SUFFIX",
    "INCOMPLETE_SUFFIX",
    "MAX_ROLLOUT_ID_LENGTH",
    "CaptureStore",
    "DamagedLineError",
    "InvalidRolloutIdError",
    "UnsupportedFormatError",
    "check_format",
    "decode_capture_line",
    "validate_rollout_id",
]

CAPTURE_SUFFIX = ".capture.jsonl"
"""File name suffix of a rollout's capture file."""
INCOMPLETE_SUFFIX = ".capture.incomplete"
"""File name suffix of a rollout's incomplete marker."""
MAX_ROLLOUT_ID_LENGTH = 200
"""Longest accepted rollout id; keeps `<id>.capture.incomplete` under NAME_MAX (255)."""

# ASCII only (the class lists ASCII ranges explicitly) and \Z, not $: `$` would accept a
# trailing newline.
_ROLLOUT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_ROLLOUT_ID_RULE = (
    f"a rollout id must match ^[A-Za-z0-9][A-Za-z0-9._-]*$ and be at most "
    f"{MAX_ROLLOUT_ID_LENGTH} characters"
)
_FORMAT_NAME = CAPTURE_LINE_FORMAT.split("/")[0]
_SUPPORTED_MAJOR = int(CAPTURE_LINE_FORMAT.split("/")[1])
_READ_CHUNK = 1 << 20

_line_decoder = msgspec.json.Decoder(CaptureLine)
logger = logging.getLogger(__name__)


class InvalidRolloutIdError(ValueError):
    """A rollout id that could name a path outside the capture directory, or is malformed."""


class UnsupportedFormatError(ValueError):
    """A capture line written by a newer major version of the format than this reader knows."""

    def __init__(
        self, message: str, *, path: Path | None = None, line_index: int | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        """The capture file, when known."""
        self.line_index = line_index
        """The 0-based index of the line (blank lines not counted), when known."""


class DamagedLineError(ValueError):
    """A capture line that is not a valid `CaptureLine` (bad JSON, wrong types, torn write)."""

    def __init__(self, message: str, *, path: Path, line_index: int) -> None:
        super().__init__(message)
        self.path = path
        """The capture file."""
        self.line_index = line_index
        """The 0-based index of the damaged line (blank lines not counted)."""


def validate_rollout_id(rollout_id: str) -> str:
    """Return `rollout_id` if it is a safe file-name stem, else raise `InvalidRolloutIdError`.

    The rule (`^[A-Za-z0-9][A-Za-z0-9._-]*$`, at most 200 characters) excludes path
    separators, `.`/`..`, absolute paths, NUL and non-ASCII look-alikes.
    """
    if (
        not isinstance(rollout_id, str)
        or len(rollout_id) > MAX_ROLLOUT_ID_LENGTH
        or _ROLLOUT_ID.match(rollout_id) is None
    ):
        shown = repr(rollout_id)
        if len(shown) > 80:
            shown = shown[:60] + f"...<{len(shown)} chars>"
        raise InvalidRolloutIdError(f"invalid rollout id {shown}: {_ROLLOUT_ID_RULE}")
    return rollout_id


def check_format(value: Any, *, path: Path | None = None, line_index: int | None = None) -> None:
    """Raise `UnsupportedFormatError` when `value` (a line's `format`) is not a v1 format.

    Absent (`UNSET`/None) means v1: NeMo Gym writes no `format` field.
    """
    if value is None or value is msgspec.UNSET:
        return
    where = ""
    if path is not None:
        where = f" in {path}" + (f", line {line_index}" if line_index is not None else "")
    name, _, major = str(value).partition("/")
    if name == _FORMAT_NAME and major.isdigit() and int(major) == _SUPPORTED_MAJOR:
        return
    if name == _FORMAT_NAME and major.isdigit() and int(major) > _SUPPORTED_MAJOR:
        raise UnsupportedFormatError(
            f"capture line{where} has format {value!r}, newer than this reader "
            f"({CAPTURE_LINE_FORMAT}); upgrade model-call-capture to read it",
            path=path,
            line_index=line_index,
        )
    raise UnsupportedFormatError(
        f"capture line{where} has unknown format {value!r}; expected {CAPTURE_LINE_FORMAT!r}",
        path=path,
        line_index=line_index,
    )


def decode_capture_line(
    raw: bytes, *, path: Path | None = None, line_index: int | None = None
) -> CaptureLine:
    """Decode one raw line into a `CaptureLine`.

    Raises `UnsupportedFormatError` for a line of a future format (checked first, so a
    future line is never mistaken for a damaged one) and `msgspec.ValidationError` /
    `msgspec.DecodeError` for a damaged line.
    """
    try:
        line = _line_decoder.decode(raw)
    except msgspec.ValidationError:
        obj = _codec.decode_object(raw)
        if obj is not None and "format" in obj:
            check_format(obj["format"], path=path, line_index=line_index)
        raise
    check_format(line.format, path=path, line_index=line_index)
    return line


_Buffer = bytes | bytearray
_IOV_MAX = 1024  # Linux's limit on the buffers of one writev
_CACHE_MAX = 4096  # bound of the per-store path cache and of `_ends`


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


class _Group:
    """Group-commit state of one capture file in this process."""

    __slots__ = ("busy", "lock", "pending", "users")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.busy = False
        """True while a leader writes the file or a batch waits for its leader to start."""
        self.pending: _Batch | None = None
        """The batch new lines join while the file is busy."""
        self.users = 0


_groups: dict[str, _Group] = {}
_groups_lock = threading.Lock()

# Where this process's last complete write to a file ended: (device, inode, size). While
# the file still ends there, nobody wrote after us (capture files only grow; `clear`
# unlinks), so its last byte is our newline and reading it back can be skipped.
_ends: dict[str, tuple[int, int, int]] = {}


def _acquire_group(path: str) -> _Group:
    with _groups_lock:
        group = _groups.get(path)
        if group is None:
            group = _groups[path] = _Group()
        group.users += 1
        return group


def _release_group(path: str, group: _Group) -> None:
    with _groups_lock:
        group.users -= 1
        if group.users == 0 and _groups.get(path) is group:
            del _groups[path]


def _hand_over(group: _Group) -> None:
    """A leader is done: start the waiting batch's leader, or mark the file idle."""
    with group.lock:
        after = group.pending
        group.pending = None
        group.busy = after is not None
    if after is not None:
        after.turn.release()


def _write_buffers(fd: int, buffers: list[_Buffer]) -> tuple[int, OSError | None]:
    """Write `buffers` in order, one `writev` for all; (bytes written, the error that stopped it)."""
    written = 0
    try:
        for start in range(0, len(buffers), _IOV_MAX):
            part = buffers[start : start + _IOV_MAX]
            n = os.write(fd, part[0]) if len(part) == 1 else os.writev(fd, part)
            written += n
            size = sum(map(len, part))
            if n < size:  # short (the disk filled up): write the rest, or get its error
                rest = memoryview(part[0] if len(part) == 1 else b"".join(part))[n:]
                while rest:
                    n = os.write(fd, rest)
                    if (
                        n <= 0
                    ):  # pragma: no cover - a regular file never returns 0 for a non-empty write
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


class CaptureStore:
    """Per-rollout capture files under one directory: durable appends and tolerant reads.

    `root` is created on the first append if missing. `file_mode` is the permission of
    files this store creates (0600 by default: captures hold prompts and completions).
    """

    def __init__(self, root: str | os.PathLike[str], *, file_mode: int = 0o600) -> None:
        self.root = Path(root)
        """The capture directory."""
        self.file_mode = file_mode
        """Permission bits of created capture files and markers."""
        self._files: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"CaptureStore({str(self.root)!r})"

    # -- paths -------------------------------------------------------------------------

    def path(self, rollout_id: str) -> Path:
        """`<root>/<rollout_id>.capture.jsonl`; raises `InvalidRolloutIdError` first."""
        return self.root / f"{validate_rollout_id(rollout_id)}{CAPTURE_SUFFIX}"

    def incomplete_path(self, rollout_id: str) -> Path:
        """`<root>/<rollout_id>.capture.incomplete`; raises `InvalidRolloutIdError` first."""
        return self.root / f"{validate_rollout_id(rollout_id)}{INCOMPLETE_SUFFIX}"

    # -- writing -----------------------------------------------------------------------

    def append(self, rollout_id: str, line: CaptureLine | bytes) -> None:
        """Append one line durably: returns only after an fsync that covers it.

        `line` is a `CaptureLine` (encoded with the library's one codec) or already
        encoded bytes of one JSON object (a trailing newline is added if missing).
        Blocking: call it off the event loop. Raises `OSError` when the line could not
        be written or made durable (nothing is written when the open or lock fails; a
        failed write or fsync may leave a torn or unsynced line, which the next append
        isolates), `InvalidRolloutIdError` for a bad id, and another `ValueError` for
        bytes that are not one line or a string the codec cannot encode (a lone
        surrogate) — before touching the file.
        """
        path = self._file(rollout_id)
        data = _encode(line)
        group = _acquire_group(path)
        try:
            with group.lock:
                batch = group.pending
                if not group.busy:
                    group.busy = True
                elif batch is None:
                    batch = group.pending = _Batch()
                if batch is not None:
                    index = len(batch.lines)
                    batch.lines.append(data)
            if batch is None:  # nobody else is writing this file: write this line now
                try:
                    errors = self._write_durably(path, [data])
                finally:
                    _hand_over(group)
                if errors is not None and errors[0] is not None:
                    raise errors[0]
                return
            if index == 0:
                self._lead(path, group, batch)
            else:
                batch.done.acquire()
                batch.done.release()
            error = batch.errors[index] if batch.errors is not None else None
            if error is not None:
                raise error if index == 0 else _copy_error(error)
        finally:
            _release_group(path, group)

    def _lead(self, path: str, group: _Group, batch: _Batch) -> None:
        """Write and fsync a batch once the previous leader is done (it detached the batch)."""
        try:
            batch.turn.acquire()
            errors = self._write_durably(path, batch.lines)
        except (
            BaseException
        ) as exc:  # not an OSError (interrupted): release the others all the same
            _hand_over(group)  # first: a batch still waiting is detached, so no line joins it now
            batch.errors = [OSError(errno.EIO, f"capture write interrupted: {exc!r}")] * len(
                batch.lines
            )
            batch.done.release()
            raise
        _hand_over(group)
        batch.errors = errors
        batch.done.release()

    def _write_durably(self, path: str, lines: list[_Buffer]) -> list[OSError | None] | None:
        """Write `lines` with one write under the file's lock, then fsync once.

        None when every line is durable; else one entry per line: None for a durable
        line, the error of a line that is not (a line cut by a failed write is not
        retried; the whole lines before it are still fsynced).
        """
        try:
            fd, st = self._open_locked(path)
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
                    written, write_error = _write_buffers(fd, buffers)
                finally:
                    _flock(fd, fcntl.LOCK_UN)
            except OSError as exc:
                return [exc] * len(lines)
            errors: list[OSError | None] | None = None
            if write_error is None:
                if len(_ends) >= _CACHE_MAX:
                    _ends.clear()
                _ends[path] = (st.st_dev, st.st_ino, st.st_size + written)
            else:
                _ends.pop(path, None)
                end = len(buffers) - len(lines)  # the newline that ends a torn line
                errors = []
                for line in lines:
                    end += len(line)
                    errors.append(None if end <= written else write_error)
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
                return [
                    failed if error is None else error for error in errors or [None] * len(lines)
                ]
            return errors
        finally:
            os.close(fd)

    def _file(self, rollout_id: str) -> str:
        """`path(rollout_id)` as a string, validated once per id (a bounded cache)."""
        path = self._files.get(rollout_id) if type(rollout_id) is str else None
        if path is None:
            path = os.fspath(self.path(rollout_id))
            if len(self._files) >= _CACHE_MAX:
                self._files.clear()
            self._files[rollout_id] = path
        return path

    def _open_locked(self, path: str) -> tuple[int, os.stat_result]:
        """Open the capture file for appending and take its exclusive lock: (fd, its stat).

        `clear()` unlinks under the same lock, so a file found unlinked once the lock is
        held was cleared after we opened it: open the fresh one instead of writing a
        line nobody will read.
        """
        while True:
            fd = self._open_or_create(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                _flock(fd, fcntl.LOCK_EX)
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise OSError(errno.EINVAL, f"{path} is not a regular file")
                if st.st_nlink > 0:
                    return fd, st
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    def _open_or_create(self, path: str | Path, flags: int) -> int:
        """Open `path` (never through a symlink), creating it durably when it is missing."""
        try:
            return os.open(path, flags)
        except FileNotFoundError:
            return self._create(path, flags)
        except OSError as exc:
            raise _explain_symlink(exc, path) from exc

    def _create(self, path: str | Path, flags: int) -> int:
        """Create a file (and the directory), and make its directory entry durable too."""
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, flags | os.O_CREAT, self.file_mode)
        except OSError as exc:
            raise _explain_symlink(exc, path) from exc
        try:
            dir_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def mark_incomplete(self, rollout_id: str) -> None:
        """Create the rollout's incomplete marker (a capture of this rollout failed)."""
        os.close(
            self._open_or_create(
                self.incomplete_path(rollout_id), os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC
            )
        )

    def is_incomplete(self, rollout_id: str) -> bool:
        """True when the rollout's incomplete marker exists."""
        return os.path.lexists(self.incomplete_path(rollout_id))

    def clear(self, rollout_id: str) -> None:
        """Remove the rollout's capture file and incomplete marker (missing files are fine).

        Unlinks rather than truncates: a writer that opened the old file keeps writing to
        the unlinked inode, never into the fresh capture of a re-dispatched attempt.
        """
        path = self.path(rollout_id)
        _ends.pop(os.fspath(path), None)  # a new file may reuse the inode
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            path.unlink(missing_ok=True)  # a symlink planted in the directory: remove the link only
        else:
            try:
                # Unlink under the writers' lock: a writer holding it finishes its line
                # first; one that gets it later sees the unlinked inode and reopens.
                _flock(fd, fcntl.LOCK_EX)
                path.unlink(missing_ok=True)
            finally:
                os.close(fd)
        self.incomplete_path(rollout_id).unlink(missing_ok=True)

    # -- reading -----------------------------------------------------------------------

    def rollout_ids(self) -> list[str]:
        """Sorted ids of every rollout with a capture file or an incomplete marker."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        ids: set[str] = set()
        for name in names:
            for suffix in (CAPTURE_SUFFIX, INCOMPLETE_SUFFIX):
                if name.endswith(suffix):
                    stem = name[: -len(suffix)]
                    if len(stem) <= MAX_ROLLOUT_ID_LENGTH and _ROLLOUT_ID.match(stem):
                        ids.add(stem)
        return sorted(ids)

    def exists(self, rollout_id: str) -> bool:
        """True when the rollout's capture file exists."""
        return os.path.lexists(self.path(rollout_id))

    def iter_lines(self, rollout_id: str) -> Iterator[tuple[int, bytes]]:
        """Yield `(index, raw_line)` for every non-blank line, without its newline.

        Indexes count non-blank lines from 0 (NeMo Gym's numbering). Bytes appended
        after the call started are not included. A missing file yields nothing.
        """
        path = self.path(rollout_id)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _explain_symlink(exc, path) from exc
        try:
            _flock(fd, fcntl.LOCK_SH)
            try:
                remaining = os.fstat(fd).st_size
            finally:
                _flock(fd, fcntl.LOCK_UN)
            index = 0
            pending = b""
            while remaining > 0:
                chunk = os.read(fd, min(_READ_CHUNK, remaining))
                if not chunk:
                    break
                remaining -= len(chunk)
                parts = (pending + chunk).split(b"\n")
                pending = parts.pop()
                for part in parts:
                    if part and not part.isspace():  # blank lines are skipped (no strip() copy)
                        yield index, part
                        index += 1
            if pending and not pending.isspace():
                yield index, pending
        finally:
            os.close(fd)

    def read_available(self, rollout_id: str) -> tuple[list[tuple[int, CaptureLine]], int]:
        """Valid lines with their index, and the number of damaged lines.

        Damaged lines (invalid JSON, not an object, wrong field types, a line torn by a
        crash) are counted and skipped; their indexes stay taken. A line of a newer
        format major raises `UnsupportedFormatError` naming file and line.
        """
        path = self.path(rollout_id)
        lines: list[tuple[int, CaptureLine]] = []
        damaged = 0
        for index, raw in self.iter_lines(rollout_id):
            try:
                lines.append((index, decode_capture_line(raw, path=path, line_index=index)))
            except (
                msgspec.DecodeError,
                msgspec.ValidationError,
                UnicodeDecodeError,
                RecursionError,
            ):
                damaged += 1
        return lines, damaged

    def read(self, rollout_id: str) -> list[CaptureLine]:
        """Every line of the rollout; `DamagedLineError` naming file and line on the first damaged one."""
        path = self.path(rollout_id)
        lines: list[CaptureLine] = []
        for index, raw in self.iter_lines(rollout_id):
            try:
                lines.append(decode_capture_line(raw, path=path, line_index=index))
            except (
                msgspec.DecodeError,
                msgspec.ValidationError,
                UnicodeDecodeError,
                RecursionError,
            ) as exc:
                raise DamagedLineError(
                    f"damaged capture line in {path}, line {index} (0-based, blank lines not "
                    f"counted): {exc}",
                    path=path,
                    line_index=index,
                ) from exc
        return lines


_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS})
_warned_no_locks = False


def _flock(fd: int, operation: int) -> None:
    """`flock`, or nothing on a filesystem that has no locks (some NFS and FUSE mounts).

    Without locks every append is still one `O_APPEND` write of a whole line, which a
    local filesystem does not interleave; only writers on other hosts of a shared
    filesystem lose their serialization, as the seed says ("when the shared filesystem
    supports it"). Failing the capture instead would lose every call. Warned once.
    """
    global _warned_no_locks
    try:
        fcntl.flock(fd, operation)
    except OSError as exc:
        if exc.errno not in _NO_LOCKS:
            raise
        if not _warned_no_locks:
            _warned_no_locks = True
            logger.warning(
                "capture files: the filesystem does not support flock (%s); appends from "
                "several hosts to one rollout file are not serialized",
                exc.strerror,
            )


def _encode(line: CaptureLine | bytes) -> _Buffer:
    """The line to write, newline included (the codec's own buffer: no copy of a big line)."""
    if isinstance(line, CaptureLine):
        return _codec.encode_line(line)
    data = bytes(line)
    body = len(data) - 1 if data.endswith(b"\n") else len(data)
    if data.find(b"\n", 0, body) != -1 or data.isspace() or not data:
        raise ValueError("a capture line must be one non-empty line of JSON")
    return data if body < len(data) else data + b"\n"


def _explain_symlink(exc: OSError, path: str | Path) -> OSError:
    if exc.errno == errno.ELOOP:
        return OSError(exc.errno, f"refusing to follow a symlink at {path}", str(path))
    return exc
