"""The seam between the export engine and a format: `Sink`, the `Part` it makes, and `Skipped`.

The engine (`_engine`) plans the rollouts, cuts them into groups (`Sink.groups`), hands
each group to `Sink.part` in a worker process, and gives the parts back, in rollout
order, to `Sink.write` in the caller's process, which writes them to a new file (or a
new directory) that the engine then publishes atomically, or sends them to an endpoint.
So a sink knows its format and nothing of processes, temporary names, datasets or
manifests; the engine knows no format.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ..reader import DEFAULT_MAX_LINE_BYTES
from ..store import Rollout

__all__ = ["ExportOptions", "Output", "Part", "Sink", "Skipped", "one_group_each", "write_blocks"]

Output = Literal["file", "directory", "endpoint"]
"""Where a sink's `write` puts the parts: a new file or a new directory (published by the
engine), or somewhere of its own (an endpoint named in its options)."""


@dataclass(frozen=True, slots=True)
class ExportOptions:
    """What an export was asked for, as a sink factory (`SINKS`) receives it."""

    format: str
    """The format's name (`SINKS` key): `parquet`, `jsonl`."""
    payloads: bool = False
    """Add the request, response and raw text of each call."""
    tokens: bool = False
    """One row per token trajectory instead of one per call."""
    row_group_size: int = 65536
    """Most rows in a Parquet row group."""
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    """A longer capture line is counted as damaged, never held in memory (pass it to
    `iter_rollout_records` and `arrow`'s readers)."""
    format_options: Mapping[str, Any] = field(default_factory=dict)
    """The format's own options by name (ATIF's `agent_name`, OTLP's `endpoint`, ...)."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """A rollout a sink left out of the export, and why (one line, for people)."""

    rollout_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Part:
    """What a sink made of one group of rollouts in a worker, and what it counted there.

    Picklable (it crosses from the worker to the caller): `data` is the sink's own
    (bytes, an Arrow table in the caller's own process); the engine reads only the counts.
    """

    data: Any
    rows: int
    """Rows of the export in `data` (calls, trajectories, spans...)."""
    damaged: int = 0
    """Damaged lines skipped while reading the rollouts."""
    out_of_range: int = 0
    """Values the format cannot hold, written as null."""
    skipped: tuple[Skipped, ...] = ()
    """Rollouts of the group left out whole, each with its reason."""
    calls_left_out: int = 0
    """Calls the format has no place for (OTLP: a call without a start or end time; token
    trajectories: a call without token ids)."""
    newer: tuple[tuple[str, str], ...] = ()
    """(rollout id, error naming file and line) of each rollout of the group exported up to a
    line of a newer format (`RecordStream.until_newer`); a sink that cannot hold a rollout
    in part skips it instead (`skipped`)."""
    sent: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    """An incremental endpoint export's new marks of the group's rollouts
    (`UnsentRecords.marks` of each), which the engine records once `write` returned."""


class Sink(Protocol):
    """One export format. See the package docstring for how to write one."""

    @property
    def unit(self) -> str:
        """What a row is, for people: `calls`, `token trajectories`."""
        ...

    @property
    def preload(self) -> tuple[str, ...]:
        """Modules `part` imports, imported once in the fork server that starts the workers."""
        ...

    @property
    def private(self) -> bool:
        """The output holds payloads: created 0600 (as private as the capture files)."""
        ...

    @property
    def output(self) -> Output:
        """A `file`, a `directory`, or an `endpoint` (the sink's own destination)."""
        ...

    def groups(self, rollouts: Sequence[Rollout]) -> list[Sequence[Rollout]]:
        """The rollouts cut into the groups `part` receives, in order (`one_group_each`).

        Must depend on the rollouts only, never on the number of workers, so the output is
        the same bytes whatever `jobs`.
        """
        ...

    def part(self, rollouts: Sequence[Rollout]) -> Part:
        """In a worker (or the caller's process with one job): one group as a `Part`.

        Reads the rollouts through `records.iter_rollout_records` (or `arrow`), so every
        file of each rollout is read; a rollout it cannot represent goes in `skipped`.
        Must be picklable: a method of a picklable sink, or a module-level function.
        """
        ...

    def write(self, parts: Iterator[Part], out: Path | None) -> None:
        """In the caller's process: every part, in rollout order, written to `out`.

        For a `file` sink `out` is a new empty file beside the target (mode set by
        `private`); the engine fsyncs it and renames it over the target once this returns,
        and removes it if this raises. For a `directory` sink it is a new empty directory
        (0700) that the engine renames to the target, which must not exist; the sink makes
        the files in it durable. For an `endpoint` sink it is None. Memory: a part or two
        (and a row group), never the whole export.
        """
        ...


def write_blocks(parts: Iterator[Part], out: Path | None) -> None:
    """`Sink.write` of a file sink whose parts are bytes: the bytes, in order."""
    if out is None:
        raise TypeError("a file sink writes to a file")
    with out.open("wb") as f:
        for part in parts:
            f.write(part.data)


def one_group_each(rollouts: Sequence[Rollout]) -> list[Sequence[Rollout]]:
    """`Sink.groups` of a sink whose part is a rollout: one group per rollout."""
    return [rollouts[i : i + 1] for i in range(len(rollouts))]
