"""Capture file names, and opening them safely.

Every byte of the capture directory is hostile until proven otherwise: another local user
may have planted a name before us. So a capture file or marker is opened

- never through a symlink (`O_NOFOLLOW`);
- without blocking (`O_NONBLOCK`): a FIFO planted under a capture name would otherwise
  block the writer thread in `open` forever, and with it every other rollout's calls
  once the writer pool is full;
- and then kept only when it is a regular file of ours that nobody else can change or
  read behind our back (`check_own_file`): owned by this process's user, not writable by
  group or others nor readable by others (unless the store's own file mode grants it),
  and with one link (a hard link would append our captures to another file).

Refusals are `OSError`s that name the file and say why: the middleware records them as a
capture failure of the rollout (logged once per rollout) and the call is still served.

Directories the store creates get the store's directory mode (0700 by default) whatever
the umask, missing parents included (`make_dirs`).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidRolloutIdError, NotARegularFileError
from ..rollout_ids import validate_rollout_id

__all__ = [
    "CAPTURE_SUFFIX",
    "INCOMPLETE_SUFFIX",
    "SEGMENTS_SUFFIX",
    "NewFileSettings",
    "capture_file_rollout_id",
    "check_opened",
    "check_own_file",
    "explain_symlink",
    "kind_of",
    "listed",
    "make_dirs",
    "open_for_reading",
    "open_or_create",
    "open_unchecked",
    "rollout_id_of",
    "sync_dir",
]

CAPTURE_SUFFIX = ".capture.jsonl"
"""File name suffix of a rollout's capture file."""
INCOMPLETE_SUFFIX = ".capture.incomplete"
"""File name suffix of a rollout's incomplete marker."""
SEGMENTS_SUFFIX = ".capture.segments"
"""Name suffix of the directory of a rollout's segments (`_segments`)."""

_LOOSE_BITS = stat.S_IWGRP | stat.S_IWOTH | stat.S_IROTH
"""Mode bits that let other users change or read a file; refused unless our mode grants them."""
_FORMAT_BITS = 0o170000  # `stat.S_IFMT`'s mask: the file's type


@dataclass(frozen=True, slots=True)
class NewFileSettings:
    """Where and how the store creates what is missing: the directory and the modes."""

    root: Path
    """The capture directory (created with its missing parents on first use)."""
    file_mode: int
    """Permission bits of created capture files and markers."""
    dir_mode: int
    """Permission bits of created directories, applied whatever the umask."""


def capture_file_rollout_id(name: str) -> str | None:
    """The rollout id a capture file's name names, None for any other name (a marker too)."""
    if not name.endswith(CAPTURE_SUFFIX):
        return None
    try:
        return validate_rollout_id(name[: -len(CAPTURE_SUFFIX)])
    except InvalidRolloutIdError:
        return None


def rollout_id_of(name: str) -> str | None:
    """The rollout id a directory entry names (capture file, marker or segments directory),
    None for any other."""
    for suffix in (CAPTURE_SUFFIX, INCOMPLETE_SUFFIX, SEGMENTS_SUFFIX):
        if name.endswith(suffix):
            try:
                return validate_rollout_id(name[: -len(suffix)])
            except InvalidRolloutIdError:
                return None
    return None


def open_or_create(path: str | Path, flags: int, creation: NewFileSettings) -> int:
    """Open `path` for writing (see the module docstring), creating it durably when missing.

    Raises `OSError` naming the file when it is not a regular file of ours (`check_own_file`).
    """
    fd = open_unchecked(path, flags, creation)
    try:
        check_opened(fd, path, creation)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_unchecked(path: str | Path, flags: int, creation: NewFileSettings) -> int:
    """`open_or_create` without its checks: the caller runs `check_opened` before any use
    of the descriptor, and closes it when that raises."""
    flags |= os.O_NONBLOCK
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        return _create(path, flags, creation)
    except OSError as exc:
        raise explain_symlink(exc, path) from exc


def check_opened(fd: int, path: str | Path, creation: NewFileSettings) -> os.stat_result:
    """`check_own_file` of a descriptor from `open_unchecked` (its `fstat`), and the fsync of
    its directory again while an earlier one failed."""
    st = os.fstat(fd)
    # The usual case in one test (this runs once per append): a regular file without
    # loose bits, ours, with one link (or none: unlinked meanwhile).
    if not (
        st.st_mode & (_FORMAT_BITS | _LOOSE_BITS & ~creation.file_mode) == stat.S_IFREG
        and st.st_uid == os.geteuid()
        and st.st_nlink <= 1
    ):
        _refuse_unless_own(st, path, creation.file_mode)
    if _UNSYNCED_DIRS and creation.root in _UNSYNCED_DIRS:
        sync_dir(creation.root)
    return st


