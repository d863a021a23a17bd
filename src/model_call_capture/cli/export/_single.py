"""One export file, written rollout by rollout: Parquet (bounded row groups) or JSONL.

Every rollout is read in a worker (`map_files`) and comes back as one Arrow table or one
block of JSONL; the writer here consumes them in rollout order, so memory is bounded by
a row group and the rollouts in flight, never by the directory, and the bytes written do
not depend on the number of workers.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import itertools
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ... import _codec
from ...arrow import PAYLOAD_COLUMNS, iter_record_batches, record_schema
from ...records import iter_rollout_records
from ...store import Rollout
from .._parallel import in_worker, map_files

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

__all__ = [
    "ROW_GROUP_BYTES",
    "WORKER_PRELOAD",
    "Counts",
    "file_groups",
    "group_table",
    "pandas_refused",
    "rollout_jsonl",
    "rollout_tables",
    "write_jsonl",
    "write_parquet",
]

ROW_GROUP_BYTES = 32 << 20
"""Arrow bytes after which a row group is cut before `--row-group-size` rows (payloads)."""

_COMPACT_EVERY = 64

# Files per table without payloads, and the fewest groups a directory is cut into.
_GROUP_FILES = 32
_MIN_GROUPS = 256

_UNSET_PAYLOADS = dict.fromkeys(PAYLOAD_COLUMNS, msgspec.UNSET)

WORKER_PRELOAD = ("pyarrow", "pyarrow.ipc")
"""What a worker building Arrow tables imports, once in the fork server (`map_files`)."""


class _NoPandas(importlib.abc.MetaPathFinder):
    """An import finder that refuses pandas (see `worker_without_pandas`)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"{name} is not imported by a worker of mcc export")


def worker_without_pandas() -> None:
    """In a worker of `map_files` only: keep pyarrow from importing pandas, which it never needs here.

    pyarrow imports pandas (when installed) on its first conversion of Python values, only
    to ask whether they are pandas objects; a worker building tables from records never
    holds one, and the import costs more than a worker's share of many rollouts
    (docs/performance.md, "Export without payloads"). A finder that refuses the import
    has pyarrow convert without pandas. Never in the caller's process, whose pandas is
    its own (the `mcc export` command refuses it in its process only while it runs:
    `pandas_refused`).
    """
    if (
        in_worker()
        and "pandas" not in sys.modules
        and not any(isinstance(finder, _NoPandas) for finder in sys.meta_path)
    ):
        sys.meta_path.insert(0, _NoPandas())


@contextlib.contextmanager
def pandas_refused() -> Iterator[None]:
    """While the block runs, refuse the import of pandas, unless it is imported already.

    For the `mcc export` command, whose tables go to a file and never to pandas: with
    `--jobs 1` the command's own process converts the records, and pyarrow would import
    pandas there as in a worker (`worker_without_pandas`), a third of a second. The
    finder goes when the block ends: a program that runs the command in its own process
    imports pandas afterwards as before.
    """
    if "pandas" in sys.modules or any(isinstance(finder, _NoPandas) for finder in sys.meta_path):
        yield
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


@dataclass(slots=True)
class Counts:
    """What an export wrote and what it had to leave out."""

    rows: int = 0
    damaged: int = 0
    out_of_range: int = 0


def group_table(payloads: bool, paths: Sequence[Rollout]) -> tuple[pa.Table | bytes, int, int]:
    """Rollouts as one Arrow table, their damaged lines and nulled values.

    In a worker of `map_files` the table comes as IPC stream bytes, because a process pool
    pickles results: one blob pickles far faster than a table of many small buffers. In
    the caller's own process (`--jobs 1`) it is the table itself: no copy to hand back.
    """
    worker_without_pandas()
    import pyarrow as pa

    batches = iter_record_batches(paths, payloads=payloads)
    table = pa.Table.from_batches(list(batches), schema=record_schema(payloads))
    if not in_worker():
        return table, batches.damaged, batches.out_of_range
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes(), batches.damaged, batches.out_of_range


