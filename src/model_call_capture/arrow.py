"""Capture files as Arrow record batches: the one export schema and the batches that fill it.

pyarrow is optional (`pip install 'model-call-capture[arrow]'`): it is imported when a
function here is first called, so the core install stays light.

The schema is fixed (docs/formats.md, "Export (Arrow / Parquet)"): the same types in every
run and every partition, whatever the values, so datasets of many runs concatenate. Times
stay what the records hold, float64 Unix seconds, so a value is never rounded on the way.
Counts are int64; a value Arrow cannot hold (a token count above int64 in a hand-made or
hostile line) becomes null and is counted in `RecordBatches.out_of_range`, so one odd line
never fails an export. Free-form JSON (payloads, tool-call arguments) is JSON text. Token
ids are list<int32> (a record holds ids in 0 .. 2^31-1 only) and log-probs list<float32>,
as trainers load them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from . import _codec
from .contracts import ModelCallRecord, ModelRef, TokenTrajectory, ToolCall
from .reader import DEFAULT_MAX_LINE_BYTES
from .records import iter_rollout_records
from .store import Rollout, RolloutSource, rollouts_from
from .trajectories import build_token_trajectories, calls_without_token_ids

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.dataset as ds

__all__ = [
    "EXPORT_MANIFEST",
    "PAYLOAD_COLUMNS",
    "RecordBatches",
    "TrajectoryBatches",
    "iter_record_batches",
    "iter_trajectory_batches",
    "open_export_dataset",
    "record_schema",
    "trajectory_rows",
    "trajectory_schema",
]

PAYLOAD_COLUMNS = ("request", "response", "request_raw", "response_raw")
"""The payload columns, present only when `payloads=True`: JSON text (large_string)."""

EXPORT_MANIFEST = "_mcc_export_manifest.json"
"""The file beside a dataset `mcc export` wrote: its options and what it holds."""

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

# (name, kind) in schema order; kinds map to Arrow types in `_arrow_type`.
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rollout_id", "str"),
    ("model_call_id", "str"),
    ("response_id", "str"),
    ("call_index", "int"),
    ("model_ref", "model_ref"),
    ("model", "str"),
    ("dialect", "str"),
    ("status_code", "int"),
    ("response_status", "str"),
    ("finish_reason", "str"),
    ("started_at", "float"),
    ("completed_at", "float"),
    ("tokens_in", "int"),
    ("tokens_out", "int"),
    ("tokens_reasoning", "int"),
    ("tokens_total", "int"),
    ("cached_tokens", "int"),
    ("cache_hit", "bool"),
    ("cache_creation_tokens", "int"),
    ("tool_calls", "tool_calls"),
    ("reasoning_content", "str"),
    ("error_category", "str"),
    ("latency_total_ms", "float"),
    ("latency_ttft_ms", "float"),
    ("capture_cut", "bool"),
    ("client_session_id", "str"),
    ("upstream_attempted", "bool"),
    ("response_source", "str"),
    ("upstream_status_code", "int"),
    ("local_response_reason", "str"),
    ("prompt_token_ids", "ids"),
    ("generation_token_ids", "ids"),
    ("generation_log_probs", "log_probs"),
    ("derivation_problems", "gaps"),
)
_KINDS = dict(_COLUMNS)
# Where each column's value sits in a record's fields (`msgspec.structs.astuple`).
_FIELD_INDEX = {name: i for i, name in enumerate(ModelCallRecord.__struct_fields__)}
_PAYLOAD_INDEXES = tuple(_FIELD_INDEX[name] for name in PAYLOAD_COLUMNS)

DEFAULT_BATCH_BYTES = 64 << 20
"""Payload text after which a batch is cut even if it has fewer than `batch_size` rows."""


def _arrow_type(kind: str) -> pa.DataType:
    import pyarrow as pa

    if kind == "int":
        return pa.int64()
    if kind == "float":
        return pa.float64()
    if kind == "bool":
        return pa.bool_()
    if kind == "model_ref":
        return pa.struct([("type", pa.string()), ("name", pa.string())])
    if kind == "tool_calls":
        return pa.list_(
            pa.struct([("call_id", pa.string()), ("name", pa.string()), ("arguments", pa.string())])
        )
    if kind == "ids":
        return pa.list_(pa.field("element", pa.int32(), nullable=False))
    if kind == "log_probs":
        return pa.list_(pa.field("element", pa.float32(), nullable=False))
    if kind == "gaps":
        return pa.list_(
            pa.field("element", pa.struct([("code", pa.string()), ("detail", pa.string())]))
        )
    if kind == "json":
        return pa.large_string()
    return pa.string()


@functools.cache
def record_schema(payloads: bool = False) -> pa.Schema:
    """The Arrow schema of exported records: `rollout_id`, then every record field in order.

    With `payloads`, four JSON-text columns (`request`, `response`, `request_raw`,
    `response_raw`, large_string) come before `capture_cut`, as in the record.
    `rollout_id` and `call_index` are never null; every other column may be.
    """
    import pyarrow as pa

    fields = []
    for name, kind in _COLUMNS:
        if name == "capture_cut" and payloads:
            fields += [pa.field(p, pa.large_string()) for p in PAYLOAD_COLUMNS]
        nullable = name not in ("rollout_id", "call_index", "capture_cut", "tool_calls")
        fields.append(pa.field(name, _arrow_type(kind), nullable=nullable))
    return pa.schema(fields)


def _json_text(value: Any) -> str | None:
    if value is None or value is msgspec.UNSET:
        return None
    if type(value) is msgspec.Raw:  # the line's own text, not decoded yet: keep it verbatim
        return bytes(value).decode()
    if isinstance(value, str):
        return value
    return _codec.encode(value).decode()


class _Columns:
    """The rows of one batch being built, held column by column (no dict per row).

    Records come in as tuples of their fields (`msgspec.structs.astuple`, in C); the
    columns are cut out of them once, when the batch is built.
    """

    __slots__ = ("payloads", "rollout_ids", "rows", "size")

    def __init__(self, payloads: bool) -> None:
        self.payloads = payloads
        self.rollout_ids: list[str] = []
        self.rows: list[tuple[Any, ...]] = []
        self.size = 0  # payload text (characters), for `batch_bytes`

    def add(self, rollout_id: str, record: ModelCallRecord) -> None:
        values = msgspec.structs.astuple(record)  # keeps unread payloads as their JSON text
        if self.payloads:
            fields = list(values)
            for i in _PAYLOAD_INDEXES:
                text = fields[i] = _json_text(fields[i])
                if text is not None:
                    self.size += len(text)
            values = tuple(fields)
        self.rollout_ids.append(rollout_id)
        self.rows.append(values)

    def batch(self, schema: pa.Schema) -> tuple[pa.RecordBatch, int]:
        """The batch, and the number of values nulled because Arrow cannot hold them."""
        import pyarrow as pa

        fields = list(zip(*self.rows, strict=True))
        arrays = [pa.array(self.rollout_ids, type=pa.string())]
        out_of_range = 0
        for field in list(schema)[1:]:
            values = fields[_FIELD_INDEX[field.name]]
            kind = _KINDS.get(field.name, "json")
            if kind == "int":
                array, nulled = _int_array(values)
                out_of_range += nulled
            elif kind == "model_ref":
                array = _model_ref_array(values, field.type)
            elif kind == "tool_calls":
                array = _tool_calls_array(values, field.type)
            elif kind == "gaps":
                array = _gaps_array(values, field.type)
            else:
                array = pa.array(values, type=field.type, from_pandas=False)
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, schema=schema), out_of_range


def _int_array(values: Sequence[Any]) -> tuple[pa.Array, int]:
    import pyarrow as pa

    try:
        return pa.array(values, type=pa.int64(), from_pandas=False), 0
    except OverflowError:  # a count beyond int64 (a hand-made line): null, and counted
        kept = [v if v is None or _INT64_MIN <= v <= _INT64_MAX else None for v in values]
        nulled = sum(1 for v, k in zip(values, kept, strict=True) if v is not None and k is None)
        return pa.array(kept, type=pa.int64(), from_pandas=False), nulled


def _model_ref_array(values: Sequence[ModelRef | None], type_: pa.DataType) -> pa.Array:
    import pyarrow as pa

    # Column by column (no dict per row): a third of the time of converting dicts.
    mask = [v is None for v in values]
    kinds = [None if v is None else v.type for v in values]
    names = [None if v is None else v.name for v in values]
    fields = [type_.field(0), type_.field(1)]
    return pa.StructArray.from_arrays(
        [pa.array(kinds, type=pa.string()), pa.array(names, type=pa.string())],
        fields=fields,
        mask=pa.array(mask, type=pa.bool_()) if any(mask) else None,
    )


def _tool_calls_array(values: Sequence[list[ToolCall]], type_: pa.DataType) -> pa.Array:
    import pyarrow as pa

    # The calls of every row flattened into three columns and the rows' offsets: a list
    # of dicts per row converts at about twice the cost.
    offsets = [0]
    ids: list[str | None] = []
    names: list[str | None] = []
    arguments: list[str | None] = []
    for calls in values:
        for c in calls:
            ids.append(c.call_id)
            names.append(c.name)
            arguments.append(_json_text(c.arguments))
        offsets.append(len(ids))
    item = type_.value_type
    calls_array = pa.StructArray.from_arrays(
        [pa.array(column, type=pa.string()) for column in (ids, names, arguments)],
        fields=[item.field(i) for i in range(item.num_fields)],
    )
    return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), calls_array, type=type_)


def _gaps_array(values: Sequence[Any], type_: pa.DataType) -> pa.Array:
    import pyarrow as pa

    rows = [
        None
        if v is msgspec.UNSET
        else [
            {"code": g.code, "detail": None if g.detail is msgspec.UNSET else g.detail} for g in v
        ]
        for v in values
    ]
    return pa.array(rows, type=type_, from_pandas=False)


class RecordBatches:
    """Record batches of rollouts, iterated once: see `iter_record_batches`; the counters
    grow as batches are yielded and are final once the iteration ends."""

    __slots__ = ("_it", "_max_line_bytes", "damaged", "newer", "out_of_range", "payloads", "rows")

    def __init__(
        self,
        rollouts: Iterable[Rollout],
        *,
        payloads: bool,
        batch_size: int,
        batch_bytes: int,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._max_line_bytes = max_line_bytes
        self.payloads = payloads
        """Whether the batches carry the payload columns."""
        self.rows = 0
        """Rows yielded so far."""
        self.damaged = 0
        """Damaged lines skipped (as `read_available_model_call_records` skips them)."""
        self.out_of_range = 0
        """Values Arrow cannot hold (an int beyond int64) written as null instead."""
        self.newer: list[tuple[str, str]] = []  # see `iter_record_batches`
        self._it = self._batches(rollouts, batch_size, batch_bytes)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self

    def __next__(self) -> pa.RecordBatch:
        return next(self._it)

    def _batches(
        self, rollouts: Iterable[Rollout], batch_size: int, batch_bytes: int
    ) -> Iterator[pa.RecordBatch]:
        schema = record_schema(self.payloads)
        columns = _Columns(self.payloads)
        for rollout in rollouts:
            rollout_id = rollout.id
            # Records one at a time: without payloads, lines are decoded in one pass that
            # skips them (`records.decode_line_without_payloads`), with the same values.
            records = iter_rollout_records(
                rollout,
                max_line_bytes=self._max_line_bytes,
                payloads="lazy" if self.payloads else "omitted",
            )
            for record in records.until_newer():
                columns.add(rollout_id, record)
                if len(columns.rows) >= batch_size or columns.size >= batch_bytes:
                    yield self._batch(columns, schema)
                    columns = _Columns(self.payloads)
            self.damaged += records.damaged
            if records.newer is not None:
                self.newer.append((rollout_id, " ".join(str(records.newer).split())))
        if columns.rows:
            yield self._batch(columns, schema)

    def _batch(self, columns: _Columns, schema: pa.Schema) -> pa.RecordBatch:
        batch, out_of_range = columns.batch(schema)
        self.out_of_range += out_of_range
        self.rows += batch.num_rows
        return batch


def iter_record_batches(
    source: RolloutSource,
    *,
    payloads: bool = False,
    batch_size: int = 8192,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> RecordBatches:
    """Arrow record batches of the calls of `source`'s rollouts, each with `record_schema(payloads)`:
    `source` is a capture directory, a `CaptureStore`, rollouts or capture files
    (`store.rollouts_from`; anything else raises `RolloutSourceError` saying what it got).
    Rows come in rollout order, then line order; values are the records' own (damaged
    lines skipped and counted; a rollout's rows end at a line of a newer format). A batch
    holds at most `batch_size` rows and is cut early once its payload text passes
    `batch_bytes`. Memory: one batch and one rollout's records, never the number of
    rollouts. The iterator's `damaged`, `out_of_range`, `rows` and `newer` (rollout id,
    error) count what was skipped, nulled, yielded and read in part.
    """
    return RecordBatches(
        rollouts_from(source),
        payloads=payloads,
        batch_size=batch_size,
        batch_bytes=batch_bytes,
        max_line_bytes=max_line_bytes,
    )


@functools.cache
def trajectory_schema() -> pa.Schema:
    """The Arrow schema of exported token trajectories (`mcc export --tokens`): one row each.

    `rollout_id`, `trajectory_index` (the trajectory's position among its rollout's),
    `model_call_ids` (list<string>), `token_ids` (list<int32>), `loss_mask` (list<int32>,
    0 or 1), `log_probs` (list<float32>, null entries where no log-prob applies) and
    `break_reasons` (list<string>); the three token lists have the same length. No column
    and no list is null; only `model_call_ids` and `log_probs` hold null entries.
    """
    import pyarrow as pa

    def column(name: str, item: pa.DataType, nullable_items: bool) -> pa.Field:
        # "element": the name Parquet gives list items, so a file read back has this schema.
        return pa.field(name, pa.list_(pa.field("element", item, nullable=nullable_items)), False)

    return pa.schema(
        [
            pa.field("rollout_id", pa.string(), nullable=False),
            pa.field("trajectory_index", pa.int64(), nullable=False),
            column("model_call_ids", pa.string(), True),
            column("token_ids", pa.int32(), False),
            column("loss_mask", pa.int32(), False),
            column("log_probs", pa.float32(), True),
            column("break_reasons", pa.string(), False),
        ]
    )


def trajectory_rows(rollout_id: str, trajectories: list[TokenTrajectory]) -> list[dict[str, Any]]:
    """The trajectories of one rollout as the plain values of their export rows."""
    return [
        {
            "rollout_id": rollout_id,
            "trajectory_index": index,
            "model_call_ids": t.model_call_ids,
            "token_ids": t.token_ids,
            "loss_mask": t.loss_mask,
            "log_probs": t.log_probs,
            "break_reasons": t.break_reasons,
        }
        for index, t in enumerate(trajectories)
    ]


class TrajectoryBatches:
    """Trajectory batches of rollouts, iterated once: see `iter_trajectory_batches`."""

    __slots__ = ("_it", "calls_without_tokens", "damaged", "rows")

    def __init__(self, rollouts: Iterable[Rollout], batch_size: int, max_line_bytes: int) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.rows = 0
        """Rows (trajectories) yielded so far."""
        self.damaged = 0
        """Damaged lines skipped (as `read_available_model_call_records` skips them)."""
        self.calls_without_tokens = 0
        """Calls read without token ids, so in no trajectory (`calls_without_token_ids`)."""
        self._it = self._batches(rollouts, batch_size, max_line_bytes)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self

    def __next__(self) -> pa.RecordBatch:
        return next(self._it)

    def _batches(
        self, rollouts: Iterable[Rollout], batch_size: int, max_line_bytes: int
    ) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = trajectory_schema()
        rows: list[dict[str, Any]] = []
        for rollout in rollouts:
            stream = iter_rollout_records(rollout, max_line_bytes=max_line_bytes)
            records = list(stream)
            self.damaged += stream.damaged
            self.calls_without_tokens += calls_without_token_ids(records)
            # One rollout's records at a time: they are dropped before the next one is read.
            rows += trajectory_rows(
                rollout.id, build_token_trajectories(records, rollout_id=rollout.id)
            )
            del records
            while len(rows) >= batch_size:
                yield self._batch(rows[:batch_size], schema, pa)
                rows = rows[batch_size:]
        if rows:
            yield self._batch(rows, schema, pa)

    def _batch(self, rows: list[dict[str, Any]], schema: pa.Schema, pa: Any) -> pa.RecordBatch:
        arrays = [
            pa.array([row[field.name] for row in rows], type=field.type, from_pandas=False)
            for field in schema
        ]
        self.rows += len(rows)
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def iter_trajectory_batches(
    source: RolloutSource, *, batch_size: int = 1024, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> TrajectoryBatches:
    """Arrow record batches of the token trajectories of `source`'s rollouts (`trajectory_schema()`).

    `source` and `max_line_bytes` are what `iter_record_batches` takes. Each rollout's
    records (damaged lines skipped and counted) go through `build_token_trajectories`, its
    trajectories become rows in order. Memory: one rollout's records and one batch of at
    most `batch_size` rows (`mcc export --tokens` writes these batches).
    """
    return TrajectoryBatches(rollouts_from(source), batch_size, max_line_bytes)


def open_export_dataset(path: str | Path) -> ds.Dataset:
    """The dataset directory `mcc export --partition-by/--incremental` wrote, with `record_schema`.

    Partition columns get their schema types back (not the types pyarrow would infer from
    the directory names), so every dataset has the same schema as a single-file export.
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    root = Path(path)
    manifest = _codec.decode((root / EXPORT_MANIFEST).read_bytes())
    schema = record_schema(bool(manifest["payloads"]))
    columns = list(manifest["partition_by"])
    partitioning = (
        ds.partitioning(pa.schema([schema.field(c) for c in columns]), flavor="hive")
        if columns
        else None
    )
    return ds.dataset(root, schema=schema, format="parquet", partitioning=partitioning)
