"""`mcc show` (one rollout as a conversation) and `mcc stats` (per model and dialect)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import click
import msgspec
from rich.highlighter import JSONHighlighter
from rich.text import Text

from .. import _codec
from .._parallel import map_files
from ..contracts import ModelCallRecord
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..store import CaptureStore, Rollout, file_is_incomplete
from ..viewer import CallView, Conversation
from ._common import (
    JsonNote,
    RolloutRecords,
    fmt_int,
    fmt_ms,
    jobs_option,
    literal,
    max_line_bytes_option,
    note,
    open_captures,
    open_sources,
    percentile,
    plural,
    safe_json,
    safe_text,
    stdout,
    unreadable_note,
)
from ._conversation import conversation_renderables
from ._stats import FileStats, GroupStats, StatsJob, read_file_stats
from ._table import Col, print_table, wide_option

__all__ = ["STATS_COLUMNS", "StatsRow", "compute_stats", "show", "stats", "stats_rows"]


class StatsRow(msgspec.Struct, kw_only=True):
    """Figures over the calls of one (model, dialect) pair; sums are null when no call reported a value."""

    model: str | None
    dialect: str | None
    calls: int
    errors: int
    error_categories: dict[str, int]
    tokens_in: int | None
    tokens_out: int | None
    tokens_reasoning: int | None
    tokens_total: int | None
    cached_tokens: int | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None


def _row(model: str | None, dialect: str | None, group: GroupStats) -> StatsRow:
    return StatsRow(
        model=model,
        dialect=dialect,
        calls=group.calls,
        errors=sum(group.categories.values()),
        error_categories=dict(sorted(group.categories.items())),
        tokens_in=group.token_sum("tokens_in"),
        tokens_out=group.token_sum("tokens_out"),
        tokens_reasoning=group.token_sum("tokens_reasoning"),
        tokens_total=group.token_sum("tokens_total"),
        cached_tokens=group.token_sum("cached_tokens"),
        latency_p50_ms=percentile(group.latencies, 50),
        latency_p95_ms=percentile(group.latencies, 95),
        ttft_p50_ms=percentile(group.ttfts, 50),
        ttft_p95_ms=percentile(group.ttfts, 95),
    )


def _rows(summary: FileStats) -> list[StatsRow]:
    groups = summary.groups
    order = sorted(groups, key=lambda k: (k[0] is None, k[0] or "", k[1] is None, k[1] or ""))
    return [_row(model, dialect, groups[(model, dialect)]) for model, dialect in order]


def compute_stats(records: Iterable[ModelCallRecord]) -> list[StatsRow]:
    """One row per (model, dialect), sorted by model then dialect (unknowns last)."""
    summary = FileStats()
    summary.add_records(records)
    return _rows(summary)


def _categories(counts: dict[str, int], sep: str = "\n") -> str:
    return sep.join(f"{safe_text(name)} {n}" for name, n in counts.items()) or "-"


STATS_COLUMNS = (
    Col("model", "id"),
    Col("dialect", "id", 2),
    Col("calls", "number"),
    Col("tokens in", "number", 3),
    Col("tokens out", "number", 3),
    Col("reasoning", "number", 7),
    Col("latency p50", "number", 4),
    Col("latency p95", "number", 5),
    Col("TTFT p50", "number", 6),
    Col("TTFT p95", "number", 8),
    Col("errors", "text", 1),
)
"""The columns of the stats table, the most telling kept longest on a narrow terminal."""


def stats_rows(rows: Sequence[StatsRow]) -> list[list[str | Text]]:
    """The cells of the stats table (`STATS_COLUMNS`), one row per (model, dialect)."""
    return [
        [
            row.model or "-",
            row.dialect or "-",
            fmt_int(row.calls),
            fmt_int(row.tokens_in),
            fmt_int(row.tokens_out),
            fmt_int(row.tokens_reasoning),
            fmt_ms(row.latency_p50_ms),
            fmt_ms(row.latency_p95_ms),
            fmt_ms(row.ttft_p50_ms),
            fmt_ms(row.ttft_p95_ms),
            Text(_categories(row.error_categories)),
        ]
        for row in rows
    ]


@click.command()
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"rows": [...], "notes": [...]} as JSON instead of a table.',
)
@jobs_option()
@max_line_bytes_option()
@wide_option()
def stats(
    paths: tuple[str, ...], as_json: bool, jobs: int | None, max_line_bytes: int, wide: bool
) -> None:
    """Calls, errors, tokens, latency and TTFT per model and dialect.

    PATH is a directory of `<rollout_id>.capture.jsonl` files (or a demo directory with
    `model-calls/` inside), or a capture file; several are summed together. Sums are over the calls that reported a value; percentiles
    are nearest-rank, so each is a latency that was actually measured. Files are read
    in parallel (`--jobs`), each in memory bounded by its own size; the output does not
    depend on the number of jobs.

    \b
    Example:
      mcc stats /data/model-calls
      mcc stats ./mcc-demo --json | jq '.rows[] | {model, calls, latency_p95_ms}'
      mcc stats ./mcc-demo/model-calls/0-0.capture.jsonl
    """
    sources = open_sources(paths)
    rollouts = sources.rollouts
    files = [StatsJob(rollout, max_line_bytes) for rollout in rollouts]
    summary = FileStats()
    errors = []
    for part in map_files(read_file_stats, files, jobs):
        summary.merge(part)
        if part.error is not None:
            errors.append(part.error)
    rows = _rows(summary)
    for error in errors:
        note(f"unreadable capture file: {error}")
    for newer in summary.newer:
        note(newer, kind="warning")
    if as_json:
        notes = _json_notes(summary, sources.label)
        click.echo(safe_json(_codec.encode({"rows": rows, "notes": notes})))
    else:
        _print_stats(rows, summary, len(rollouts), wide)
    if summary.damaged:
        note(unreadable_note(summary.damaged, sources.label))
    if summary.newer:  # figures without some calls: the exit code tells
        raise click.exceptions.Exit(2)


def _json_notes(summary: FileStats, label: str) -> list[JsonNote]:
    """The notes of `stats --json`: each one kept by the workers, then a count of the
    damaged lines beyond `NOTES_KEPT` (which `mcc validate` lists)."""
    notes = list(summary.notes)
    if summary.damaged > summary.listed:
        more = plural(summary.damaged - summary.listed, "more unreadable line")
        notes.append(JsonNote(kind="damaged", message=f"{more} (mcc validate {label} lists them)"))
    return notes


def _print_stats(rows: list[StatsRow], summary: FileStats, rollouts: int, wide: bool) -> None:
    console = stdout()
    print_table(
        console,
        STATS_COLUMNS,
        stats_rows(rows),
        title=f"{summary.calls} calls in {rollouts} rollouts (latency and TTFT in ms)",
        wide=wide,
    )


CALL_COLUMNS = (
    Col("#", "number"),
    Col("dialect", "id", 4),
    Col("model", "id", 3),
    Col("status", "number"),
    Col("finish", "id", 2),
    Col("in", "number", 5),
    Col("out", "number", 5),
    Col("reasoning", "number", 8),
    Col("latency ms", "number", 6),
    Col("TTFT ms", "number", 7),
    Col("tool calls", "text", 3),
    Col("error", "text", 1),
)
"""The columns of `mcc show`'s table of calls, the most telling kept longest."""


