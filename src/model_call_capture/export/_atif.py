"""The ATIF sink (`format="atif"`): one `ATIF-v1.7` trajectory file per rollout and a
`manifest.jsonl` as NeMo Gym writes them, in a new directory.

A worker maps one rollout (`atif.rollout_to_atif`) and encodes it; a rollout that cannot
be mapped (or has unreadable lines) is `Skipped` with the reason and the others are still
written. The caller writes each file durably into the engine's new directory, then the
manifest; the engine renames the directory to the target once every file is durable.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import _codec
from ..atif import encode_trajectory, rollout_indices, rollout_to_atif
from ..errors import AtifMappingError, ExportError, UnsupportedFormatError
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..records import iter_rollout_records
from ..store import Rollout
from ._sink import ExportOptions, Output, Part, Sink, Skipped, one_group_each

__all__ = ["AtifSink", "atif_sink"]

_OPTIONS = ("session_id", "agent_name", "agent_version")


@dataclass(frozen=True, slots=True)
class AtifSink:
    """One ATIF trajectory file per rollout (`<rollout_id>.json`) and `manifest.jsonl`."""

    session_id: str = "mcc"
    agent_name: str = "unknown"
    agent_version: str = "unknown"
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    unit: str = "ATIF trajectories"
    preload: tuple[str, ...] = ()
    private: bool = False
    output: Output = "directory"

    def groups(self, rollouts: Sequence[Rollout]) -> list[Sequence[Rollout]]:
        """One rollout a part."""
        return one_group_each(rollouts)

    def part(self, rollouts: Sequence[Rollout]) -> Part:
        """The rollout's trajectory as `(file name, JSON bytes)`, or its reason to be skipped."""
        (rollout,) = rollouts
        stream = iter_rollout_records(rollout, max_line_bytes=self.max_line_bytes)
        try:
            records = list(stream)
            if stream.damaged:
                raise AtifMappingError(f"{stream.damaged} unreadable lines")
            trajectory = rollout_to_atif(
                records,
                rollout_id=rollout.id,
                session_id=self.session_id,
                agent_name=self.agent_name,
                agent_version=self.agent_version,
            )
        except (AtifMappingError, UnsupportedFormatError) as exc:
            reason = " ".join(str(exc).split())  # a partial trajectory would look whole
            return Part(None, 0, stream.damaged, skipped=(Skipped(rollout.id, reason),))
        return Part((rollout.id, encode_trajectory(trajectory)), 1)

    def write(self, parts: Iterator[Part], out: Path | None) -> None:
        """Each trajectory file, durable, then the manifest naming them with their sha256."""
        if out is None:
            raise TypeError("the ATIF sink writes into a directory")
        # The manifest is written as the files are: memory is a part, not the directory.
        fd = os.open(out / "manifest.jsonl", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as manifest:
            for part in parts:
                if part.data is None:
                    continue
                rollout_id, data = part.data
                name = f"{rollout_id}.json"
                _write_durable(out / name, data)
                manifest.write(_manifest_line(rollout_id, name, hashlib.sha256(data).hexdigest()))
            manifest.flush()
            os.fsync(manifest.fileno())
        os.chmod(out, 0o755)


def atif_sink(options: ExportOptions) -> Sink:
    """The `atif` format's factory: its options are `session_id`, `agent_name`, `agent_version`."""
    unknown = sorted(set(options.format_options) - set(_OPTIONS))
    if unknown:
        raise ExportError(f"--format atif: no option {unknown[0]!r} (one of {', '.join(_OPTIONS)})")
    given = {k: str(v) for k, v in options.format_options.items() if v is not None}
    return AtifSink(
        session_id=given.get("session_id", "mcc"),
        agent_name=given.get("agent_name", "unknown"),
        agent_version=given.get("agent_version", "unknown"),
        max_line_bytes=options.max_line_bytes,
    )


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
