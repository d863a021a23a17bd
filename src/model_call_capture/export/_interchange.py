"""`mcc export --format atif | otlp`: the interchange formats, rollout by rollout.

ATIF: one `ATIF-v1.7` trajectory file per rollout (`atif.rollout_to_atif`) and a
`manifest.jsonl` as NeMo Gym writes them, in a temporary directory renamed to `--out`
once every file is durable; a rollout that cannot be mapped is reported with its reason
and the others are still written. OTLP: each call's GenAI span (`genai.record_span`),
sent in batches by the OpenTelemetry SDK (`otlp.SpanSender`). Memory is one rollout's
records (and one batch of spans), whatever the size of the directory.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from .. import _codec
from ..atif import encode_trajectory, rollout_indices, rollout_to_atif
from ..errors import AtifMappingError
from ..genai import GenAISpan, record_span
from ..otlp import SpanSender, redacted_content
from ..records import iter_rollout_records
from ..store import Rollout
from . import _atomic
from ._sent import SentState

__all__ = ["AtifCounts", "OtlpCounts", "send_otlp", "write_atif"]


@dataclass
class AtifCounts:
    """What an ATIF export wrote and what it left out."""

    written: int = 0
    """Trajectory files written."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """`(rollout id, reason)` of each rollout that could not be mapped."""


@dataclass
class OtlpCounts:
    """What an OTLP export sent."""

    spans: int = 0
    """Spans the endpoint accepted."""
    untimed: int = 0
    """Calls without a start or end time, which no span can place."""
    damaged: int = 0
    """Unreadable lines skipped."""


def _write_durable(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _manifest_line(rollout_id: str, name: str, digest: str) -> bytes:
    """The manifest entry of one file, as Gym writes it (sorted keys, no spaces); an id
    that is not Gym's `<task>-<rollout>` is named by `rollout_id` instead of the indices."""
    indices = rollout_indices(rollout_id)
    entry: dict[str, object] = {"expected_sha256": digest, "trajectory_path": name}
    if indices is not None:
        entry["_ng_task_index"], entry["_ng_rollout_index"] = indices
    else:
        entry["rollout_id"] = rollout_id
    return _codec.encode(dict(sorted(entry.items()))) + b"\n"


def _write_trajectories(
    rollouts: Sequence[Rollout],
    tmp: Path,
    manifest: BinaryIO,
    counts: AtifCounts,
    session_id: str,
    agent_name: str,
    agent_version: str,
) -> None:
    for rollout in rollouts:
        stream = iter_rollout_records(rollout)
        try:
            records = list(stream)
            if stream.damaged:
                raise AtifMappingError(f"{stream.damaged} unreadable lines")
            trajectory = rollout_to_atif(
                records,
                rollout_id=rollout.id,
                session_id=session_id,
                agent_name=agent_name,
                agent_version=agent_version,
            )
        except AtifMappingError as exc:
            counts.skipped.append((rollout.id, str(exc)))
            continue
        data = encode_trajectory(trajectory)
        name = f"{rollout.id}.json"
        _write_durable(tmp / name, data)
        manifest.write(_manifest_line(rollout.id, name, hashlib.sha256(data).hexdigest()))
        counts.written += 1


def write_atif(
    rollouts: Sequence[Rollout],
    out: Path,
    *,
    session_id: str,
    agent_name: str,
    agent_version: str,
) -> AtifCounts:
    """Write one trajectory file per rollout of `rollouts` and `manifest.jsonl` into the
    new directory `out`, published by one rename once every file is durable."""
    counts = AtifCounts()
    tmp = _atomic.temp_path(out)
    tmp.mkdir(mode=0o700)
    try:
        # The manifest is written as the files are (memory: one rollout, not the directory).
        fd = os.open(tmp / "manifest.jsonl", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as manifest:
            _write_trajectories(
                rollouts, tmp, manifest, counts, session_id, agent_name, agent_version
            )
            manifest.flush()
            os.fsync(manifest.fileno())
        os.chmod(tmp, 0o755)
        _atomic.fsync_dir(tmp)
        # `out` was checked absent; a non-empty directory made there since makes this fail.
        os.rename(tmp, out)
        _atomic.fsync_dir(out.parent)
    finally:
        _atomic.remove(tmp)
    return counts


def _spans(
    rollouts: Sequence[Rollout],
    counts: OtlpCounts,
    *,
    content: bool,
    since: float | None,
    state: SentState | None,
) -> Iterator[GenAISpan]:
    for rollout in rollouts:
        rollout_id = rollout.id
        first = state.first_unsent(rollout) if state is not None else 0
        if first is None:
            continue  # unchanged since the last incremental export
        stream = iter_rollout_records(rollout)
        end = first
        for record in stream:
            end = record.call_index + 1
            if record.call_index < first:
                continue
            if since is not None and (record.started_at is None or record.started_at < since):
                continue
            span = record_span(
                record, rollout_id, content=redacted_content(record) if content else None
            )
            if span is None:
                counts.untimed += 1
            else:
                yield span
        counts.damaged += stream.damaged
        if state is not None:
            state.sent(rollout, end)


def send_otlp(
    rollouts: Sequence[Rollout],
    sender: SpanSender,
    *,
    content: bool,
    since: float | None = None,
    state: SentState | None = None,
) -> OtlpCounts:
    """Send the span of every call of `rollouts` (started at or after `since`, Unix
    seconds); with `state`, only the calls it does not list as sent, and update it."""
    counts = OtlpCounts()
    spans = _spans(rollouts, counts, content=content, since=since, state=state)
    counts.spans = sender.send(spans)
    return counts
