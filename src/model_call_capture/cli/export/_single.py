"""One export file, written rollout by rollout: Parquet (bounded row groups) or JSONL.

Every rollout is read in a worker (`map_files`) and comes back as one Arrow table or one
block of JSONL; the writer here consumes them in rollout order, so memory is bounded by
a row group and the rollouts in flight, never by the directory, and the bytes written do
not depend on the number of workers.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ... import _codec
from ...arrow import PAYLOAD_COLUMNS, iter_record_batches, record_schema
from ...records import read_available_model_call_records
from ...store import CAPTURE_SUFFIX, CaptureStore
from .._parallel import map_files

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "ROW_GROUP_BYTES",
    "Counts",
    "rollout_jsonl",
    "rollout_table",
    "rollout_tables",
    "write_jsonl",
    "write_parquet",
]

ROW_GROUP_BYTES = 64 << 20
"""Arrow bytes after which a row group is cut before `--row-group-size` rows (payloads)."""

_UNSET_PAYLOADS = dict.fromkeys(PAYLOAD_COLUMNS, msgspec.UNSET)


@dataclass(slots=True)
class Counts:
    """What an export wrote and what it had to leave out."""

    rows: int = 0
    damaged: int = 0
    out_of_range: int = 0


def rollout_table(payloads: bool, path: Path) -> tuple[pa.Table, int, int]:
    """One capture file as one Arrow table, with its damaged lines and nulled values."""
    import pyarrow as pa

    batches = iter_record_batches([path], payloads=payloads)
    table = pa.Table.from_batches(list(batches), schema=record_schema(payloads))
    return table, batches.damaged, batches.out_of_range


def rollout_tables(
    paths: Sequence[Path], payloads: bool, jobs: int, counts: Counts
) -> Iterator[pa.Table]:
    """The table of each capture file in order, read on `jobs` processes; `counts` grows."""
    for table, damaged, out_of_range in map_files(
        functools.partial(rollout_table, payloads), paths, jobs
    ):
        counts.rows += table.num_rows
        counts.damaged += damaged
        counts.out_of_range += out_of_range
        yield table


def write_parquet(
    paths: Sequence[Path], out: Path, *, payloads: bool, row_group_size: int, jobs: int
) -> Counts:
    """Write the calls of `paths` to the Parquet file `out` (zstd, fixed schema)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    counts = Counts()
    schema = record_schema(payloads)
    pending: list[pa.Table] = []
    rows = size = 0
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:

        def flush(limit: int) -> None:
            nonlocal pending, rows, size
            table = pa.concat_tables(pending)
            head, rest = table.slice(0, limit), table.slice(limit)
            writer.write_table(head.combine_chunks(), row_group_size=limit)
            pending = [rest] if rest.num_rows else []
            size = size * rest.num_rows // max(rows, 1)
            rows = rest.num_rows

        for table in rollout_tables(paths, payloads, jobs, counts):
            pending.append(table)
            rows += table.num_rows
            size += table.nbytes
            while rows >= row_group_size:
                flush(row_group_size)
            if size >= ROW_GROUP_BYTES and rows:
                flush(rows)
        if rows:
            flush(rows)
    return counts


def rollout_jsonl(payloads: bool, path: Path) -> tuple[bytes, int, int]:
    """One capture file's calls as JSONL rows (`rollout_id` first), and its damaged lines."""
    rollout_id = path.name.removesuffix(CAPTURE_SUFFIX)
    records, damaged = read_available_model_call_records(CaptureStore(path.parent), rollout_id)
    out = bytearray()
    for record in records:
        if not payloads:  # unset fields are not encoded: the payloads are never decoded
            record = msgspec.structs.replace(record, **_UNSET_PAYLOADS)
        row = {"rollout_id": rollout_id}
        row.update(record.to_dict())
        out += _codec.encode_line(row)
    return bytes(out), damaged, len(records)


def write_jsonl(paths: Sequence[Path], out: Path, *, payloads: bool, jobs: int) -> Counts:
    """Write the calls of `paths` to the JSONL file `out`, one row per call."""
    counts = Counts()
    with out.open("wb") as f:
        for data, damaged, rows in map_files(
            functools.partial(rollout_jsonl, payloads), paths, jobs
        ):
            f.write(data)
            counts.rows += rows
            counts.damaged += damaged
    return counts
