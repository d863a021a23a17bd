"""The sinks by format name: the one place that lists them (as `dialects/__init__` lists dialects).

A format is a factory: given the `ExportOptions`, it returns the sink that writes them, or
raises `ExportError` for options it cannot honour (`tokens` in a format without token
rows, a missing optional dependency). A new format is one new sink module and one line in
`SINKS`; `mcc export --format` offers every key.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from ..errors import ExportError
from ._atif import atif_sink
from ._otlp import otlp_sink
from ._records import RecordsJsonl, RecordsParquet
from ._sink import ExportOptions, Sink
from ._tokens import TrajectoriesJsonl, TrajectoriesParquet

__all__ = ["SINKS", "SinkFactory"]

SinkFactory = Callable[[ExportOptions], Sink]
"""Makes the sink of one export from its options."""


def _parquet(options: ExportOptions) -> Sink:
    # Found, not imported: a process with pyarrow's threads starts its workers from a fork
    # server instead of forking them (`_parquet`).
    if importlib.util.find_spec("pyarrow") is None:
        raise ExportError(
            "Parquet export needs pyarrow: pip install 'model-call-capture[arrow]' (or use --format jsonl)"
        )
    cap = options.max_line_bytes
    if options.tokens:
        return TrajectoriesParquet(row_group_size=options.row_group_size, max_line_bytes=cap)
    return RecordsParquet(
        payloads=options.payloads, row_group_size=options.row_group_size, max_line_bytes=cap
    )


def _jsonl(options: ExportOptions) -> Sink:
    cap = options.max_line_bytes
    if options.tokens:
        return TrajectoriesJsonl(max_line_bytes=cap)
    return RecordsJsonl(payloads=options.payloads, max_line_bytes=cap)


SINKS: dict[str, SinkFactory] = {
    "parquet": _parquet,
    "jsonl": _jsonl,
    "otlp": otlp_sink,
    "atif": atif_sink,
}
"""Every export format by name (the order `mcc export --format` lists them in)."""
