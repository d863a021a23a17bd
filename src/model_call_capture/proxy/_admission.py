"""Which client connections `mcc serve` keeps open, decided when each is accepted.

uvicorn's `limit_concurrency` acts once a request head is complete; a connection that
never completes one holds a descriptor until the head deadline, so a client that opens
thousands of half-sent connections at once used to take every descriptor, and accept then
failed for everyone. Here every accepted connection is counted at once against a cap
that the descriptor limit can serve (`descriptor_cap`): past it the connection that has
waited longest for a request head is closed (a half-sent one, or one idle between two
requests), so a client that sends its request is served; only when every open connection
is busy with a request is the new one refused (503, closed).

When accept fails anyway (descriptors taken by something the cap does not count),
`asyncio` would log a traceback per failed accept, thousands a second, and stop accepting
for a second each time. `Admission` takes those failures instead: it logs them once per
interval with a count (`Tally`), closes the oldest waiting connection for each so that
descriptors come back, and lowers the cap to the connections open at the failure, less
one accept batch, so that the next connections find room; the cap comes back once an
interval has passed without a failure.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
from typing import Any, Protocol

__all__ = [
    "FDS_PER_CONNECTION",
    "Admission",
    "Tally",
    "accept_batch",
    "descriptor_cap",
    "descriptor_limit",
    "descriptors_needed",
]

logger = logging.getLogger("model_call_capture.proxy")

FDS_PER_CONNECTION = 3
"""Descriptors a proxied call can hold: the client's socket, the upstream's, and a spilled
raw stream (`middleware/_raw.py`)."""
_SPARE_FDS = 64
"""The server's own: standard streams, the event loop, the listener, the store's writes."""
_MAX_BATCH = 2048
"""uvicorn's default listen backlog, which is also how many connections asyncio accepts in
one go before the protocol of any of them has run."""
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
REPORT_INTERVAL_S = 10.0
"""At most one log line per interval for each kind of event counted here."""


def accept_batch(limit: int) -> int:
    """How many connections asyncio accepts in one go for a descriptor limit: a 32nd of
    it, between 8 and 2048 (each batch is held until the next turns of the event loop)."""
    return max(8, min(_MAX_BATCH, limit // 32))


def descriptor_cap(limit: int) -> int:
    """The open connections a descriptor limit serves (0 when it serves none).

    Room is kept for the server's own descriptors and for three batches of accepted
    connections not yet counted: asyncio makes the protocol of a connection one turn of the
    event loop after it accepted it, and closes a socket one turn after it is told to, and
    it accepts a batch at every turn while connections wait.
    """
    return max(0, (limit - _SPARE_FDS - 3 * accept_batch(limit)) // FDS_PER_CONNECTION)


def descriptors_needed(connections: int) -> int:
    """A descriptor limit whose `descriptor_cap` is at least `connections`."""
    return FDS_PER_CONNECTION * connections + _SPARE_FDS + 3 * _MAX_BATCH


def descriptor_limit() -> int:
    """This process's soft limit on open descriptors (a large number when unlimited)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 1 << 30 if soft == resource.RLIM_INFINITY else soft


