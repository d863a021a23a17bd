"""The request side of a captured call: its body as the capture keeps it.

The app receives every request message unchanged; the tee keeps a copy of the body,
decoded when the request says `Content-Encoding` (gzip, deflate, br, as for responses and
with the same bound: a decoder stops once its output passes the cap), up to
`capture_max_bytes` and within the memory budget. A body whose encoding cannot be decoded
(unknown, `zstd`, or corrupt) is not kept at all: its compressed bytes are no use for
training and cannot be redacted; the line says why in a `request_undecodable` gap. The tee sees what the app reads: an app
that answers before it read the whole body (a body it never needed) leaves the rest
unrecorded, and the line says so in a `request_unread` gap.

The request also says which client session it belongs to: `client_session_id` is the
value of the `x-session-id` header when exactly one distinct non-empty value was sent, as
NeMo Gym 0.7.0 reads it (several different values, or none: null). It is correlation
evidence the client declares, not authentication. A value over `MAX_SESSION_ID_BYTES` is
dropped with a `field_dropped` gap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..contracts import ObservationGap
from ._budget import BODY_WEIGHT, BudgetShare, MemoryBudget, budget_gap
from ._decoding import (
    ContentDecoder,
    DecodeError,
    coding_names,
    content_encodings,
    decode_chain,
    decoders_for,
)
from ._line import CallFacts

__all__ = ["MAX_SESSION_ID_BYTES", "RequestTee", "client_session_id"]

SESSION_HEADER = b"x-session-id"
"""The request header a client names its session in (NeMo Gym's)."""
MAX_SESSION_ID_BYTES = 1024
"""Longest `x-session-id` value kept: an id, not a payload."""


def client_session_id(
    headers: Iterable[tuple[bytes, bytes]] | None,
) -> tuple[str | None, ObservationGap | None]:
    """(the session id the request declares, or None; a gap when a value was refused).

    Exactly one distinct non-empty `x-session-id` value gives that value (latin-1, as
    ASGI header bytes are); several distinct values give None, as in NeMo Gym, and so do
    empty ones. A value longer than `MAX_SESSION_ID_BYTES` gives None and a gap.
    """
    values: set[bytes] = set()
    for name, value in headers or ():
        if (
            isinstance(name, bytes | bytearray)
            and isinstance(value, bytes | bytearray)
            and value
            and bytes(name).lower() == SESSION_HEADER
        ):
            values.add(bytes(value))
            if len(values) > 1:
                return None, None
    if not values:
        return None, None
    (value,) = values
    if len(value) > MAX_SESSION_ID_BYTES:
        detail = f"client_session_id: the x-session-id value has {len(value)} bytes, more than {MAX_SESSION_ID_BYTES}"
        return None, ObservationGap(code="field_dropped", detail=detail)
    return value.decode("latin-1"), None


def _declares_body(headers: Iterable[tuple[bytes, bytes]] | None) -> bool:
    for name, value in headers or ():
        if name == b"transfer-encoding":
            return True
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
    return False


class RequestTee:
    """The request body of one call, decoded, up to the cap and within the budget."""

    __slots__ = (
        "body",
        "budget",
        "complete",
        "cut",
        "decoders",
        "encoding",
        "expected",
        "gaps",
        "limit",
        "max_bytes",
        "share",
    )

    def __init__(
        self, headers: Iterable[tuple[bytes, bytes]] | None, max_bytes: int, budget: MemoryBudget
    ) -> None:
        self.body = bytearray()
        """The decoded body kept so far."""
        self.cut = False
        """True once the body was longer than the cap or the budget allowed."""
        self.max_bytes = max_bytes
        """`capture_max_bytes`."""
        self.budget = budget
        self.share = BudgetShare(BODY_WEIGHT)
        self.limit = 0
        """Bytes the body may reach without asking the budget (at most the cap)."""
        self.gaps: list[ObservationGap] = []
        """Why the body is not all there (undecodable, the memory budget)."""
        self.complete = False
        """True once the app received the body's last message."""
        self.expected = _declares_body(headers)
        """True when the request says it has a body (`Content-Length` over 0, or chunked)."""
        encodings = content_encodings(headers)
        self.encoding = coding_names(encodings)
        self.decoders: list[ContentDecoder] | None = decoders_for(encodings)
        if self.decoders is None:
            self._undecodable("is not supported")

    def take_message(self, message: Mapping[str, Any]) -> None:
        """Keep the body of one `http.request` message; the last one completes the body."""
        self.take(message.get("body", b""))
        if not message.get("more_body", False):
            self.complete = True

    def take(self, chunk: bytes) -> None:
        """Keep the next chunk of the body as received (still content-encoded)."""
        if self.cut or self.decoders is None or not chunk:
            return
        data = chunk
        if self.decoders:
            bound = self.max_bytes - len(self.body) + 1
            try:
                data = decode_chain(self.decoders, data, bound)
            except DecodeError as exc:
                self._undecodable(f"does not decode: {exc}")
                return
        if len(data) > self.limit - len(self.body):
            data = self._beyond(data)
        self.body += data

    def _beyond(self, data: bytes) -> bytes:
        """The part of `data` that fits the cap and the budget; marks the body cut otherwise."""
        kept = len(self.body)
        if kept + len(data) > self.max_bytes:
            data = data[: self.max_bytes - kept]
            self.cut = True
        if self.budget.grow(self.share, kept, len(data)):
            self.limit = min(self.max_bytes, self.share.limit)
            return data
        self.cut = True
        self.gaps.append(budget_gap(f"request: cut after {kept} bytes"))
        return data[: max(self.limit - kept, 0)]

    def _undecodable(self, why: str) -> None:
        self.decoders = None
        self.body = bytearray()
        self.gaps.append(
            ObservationGap(
                code="request_undecodable", detail=f"content-encoding {self.encoding} {why}"
            )
        )

    def unread(self) -> list[ObservationGap]:
        """A `request_unread` gap when the app answered before it read the whole body."""
        if not self.expected or self.complete:
            return []
        detail = "the app answered before it read the whole request body"
        return [ObservationGap(code="request_unread", detail=detail)]

    def fill(self, facts: CallFacts) -> None:
        """Put what was captured of the request into the line's `facts` (after the end)."""
        facts.request_body = self.body
        facts.request_cut = self.cut

    def release(self) -> None:
        """Give the body's memory back to the budget (its line is written)."""
        self.body = bytearray()
        self.budget.release(self.share)
