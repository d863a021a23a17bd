"""A sink's parts made on the process pool, in rollout order, and what the export counted.

`run_parts` is the engine's parallel map: the sink cuts the rollouts into groups, the
groups go to `_parallel.map_files` (a few at a time, at most `2 * jobs` in flight, so
memory is bounded by the parts in flight, never by the directory), and each part comes
back in input order with its counts added to the `ExportResult`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from .._parallel import map_files
from ..store import Rollout
from ._sink import Part, Sink, Skipped

__all__ = ["SKIPPED_KEPT", "ExportResult", "run_parts"]

SKIPPED_KEPT = 100
"""Skipped rollouts whose reason an `ExportResult` keeps; the others are counted only."""


@dataclass(slots=True)
class ExportResult:
    """What an export wrote and what it had to leave out."""

    rows: int = 0
    """Rows written (calls, or token trajectories: `unit`)."""
    damaged: int = 0
    """Damaged lines skipped (`mcc validate` lists them)."""
    out_of_range: int = 0
    """Values beyond the format's types (int64 in Parquet) written as null."""
    skipped: int = 0
    """Rollouts a sink left out whole."""
    skipped_reasons: list[Skipped] = field(default_factory=list)
    """The first `SKIPPED_KEPT` of them, with why."""
    calls_left_out: int = 0
    """Calls the format has no place for (OTLP: calls without a start or end time; token
    trajectories: calls without token ids)."""
    newer: int = 0
    """Rollouts exported up to a line of a newer format (the lines after it not read)."""
    newer_lines: list[str] = field(default_factory=list)
    """The first `SKIPPED_KEPT` of them: `rollout ID read up to capture line in FILE, line N
    has format ...` (the line numbered from 1, as editors and `mcc validate` show it)."""
    unit: str = "calls"
    """What a row is."""
    format: str = "parquet"
    """The format written (a `SINKS` key)."""
    destination: str = ""
    """Where it went: the target path, or the sink's endpoint."""
    output: str = "file"
    """What the sink wrote: a `file`, a `directory`, or to an `endpoint`."""
    up_to_date: bool = False
    """An incremental export found nothing new and wrote nothing."""
    state: str = ""
    """The state file of an incremental export to an endpoint (`_sent`)."""

    def add(self, part: Part) -> None:
        """Count one part in."""
        self.rows += part.rows
        self.damaged += part.damaged
        self.out_of_range += part.out_of_range
        self.skipped += len(part.skipped)
        self.calls_left_out += part.calls_left_out
        room = SKIPPED_KEPT - len(self.skipped_reasons)
        if room > 0:
            self.skipped_reasons.extend(part.skipped[:room])
        self.newer += len(part.newer)
        room = SKIPPED_KEPT - len(self.newer_lines)
        self.newer_lines += [f"rollout {r} read up to {e}" for r, e in part.newer[: max(0, room)]]


def run_parts(
    sink: Sink, rollouts: Sequence[Rollout], jobs: int, result: ExportResult
) -> Iterator[Part]:
    """The sink's parts of `rollouts` in order, made by up to `jobs` processes; `result` grows.

    With one job (or one group) every part is made in this process.
    """
    for part in map_files(sink.part, sink.groups(rollouts), jobs, preload=sink.preload):
        result.add(part)
        yield part
