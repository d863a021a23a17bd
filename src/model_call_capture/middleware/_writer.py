"""The write handoff: each finished call's line is built and appended in a worker thread.

The event loop never builds, encodes or writes a line: `CaptureWriter.write` hands the call
to a thread and waits on a plain loop future for the append to be durable. A capture that
fails is logged once per rollout and marks the rollout incomplete where it can; it never
fails the call.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, cast

from ..contracts import CaptureLine
from ..redaction import Redaction
from ._line import CallFacts, build_line

__all__ = ["CaptureWriter", "FinishedCall", "LogOnce", "Store"]

_WRITE_THREADS = 32
_LOG_ONCE_LIMIT = 4096
_BIG_BODY = 8 << 20
"""Bodies from this size on: free memory is handed back before their line is encoded."""

logger = logging.getLogger("model_call_capture.middleware")


class Store(Protocol):
    """What the writer needs of a `CaptureStore`."""

    def append(self, rollout_id: str, line: CaptureLine) -> None:
        """Append one line durably to the rollout's capture file."""

    def mark_incomplete(self, rollout_id: str) -> None:
        """Record that a line of the rollout could not be written."""


class FinishedCall(Protocol):
    """What the writer needs of a call that ended (`_call.CapturedCall`)."""

    rollout_id: str

    @property
    def kept_bytes(self) -> int:
        """Decoded response bytes the capture kept."""

    def line_facts(self) -> CallFacts:
        """The facts the call's line is built from (called once, in the worker thread)."""

    def drop_buffers(self) -> None:
        """Let the captured bytes go (the line is built)."""

    def release(self) -> None:
        """Give the call's part of the memory budget back (the line is written, or failed)."""


class LogOnce:
    """The keys already logged (rollout ids), so a failing rollout logs once, not per call."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def first(self, key: str) -> bool:
        """True the first time `key` is seen (the memory is bounded: it forgets in bulk)."""
        with self._lock:
            if key in self._seen:
                return False
            if len(self._seen) >= _LOG_ONCE_LIMIT:
                self._seen.clear()
            self._seen.add(key)
            return True


class CaptureWriter:
    """Builds, redacts and appends the lines of finished calls in worker threads."""

    def __init__(
        self,
        store: Store | None,
        redact: Redaction | None,
        on_durable: Callable[[str, CaptureLine], None] | None = None,
    ) -> None:
        self.store = store
        self.redact = redact
        self.on_durable = on_durable
        """Told each line (redacted) once it is durable; must not block or raise (`otlp.LiveSpans.submit`)."""
        # Threads are started on demand; the pool only bounds how many writes run at once.
        self._executor = ThreadPoolExecutor(
            max_workers=_WRITE_THREADS, thread_name_prefix="mcc-capture"
        )
        self._failed_rollouts = LogOnce()

    async def write(self, call: FinishedCall) -> None:
        """Build and append the call's line in a worker thread; never raises.

        The thread resolves a plain loop future when it is done (cheaper than
        `run_in_executor`'s chained futures). If the request is cancelled while the line is
        being written, only the wait is cancelled: the write completes in its thread.
        """
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        try:
            self._executor.submit(self._write_blocking, call, loop, done)
        except RuntimeError:  # executor shut down (interpreter exit): write in place
            self._write_blocking(call, None, None)
            return
        await done

    def _write_blocking(
        self,
        call: FinishedCall,
        loop: asyncio.AbstractEventLoop | None,
        done: asyncio.Future[None] | None,
    ) -> None:
        assert self.store is not None
        durable: CaptureLine | None = None
        try:
            line = build_line(call.line_facts())
            call.drop_buffers()
            if self.redact is not None:
                line = self.redact(line)
            if call.kept_bytes >= _BIG_BODY:
                _release_free_memory()
            self.store.append(call.rollout_id, line)
            durable = line
        except Exception as exc:
            self.failed(call.rollout_id, exc)
        finally:
            try:
                call.release()  # before the client can see the end: the budget is free by then
            finally:
                if loop is not None:
                    try:
                        loop.call_soon_threadsafe(_resolve, done)
                    except RuntimeError:  # the loop is closed: nobody waits any more
                        pass
        if durable is not None and self.on_durable is not None:
            self.on_durable(call.rollout_id, durable)  # after the call is released: no wait

    def failed(self, rollout_id: str, exc: Exception) -> None:
        """A line of the rollout was not written: log once, mark the rollout incomplete."""
        assert self.store is not None
        first = self._failed_rollouts.first(rollout_id)
        if first:
            logger.error(
                "model-call capture failed for rollout %r (the call itself was served; "
                "further failures for this rollout are not logged): %s: %s",
                rollout_id,
                type(exc).__name__,
                exc,
            )
        try:
            self.store.mark_incomplete(rollout_id)
        except Exception as marker_exc:
            if first:
                logger.error("could not mark rollout %r incomplete: %s", rollout_id, marker_exc)

    def broken(self, rollout_id: str, exc: Exception) -> None:
        """A bug or surprise inside the capture of one call: log once, keep serving."""
        if self._failed_rollouts.first(rollout_id):
            logger.error("model-call capture error for rollout %r: %r", rollout_id, exc)


def _resolve(done: asyncio.Future[None] | None) -> None:
    if done is not None and not done.done():  # a cancelled wait is already done
        done.set_result(None)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return cast("Callable[[int], int]", ctypes.CDLL(None).malloc_trim)
    except (AttributeError, OSError):  # not glibc
        return None


def _release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc; elsewhere a no-op).

    Building the line of a big stream joins its text fragments and frees them, but the C
    allocator keeps those pages, and the encoded line then takes new ones beside them,
    which raises the peak memory of a big call for nothing. The trim is cheap next to the
    time such a body took to arrive (docs/performance.md has the figures).
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
