"""Typed records and metrics derived from capture files.

A `ModelCallRecord` is one capture line plus what its dialect derives from the request
and response (ids, model, tokens, tool calls, reasoning). `call_index` is the line's
durable append position in its file, numbered as NeMo Gym numbers it (blank lines not
counted, damaged lines counted). Metrics are sums over the known values of a set of
records: a value no record reported stays null, never 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TypeVar

import msgspec

from . import _codec
from .contracts import CaptureLine, ModelCallMetrics, ModelCallRecord
from .dialects import DIALECTS, Derived
from .store import CaptureStore

__all__ = [
    "aggregate_model_call_metrics",
    "aggregate_model_call_records",
    "build_model_call_record",
    "read_available_model_call_records",
    "read_model_call_records",
]

_N = TypeVar("_N", int, float)


def _derive(line: CaptureLine) -> Derived:
    module = DIALECTS.get(line.dialect) if line.dialect is not None else None
    if module is None:
        return Derived()
    try:
        return module.derive(line.request, line.response)
    except Exception:  # noqa: BLE001 - derive promises not to raise; a record must still be built
        return Derived()


def _text(value: str | None | msgspec.UnsetType) -> str | None:
    return None if isinstance(value, msgspec.UnsetType) else value


def build_model_call_record(line: CaptureLine, call_index: int) -> ModelCallRecord:
    """Build the typed record of one capture line at position `call_index` of its file."""
    d = _derive(line)
    return ModelCallRecord(
        model_call_id=line.model_call_id,
        response_id=d.response_id,
        call_index=call_index,
        model_ref=line.model_ref,
        model=d.model,
        dialect=line.dialect,
        status_code=line.status_code,
        response_status=d.response_status,
        finish_reason=d.finish_reason,
        started_at=line.started_at,
        completed_at=line.completed_at,
        tokens_in=d.tokens_in,
        tokens_out=d.tokens_out,
        tokens_reasoning=d.tokens_reasoning,
        tokens_total=d.tokens_total,
        cached_tokens=d.cached_tokens,
        cache_hit=d.cache_hit,
        cache_creation_tokens=d.cache_creation_tokens,
        tool_calls=list(d.tool_calls),
        reasoning_content=d.reasoning_content,
        error_category=line.error_category,
        latency_total_ms=line.latency_ms,
        latency_ttft_ms=line.latency_ttft_ms,
        request=line.request,
        response=line.response,
        request_raw=_text(line.request_raw),
        response_raw=_text(line.response_raw),
        capture_cut=line.capture_cut is True,
    )


def read_model_call_records(store: CaptureStore, rollout_id: str) -> list[ModelCallRecord]:
    """Every record of a rollout, in append order.

    Raises `DamagedLineError` (a `ValueError`) naming the file and line when a line is
    damaged; use `read_available_model_call_records` to skip and count such lines.
    A rollout without a capture file has no records.
    """
    with _codec.bulk_decoding():
        return [build_model_call_record(line, index) for index, line in enumerate(store.read(rollout_id))]


def read_available_model_call_records(
    store: CaptureStore, rollout_id: str
) -> tuple[list[ModelCallRecord], int]:
    """The records of every readable line, and the number of damaged lines skipped.

    A damaged line keeps its position: the records after it keep their `call_index`.
    """
    with _codec.bulk_decoding():
        lines, damaged = store.read_available(rollout_id)
        return [build_model_call_record(line, index) for index, line in lines], damaged


def _sum(values: Iterable[_N | None]) -> _N | None:
    total: _N | None = None
    for value in values:
        if value is not None:
            total = value if total is None else total + value
    return total


def aggregate_model_call_records(records: Iterable[ModelCallRecord]) -> ModelCallMetrics:
    """Sum the known values of `records`; a field no record reported stays null.

    `error_categories` counts the calls of each error category (calls without an error
    are not counted); it is `{}` when no call failed.
    """
    items = list(records)
    return ModelCallMetrics(
        num_calls=len(items),
        tokens_in=_sum(r.tokens_in for r in items),
        tokens_out=_sum(r.tokens_out for r in items),
        tokens_reasoning=_sum(r.tokens_reasoning for r in items),
        tokens_total=_sum(r.tokens_total for r in items),
        cached_tokens=_sum(r.cached_tokens for r in items),
        latency_total_ms=_sum(r.latency_total_ms for r in items),
        cache_creation_tokens=_sum(r.cache_creation_tokens for r in items),
        error_categories=dict(
            sorted(Counter(r.error_category for r in items if r.error_category is not None).items())
        ),
    )


def aggregate_model_call_metrics(store: CaptureStore, rollout_id: str) -> ModelCallMetrics:
    """Metrics of a rollout's readable records (damaged lines are skipped, as in the attachment)."""
    records, _ = read_available_model_call_records(store, rollout_id)
    return aggregate_model_call_records(records)
