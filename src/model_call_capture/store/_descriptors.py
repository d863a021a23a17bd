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


# In use order, the least recently given back first. Each step on it is one dict operation,
# which the GIL makes atomic: a descriptor is taken by one thread only, and closed by it.
_held: dict[str, Held] = {}


def take(path: str) -> Held | None:
    """The kept descriptor of `path`, now the caller's (None when there is none)."""
    held = _held.pop(path, None)  # one step under the GIL: no other thread gets it too
    if held is not None and held.pid != os.getpid():
        return None  # inherited through a fork that ran no at-fork hook: never used, never closed
    return held


def give_back(path: str, fd: int, st: os.stat_result) -> None:
    """Keep `fd` (the open file `st` describes) for the next batch of `path`."""
    held = Held(fd, st.st_dev, st.st_ino, os.getpid())
    if _held.setdefault(path, held) is not held:
        os.close(fd)  # another thread kept one for this file meanwhile
    elif len(_held) > _MAX:
        for oldest in list(_held)[: len(_held) - _MAX]:  # `list` copies the keys in one step
            evicted = _held.pop(oldest, None)
            if evicted is not None:  # not taken by another thread meanwhile
                os.close(evicted.fd)


def drop(path: str) -> None:
    """Close the kept descriptor of `path`, if any (its file is being unlinked)."""
    held = _held.pop(path, None)
    if held is not None and held.pid == os.getpid():
        os.close(held.fd)


def drop_all() -> None:
    """Close every kept descriptor of this process."""
    while _held:
        try:
            _, held = _held.popitem()
        except KeyError:  # taken by another thread meanwhile
            return
        if held.pid == os.getpid():
            os.close(held.fd)


def _after_fork() -> None:
    """In a forked child: forget the parent's descriptors and close this process's copies.

    Closing a copy releases nothing of the parent's (its descriptors still refer to the
    open file descriptions); using one would.
    """
    kept = list(_held.values())
    _held.clear()
    for held in kept:
        try:
            os.close(held.fd)
        except OSError:  # pragma: no cover - closed behind our back in the parent
            pass


os.register_at_fork(after_in_child=_after_fork)
