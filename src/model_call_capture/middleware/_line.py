"""The capture line of one call, built from what the capture saw: a pure function, no I/O.

A body kept as text (`request_raw`, `response_raw`) is bounded by its written size, not
only by its bytes: JSON writes a control byte as a six-byte escape and the capture writes
an invalid UTF-8 byte as `\\xNN`, so a capped body of such bytes (a decompression bomb
decodes to them cheaply) would make a line six times `capture_max_bytes`. A text is cut
where its written size passes `capture_max_bytes`, counting a two-byte escape (`\\"`,
`\\n`, ...) as one byte so that ordinary text under the cap is never cut; the cut sets
`capture_cut` and adds a `raw_text_cut` gap.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import _codec
from ..contracts import (
    CAPTURE_LINE_FORMAT,
    CaptureLine,
    Dialect,
    ModelRef,
    ObservationGap,
    StreamRawPolicy,
)
from ..dialects import StreamResult
from ._context import CONTEXT_LENGTH_EXCEEDED, ExecutionFacts
from ._outcome import classify_exception, error_category_for_status, stream_outcome

__all__ = ["CallFacts", "RawReader", "build_line", "text_within"]

_DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_SLICE = 1 << 20
"""Bytes of a big body turned into text and measured at a time."""
_WIDE_ESCAPES = re.compile(rb"[\x00-\x07\x0b\x0e-\x1f]")
"""Bytes JSON writes as a six-byte `\\u00XX` escape."""
_MAX_NUMBER_GROWTH = 5
"""How many times its size a JSON body can take once written again (`9e15`, 4.5x)."""
_TWO_BYTE_ESCAPES = '"\\\n\r\t\b\f'

RawReader = Callable[[list[ObservationGap]], "bytes | bytearray | None"]
"""Gives a stream's raw text when its line needs it (`_raw.read_back`: it may be read back
from a spill file, hence only on demand); None, with a gap appended, when it cannot."""


@dataclass(slots=True, kw_only=True)
class CallFacts:
    """What the capture saw of one finished call: everything its line is built from."""

    model_call_id: str
    """The id the line carries."""
    dialect: Dialect
    """The dialect of the observed path."""
    model_ref: ModelRef
    """The model server that recorded the call."""
    started_at: float
    """Wall-clock seconds when the app was invoked."""
    completed_at: float
    """Wall-clock seconds when the app finished the response, returned or raised."""
    latency_ms: float
    """Monotonic milliseconds from `started_at` to `completed_at`."""
    ttft_ms: float | None = None
    """Milliseconds to the first body byte that is not an SSE comment; None if none came."""
    request_body: bytes | bytearray = b""
    """The request body as received, up to the cap."""
    request_cut: bool = False
    """True when the request body was longer than the cap."""
    started: bool = False
    """True once the app started the response (`http.response.start`)."""
    status: int | None = None
    """The status the app sent, None before the response started."""
    stream: bool = False
    """True for a `text/event-stream` response."""
    stream_result: StreamResult | None = None
    """The reassembled stream; None when it could not be reassembled (or no stream)."""
    body: bytes | bytearray = b""
    """The decoded body of a reply that is not a stream, up to the cap."""
    raw: RawReader | None = None
    """The decoded SSE text of a stream, up to the cap, on demand; None when the policy keeps none."""
    keep_raw: StreamRawPolicy = "on_failure"
    """When a stream's raw text goes into `response_raw`."""
    response_cut: bool = False
    """True when the decoded response was longer than the cap."""
    capture_failed: bool = False
    """True when the response body could not be captured (undecodable, or a capture bug)."""
    disconnected: bool = False
    """True when the client left before the response ended."""
    exception: BaseException | None = None
    """What the app raised, if it raised."""
    error_category: str | None = None
    """The category the app set on its `CaptureContext`; it wins over the derived one."""
    client_session_id: str | None = None
    """The session the request declared in `x-session-id` (one distinct value), if any."""
    execution: ExecutionFacts | None = None
    """The valid execution facts the app set (`start_model_execution`); None if it set none."""
    max_bytes: int = _DEFAULT_MAX_BYTES
    """`capture_max_bytes`: also the bound on the written size of each raw text."""
    gaps: list[ObservationGap] = field(default_factory=list)
    """What the capture left out while the call ran (an undecodable body, the memory budget)."""


def build_line(facts: CallFacts) -> CaptureLine:
    """The call's `CaptureLine`."""
    line = CaptureLine(
        format=CAPTURE_LINE_FORMAT,
        model_call_id=facts.model_call_id,
        dialect=facts.dialect,
        model_ref=facts.model_ref,
        started_at=facts.started_at,
        completed_at=facts.completed_at,
        latency_ms=facts.latency_ms,
        latency_ttft_ms=facts.ttft_ms,
        status_code=facts.status,
    )
    if facts.client_session_id is not None:
        line.client_session_id = facts.client_session_id
    gaps = list(facts.gaps)
    execution = facts.execution
    if execution is not None:  # all four, null where unknown, as NeMo Gym writes them
        line.upstream_attempted = execution.upstream_attempted
        line.response_source = execution.response_source
        line.upstream_status_code = execution.upstream_status_code
        line.local_response_reason = execution.local_response_reason
        gaps += execution.gaps
    if facts.request_body:
        line.request = _parsed("request", facts.request_body, facts, gaps)
        if line.request is None:
            line.request_raw = _text("request_raw", facts.request_body, facts, gaps)
    implied, stream_went_wrong = _response(line, facts, gaps)
    _settle_category(line, facts, implied, gaps)
    if facts.raw is not None:
        policy = facts.keep_raw
        if policy == "always" or (
            policy == "on_failure" and (stream_went_wrong or line.error_category is not None)
        ):
            raw = facts.raw(gaps)
            if raw is not None:
                line.response_raw = _text("response_raw", raw, facts, gaps)
    if facts.request_cut or facts.response_cut or any(g.code == "raw_text_cut" for g in gaps):
        line.capture_cut = True
    if gaps:
        line.gaps = gaps
    return line


