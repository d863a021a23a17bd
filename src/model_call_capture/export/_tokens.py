"""The sinks of one row per token trajectory (`tokens=True`, `mcc export --tokens`): Parquet or JSONL.

A worker reads one rollout, chains its calls into trajectories
(`build_token_trajectories`, through `arrow.iter_trajectory_batches`) and hands back one
Arrow table (or block of JSONL) of them; the caller writes them in rollout order, so
memory is the rollouts in flight and a row group, and the bytes do not depend on the
number of workers. A call without token ids is in no trajectory
(`build_token_trajectories`, rule 1): it is counted in `Part.calls_left_out`, so the
command can say why an export has fewer trajectories, or none.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import _codec
from ..arrow import iter_trajectory_batches, trajectory_rows, trajectory_schema
from ..errors import UnsupportedFormatError
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..records import iter_rollout_records
from ..store import Rollout
from ..trajectories import build_token_trajectories, calls_without_token_ids
from ._parquet import WORKER_PRELOAD, RowGroups, ipc_bytes, table_of, worker_without_pandas
from ._sink import Output, Part, Skipped, one_group_each, write_blocks

__all__ = ["TrajectoriesJsonl", "TrajectoriesParquet"]


def _skipped(rollouts: Sequence[Rollout], exc: UnsupportedFormatError) -> tuple[Skipped, ...]:
    """The group's one rollout, left out for its line of a newer format: its trajectories
    cut short there would be rows that look whole and are not."""
    return tuple(Skipped(r.id, " ".join(str(exc).split())) for r in rollouts)


@dataclass(frozen=True, slots=True)
class TrajectoriesParquet:
    """One row per token trajectory in a Parquet file (zstd, `trajectory_schema()`)."""

    row_group_size: int = 65536
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    unit: str = "token trajectories"
    preload: tuple[str, ...] = WORKER_PRELOAD
    output: Output = "file"
    private: bool = False

    def groups(self, rollouts: Sequence[Rollout]) -> list[Sequence[Rollout]]:
        """One rollout a part."""
        return one_group_each(rollouts)

    def part(self, rollouts: Sequence[Rollout]) -> Part:
        """The rollouts' trajectories as one Arrow table, in IPC stream bytes."""
        worker_without_pandas()
        import pyarrow as pa

        batches = iter_trajectory_batches(rollouts, max_line_bytes=self.max_line_bytes)
        try:
            table = pa.Table.from_batches(list(batches), schema=trajectory_schema())
        except UnsupportedFormatError as exc:
            empty = trajectory_schema().empty_table()
            return Part(ipc_bytes(empty), 0, batches.damaged, skipped=_skipped(rollouts, exc))
        return Part(
            ipc_bytes(table),
            table.num_rows,
            batches.damaged,
            calls_left_out=batches.calls_without_tokens,
        )

    def write(self, parts: Iterator[Part], out: Path | None) -> None:
        """The tables in order, in row groups of `row_group_size` rows.

        The first part is awaited before pyarrow is imported here, so that the workers
        are forked (`_parquet`).
        """
        first = next(parts, None)
        import pyarrow.parquet as pq

        with pq.ParquetWriter(out, trajectory_schema(), compression="zstd") as writer:
            groups = RowGroups(writer, self.row_group_size)
            if first is not None:
                groups.add(table_of(first.data))
            for part in parts:
                groups.add(table_of(part.data))
            groups.close()


@dataclass(frozen=True, slots=True)
class TrajectoriesJsonl:
    """One row per token trajectory in a JSONL file: the Parquet columns as JSON."""

    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    unit: str = "token trajectories"
    preload: tuple[str, ...] = ()
    output: Output = "file"
    private: bool = False

    def groups(self, rollouts: Sequence[Rollout]) -> list[Sequence[Rollout]]:
        """One rollout a part."""
        return one_group_each(rollouts)

    def part(self, rollouts: Sequence[Rollout]) -> Part:
        """The rollouts' trajectories as JSONL bytes."""
        out = bytearray()
        rows = damaged = left_out = 0
        for rollout in rollouts:
            stream = iter_rollout_records(rollout, max_line_bytes=self.max_line_bytes)
            try:
                records = list(stream)
            except UnsupportedFormatError as exc:
                return Part(b"", 0, damaged + stream.damaged, skipped=_skipped([rollout], exc))
            damaged += stream.damaged
            left_out += calls_without_token_ids(records)
            trajectories = build_token_trajectories(records, rollout_id=rollout.id)
            for row in trajectory_rows(rollout.id, trajectories):
                out += _codec.encode_line(row)
                rows += 1
        return Part(bytes(out), rows, damaged, calls_left_out=left_out)

    def write(self, parts: Iterator[Part], out: Path | None) -> None:
        """The blocks in order."""
        write_blocks(parts, out)
