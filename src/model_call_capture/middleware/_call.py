"""One captured call: the tee of its body and the hold of its end until its line is durable.

The client gets every message the app sends, unchanged and in order, as it comes (same
bytes, no buffering); the capture reads along. The request body is teed from `receive`, the
response from `send`; a stream is reassembled incrementally (`StreamReassembler`) as it passes.

When the line is written (the durability promise). A client that saw the end of a
response can rely on its line being on disk, so the end waits for the write:

- a JSON reply: the final body message (`more_body` false, or the message that completes
  a `content-length` body; the start itself for `content-length: 0`) is forwarded only
  after the line is durable; every earlier message goes out at once;
- a stream: every chunk goes out as it arrives (until the first token each is reassembled
  just after; then the chunks that cannot complete the terminal event, `_ends`, are
  reassembled in batches) until the chunk that completes the dialect's terminal event. That
  chunk is held (the app is not blocked) until the app's next response message or until the
  app returns or raises, whichever comes first; then the line is written and the held chunk
  is released, followed by that next message. Waiting for the next message rather than
  writing at the terminal chunk lets the record see how the call really ended (an app that
  raises right after the terminal event is recorded as `exception`, with the complete
  reconstruction), and it costs nothing in practice: apps send the closing message right
  after the terminal event. Waiting for the app to return instead would hold the end of
  every response while background tasks run (Starlette runs them after the response, inside
  the app call). An app that stalls after the terminal event without closing the response
  also stalls the SDK clients, which read a stream to its end. Past the byte cap (below) the
  middleware no longer sees terminal events, so only the closing message waits for the line.

`completed_at` is therefore the moment the app finished the response (its closing
message, or the message after the terminal event), returned, or raised, whichever came
first; `latency_ms` is measured to the same moment on the monotonic clock.

Failures. An exception from the app is recorded with the status and body it carries when
no response had started (see `_outcome.classify_exception`), and the partial or complete
reconstruction, then re-raised. A client that disconnected before the response ended
(`http.disconnect`, or a `send` that fails with `OSError`) makes the call `cancelled`, as
does a `CancelledError`.

Memory. The request body (`_request`, decoded like a response) and a JSON response body
are kept up to `capture_max_bytes` each (they must be parsed whole). A stream is
reassembled incrementally (a batch of chunks holds at most `BATCH_BYTES`); its raw SSE
text is kept only as `capture_stream_raw` asks (`never`; `always`, up to the cap; or
`on_failure`, the default: up to the cap while the stream runs, dropped when it ended
well), at most 1 MiB of it in memory and the rest in an anonymous temporary file (`_raw`),
so a big stream costs about its reassembled object whatever the policy. Past the
cap the capture stops (`capture_cut: true`); the client still gets every byte. All calls
together stay within the memory budget (`_budget`, which counts what is in memory): past
it a stream's raw text is dropped first, then the payload is cut, each recorded as a
`memory_budget` gap. The buffers and the spill file are given back once the line is
built, the budget once it is written; the file is closed on every path.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .._asgi import Message, Receive, Send
from ..contracts import Dialect, ObservationGap
from ..reassembly import StreamReassembler
from ._budget import BODY_WEIGHT, STREAM_RAW_WEIGHT, STREAM_WEIGHT, Share, budget_gap
from ._context import CaptureContext
from ._decoding import (
    ContentDecoder,
    DecodeError,
    coding_names,
    content_encodings,
    decode_chain,
    decoders_for,
)
from ._ends import EndScan
from ._raw import MEMORY_BYTES, RawText, spill_gap
from ._redirect import RedirectPrefix
from ._request import RequestTee, client_session_id

if TYPE_CHECKING:
    from ._app import CaptureMiddleware

__all__ = ["BATCH_BYTES", "CapturedCall"]

logger = logging.getLogger("model_call_capture.middleware")

BATCH_BYTES = 16384
"""Most stream bytes collected before they are reassembled in one batch (see `_collect`)."""


class CapturedCall:
    """The state of one captured call; lives exactly as long as the request."""

    __slots__ = (
        "mw",
        "rollout_id",
        "dialect",
        "context",
        "cap",
        "started_at",
        "t0",
        "completed_at",
        "latency_ms",
        "ttft_ms",
        "request",
        "status",
        "started",
        "sse",
        "decoders",
        "body",
        "reassembler",
        "raw",
        "keep_raw",
        "captured",
        "response_cut",
        "limit",
        "share",
        "gaps",
        "capture_failed",
        "held",
        "scan",
        "ends",
        "pending",
        "room",
        "content_length",
        "wire_bytes",
        "disconnected",
        "exception",
        "finalized",
        "downstream",
        "session_id",
        "location_prefix",
    )

    def __init__(
        self,
        mw: CaptureMiddleware,
        rollout_id: str,
        dialect: Dialect,
        headers: Iterable[tuple[bytes, bytes]] | None,
        redirect: RedirectPrefix | None = None,
    ) -> None:
        self.mw = mw
        self.rollout_id = rollout_id
        self.dialect: Dialect = dialect
        self.context = CaptureContext(rollout_id, uuid.uuid4().hex, dialect)
        self.cap = mw.config.capture_max_bytes
        self.started_at = 0.0
        self.t0 = 0.0
        self.completed_at = 0.0
        self.latency_ms = 0.0
        self.ttft_ms: float | None = None
        self.request = RequestTee(headers, self.cap, mw.budget)
        self.status: int | None = None
        self.started = False
        self.sse = False
        self.decoders: list[ContentDecoder] | None = []
        self.body = bytearray()
        self.reassembler: StreamReassembler | None = None
        self.raw: RawText | None = None
        """The stream's raw SSE text while it is kept (in memory up to `MEMORY_BYTES`)."""
        self.keep_raw = mw.config.capture_stream_raw
        self.captured = 0
        self.response_cut = False
        self.limit = 0
        """Decoded response bytes kept before `_beyond` must look (cap, budget, raw in memory)."""
        self.share = Share(BODY_WEIGHT)
        self.gaps: list[ObservationGap] = []
        """What the response capture left out, and why (undecodable, the memory budget)."""
        self.capture_failed = False
        self.held: list[Message] = []
        self.scan = False
        """True while a stream is captured from its plain SSE text (see `_on_chunk`)."""
        self.ends = EndScan(dialect)
        self.pending: list[bytes] = []
        """Chunks sent but not yet reassembled (`_collect`); `_take` feeds them first."""
        self.room = 0
        """Bytes `pending` may still take: at most `BATCH_BYTES` and what fits below `limit`."""
        self.content_length: int | None = None
        self.wire_bytes = 0
        self.disconnected = False
        self.exception: BaseException | None = None
        self.finalized = False
        self.downstream: Send | None = None
        self.session_id, session_gap = client_session_id(headers)
        """The session the request declared (`x-session-id`), for the line."""
        if session_gap is not None:
            self.gaps.append(session_gap)
        self.location_prefix = redirect
        """Keeps a redirect's `Location` under the rollout prefix (see `_redirect`)."""

    def start(self) -> None:
        """Take the start time, immediately before the app is invoked."""
        self.started_at = time.time()
        self.t0 = time.monotonic()

    # -- receive -----------------------------------------------------------------

    def receive_from(self, receive: Receive) -> Receive:
        """The app's `receive`: the same messages, with the request body teed."""

        async def capture_receive() -> Message:
            message = await receive()
            if not self.finalized:
                kind = message["type"]
                if kind == "http.request":
                    try:
                        self.request.take_message(message)
                    except Exception as exc:  # a bug in the tee must not fail the request
                        self.request.cut = True
                        self.mw.writer.broken(self.rollout_id, exc)
                elif kind == "http.disconnect":
                    self.disconnected = True
            return message

        return capture_receive

    # -- send ----------------------------------------------------------------------

    def send_to(self, send: Send) -> Send:
        """The app's `send`: forwards every message unchanged, holding only the end."""
        self.downstream = send

        async def capture_send(message: Message) -> None:
            if self.finalized:
                await send(message)
                return
            try:
                if self.scan and not self.held and message["type"] == "http.response.body":
                    if self.ttft_ms is not None and self._collect(message):
                        await send(message)
                    else:
                        await self._on_chunk(message, send)
                else:
                    await self._on_send(message, send)
            except OSError:
                # The server could not deliver a message: the client is gone.
                if not self.finalized:
                    self.disconnected = True
                raise

        return capture_send

    def _collect(self, message: Message) -> bool:
        """Keep a chunk that cannot end the stream for the next batch; False for any other.

        The usual chunk after the first token: one marker search (`EndScan`); its bytes are
        kept before it goes out (the record keeps what was sent), to be reassembled with
        the next chunk that may end the stream, or at the end. What is kept is fed first
        when this chunk would not fit in `room`, so a batch stays within what the cap, the
        budget and the raw text's memory part let the call keep (`_beyond`).
        """
        body = message.get("body", b"")
        if not body or self.content_length is not None or not message.get("more_body", False):
            return False
        data = body if type(body) is bytes else bytes(body)  # a copy of anything mutable
        if self.ends.may_end(data):
            return False
        self.wire_bytes += len(data)
        if len(data) > self.room and self.pending:
            self._take(b"")
        self.pending.append(data)
        self.room -= len(data)
        return True

    async def _on_chunk(self, message: Message, send: Send) -> None:
        """A body message of a stream (captured from its wire bytes) `_collect` did not keep.

        Until the first token a chunk that cannot end the stream goes out first and is
        reassembled after (the first byte never waits on capture; the first token is timed
        by its chunk). One that may (`EndScan`) is reassembled first, after what is
        pending, and goes out, or is held when it completed the terminal event."""
        body = message.get("body", b"")
        self.wire_bytes += len(body)
        if not message.get("more_body", False) or (
            self.content_length is not None and self.wire_bytes >= self.content_length
        ):
            self._take(body)
            await self._finalize(send)
            await send(message)
            return
        if not body:
            await send(message)
            return
        data = body if type(body) is bytes else bytes(body)  # a copy of anything mutable
        if self.ends.may_end(data):
            self._take(data)
            if self._terminal_seen():
                self.held.append(message)
                return
            self.ends.fed(data)
            await send(message)
            return
        # Nothing is pending here: `_collect` keeps chunks only where this path is not taken.
        now = time.monotonic() if self.ttft_ms is None else None
        try:
            await send(message)
        finally:  # also when the client is gone: the record keeps what was sent
            self._feed(data, now)

    async def _on_send(self, message: Message, send: Send) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.location_prefix is not None:
                message = self.location_prefix.start_message(message)
            self._on_start(message)
            if self.content_length == 0:  # the client has the whole response with its start
                await self._finalize(send)
            await send(message)
            return
        if kind != "http.response.body":
            # pathsend ends the response; trailers and other extensions carry nothing to
            # capture, but must not overtake a held terminal event.
            if kind == "http.response.pathsend" or self.held:
                await self._finalize(send)
            await send(message)
            return
        body = message.get("body", b"")
        self._take(body)
        self.wire_bytes += len(body)
        ends = not message.get("more_body", False) or (
            # The client knows a sized body has ended once it has all its bytes.
            self.content_length is not None and self.wire_bytes >= self.content_length
        )
        if ends or self.held:
            # The end of the body, or the message after a held terminal event: record
            # the call, release what is held, then this message.
            await self._finalize(send)
            await send(message)
            return
        if self.reassembler is not None and self._terminal_seen():
            self.held.append(message)
            return
        await send(message)

    def _on_start(self, message: Message) -> None:
        try:
            self.started = True
            self.status = int(message["status"])
            content_type, headers = b"", message.get("headers") or ()
            for name, value in headers:
                lname = bytes(name).lower()
                if lname == b"content-type":
                    content_type = bytes(value)
                elif lname == b"content-length" and bytes(value).strip().isdigit():
                    self.content_length = int(value)
            encodings = content_encodings(headers)
            self.decoders = decoders_for(encodings)
            if self.decoders is None:  # an encoding we cannot decode: forward, capture no body
                self._undecodable(f"content-encoding {coding_names(encodings)} is not supported")
            if content_type.split(b";", 1)[0].strip().lower() == b"text/event-stream":
                self.sse = True
                self.reassembler = StreamReassembler(self.dialect)
                self.raw = RawText() if self.keep_raw != "never" else None
                self.share.weight = STREAM_WEIGHT if self.raw is None else STREAM_RAW_WEIGHT
                # Markers can be looked for only in the SSE text itself, not in encoded bytes.
                self.scan = self.decoders == [] and not self.capture_failed
        except Exception as exc:
            self._broken(exc)

    def _take(self, body: bytes) -> None:
        """Capture one response body chunk (wire bytes), after the chunks still pending."""
        if pending := self.pending:
            pending.append(bytes(body))
            body = b"".join(pending)
            pending.clear()
        if body:
            self._feed(bytes(body), None)

    def _feed(self, data: bytes, now: float | None) -> None:
        """Decode, count and feed response body bytes (`now`: when they passed, if known)."""
        if self.ttft_ms is None and (
            self.reassembler is None or self.capture_failed or self.response_cut
        ):
            self.ttft_ms = self._elapsed_ms(now)
        if self.response_cut or self.capture_failed:
            return
        try:
            if self.decoders:
                data = decode_chain(self.decoders, data, self.cap - self.captured + 1)
            if len(data) > self.limit - self.captured:
                data = self._beyond(data)
            self.captured += len(data)
            self.room = min(self.limit - self.captured, BATCH_BYTES)
            if self.reassembler is not None:
                if self.raw is not None:  # first: a batch the reassembler fails on stays in it
                    self.raw += data
                self.reassembler.feed(data)
                if self.ttft_ms is None and self.reassembler.content_seen:
                    self.ttft_ms = self._elapsed_ms(now)
            else:
                self.body += data
        except DecodeError as exc:
            self._undecodable(f"content-encoding does not decode: {exc}")
        except Exception as exc:  # a bug in a stream state
            self._broken(exc)

    def _beyond(self, data: bytes) -> bytes:
        """The part of `data` the cap and the memory budget let the capture keep.

        Past the cap the response is cut; a raw stream text about to pass `MEMORY_BYTES` in
        memory is spilled (`_raw`). When the budget cannot grow, a raw stream text is
        dropped first, then the response is cut, each with a `memory_budget` gap.
        """
        kept = self.captured
        if kept + len(data) > self.cap:
            data = data[: self.cap - kept]
            self.response_cut = True
            self.scan = False
        if (raw := self.raw) is not None and len(raw) + len(data) > MEMORY_BYTES:
            try:  # the part in memory goes to the file; then only it counts (`_budget`)
                raw.spill()
                self.share.reweigh(STREAM_WEIGHT, MEMORY_BYTES)
            except OSError as exc:
                self._drop_raw()
                self.gaps.append(spill_gap(exc, kept))
        budget = self.mw.budget
        if not budget.grow(self.share, kept, len(data)) and self.raw is not None:
            self._drop_raw()
            self._gap("response_raw: the raw stream text was dropped after {kept} bytes")
        if self.share.limit >= kept + len(data) or budget.grow(self.share, kept, len(data)):
            self.limit = min(self.cap, self.share.limit)
            if self.raw is not None:  # come back here before the memory part passes its bound
                self.limit = min(self.limit, kept + MEMORY_BYTES - len(self.raw))
            return data
        self.response_cut = True
        self.scan = False
        self._gap("response: cut after {kept} bytes")
        return data[: max(self.share.limit - kept, 0)]

    def _drop_raw(self) -> None:
        raw, self.raw = self.raw, None
        if raw is not None:
            raw.close()
            self.share.reweigh(STREAM_WEIGHT)

    def _gap(self, what: str) -> None:
        self.gaps.append(budget_gap(what.format(kept=self.captured)))

    def _undecodable(self, why: str) -> None:
        self.capture_failed = True
        self.scan = False
        self.gaps.append(ObservationGap(code="response_undecodable", detail=why))

    def _terminal_seen(self) -> bool:
        try:
            return self.reassembler is not None and self.reassembler.terminal is not None
        except Exception as exc:
            self._broken(exc)
            return False

    def _elapsed_ms(self, now: float | None = None) -> float:
        return round(((time.monotonic() if now is None else now) - self.t0) * 1000.0, 3)

    def _broken(self, exc: Exception) -> None:
        self.capture_failed = True
        self.scan = False
        self.mw.writer.broken(self.rollout_id, exc)

    # -- the end -------------------------------------------------------------------

    async def _finalize(self, send: Send | None) -> None:
        """Stop capturing, write the line (durably), then release held messages."""
        if self.finalized:
            return
        self._take(b"")  # what is still pending
        self.completed_at = time.time()
        self.latency_ms = self._elapsed_ms()
        self.finalized = True
        await self.mw.writer.write(self)
        held, self.held = self.held, []
        if send is not None:
            for message in held:
                await send(message)

    async def finish(self, exc: BaseException | None) -> None:
        """The app returned (`exc` None) or raised: record the call if not yet recorded."""
        if self.finalized:
            return
        self.exception = exc
        try:
            await self._finalize(self.downstream)
        except Exception:
            if exc is None:
                raise
            # Re-raising the app's exception matters more than the held bytes.
            logger.debug("could not release held response bytes", exc_info=True)

    # -- after the line is built (worker thread) -------------------------------------

    def drop_buffers(self) -> None:
        """Let the captured bytes go: the line is built from them (worker thread)."""
        self._drop_raw()
        self.body = bytearray()
        self.reassembler = None
        self.request.body = bytearray()

    def release(self) -> None:
        """Give the call's part of the memory budget back: its line is written (or failed)."""
        self._drop_raw()  # the spill file is closed on every path
        self.request.release()
        self.mw.budget.release(self.share)
