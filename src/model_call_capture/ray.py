"""Rollouts as a Ray Dataset: one read task per group of rollouts, decoded in the workers.

Needs the `ray` extra (`pip install 'model-call-capture[ray]'`). The driver only lists
the rollouts and their files' sizes to plan the read tasks; each task opens its own
files in a Ray worker and yields Arrow blocks made by `arrow.iter_record_batches`, so the rows
have exactly the export schema (`arrow.record_schema`) and the values the records have.

    import ray
    from model_call_capture.ray import read_model_calls

    ds = read_model_calls("/data/model-calls")
    ds.groupby("model").sum("tokens_out").show()
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ray.data import Datasource, ReadTask, read_datasource
from ray.data.block import BlockMetadata

from .arrow import iter_record_batches, record_schema
from .store import Rollout, RolloutSource, rollouts_from

if TYPE_CHECKING:
    import pyarrow as pa
    from ray.data import Dataset

__all__ = ["ModelCallDatasource", "read_model_calls"]


def capture_rollouts(source: RolloutSource) -> list[tuple[Rollout, int]]:
    """The rollouts `source` names, with the bytes of their files, in a stable order.

    `source` is what `arrow.iter_record_batches` takes, except that a directory stands
    for its rollouts and those of every directory below it, in path order
    (`store.rollouts_from(..., recursive=True)`). Raises `FileNotFoundError` for a path
    that does not exist.
    """
    return [(rollout, _size(rollout)) for rollout in rollouts_from(source, recursive=True)]


def _size(rollout: Rollout) -> int:
    size = 0
    for path in rollout.files:
        try:
            size += path.stat().st_size
        except FileNotFoundError:  # cleared since it was listed: no lines
            pass
    return size


def group_rollouts(
    rollouts: Sequence[tuple[Rollout, int]], groups: int
) -> list[list[tuple[Rollout, int]]]:
    """Split `rollouts` into at most `groups` runs of consecutive rollouts of about equal bytes.

    Consecutive, so the rows of a block are in rollout order (and the dataset's too when
    Ray's `execution_options.preserve_order` is set); by bytes, so one big rollout does
    not share a task with many others.
    """
    if not rollouts:
        return []
    groups = max(1, min(groups, len(rollouts)))
    target = sum(size for _, size in rollouts) / groups
    out: list[list[tuple[Rollout, int]]] = [[]]
    filled = 0
    for i, (rollout, size) in enumerate(rollouts):
        # Start a new group once this one has its share, keeping one rollout for each group left.
        left = len(rollouts) - i
        if out[-1] and len(out) < groups and (filled >= target or left <= groups - len(out)):
            out.append([])
            filled = 0
        out[-1].append((rollout, size))
        filled += size
    return out


def _read_group(rollouts: list[Rollout], payloads: bool, batch_size: int) -> Iterator[pa.Table]:
    """Run in a Ray worker: the Arrow blocks of one group of rollouts."""
    import pyarrow as pa

    for batch in iter_record_batches(rollouts, payloads=payloads, batch_size=batch_size):
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

    Plans one read task per group of consecutive rollouts (`group_rollouts`), with their
    files' byte size as the task's size estimate; the files are read in the workers.
    Damaged lines are skipped, as `read_available_model_call_records` skips them.
    """

    def __init__(
        self, source: RolloutSource, *, payloads: bool = False, batch_size: int = 8192
    ) -> None:
        self._rollouts = capture_rollouts(source)
        self._payloads = payloads
        self._batch_size = batch_size

    def get_name(self) -> str:
        """The name Ray shows for the read operator."""
        return "ModelCalls"

    def estimate_inmemory_data_size(self) -> int | None:
        """Bytes of the files: about the in-memory size with payloads, an upper bound without."""
        return sum(size for _, size in self._rollouts)

    def get_read_tasks(self, parallelism: int, *args: Any, **kwargs: Any) -> list[ReadTask]:
        """One `ReadTask` per group of rollouts; at most `parallelism` of them."""
        schema = record_schema(self._payloads)
        payloads, batch_size = self._payloads, self._batch_size
        tasks = []
        for group in group_rollouts(self._rollouts, parallelism):
            rollouts = [rollout for rollout, _ in group]
            files = [str(path) for rollout in rollouts for path in rollout.files]
            meta = _metadata(sum(size for _, size in group), files, schema)

            def read(rollouts: list[Rollout] = rollouts) -> Iterator[pa.Table]:
                return _read_group(rollouts, payloads, batch_size)

            tasks.append(_read_task(read, meta, schema))
        return tasks


def _read_task(read: Any, meta: BlockMetadata, schema: pa.Schema) -> ReadTask:
    if "schema" in inspect.signature(ReadTask.__init__).parameters:
        return ReadTask(read, meta, schema=schema)
    return ReadTask(read, meta)  # a Ray before the task took the schema: it is in the metadata


def read_model_calls(
    source: RolloutSource, *, payloads: bool = False, batch_size: int = 8192, **read_args: Any
) -> Dataset:
    """A Ray Dataset of the model calls of rollouts: one row per call.

    `source` is a capture directory (its rollouts and those of the directories below it),
    a `CaptureStore`, rollouts or capture files, or a list of them (`capture_rollouts`;
    anything else raises `RolloutSourceError` saying what it got). Rows have `arrow.record_schema(payloads)`: `rollout_id` and every record
    field, and with `payloads` the request and response as JSON text. `read_args` go to
    `ray.data.read_datasource` (`override_num_blocks`, `concurrency`, `ray_remote_args`).
    Starts Ray on this machine if `ray.init` was not called.
    """
    datasource = ModelCallDatasource(source, payloads=payloads, batch_size=batch_size)
    dataset: Dataset = read_datasource(datasource, **read_args)
    return dataset
