"""Mounts where appends from several hosts can be lost, and the layout the store picks there.

Two hosts appending to one file need a lock that both see and an append that the
filesystem makes atomic. Neither holds on

- an NFS mount with `nolock` (NFSv3) or `local_lock=all|flock`: `flock` is taken on each
  client only, and NFS `O_APPEND` is emulated by the client (it writes at the size it last
  saw), so concurrent appends from several hosts overwrite each other without an error;
- FUSE mounts (`fuse`, `fuse.*`: gcsfuse, s3fs, blobfuse, sshfs, ...): the kernel takes
  `flock` locally unless the filesystem implements it, and object-store mounts do not
  append atomically (gcsfuse: the first flush of two writers wins, the other gets ESTALE);
- Lustre mounted without `flock` (`localflock`, `noflock`, or neither option given),
  BeeGFS (its global file locks are off by default) and 9p (no cross-host locks).

The store cannot detect such a loss when it happens, so with `capture_layout: auto` it
reads the mount table once per capture directory and writes per-writer segments there,
which need neither lock nor shared append (`_segments`); everywhere else it writes the
shared one-file-per-rollout layout under `flock`. The choice is logged once per
directory. With `capture_layout: shared` on such a mount it warns instead
(docs/reliability.md).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "Layout",
    "Mount",
    "appends_may_be_lost",
    "choose_layout",
    "mount_of",
    "parse_mountinfo",
]

Layout = Literal["auto", "shared", "segments"]
"""`capture_layout`: `shared` (one file per rollout, under `flock`), `segments` (one file
per rollout and writer process), or `auto` (segments where the mount can lose appends)."""

logger = logging.getLogger("model_call_capture.store")

MOUNTINFO = Path("/proc/self/mountinfo")
_NFS = frozenset({"nfs", "nfs4"})
_LOCAL_LOCKS = frozenset({"local_lock=all", "local_lock=flock"})
_NO_CROSS_HOST_LOCKS = frozenset({"9p", "beegfs"})
_CHOICES_MAX = 4096  # bound of the directories whose choice was logged
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
    fs = mount.fs_type
    if fs in _NFS:
        local = sorted(mount.options & (_LOCAL_LOCKS | {"nolock"}))
        return f"{fs} mount {mount.mount_point} with {','.join(local)}" if local else None
    if fs == "fuse" or fs.startswith("fuse."):
        return f"FUSE mount {mount.mount_point} ({fs}), whose locks are local to each host"
    if fs == "lustre" and "flock" not in mount.options:
        taken = sorted(mount.options & {"localflock", "noflock"}) or ["no flock option"]
        return f"lustre mount {mount.mount_point} with {','.join(taken)}"
    if fs in _NO_CROSS_HOST_LOCKS:
        return f"{fs} mount {mount.mount_point}, which takes no lock across hosts"
    return None


def choose_layout(root: Path, requested: Layout, mountinfo: Path | None = None) -> str:
    """The layout the store writes `root` in: `requested`, or for `auto` the mount's answer.

    `auto` gives `segments` where `appends_may_be_lost` names a reason, else `shared`
    (also when there is no mount table to read: not Linux). Logged once per directory:
    the choice of `auto` at INFO, a forced `shared` on such a mount as a WARNING.
    """
    if requested == "segments":
        return _logged(root, "segments", "capture_layout is segments", logging.INFO)
    try:
        table = (mountinfo or MOUNTINFO).read_text("utf-8", "replace")
        mount = mount_of(root, parse_mountinfo(table))
    except OSError:  # no /proc (not Linux): nothing to go by
        mount = None
    reason = None if mount is None else appends_may_be_lost(mount)
    if requested == "shared":
        if reason is not None:
            _log_once(
                root,
                logging.WARNING,
                "capture directory %s (%s): flock is local to each host there, so "
                "concurrent appends from several hosts to one rollout file can be lost "
                "silently; set capture_layout to auto or segments, or mount with locking "
                "(docs/reliability.md)",
                root,
                reason,
            )
        return "shared"
    if reason is None:
        where = "its filesystem's locks serialize writers" if mount else "no mount table"
        return _logged(root, "shared", where, logging.INFO)
    return _logged(root, "segments", reason, logging.INFO)


def _logged(root: Path, layout: str, reason: str, level: int) -> str:
    _log_once(
        root,
        level,
        "capture directory %s: writing the %s layout (%s; docs/reliability.md)",
        root,
        layout,
        reason,
    )
    return layout


def _log_once(root: Path, level: int, message: str, *args: object) -> None:
    """Log `message` the first time a directory's layout is chosen in this process."""
    key = os.path.realpath(root)
    with _warned_lock:
        if key in _warned:
            return
        if len(_warned) >= _CHOICES_MAX:
            _warned.clear()
        _warned.add(key)
    logger.log(level, message, *args)
