"""The segment layout: each writer process appends only to files it created itself.

A rollout's segments live in `<root>/<rollout_id>.capture.segments/`, one a writer process:
`<host>.<pid>.<random>.jsonl` (the same lines as a shared capture file), beside it that
segment's own incomplete marker `<host>.<pid>.<random>.incomplete`. `host` is the host
name with every character but ASCII letters, digits, `_` and `-` replaced by `_`, cut to 64;
`random` is 8 hex digits drawn for each segment. The directory's name ends neither in
`.capture.jsonl` nor in `.capture.incomplete`, so no reader that lists those suffixes
(NeMo Gym's, this library's older ones) takes it, or anything in it, for a rollout.

Writing needs neither `flock` nor an atomic `O_APPEND` across hosts: a segment is created
with `O_EXCL` (a name taken, even by another host with the same pid, draws a new random
part) and only its creator ever writes to it. A process keeps its segments open (at most
`_OPEN_MAX`, the least recently written closed first, and opened again by name when it
is written to next); a forked child drops its parent's, since they are not its own. Lines are batched per segment as on a shared file
(`_writer.append`): one write, then one `fsync`, before any of the batch's calls return.
A write that fails part-way leaves a torn line, which the next write to that segment
ends with a newline first, so it stays one damaged line. A segment found unlinked
(`clear()` of the rollout) is replaced by a fresh one.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import socket
import stat
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from ._files import SEGMENTS_SUFFIX, NewFileSettings, make_dirs, sync_dir
from ._writer import line_errors, write_buffers

__all__ = [
    "COMPACTED_PREFIX",
    "SEGMENTS_SUFFIX",
    "SEGMENT_INCOMPLETE_SUFFIX",
    "SEGMENT_SUFFIX",
    "Names",
    "is_segment",
    "mark_incomplete",
    "names",
    "remove",
    "this_host",
    "write",
]

SEGMENT_SUFFIX = ".jsonl"
"""Name suffix of a segment in that directory."""
SEGMENT_INCOMPLETE_SUFFIX = ".incomplete"
"""Name suffix of a segment's incomplete marker in that directory."""

_OPEN_MAX = 256  # segments a process keeps open (each is one descriptor)
_CLOSED_MAX = 65536  # names of segments it closed, to open again rather than start anew
_NAME_TRIES = 16  # random parts drawn before a name clash is reported as an error
_HOST_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_SEGMENT_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_REOPEN_FLAGS = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LOOSE_DIR_BITS = stat.S_IWGRP | stat.S_IWOTH


def is_segment(path: Path) -> bool:
    """True when `path` names a segment (a `.jsonl` file in a `*.capture.segments` directory)."""
    return path.name.endswith(SEGMENT_SUFFIX) and path.parent.name.endswith(SEGMENTS_SUFFIX)


def this_host() -> str:
    """This host's name as segment names carry it (see the module docstring)."""
    return _HOST_CHARS.sub("_", socket.gethostname())[:64] or "host"


class _Segment:
    """One open segment of this process: its descriptor, its name's stem, whether a torn
    line ends it, and how many threads use it now (an evicted segment in use stays open)."""

    __slots__ = ("fd", "stem", "torn", "users")

    def __init__(self, fd: int, stem: str) -> None:
        self.fd = fd
        self.stem = stem
        self.torn = False
        self.users = 0


_open: OrderedDict[str, _Segment] = OrderedDict()  # by segments directory
_closed: OrderedDict[str, str] = OrderedDict()  # segments directory -> stem, once closed
_open_lock = threading.Lock()


def _forget_all_in_child() -> None:
    """After a fork: the parent's segments are not this process's to write."""
    global _open_lock
    _open_lock = threading.Lock()
    for segment in _open.values():
        try:
            os.close(segment.fd)
        except OSError:
            pass
    _open.clear()
    _closed.clear()


os.register_at_fork(after_in_child=_forget_all_in_child)


def write(
    directory: str, lines: Sequence[bytes | bytearray], creation: NewFileSettings
) -> list[OSError | None] | None:
    """`_writer.Write` for segments: `lines` to this process's segment in the rollout's
    segments `directory`, one write and one fsync; None when every line is durable."""
    try:
        segment = _take(directory, creation)
    except OSError as exc:
        return [exc] * len(lines)
    try:
        return _write_to(directory, segment, lines, creation)
    finally:
        with _open_lock:
            segment.users -= 1
            if segment.users == 0 and _open.get(directory) is not segment:
                os.close(segment.fd)  # evicted or replaced while in use


