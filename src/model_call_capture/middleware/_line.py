"""The capture line of one call, built from what the capture saw: a pure function, no I/O."""

from __future__ import annotations

from dataclasses import dataclass

from .. import _codec
from ..contracts import CAPTURE_LINE_FORMAT, CaptureLine, Dialect, ModelRef, StreamRawPolicy
from ..dialects import StreamResult
from ._outcome import classify_exception, error_category_for_status, stream_outcome

__all__ = ["CallFacts", "build_line"]


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
    raw: bytes | bytearray | None = None
    """The decoded SSE text of a stream, up to the cap; None when the policy keeps none."""
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
    if facts.request_body:
        line.request = _codec.decode_object(facts.request_body)
        if line.request is None:
            line.request_raw = _codec.raw_text(facts.request_body)
    implied, stream_went_wrong = _response(line, facts)
    _settle_category(line, facts, implied)
    if facts.raw is not None:
        policy = facts.keep_raw
        if policy == "always" or (
            policy == "on_failure" and (stream_went_wrong or line.error_category is not None)
        ):
            line.response_raw = _codec.raw_text(facts.raw)
    if facts.request_cut or facts.response_cut:
        line.capture_cut = True
    return line


def _response(line: CaptureLine, facts: CallFacts) -> tuple[str | None, bool]:
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
        line.response = _codec.decode_object(facts.body)
        if line.response is None:
            line.response_raw = _codec.raw_text(facts.body)
            if not facts.response_cut:
                return "capture_parse_error", False
    return None, False


def _settle_category(line: CaptureLine, facts: CallFacts, implied: str | None) -> None:
    """Set `error_category` (and, for an app that raised first, the status it carried)."""
    if facts.disconnected:
        line.error_category = "cancelled"
    elif facts.exception is not None:
        category, status, body = classify_exception(facts.exception)
        if not facts.started:
            line.status_code = status
            category = error_category_for_status(status) or category
            if body is not None:
                line.response_raw = _codec.raw_text(body)
        line.error_category = category
    else:
        line.error_category = error_category_for_status(facts.status)
        if line.error_category is None and facts.status is not None and 200 <= facts.status < 300:
            line.error_category = implied
    if facts.error_category is not None:
        line.error_category = facts.error_category
