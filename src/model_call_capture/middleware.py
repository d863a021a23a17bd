"""The pure-ASGI capture middleware: every prefixed model call, recorded without changing it.

`CaptureMiddleware` sits in front of a model server (any ASGI app). For each request it

- strips `/ng-rollout/<rollout_id>` from the path, always (also when capture is off), so
  the app routes `/v1/...` as usual; `root_path` is left alone;
- captures only prefixed calls with a valid rollout id to an observed path
  (`/v1/responses`, `/v1/chat/completions`, `/v1/messages`); everything else passes
  through untouched;
- tees the request body from `receive` and the response from `send`, forwarding every
  message as it comes (same bytes, same order, no buffering); streams are reassembled
  incrementally (`StreamReassembler`) while they pass;
- writes one `CaptureLine` per call to the `CaptureStore` in a worker thread, never on the
  event loop; a capture failure is logged once per rollout, marks the rollout incomplete
  where it can, and never fails the call.

When the line is written (the durability promise). A client that saw the end of a
response can rely on its line being on disk, so the end waits for the write:

- a JSON reply: the final body message (`more_body` false, or the message that completes
  a `content-length` body) is forwarded only after the line is durable; every earlier
  message goes out at once;
- a stream: every chunk goes out as it arrives until the chunk that completes the
  dialect's terminal event. That chunk is held (the app is not blocked) until the app's
  next response message or until the app returns or raises, whichever comes first; then
  the line is written and the held chunk is released, followed by that next message.
  Waiting for the next message rather than writing at the terminal chunk lets the record
  see how the call really ended (an app that raises right after the terminal event is
  recorded as `exception`, with the complete reconstruction), and it costs nothing in
  practice: apps send the closing message right after the terminal event. Waiting for
  the app to return instead would hold the end of every response while background tasks
  run (Starlette runs them after the response, inside the app call). An app that stalls
  after the terminal event without closing the response also stalls the SDK clients,
  which read a stream to its end. Past the byte cap (below) the middleware no longer
  sees terminal events, so only the closing message waits for the line.

`completed_at` is therefore the moment the app finished the response (its closing
message, or the message after the terminal event), returned, or raised, whichever came
first; `latency_ms` is measured to the same moment on the monotonic clock.

Failures. An exception from the app is recorded with the status and body it carries
(`exc.response.status_code` / `.content`, as httpx's errors have) when no response had
started, its category (`timeout`, `connection`, `exception`, or the status's), and the
partial or complete reconstruction, then re-raised. A client that disconnected before
the response ended (`http.disconnect`, or a `send` that fails with `OSError`) makes the
call `cancelled`, as does a `CancelledError`. An app may override the category through
the `CaptureContext` at `scope["extensions"]["model_call_capture"]`.

Memory. The request body and a JSON response body are kept up to `capture_max_bytes`
each (they must be parsed whole). A stream is reassembled incrementally; its raw SSE
text is kept only as `capture_stream_raw` asks: `never` keeps nothing but the object
being built, `always` keeps it up to the cap, and `on_failure` (the default) keeps it up
to the cap while the stream runs (whether it fails is known only at its end) and drops
it when the stream ended well. Past the cap the capture stops (`capture_cut: true`); the
client still gets every byte.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import logging
import threading
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, cast
from urllib.parse import quote, unquote

import brotli

from . import _codec
from .contracts import CAPTURE_LINE_FORMAT, CaptureConfig, CaptureLine, Dialect, ModelRef
from .correlation import ROLLOUT_PREFIX
from .dialects import dialect_for_path, get_dialect
from .reassembly import StreamReassembler
from .redaction import Redaction
from .store import CaptureStore, InvalidRolloutIdError, validate_rollout_id

__all__ = [
    "CAPTURE_EXTENSION",
    "ROLLOUT_PREFIX",
    "CaptureContext",
    "CaptureMiddleware",
    "error_category_for_status",
    "install_model_call_capture",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CAPTURE_EXTENSION = "model_call_capture"
"""Key of the `CaptureContext` in `scope["extensions"]` of a captured request."""

_MODEL_REF_TYPE = "responses_api_models"
_WRITE_THREADS = 32
_LOG_ONCE_LIMIT = 4096

logger = logging.getLogger(__name__)


class CaptureContext:
    """Per-request capture facts handed to the app at `scope["extensions"]["model_call_capture"]`.

    An app (for example a reverse proxy) may set `error_category` to say why a call
    failed when the status alone cannot, e.g. `"connection"` or `"timeout"` when its
    upstream failed and it answered 502 or 504 itself. The value it sets wins over the
    category the middleware would derive.
    """

    __slots__ = ("dialect", "error_category", "model_call_id", "rollout_id")

    def __init__(self, rollout_id: str, model_call_id: str, dialect: Dialect) -> None:
        self.rollout_id = rollout_id
        """The rollout the call is captured under."""
        self.model_call_id = model_call_id
        """The id its capture line will carry."""
        self.dialect: Dialect = dialect
        """The dialect of the observed path."""
        self.error_category: str | None = None
        """Set by the app to override the derived `error_category`; None to derive it."""


def error_category_for_status(status: int | None) -> str | None:
    """The `error_category` an HTTP status implies (DESIGN.md), None for success and 1xx-3xx."""
    if status is None or status < 400:
        return None
    if status in (408, 504):
        return "timeout"
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status < 500:
        return "client_error"
    return "upstream_error"


class _Store(Protocol):
    def append(self, rollout_id: str, line: CaptureLine) -> None: ...

    def mark_incomplete(self, rollout_id: str) -> None: ...


class CaptureMiddleware:
    """Pure ASGI middleware that records prefixed model calls into per-rollout capture files.

    `config` turns capture on (`observability_enabled`) and names the directory;
    `model_server_name` goes into every line's `model_ref`; `store` replaces the
    `CaptureStore` built from the config (tests, or several middlewares sharing one);
    `redact` (see `model_call_capture.redaction`) rewrites every line just before it is
    written, and a line it fails on is not written at all (the rollout is marked incomplete).
    Per-request state lives in a per-request object; the instance holds only settings,
    the store, the write threads and the log-once bookkeeping.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        config: CaptureConfig,
        model_server_name: str,
        store: CaptureStore | None = None,
        redact: Redaction | None = None,
    ) -> None:
        self.app = app
        self.config = config
        self.redact = redact
        self.model_ref = ModelRef(type=_MODEL_REF_TYPE, name=model_server_name)
        self.store: _Store | None = None
        if config.observability_enabled:
            if store is None:
                if not config.model_call_capture_dir:
                    raise ValueError(
                        "model_call_capture_dir is required when observability_enabled is true"
                    )
                store = CaptureStore(config.model_call_capture_dir)
            self.store = store
        # Threads are started on demand; the pool only bounds how many writes run at once.
        self._executor = ThreadPoolExecutor(
            max_workers=_WRITE_THREADS, thread_name_prefix="mcc-capture"
        )
        self._failed_rollouts = _OnceSet()
        self._invalid_ids = _OnceSet()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        split = _split_rollout_prefix(scope)
        if split is None:
            await self.app(scope, receive, send)
            return
        rollout_id, scope = split
        dialect = dialect_for_path(_route_path(scope)) if self.store is not None else None
        if dialect is None:
            await self.app(scope, receive, send)
            return
        try:
            validate_rollout_id(rollout_id)
        except InvalidRolloutIdError as exc:
            if self._invalid_ids.first(rollout_id):
                logger.warning("model call forwarded without capture: %s", exc)
            await self.app(scope, receive, send)
            return
        call = _Call(self, rollout_id, cast(Dialect, dialect))
        scope["extensions"] = {**(scope.get("extensions") or {}), CAPTURE_EXTENSION: call.context}
        call.start()
        try:
            await self.app(scope, call.receive_from(receive), call.send_to(send))
        except BaseException as exc:
            await call.finish(exc)
            raise
        await call.finish(None)

    # -- writing (worker thread) -----------------------------------------------------

    async def _write(self, call: _Call) -> None:
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
        self, call: _Call, loop: asyncio.AbstractEventLoop | None, done: asyncio.Future[None] | None
    ) -> None:
        assert self.store is not None
        try:
            line = call.build_line()
            if self.redact is not None:
                line = self.redact(line)
            if call.captured >= _BIG_BODY:
                _release_free_memory()
            self.store.append(call.rollout_id, line)
        except Exception as exc:
            self._capture_failed(call.rollout_id, exc)
        finally:
            if loop is not None:
                try:
                    loop.call_soon_threadsafe(_resolve, done)
                except RuntimeError:  # the loop is closed: nobody waits any more
                    pass

    def _capture_failed(self, rollout_id: str, exc: Exception) -> None:
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

    def _capture_broken(self, call: _Call, exc: Exception) -> None:
        """A bug or surprise inside the capture of one call: log once, keep serving."""
        if self._failed_rollouts.first(call.rollout_id):
            logger.error("model-call capture error for rollout %r: %r", call.rollout_id, exc)