def _write_to(
    directory: str, segment: _Segment, lines: Sequence[bytes | bytearray], creation: NewFileSettings
) -> list[OSError | None] | None:
    fd = segment.fd
    try:
        unlinked = os.fstat(fd).st_nlink == 0
    except OSError as exc:
        return [exc] * len(lines)
    buffers = [b"\n", *lines] if segment.torn else lines
    written, error = (
        (0, OSError(errno.ESTALE, "unlinked")) if unlinked else write_buffers(fd, buffers)
    )
    if error is not None and written == 0 and (unlinked or error.errno == errno.ESTALE):
        # Cleared (unlinked here, or by another host of a network filesystem) and nothing
        # written: the lines go to a fresh segment, as a shared file's writer reopens.
        _drop(directory, segment)
        return write(directory, lines, creation)
    errors = None
    if error is not None:
        segment.torn = written > 0
        errors = line_errors(lines, len(buffers) - len(lines), written, error)
        if errors[0] is not None:
            return errors  # no whole line written: nothing to fsync
    else:
        segment.torn = False
    try:
        os.fsync(fd)
    except OSError as exc:
        failed = OSError(exc.errno, f"fsync failed: {exc.strerror}")
        failed.__cause__ = exc
        return [failed if e is None else e for e in errors or [None] * len(lines)]
    return errors


def _take(directory: str, creation: NewFileSettings) -> _Segment:
    """This process's open segment of `directory`, created when it has none; marked in use."""
    with _open_lock:
        segment = _open.get(directory)
        if segment is not None:
            _open.move_to_end(directory)
            segment.users += 1
            return segment
        stem = _closed.pop(directory, None)
    segment = (_reopen(directory, stem, creation) if stem else None) or _create(directory, creation)
    with _open_lock:
        # Only this thread writes `directory` now (the batching), so nobody added one.
        _open[directory] = segment
        segment.users += 1
        while len(_open) > _OPEN_MAX:
            old_directory, old = next(iter(_open.items()))
            del _open[old_directory]
            if len(_closed) >= _CLOSED_MAX:
                _closed.popitem(last=False)
            _closed[old_directory] = old.stem
            if old.users == 0:
                os.close(old.fd)
    return segment


