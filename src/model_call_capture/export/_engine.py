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
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._parallel import default_jobs
from ..errors import ExportError
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..store import CaptureStore, Rollout, RolloutSource, rollouts_from
from . import _atomic
from ._dataset import check_partition_by, update_dataset, write_dataset_dir
from ._formats import SINKS
from ._parts import ExportResult, run_parts
from ._sent import RolloutMarks, SentState, Unsent, default_state_path
from ._sink import ExportOptions, Part, Sink

__all__ = ["DEFAULT_ROW_GROUP_SIZE", "export"]

DEFAULT_ROW_GROUP_SIZE = 65536
"""Most rows in a Parquet row group (fewer once a group holds 32 MiB)."""

_ROW_FORMATS = ("parquet", "jsonl")  # the formats of rows: datasets, token rows, payloads


def export(
    source: RolloutSource,
    out: str | os.PathLike[str] | None = None,
    *,
    format: str | None = None,
    payloads: bool = False,
    tokens: bool = False,
    partition_by: Sequence[str] = (),
    incremental: bool = False,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    jobs: int | None = None,
    format_options: Mapping[str, Any] | None = None,
    state: str | os.PathLike[str] | None = None,
) -> ExportResult:
    """Export the calls of `source`'s rollouts to `out`, as `mcc export` does; what it wrote.

    `source`: a capture directory, a `CaptureStore`, rollouts or capture files
    (`store.rollouts_from`). `format`: a key of `SINKS` (by default `jsonl` for a
    `.jsonl`/`.json` name, else `parquet`). One row per call (with `payloads`, the request,
    response and raw text too), or with `tokens` one per token trajectory. With
    `partition_by` or `incremental`, `out` is a hive-partitioned Parquet dataset directory
    (`arrow.open_export_dataset`) and `incremental` exports only the rollouts new or changed
    since the last export to it (`up_to_date` when none were). A capture line longer than
    `max_line_bytes` is counted as damaged without being held in memory. An endpoint format (`otlp`,
    no `out`) with `incremental` sends only the calls not sent before to that endpoint, as
    the state file `state` records (`send_new`). `jobs` processes read the rollouts (all
    cores by default); the output is the same whatever their number, and nothing
    half-written is ever visible at `out`. `format_options` are the format's own (`atif`:
    `session_id`, `agent_name`, `agent_version`; `otlp`: `endpoint`, `headers`, `content`,
    `since`). Raises `ExportError` for options that do not go together, a target it may not
    replace, or a write that failed.
    """
    columns = list(partition_by)
    suffix = Path(out).suffix if out is not None else ""
    jsonl = suffix in (".jsonl", ".json") and not (columns or incremental)
    fmt = format or ("jsonl" if jsonl else "parquet")
    # An endpoint format keeps its incremental state apart; a row format, in its dataset.
    dataset = bool(columns) or (incremental and fmt in _ROW_FORMATS)
    _check_options(fmt, dataset=dataset, tokens=tokens, payloads=payloads)
    # What the user named (the captures, where to write) is checked before the format's
    # needs (an optional dependency): a missing directory is the first thing to fix.
    rollouts = list(rollouts_from(source))
    if out is not None and fmt != "otlp":
        _check_target(Path(out), dataset, "directory" if fmt == "atif" else "file")
    given = dict(format_options or {})
    options = ExportOptions(fmt, payloads, tokens, row_group_size, max_line_bytes, given)
    sink = SINKS[fmt](options)
    jobs = jobs or default_jobs()
    result = ExportResult(unit=sink.unit, format=fmt, output=sink.output)
    _check_state(sink.output, fmt, incremental, state)
    if sink.output == "endpoint":
        _send(sink, fmt, source, rollouts, incremental, state, jobs, result)
        return result
    if out is None:
        if sink.output == "file":
            raise ExportError("--out is required")
        raise ExportError(f"--format {fmt} needs --out DIR (a directory that does not exist yet)")
    target = Path(out)
    result.destination = str(target)
    _check_target(target, dataset, sink.output)
    if dataset:
        check_partition_by(columns, payloads)
    _atomic.clean_stale(target)
    if sink.output == "directory" and (target.exists() or target.is_symlink()):
        raise ExportError(f"{target}: exists ({fmt} export writes a new directory)")
    with _naming_out(target):
        if sink.output == "directory":
            _write_directory(sink, rollouts, target, jobs, result)
        elif dataset:
            _write_dataset(options, rollouts, target, columns, incremental, jobs, result)
        else:
            _write_file(sink, rollouts, target, jobs, result)
    return result


def _write_dataset(
    options: ExportOptions,
    rollouts: Sequence[Rollout],
    target: Path,
    columns: list[str],
    incremental: bool,
    jobs: int,
    result: ExportResult,
) -> None:
    """A hive-partitioned Parquet dataset at `target`: written whole, or updated."""
    write = update_dataset if incremental else write_dataset_dir
    write(
        rollouts,
        target,
        payloads=options.payloads,
        partition_by=columns,
        row_group_size=options.row_group_size,
        max_line_bytes=options.max_line_bytes,
        jobs=jobs,
        result=result,
    )


