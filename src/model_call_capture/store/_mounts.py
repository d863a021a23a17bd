"""Mounts that can lose concurrent appends: NFS without server-side locks.

An NFS mount with `nolock` (NFSv3) or `local_lock=all|flock` takes `flock` locally: the
lock no longer serializes writers on other hosts, and NFS `O_APPEND` is emulated by the
client (it writes at the size it last saw), so concurrent appends from several hosts
overwrite each other without an error. The store cannot detect that loss when it
happens, so it reads the mount table once per capture directory and warns. It warns
rather than refuses: one host writing alone loses nothing there, and refusing would
lose every call of a setup that was correct (docs/reliability.md).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Mount",
    "appends_may_be_lost",
    "mount_of",
    "parse_mountinfo",
    "warn_if_appends_may_be_lost",
]

logger = logging.getLogger("model_call_capture.store")

MOUNTINFO = Path("/proc/self/mountinfo")
_NFS = frozenset({"nfs", "nfs4"})
_LOCAL_LOCKS = frozenset({"local_lock=all", "local_lock=flock"})
_warned: set[str] = set()
_warned_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Mount:
    """One line of `/proc/self/mountinfo`: what `mount_of` and `appends_may_be_lost` need."""

    device: tuple[int, int]
    """major, minor: equal to `os.major/minor(st_dev)` of files on the mount."""
    mount_point: str
    """Where it is mounted (octal escapes such as `\\040` decoded)."""
    fs_type: str
    """`nfs`, `nfs4`, `ext4`, ..."""
    options: frozenset[str]
    """The per-mount and the superblock options together (`nolock` is a superblock one)."""


def _unescape(field: str) -> str:
    """Decode mountinfo's octal escapes (space, tab, newline, backslash)."""
    if "\\" not in field:
        return field
    return field.encode().decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of a mountinfo text (proc(5)); malformed lines are skipped."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            separator = fields.index("-", 6)
            major, minor = fields[2].split(":")
            mounts.append(
                Mount(
                    device=(int(major), int(minor)),
                    mount_point=_unescape(fields[4]),
                    fs_type=fields[separator + 1],
                    options=frozenset(fields[5].split(",") + fields[separator + 3].split(",")),
                )
            )
        except (ValueError, IndexError):
            continue
    return mounts


def mount_of(path: Path, mounts: list[Mount]) -> Mount | None:
    """The mount holding `path` (or its nearest existing parent): same device, deepest point."""
    existing = path.absolute()
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    st = os.stat(existing)
    device = (os.major(st.st_dev), os.minor(st.st_dev))
    real = os.path.realpath(existing)
    candidates = [m for m in mounts if m.device == device] or mounts
    inside = [
        m
        for m in candidates
        if real == m.mount_point or real.startswith(m.mount_point.rstrip("/") + "/")
    ]
    best = None
    for mount in inside:  # a later line is mounted over an earlier one at the same point
        if best is None or len(mount.mount_point) >= len(best.mount_point):
            best = mount
    return best


def appends_may_be_lost(mount: Mount) -> str | None:
    """Why appends from several hosts can be lost on `mount`, or None when they cannot."""
    if mount.fs_type not in _NFS:
        return None
    local = sorted(mount.options & (_LOCAL_LOCKS | {"nolock"}))
    if not local:
        return None
    return f"{mount.fs_type} mount {mount.mount_point} with {','.join(local)}"


def warn_if_appends_may_be_lost(root: Path, mountinfo: Path = MOUNTINFO) -> str | None:
    """Warn once per directory when its mount takes locks locally; the reason, or None."""
    try:
        mount = mount_of(root, parse_mountinfo(mountinfo.read_text("utf-8", "replace")))
    except OSError:  # no /proc (not Linux): nothing to say
        return None
    reason = None if mount is None else appends_may_be_lost(mount)
    if reason is None:
        return None
    key = os.path.realpath(root)
    with _warned_lock:
        first = key not in _warned
        _warned.add(key)
    if first:
        logger.warning(
            "capture directory %s is on an %s: flock is local to each host there, so "
            "concurrent appends from several hosts to one rollout file can be lost "
            "silently; write each host's captures to its own directory, or mount with "
            "locking (docs/reliability.md)",
            root,
            reason,
        )
    return reason