def install_model_call_capture(
    app: Any,
    config: CaptureConfig | Mapping[str, Any] | str,
    *,
    model_server_name: str,
    store: CaptureStore | None = None,
    redact: Redaction | None = None,
) -> Any:
    """Mount the capture middleware on `app` and return the app to serve.

    A Starlette or FastAPI app gets it through `app.add_middleware` (outermost of its
    user middleware, so routing sees the stripped path) and is returned itself; any other
    ASGI app is wrapped and the wrapper is returned. `config` is a `CaptureConfig`, or a
    global config mapping / YAML path read with `load_capture_config`. `redact` is the
    redaction hook (`model_call_capture.redaction.Redactor`, or any line -> line callable).
    """
    if not isinstance(config, CaptureConfig):
        from .config import load_capture_config

        config = load_capture_config(config)
    options: dict[str, Any] = {
        "config": config,
        "model_server_name": model_server_name,
        "store": store,
        "redact": redact,
    }
    if hasattr(app, "add_middleware") and hasattr(app, "user_middleware"):
        app.add_middleware(CaptureMiddleware, **options)
        return app
    return CaptureMiddleware(app, **options)


_BIG_BODY = 8 << 20
"""Bodies from this size on: free memory is handed back before their line is encoded."""


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return cast("Callable[[int], int]", ctypes.CDLL(None).malloc_trim)
    except (AttributeError, OSError):  # not glibc
        return None


