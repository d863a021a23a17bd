"""Rollout collection: clearing stale captures, attaching ng_model_call_capture, a small collector.

- `_attachment`: the `ng_model_call_capture` attachment of a rollout record, its gap codes,
  and clearing the captures of given rollouts.
- `_collector`: `collect`, which runs rows through an agent and writes each finished
  rollout with its attachment, holding its capture directory's lock and resuming runs.
"""

from __future__ import annotations

from ._attachment import (
    ATTACHMENT_KEY,
    PAYLOAD_FIELDS,
    CaptureDirs,
    build_model_call_capture,
    clear_model_call_captures_for_rollouts,
    merge_model_call_capture_into_record,
    rollout_capture,
)
from ._collector import (
    LOCK_FILE_NAME,
    Agent,
    CollectionSummary,
    CollectorBusyError,
    collect,
    read_rows,
)

__all__ = [
    "ATTACHMENT_KEY",
    "LOCK_FILE_NAME",
    "PAYLOAD_FIELDS",
    "Agent",
    "CaptureDirs",
    "CollectionSummary",
    "CollectorBusyError",
    "build_model_call_capture",
    "clear_model_call_captures_for_rollouts",
    "collect",
    "merge_model_call_capture_into_record",
    "read_rows",
    "rollout_capture",
]
