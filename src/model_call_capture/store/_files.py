"""Capture file names, and opening them safely (never through a symlink, created durably)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..correlation import validate_rollout_id
from ..errors import InvalidRolloutIdError, NotARegularFileError

__all__ = [
    "CAPTURE_SUFFIX",
    "INCOMPLETE_SUFFIX",
    "explain_symlink",
    "open_for_reading",
    "open_or_create",
    "rollout_id_of",
]

CAPTURE_SUFFIX = ".capture.jsonl"
"""File name suffix of a rollout's capture file."""
INCOMPLETE_SUFFIX = ".capture.incomplete"
"""File name suffix of a rollout's incomplete marker."""


def rollout_id_of(name: str) -> str | None:
    """The rollout id a directory entry names (capture file or marker), None for any other."""
    for suffix in (CAPTURE_SUFFIX, INCOMPLETE_SUFFIX):
        if name.endswith(suffix):
            try:
                return validate_rollout_id(name[: -len(suffix)])
            except InvalidRolloutIdError:
                return None
    return None


def open_or_create(path: str | Path, flags: int, *, root: Path, mode: int) -> int:
    """Open `path` (never through a symlink), creating it durably when it is missing."""
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        return _create(path, flags, root=root, mode=mode)
    except OSError as exc:
        raise explain_symlink(exc, path) from exc


def _create(path: str | Path, flags: int, *, root: Path, mode: int) -> int:
    """Create a file (and the directory), and make its directory entry durable too."""
    root.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, flags | os.O_CREAT, mode)
    except OSError as exc:
        raise explain_symlink(exc, path) from exc
    try:
        dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_for_reading(path: Path) -> int | None:
    """Open a capture file read-only, never through a symlink; None when it does not exist.

    Only a regular file is read: anything else named like one raises `NotARegularFileError`
    naming it. `O_NONBLOCK` makes opening a FIFO return at once instead of waiting for a
    writer that may never come; on a regular file the flag changes nothing.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise explain_symlink(exc, path) from exc
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotARegularFileError(
            errno.EINVAL, f"not a regular file ({_kind(mode)}), refusing to read it", str(path)
        )
    return fd


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a file"


def explain_symlink(exc: OSError, path: str | Path) -> OSError:
    """`exc`, or an error that says why when it is `O_NOFOLLOW` refusing a symlink."""
    if exc.errno == errno.ELOOP:
        return OSError(exc.errno, f"refusing to follow a symlink at {path}", str(path))
    return exc
