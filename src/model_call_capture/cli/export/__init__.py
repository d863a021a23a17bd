"""`mcc export` (one row per call: Parquet, a Parquet dataset, or JSONL; with `--tokens`
one row per token trajectory) and `mcc schema`.

The export streams rollout by rollout (`_single`, `_dataset`, `_tokens`), reads rollouts on
a process pool (`.._parallel.map_files`) and publishes atomically (`_atomic`).
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ... import _codec
from ...arrow import PAYLOAD_COLUMNS
from ...store import CaptureStore, Rollout
from .._common import capture_root, stderr, stdout
from .._parallel import default_jobs, jobs_option
from . import _atomic
from ._cli_interchange import export_interchange, interchange_options
from ._dataset import check_partition_by, update_dataset, write_dataset_dir
from ._single import ROW_GROUP_BYTES, Counts, pandas_refused, write_jsonl, write_parquet
from ._tokens import write_token_jsonl, write_token_parquet

__all__ = ["PAYLOAD_FIELDS", "export", "schema"]

PAYLOAD_FIELDS = PAYLOAD_COLUMNS
"""Record fields that carry the captured payloads; exported only with `--payloads`."""

DEFAULT_ROW_GROUP_SIZE = 65536


def _need_pyarrow() -> None:
    # Found, not imported: a process with pyarrow's threads starts its workers from a fork
    # server instead of forking them (`_single.rollout_tables`).
    if importlib.util.find_spec("pyarrow") is None:
        raise click.ClickException(
            "Parquet export needs pyarrow: pip install 'model-call-capture[arrow]' (or use --format jsonl)"
        )


def _write_file(
    paths: list[Rollout],
    target: Path,
    fmt: str,
    payloads: bool,
    row_group_size: int,
    jobs: int,
    tokens: bool = False,
) -> Counts:
    tmp = _atomic.temp_path(target)
    # Payloads are what the capture files hold: as private as they are (0600).
    _atomic.create_file(tmp, 0o600 if payloads else 0o666)
    try:
        if tokens and fmt == "parquet":
            counts = write_token_parquet(paths, tmp, row_group_size=row_group_size, jobs=jobs)
        elif tokens:
            counts = write_token_jsonl(paths, tmp, jobs=jobs)
        elif fmt == "parquet":
            counts = write_parquet(
                paths, tmp, payloads=payloads, row_group_size=row_group_size, jobs=jobs
            )
        else:
            counts = write_jsonl(paths, tmp, payloads=payloads, jobs=jobs)
        _atomic.publish_file(tmp, target)
    finally:
        _atomic.remove(tmp)
    return counts


@contextlib.contextmanager
def _naming_out(target: Path) -> Iterator[None]:
    """An error writing the export's temporary names (which the user never gave) names --out."""
    try:
        yield
    except OSError as exc:
        if _atomic.TMP_TAG not in str(exc.filename or ""):
            raise
        raise click.ClickException(f"cannot write {target}: {exc.strerror or exc}") from None


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option(
    "--out",
    "out",
    default=None,
    type=click.Path(writable=True),
    help="The file to write (a directory with --partition-by, --incremental or --format atif).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "jsonl", "otlp", "atif"]),
    default=None,
    help="Output format; by default jsonl for a .jsonl/.json file name, else parquet.",
)
@click.option(
    "--payloads", is_flag=True, help="Add request, response, request_raw and response_raw columns."
)
@click.option(
    "--partition-by",
    "partition_by",
    default=None,
    metavar="COLUMN[,COLUMN]",
    help="Write a hive-partitioned Parquet dataset directory (e.g. model or dialect).",
)
@click.option(
    "--incremental",
    is_flag=True,
    help="Update the dataset at --out: export only rollouts that are new or changed since.",
)
@click.option(
    "--tokens",
    is_flag=True,
    help="One row per token trajectory (token_ids, loss_mask, log_probs) instead of per call.",
)
@click.option(
    "--row-group-size",
    type=click.IntRange(min=1),
    default=DEFAULT_ROW_GROUP_SIZE,
    show_default=True,
    help=f"Most rows in a Parquet row group (fewer once a group holds {ROW_GROUP_BYTES >> 20} MiB).",
)
@interchange_options
@jobs_option()
def export(
    directory: str,
    out: str | None,
    fmt: str | None,
    payloads: bool,
    partition_by: str | None,
    incremental: bool,
    tokens: bool,
    row_group_size: int,
    jobs: int | None,
    **interchange: Any,
) -> None:
    """One row per call: `rollout_id` and every ModelCallRecord field.

    With --tokens, one row per token trajectory instead (`build_token_trajectories`: the
    calls of a rollout chained by their token ids, with a loss mask and log-probs;
    docs/formats.md, "Token trajectories"), for a trainer to load directly.

    Parquet (needs pyarrow: pip install 'model-call-capture[arrow]') is readable by
    DuckDB, Spark, Ray Data and pandas, with one fixed schema (docs/formats.md, "Export");
    free-form JSON (payloads, tool-call arguments) is stored as JSON text there. JSONL
    rows are the records as JSON, `rollout_id` added. The export streams: memory does not
    grow with the directory. Nothing half-written is ever visible at --out.

    \b
    Example:
      mcc export ./mcc-demo --out calls.parquet
      duckdb -c "select model, avg(latency_total_ms) from 'calls.parquet' group by 1"
      mcc export /data/model-calls --out calls.jsonl --payloads
      mcc export /data/model-calls --out calls/ --partition-by model --incremental
      mcc export /data/model-calls --out trajectories.parquet --tokens
      mcc export /data/model-calls --format otlp --endpoint http://127.0.0.1:6006
      mcc export /data/model-calls --format atif --out trajectories/ --agent-name my-agent

    --format otlp sends a GenAI span per call (pip install 'model-call-capture[otel]');
    --format atif writes an ATIF-v1.7 trajectory per rollout into the new directory --out.
    """
    if fmt in ("otlp", "atif"):
        others = bool(partition_by or tokens or payloads)
        return export_interchange(
            directory, out, fmt, others=others, incremental=incremental, **interchange
        )
    if out is None:
        raise click.ClickException("--out is required")
    target = Path(out)
    columns = [c.strip() for c in partition_by.split(",")] if partition_by else []
    dataset = bool(columns) or incremental
    fmt = fmt or ("jsonl" if target.suffix in (".jsonl", ".json") and not dataset else "parquet")
    if dataset and fmt != "parquet":
        raise click.ClickException("--partition-by and --incremental write Parquet datasets")
    if tokens and (dataset or payloads):
        raise click.ClickException("--tokens writes one file, without --payloads")
    if fmt == "parquet":
        _need_pyarrow()
    if not target.parent.is_dir():
        raise click.ClickException(f"{target.parent}: no such directory")
    if dataset and target.exists() and not target.is_dir():
        raise click.ClickException(f"{target}: exists and is not a dataset directory")
    if not dataset and target.is_dir():
        raise click.ClickException(f"{target}: is a directory (use --partition-by for a dataset)")
    if dataset:
        check_partition_by(columns, payloads)
    paths = CaptureStore(capture_root(directory)).rollouts()
    jobs = jobs or default_jobs()
    _atomic.clean_stale(target)
    counts: Counts | None
    with _naming_out(target), pandas_refused():
        if dataset:
            write = update_dataset if incremental else write_dataset_dir
            counts = write(
                paths,
                target,
                payloads=payloads,
                partition_by=columns,
                row_group_size=row_group_size,
                jobs=jobs,
            )
        else:
            counts = _write_file(paths, target, fmt, payloads, row_group_size, jobs, tokens)
    _report(counts, target, fmt, tokens, directory)


