"""The OTLP sink (`format="otlp"`): each call's OpenTelemetry GenAI span, sent to an
OTLP/HTTP endpoint by the SDK (`otlp.SpanSender`, the `[otel]` extra).

A worker turns one rollout's calls into span descriptions (`genai.record_span`; with
`content`, the request and response after the redaction of API keys); a call without a
start or end time has no span and is counted in `calls_left_out`. The caller sends the
spans in batches as the parts come (memory: one batch and the parts in flight); an
endpoint that refuses a batch raises `OtlpExportError`.
"""

from __future__ import annotations

import datetime
import importlib.util
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ExportError, OtlpExportError, UnsupportedFormatError
from ..genai import GenAISpan, record_span
from ..otlp import SpanSender, redacted_content, traces_url
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..store import Rollout
from ._sent import UnsentRecords, shown_endpoint
from ._sink import ExportOptions, Output, Part, Sink, Skipped, one_group_each

__all__ = ["OtlpSink", "otlp_sink"]

_OPTIONS = ("endpoint", "headers", "content", "since")


@dataclass(frozen=True, slots=True)
class OtlpSink:
    """The GenAI span of every call, sent to `endpoint` (its traces URL)."""

    endpoint: str
    headers: Mapping[str, str] | None = None
    """Request headers; None lets the exporter read `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`."""
    content: bool = False
    """Add the (redacted) messages and tool definitions."""
    since: float | None = None
    """Only calls started at or after this (Unix seconds)."""
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    """A longer capture line is counted as damaged, never held."""
    unit: str = "spans"
    preload: tuple[str, ...] = ()
    private: bool = False
    output: Output = "endpoint"
    destination: str = field(init=False, default="")

    def __post_init__(self) -> None:
        # For people and the state file: no userinfo or query (they may hold credentials).
        object.__setattr__(self, "destination", shown_endpoint(traces_url(self.endpoint)))

    @property
    def resume_options(self) -> dict[str, Any]:
        """What an incremental export's state must agree on: what the spans hold."""
        return {"content": self.content}

    def groups(self, rollouts: Sequence[Rollout]) -> list[Sequence[Rollout]]:
        """One rollout a part."""
        return one_group_each(rollouts)

    def part(self, rollouts: Sequence[Rollout]) -> Part:
        """The span descriptions of the rollout's calls (started at or after `since`); of an
        incremental export's rollout (`_sent.Unsent`), only of the calls not sent before."""
        (rollout,) = rollouts
        spans: list[GenAISpan] = []
        untimed = 0
        stream = UnsentRecords(rollout, max_line_bytes=self.max_line_bytes)
        try:
            for record in stream:
                started = record.started_at
                if self.since is not None and (started is None or started < self.since):
                    continue
                content = redacted_content(record) if self.content else None
                span = record_span(record, rollout.id, content=content)
                if span is None:
                    untimed += 1
                else:
                    spans.append(span)
        except UnsupportedFormatError as exc:
            # Left out whole, with no marks: an incremental export sends it once it can be read.
            reason = " ".join(str(exc).split())
            return Part([], 0, stream.damaged, skipped=(Skipped(rollout.id, reason),))
        return Part(spans, len(spans), stream.damaged, calls_left_out=untimed, sent=(stream.marks,))

    def write(self, parts: Iterator[Part], out: Path | None) -> None:
        """Send the spans in batches as the parts come; `OtlpExportError` if refused."""
        sender = SpanSender(
            self.endpoint, headers=self.headers, batch_size=64 if self.content else 256
        )
        try:
            sender.send(span for part in parts for span in part.data)
        finally:
            sender.shutdown()


def otlp_sink(options: ExportOptions) -> Sink:
    """The `otlp` format's factory: `endpoint` (required), `headers`, `content`, `since`
    (ISO 8601 text or Unix seconds)."""
    given = dict(options.format_options)
    unknown = sorted(set(given) - set(_OPTIONS))
    if unknown:
        raise ExportError(f"--format otlp: no option {unknown[0]!r} (one of {', '.join(_OPTIONS)})")
    endpoint = given.get("endpoint")
    if not endpoint:
        raise ExportError("--format otlp needs --endpoint URL")
    if importlib.util.find_spec("opentelemetry") is None:
        raise ExportError(
            "OTLP export needs the OpenTelemetry SDK: pip install 'model-call-capture[otel]'"
        )
    try:
        return OtlpSink(
            str(endpoint),
            headers=given.get("headers") or None,
            content=bool(given.get("content")),
            since=_since(given.get("since")),
            max_line_bytes=options.max_line_bytes,
        )
    except OtlpExportError as exc:
        raise ExportError(str(exc)) from None


def _since(value: Any) -> float | None:
    """Unix seconds from a number, or from ISO 8601 text (UTC when it names no zone)."""
    if value is None or isinstance(value, (int, float)):
        return value
    text = str(value)
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ExportError(f"--since {text!r}: not ISO 8601 or Unix seconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()
