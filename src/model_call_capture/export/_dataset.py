"""A hive-partitioned Parquet dataset directory, written whole or updated incrementally.

Files are `<col>=<value>/.../part-<generation>-<i>.parquet`; `_mcc_export_manifest.json`
beside them records the options, the committed generations and the size and mtime of
every capture file exported. An incremental run exports only rollouts that are new or
changed, after removing their old rows from the files that held them. Its order makes a
kill at any point harmless to the next run: rewritten old files first (rows may go
missing, never appear twice), then the new files, then the manifest; the next run
deletes files of generations the manifest does not list and re-exports every rollout
whose file differs from the manifest.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import _codec
from ..arrow import EXPORT_MANIFEST, record_schema
from ..errors import ExportError
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..store import Rollout, rollout_of_file
from . import _atomic
from ._parts import ExportResult, run_parts
from ._records import RecordsParquet, record_tables
from ._sink import Part

__all__ = [
    "PART_FILE",
    "capture_state",
    "check_partition_by",
    "update_dataset",
    "write_dataset_dir",
]

PART_FILE = re.compile(r"part-(\d+)-\d+\.parquet")
"""The name of a data file; group 1 is its generation."""

MANIFEST_FORMAT = "mcc-export-manifest/1"


def check_partition_by(columns: Sequence[str], payloads: bool) -> None:
    """Refuse partition columns that are not scalar strings, ints or booleans of the schema."""
    import pyarrow as pa

    schema = record_schema(payloads)
    if len(set(columns)) != len(columns):
        raise ExportError(f"--partition-by names a column twice: {','.join(columns)}")
    for name in columns:
        if name not in schema.names:
            raise ExportError(f"--partition-by: no column {name!r}")
        kind = schema.field(name).type
        if not (pa.types.is_string(kind) or pa.types.is_integer(kind) or pa.types.is_boolean(kind)):
            raise ExportError(f"--partition-by: column {name!r} is not a string, int or bool")


def capture_state(rollouts: Sequence[Rollout]) -> dict[str, list[int]]:
    """`[size, mtime_ns]` of each file of the rollouts by its name, taken before it is read
    (a file that grows while it is exported then differs from the manifest and is exported
    again next time)."""
    state = {}
    for rollout in rollouts:
        for path in rollout.files:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            state[path.name] = [st.st_size, st.st_mtime_ns]
    return state


def _rollout_id_of(name: str) -> str | None:
    """The rollout of a file the manifest lists; None for a name that is no capture file's."""
    try:
        return rollout_of_file(name).id
    except ValueError:
        return None