class Tally:
    """Counts one kind of event and logs it at most once per `interval_s`.

    The first event after a quiet interval is logged at once; those that follow are
    counted and logged as one line at the end of each interval that had any.
    """

    def __init__(self, what: str, *, interval_s: float = REPORT_INTERVAL_S) -> None:
        self.what = what
        self.interval_s = interval_s
        self.total = 0
        """Events since the start."""
        self._pending = 0
        self._detail = ""
        self._timer: asyncio.TimerHandle | None = None

    def add(self, loop: asyncio.AbstractEventLoop, detail: str) -> None:
        """Count one event (`detail` says the latest one's circumstances)."""
        self.total += 1
        self._detail = detail
        if self._timer is None:
            logger.warning("%s (%s)", self.what, detail)
            self._timer = loop.call_later(self.interval_s, self._report, loop)
        else:
            self._pending += 1

    def _report(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._pending:
            self._timer = None
            return
        logger.warning(
            "%s: %d times in the last %g s (%s)",
            self.what,
            self._pending,
            self.interval_s,
            self._detail,
        )
        self._pending = 0
        self._timer = loop.call_later(self.interval_s, self._report, loop)


class Waiting(Protocol):
    """A connection as `Admission` sees it."""

    def waiting_for_head(self) -> bool:
        """True while no request is in progress (a head not yet complete, or idle)."""

    def shed(self) -> None:
        """Close the connection now."""


class Admission:
    """The open connections of one server, and the order in which they began waiting.

    `cap` is the most connections kept open. A connection is `admit`ted when accepted,
    `wait`s from its opening and again after each response, and is `release`d when closed.
    """

    def __init__(self, cap: int, *, batch: int = 16) -> None:
        if cap < 1:
            raise ValueError("the connection cap must be at least 1")
        self.max_cap = cap
        """The cap asked for."""
        self.cap = cap
        """The cap now: lower than `max_cap` for an interval after an accept failure."""
        self._batch = batch
        self._failed_at = 0.0
        self._open = 0
        # Insertion-ordered: the first is the connection that began waiting longest ago.
        # Entries of connections now busy with a request are skipped (and dropped) lazily.
        self._waiting: dict[Waiting, None] = {}
        self._counted: set[Waiting] = set()
        self.closed_waiting = Tally(
            "closed the connections that waited longest for a request head: the connection cap was reached"
        )
        self.refused = Tally(
            "refused new connections: every open connection is busy with a request"
        )
        self.accept_failed = Tally("accepting a connection failed")

    def admit(self, loop: asyncio.AbstractEventLoop, conn: Waiting) -> bool:
        """Count a new connection; False when it must be refused (all others busy)."""
        if self.cap < self.max_cap and loop.time() - self._failed_at > REPORT_INTERVAL_S:
            self.cap = self.max_cap
        while self._open >= self.cap:
            if not self._shed_oldest():
                self.refused.add(loop, f"{self._open} open, the cap is {self.cap}")
                return False
            self.closed_waiting.add(loop, f"{self.cap} open connections")
        self._open += 1
        self._counted.add(conn)
        return True

    def wait(self, conn: Waiting) -> None:
        """`conn` begins waiting for a request head (it becomes the newest waiting)."""
        self._waiting.pop(conn, None)
        self._waiting[conn] = None

    def release(self, conn: Waiting) -> None:
        """`conn` is closed."""
        self._waiting.pop(conn, None)
        if conn in self._counted:
            self._counted.discard(conn)
            self._open -= 1

    def _shed_oldest(self) -> bool:
        while self._waiting:
            conn = next(iter(self._waiting))
            del self._waiting[conn]
            if conn.waiting_for_head():
                # Uncounted now: its descriptor is freed one turn later, which the room
                # of `descriptor_cap` covers.
                self.release(conn)
                conn.shed()
                return True
        return False

    def exception_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """An `asyncio` loop exception handler: accept failures counted, the rest as usual.

        asyncio (3.11) reports each failed accept here and tries again a second later;
        each failure closes the oldest waiting connection and lowers the cap (module
        docstring).
        """
        exc = context.get("exception")
        if (
            isinstance(exc, OSError)
            and exc.errno in _OUT_OF_DESCRIPTORS
            and "accept" in str(context.get("message", ""))
        ):
            now = loop.time()
            # Once per asyncio retry (a second): a batch fails in a row, and the connections
            # each failure closes are not a measure of the room.
            if now - self._failed_at >= 1.0:
                self.cap = max(1, min(self.cap, self._open - self._batch))
            self._failed_at = now
            detail = f"{exc.strerror}; open-file limit {descriptor_limit()}; connection cap {self.cap} for now"
            self.accept_failed.add(loop, detail)
            self._shed_oldest()
            return
        loop.default_exception_handler(context)
