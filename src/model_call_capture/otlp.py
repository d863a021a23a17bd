"""GenAI spans sent over OTLP/HTTP (protobuf) by the OpenTelemetry SDK: the `[otel]` extra.

`genai.record_span` says what a call's span is; this module makes SDK spans of it and sends
them with the SDK's `OTLPSpanExporter` (nothing is encoded by hand). Headers for an
authenticated backend come from the caller or, when it gives none, from the standard
`OTEL_EXPORTER_OTLP_TRACES_HEADERS` / `OTEL_EXPORTER_OTLP_HEADERS` variables, which the
exporter reads itself (as it reads the timeout, compression and certificates).

- `SpanSender` sends span descriptions in bounded batches and raises `OtlpExportError`
  when the endpoint refuses a batch: the batch export (`mcc export --format otlp`).
- `LiveSpans` is the live form: capture hands it each line once the line is durable
  (`submit`, which never blocks and never raises); a thread turns lines into spans and
  sends them in batches. Its queue is bounded: what does not fit is dropped, counted
  (`dropped`) and logged, so a slow or absent backend never slows or fails a call.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from .contracts import CaptureLine, ModelCallRecord
from .errors import OtlpExportError
from .genai import GenAISpan, record_span
from .records import build_model_call_record
from .redaction import SECRET_KEY_PATTERNS, Redactor

__all__ = ["LiveSpans", "SpanSender", "redacted_content", "traces_url"]

logger = logging.getLogger("model_call_capture.otlp")

_SCOPE = "model_call_capture"
_TRACES_PATH = "/v1/traces"


def _sdk() -> Any:
    """The SDK modules, or `OtlpExportError` naming the extra to install."""
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk import resources
        from opentelemetry.sdk import trace as sdk_trace
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    except ImportError as exc:
        raise OtlpExportError(
            f"OTLP export needs the OpenTelemetry SDK: pip install 'model-call-capture[otel]' ({exc})"
        ) from None
    return trace, OTLPSpanExporter, resources, sdk_trace, InstrumentationScope


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of `endpoint`: a bare origin gets `/v1/traces` appended."""
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OtlpExportError(f"not an http(s) OTLP endpoint: {endpoint!r}")
    if parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path=_TRACES_PATH))
    return endpoint


_default_redactor = Redactor(patterns=SECRET_KEY_PATTERNS)


def redacted_content(
    record: ModelCallRecord, redactor: Redactor | None = None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The call's (request, response) after `redactor` (by default the common API-key
    patterns, `redaction.SECRET_KEY_PATTERNS`): what content spans may carry."""
    line = CaptureLine(
        request=record.request if isinstance(record.request, dict) else None,
        response=record.response if isinstance(record.response, dict) else None,
    )
    line = (redactor or _default_redactor)(line)
    return line.request, line.response


class SpanSender:
    """Sends GenAI span descriptions to one OTLP/HTTP endpoint, in batches of `batch_size`."""

    def __init__(
        self,
        endpoint: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        service_name: str = "model-call-capture",
        batch_size: int = 256,
    ) -> None:
        trace, exporter_class, resources, sdk_trace, scope_class = _sdk()
        self._trace = trace
        self._sdk_trace = sdk_trace
        self.endpoint = traces_url(endpoint)
        """The traces URL spans are posted to."""
        # None lets the exporter read OTEL_EXPORTER_OTLP_(TRACES_)HEADERS itself.
        self._exporter = exporter_class(
            endpoint=self.endpoint, headers=dict(headers) if headers else None, timeout=timeout
        )
        self._resource = resources.Resource.create({"service.name": service_name})
        self._scope = scope_class(_SCOPE)
        self.batch_size = batch_size
        """Most spans sent in one request."""
        self.sent = 0
        """Spans the endpoint accepted so far."""

    def _sdk_span(self, span: GenAISpan) -> Any:
        trace = self._trace
        context = trace.SpanContext(
            trace_id=span.trace_id,
            span_id=span.span_id,
            is_remote=False,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
        )
        status = (
            trace.Status(trace.StatusCode.ERROR, span.error)
            if span.error is not None
            else trace.Status(trace.StatusCode.UNSET)
        )
        return self._sdk_trace.ReadableSpan(
            name=span.name,
            context=context,
            resource=self._resource,
            attributes=span.attributes,
            kind=trace.SpanKind.CLIENT,
            status=status,
            start_time=span.start_ns,
            end_time=span.end_ns,
            instrumentation_scope=self._scope,
        )

    def send_batch(self, spans: list[GenAISpan]) -> None:
        """Send `spans` in one request; `OtlpExportError` when the endpoint refuses them."""
        if not spans:
            return
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self._exporter.export([self._sdk_span(s) for s in spans])
        if result is not SpanExportResult.SUCCESS:
            raise OtlpExportError(f"{self.endpoint} did not accept {len(spans)} spans")
        self.sent += len(spans)

    def send(self, spans: Iterable[GenAISpan]) -> int:
        """Send every span of `spans` in batches (memory: one batch); the number sent."""
        batch: list[GenAISpan] = []
        count = 0
        for span in spans:
            batch.append(span)
            if len(batch) >= self.batch_size:
                self.send_batch(batch)
                count += len(batch)
                batch = []
        self.send_batch(batch)
        return count + len(batch)

    def shutdown(self) -> None:
        """Release the exporter's connections."""
        self._exporter.shutdown()