def _write_parts(
    rollouts: Sequence[Rollout],
    base: Path,
    *,
    generation: int,
    payloads: bool,
    partition_by: Sequence[str],
    row_group_size: int,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    jobs: int,
    result: ExportResult,
) -> set[str]:
    """Write the rollouts' rows under `base`; the ids of those read up to a line of a newer
    format, which the manifest leaves out so that the next incremental run reads them again."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    schema = record_schema(payloads)
    sink = RecordsParquet(
        payloads=payloads, row_group_size=row_group_size, max_line_bytes=max_line_bytes
    )
    newer: set[str] = set()

    def noted(parts: Iterator[Part]) -> Iterator[Part]:
        for part in parts:
            newer.update(rollout_id for rollout_id, _ in part.newer)
            yield part

    batches = (
        batch
        for table in record_tables(noted(run_parts(sink, rollouts, jobs, result)))
        for batch in table.to_batches()
    )
    partitioning = (
        ds.partitioning(pa.schema([schema.field(c) for c in partition_by]), flavor="hive")
        if partition_by
        else None
    )
    ds.write_dataset(
        pa.RecordBatchReader.from_batches(schema, batches),
        base,
        format="parquet",
        partitioning=partitioning,
        basename_template=f"part-{generation:06d}-{{i}}.parquet",
        file_options=ds.ParquetFileFormat().make_write_options(
            compression="zstd", use_dictionary=False
        ),
        max_rows_per_group=row_group_size,
        min_rows_per_group=min(row_group_size, 8192),
        max_rows_per_file=16 * row_group_size,
        max_open_files=64,
        existing_data_behavior="overwrite_or_ignore",
    )
    if payloads:  # the files hold what the captures hold: as private as they are
        for dirpath, _, files in os.walk(base):
            for name in files:
                os.chmod(Path(dirpath) / name, 0o600)
    return newer


def _read_whole(state: dict[str, list[int]], rollouts: Sequence[Rollout], newer: set[str]) -> None:
    """`state` without the files of the rollouts in `newer` (exported in part)."""
    for rollout in rollouts:
        if rollout.id in newer:
            for path in rollout.files:
                state.pop(path.name, None)


def _manifest(
    payloads: bool, partition_by: Sequence[str], generations: list[int], state: dict[str, list[int]]
) -> bytes:
    return _codec.encode(
        {
            "format": MANIFEST_FORMAT,
            "payloads": payloads,
            "partition_by": list(partition_by),
            "generations": generations,
            "captures": state,
        }
    )


def _write_manifest(base: Path, data: bytes, mode: int) -> None:
    target = base / EXPORT_MANIFEST
    tmp = _atomic.temp_path(target)
    try:
        _atomic.create_file(tmp, mode)
        tmp.write_bytes(data)
        _atomic.publish_file(tmp, target)
    finally:
        _atomic.remove(tmp)


def write_dataset_dir(
    rollouts: Sequence[Rollout],
    out: Path,
    *,
    payloads: bool,
    partition_by: Sequence[str],
    row_group_size: int,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    jobs: int,
    result: ExportResult,
) -> None:
    """Write a whole new dataset into a temporary directory, then swap it in place of `out`.

    `out` must be absent, empty, or a dataset an export wrote: the swap deletes what it replaces.
    """
    if out.is_dir() and any(out.iterdir()) and not (out / EXPORT_MANIFEST).is_file():
        raise ExportError(
            f"{out}: a directory that is not an mcc export dataset (no {EXPORT_MANIFEST}); "
            "name a new or empty directory"
        )
    state = capture_state(rollouts)
    tmp = _atomic.temp_path(out)
    _atomic.remove(tmp)
    os.mkdir(tmp, 0o700 if payloads else 0o777)
    try:  # an interrupted or failed run leaves nothing (a killed one: the next run cleans)
        newer = _write_parts(
            rollouts,
            tmp,
            generation=1,
            payloads=payloads,
            partition_by=partition_by,
            row_group_size=row_group_size,
            max_line_bytes=max_line_bytes,
            jobs=jobs,
            result=result,
        )
        _read_whole(state, rollouts, newer)
        _write_manifest(
            tmp, _manifest(payloads, partition_by, [1], state), 0o600 if payloads else 0o666
        )
        _atomic.publish_dir(tmp, out)
    finally:
        _atomic.remove(tmp)


def read_manifest(out: Path) -> dict[str, Any] | None:
    """The manifest of the dataset at `out`, None when there is none."""
    try:
        value = _codec.decode((out / EXPORT_MANIFEST).read_bytes())
    except FileNotFoundError:
        return None
    if not isinstance(value, dict) or value.get("format") != MANIFEST_FORMAT:
        raise ExportError(f"{out / EXPORT_MANIFEST}: not an mcc export manifest")
    return value


def _part_files(out: Path) -> list[Path]:
    """The data files of the dataset, hidden directories (temporaries) skipped."""
    found = []
    for dirpath, dirs, files in os.walk(out):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        found += [Path(dirpath) / f for f in sorted(files) if PART_FILE.fullmatch(f)]
    return found


def _rollouts_in(path: Path, out: Path) -> set[str]:
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    if "rollout_id" in file.schema_arrow.names:
        return set(file.read(columns=["rollout_id"]).column(0).unique().to_pylist())
    for part in path.relative_to(out).parts:  # partitioned by rollout_id: it is in the path
        if part.startswith("rollout_id="):
            from urllib.parse import unquote

            return {unquote(part.removeprefix("rollout_id="))}
    return set()


def _without(path: Path, stale: set[str], out: Path, tmp: Path, mode: int) -> Path | None:
    """A copy of the data file `path` without the rows of `stale` rollouts; None if none are left."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    target = tmp / path.relative_to(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    _atomic.create_file(target, mode)
    kept = 0
    with pq.ParquetWriter(
        target, file.schema_arrow, compression="zstd", use_dictionary=False
    ) as writer:
        for i in range(file.num_row_groups):
            group = file.read_row_group(i)
            if "rollout_id" in group.column_names:
                group = group.filter(
                    pc.invert(pc.is_in(group["rollout_id"], pa.array(sorted(stale))))
                )
            if group.num_rows:
                writer.write_table(group)
                kept += group.num_rows
    return target if kept else None


