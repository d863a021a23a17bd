"""The export engine: the checks, the plan, the parallel map, the atomic publish, the datasets.

`export()` is what `mcc export` runs: it checks the options, lists the rollouts, has the
format's sink (`SINKS`) make and write the rows on the process pool (`run_parts`), and
publishes the result atomically (`_atomic`): a new file, or a hive-partitioned Parquet
dataset written whole or updated incrementally (`_dataset`). Errors are `ExportError`s
(a `CaptureError`), phrased with the options as `mcc export` spells them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from .._parallel import default_jobs
from ..errors import ExportError
from ..store import Rollout, RolloutSource, rollouts_from
from . import _atomic
from ._dataset import check_partition_by, update_dataset, write_dataset_dir
from ._formats import SINKS
from ._parts import ExportResult, run_parts
from ._sink import ExportOptions, Sink

__all__ = ["DEFAULT_ROW_GROUP_SIZE", "export"]

DEFAULT_ROW_GROUP_SIZE = 65536
"""Most rows in a Parquet row group (fewer once a group holds 32 MiB)."""


def export(
    source: RolloutSource,
    out: str | os.PathLike[str],
    *,
    format: str | None = None,
    payloads: bool = False,
    tokens: bool = False,
    partition_by: Sequence[str] = (),
    incremental: bool = False,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    jobs: int | None = None,
) -> ExportResult:
    """Export the calls of `source`'s rollouts to `out`, as `mcc export` does; what it wrote.

    `source` is a capture directory, a `CaptureStore`, rollouts or capture files
    (`store.rollouts_from`). `format` is a key of `SINKS` (`parquet`, `jsonl`; by default
    `jsonl` for a `.jsonl`/`.json` name, else `parquet`). One row per call (with
    `payloads`, the request, response and raw text too), or with `tokens` one per token
    trajectory. With `partition_by` (columns) or `incremental`, `out` is a hive-partitioned
    Parquet dataset directory (`arrow.open_export_dataset` reads it); `incremental` exports
    only the rollouts new or changed since the last export to it (`up_to_date` in the
    result when there were none). `jobs` processes read the rollouts (all cores by
    default); the output is the same bytes whatever their number. Nothing half-written is
    ever visible at `out`. Raises `ExportError` for options that do not go together, a
    target it may not replace, or a write that failed.
    """
    target = Path(out)
    columns = list(partition_by)
    dataset = bool(columns) or incremental
    fmt = format or ("jsonl" if target.suffix in (".jsonl", ".json") and not dataset else "parquet")
    if fmt not in SINKS:
        raise ExportError(f"unknown export format {fmt!r}: one of {', '.join(SINKS)}")
    if dataset and fmt != "parquet":
        raise ExportError("--partition-by and --incremental write Parquet datasets")
    if tokens and (dataset or payloads):
        raise ExportError("--tokens writes one file, without --payloads")
    options = ExportOptions(fmt, payloads=payloads, tokens=tokens, row_group_size=row_group_size)
    sink = SINKS[fmt](options)
    _check_target(target, dataset)
    if dataset:
        check_partition_by(columns, payloads)
    rollouts = list(rollouts_from(source))
    jobs = jobs or default_jobs()
    _atomic.clean_stale(target)
    result = ExportResult(unit=sink.unit, format=fmt)
    with _naming_out(target):
        if dataset:
            write = update_dataset if incremental else write_dataset_dir
            write(
                rollouts,
                target,
                payloads=payloads,
                partition_by=columns,
                row_group_size=row_group_size,
                jobs=jobs,
                result=result,
            )
        else:
            _write_file(sink, rollouts, target, jobs, result)
    return result


def _check_target(target: Path, dataset: bool) -> None:
    if not target.parent.is_dir():
        raise ExportError(f"{target.parent}: no such directory")
    if dataset and target.exists() and not target.is_dir():
        raise ExportError(f"{target}: exists and is not a dataset directory")
    if not dataset and target.is_dir():
        raise ExportError(f"{target}: is a directory (use --partition-by for a dataset)")


def _write_file(
    sink: Sink, rollouts: Sequence[Rollout], target: Path, jobs: int, result: ExportResult
) -> None:
    """The sink's rows in a new temporary file beside `target`, then renamed over it."""
    tmp = _atomic.temp_path(target)
    # Payloads are what the capture files hold: as private as they are (0600).
    _atomic.create_file(tmp, 0o600 if sink.private else 0o666)
    try:
        sink.write(run_parts(sink, rollouts, jobs, result), tmp)
        _atomic.publish_file(tmp, target)
    finally:
        _atomic.remove(tmp)


@contextlib.contextmanager
def _naming_out(target: Path) -> Iterator[None]:
    """An error writing the export's temporary names (which the user never gave) names `out`."""
    try:
        yield
    except OSError as exc:
        if _atomic.TMP_TAG not in str(exc.filename or ""):
            raise
        raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from None
