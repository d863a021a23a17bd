"""`mcc export` (the options of `model_call_capture.export.export`, and what it wrote) and
`mcc schema`.

The command parses options, calls the export engine and prints; the engine
(`model_call_capture.export`) does the work and raises `ExportError`s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .. import _codec
from ..arrow import PAYLOAD_COLUMNS
from ..errors import ExportError, OtlpExportError
from ..export import DEFAULT_ROW_GROUP_SIZE, SINKS, ExportResult
from ..export import export as export_rollouts
from ..export._parquet import ROW_GROUP_BYTES, pandas_refused
from ._common import (
    jobs_option,
    max_line_bytes_option,
    note,
    open_sources,
    plural,
    stdout,
    unreadable_note,
)
from ._interchange import format_options, interchange_options

__all__ = ["PAYLOAD_FIELDS", "export", "schema"]

PAYLOAD_FIELDS = PAYLOAD_COLUMNS
"""Record fields that carry the captured payloads; exported only with `--payloads`."""


@click.command()
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
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
    type=click.Choice(list(SINKS)),
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
    help="Update the dataset at --out: export only rollouts that are new or changed since"
    " (otlp: send only the calls not sent before to --endpoint).",
)
@click.option(
    "--state",
    "state",
    default=None,
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="otlp --incremental: the state file (default: one per directory and endpoint"
    " under $XDG_STATE_HOME/model-call-capture/export-sent/).",
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
@max_line_bytes_option()
def export(
    paths: tuple[str, ...],
    out: str | None,
    fmt: str | None,
    payloads: bool,
    partition_by: str | None,
    incremental: bool,
    state: str | None,
    tokens: bool,
    row_group_size: int,
    jobs: int | None,
    max_line_bytes: int,
    **interchange: Any,
) -> None:
    """One row per call: `rollout_id` and every ModelCallRecord field.

    PATH is a capture directory (or a demo directory with `model-calls/` inside) or a
    capture file; several are exported together, in the order named.

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
      mcc export /data/model-calls --format otlp --endpoint http://127.0.0.1:6006 --incremental
      mcc export /data/model-calls --format atif --out trajectories/ --agent-name my-agent

    --format otlp sends one OpenTelemetry GenAI span per call to an OTLP/HTTP endpoint
    (pip install 'model-call-capture[otel]'); with --incremental only the calls not sent
    before to that endpoint (the state file: --state, docs/formats.md); --format atif
    writes one ATIF-v1.7 trajectory per rollout and a manifest.jsonl into the new
    directory --out.
    """
    columns = [c.strip() for c in partition_by.split(",")] if partition_by else []
    sources = open_sources(paths)
    try:
        # The command's own process: its tables go to a file, never to pandas.
        with pandas_refused():
            result = export_rollouts(
                sources.store if sources.store is not None else sources.rollouts,
                out,
                format=fmt,
                payloads=payloads,
                tokens=tokens,
                partition_by=columns,
                incremental=incremental,
                row_group_size=row_group_size,
                max_line_bytes=max_line_bytes,
                jobs=jobs,
                format_options=format_options(fmt, paths[0], interchange),
                state=state,
            )
    except (ExportError, OtlpExportError) as exc:
        raise click.ClickException(str(exc)) from None
    _report(result, sources.label)
    if result.skipped or result.newer:  # an export without some calls: the exit code tells
        raise click.exceptions.Exit(2)


def _report(result: ExportResult, directory: str) -> None:
    target = result.destination
    state = f" (state: {result.state})" if result.state else ""
    if result.up_to_date:
        stdout().print(f"{target} is up to date{state}", soft_wrap=True)
        return
    if result.output == "endpoint":
        headline = f"sent {result.rows} {result.unit} to {target}{state}"
    elif result.output == "directory":
        headline = f"wrote {result.rows} {result.unit} to {target}"
    else:
        headline = f"wrote {result.rows} {result.unit} to {target} ({result.format})"
    stdout().print(headline, soft_wrap=True)
    if result.calls_left_out:
        note(_left_out_note(result))
    if result.damaged:
        note(unreadable_note(result.damaged, directory))
    if result.out_of_range:
        note(
            f"{plural(result.out_of_range, 'value')} beyond the export's types (int64) written"
            " as null"
        )
    for skipped in result.skipped_reasons:
        note(f"skipped {skipped.rollout_id}: {skipped.reason}")
    if result.skipped > len(result.skipped_reasons):
        note(f"{plural(result.skipped - len(result.skipped_reasons), 'more rollout')} skipped")
    for newer in result.newer_lines:  # as `mcc stats` and `mcc show` warn of them
        note(newer, kind="warning")
    if result.newer > len(result.newer_lines):
        more = plural(result.newer - len(result.newer_lines), "more rollout")
        note(f"{more} read up to a line of a newer format", kind="warning")


def _left_out_note(result: ExportResult) -> str:
    """Why calls are in no row: for token trajectories, the token ids and how to get them."""
    calls = plural(result.calls_left_out, "call")
    if result.unit != "token trajectories":
        return (
            f"{calls} left out: the {result.format} format has no place for them (docs/formats.md)"
        )
    if result.rows == 0:
        none = (
            "the one call carried no token ids"
            if result.calls_left_out == 1
            else f"none of the {calls} carried token ids"
        )
        return (
            f"no token trajectories: {none}"
            " (prompt_token_ids and generation_token_ids). Capture them from a server that"
            ' returns them, e.g. vLLM with "return_token_ids": true in the request'
            ' (docs/formats.md, "Token trajectories")'
        )
    return (
        f"{calls} without token ids (prompt_token_ids and generation_token_ids)"
        ' in no trajectory (docs/formats.md, "Token trajectories")'
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
    from .. import schemas

    documents = {
        name: (schemas.schema_dir() / name).read_bytes() for name in schemas.schema_names()
    }
    if out is None:
        from ._table import Col, print_table

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