def _call_rows(conversation: Conversation) -> list[list[str | Text]]:
    calls = [item for item in conversation.items if isinstance(item, CallView)]
    rows: list[list[str | Text]] = []
    for c in calls:
        tools = [p.name or "?" for t in c.output for p in t.parts if p.kind == "tool_call"]
        rows.append(
            [
                str(c.index),
                c.dialect or "-",
                c.model or "-",
                fmt_int(c.status_code),
                c.finish_reason or c.response_status or "-",
                fmt_int(c.tokens_in),
                fmt_int(c.tokens_out),
                fmt_int(c.tokens_reasoning),
                fmt_ms(c.latency_ms),
                fmt_ms(c.ttft_ms),
                ", ".join(tools) or "-",
                c.error_category or "-",
            ]
        )
    return rows


@click.command()
@click.argument("path", metavar="PATH")
@click.argument("rollout_id", required=False)
@click.option(
    "--payloads",
    is_flag=True,
    help="Also print each call's request and response (and raw stream when kept).",
)
@click.option(
    "--raw",
    "--json",
    "as_json",
    is_flag=True,
    help="Print the ng_model_call_capture attachment as JSON instead (--json: the old name).",
)
@wide_option()
def show(path: str, rollout_id: str | None, payloads: bool, as_json: bool, wide: bool) -> None:
    """One rollout as the conversation it was: its calls, turns, tool calls and results.

    PATH is a capture directory (or a demo directory) and ROLLOUT_ID one of its rollouts,
    or a capture file, which is its rollout (ROLLOUT_ID may then be left out, as for a
    directory of one rollout). A table of the calls, then each call's new input turns and
    its output, with the call's model, status, finish reason, tokens, TTFT and latency;
    damaged lines are shown where they are. `--raw` prints the rollout's attachment as
    JSON (the calls without payloads; with `--payloads`, with them). `mcc view` shows the
    same in a browser.

    \b
    Example:
      mcc show ./mcc-demo 0-0
      mcc show ./mcc-demo/model-calls/0-0.capture.jsonl
      mcc show /data/model-calls 17-3-a1 --raw --payloads > rollout.json
    """
    from ..records import iter_rollout_records
    from ..viewer import Entries, build_conversation

    rollout, incomplete, store = _named_rollout(path, rollout_id)
    if as_json:
        click.echo(safe_json(_codec.encode(_attachment(rollout, incomplete, store, payloads))))
        return
    entries = Entries(rollout, max_line_bytes=_LINE_CAP)
    conversation = build_conversation(rollout.id, entries, incomplete=incomplete)
    console = stdout()
    print_table(
        console,
        CALL_COLUMNS,
        _call_rows(conversation),
        title=f"rollout {rollout.id}: {conversation.calls} calls",
        wide=wide,
    )
    if conversation.damaged:
        note(f"{plural(conversation.damaged, 'unreadable line')} (shown where they are)")
    for renderable in conversation_renderables(conversation):
        console.print(renderable)
    if payloads:
        stream = iter_rollout_records(rollout, max_line_bytes=_LINE_CAP)
        _print_payloads(RolloutRecords(rollout.id, list(stream.until_newer()), stream.damaged))
    if entries.newer is not None:  # a rollout read in part: named, and the exit code tells
        note(f"rollout {rollout.id} read up to {entries.newer}", kind="warning")
        raise click.exceptions.Exit(2)


