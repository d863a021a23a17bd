"""The response side of a captured call: its body as the capture keeps it (no ASGI here).

`ResponseCapture` is fed the response's body bytes as they pass and keeps what the line
needs: a JSON body decoded (`Content-Encoding`) up to `capture_max_bytes`; a stream
reassembled incrementally (`StreamReassembler`), its raw SSE text kept as
`capture_stream_raw` asks (`never`; `always`, up to the cap; or `on_failure`, the default:
up to the cap while the stream runs, used only when it went wrong), at most `MEMORY_BYTES`
of it in memory and the rest in an anonymous temporary file (`_raw`).

Bounds. Past the cap the capture stops (`response_cut`); the client still gets every byte
(`_call` forwards them). All calls together stay within the memory budget (`_budget`,
which counts what is in memory): past it a stream's raw text is dropped first, then the
payload is cut, each with a `memory_budget` gap. The per-chunk path only compares the
bytes kept with `limit`; `_beyond` runs once per block.

Batches. After a stream's first content, the chunks of plain SSE text that cannot end it
(the marker search, `_ends`) are kept in `pending` (`batch`) and reassembled together, up
to `BATCH_BYTES` and what fits below `limit`, when a chunk that may end the stream comes
(`take`) or at the end.

Nothing here raises into the request: an undecodable body or a bug in a stream state
marks the capture failed (with a gap, or reported through `report`), and the response
goes on.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable

from .._asgi import Message
from ..contracts import Dialect, ObservationGap, StreamRawPolicy
from ..reassembly import StreamReassembler
from ._budget import (
    BODY_WEIGHT,
    STREAM_RAW_WEIGHT,
    STREAM_WEIGHT,
    BudgetShare,
    MemoryBudget,
    budget_gap,
)
from ._decoding import (
    ContentDecoder,
    DecodeError,
    coding_names,
    content_encodings,
    decode_chain,
    decoders_for,
)
from ._ends import EndMarkerSearch
from ._line import CallFacts
from ._raw import MEMORY_BYTES, RawText, read_back, spill_gap

__all__ = ["BATCH_BYTES", "ResponseCapture"]

BATCH_BYTES = 16384
"""Most stream bytes kept in `pending` before they are reassembled in one batch."""


class ResponseCapture:
    """The response body of one call, decoded, reassembled when a stream, within its bounds."""

    __slots__ = (
        "batch_room",
        "body",
        "budget",
        "capture_failed",
        "captured",
        "decoders",
        "dialect",
        "ends",
        "first_content_at",
        "gaps",
        "keep_raw",
        "limit",
        "max_bytes",
        "pending",
        "raw",
        "reassembler",
        "report",
        "response_cut",
        "searchable",
        "share",
        "sized",
        "stream",
    )

    def __init__(
        self,
        dialect: Dialect,
        *,
        max_bytes: int,
        keep_raw: StreamRawPolicy,
        budget: MemoryBudget,
        report: Callable[[Exception], None],
    ) -> None:
        self.dialect = dialect
        self.max_bytes = max_bytes
        """`capture_max_bytes`: the most decoded bytes kept."""
        self.keep_raw = keep_raw
        self.budget = budget
        self.report = report
        """Told of a bug or surprise inside the capture (logged once per rollout)."""
        self.share = BudgetShare(BODY_WEIGHT)
        self.stream = False
        """True for a `text/event-stream` response."""
        self.sized = False
        """True when the response declared its `content-length`."""
        self.decoders: list[ContentDecoder] = []
        """The response's content-codings, outermost last (none: the bytes are the body)."""
        self.body = bytearray()
        """The decoded body of a response that is not a stream."""
        self.reassembler: StreamReassembler | None = None
        self.raw: RawText | None = None
        """The stream's raw SSE text while it is kept (in memory up to `MEMORY_BYTES`)."""
        self.captured = 0
        """Decoded bytes kept so far."""
        self.limit = 0
        """Decoded bytes kept before `_beyond` must look (the cap, the budget, raw text in memory)."""
        self.response_cut = False
        self.capture_failed = False
        self.gaps: list[ObservationGap] = []
        """What the capture left out, and why (undecodable, the memory budget)."""
        self.first_content_at: float | None = None
        """Monotonic time of the first body byte that is not an SSE comment (None before)."""
        self.searchable = False
        """True while a stream is followed in its plain SSE text, so that the marker search
        (`ends`) can tell which chunks may end it; not for encoded bytes, a cut or failed capture."""
        self.ends = EndMarkerSearch(dialect)
        self.pending: list[bytes] = []
        """Chunks sent but not yet reassembled (`batch`); `take` feeds them first."""
        self.batch_room = 0
        """Bytes `pending` may still take: at most `BATCH_BYTES` and what fits below `limit`."""

    def start(self, headers: Iterable[tuple[bytes, bytes]], *, stream: bool, sized: bool) -> None:
        """The response started: how its body is encoded, and whether it is a stream."""
        self.sized = sized
        encodings = content_encodings(headers)
        decoders = decoders_for(encodings)
        if decoders is None:  # an encoding we cannot decode: forward, capture no body
            self.undecodable(f"content-encoding {coding_names(encodings)} is not supported")
        else:
            self.decoders = decoders
        if stream:
            self.stream = True
            self.reassembler = StreamReassembler(self.dialect)
            self.raw = RawText() if self.keep_raw != "never" else None
            self.share.weight = STREAM_WEIGHT if self.raw is None else STREAM_RAW_WEIGHT
            # Markers can be looked for only in the SSE text itself, not in encoded bytes.
            self.searchable = not self.decoders and not self.capture_failed

    def batch(self, message: Message) -> bool:
        """Keep a stream chunk that cannot end the stream for the next batch; False for any other.

        The usual chunk after the first content of an unsized stream: one marker search
        (`EndMarkerSearch`); its bytes are kept before it goes out (the record keeps what was sent),
        to be reassembled with the next chunk that may end the stream, or at the end. What
        is pending is fed first when this chunk would not fit in `batch_room`, so a batch
        stays within what the cap, the budget and the raw text's memory part allow.
        """
        if not self.searchable or self.first_content_at is None or self.sized:
            return False
        if message["type"] != "http.response.body" or not message.get("more_body", False):
            return False
        body = message.get("body", b"")
        if not body:
            return False
        data = body if type(body) is bytes else bytes(body)  # a copy of anything mutable
        if self.ends.may_end(data):
            return False
        if len(data) > self.batch_room and self.pending:
            self.take(b"")
        self.pending.append(data)
        self.batch_room -= len(data)
        return True

    def take(self, body: bytes) -> None:
        """Capture one body chunk (wire bytes), after the chunks still pending."""
        if pending := self.pending:
            pending.append(bytes(body))
            body = b"".join(pending)
            pending.clear()
        if body:
            self.feed(bytes(body), None)

    def feed(self, data: bytes, now: float | None) -> None:
        """Decode, count and keep body bytes (`now`: the monotonic time they passed, if known)."""
        if self.first_content_at is None and (
            self.reassembler is None or self.capture_failed or self.response_cut
        ):
            self.first_content_at = time.monotonic() if now is None else now
        if self.response_cut or self.capture_failed:
            return
        try:
            if self.decoders:
                data = decode_chain(self.decoders, data, self.max_bytes - self.captured + 1)
            if len(data) > self.limit - self.captured:
                data = self._beyond(data)
            self.captured += len(data)
            self.batch_room = min(self.limit - self.captured, BATCH_BYTES)
            if self.reassembler is not None:
                if self.raw is not None:  # first: a batch the reassembler fails on stays in it
                    self.raw += data
                self.reassembler.feed(data)
                if self.first_content_at is None and self.reassembler.content_seen:
                    self.first_content_at = time.monotonic() if now is None else now
            else:
                self.body += data
        except DecodeError as exc:
            self.undecodable(f"content-encoding does not decode: {exc}")
        except Exception as exc:  # a bug in a stream state
            self.broken(exc)

    def _beyond(self, data: bytes) -> bytes:
        """The part of `data` the cap and the memory budget let the capture keep.

        Past the cap the response is cut; a raw stream text about to pass `MEMORY_BYTES` in
        memory is spilled (`_raw`). When the budget cannot grow, a raw stream text is
        dropped first, then the response is cut, each with a `memory_budget` gap.
        """
        kept = self.captured
        if kept + len(data) > self.max_bytes:
            data = data[: self.max_bytes - kept]
            self.response_cut = True
            self.searchable = False
        if (raw := self.raw) is not None and len(raw) + len(data) > MEMORY_BYTES:
            try:  # the part in memory goes to the file; then only it counts (`_budget`)
                raw.spill()
                self.share.reweigh(STREAM_WEIGHT, MEMORY_BYTES)
            except OSError as exc:
                self._drop_raw()
                self.gaps.append(spill_gap(exc, kept))
        budget = self.budget
        if not budget.grow(self.share, kept, len(data)) and self.raw is not None:
            self._drop_raw()
            self._gap("response_raw: the raw stream text was dropped after {kept} bytes")
        if self.share.limit >= kept + len(data) or budget.grow(self.share, kept, len(data)):
            self.limit = min(self.max_bytes, self.share.limit)
            if self.raw is not None:  # come back here before the memory part passes its bound
                self.limit = min(self.limit, kept + MEMORY_BYTES - len(self.raw))
            return data
        self.response_cut = True
        self.searchable = False
        self._gap("response: cut after {kept} bytes")
        return data[: max(self.share.limit - kept, 0)]

    def _drop_raw(self) -> None:
        raw, self.raw = self.raw, None
        if raw is not None:
            raw.close()
            self.share.reweigh(STREAM_WEIGHT)

    def _gap(self, what: str) -> None:
        self.gaps.append(budget_gap(what.format(kept=self.captured)))

    def undecodable(self, why: str) -> None:
        """The body cannot be decoded: capture none of it, and say why."""
        self.capture_failed = True
        self.searchable = False
        self.gaps.append(ObservationGap(code="response_undecodable", detail=why))

    def broken(self, exc: Exception) -> None:
        """A bug or surprise inside the capture: capture no more of the body, and report it."""
        self.capture_failed = True
        self.searchable = False
        self.report(exc)

    def terminal_seen(self) -> bool:
        """True once the stream's terminal event was reassembled."""
        try:
            return self.reassembler is not None and self.reassembler.terminal is not None
        except Exception as exc:
            self.broken(exc)
            return False

    # -- after the end (the writer's worker thread) -------------------------------------

    def fill(self, facts: CallFacts) -> None:
        """Put what was captured of the response into the line's `facts`."""
        capture_failed = self.capture_failed
        if self.stream and not capture_failed and self.reassembler is not None:
            try:
                facts.stream_result = self.reassembler.finish()
            except Exception as exc:
                self.report(exc)
                capture_failed = True
        facts.stream = self.stream
        facts.body = self.body
        if self.raw is not None:
            facts.raw = functools.partial(read_back, self.raw, self.budget, self.share)
        facts.response_cut = self.response_cut
        facts.capture_failed = capture_failed

    def drop_buffers(self) -> None:
        """Let the captured bytes go: the line is built from them."""
        self._drop_raw()
        self.body = bytearray()
        self.reassembler = None

    def release(self) -> None:
        """Give the response's part of the memory budget back (its line is written or failed)."""
        self._drop_raw()  # the spill file is closed on every path
        self.budget.release(self.share)