def file_groups(paths: Sequence[Rollout], payloads: bool) -> list[Sequence[Rollout]]:
    """The rollouts `paths` cut into the runs of rollouts one worker reads into one table.

    A table per rollout costs about a millisecond of Arrow and pickling whatever its rows,
    more than the rows themselves without payloads, so several rollouts share one; with
    payloads a table is as big as its files, so each rollout keeps its own. The cut
    depends on the rollouts only (never on `--jobs`), and leaves enough groups to keep
    every core busy.
    """
    size = 1 if payloads else max(1, min(_GROUP_FILES, len(paths) // _MIN_GROUPS))
    return [paths[i : i + size] for i in range(0, len(paths), size)]


def rollout_tables(
    paths: Sequence[Rollout], payloads: bool, jobs: int, counts: Counts
) -> Iterator[pa.Table]:
    """The tables of the rollouts in order, read on `jobs` processes; `counts` grows.

    pyarrow is imported here once the workers are started (the first result is in): a
    caller with pyarrow's threads would start them from a fork server, a second interpreter
    that imports everything again, where a caller of one thread forks them (`map_files`).
    """
    for data, damaged, out_of_range in map_files(
        functools.partial(group_table, payloads),
        file_groups(paths, payloads),
        jobs,
        preload=WORKER_PRELOAD,
    ):
        import pyarrow.ipc

        table = pyarrow.ipc.open_stream(data).read_all() if isinstance(data, bytes) else data
        counts.rows += table.num_rows
        counts.damaged += damaged
        counts.out_of_range += out_of_range
        yield table


class _RowGroups:
    """Tables in, row groups out: `limit` rows each, fewer once they pass `ROW_GROUP_BYTES`.

    Boundaries depend only on the rows, so the file is the same whatever the workers.
    """

    def __init__(self, writer: pq.ParquetWriter, limit: int) -> None:
        self.writer = writer
        self.limit = limit
        self.chunks: list[pa.Table] = []  # compacted
        self.small: list[pa.Table] = []  # as they came
        self.rows = 0
        self.size = 0

    def add(self, table: pa.Table) -> None:
        self.small.append(table)
        self.rows += table.num_rows
        self.size += table.nbytes
        if len(self.small) >= _COMPACT_EVERY:
            self._compact()
        while self.rows >= self.limit:
            self._flush(self.limit)
        if self.size >= ROW_GROUP_BYTES:
            self._flush(self.rows)

    def close(self) -> None:
        if self.rows:
            self._flush(self.rows)

    def _compact(self) -> None:
        # Each small table holds a few buffers per column, which cost far more than
        # their bytes: copy them into one.
        import pyarrow as pa

        if self.small:
            self.chunks.append(pa.concat_tables(self.small).combine_chunks())
            self.small = []

    def _flush(self, rows: int) -> None:
        import pyarrow as pa

        self._compact()
        table = pa.concat_tables(self.chunks)
        self.writer.write_table(table.slice(0, rows), row_group_size=rows)
        rest = table.slice(rows).combine_chunks()  # frees the rows written
        self.chunks = [rest] if rest.num_rows else []
        self.rows = rest.num_rows
        self.size = rest.nbytes


def write_parquet(
    paths: Sequence[Rollout], out: Path, *, payloads: bool, row_group_size: int, jobs: int
) -> Counts:
    """Write the calls of the rollouts `paths` to the Parquet file `out` (zstd, fixed schema, no dictionaries).

    No dictionary encoding: zstd alone writes the columns smaller, and in half the time
    (docs/performance.md, "Export without payloads"). The first table is awaited before
    pyarrow is imported here, so that the workers are forked (see `rollout_tables`).
    """
    counts = Counts()
    tables = rollout_tables(paths, payloads, jobs, counts)
    first = next(tables, None)
    import pyarrow.parquet as pq

    schema = record_schema(payloads)
    with pq.ParquetWriter(out, schema, compression="zstd", use_dictionary=False) as writer:
        groups = _RowGroups(writer, row_group_size)
        for table in itertools.chain([] if first is None else [first], tables):
            groups.add(table)
        groups.close()
    return counts


def rollout_jsonl(payloads: bool, rollout: Rollout) -> tuple[bytes, int, int]:
    """One rollout's calls as JSONL rows (`rollout_id` first), and its damaged lines."""
    rollout_id = rollout.id
    stream = iter_rollout_records(rollout)
    records = list(stream)
    damaged = stream.damaged
    out = bytearray()
    for record in records:
        if not payloads:  # unset fields are not encoded: the payloads are never decoded
            record = msgspec.structs.replace(record, **_UNSET_PAYLOADS)
        row = {"rollout_id": rollout_id}
        row.update(record.to_dict())
        out += _codec.encode_line(row)
    return bytes(out), damaged, len(records)


def write_jsonl(paths: Sequence[Rollout], out: Path, *, payloads: bool, jobs: int) -> Counts:
    """Write the calls of the rollouts `paths` to the JSONL file `out`, one row per call."""
    counts = Counts()
    with out.open("wb") as f:
        for data, damaged, rows in map_files(
            functools.partial(rollout_jsonl, payloads), paths, jobs
        ):
            f.write(data)
            counts.rows += rows
            counts.damaged += damaged
    return counts