def _release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc; elsewhere a no-op).

    Building the line of a big stream joins its text fragments and frees them, but the C
    allocator keeps those pages, and the encoded line then takes new ones beside them:
    for a 100 MB Messages stream, 3.7 MB of peak memory (row 5 of the benchmarks). The
    trim costs well under a millisecond, next to the seconds such a stream took.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _resolve(done: asyncio.Future[None] | None) -> None:
    if done is not None and not done.done():  # a cancelled wait is already done
        done.set_result(None)


# -- routing -------------------------------------------------------------------------


def _split_rollout_prefix(scope: Scope) -> tuple[str, Scope] | None:
    """(rollout id, copy of scope without the prefix), or None when the path has none.

    The id is read from `raw_path` when the server gave one, so a `%2F` inside the id
    stays inside the id instead of splitting the path.
    """
    path: str = scope["path"]
    root: str = scope.get("root_path") or ""
    base = root if root and path.startswith(root + ROLLOUT_PREFIX) else ""
    if not path.startswith(ROLLOUT_PREFIX, len(base)):
        return None
    rest = path[len(base) + len(ROLLOUT_PREFIX) :]
    raw: bytes | None = scope.get("raw_path")
    rollout_id: str | None = None
    new_raw: bytes | None = None
    if raw is not None:
        raw_base = base.encode("utf-8")
        raw_prefix = raw_base + ROLLOUT_PREFIX.encode()
        if raw.startswith(raw_prefix):
            segment, slash, tail = raw[len(raw_prefix) :].partition(b"/")
            candidate = unquote(segment.decode("ascii", "replace"))
            after = rest[len(candidate) :]
            if rest.startswith(candidate) and (not after or after.startswith("/")):
                rollout_id = candidate
                new_raw = raw_base + b"/" + tail if slash else raw_base + b"/"
    if rollout_id is None:
        rollout_id = rest.partition("/")[0]
    tail_path = rest[len(rollout_id) :] or "/"
    new_scope = dict(scope)
    new_scope["path"] = base + tail_path
    if raw is not None:
        new_scope["raw_path"] = (
            new_raw if new_raw is not None else quote(base + tail_path).encode("ascii")
        )
    return rollout_id, new_scope


def _route_path(scope: Scope) -> str:
    path: str = scope["path"]
    root: str = scope.get("root_path") or ""
    if root and path.startswith(root + "/"):
        return path[len(root) :]
    return path


# -- one call ------------------------------------------------------------------------


