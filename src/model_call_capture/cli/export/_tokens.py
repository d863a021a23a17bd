"""`mcc export --tokens`: one row per token trajectory, Parquet or JSONL, rollout by rollout.

Each rollout is read in a worker (`map_files`) and comes back as one Arrow table (or one
block of JSONL) of its trajectories; the writer consumes them in rollout order, so memory
is bounded by the rollouts in flight and a row group, and the bytes do not depend on
the number of workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ... import _codec
from ...arrow import iter_trajectory_batches, trajectory_rows, trajectory_schema
from ...records import iter_rollout_records
from ...store import Rollout
from ...trajectories import build_token_trajectories
from .._parallel import map_files
from ._single import WORKER_PRELOAD, Counts, _RowGroups, worker_without_pandas

__all__ = [
    "rollout_trajectory_jsonl",
    "rollout_trajectory_table",
    "write_token_jsonl",
    "write_token_parquet",
]


def rollout_trajectory_table(path: Rollout) -> tuple[bytes, int]:
    """One rollout's trajectories as one Arrow table in IPC stream bytes, and its damaged lines."""
    worker_without_pandas()
    import pyarrow as pa

    batches = iter_trajectory_batches([path])
    table = pa.Table.from_batches(list(batches), schema=trajectory_schema())
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes(), batches.damaged


def write_token_parquet(
    paths: Sequence[Rollout], out: Path, *, row_group_size: int, jobs: int
) -> Counts:
    """Write the token trajectories of `paths` to the Parquet file `out` (zstd, `trajectory_schema()`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    counts = Counts()
    with pq.ParquetWriter(out, trajectory_schema(), compression="zstd") as writer:
        groups = _RowGroups(writer, row_group_size)
        for data, damaged in map_files(
            rollout_trajectory_table, paths, jobs, preload=WORKER_PRELOAD
        ):
            table = pa.ipc.open_stream(data).read_all()
            counts.rows += table.num_rows
            counts.damaged += damaged
            groups.add(table)
        groups.close()
    return counts


def rollout_trajectory_jsonl(rollout: Rollout) -> tuple[bytes, int, int]:
    """One rollout's trajectories as JSONL rows (the Parquet columns), its damaged lines and rows."""
    rollout_id = rollout.id
    stream = iter_rollout_records(rollout)
    records = list(stream)
    damaged = stream.damaged
    trajectories = build_token_trajectories(records, rollout_id=rollout_id)
    rows = trajectory_rows(rollout_id, trajectories)
    return b"".join(_codec.encode_line(row) for row in rows), damaged, len(rows)


def write_token_jsonl(paths: Sequence[Rollout], out: Path, *, jobs: int) -> Counts:
    """Write the token trajectories of `paths` to the JSONL file `out`, one row per trajectory."""
    counts = Counts()
    with out.open("wb") as f:
        for data, damaged, rows in map_files(rollout_trajectory_jsonl, paths, jobs):
            f.write(data)
            counts.rows += rows
            counts.damaged += damaged
    return counts
