"""`mcc export` (one row per call, Parquet or JSONL) and `mcc schema` (the JSON Schemas)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import msgspec.inspect as mi

from .. import _codec
from ..contracts import ModelCallRecord
from ._common import capture_root, read_rollouts, stderr, stdout

__all__ = ["PAYLOAD_FIELDS", "arrow_schema", "export", "export_rows", "schema"]

PAYLOAD_FIELDS = ("request", "response", "request_raw", "response_raw")
"""Record fields that carry the captured payloads; exported only with `--payloads`."""

_RECORD_FIELDS = mi.type_info(ModelCallRecord).fields  # type: ignore[attr-defined]


def _columns(payloads: bool) -> list[Any]:
    return [f for f in _RECORD_FIELDS if payloads or f.name not in PAYLOAD_FIELDS]


def _non_null(t: Any) -> Any:
    if isinstance(t, mi.UnionType):
        rest = [u for u in t.types if not isinstance(u, mi.NoneType)]
        return rest[0] if len(rest) == 1 else t
    return t


def _arrow_type(t: Any) -> Any:
    """The Arrow type of a msgspec type; free-form JSON (payloads, tool arguments) becomes a JSON string."""
    import pyarrow as pa

    t = _non_null(t)
    if isinstance(t, mi.IntType):
        return pa.int64()
    if isinstance(t, mi.FloatType):
        return pa.float64()
    if isinstance(t, mi.BoolType):
        return pa.bool_()
    if isinstance(t, (mi.StrType, mi.LiteralType)):
        return pa.string()
    if isinstance(t, mi.StructType):
        return pa.struct([(f.encode_name, _arrow_type(f.type)) for f in t.fields])
    if isinstance(t, mi.ListType):
        return pa.list_(_arrow_type(t.item_type))
    return pa.string()


def _arrow_value(value: Any, t: Any) -> Any:
    if value is None:
        return None
    t = _non_null(t)
    if isinstance(t, (mi.IntType, mi.FloatType, mi.BoolType, mi.StrType, mi.LiteralType)):
        return value
    if isinstance(t, mi.StructType):
        return {f.encode_name: _arrow_value(value.get(f.encode_name), f.type) for f in t.fields}
    if isinstance(t, mi.ListType):
        return [_arrow_value(item, t.item_type) for item in value]
    return _codec.encode(value).decode()


def arrow_schema(payloads: bool) -> Any:
    """The Arrow schema of an export: `rollout_id`, then every record field in order."""
    import pyarrow as pa

    return pa.schema(
        [("rollout_id", pa.string())]
        + [(f.encode_name, _arrow_type(f.type)) for f in _columns(payloads)]
    )


def export_rows(root: Path, payloads: bool) -> tuple[list[dict[str, Any]], int]:
    """One plain dict per call (`rollout_id` first), and the number of unreadable lines skipped."""
    rows: list[dict[str, Any]] = []
    invalid = 0
    for rollout in read_rollouts(root):
        invalid += rollout.invalid_count
        for record in rollout.records:
            row: dict[str, Any] = {"rollout_id": rollout.rollout_id}
            row.update(record.to_dict())
            for name in () if payloads else PAYLOAD_FIELDS:
                row.pop(name, None)
            rows.append(row)
    return rows, invalid


def _write_parquet(rows: list[dict[str, Any]], path: Path, payloads: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = [("rollout_id", None)] + [(f.encode_name, f.type) for f in _columns(payloads)]
    data = {
        name: [row.get(name) if t is None else _arrow_value(row.get(name), t) for row in rows]
        for name, t in columns
    }
    pq.write_table(pa.Table.from_pydict(data, schema=arrow_schema(payloads)), path)


def _write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    with path.open("wb") as f:
        for row in rows:
            f.write(_codec.encode_line(row))


@contextlib.contextmanager
def _atomic_target(out: Path) -> Iterator[Path]:
    """A temporary file beside `out`, renamed over it only when the export succeeded."""
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make the export private
    try:
        yield Path(tmp)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False, writable=True),
    help="The file to write.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "jsonl"]),
    default=None,
    help="Output format; by default jsonl for a .jsonl/.json file name, else parquet.",
)
@click.option(
    "--payloads", is_flag=True, help="Add request, response, request_raw and response_raw columns."
)
def export(directory: str, out: str, fmt: str | None, payloads: bool) -> None:
    """One row per call: `rollout_id` and every ModelCallRecord field.

    Parquet (needs pyarrow: pip install 'model-call-capture[parquet]') is readable by
    DuckDB, Spark, Ray Data and pandas; free-form JSON (payloads, tool-call arguments) is
    stored as JSON strings there. JSONL rows are the records as JSON, `rollout_id` added.

    \b
    Example:
      mcc export ./mcc-demo --out calls.parquet
      duckdb -c "select model, avg(latency_total_ms) from 'calls.parquet' group by 1"
      mcc export /data/model-calls --out calls.jsonl --payloads
    """
    target = Path(out)
    fmt = fmt or ("jsonl" if target.suffix in (".jsonl", ".json") else "parquet")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise click.ClickException(
                "Parquet export needs pyarrow: pip install 'model-call-capture[parquet]' (or use --format jsonl)"
            ) from None
    if not target.parent.is_dir():
        raise click.ClickException(f"{target.parent}: no such directory")
    rows, invalid = export_rows(capture_root(directory), payloads)
    with _atomic_target(target) as tmp:
        if fmt == "parquet":
            _write_parquet(rows, tmp, payloads)
        else:
            _write_jsonl(rows, tmp)
    stdout().print(f"wrote {len(rows)} calls to {target} ({fmt})")
    if invalid:
        stderr().print(
            f"[yellow]{invalid} unreadable lines skipped (mcc validate {directory} lists them)[/]"
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
    from rich.table import Table

    from .. import schemas

    documents = {
        name: (schemas.schema_dir() / name).read_bytes() for name in schemas.schema_names()
    }
    if out is None:
        table = Table(title=f"{len(documents)} JSON Schemas", title_justify="left")
        for name in ("file", "title"):
            table.add_column(name, no_wrap=True)
        for rel, text in sorted(documents.items()):
            table.add_row(rel, str(_codec.decode(text).get("title", "-")))
        console = stdout()
        console.print(table)
        console.print(
            f"each $id is {schemas.SCHEMA_BASE_URI}<file>; write them with: mcc schema --out DIR"
        )
        return
    root = Path(out)
    for rel, text in sorted(documents.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
    stdout().print(f"wrote {len(documents)} schemas to {root}")