def _text(name: str, data: bytes | bytearray, facts: CallFacts, gaps: list[ObservationGap]) -> str:
    """The text of a raw body for field `name`, cut (with a gap) past its written bound."""
    text, cut = text_within(data, facts.max_bytes)
    if cut:
        gaps.append(
            ObservationGap(
                code="raw_text_cut",
                detail=f"{name}: the text of the {len(data)}-byte body was cut where it reached "
                "capture_max_bytes as written (a control or invalid byte takes up to 6 bytes)",
            )
        )
    return text


def _parsed(
    name: str, data: bytes | bytearray, facts: CallFacts, gaps: list[ObservationGap]
) -> dict[str, Any] | None:
    """The body as a JSON object, None when it is not one or would be written too big.

    Written again, a number can take more room than it was sent in (`1e15` becomes
    `1000000000000000.0`): a body that could pass the cap that way is measured, and kept as
    text (with a `payload_as_text` gap) when its parsed form would.
    """
    value = _codec.decode_object(data)
    if value is None or len(data) * _MAX_NUMBER_GROWTH <= facts.max_bytes:
        return value
    if len(_codec.encode(value)) <= facts.max_bytes:
        return value
    gaps.append(
        ObservationGap(
            code="payload_as_text",
            detail=f"{name}: written again, its parsed form would pass capture_max_bytes "
            "(numbers spelled longer than sent), so it is kept as text",
        )
    )
    return None


def text_within(data: bytes | bytearray, limit: int) -> tuple[str, bool]:
    """(text of `data`, whether it was cut): the text takes at most `limit` bytes once written.

    Invalid UTF-8 bytes become `\\xNN` escapes (`_codec.raw_text`); a two-byte JSON escape
    counts as one byte (see the module docstring). A big body is turned into text and
    measured a slice at a time, so measuring holds one encoded slice beside the text.
    """
    if len(data) <= limit and (len(data) * 6 <= limit or not _WIDE_ESCAPES.search(data)):
        try:
            return data.decode("utf-8"), False
        except UnicodeDecodeError:
            if len(data) * 6 <= limit:
                return _codec.raw_text(data), False
    decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")
    pieces: list[str] = []
    used = 0
    view = memoryview(data)
    for start in range(0, len(data), _SLICE):
        end = min(start + _SLICE, len(data))
        piece = decoder.decode(view[start:end], final=end == len(data))
        size = _written_size(piece)
        if used + size > limit:
            pieces.append(_prefix_within(piece, limit - used))
            return "".join(pieces), True
        used += size
        pieces.append(piece)
    return "".join(pieces), False


def _written_size(text: str) -> int:
    """Bytes `text` takes in a JSON string, a two-byte escape counted as one."""
    return len(_codec.encode(text)) - 2 - sum(text.count(c) for c in _TWO_BYTE_ESCAPES)


def _prefix_within(text: str, room: int) -> str:
    """The longest prefix of `text` whose written size is at most `room` (binary search)."""
    low, high = 0, min(len(text), max(room, 0))
    while low < high:
        middle = (low + high + 1) // 2
        if _written_size(text[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def _response(
    line: CaptureLine, facts: CallFacts, gaps: list[ObservationGap]
) -> tuple[str | None, bool]:
    """Fill in the response; (category the body implies for a 2xx reply, stream went wrong).

    Whether a stream went wrong decides whether its raw text is kept.
    """
    if facts.stream:
        line.stream = True
        result = None if facts.capture_failed else facts.stream_result
        if result is not None:
            line.response = result.response
        return stream_outcome(result, cut=facts.response_cut)
    if facts.capture_failed:
        return "capture_parse_error", False
    if facts.body:
        known = len(gaps)
        line.response = _parsed("response", facts.body, facts, gaps)
        too_big = len(gaps) > known  # valid JSON, kept as text only for its size
        if line.response is None:
            line.response_raw = _text("response_raw", facts.body, facts, gaps)
            if not facts.response_cut and not too_big:
                return "capture_parse_error", False
    return None, False


def _settle_category(
    line: CaptureLine, facts: CallFacts, implied: str | None, gaps: list[ObservationGap]
) -> None:
    """Set `error_category` (and, for an app that raised first, the status it carried)."""
    if facts.disconnected:
        line.error_category = "cancelled"
    elif facts.exception is not None:
        category, status, body = classify_exception(facts.exception)
        if not facts.started:
            line.status_code = status
            category = error_category_for_status(status) or category
            if body is not None:
                line.response_raw = _text("response_raw", body, facts, gaps)
        line.error_category = category
    else:
        line.error_category = error_category_for_status(facts.status)
        if line.error_category is None and facts.status is not None and 200 <= facts.status < 300:
            line.error_category = implied
    if facts.error_category is not None:
        line.error_category = facts.error_category
    elif (
        facts.execution is not None
        and facts.execution.local_response_reason == CONTEXT_LENGTH_EXCEEDED
    ):
        line.error_category = CONTEXT_LENGTH_EXCEEDED
