"""The capture memory budget: a bound on the bytes all captures in flight hold together.

`capture_max_bytes` bounds one call; nothing bounded the sum, so many large streams at once
could take the model server down. Every call of a middleware draws on one `MemoryBudget`
(`capture_memory_budget_bytes`; one middleware per process, a model server or `mcc serve`,
makes it the process's bound). Each side of a call (request, response) holds a `BudgetShare`:
the decoded bytes it keeps are counted once per copy the capture makes of them (`weight`:
the body, the text written from it, the reassembly of a stream), and the share reserves
that from the budget a block at a time. The per-chunk path only compares the bytes kept
with the share's `limit`, as it compared them with the byte cap before; the budget's lock
is taken once per block and once when the call's line has been written.

When a share cannot grow, capture degrades and the reply is untouched: a stream's raw
text is dropped first (its copies given back to the share), then the payload is cut
(`capture_cut`), each with a `memory_budget` gap on the line saying so.

Only what is in memory counts. A stream's raw text counts its copies while it is all in
memory (`STREAM_RAW_WEIGHT`); once it passes `_raw.MEMORY_BYTES` and is spilled to its
temporary file, the share counts the reassembly once per byte (`STREAM_WEIGHT`) plus a
`fixed` `MEMORY_BYTES` for the part still in memory, and the spilled bytes nothing. When
the line needs the spilled text (a failed stream, or `always`), reading it back asks the
share for its copies again; if the budget cannot give them, the raw text is dropped
with a `memory_budget` gap, as it would have been while the stream ran.
"""

from __future__ import annotations

import threading

from ..contracts import ObservationGap

__all__ = [
    "BLOCK",
    "BODY_WEIGHT",
    "STREAM_RAW_WEIGHT",
    "STREAM_WEIGHT",
    "BudgetShare",
    "MemoryBudget",
    "budget_gap",
]

BLOCK = 64 * 1024
"""Decoded bytes a share asks for at least, so the budget's lock is rare on the chunk path."""

BODY_WEIGHT = 2
"""Copies of a request or JSON response body: the bytes, then the text written from them."""
STREAM_WEIGHT = 1
"""Copies of a stream without its raw text: the reassembly (a stream holds no more)."""
STREAM_RAW_WEIGHT = 3
"""Copies of a stream whose raw text is kept: the reassembly, the text, the text written."""


class BudgetShare:
    """One side of one call's part of the budget; `limit` is what it may keep, in bytes."""

    __slots__ = ("fixed", "held", "limit", "open", "weight")

    def __init__(self, weight: int) -> None:
        self.weight = weight
        """Copies the capture makes of each kept byte (>= 1)."""
        self.fixed = 0
        """Bytes held besides those copies, whatever is kept (a spilled text's memory part)."""
        self.held = 0
        """Bytes reserved from the budget (`fixed` plus `limit` times `weight`, rounded down)."""
        self.limit = 0
        """Decoded bytes this side may keep in all without asking the budget again."""
        self.open = True
        """False once released: a late chunk can no longer take from the budget."""

    def reweigh(self, weight: int, fixed: int = 0) -> None:
        """Other copies from now on (a raw text dropped, spilled or read back).

        With fewer copies the same reservation keeps more; with more, `limit` falls below
        the bytes kept until `MemoryBudget.grow` reserves the difference.
        """
        self.weight = weight
        self.fixed = fixed
        self.limit = max(self.held - fixed, 0) // weight


class MemoryBudget:
    """Bytes the captures of one middleware may hold at once; thread-safe.

    `limit` 0 keeps no payload at all. `used` and `peak` are what shares hold now and held
    at most (the figures the tests and docs report).
    """

    __slots__ = ("_lock", "limit", "peak", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        """`capture_memory_budget_bytes`."""
        self.used = 0
        """Bytes reserved by open shares."""
        self.peak = 0
        """The most `used` has been."""
        self._lock = threading.Lock()

    def grow(self, share: BudgetShare, kept: int, more: int) -> bool:
        """Let `share` keep `more` bytes beyond the `kept` it holds; False when the budget is spent.

        Reserves at least a block more than it needs when the budget has it, so the next
        chunks fit without coming back.
        """
        need = (kept + more) * share.weight + share.fixed - share.held
        if need <= 0:
            share.limit = (share.held - share.fixed) // share.weight
            return True
        want = max(need, BLOCK * share.weight)
        with self._lock:
            free = self.limit - self.used
            if not share.open or free < need:
                return False
            got = min(want, free)
            self.used += got
            self.peak = max(self.peak, self.used)
            share.held += got
        share.limit = (share.held - share.fixed) // share.weight
        return True

    def release(self, share: BudgetShare) -> None:
        """Give back everything `share` holds; it can take nothing more."""
        with self._lock:
            self.used -= share.held
            share.held = 0
            share.open = False
        share.limit = 0


def budget_gap(what: str) -> ObservationGap:
    """The `memory_budget` gap of a line: `what` the capture gave up because the budget was spent."""
    return ObservationGap(
        code="memory_budget",
        detail=f"{what}: the capture memory budget (capture_memory_budget_bytes) was spent",
    )
