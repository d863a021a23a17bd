"""Open capture files kept between batches: a bounded per-process cache of descriptors.

A batch that finds its file's descriptor here skips the `open` and the `close` (and their
GIL hand-offs); everything else it does is unchanged: the exclusive `flock`, the checks on
the `fstat` taken under it (a file not ours is refused, a cleared file is reopened), one
write, the unlock, the fsync.

A descriptor belongs to whoever holds it: `take` removes it from the cache, so no two
threads ever use one descriptor (`flock` is per open file description: two threads of one
process on one descriptor would not exclude each other) and none is closed while in use.
`give_back` puts it back, closing the least recently used one past `_MAX`, or this one when
another thread gave one back for the same file meanwhile.

After `fork` the child drops what it inherited without using it (`_after_fork`): the
parent's descriptors share its open file descriptions, so a lock taken or released through
them in the child would be the parent's. Each entry also keeps the pid that opened it,
for a child forked some other way than `os.fork`.

A file renamed away keeps its descriptor: until that descriptor leaves the cache, the lines
of its rollout go on landing in the renamed file, not in a new file at the old name. A file
renamed *over* the capture name (another file, planted) leaves ours with no link: it is seen
under the lock (`st_nlink == 0`) and the name is opened again, as after `clear()`.
"""

from __future__ import annotations

import os
import threading
from typing import NamedTuple

__all__ = ["Held", "drop", "drop_all", "give_back", "take"]

_MAX = 32  # descriptors kept open per process


class Held(NamedTuple):
    """A kept descriptor and what it was when kept: an `fstat` that says otherwise means
    the number was closed and reused behind our back, so it is not ours any more."""

    fd: int
    dev: int
    ino: int
    pid: int


_held: dict[str, Held] = {}  # in use order: the least recently given back first
_lock = threading.Lock()


def take(path: str) -> Held | None:
    """The kept descriptor of `path`, now the caller's (None when there is none)."""
    with _lock:
        held = _held.pop(path, None)
    if held is not None and held.pid != os.getpid():
        return None  # inherited through a fork that ran no at-fork hook: never used, never closed
    return held


def give_back(path: str, fd: int, st: os.stat_result) -> None:
    """Keep `fd` (the open file `st` describes) for the next batch of `path`."""
    held = Held(fd, st.st_dev, st.st_ino, os.getpid())
    surplus: list[int] = []
    with _lock:
        if path in _held:
            surplus.append(fd)  # another thread kept one for this file meanwhile
        else:
            _held[path] = held
            while len(_held) > _MAX:
                surplus.append(_held.pop(next(iter(_held))).fd)
    for extra in surplus:
        os.close(extra)


def drop(path: str) -> None:
    """Close the kept descriptor of `path`, if any (its file is being unlinked)."""
    with _lock:
        held = _held.pop(path, None)
    if held is not None and held.pid == os.getpid():
        os.close(held.fd)


def drop_all() -> None:
    """Close every kept descriptor of this process."""
    with _lock:
        kept = list(_held.values())
        _held.clear()
    for held in kept:
        if held.pid == os.getpid():
            os.close(held.fd)


def _after_fork() -> None:
    """In a forked child: forget the parent's descriptors and close this process's copies.

    Closing a copy releases nothing of the parent's (its descriptors still refer to the
    open file descriptions); using one would.
    """
    global _lock
    _lock = threading.Lock()  # the parent may have forked while another thread held it
    kept = list(_held.values())
    _held.clear()
    for held in kept:
        try:
            os.close(held.fd)
        except OSError:  # pragma: no cover - closed behind our back in the parent
            pass


os.register_at_fork(after_in_child=_after_fork)