class _Call:
    """The state of one captured call; lives exactly as long as the request."""

    __slots__ = (
        "mw",
        "rollout_id",
        "dialect",
        "dialect_module",
        "context",
        "cap",
        "started_at",
        "t0",
        "completed_at",
        "latency_ms",
        "ttft_ms",
        # request
        "request_body",
        "request_cut",
        # response
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
        "capture_failed",
        "held",
        "scan",
        "doubt",
        "tail",
        "content_length",
        "wire_bytes",
        "disconnected",
        "exception",
        "finalized",
        "downstream",
    )

    def __init__(self, mw: CaptureMiddleware, rollout_id: str, dialect: Dialect) -> None:
        self.mw = mw
        self.rollout_id = rollout_id
        self.dialect: Dialect = dialect
        self.dialect_module = get_dialect(dialect)
        self.context = CaptureContext(rollout_id, uuid.uuid4().hex, dialect)
        self.cap = mw.config.capture_max_bytes
        self.started_at = 0.0
        self.t0 = 0.0
        self.completed_at = 0.0
        self.latency_ms = 0.0
        self.ttft_ms: float | None = None
        self.request_body = bytearray()
        self.request_cut = False
        self.status: int | None = None
        self.started = False
        self.sse = False
        self.decoders: list[_Decoder] | None = []
        self.body = bytearray()
        self.reassembler: StreamReassembler | None = None
        self.raw: bytearray | None = None
        self.keep_raw = mw.config.capture_stream_raw
        self.captured = 0
        self.response_cut = False
        self.capture_failed = False
        self.held: list[Message] = []
        self.scan = False
        """True while a stream is captured from its plain SSE text (see `_on_chunk`)."""
        self.doubt = False
        """True while an open event may hold a terminal marker seen in an earlier chunk."""
        self.tail: bytes | None = None
        """The end of the previous chunk when it ended inside a line (a marker may straddle)."""
        self.content_length: int | None = None
        self.wire_bytes = 0
        self.disconnected = False
        self.exception: BaseException | None = None
        self.finalized = False
        self.downstream: Send | None = None

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
                    body = message.get("body", b"")
                    if body and not self.request_cut:
                        room = self.cap - len(self.request_body)
                        if len(body) > room:
                            self.request_body += body[: max(room, 0)]
                            self.request_cut = True
                        else:
                            self.request_body += body
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
                    await self._on_chunk(message, send)
                else:
                    await self._on_send(message, send)
            except OSError:
                # The server could not deliver a message: the client is gone.
                if not self.finalized:
                    self.disconnected = True
                raise

        return capture_send

    async def _on_chunk(self, message: Message, send: Send) -> None:
        """A body message of a stream that is reassembled from its wire bytes (the hot path).

        A chunk that cannot complete the terminal event goes out first and is reassembled
        after: the client never waits on capture for it (the first byte of a stream
        included). A chunk that may complete it is reassembled first, and held if it did.
        """
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
        if self.doubt or self._may_end(body):
            self._take(body)
            if self._terminal_seen():
                self.held.append(message)
                return
            # A marker seen in an event that is still open may be completed by a chunk
            # without one: stay in doubt until the stream is between events again.
            self.doubt = not body.endswith(b"\n\n")
            self.tail = None
            await send(message)
            return
        data = bytes(body)  # a copy of anything mutable, taken before it goes out
        # The first token is timed as it passed, not after the send.
        now = time.monotonic() if self.ttft_ms is None else None
        try:
            await send(message)
        finally:  # also when the client is gone: the record keeps what was sent
            self._feed(data, now)

    def _may_end(self, body: bytes) -> bool:
        """False only when `body` cannot complete the dialect's terminal event.

        Looks for the dialect's terminal markers in `body` and, when the previous chunk
        ended inside a line, across the boundary. An event whose marker was in an earlier
        chunk is covered by `doubt` (set when a marker chunk left an event open).
        """
        dialect = self.dialect_module
        if dialect.may_end(body):
            return True
        tail = self.tail
        overlap = dialect.END_MARKER_LEN
        if tail is not None and dialect.may_end(tail + body[:overlap]):
            return True
        if body.endswith(b"\n"):
            self.tail = None
        else:
            self.tail = (body if tail is None else tail + body)[-overlap:]
        return False

    async def _on_send(self, message: Message, send: Send) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self._on_start(message)
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
            content_type = b""
            encodings: list[bytes] = []
            for name, value in message.get("headers") or ():
                lname = bytes(name).lower()
                if lname == b"content-type":
                    content_type = bytes(value)
                elif lname == b"content-length" and bytes(value).strip().isdigit():
                    self.content_length = int(value)
                elif lname == b"content-encoding":
                    encodings += [e.strip().lower() for e in bytes(value).split(b",") if e.strip()]
            self.decoders = _decoders_for(encodings)
            if self.decoders is None:  # an encoding we cannot decode: forward, capture no body
                self.capture_failed = True
            if content_type.split(b";", 1)[0].strip().lower() == b"text/event-stream":
                self.sse = True
                self.reassembler = StreamReassembler(self.dialect)
                self.raw = bytearray() if self.keep_raw != "never" else None
                # Markers can be looked for only in the SSE text itself, not in encoded bytes.
                self.scan = self.decoders == [] and not self.capture_failed
        except Exception as exc:
            self._broken(exc)

    def _take(self, body: bytes) -> None:
        """Capture one response body chunk (wire bytes)."""
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
            room = self.cap - self.captured
            for decoder in self.decoders or ():
                data = decoder.decode(data, room + 1)
            if len(data) > room:
                data = data[:room]
                self.response_cut = True
                self.scan = False
            self.captured += len(data)
            if self.reassembler is not None:
                self.reassembler.feed(data)
                if self.raw is not None:
                    self.raw += data
                if self.ttft_ms is None and self.reassembler.content_seen:
                    self.ttft_ms = self._elapsed_ms(now)
            else:
                self.body += data
        except Exception as exc:  # undecodable body, or a bug in a stream state
            self.capture_failed = True
            self.scan = False
            if not isinstance(exc, _DecodeError):
                self._broken(exc)

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
        self.mw._capture_broken(self, exc)

    # -- the end -------------------------------------------------------------------

    async def _finalize(self, send: Send | None) -> None:
        """Stop capturing, write the line (durably), then release held messages."""
        if self.finalized:
            return
        self.completed_at = time.time()
        self.latency_ms = self._elapsed_ms()
        self.finalized = True
        await self.mw._write(self)
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

    # -- the line (worker thread) -----------------------------------------------

    def build_line(self) -> CaptureLine:
        """The call's `CaptureLine`; runs in a worker thread after the call is finalized."""
        line = CaptureLine(
            format=CAPTURE_LINE_FORMAT,
            model_call_id=self.context.model_call_id,
            dialect=self.dialect,
            model_ref=self.mw.model_ref,
            started_at=self.started_at,
            completed_at=self.completed_at,
            latency_ms=self.latency_ms,
            latency_ttft_ms=self.ttft_ms,
            status_code=self.status,
        )
        if self.request_body:
            line.request = _codec.decode_object(self.request_body)
            if line.request is None:
                line.request_raw = _codec.raw_text(self.request_body)

        # What the body says: the category it implies for a 2xx reply, and whether a
        # stream went wrong (which decides whether its raw text is kept).
        implied: str | None = None
        stream_went_wrong = False
        if self.sse:
            line.stream = True
            implied, stream_went_wrong = self._reassembled(line)
        elif self.capture_failed:
            implied = "capture_parse_error"
        elif self.body:
            line.response = _codec.decode_object(self.body)
            if line.response is None:
                line.response_raw = _codec.raw_text(self.body)
                if not self.response_cut:
                    implied = "capture_parse_error"

        if self.disconnected:
            line.error_category = "cancelled"
        elif self.exception is not None:
            category, status, body = _classify_exception(self.exception)
            if not self.started:
                line.status_code = status
                category = error_category_for_status(status) or category
                if body is not None:
                    line.response_raw = _codec.raw_text(body)
            line.error_category = category
        else:
            line.error_category = error_category_for_status(self.status)
            if line.error_category is None and self.status is not None and 200 <= self.status < 300:
                line.error_category = implied
        if self.context.error_category is not None:
            line.error_category = self.context.error_category

        if self.raw is not None:
            policy = self.keep_raw
            if policy == "always" or (
                policy == "on_failure" and (stream_went_wrong or line.error_category is not None)
            ):
                line.response_raw = _codec.raw_text(self.raw)
        if self.request_cut or self.response_cut:
            line.capture_cut = True
        return line

    def _reassembled(self, line: CaptureLine) -> tuple[str | None, bool]:
        """Finish the stream into `line.response`; (implied category, went wrong)."""
        if self.capture_failed or self.reassembler is None:
            return "capture_parse_error", True
        try:
            result = self.reassembler.finish()
        except Exception as exc:
            self.mw._capture_broken(self, exc)
            return "capture_parse_error", True
        line.response = result.response
        if self.response_cut:
            # The capture stopped early: whether the stream ended well is unknown.
            return None, True
        if result.terminal in ("error", "failed"):
            return "upstream_error", True
        if result.terminal == "incomplete":
            return "incomplete", True
        if result.terminal is None:
            return "stream_truncated", True
        if result.response is None:
            return "capture_parse_error", True
        return None, bool(result.dropped)


