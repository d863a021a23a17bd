"""The sinks of one row per call: Parquet (the fixed `arrow.record_schema`) and JSONL.

Parquet: a worker reads a group of rollouts into one Arrow table (`RecordsParquet.part`);
the caller cuts the tables into bounded row groups (`RowGroups`), so memory is a row group
and the parts in flight, never the directory, and the bytes written do not depend on the
number of workers. JSONL: a worker turns a rollout into its block of rows (the records as
JSON, `rollout_id` first); the caller writes the blocks in order.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from .. import _codec
from .._parallel import in_worker
from ..arrow import PAYLOAD_COLUMNS, iter_record_batches, record_schema
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..records import iter_rollout_records
from ..store import Rollout
from ._parquet import WORKER_PRELOAD, RowGroups, ipc_bytes, table_of, worker_without_pandas
from ._sink import Output, Part, one_group_each, write_blocks

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["RecordsJsonl", "RecordsParquet", "record_tables"]

# Rollouts per table without payloads, and the fewest groups a directory is cut into.
_GROUP_ROLLOUTS = 32
_MIN_GROUPS = 256

_UNSET_PAYLOADS = dict.fromkeys(PAYLOAD_COLUMNS, msgspec.UNSET)


@dataclass(frozen=True, slots=True)
class RecordsParquet:
    """One row per call in a Parquet file (zstd, `record_schema(payloads)`, no dictionaries)."""

    payloads: bool = False
    row_group_size: int = 65536
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    unit: str = "calls"
    preload: tuple[str, ...] = WORKER_PRELOAD
    output: Output = "file"

    @property
    def private(self) -> bool:
        """With payloads the file holds what the captures hold."""
        return self.payloads

    def groups(self, rollouts: Sequence[Rollout]) -> list[Sequence[Rollout]]:
        """Several rollouts a table without payloads, one with them.

        A table per rollout costs about a millisecond of Arrow and pickling whatever its
        rows, more than the rows themselves without payloads, so several rollouts share
        one; with payloads a table is as big as its files, so each rollout keeps its own.
        The cut leaves enough groups to keep every core busy.
        """
        if self.payloads:
            return one_group_each(rollouts)
        size = max(1, min(_GROUP_ROLLOUTS, len(rollouts) // _MIN_GROUPS))
        return [rollouts[i : i + size] for i in range(0, len(rollouts), size)]

    def part(self, rollouts: Sequence[Rollout]) -> Part:
        """The group's calls as one Arrow table: IPC bytes in a worker, the table in the caller."""
        worker_without_pandas()
        import pyarrow as pa

        batches = iter_record_batches(
            rollouts, payloads=self.payloads, max_line_bytes=self.max_line_bytes
        )
        table = pa.Table.from_batches(list(batches), schema=record_schema(self.payloads))
        data: pa.Table | bytes = ipc_bytes(table) if in_worker() else table
        newer = tuple(batches.newer)
        return Part(data, table.num_rows, batches.damaged, batches.out_of_range, newer=newer)

    def write(self, parts: Iterator[Part], out: Path | None) -> None:
        """The tables in order, in row groups of `row_group_size` rows (fewer past 32 MiB).

        No dictionary encoding: zstd alone writes the columns smaller, and in half the time
        (docs/performance.md, "Export without payloads"). The first part is awaited before
        pyarrow is imported here, so that the workers are forked (`_parquet`).
        """
        tables = record_tables(parts)
        first = next(tables, None)
        import pyarrow.parquet as pq

        schema = record_schema(self.payloads)
        with pq.ParquetWriter(out, schema, compression="zstd", use_dictionary=False) as writer:
            groups = RowGroups(writer, self.row_group_size)
            for table in itertools.chain([] if first is None else [first], tables):
                groups.add(table)
            groups.close()


def record_tables(parts: Iterator[Part]) -> Iterator[pa.Table]:
    """The Arrow tables of `RecordsParquet` parts, in order."""
    for part in parts:
        yield table_of(part.data)


@dataclass(frozen=True, slots=True)
class RecordsJsonl:
    """One row per call in a JSONL file: the record as JSON, `rollout_id` first."""

    payloads: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    unit: str = "calls"
    preload: tuple[str, ...] = ()
    output: Output = "file"

    @property
    def private(self) -> bool:
        """With payloads the file holds what the captures hold."""
        return self.payloads

    def groups(self, rollouts: Sequence[Rollout]) -> list[Sequence[Rollout]]:
        """One rollout a part."""
        return one_group_each(rollouts)

    def part(self, rollouts: Sequence[Rollout]) -> Part:
        """The rollouts' rows as JSONL bytes."""
        out = bytearray()
        rows = damaged = 0
        newer: list[tuple[str, str]] = []
        for rollout in rollouts:
            stream = iter_rollout_records(rollout, max_line_bytes=self.max_line_bytes)
            records = list(stream.until_newer())
            damaged += stream.damaged
            if stream.newer is not None:
                newer.append((rollout.id, " ".join(str(stream.newer).split())))
            for record in records:
                if not self.payloads:  # unset fields are not encoded: payloads never decoded
                    record = msgspec.structs.replace(record, **_UNSET_PAYLOADS)
                row = {"rollout_id": rollout.id}
                row.update(record.to_dict())
                out += _codec.encode_line(row)
            rows += len(records)
        return Part(bytes(out), rows, damaged, newer=tuple(newer))

    def write(self, parts: Iterator[Part], out: Path | None) -> None:
        """The blocks in order."""
        write_blocks(parts, out)
