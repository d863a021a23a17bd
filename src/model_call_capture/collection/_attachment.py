"""The rollout attachment: `ng_model_call_capture`, built from capture files, and clearing them.

The attachment (`merge_model_call_capture_into_record`) adds one key,
`ng_model_call_capture = {rollout_id, metrics, calls, gaps?}`, to a rollout record (in
place, as NeMo Gym 0.7.0 does) and leaves every other field alone. Gaps say why the capture may be incomplete:

- `model_call_capture_unreadable` (detail: the error): a capture file could not be read;
- `model_call_capture_records_unreadable` (detail `count=N`): N lines were damaged; when
  some are in a rollout's segments (the segment layout), `count=N; <file>: n, ...` names
  each file with damaged lines and how many (relative to its capture directory);
- `model_call_capture_incomplete`: a capture write failed for this rollout;
- `model_call_capture_no_records`: nothing was captured, and no other gap explains why.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import Any, TypeAlias, overload

import msgspec

from .. import _codec
from ..contracts import ModelCallCapture, ModelCallRecord, ObservationGap
from ..errors import UnsupportedFormatError
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..records import aggregate_model_call_records, iter_model_call_records, iter_rollout_records
from ..rollout_ids import rollout_id_for_body, validate_rollout_id
from ..store import CaptureStore, Rollout

__all__ = [
    "ATTACHMENT_KEY",
    "PAYLOAD_FIELDS",
    "CaptureDirs",
    "build_model_call_capture",
    "clear_model_call_captures_for_rollouts",
    "merge_model_call_capture_into_record",
    "rollout_capture",
]

ATTACHMENT_KEY = "ng_model_call_capture"
"""The key of the attachment in a rollout record."""
PAYLOAD_FIELDS = ("request", "response", "request_raw", "response_raw")
"""Record fields left out of attached calls unless payloads are asked for."""

CaptureDirs: TypeAlias = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
"""One capture directory, or several (read in order)."""


def _dirs(capture_dirs: CaptureDirs) -> list[Path]:
    if isinstance(capture_dirs, (str, os.PathLike)):
        return [Path(capture_dirs)]
    return [Path(d) for d in capture_dirs]


def _rollout_id_of_record(record: Mapping[str, Any]) -> str:
    rollout_id = rollout_id_for_body(record)
    if rollout_id is None:
        raise ValueError(
            "the record names no rollout: it needs _ng_rollout_id or _ng_task_index and _ng_rollout_index"
        )
    return rollout_id


def build_model_call_capture(
    rollout_id: str, capture_dirs: CaptureDirs, *, include_payloads: bool = False
) -> ModelCallCapture:
    """The typed attachment of one rollout, read from every capture directory.

    Several directories are read in the order given (calls of the first come first).
    Without payloads, the calls' request/response fields are null.
    """
    validate_rollout_id(rollout_id)
    calls: list[ModelCallRecord] = []
    damaged = 0
    incomplete = False
    unreadable: list[str] = []
    named: list[str] = []  # files of the segment layout with damaged lines
    for directory in _dirs(capture_dirs):
        store = CaptureStore(directory)
        try:
            stream = iter_model_call_records(store, rollout_id)
            records = list(stream)
            incomplete = incomplete or store.is_incomplete(rollout_id)
        except (OSError, UnsupportedFormatError) as exc:
            unreadable.append(f"{store.path(rollout_id)}: {exc}")
            continue
        calls.extend(records)
        damaged += stream.damaged
        in_files = stream.lines.damaged_files
        if set(in_files) - {store.path(rollout_id)}:  # NeMo Gym's detail for its one file
            named.extend(f"{f.relative_to(directory)}: {n}" for f, n in sorted(in_files.items()))
    return _capture(rollout_id, calls, damaged, named, unreadable, incomplete, include_payloads)


def rollout_capture(
    rollout: Rollout,
    *,
    incomplete: bool = False,
    include_payloads: bool = False,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> ModelCallCapture:
    """The typed attachment of `rollout` read from its own files (a directory's rollout, or
    the capture files a caller named: `store.rollouts_from`), with the same gaps.

    `incomplete` is whether the rollout's incomplete marker exists, which a `Rollout`
    does not carry.
    """
    calls: list[ModelCallRecord] = []
    damaged = 0
    unreadable: list[str] = []
    stream = iter_rollout_records(rollout, max_line_bytes=max_line_bytes)
    try:
        calls = list(stream)
        damaged = stream.damaged
    except (OSError, UnsupportedFormatError) as exc:
        unreadable.append(f"{stream.lines.file or rollout.id}: {exc}")
    return _capture(rollout.id, calls, damaged, [], unreadable, incomplete, include_payloads)


def _capture(
    rollout_id: str,
    calls: list[ModelCallRecord],
    damaged: int,
    named: list[str],
    unreadable: list[str],
    incomplete: bool,
    include_payloads: bool,
) -> ModelCallCapture:
    """The attachment of what was read: payloads left out unless asked for, and the gaps."""
    if not include_payloads:
        unset = msgspec.UNSET
        calls = [
            msgspec.structs.replace(
                c, request=unset, response=unset, request_raw=unset, response_raw=unset
            )
            for c in calls
        ]
    gaps = [ObservationGap(code="model_call_capture_unreadable", detail=d) for d in unreadable]
    if damaged:
        detail = f"count={damaged}" + (f"; {', '.join(named)}" if named else "")
        gaps.append(ObservationGap(code="model_call_capture_records_unreadable", detail=detail))
    if incomplete:
        gaps.append(ObservationGap(code="model_call_capture_incomplete"))
    if not calls and not gaps:
        gaps.append(ObservationGap(code="model_call_capture_no_records"))
    return ModelCallCapture(
        rollout_id=rollout_id,
        metrics=aggregate_model_call_records(calls),
        calls=calls,
        gaps=gaps or msgspec.UNSET,
    )


@overload
def merge_model_call_capture_into_record(
    record: dict[str, Any],
    capture_dirs: CaptureDirs,
    *,
    include_payloads: bool = False,
    rollout_id: str | None = None,
) -> dict[str, Any]: ...


@overload
def merge_model_call_capture_into_record(
    record: MutableMapping[str, Any],
    capture_dirs: CaptureDirs,
    *,
    include_payloads: bool = False,
    rollout_id: str | None = None,
) -> MutableMapping[str, Any]: ...


def merge_model_call_capture_into_record(
    record: MutableMapping[str, Any],
    capture_dirs: CaptureDirs,
    *,
    include_payloads: bool = False,
    rollout_id: str | None = None,
) -> MutableMapping[str, Any]:
    """Add `ng_model_call_capture` to `record` in place and return `record` itself.

    As NeMo Gym 0.7.0 does: code that ignores the return value still finds the attachment
    in its record. No other field changes; an existing attachment is replaced. If the
    capture cannot be read or the id is refused, the record is left as it was. The rollout id is `rollout_id` if given, else the record's (`_ng_rollout_id`, else its
    task/rollout/attempt indices). Attached calls omit `request`, `response`, `request_raw` and `response_raw`
    unless `include_payloads`; those stay in the capture files. Raises `ValueError` when
    the record names no rollout, `InvalidRolloutIdError` when it names an invalid one.
    """
    if rollout_id is None:
        rollout_id = _rollout_id_of_record(record)
    capture = build_model_call_capture(rollout_id, capture_dirs, include_payloads=include_payloads)
    attachment: dict[str, Any] = _codec.to_builtins(capture)
    if not include_payloads:
        for call in attachment["calls"]:
            for name in PAYLOAD_FIELDS:
                call.pop(name, None)
    record[ATTACHMENT_KEY] = attachment
    return record


def clear_model_call_captures_for_rollouts(
    rows: Iterable[Mapping[str, Any]], capture_dirs: CaptureDirs
) -> list[str]:
    """Remove the capture file and incomplete marker of exactly the rollout-attempt ids of `rows`.

    Returns the ids cleared (in row order, without repeats). Raises `ValueError` for a
    row that names no rollout, before anything is removed.
    """
    ids = list(dict.fromkeys(_rollout_id_of_record(row) for row in rows))
    for directory in _dirs(capture_dirs):
        store = CaptureStore(directory)
        for rollout_id in ids:
            store.clear(rollout_id)
    return ids
