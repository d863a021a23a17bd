"""Capture file names, and opening them safely (never through a symlink, created durably)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ..correlation import validate_rollout_id
from ..errors import InvalidRolloutIdError

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
    """Open a capture file read-only, never through a symlink; None when it does not exist."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise explain_symlink(exc, path) from exc


def explain_symlink(exc: OSError, path: str | Path) -> OSError:
    """`exc`, or an error that says why when it is `O_NOFOLLOW` refusing a symlink."""
    if exc.errno == errno.ELOOP:
        return OSError(exc.errno, f"refusing to follow a symlink at {path}", str(path))
    return exc