def check_own_file(fd: int, path: str | Path, mode: int) -> os.stat_result:
    """`fstat(fd)`, or `OSError` when it is not a regular file only we can change.

    `mode` is the store's file mode: bits it grants itself (a 0640 store) are not refused.
    """
    st = os.fstat(fd)
    _refuse_unless_own(st, path, mode)
    return st


def _refuse_unless_own(st: os.stat_result, path: str | Path, mode: int) -> None:
    """`check_own_file`'s checks of the file's `fstat` `st`: `OSError` saying why it is refused."""
    if not stat.S_ISREG(st.st_mode):
        raise NotARegularFileError(
            errno.EINVAL,
            f"refusing capture file {path}: not a regular file ({kind_of(st.st_mode)})",
            str(path),
        )
    reason = None
    if st.st_uid != os.geteuid():
        reason = f"owned by uid {st.st_uid}, not by this process's uid {os.geteuid()}"
    elif loose := stat.S_IMODE(st.st_mode) & _LOOSE_BITS & ~mode:
        reason = (
            f"mode {stat.S_IMODE(st.st_mode):04o} lets other users change or read it ({loose:04o})"
        )
    elif st.st_nlink > 1:
        reason = f"it has {st.st_nlink} hard links, so it may be another file's name too"
    if reason is not None:
        raise OSError(
            errno.EPERM,
            f"refusing capture file {path}: {reason} (remove it, or make it a private "
            f"file of this user: chmod go-rwx)",
            str(path),
        )


def kind_of(mode: int) -> str:
    """What a file of `st_mode` `mode` is, for messages (`a FIFO`, `a directory`, ...)."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return name
    return "unknown type"


def make_dirs(directory: Path, mode: int) -> None:
    """Create `directory` and its missing parents with exactly `mode`, whatever the umask.

    A directory that already exists (or that another process creates first) is left as
    it is: it is not ours to change.
    """
    missing: list[Path] = []
    current = directory
    while not os.path.lexists(current):
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, mode)
        except FileExistsError:
            continue
        # The umask may have taken bits away: set them on the directory we created,
        # through a descriptor so that a name swapped in meanwhile is not followed.
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)


def _create(path: str | Path, flags: int, creation: NewFileSettings) -> int:
    """Create a file (and the directory), and make its directory entry durable too."""
    make_dirs(creation.root, creation.dir_mode)
    try:
        fd = os.open(path, flags | os.O_CREAT, creation.file_mode)
    except OSError as exc:
        raise explain_symlink(exc, path) from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != creation.file_mode:
            os.fchmod(fd, creation.file_mode)  # the store's mode, not what the umask left
        sync_dir(creation.root)
    except BaseException:
        os.close(fd)
        raise
    return fd


# Directories whose fsync after a file was created in them failed. The file stays (another
# writer may already be appending to it), so its entry is not known to be durable: every
# later open of a file there fsyncs the directory again, and so fails, until one succeeds.
_UNSYNCED_DIRS: set[Path] = set()


def sync_dir(root: Path) -> None:
    """fsync the directory `root`; remembered in `_UNSYNCED_DIRS` while that fails."""
    _UNSYNCED_DIRS.add(root)
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    _UNSYNCED_DIRS.discard(root)


def open_for_reading(path: Path) -> int | None:
    """Open a capture file read-only, never through a symlink; None when it does not exist.

    Only a regular file is read: anything else named like one raises `NotARegularFileError`
    naming it. `O_NONBLOCK` makes opening a FIFO return at once instead of waiting for a
    writer that may never come; on a regular file the flag changes nothing.

    A name that a lookup says is missing is confirmed by listing the directory: an NFS
    client may answer a lookup from its negative cache for a while after another host
    created the file, but listing revalidates the directory (docs/reliability.md).
    """
    fd = None
    for confirmed in (False, True):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
            break
        except FileNotFoundError:
            if confirmed or not listed(path):
                return None
        except OSError as exc:
            raise explain_symlink(exc, path) from exc
    if fd is None:  # pragma: no cover - the loop breaks or returns
        return None
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotARegularFileError(
            errno.EINVAL, f"not a regular file ({kind_of(mode)}), refusing to read it", str(path)
        )
    return fd


def listed(path: Path) -> bool:
    """True when the directory of `path` lists its name (False when the directory is missing)."""
    try:
        with os.scandir(path.parent) as entries:
            return any(entry.name == path.name for entry in entries)
    except (FileNotFoundError, NotADirectoryError):
        return False


def explain_symlink(exc: OSError, path: str | Path) -> OSError:
    """`exc`, or an error that says why when a symlink or a FIFO was refused."""
    if exc.errno == errno.ELOOP:
        return OSError(exc.errno, f"refusing to follow a symlink at {path}", str(path))
    if exc.errno == errno.ENXIO:  # a non-blocking open for writing of a FIFO nobody reads
        return NotARegularFileError(
            exc.errno, f"refusing capture file {path}: not a regular file (a FIFO)", str(path)
        )
    return exc
