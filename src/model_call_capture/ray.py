"""Capture files as a Ray Dataset: one read task per group of files, decoded in the workers.

Needs the `ray` extra (`pip install 'model-call-capture[ray]'`). The driver only lists
the files and their sizes to plan the read tasks; each task opens its own files in a
Ray worker and yields Arrow blocks made by `arrow.iter_record_batches`, so the rows
have exactly the export schema (`arrow.record_schema`) and the values the records have.

    import ray
    from model_call_capture.ray import read_model_calls

    ds = read_model_calls("/data/model-calls")
    ds.groupby("model").sum("tokens_out").show()
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray.data import Datasource, ReadTask, read_datasource
from ray.data.block import BlockMetadata

from .arrow import iter_record_batches, record_schema
from .store import CAPTURE_SUFFIX

if TYPE_CHECKING:
    import pyarrow as pa
    from ray.data import Dataset

__all__ = ["ModelCallDatasource", "read_model_calls"]

_Paths = str | Path | Iterable[str | Path]


def capture_files(paths: _Paths) -> list[tuple[Path, int]]:
    """The capture files named by `paths`, with their sizes, in a stable order.

    A directory stands for every `*.capture.jsonl` under it (searched recursively, as
    `mcc validate` does), in path order; a file is taken as given. Raises
    `FileNotFoundError` for a path that does not exist.
    """
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    files: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob(f"*{CAPTURE_SUFFIX}") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such capture file or directory")
    return [(path, path.stat().st_size) for path in files]


def group_files(files: Sequence[tuple[Path, int]], groups: int) -> list[list[tuple[Path, int]]]:
    """Split `files` into at most `groups` runs of consecutive files of about equal bytes.

    Consecutive, so the rows of a block are in file order (and the dataset's too when
    Ray's `execution_options.preserve_order` is set); by bytes, so one big rollout does
    not share a task with many others.
    """
    if not files:
        return []
    groups = max(1, min(groups, len(files)))
    target = sum(size for _, size in files) / groups
    out: list[list[tuple[Path, int]]] = [[]]
    filled = 0
    for i, (path, size) in enumerate(files):
        # Start a new group once this one has its share, keeping one file for each group left.
        left = len(files) - i
        if out[-1] and len(out) < groups and (filled >= target or left <= groups - len(out)):
            out.append([])
            filled = 0
        out[-1].append((path, size))
        filled += size
    return out


def _read_group(paths: list[str], payloads: bool, batch_size: int) -> Iterator[pa.Table]:
    """Run in a Ray worker: the Arrow blocks of one group of capture files."""
    import pyarrow as pa

    for batch in iter_record_batches(paths, payloads=payloads, batch_size=batch_size):
        yield pa.Table.from_batches([batch])


def _metadata(size_bytes: int, input_files: list[str], schema: pa.Schema) -> BlockMetadata:
    """Block metadata for the Ray in use: `schema` moved from the metadata to the task in 2.4x."""
    names = {f.name for f in dataclasses.fields(BlockMetadata)}
    kwargs: dict[str, Any] = {
        "num_rows": None,  # unknown until the lines are read, which the driver never does
        "size_bytes": size_bytes,
        "input_files": input_files,
        "exec_stats": None,
    }
    if "schema" in names:
        kwargs["schema"] = schema
    return BlockMetadata(**kwargs)


class ModelCallDatasource(Datasource):
    """A Ray Data source of model-call records: rows with `arrow.record_schema(payloads)`.

    Plans one read task per group of consecutive capture files (`group_files`), with the
    files' byte size as the task's size estimate; the files are read in the workers.
    Damaged lines are skipped, as `read_available_model_call_records` skips them.
    """

    def __init__(self, paths: _Paths, *, payloads: bool = False, batch_size: int = 8192) -> None:
        self._files = capture_files(paths)
        self._payloads = payloads
        self._batch_size = batch_size

    def get_name(self) -> str:
        """The name Ray shows for the read operator."""
        return "ModelCalls"

    def estimate_inmemory_data_size(self) -> int | None:
        """Bytes of the files: about the in-memory size with payloads, an upper bound without."""
        return sum(size for _, size in self._files)

    def get_read_tasks(self, parallelism: int, *args: Any, **kwargs: Any) -> list[ReadTask]:
        """One `ReadTask` per group of files; at most `parallelism` of them."""
        schema = record_schema(self._payloads)
        payloads, batch_size = self._payloads, self._batch_size
        tasks = []
        for group in group_files(self._files, parallelism):
            paths = [str(path) for path, _ in group]
            meta = _metadata(sum(size for _, size in group), paths, schema)

            def read(paths: list[str] = paths) -> Iterator[pa.Table]:
                return _read_group(paths, payloads, batch_size)

            tasks.append(_read_task(read, meta, schema))
        return tasks


def _read_task(read: Any, meta: BlockMetadata, schema: pa.Schema) -> ReadTask:
    if "schema" in inspect.signature(ReadTask.__init__).parameters:
        return ReadTask(read, meta, schema=schema)
    return ReadTask(read, meta)  # a Ray before the task took the schema: it is in the metadata


def read_model_calls(
    paths: _Paths, *, payloads: bool = False, batch_size: int = 8192, **read_args: Any
) -> Dataset:
    """A Ray Dataset of the model calls in capture files: one row per call.

    `paths` is a capture file, a directory (every `*.capture.jsonl` under it) or a list
    of them. Rows have `arrow.record_schema(payloads)`: `rollout_id` and every record
    field, and with `payloads` the request and response as JSON text. `read_args` go to
    `ray.data.read_datasource` (`override_num_blocks`, `concurrency`, `ray_remote_args`).
    Starts Ray on this machine if `ray.init` was not called.
    """
    source = ModelCallDatasource(paths, payloads=payloads, batch_size=batch_size)
    dataset: Dataset = read_datasource(source, **read_args)
    return dataset
