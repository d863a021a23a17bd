"""Typed records and metrics derived from capture files.

A `ModelCallRecord` is one capture line plus what its dialect derives from the request
and response (ids, model, tokens, tool calls, reasoning). `call_index` is the line's
durable append position in its rollout's files, numbered as NeMo Gym numbers it (blank
lines not counted, damaged lines counted; a rollout of several files, its shared file and
its segments, is read merged by `completed_at`, `store.RolloutLines`). Metrics are sums over the known values of a set of
records: a value no record reported stays null, never 0.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec
from msgspec import UNSET

from . import _codec
from .contracts import CaptureLine, ModelCallMetrics, ModelCallRecord
from .dialects import DIALECTS, Derived
from .dialects.base import RequestView
from .errors import UnsupportedFormatError
from .reader import DEFAULT_MAX_LINE_BYTES, LineDecoder, decode_capture_line
from .store import CaptureStore, Rollout, RolloutLines

__all__ = [
    "Payloads",
    "RecordStream",
    "aggregate_model_call_metrics",
    "aggregate_model_call_records",
    "build_model_call_record",
    "decode_line_lazily",
    "decode_line_without_payloads",
    "decode_run_without_payloads",
    "iter_model_call_records",
    "iter_rollout_records",
    "read_available_model_call_records",
    "read_model_call_records",
]

_N = TypeVar("_N", int, float)


class _LazyLine(CaptureLine, kw_only=True):
    """A capture line whose payloads stay JSON text (`msgspec.Raw`) until a record's are read.

    Every other field is decoded and validated as `CaptureLine` does; `_decode_line` checks
    what msgspec does not check when it skips a payload (an object or null, valid UTF-8).
    """

    # msgspec takes `Raw` alone or with UNSET only (in a union with None it would decode nothing).
    request: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET  # type: ignore[assignment]
    response: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET  # type: ignore[assignment]


class _HeadLine(CaptureLine, kw_only=True):
    """A capture line decoded for its record's fields only, in one pass over its text.

    The request is decoded straight into the members `derive` reads (`RequestView`, the
    rest skipped in C), the response kept as JSON text for its dialect's view; every other
    field is decoded and validated as `CaptureLine` does.
    """

    request: RequestView | None | msgspec.UnsetType = msgspec.UNSET  # type: ignore[assignment]
    response: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET  # type: ignore[assignment]


_lazy_line: msgspec.json.Decoder[Any] = msgspec.json.Decoder(_LazyLine)
_head_line = msgspec.json.Decoder(_HeadLine)
_NULL = ord("n")
_OBJECT = ord("{")
# Half the cost of `memoryview(payload)[0]`, and every line's two payloads go through it.
_first_byte = struct.Struct("B").unpack_from


class _NotAnObject(ValueError):
    pass


_REFUSED = (msgspec.DecodeError, UnicodeDecodeError, RecursionError, _NotAnObject, struct.error)
"""What a line the fast decoders do not take raises (it is decoded again by the fallback)."""


def _request_text(payload: msgspec.Raw | msgspec.UnsetType) -> msgspec.Raw | None:
    """`_object_text` of a request; `_NotAnObject` for an absent one (the full decoder then
    judges whether the line is a capture line at all: `reader.CAPTURE_MEMBERS`)."""
    if type(payload) is not msgspec.Raw:  # inline, not a call of `_object_text`: every line
        raise _NotAnObject
    first = _first_byte(payload)[0]
    if first == _OBJECT:
        return payload
    if first == _NULL:
        return None
    raise _NotAnObject


def _object_text(payload: msgspec.Raw | msgspec.UnsetType) -> msgspec.Raw | None:
    """The JSON text of an object payload, None for null or absent; `_NotAnObject` else."""
    if type(payload) is not msgspec.Raw:
        return None
    first = _first_byte(payload)[0]  # the text of a JSON value: no leading white space
    if first == _OBJECT:
        return payload
    if first == _NULL:
        return None
    raise _NotAnObject


def _request_members(view: RequestView | None | msgspec.UnsetType) -> dict[str, Any] | None:
    if view is None:
        return None
    if view is msgspec.UNSET:
        raise _NotAnObject  # absent: the full decoder judges the line (`CAPTURE_MEMBERS`)
    return msgspec.structs.asdict(view)


def _checked_payloads(line: Any, request: Callable[[Any], Any]) -> CaptureLine:
    """`line` (from a fast decoder) with `request` applied to its request and its response
    checked to be an object's text or None; `_NotAnObject` (or `struct.error`) else."""
    # Each is stored back only when checking changed it: a Struct's attribute store is the
    # slow path of the interpreter, and an object's text (nearly every line) stays as it is.
    payload = line.request
    if (checked := request(payload)) is not payload:
        line.request = checked
    payload = line.response
    if (checked := _object_text(payload)) is not payload:
        line.response = checked
    return line  # type: ignore[no-any-return]


