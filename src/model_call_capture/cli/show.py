"""`mcc show` (one rollout as a conversation) and `mcc stats` (per model and dialect)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import click
import msgspec
from rich.highlighter import JSONHighlighter
from rich.table import Table
from rich.text import Text

from .. import _codec
from ..contracts import ModelCallRecord
from ..store import CaptureStore
from ..viewer import CallView, Conversation
from ._common import (
    RolloutRecords,
    capture_root,
    fmt_int,
    fmt_ms,
    literal,
    max_line_bytes_option,
    percentile,
    read_rollouts,
    safe_json,
    safe_text,
    stderr,
    stdout,
)
from ._conversation import conversation_renderables
from ._parallel import jobs_option, map_files
from ._stats import FileStats, GroupStats, StatsJob, read_file_stats

__all__ = ["StatsRow", "compute_stats", "show", "stats", "stats_table"]


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


def stats_table(rows: Sequence[StatsRow], title: str | None = None) -> Table:
    """The stats rows as a rich table: one row per (model, dialect)."""
    table = Table(title=title, title_justify="left")
    table.add_column("model")
    table.add_column("dialect")
    for name in (
        "calls",
        "tokens in",
        "out",
        "reasoning",
        "latency p50",
        "p95 ms",
        "TTFT p50",
        "p95 ms",
    ):
        table.add_column(name, justify="right")
    table.add_column("errors")
    for row in rows:
        table.add_row(
            literal(row.model or "-"),
            literal(row.dialect or "-"),
            fmt_int(row.calls),
            fmt_int(row.tokens_in),
            fmt_int(row.tokens_out),
            fmt_int(row.tokens_reasoning),
            fmt_ms(row.latency_p50_ms),
            fmt_ms(row.latency_p95_ms),
            fmt_ms(row.ttft_p50_ms),
            fmt_ms(row.ttft_p95_ms),
            Text(_categories(row.error_categories)),
        )
    return table


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option(
    "--json", "as_json", is_flag=True, help="Print the figures as a JSON list instead of a table."
)
@jobs_option()
@max_line_bytes_option()
def stats(directory: str, as_json: bool, jobs: int | None, max_line_bytes: int) -> None:
    """Calls, errors, tokens, latency and TTFT per model and dialect.

    DIR holds `<rollout_id>.capture.jsonl` files (or is a demo directory with
    `model-calls/` inside). Sums are over the calls that reported a value; percentiles
    are nearest-rank, so each is a latency that was actually measured. Files are read
    in parallel (`--jobs`), each in memory bounded by its own size; the output does not
    depend on the number of jobs.

    \b
    Example:
      mcc stats /data/model-calls
      mcc stats ./mcc-demo --json | jq '.[] | {model, calls, latency_p95_ms}'
    """
    rollouts = CaptureStore(capture_root(directory)).rollouts()
    files = [StatsJob(rollout, max_line_bytes) for rollout in rollouts]
    summary = FileStats()
    errors = []
    for part in map_files(read_file_stats, files, jobs):
        summary.merge(part)
        if part.error is not None:
            errors.append(part.error)
    rows = _rows(summary)
    for error in errors:
        stderr().print(
            f"unreadable capture file: {safe_text(str(error))}", markup=False, soft_wrap=True
        )
    if as_json:
        click.echo(safe_json(_codec.encode(rows)))
        return
    console = stdout()
    console.print(stats_table(rows, title=f"{summary.calls} calls in {len(rollouts)} rollouts"))
    if summary.damaged:
        console.print(
            literal(
                f"{summary.damaged} unreadable lines skipped (mcc validate {directory} lists them)"
            ),
            style="yellow",
        )


def _calls_table(conversation: Conversation) -> Table:
    calls = [item for item in conversation.items if isinstance(item, CallView)]
    table = Table(
        title=literal(f"rollout {conversation.rollout_id}: {conversation.calls} calls"),
        title_justify="left",
    )
    for name in (
        "#",
        "dialect",
        "model",
        "status",
        "finish",
        "in",
        "out",
        "reasoning",
        "latency ms",
        "TTFT ms",
    ):
        numeric = name in ("#", "status", "in", "out", "reasoning", "latency ms", "TTFT ms")
        table.add_column(name, justify="right" if numeric else "left")
    table.add_column("tool calls")
    table.add_column("error")
    for c in calls:
        tools = [p.name or "?" for t in c.output for p in t.parts if p.kind == "tool_call"]
        table.add_row(
            str(c.index),
            literal(c.dialect or "-"),
            literal(c.model or "-"),
            fmt_int(c.status_code),
            literal(c.finish_reason or c.response_status or "-"),
            fmt_int(c.tokens_in),
            fmt_int(c.tokens_out),
            fmt_int(c.tokens_reasoning),
            fmt_ms(c.latency_ms),
            fmt_ms(c.ttft_ms),
            literal(", ".join(tools) or "-"),
            literal(c.error_category or "-"),
        )
    return table


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.argument("rollout_id")
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
def show(directory: str, rollout_id: str, payloads: bool, as_json: bool) -> None:
    """One rollout as the conversation it was: its calls, turns, tool calls and results.

    A table of the calls, then each call's new input turns and its output, with the
    call's model, status, finish reason, tokens, TTFT and latency; damaged lines are shown
    where they are. `--raw` prints the rollout's attachment as JSON (the calls without
    payloads; with `--payloads`, with them). `mcc view` shows the same in a browser.

    \b
    Example:
      mcc show ./mcc-demo 0-0
      mcc show /data/model-calls 17-3-a1 --raw --payloads > rollout.json
    """
    from ..collection import merge_model_call_capture_into_record
    from ..viewer import Entries, build_conversation

    root = capture_root(directory)
    store = CaptureStore(root)
    known = store.rollout_ids()
    if rollout_id not in known:
        listed = ", ".join(known[:5]) + (f" and {len(known) - 5} more" if len(known) > 5 else "")
        raise click.ClickException(
            f"{root}: no capture for rollout {rollout_id!r}; found: {listed or 'none'}"
        )
    if as_json:
        row: dict[str, Any] = merge_model_call_capture_into_record(
            {"_ng_rollout_id": rollout_id}, [str(root)], include_payloads=payloads
        )
        click.echo(safe_json(_codec.encode(row["ng_model_call_capture"])))
        return
    conversation = build_conversation(
        rollout_id,
        Entries(store.rollout(rollout_id), max_line_bytes=store.max_line_bytes),
        incomplete=store.is_incomplete(rollout_id),
    )
    console = stdout()
    console.print(_calls_table(conversation))
    if conversation.damaged:
        lines = "line" if conversation.damaged == 1 else "lines"
        console.print(
            f"[yellow]{conversation.damaged} unreadable {lines} (shown where they are)[/]"
        )
    for renderable in conversation_renderables(conversation):
        console.print(renderable)
    if payloads:
        (rollout,) = read_rollouts(root, [rollout_id])
        _print_payloads(rollout)


def _print_payloads(rollout: RolloutRecords) -> None:
    console = stdout()
    for r in rollout.records:
        console.rule(
            literal(f"call {r.call_index} ({r.dialect or '?'}, {r.model_call_id or 'no id'})")
        )
        for name, value in (("request", r.request), ("response", r.response)):
            console.print(f"[bold]{name}[/]")
            console.print(_json_text(value))
        for name, raw in (("request_raw", r.request_raw), ("response_raw", r.response_raw)):
            if isinstance(raw, str):  # not UNSET
                console.print(f"[bold]{name}[/]")
                console.print(literal(raw, multiline=True))


def _json_text(value: Any) -> Text:
    """A payload as indented, highlighted JSON whose strings cannot drive the terminal.

    Not `print_json`: it decodes and re-encodes the text, which would turn the escapes
    back into the raw control characters.
    """
    indented = json.dumps(_codec.to_builtins(value), indent=2, ensure_ascii=False)
    return JSONHighlighter()(literal(indented, multiline=True))