def _classify_exception(exc: BaseException) -> tuple[str, int | None, bytes | None]:
    """(category, status the exception carries, body it carries) for an app exception.

    Duck-typed so no HTTP client library is imported: timeouts and connection failures
    are recognised by the standard classes and by the class names httpx, aiohttp and the
    SDKs use; `exc.response.status_code` / `exc.status_code` give the status, and an
    already-read `exc.response.content` the body.
    """
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled", None, None
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, TimeoutError) or any(
        n.endswith(("Timeout", "TimeoutError", "TimeoutException")) for n in names
    ):
        category = "timeout"
    elif isinstance(exc, ConnectionError) or names & _CONNECTION_ERRORS:
        category = "connection"
    else:
        category = "exception"
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if not isinstance(status, int):
        status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or not 100 <= status <= 999:
        status = None
    body: bytes | None = None
    if response is not None:
        try:
            content = response.content
        except Exception:  # e.g. httpx.ResponseNotRead: the body was never read
            content = None
        if isinstance(content, bytes | bytearray) and content:
            body = bytes(content)
        elif isinstance(content, str) and content:
            body = content.encode("utf-8", "surrogatepass")
    return category, status, body


_CONNECTION_ERRORS = frozenset(
    {
        "ConnectError",
        "NetworkError",
        "RemoteProtocolError",
        "APIConnectionError",
        "ClientConnectionError",
        "ServerDisconnectedError",
    }
)


