"""Exporting captured calls: one engine, and a sink per format.

    from model_call_capture.export import export

    result = export("/data/model-calls", "calls.parquet")             # what `mcc export` does
    export(store, "calls/", partition_by=["model"], incremental=True)  # a dataset, updated
    export(store.rollouts()[:100], "t.jsonl", tokens=True)           # token trajectories
    print(result.rows, result.unit, result.damaged)

The engine (`_engine.export`) checks the options, plans the rollouts (`store.rollouts_from`),
maps them over a process pool (`_parts.run_parts`, results in rollout order so the output
is the same bytes whatever `jobs`), publishes atomically (`_atomic`: a temporary name
beside the target, fsync, rename; leftovers of killed runs cleaned up), and keeps
hive-partitioned Parquet datasets with their incremental manifests (`_dataset`). It
raises `ExportError`s, never a command-line library's errors: `mcc export` (`cli/export.py`)
parses options, calls `export()` and prints. The engine knows no format; a sink
(`_sink.Sink`) knows one format and nothing of processes, temporary names or datasets.
Sinks today (`SINKS`): `parquet` and `jsonl`, each of calls (`_records`) or, with
`tokens`, of token trajectories (`_tokens`); `atif` (`_atif`: one ATIF trajectory file
per rollout and a manifest, in a new directory); `otlp` (`_otlp`: GenAI spans sent to an
OTLP/HTTP endpoint). A format's own options go in `format_options`.

Writing a sink (a new format is one module here and one line in `_formats.SINKS`):

1. A factory `def my_sink(options: ExportOptions) -> Sink` in `SINKS` under the format's
   name. It receives the options (`payloads`, `tokens`, `row_group_size`, and its own
   `format_options` by name) and raises `ExportError` for what it cannot honour (an
   unknown or missing option, a missing extra: check with `importlib.util.find_spec`,
   never import a heavy module here). Only `parquet` and `jsonl` take `tokens`,
   `payloads` and datasets; the engine refuses them for any other format.
2. The sink: a small picklable object (a frozen dataclass) with
   - `unit` (what a row is: `"spans"`), `preload` (modules `part` imports, preloaded
     once in the fork server), `private` (True when the output holds payloads: the file
     is created 0600), `output`: `"file"`, `"directory"` or `"endpoint"` (an endpoint
     sink also has `destination`, where it sends, for people);
   - `groups(rollouts)`: the rollouts cut into the groups `part` receives, depending on
     the rollouts only (`one_group_each` for one rollout a part);
   - `part(rollouts) -> Part`: runs in a worker process. It receives a group of
     `store.Rollout`s (an id and every file of the rollout, in order) and reads them with
     `records.iter_rollout_records(rollout)` (or `arrow.iter_record_batches(rollouts)`),
     never by opening files itself. It returns `Part(data, rows, damaged, out_of_range,
     skipped)`: `data` is anything picklable (bytes are cheapest), `rows` the rows made,
     `damaged` the stream's `damaged` count. A rollout it cannot represent is reported,
     not raised: `skipped=(Skipped(rollout.id, "why, in one line"),)`; the engine counts
     them (`ExportResult.skipped`, the first 100 reasons kept) and the CLI prints them.
     A call it has no place for is counted in `calls_left_out` (OTLP: no start time).
     An exception raised here stops the whole export.
   - `write(parts, out)`: runs in the caller's process and receives every part in
     rollout order (an iterator: consume it as it comes, memory bounded by a part).
     `file`: `out` is a new empty file beside the target, which the engine publishes
     (fsync, rename over the target) when `write` returns and removes if it raises
     (`write_blocks` writes parts of bytes). `directory`: `out` is a new empty directory
     (0700); the sink makes each file in it durable, and the engine renames it to the
     target, which must not exist. `endpoint`: `out` is None and the sink sends to the
     destination in its options. Import heavy modules only after the first part is in
     (`next(parts, None)`), so the workers are forked before.
3. An endpoint sink may take `incremental` (the engine keeps its state: `_sent`): it
   has a `resume_options` property (the options a state must agree on, e.g. OTLP's
   `{"content": ...}`), reads each rollout with `UnsentRecords(rollout)` (the records
   not sent before; all of them for a plain `Rollout`) and returns its `marks` in
   `Part(sent=(stream.marks,))`. The engine gives `part` only rollouts with something
   new, and records the marks once `write` returned (the endpoint took every row).
4. A test that exports `mcc demo`'s captures through it and checks the result with the
   format's own reader or validator.

`mcc export` exits with status 2 when a sink skipped a rollout (the export is published,
but not whole) and names each on stderr.
"""

from __future__ import annotations

from ._engine import DEFAULT_ROW_GROUP_SIZE, export
from ._formats import SINKS, SinkFactory
from ._parts import ExportResult
from ._sent import UnsentRecords
from ._sink import ExportOptions, Output, Part, Sink, Skipped, one_group_each, write_blocks

__all__ = [
    "DEFAULT_ROW_GROUP_SIZE",
    "SINKS",
    "ExportOptions",
    "ExportResult",
    "Output",
    "Part",
    "Sink",
    "SinkFactory",
    "Skipped",
    "UnsentRecords",
    "export",
    "one_group_each",
    "write_blocks",
]