def _report(counts: Counts | None, target: Path, fmt: str, tokens: bool, directory: str) -> None:
    if counts is None:
        stdout().print(f"{target} is up to date", soft_wrap=True)
        return
    unit = "token trajectories" if tokens else "calls"
    stdout().print(f"wrote {counts.rows} {unit} to {target} ({fmt})", soft_wrap=True)
    if counts.damaged:
        stderr().print(
            f"[yellow]{counts.damaged} unreadable lines skipped (mcc validate {directory} lists them)[/]"
        )
    if counts.out_of_range:
        stderr().print(
            f"[yellow]{counts.out_of_range} values beyond the export's types (int64) written as null[/]"
        )


@click.command()
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False),
    help="Write the schema files into this directory.",
)
def schema(out: str | None) -> None:
    """The JSON Schemas (2020-12) of the capture formats: list them, or write them with --out.

    The files keep their packaged layout (`v1/capture-line.schema.json`, ...), so their
    `$ref`s resolve between them; generate types for another language from them.

    \b
    Example:
      mcc schema
      mcc schema --out ./schemas && datamodel-codegen --input schemas/v1/capture-line.schema.json
    """
    from ... import schemas

    documents = {
        name: (schemas.schema_dir() / name).read_bytes() for name in schemas.schema_names()
    }
    if out is None:
        from .._table import Col, print_table

        console = stdout()
        print_table(
            console,
            (Col("file", "id"), Col("title", "id", 1)),
            [
                [rel, str(_codec.decode(text).get("title", "-"))]
                for rel, text in sorted(documents.items())
            ],
            title=f"{len(documents)} JSON Schemas",
        )
        console.print(
            f"each $id is {schemas.SCHEMA_BASE_URI}<file>; write them with: mcc schema --out DIR"
        )
        return
    root = Path(out)
    for rel, text in sorted(documents.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
    stdout().print(f"wrote {len(documents)} schemas to {root}", soft_wrap=True)