_LINE_CAP = DEFAULT_MAX_LINE_BYTES  # `show` has no --max-line-bytes: the readers' default


def _named_rollout(path: str, rollout_id: str | None) -> tuple[Rollout, bool, CaptureStore | None]:
    """The rollout `mcc show` was asked for, whether it is marked incomplete, and its store
    (None for a file named by its path, which is the rollout alone)."""
    if not Path(path).is_dir():
        (rollout,) = open_sources([path]).rollouts
        if rollout_id not in (None, rollout.id):
            raise click.ClickException(f"{path}: holds rollout {rollout.id!r}, not {rollout_id!r}")
        return rollout, file_is_incomplete(path), None
    store = open_captures(path)
    root = store.root
    known = store.rollout_ids()
    if rollout_id is None and len(known) == 1:
        rollout_id = known[0]
    if rollout_id not in known:
        listed = ", ".join(known[:5]) + (f" and {len(known) - 5} more" if len(known) > 5 else "")
        wanted = (
            "name a rollout" if rollout_id is None else f"no capture for rollout {rollout_id!r}"
        )
        raise click.ClickException(f"{root}: {wanted}; found: {listed or 'none'}")
    return store.rollout(rollout_id), store.is_incomplete(rollout_id), store


def _attachment(
    rollout: Rollout, incomplete: bool, store: CaptureStore | None, payloads: bool
) -> Any:
    """The rollout's `ng_model_call_capture`: as the collector attaches it from a
    directory, or built from the named file alone."""
    from ..collection import merge_model_call_capture_into_record, rollout_capture

    if store is not None:
        row: dict[str, Any] = merge_model_call_capture_into_record(
            {"_ng_rollout_id": rollout.id}, [str(store.root)], include_payloads=payloads
        )
        return row["ng_model_call_capture"]
    capture = rollout_capture(rollout, incomplete=incomplete, include_payloads=payloads)
    return _codec.to_builtins(capture)


def _print_payloads(rollout: RolloutRecords) -> None:
    console = stdout()
    for r in rollout.records:
        console.rule(
            literal(f"call {r.call_index} ({r.dialect or '?'}, {r.model_call_id or 'no id'})")
        )
        for name, value in (("request", r.request), ("response", r.response)):
            console.print(f"[bold]{name}[/]", soft_wrap=True)
            console.print(_json_text(value), soft_wrap=True)
        for name, raw in (("request_raw", r.request_raw), ("response_raw", r.response_raw)):
            if isinstance(raw, str):  # not UNSET
                console.print(f"[bold]{name}[/]", soft_wrap=True)
                console.print(literal(raw, multiline=True), soft_wrap=True)


def _json_text(value: Any) -> Text:
    """A payload as indented, highlighted JSON whose strings cannot drive the terminal.

    Not `print_json`: it decodes and re-encodes the text, which would turn the escapes
    back into the raw control characters.
    """
    indented = json.dumps(_codec.to_builtins(value), indent=2, ensure_ascii=False)
    return JSONHighlighter()(literal(indented, multiline=True))