def _reopen(directory: str, stem: str, creation: NewFileSettings) -> _Segment | None:
    """This process's segment `stem` of `directory`, closed earlier, opened again; None when
    it is gone (cleared) or is no longer a private file of ours."""
    try:
        dir_fd = _open_directory(directory, creation)
    except OSError:
        return None
    try:
        fd = os.open(stem + SEGMENT_SUFFIX, _REOPEN_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
            os.close(fd)
            return None
        segment = _Segment(fd, stem)
        # A write that failed before it was closed may have left a torn line.
        segment.torn = st.st_size > 0 and os.pread(fd, 1, st.st_size - 1) != b"\n"
    except OSError:
        os.close(fd)
        return None
    return segment


def _drop(directory: str, segment: _Segment) -> None:
    """Forget `segment` (its file was unlinked); closed once its last user is done."""
    with _open_lock:
        if _open.get(directory) is segment:
            del _open[directory]


def _create(directory: str, creation: NewFileSettings) -> _Segment:
    """Create a new segment of this process in `directory` (made when missing), durably."""
    dir_fd = _open_directory(directory, creation)
    try:
        host, pid = this_host(), os.getpid()
        for _ in range(_NAME_TRIES):
            stem = f"{host}.{pid}.{secrets.token_hex(4)}"
            try:
                fd = os.open(
                    stem + SEGMENT_SUFFIX, _SEGMENT_FLAGS, creation.file_mode, dir_fd=dir_fd
                )
            except FileExistsError:
                continue
            break
        else:
            raise OSError(errno.EEXIST, f"no free segment name in {directory}", directory)
        try:
            if stat.S_IMODE(os.fstat(fd).st_mode) != creation.file_mode:
                os.fchmod(fd, creation.file_mode)  # the store's mode, not what the umask left
            os.fsync(dir_fd)  # the new name is durable before a line in it is acknowledged
        except BaseException:
            os.close(fd)
            raise
        return _Segment(fd, stem)
    finally:
        os.close(dir_fd)


def _open_directory(directory: str, creation: NewFileSettings) -> int:
    """Open the rollout's segments directory, making it (and the capture directory) when
    missing; refused when it is not a directory of ours that only we can change."""
    try:
        os.mkdir(directory, creation.dir_mode)
        made = True
    except FileNotFoundError:
        make_dirs(creation.root, creation.dir_mode)
        return _open_directory(directory, creation)
    except FileExistsError:
        made = False
    try:
        dir_fd = os.open(directory, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OSError(
                exc.errno, f"refusing segments directory {directory}: not a directory", directory
            ) from exc
        raise
    try:
        st = os.fstat(dir_fd)
        if made:
            if stat.S_IMODE(st.st_mode) != creation.dir_mode:
                os.fchmod(dir_fd, creation.dir_mode)
            sync_dir(creation.root)
        elif st.st_uid != os.geteuid() or (
            stat.S_IMODE(st.st_mode) & _LOOSE_DIR_BITS & ~creation.dir_mode
        ):
            raise OSError(
                errno.EPERM,
                f"refusing segments directory {directory}: it is not a private directory of "
                f"this user (uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o})",
                directory,
            )
    except BaseException:
        os.close(dir_fd)
        raise
    return dir_fd


def mark_incomplete(directory: str, creation: NewFileSettings) -> None:
    """Create this process's incomplete marker in the rollout's segments `directory`: beside
    its open segment (same stem), or with a fresh stem when it has none there."""
    with _open_lock:
        segment = _open.get(directory)
        stem = segment.stem if segment is not None else None
    if stem is None:
        stem = f"{this_host()}.{os.getpid()}.{secrets.token_hex(4)}"
    dir_fd = _open_directory(directory, creation)
    try:
        fd = os.open(
            stem + SEGMENT_INCOMPLETE_SUFFIX,
            os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
            creation.file_mode,
            dir_fd=dir_fd,
        )
        os.close(fd)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


COMPACTED_PREFIX = "compacted."
"""Name prefix of the mark `mcc compact` leaves in a segments directory (`_compact`)."""


class Names(NamedTuple):
    """What a rollout's segments directory holds (`names`)."""

    segments: list[str]
    """The segments' names, sorted."""
    incomplete: list[str]
    """The segment markers' names."""
    compacted: list[str]
    """Marks of a compaction into the shared file (at most one but after a crash)."""


def names(directory: Path) -> Names:
    """The names in a rollout's segments `directory`; empty lists when it is missing.
    Entries that are not regular files are ignored."""
    found = Names([], [], [])
    try:
        entries = os.scandir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return found
    with entries:
        for entry in entries:
            name = entry.name
            if name.endswith(SEGMENT_SUFFIX):
                kind = found.segments
            elif name.endswith(SEGMENT_INCOMPLETE_SUFFIX):
                kind = found.incomplete
            elif name.startswith(COMPACTED_PREFIX):
                kind = found.compacted
            else:
                continue
            if entry.is_file(follow_symlinks=False):
                kind.append(name)
    found.segments.sort()
    return found


def remove(directory: Path) -> None:
    """Remove a rollout's segments directory and what it holds (`clear()`); nothing when missing.

    Names are unlinked through the directory's descriptor, never through a symlink; a
    symlink or other file planted under the directory's name is unlinked itself. A writer
    that still has a segment open keeps writing to its unlinked file, or, once it sees the
    file unlinked, to a fresh segment (`write`), as with a shared file.
    """
    try:
        dir_fd = os.open(directory, _DIR_FLAGS)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        os.unlink(directory)
        return
    try:
        for _ in range(3):  # a writer may create a segment meanwhile: empty it again
            with os.scandir(dir_fd) as entries:
                for entry in entries:
                    try:
                        os.unlink(entry.name, dir_fd=dir_fd)
                    except (FileNotFoundError, IsADirectoryError, PermissionError):
                        continue
            try:
                os.rmdir(directory)
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.ENOTEMPTY:
                    raise
    finally:
        os.close(dir_fd)