class LiveSpans:
    """Spans of captured calls sent as they are captured, off the caller's thread.

    `submit(rollout_id, line)` builds the call's span in the caller's thread (as `mcc
    export --format otlp` would, without content: a few attributes, never the payloads)
    and puts it in a bounded queue; a daemon thread sends them in batches of up to
    `batch_size`, at least every `interval` seconds. A full queue drops the span:
    `dropped` counts them and the first drop, then every thousandth, is logged. A batch the endpoint refuses is counted in `failed` and logged,
    never retried forever. `close()` sends what is queued (up to `timeout` seconds).
    """

    def __init__(
        self,
        endpoint: str,
        *,
        headers: Mapping[str, str] | None = None,
        max_queue: int = 4096,
        batch_size: int = 256,
        interval: float = 1.0,
    ) -> None:
        self._sender = SpanSender(endpoint, headers=headers, batch_size=batch_size, timeout=10)
        self._queue: queue.Queue[GenAISpan | None] = queue.Queue(max_queue)
        self._interval = interval
        self._lock = threading.Lock()
        self.dropped = 0
        """Spans dropped because the queue was full."""
        self.failed = 0
        """Spans the endpoint did not accept, or lines that could not become a span."""
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="mcc-otlp-live", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    @property
    def sent(self) -> int:
        """Spans the endpoint accepted so far."""
        return self._sender.sent

    def submit(self, rollout_id: str, line: CaptureLine) -> None:
        """Queue the span of `line`, a durable line of `rollout_id`; never blocks or raises."""
        span = self._span(rollout_id, line)
        if span is None:
            return
        try:
            self._queue.put_nowait(span)
        except queue.Full:
            with self._lock:
                self.dropped += 1
                dropped = self.dropped
            if dropped == 1 or dropped % 1000 == 0:
                logger.warning(
                    "live OTLP spans: queue full, %d spans dropped so far (%s)",
                    dropped,
                    self._sender.endpoint,
                )

    def _span(self, rollout_id: str, line: CaptureLine) -> GenAISpan | None:
        try:
            return record_span(build_model_call_record(line, 0), rollout_id)
        except Exception:  # a surprise in a line must never reach the capture's thread
            with self._lock:
                self.failed += 1
                first = self.failed == 1
            if first:
                logger.exception("live OTLP spans: a line could not become a span")
            return None

    def _flush(self, batch: list[GenAISpan]) -> None:
        try:
            self._sender.send_batch(batch)
        except Exception as exc:
            with self._lock:
                self.failed += len(batch)
            logger.warning("live OTLP spans: %d spans not sent: %s", len(batch), exc)

    def _run(self) -> None:
        batch: list[GenAISpan] = []
        deadline = 0.0
        while True:
            wait = self._interval if not batch else max(0.0, deadline - time.monotonic())
            try:
                span = self._queue.get(timeout=wait)
            except queue.Empty:
                pass  # the batch's time is up
            else:
                if span is None:
                    self._flush(batch)
                    return
                if not batch:
                    deadline = time.monotonic() + self._interval
                batch.append(span)
            if batch and (len(batch) >= self._sender.batch_size or time.monotonic() >= deadline):
                self._flush(batch)
                batch = []

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (waiting up to `timeout` seconds), then stop the thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)
        self._sender.shutdown()