def _decode_checked(
    decoder: msgspec.json.Decoder[Any],
    request: Callable[[Any], Any],
    raw: bytes,
    path: Path | None,
    line_index: int | None,
    fallback: LineDecoder,
) -> CaptureLine:
    """`decoder`'s line with `request` applied to its request, or `fallback`'s verdict.

    A line the decoder refuses, or accepts where a full decode might not (a payload that
    is not an object or null, bytes that are not UTF-8, which msgspec does not check in
    text it skips), is decoded again by `fallback`, which raises its error or returns the
    line as it reads it.
    """
    try:
        line = _checked_payloads(decoder.decode(raw), request)
    except _REFUSED:
        return fallback(raw, path=path, line_index=line_index)
    if not raw.isascii() and not _is_utf8(raw):
        return fallback(raw, path=path, line_index=line_index)
    # No `check_format`: `format` decoded as its v1 literal, so any other value was refused above.
    return line


def decode_line_lazily(raw: bytes, *, path: Path | None, line_index: int | None) -> CaptureLine:
    """Decode one line as `reader.decode_capture_line` does, leaving the payloads as JSON text.

    Same verdict for every line (see `_decode_checked`; `decode_capture_line` decodes the
    lines it cannot take): the payloads are an object's JSON text (`msgspec.Raw`) or
    None, or dicts when the line had to be decoded again.
    """
    return _decode_checked(_lazy_line, _request_text, raw, path, line_index, decode_capture_line)


def decode_line_without_payloads(
    raw: bytes, *, path: Path | None, line_index: int | None
) -> CaptureLine:
    """Decode one line for a record without payloads: the verdict and values of `decode_line_lazily`.

    One pass over the text: the request is decoded into the members `derive` reads
    (`RequestView`; the rest is skipped, not kept) and the returned line's `request` is a
    dict of those members only; its `response` is the response object's JSON text (or
    None). A line this pass does not take as it is goes to `decode_line_lazily`, so every
    line gives the record (or the error) it gives read with its payloads, down to the one
    exception `decode_line_lazily` documents. For `build_model_call_record(...,
    payloads=False)` only: the payloads of the returned line are incomplete.
    """
    return _decode_checked(_head_line, _request_members, raw, path, line_index, decode_line_lazily)


def decode_run_without_payloads(run: memoryview) -> list[CaptureLine] | None:
    """The lines of a run (`reader.LineRun.objects`: one object a line, valid UTF-8) as
    `decode_line_without_payloads` decodes each; None when any is not taken as it is.

    One call into msgspec for the run's lines: no copy of each line out of its chunk, and
    no Python call a line but the payloads' check. The lines' response texts point into the
    chunk, which they keep alive until the records are built. On None the caller decodes
    the run's lines one by one, which gives each its own verdict.
    """
    try:
        lines: list[Any] = _head_line.decode_lines(run)
        for line in lines:
            _checked_payloads(line, _request_members)
    except _REFUSED:
        return None
    return lines


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


Payloads = Literal["lazy", "omitted"]
"""How records read from a file hold `request`, `response`, `request_raw` and `response_raw`.

- `lazy` (the default): `request` and `response` stay the line's JSON text until first
  read, then are decoded once (`contracts.ModelCallRecord`); lines are judged with the
  one exception in docs/compatibility.md.
- `omitted`: the four payload fields are left unset (as in an attachment without
  payloads) and the payloads skipped while each line is decoded in one pass
  (`decode_line_without_payloads`); records and verdicts are those of `lazy` otherwise.
"""