def _committed_parts(out: Path, generations: list[int]) -> list[Path]:
    """The data files of committed generations; what killed runs left is removed."""
    for entry in out.iterdir():  # the staging directories of killed runs
        if _atomic.stale_pid(entry.name, "") is not None:
            _atomic.remove(entry)
    committed = {f"{g:06d}" for g in generations}
    parts = []
    for path in _part_files(out):
        match = PART_FILE.fullmatch(path.name)
        if match is None or match.group(1) not in committed:  # never committed
            os.unlink(path)
        else:
            parts.append(path)
    return parts


def _swap_in(rewritten: list[tuple[Path, Path | None]], new: Path, out: Path) -> None:
    """Replace old files by their rewritten copies (None: delete), then move the new ones in.

    Old rows go first: a kill from here on can lose rows until the next run, never double them.
    """
    touched = {path.parent for path, _ in rewritten}
    for path, copy in rewritten:
        if copy is None:
            os.unlink(path)
        else:
            os.replace(copy, path)
    for path in _part_files(new) if new.is_dir() else []:
        target = out / path.relative_to(new)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        touched.add(target.parent)
    for directory in sorted(touched):
        _atomic.fsync_dir(directory)


def update_dataset(
    rollouts: Sequence[Rollout],
    out: Path,
    *,
    payloads: bool,
    partition_by: Sequence[str],
    row_group_size: int,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    jobs: int,
    result: ExportResult,
) -> None:
    """Export only the new or changed rollouts into the dataset at `out` (`result.up_to_date`
    when there were none); a whole export when `out` holds no dataset yet."""
    manifest = read_manifest(out) if out.is_dir() else None
    if manifest is None:
        return write_dataset_dir(
            rollouts,
            out,
            payloads=payloads,
            partition_by=partition_by,
            row_group_size=row_group_size,
            max_line_bytes=max_line_bytes,
            jobs=jobs,
            result=result,
        )
    if manifest.get("payloads") != payloads or manifest.get("partition_by") != list(partition_by):
        raise ExportError(
            f"{out} was exported with payloads={manifest.get('payloads')} and partition_by="
            f"{','.join(manifest.get('partition_by') or []) or '-'}; export it again without "
            "--incremental to change them"
        )
    generations: list[int] = list(manifest.get("generations") or [])
    parts = _committed_parts(out, generations)
    state = capture_state(rollouts)
    known: dict[str, Any] = manifest.get("captures") or {}
    changed = [
        r
        for r in rollouts
        if any(p.name in state and known.get(p.name) != state[p.name] for p in r.files)
    ]
    vanished = (_rollout_id_of(name) for name in set(known) - set(state))
    stale = {rollout_id for rollout_id in vanished if rollout_id is not None}
    stale |= {r.id for r in changed}
    if not stale:
        result.up_to_date = True
        return
    mode = 0o600 if payloads else 0o666
    tmp = out / f"{_atomic.TMP_TAG}{os.getpid()}"
    tmp.mkdir(mode=0o700)
    generation = max(generations, default=0) + 1
    # Removing the staging directory of an interrupted run is what the next run would do
    # (`_committed_parts`): files of a generation the manifest does not list never count.
    try:
        newer = _write_parts(
            changed,
            tmp / "new",
            generation=generation,
            payloads=payloads,
            partition_by=partition_by,
            row_group_size=row_group_size,
            max_line_bytes=max_line_bytes,
            jobs=jobs,
            result=result,
        )
        rewritten: list[tuple[Path, Path | None]] = []
        for path in parts:
            held = _rollouts_in(path, out)
            if held & stale:
                whole = "rollout_id" in partition_by
                rewritten.append(
                    (path, None if whole else _without(path, stale, out, tmp / "old", mode))
                )
        _atomic.fsync_tree(tmp)
        _swap_in(rewritten, tmp / "new", out)
        _read_whole(state, changed, newer)
        data = _manifest(payloads, partition_by, [*generations, generation], state)
        _write_manifest(out, data, mode)
    finally:
        _atomic.remove(tmp)
