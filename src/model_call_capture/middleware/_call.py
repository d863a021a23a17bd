"""One captured call: the routing of its ASGI messages, and the hold of its end until its line is durable.

The client gets every message the app sends, unchanged and in order, as it comes (same
bytes, no buffering); the capture reads along. The request body is teed from `receive`
(`_request.RequestTee`), the response's body from `send` (`_response.ResponseCapture`,
which keeps it within the cap and the memory budget); what the call itself shows (its
times, status, how it ended) is written into its `CallFacts` as it happens, and the line
is built from those facts (`_line`) once the call ended.

When the line is written (the durability promise). A client that saw the end of a
response can rely on its line being on disk, so the end waits for the write:

- a JSON reply: the message that ends the body (`_ends`: `more_body` false, or the message
  that completes a `content-length` body; the start itself for `content-length: 0`) is
  forwarded only after the line is durable; every earlier message goes out at once;
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
  also stalls the SDK clients, which read a stream to its end. Past the byte cap the
  middleware no longer sees terminal events, so only the closing message waits for the line.

`completed_at` is therefore the moment the app finished the response (its closing
message, or the message after the terminal event), returned, or raised, whichever came
first; `latency_ms` is measured to the same moment on the monotonic clock.

Failures. An exception from the app is recorded with the status and body it carries when
no response had started (see `_outcome.classify_exception`), and the partial or complete
reconstruction, then re-raised. A client that disconnected before the response ended
(`http.disconnect`, or a `send` that fails with `OSError`) makes the call `cancelled`, as
does a `CancelledError`.

Memory. The request body and a JSON response body are kept up to `capture_max_bytes` each
(they must be parsed whole); a stream is reassembled incrementally, its raw text kept as
`capture_stream_raw` asks, mostly outside memory (`_response`, `_raw`). The buffers and the
spill file are given back once the line is built, the budget once it is written; the file
is closed on every path.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .._asgi import Message, Receive, Send
from ..contracts import CaptureConfig, Dialect, ModelRef
from ._budget import MemoryBudget
from ._context import CaptureContext, execution_facts
from ._line import CallFacts
from ._redirect import RedirectPrefix
from ._request import RequestTee, client_session_id
from ._response import ResponseCapture

if TYPE_CHECKING:
    from ._writer import CaptureWriter

__all__ = ["CapturedCall"]

logger = logging.getLogger("model_call_capture.middleware")


class CapturedCall:
    """One captured call: routes its messages, records what it shows; lives as long as the request."""

    __slots__ = (
        "content_length",
        "context",
        "downstream",
        "facts",
        "finalized",
        "held",
        "redirect",
        "request",
        "response",
        "rollout_id",
        "sent",
        "started_clock",
        "writer",
    )

    def __init__(
        self,
        rollout_id: str,
        dialect: Dialect,
        headers: Iterable[tuple[bytes, bytes]] | None,
        *,
        config: CaptureConfig,
        model_ref: ModelRef,
        budget: MemoryBudget,
        writer: CaptureWriter,
        redirect: RedirectPrefix | None = None,
    ) -> None:
        self.rollout_id = rollout_id
        self.writer = writer
        self.context = CaptureContext(rollout_id, uuid.uuid4().hex, dialect)
        """What the app sees of the call (and may tell the line)."""
        session_id, session_gap = client_session_id(headers)
        max_bytes = config.capture_max_bytes
        self.facts = CallFacts(
            model_call_id=self.context.model_call_id,
            dialect=dialect,
            model_ref=model_ref,
            started_at=0.0,
            completed_at=0.0,
            latency_ms=0.0,
            client_session_id=session_id,
            keep_raw=config.capture_stream_raw,
            max_bytes=max_bytes,
            gaps=[] if session_gap is None else [session_gap],
        )
        """What the call showed, for its line; completed from the request and response at the end."""
        self.request = RequestTee(headers, max_bytes, budget)
        self.response = ResponseCapture(
            dialect,
            max_bytes=max_bytes,
            keep_raw=config.capture_stream_raw,
            budget=budget,
            report=functools.partial(writer.broken, rollout_id),
        )
        self.redirect = redirect
        """Keeps a redirect's `Location` under the rollout prefix (see `_redirect`)."""
        self.started_clock = 0.0
        """Monotonic time the app was invoked (`latency_ms` and `latency_ttft_ms` count from it)."""
        self.content_length: int | None = None
        """The response's `content-length`, when it declared one."""
        self.sent = 0
        """Body bytes sent to the client, counted where `_ends` needs them (a sized body)."""
        self.held: list[Message] = []
        """Messages held until the line is durable (the one after a stream's terminal event)."""
        self.finalized = False
        self.downstream: Send | None = None

    def start(self) -> None:
        """Take the start time, immediately before the app is invoked."""
        self.facts.started_at = time.time()
        self.started_clock = time.monotonic()

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
                        self.writer.broken(self.rollout_id, exc)
                elif kind == "http.disconnect":
                    self.facts.disconnected = True
            return message

        return capture_receive

    # -- send ----------------------------------------------------------------------

    def send_to(self, send: Send) -> Send:
        """The app's `send`: forwards every message unchanged, holding only the end."""
        self.downstream = send
        response = self.response

        async def capture_send(message: Message) -> None:
            if self.finalized:
                await send(message)
                return
            try:
                # The usual stream chunk after the first token: kept for a batch, sent.
                if not self.held and response.batch(message):
                    await send(message)
                else:
                    await self._route(message, send)
            except OSError:
                # The server could not deliver a message: the client is gone.
                if not self.finalized:
                    self.facts.disconnected = True
                raise

        return capture_send

    async def _route(self, message: Message, send: Send) -> None:
        kind = message["type"]
        if kind == "http.response.body":
            await self._on_body(message, send)
            return
        if kind == "http.response.start":
            if self.redirect is not None:
                message = self.redirect.start_message(message)
            self._on_start(message)
            if self._ends(message, 0):  # `content-length: 0`: the start is the whole response
                await self._finalize(send)
            await send(message)
            return
        # pathsend ends the response; trailers and other extensions carry nothing to
        # capture, but must not overtake a held terminal event.
        if kind == "http.response.pathsend" or self.held:
            await self._finalize(send)
        await send(message)

    def _ends(self, message: Message, size: int) -> bool:
        """Whether `message` (a start, or a body message of `size` bytes, counted here) ends
        the response: the client has it all once the last body message (`more_body` false)
        or the bytes a `content-length` declares have been sent."""
        if message["type"] == "http.response.body":
            self.sent += size
            if not message.get("more_body", False):
                return True
        return self.content_length is not None and self.sent >= self.content_length

    async def _on_body(self, message: Message, send: Send) -> None:
        """A body message `ResponseCapture.batch` did not keep.

        The end of the body, or the message after a held terminal event: the call is
        recorded, what is held released, then this message. Otherwise, for a stream
        followed in its SSE text: until the first token a chunk that cannot end the stream
        goes out first and is reassembled after (the first byte never waits on capture;
        the first token is timed by its chunk); one that may (`EndMarkerSearch`) is reassembled
        first, after what is pending, and goes out, or is held when it completed the
        terminal event. Any other body is captured, then goes out (or is held the same way).
        """
        response = self.response
        body = message.get("body", b"")
        if self._ends(message, len(body)) or self.held:
            response.take(body)
            await self._finalize(send)
            await send(message)
            return
        if response.searchable:
            if not body:
                await send(message)
                return
            data = body if type(body) is bytes else bytes(body)  # a copy of anything mutable
            if not response.ends.may_end(data):
                # Nothing is pending here: `batch` keeps chunks only where this path is not taken.
                now = time.monotonic() if response.first_content_at is None else None
                try:
                    await send(message)
                finally:  # also when the client is gone: the record keeps what was sent
                    response.feed(data, now)
                return
            response.take(data)
            if not response.terminal_seen():
                response.ends.fed(data)
                await send(message)
                return
        else:
            response.take(body)
            if not response.terminal_seen():
                await send(message)
                return
        self.held.append(message)

    def _on_start(self, message: Message) -> None:
        facts = self.facts
        try:
            facts.started = True
            facts.status = int(message["status"])
            content_type, headers = b"", message.get("headers") or ()
            for name, value in headers:
                lname = bytes(name).lower()
                if lname == b"content-type":
                    content_type = bytes(value)
                elif lname == b"content-length" and bytes(value).strip().isdigit():
                    self.content_length = int(value)
            stream = content_type.split(b";", 1)[0].strip().lower() == b"text/event-stream"
            self.response.start(headers, stream=stream, sized=self.content_length is not None)
        except Exception as exc:
            self.response.broken(exc)

    def _elapsed_ms(self, clock: float) -> float:
        return round((clock - self.started_clock) * 1000.0, 3)

    # -- the end -------------------------------------------------------------------

    async def _finalize(self, send: Send | None) -> None:
        """Stop capturing, write the line (durably), then release held messages."""
        if self.finalized:
            return
        self.response.take(b"")  # what is still pending
        facts = self.facts
        facts.completed_at = time.time()
        facts.latency_ms = self._elapsed_ms(time.monotonic())
        first = self.response.first_content_at
        facts.ttft_ms = None if first is None else self._elapsed_ms(first)
        self.finalized = True
        await self.writer.write(self)
        held, self.held = self.held, []
        if send is not None:
            for message in held:
                await send(message)

    async def finish(self, exc: BaseException | None) -> None:
        """The app returned (`exc` None) or raised: record the call if not yet recorded."""
        if self.finalized:
            return
        self.facts.exception = exc
        try:
            await self._finalize(self.downstream)
        except Exception:
            if exc is None:
                raise
            # Re-raising the app's exception matters more than the held bytes.
            logger.debug("could not release held response bytes", exc_info=True)

    # -- after the end (the writer's worker thread) ---------------------------------

    @property
    def kept_bytes(self) -> int:
        """Decoded response bytes the capture kept."""
        return self.response.captured

    def line_facts(self) -> CallFacts:
        """The call's facts, completed from its request, response and context, for its line."""
        facts = self.facts
        context = self.context
        facts.error_category = context.error_category
        facts.execution = execution_facts(context.execution)
        self.request.fill(facts)
        self.response.fill(facts)
        request = self.request
        facts.gaps = [*request.gaps, *request.unread(), *facts.gaps, *self.response.gaps]
        return facts

    def drop_buffers(self) -> None:
        """Let the captured bytes go: the line is built from them."""
        self.response.drop_buffers()
        self.request.body = bytearray()

    def release(self) -> None:
        """Give the call's part of the memory budget back: its line is written (or failed)."""
        self.response.release()
        self.request.release()