_DECODERS: dict[str, LineDecoder] = {
    "lazy": decode_line_lazily,
    "omitted": decode_line_without_payloads,
}


class RecordStream:
    """The records of one rollout, built one at a time as it is iterated (bounded memory).

    Every file of the rollout is read (`store.RolloutLines`: several merged in one
    documented order), and a record's `call_index` is its line's index there. `damaged` counts the damaged lines skipped so
    far (a strict stream raises `DamagedLineError` naming the file and line instead);
    `lines` is the reading itself (`count` once done). `payloads` says how records hold
    their payloads (`Payloads`). A line of a newer format raises `UnsupportedFormatError`
    (naming file and line), or with `until_newer` ends the records and is kept in `newer`.
    """

    __slots__ = ("_keep", "lines", "newer")

    def __init__(
        self,
        rollout: Rollout,
        *,
        strict: bool,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        payloads: Payloads = "lazy",
    ) -> None:
        self._keep = payloads != "omitted"
        self.lines = RolloutLines(
            rollout,
            strict=strict,
            max_line_bytes=max_line_bytes,
            decode=_DECODERS[payloads],
            # Lazy payloads would keep each line's whole chunk alive in its record.
            decode_run=None if self._keep else decode_run_without_payloads,
        )
        """The rollout's lines as they are read."""
        self.newer: UnsupportedFormatError | None = None
        """The line of a newer format that ended `until_newer`'s records, if one did."""

    @property
    def damaged(self) -> int:
        """Damaged lines skipped so far (too long, invalid JSON, wrong types, torn)."""
        return self.lines.damaged

    def __iter__(self) -> Iterator[ModelCallRecord]:
        keep = self._keep
        with _codec.bulk_decoding():
            for index, line in self.lines:
                yield build_model_call_record(line, index, payloads=keep)

    def until_newer(self) -> Iterator[ModelCallRecord]:
        """The records up to a line of a newer format, which is kept in `newer` (not raised):
        a reader that goes on past such a rollout names the line and reads the others."""
        try:
            yield from self
        except UnsupportedFormatError as exc:
            self.newer = exc


def iter_model_call_records(
    store: CaptureStore, rollout_id: str, *, strict: bool = False, payloads: Payloads = "lazy"
) -> RecordStream:
    """The records of a rollout one at a time, in append order; see `RecordStream`."""
    return RecordStream(
        store.rollout(rollout_id),
        strict=strict,
        max_line_bytes=store.max_line_bytes,
        payloads=payloads,
    )


def iter_rollout_records(
    rollout: Rollout,
    *,
    strict: bool = False,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    payloads: Payloads = "lazy",
) -> RecordStream:
    """The records of `rollout` (from `CaptureStore.rollouts()` and friends) one at a time.

    See `RecordStream`. Raises `NotARegularFileError` (an `OSError`) when iterated if a
    file is a FIFO or a directory; a missing file has no records.
    """
    return RecordStream(rollout, strict=strict, max_line_bytes=max_line_bytes, payloads=payloads)


def _read(
    store: CaptureStore, rollout_id: str, *, strict: bool, payloads: Payloads
) -> tuple[list[ModelCallRecord], int]:
    stream = iter_model_call_records(store, rollout_id, strict=strict, payloads=payloads)
    records = list(stream)
    return records, stream.damaged


def _derive(line: CaptureLine) -> Derived:
    module = DIALECTS.get(line.dialect) if line.dialect is not None else None
    if module is None:
        return Derived()
    try:
        return module.derive(line.request, line.response)
    except Exception:
        return Derived()


# Every record of a read is a copy of this blank one (every field null or at its default),
# filled in field by field: a call with more than 15 keywords passes them to msgspec as a
# dict (CPython's compiler builds one past 30 stack items), and a record has 23 required
# fields; the copy and its stores cost half of that call (docs/performance.md, row 8e).
_BLANK = ModelCallRecord(
    model_call_id=None,
    response_id=None,
    call_index=0,
    model_ref=None,
    model=None,
    dialect=None,
    status_code=None,
    response_status=None,
    finish_reason=None,
    started_at=None,
    completed_at=None,
    tokens_in=None,
    tokens_out=None,
    tokens_reasoning=None,
    tokens_total=None,
    cached_tokens=None,
    cache_hit=None,
    cache_creation_tokens=None,
    tool_calls=[],  # replaced in every copy, never appended to
    reasoning_content=None,
    error_category=None,
    latency_total_ms=None,
    latency_ttft_ms=None,
)
_blank_record: Callable[[], ModelCallRecord] = _BLANK.__copy__  # type: ignore[attr-defined]