def _send(
    sink: Sink,
    fmt: str,
    source: RolloutSource,
    rollouts: list[Rollout],
    incremental: bool,
    state: str | os.PathLike[str] | None,
    jobs: int,
    result: ExportResult,
) -> None:
    """An endpoint sink's export: every call, or with `incremental` the calls not sent before."""
    result.destination = sink_destination(sink)
    if incremental:
        send_new(sink, rollouts, _sent_state(sink, fmt, source, state), jobs, result)
    else:
        sink.write(run_parts(sink, rollouts, jobs, result), None)


def send_new(
    sink: Sink, rollouts: list[Rollout], sent: SentState, jobs: int, result: ExportResult
) -> None:
    """Send what `sent` does not list as sent, then record it (`_sent`)."""
    result.state = str(sent.path)
    with sent.locked():
        pending = sent.load(sum(len(r.files) for r in rollouts)).pending(rollouts)
        if not pending:
            result.up_to_date = True
            return
        _send_pending(sink, rollouts, pending, sent, jobs, result)


def _send_pending(
    sink: Sink,
    rollouts: list[Rollout],
    pending: list[Unsent],
    sent: SentState,
    jobs: int,
    result: ExportResult,
) -> None:
    marks: list[RolloutMarks] = []

    def recorded(parts: Iterator[Part]) -> Iterator[Part]:
        for part in parts:
            marks.extend(part.sent)
            yield part

    sink.write(recorded(run_parts(sink, pending, jobs, result)), None)
    # Only now: the sink returned, so the endpoint accepted every span.
    sent.save(marks, rollouts if sent.whole else None)


def _sent_state(
    sink: Sink,
    fmt: str,
    source: RolloutSource,
    state: str | os.PathLike[str] | None,
) -> SentState:
    """The state of an incremental export of `source` by the endpoint sink `sink`."""
    # Optional member of an endpoint sink: the options that change what it sends.
    options = getattr(sink, "resume_options", None)
    if options is None:
        raise ExportError(f"--format {fmt} has no --incremental")
    destination = sink_destination(sink)
    root = _source_root(source)
    if state is None:
        if root is None:
            raise ExportError(
                "an incremental export of rollouts or files (not a capture directory) needs"
                " a state file: state=PATH (--state FILE)"
            )
        path = default_state_path(destination, root)
    else:
        path = Path(state)
    sent = SentState(path, destination=destination, source=root or "", options=options)
    sent.whole = root is not None
    return sent


def _source_root(source: RolloutSource) -> str | None:
    """The capture directory `source` names, resolved; None for rollouts or files."""
    if isinstance(source, CaptureStore):
        return str(Path(source.root).resolve())
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
        return str(Path(source).resolve())
    return None


def _check_options(fmt: str, *, dataset: bool, tokens: bool, payloads: bool) -> None:
    if fmt not in SINKS:
        raise ExportError(f"unknown export format {fmt!r}: one of {', '.join(SINKS)}")
    if fmt not in _ROW_FORMATS and (dataset or tokens or payloads):
        raise ExportError(f"--format {fmt} takes none of --partition-by, --tokens, --payloads")
    if dataset and fmt != "parquet":
        raise ExportError("--partition-by and --incremental write Parquet datasets")
    if tokens and (dataset or payloads):
        raise ExportError("--tokens writes one file, without --payloads")


def _check_state(
    output: str, fmt: str, incremental: bool, state: str | os.PathLike[str] | None
) -> None:
    if output == "endpoint":
        if state is not None and not incremental:
            raise ExportError("--state goes with --incremental")
    elif state is not None or (incremental and fmt not in _ROW_FORMATS):
        raise ExportError(
            f"--format {fmt}: --incremental and --state are for endpoint formats and"
            " Parquet datasets (which keep their state in their manifest)"
        )


def _check_target(target: Path, dataset: bool, output: str) -> None:
    if not target.parent.is_dir():
        raise ExportError(f"{target.parent}: no such directory")
    if output == "directory":
        return
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


def _write_directory(
    sink: Sink, rollouts: Sequence[Rollout], target: Path, jobs: int, result: ExportResult
) -> None:
    """The sink's files in a new temporary directory beside `target`, then renamed to it.

    `target` was checked absent: a directory that appeared since is kept (the rename
    fails on one that is not empty).
    """
    tmp = _atomic.temp_path(target)
    _atomic.remove(tmp)
    tmp.mkdir(mode=0o700)
    try:
        sink.write(run_parts(sink, rollouts, jobs, result), tmp)
        _atomic.fsync_dir(tmp)
        os.rename(tmp, target)
        _atomic.fsync_dir(target.parent)
    finally:
        _atomic.remove(tmp)


def sink_destination(sink: Sink) -> str:
    """Where an `endpoint` sink sends (its `destination`), for people."""
    return str(getattr(sink, "destination", ""))


@contextlib.contextmanager
def _naming_out(target: Path) -> Iterator[None]:
    """An error writing the export's temporary names (which the user never gave) names `out`."""
    try:
        yield
    except OSError as exc:
        if _atomic.TMP_TAG not in str(exc.filename or ""):
            raise
        raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from None
