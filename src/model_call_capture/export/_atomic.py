"""Publishing an export atomically: temporary names beside the target, fsync, rename.

A reader sees the previous export or the new one, never a part of one. A killed export
leaves only `.<name>.mcc-tmp-<pid>` (or, killed between the two renames of a dataset
swap, `.<name>.mcc-old-<pid>`), which the next export of the same target removes (or
puts back) once that pid is dead.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from .._codec import ascii_int

__all__ = [
    "clean_stale",
    "create_file",
    "fsync_dir",
    "fsync_tree",
    "publish_dir",
    "publish_file",
    "remove",
    "temp_path",
]

TMP_TAG = ".mcc-tmp-"
OLD_TAG = ".mcc-old-"


def temp_path(target: Path, tag: str = TMP_TAG) -> Path:
    """This process's temporary name for `target`, in the same directory (so rename is atomic)."""
    return target.parent / f".{target.name}{tag}{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def remove(path: Path) -> None:
    """Remove a file or a directory tree; nothing when it is gone already."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def stale_pid(name: str, prefix: str) -> int | None:
    """The pid of a temporary name `<prefix><tag><pid>` whose process is dead, else None."""
    for tag in (TMP_TAG, OLD_TAG):
        if name.startswith(prefix + tag):
            pid = name[len(prefix + tag) :]
            # Only what `temp_path` writes: the digits of a pid the kernel could give
            # (`os.kill` refuses huge numbers).
            number = ascii_int(pid, 10)
            if (
                number is not None
                and 0 < number < 2**31
                and number != os.getpid()
                and not _alive(number)
            ):
                return number
    return None


def clean_stale(target: Path) -> None:
    """Remove what killed exports to `target` left beside it; put back a dataset a swap moved away."""
    prefix = f".{target.name}"
    try:
        entries = list(target.parent.iterdir())
    except OSError:
        return
    for entry in entries:
        if stale_pid(entry.name, prefix) is None:
            continue
        if OLD_TAG in entry.name and not os.path.lexists(target):
            os.replace(entry, target)  # the last whole export, moved away by a swap cut short
        else:
            remove(entry)


def create_file(path: Path, mode: int) -> None:
    """Create `path` empty with `mode` (less the umask), replacing what a dead run left there."""
    remove(path)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """fsync a directory, so the renames into it are durable."""
    _fsync(path)


def fsync_tree(root: Path) -> None:
    """fsync every file and directory under `root` (itself included)."""
    for dirpath, _, files in os.walk(root):
        for name in files:
            _fsync(Path(dirpath) / name)
        _fsync(Path(dirpath))


def publish_file(tmp: Path, target: Path) -> None:
    """Make the written `tmp` durable, then rename it over `target`."""
    _fsync(tmp)
    os.replace(tmp, target)
    _fsync(target.parent)


def publish_dir(tmp: Path, target: Path) -> None:
    """Make the written directory `tmp` durable, then swap it in place of `target`."""
    fsync_tree(tmp)
    old = temp_path(target, OLD_TAG)
    had_old = os.path.lexists(target)
    if had_old:
        os.replace(target, old)
    os.replace(tmp, target)
    _fsync(target.parent)
    if had_old:
        remove(old)