def build_model_call_record(
    line: CaptureLine, call_index: int, *, payloads: bool = True
) -> ModelCallRecord:
    """Build the typed record of one capture line at position `call_index` of its file.

    The record shares the line's payloads: its dicts, or the JSON text of a line read by
    this module, which the record decodes when its payloads are first read. Without
    `payloads` the record's four payload fields are left unset.
    """
    d = _derive(line)
    record = _blank_record()
    record.model_call_id = line.model_call_id
    record.response_id = d.response_id
    record.call_index = call_index
    record.model_ref = line.model_ref
    record.model = d.model
    record.dialect = line.dialect
    record.status_code = line.status_code
    record.response_status = d.response_status
    record.finish_reason = d.finish_reason
    record.started_at = line.started_at
    record.completed_at = line.completed_at
    record.tokens_in = d.tokens_in
    record.tokens_out = d.tokens_out
    record.tokens_reasoning = d.tokens_reasoning
    record.tokens_total = d.tokens_total
    record.cached_tokens = d.cached_tokens
    record.cache_hit = d.cache_hit
    record.cache_creation_tokens = d.cache_creation_tokens
    record.tool_calls = d.tool_calls  # `derive`'s own new list, handed over
    record.reasoning_content = d.reasoning_content
    record.error_category = line.error_category
    record.latency_total_ms = line.latency_ms
    record.latency_ttft_ms = line.latency_ttft_ms
    if payloads:  # else the four payload fields stay unset
        record.request = line.request
        record.response = line.response
        # Absent from the line (`UNSET`): null in the record.
        record.request_raw = None if line.request_raw is UNSET else line.request_raw
        record.response_raw = None if line.response_raw is UNSET else line.response_raw
    _set_rare_fields(record, line, d)
    return record


def _set_rare_fields(record: ModelCallRecord, line: CaptureLine, d: Derived) -> None:
    """Set the record's fields most lines leave at their default, where they do not."""
    if line.capture_cut is True:
        record.capture_cut = True
    if line.client_session_id is not UNSET:
        record.client_session_id = line.client_session_id
    if line.upstream_attempted is not UNSET:
        record.upstream_attempted = line.upstream_attempted
    if line.response_source is not UNSET:
        record.response_source = line.response_source
    if line.upstream_status_code is not UNSET:
        record.upstream_status_code = line.upstream_status_code
    if line.local_response_reason is not UNSET:
        record.local_response_reason = line.local_response_reason
    if d.derivation_problems is not UNSET:
        record.derivation_problems = d.derivation_problems
    if (
        d.prompt_token_ids is not None
        or d.generation_token_ids is not None
        or d.generation_log_probs is not None
    ):
        record.prompt_token_ids = d.prompt_token_ids
        record.generation_token_ids = d.generation_token_ids
        record.generation_log_probs = d.generation_log_probs


def read_model_call_records(
    store: CaptureStore, rollout_id: str, *, payloads: Payloads = "lazy"
) -> list[ModelCallRecord]:
    """Every record of a rollout, in append order.

    Raises `DamagedLineError` (a `ValueError`) naming the file and line when a line is
    damaged; use `read_available_model_call_records` to skip and count such lines.
    A rollout without a capture file has no records. Payloads are decoded when first read
    (`payloads="omitted"`: not kept, see `Payloads`).
    """
    return _read(store, rollout_id, strict=True, payloads=payloads)[0]


def read_available_model_call_records(
    store: CaptureStore, rollout_id: str, *, payloads: Payloads = "lazy"
) -> tuple[list[ModelCallRecord], int]:
    """The records of every readable line, and the number of damaged lines skipped.

    A damaged line keeps its position: the records after it keep their `call_index`.
    The lines are judged as `CaptureStore.read_available` judges them; payloads are
    decoded when first read (`payloads="omitted"`: not kept, see `Payloads`).
    """
    return _read(store, rollout_id, strict=False, payloads=payloads)


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