# -- content-encoding ----------------------------------------------------------------


class _DecodeError(Exception):
    """A response body that does not decode with its content-encoding."""


class _Decoder:
    """Incremental decoder of one content-encoding, with bounded output per call."""

    def decode(self, data: bytes, limit: int) -> bytes:
        """Decode the next chunk; returns at most `limit` bytes (more means: past the cap)."""
        raise NotImplementedError


class _ZlibDecoder(_Decoder):
    # gzip: wbits 16+ (gzip header); deflate: the zlib wrapper the RFC asks for, falling
    # back to raw deflate, which some servers send instead.
    def __init__(self, wbits: int, fallback_wbits: int | None = None) -> None:
        self._d = zlib.decompressobj(wbits)
        self._fallback = fallback_wbits
        self._started = False

    def decode(self, data: bytes, limit: int) -> bytes:
        try:
            out = self._d.decompress(data, limit)
        except zlib.error as exc:
            if self._started or self._fallback is None:
                raise _DecodeError(str(exc)) from exc
            self._d = zlib.decompressobj(self._fallback)
            self._fallback = None
            try:
                out = self._d.decompress(data, limit)
            except zlib.error as exc2:
                raise _DecodeError(str(exc2)) from exc2
        self._started = True
        if self._d.unconsumed_tail:
            return out + b"\0"  # more output is waiting: signal "past the limit"
        return out


class _BrotliDecoder(_Decoder):
    def __init__(self) -> None:
        self._d = brotli.Decompressor()

    def decode(self, data: bytes, limit: int) -> bytes:
        try:
            out: bytes = self._d.process(data, output_buffer_limit=max(limit, 1))
        except brotli.error as exc:
            raise _DecodeError(str(exc)) from exc
        if not self._d.can_accept_more_data():
            return out + b"\0"
        return out


def _decoders_for(encodings: list[bytes]) -> list[_Decoder] | None:
    """Decoders in the order to apply them (the reverse of the header's), None if unknown."""
    decoders: list[_Decoder] = []
    for encoding in reversed(encodings):
        if encoding in (b"gzip", b"x-gzip"):
            decoders.append(_ZlibDecoder(16 + zlib.MAX_WBITS))
        elif encoding == b"deflate":
            decoders.append(_ZlibDecoder(zlib.MAX_WBITS, -zlib.MAX_WBITS))
        elif encoding == b"br":
            decoders.append(_BrotliDecoder())
        elif encoding != b"identity":
            return None
    return decoders


# -- log once ------------------------------------------------------------------------


class _OnceSet:
    """Remembers keys already logged, so a failing rollout logs once, not per call."""

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
