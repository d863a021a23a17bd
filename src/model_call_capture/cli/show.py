"""`mcc show` (the calls of one rollout) and `mcc stats` (per model and dialect)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import click
import msgspec
from rich.table import Table

from .. import _codec
from ..contracts import ModelCallRecord
from ._common import (
    RolloutRecords,
    capture_root,
    fmt_int,
    fmt_ms,
    percentile,
    read_rollouts,
    stdout,
)

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


def _known_sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _row(model: str | None, dialect: str | None, records: Sequence[ModelCallRecord]) -> StatsRow:
    categories = Counter(r.error_category for r in records if r.error_category is not None)
    latencies = [r.latency_total_ms for r in records if r.latency_total_ms is not None]
    ttfts = [r.latency_ttft_ms for r in records if r.latency_ttft_ms is not None]
    return StatsRow(
        model=model,
        dialect=dialect,
        calls=len(records),
        errors=sum(categories.values()),
        error_categories=dict(sorted(categories.items())),
        tokens_in=_known_sum(r.tokens_in for r in records),
        tokens_out=_known_sum(r.tokens_out for r in records),
        tokens_reasoning=_known_sum(r.tokens_reasoning for r in records),
        tokens_total=_known_sum(r.tokens_total for r in records),
        cached_tokens=_known_sum(r.cached_tokens for r in records),
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        ttft_p50_ms=percentile(ttfts, 50),
        ttft_p95_ms=percentile(ttfts, 95),
    )


def compute_stats(records: Iterable[ModelCallRecord]) -> list[StatsRow]:
    """One row per (model, dialect), sorted by model then dialect (unknowns last)."""
    groups: dict[tuple[str | None, str | None], list[ModelCallRecord]] = {}
    for record in records:
        groups.setdefault((record.model, record.dialect), []).append(record)
    order = sorted(groups, key=lambda k: (k[0] is None, k[0] or "", k[1] is None, k[1] or ""))
    return [_row(model, dialect, groups[(model, dialect)]) for model, dialect in order]


def _categories(counts: dict[str, int], sep: str = "\n") -> str:
    return sep.join(f"{name} {n}" for name, n in counts.items()) or "-"


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
            _categories(row.error_categories),
        )
    return table


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option(
    "--json", "as_json", is_flag=True, help="Print the figures as a JSON list instead of a table."
)
def stats(directory: str, as_json: bool) -> None:
    """Calls, errors, tokens, latency and TTFT per model and dialect.

    DIR holds `<rollout_id>.capture.jsonl` files (or is a demo directory with
    `model-calls/` inside). Sums are over the calls that reported a value; percentiles
    are nearest-rank, so each is a latency that was actually measured.

    \b
    Example:
      mcc stats /data/model-calls
      mcc stats ./mcc-demo --json | jq '.[] | {model, calls, latency_p95_ms}'
    """
    rollouts = read_rollouts(capture_root(directory))
    records = [record for rollout in rollouts for record in rollout.records]
    rows = compute_stats(records)
    unreadable = sum(r.invalid_count for r in rollouts)
    if as_json:
        click.echo(_codec.encode(rows).decode())
        return
    console = stdout()
    console.print(stats_table(rows, title=f"{len(records)} calls in {len(rollouts)} rollouts"))
    if unreadable:
        console.print(
            f"[yellow]{unreadable} unreadable lines skipped (mcc validate {directory} lists them)[/]"
        )


def _calls_table(rollout: RolloutRecords) -> Table:
    table = Table(
        title=f"rollout {rollout.rollout_id}: {len(rollout.records)} calls", title_justify="left"
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
    for r in rollout.records:
        table.add_row(
            str(r.call_index),
            r.dialect or "-",
            r.model or "-",
            fmt_int(r.status_code),
            r.finish_reason or "-",
            fmt_int(r.tokens_in),
            fmt_int(r.tokens_out),
            fmt_int(r.tokens_reasoning),
            fmt_ms(r.latency_total_ms),
            fmt_ms(r.latency_ttft_ms),
            ", ".join(c.name or "?" for c in r.tool_calls) or "-",
            r.error_category or "-",
        )
    return table


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.argument("rollout_id")
@click.option("--payloads", is_flag=True, help="Include the request and response payloads.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the ng_model_call_capture attachment as JSON."
)
def show(directory: str, rollout_id: str, payloads: bool, as_json: bool) -> None:
    """The calls of one rollout as a table, or its attachment as JSON.

    \b
    Example:
      mcc show ./mcc-demo 0-0
      mcc show /data/model-calls 17-3-a1 --json --payloads > rollout.json
    """
    from ..collection import merge_model_call_capture_into_record
    from ..store import CaptureStore

    root = capture_root(directory)
    known = CaptureStore(root).rollout_ids()
    if rollout_id not in known:
        listed = ", ".join(known[:5]) + (f" and {len(known) - 5} more" if len(known) > 5 else "")
        raise click.ClickException(
            f"{root}: no capture for rollout {rollout_id!r}; found: {listed or 'none'}"
        )
    if as_json:
        row: dict[str, Any] = merge_model_call_capture_into_record(
            {"_ng_rollout_id": rollout_id}, [str(root)], include_payloads=payloads
        )
        click.echo(_codec.encode(row["ng_model_call_capture"]).decode())
        return
    (rollout,) = read_rollouts(root, [rollout_id])
    console = stdout()
    console.print(_calls_table(rollout))
    if rollout.invalid_count:
        console.print(f"[yellow]{rollout.invalid_count} unreadable lines skipped[/]")
    if payloads:
        for r in rollout.records:
            console.rule(f"call {r.call_index} ({r.dialect or '?'}, {r.model_call_id or 'no id'})")
            for name, value in (("request", r.request), ("response", r.response)):
                console.print(f"[bold]{name}[/]")
                console.print_json(_codec.encode(value).decode())
            for name, raw in (("request_raw", r.request_raw), ("response_raw", r.response_raw)):
                if raw is not None:
                    console.print(f"[bold]{name}[/]")
                    console.print(raw, markup=False)
