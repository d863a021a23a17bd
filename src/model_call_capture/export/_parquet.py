"""What the Parquet sinks share: bounded row groups, Arrow tables across processes, no pandas.

pyarrow is imported only inside these functions (the `[arrow]` extra), and by a sink's
`write` only once the first part is in: the workers are started by then, and a caller of
one thread forks them instead of starting them from a fork server (`_parallel`).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._parallel import in_worker

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

__all__ = [
    "ROW_GROUP_BYTES",
    "WORKER_PRELOAD",
    "RowGroups",
    "ipc_bytes",
    "pandas_refused",
    "table_of",
    "worker_without_pandas",
]

ROW_GROUP_BYTES = 32 << 20
"""Arrow bytes after which a row group is cut before `row_group_size` rows (payloads)."""

_COMPACT_EVERY = 64

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
    its own (the `mcc export` command refuses it in its own process only while it runs:
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

    For the `mcc export` command, whose tables go to a file and never to pandas (never for
    a library call: the caller's other threads may import pandas meanwhile): with
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


class RowGroups:
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


def ipc_bytes(table: pa.Table) -> bytes:
    """`table` as Arrow IPC stream bytes: a process pool pickles one blob far faster than a
    table of many small buffers."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def table_of(data: Any) -> pa.Table:
    """The table of a part: read back from IPC bytes (`ipc_bytes`), or the table itself."""
    import pyarrow.ipc

    return pyarrow.ipc.open_stream(data).read_all() if isinstance(data, bytes) else data
