"""`flock` on capture files, and what the store does on filesystems that have none."""

from __future__ import annotations

import errno
import fcntl
import logging

__all__ = ["NO_LOCKS", "flock", "try_exclusive"]

logger = logging.getLogger(__name__)

NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS})
"""The errnos of a filesystem that has no `flock`."""
_warned_no_locks = False


def flock(fd: int, operation: int) -> None:
    """`flock`, or nothing on a filesystem that has no locks (some NFS and FUSE mounts).

    Without locks every append is still one `O_APPEND` write of a whole line, which a
    local filesystem does not interleave; only writers on other hosts of a shared
    filesystem lose their serialization, which the store promises only "when the shared
    filesystem supports it". Failing the capture instead would lose every call. Warned once.
    """
    global _warned_no_locks
    try:
        fcntl.flock(fd, operation)
    except OSError as exc:
        if exc.errno not in NO_LOCKS:
            raise
        if not _warned_no_locks:
            _warned_no_locks = True
            logger.warning(
                "capture files: the filesystem does not support flock (%s); appends from "
                "several hosts to one rollout file are not serialized",
                exc.strerror,
            )


def try_exclusive(fd: int) -> bool:
    """Take the exclusive `flock` if no other descriptor holds it (as `flock` does on a
    filesystem without locks): False, without waiting, when another holds it."""
    try:
        flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
