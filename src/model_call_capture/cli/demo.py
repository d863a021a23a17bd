"""`mcc demo`: the whole system on an embedded default, offline, in seconds."""

from __future__ import annotations

import importlib.util
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table
from rich.text import Text

from ._common import fmt_int, fmt_ms, percentile, stdout
from ._table import Col, print_table
from .show import STATS_COLUMNS, compute_stats, stats_rows

if TYPE_CHECKING:
    from ..demo.run import DemoResult

__all__ = ["demo"]


@click.command()
@click.option(
    "--dir",
    "directory",
    default="mcc-demo",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the demo writes model-calls/ and rollouts.jsonl.",
)
@click.option(
    "--rollouts",
    default=4,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="How many rollouts to run.",
)
@click.option(
    "--tokens",
    is_flag=True,
    help="Multi-turn chats against the server's vLLM mode; show their token trajectories.",
)
def demo(directory: str, rollouts: int, tokens: bool) -> None:
    """Run a captured demo: a scripted model server, an agent, and the rollout collector.

    Starts a scripted model server that speaks the OpenAI Responses, Chat Completions and
    Anthropic Messages APIs (JSON and streaming; text, a tool call, reasoning, usage) on
    a free port of 127.0.0.1, behind the capture middleware. An embedded agent calls it
    with the official openai and anthropic SDK clients through `/ng-rollout/<rollout_id>`,
    driven by the rollout collector. No network access and no API key are needed.

    Leaves DIR/model-calls/<rollout_id>.capture.jsonl (one line per call) and
    DIR/rollouts.jsonl (one row per rollout, with the ng_model_call_capture attachment);
    captures of an earlier demo in DIR are replaced.

    With --tokens, each rollout is a five-turn, tool-using chat against the server's
    vLLM-compatible mode (token ids from a byte-level tokenizer, scripted log-probs; no
    GPU), and the summary shows each rollout's token trajectories
    (`build_token_trajectories`).

    \b
    Example:
      mcc demo
      mcc demo --dir /tmp/demo --rollouts 16 && mcc stats /tmp/demo
      mcc demo --tokens && mcc export mcc-demo --tokens --out trajectories.jsonl
    """
    from ..demo.run import DemoError, run_demo

    try:
        result = run_demo(Path(directory), rollouts=rollouts, tokens=tokens)
    except DemoError as exc:
        raise click.ClickException(str(exc)) from None
    _print_summary(result)
    if tokens:
        _print_trajectories(result)
    empty = [c.rollout_id for c in result.captures if not c.calls]
    if len(result.captures) != rollouts or empty:
        raise click.ClickException(
            f"the demo attached captures to {len(result.captures)} of {rollouts} rollouts; none for {empty}"
        )


def _print_summary(result: DemoResult) -> None:
    calls = [call for capture in result.captures for call in capture.calls]
    per_dialect = Counter(call.dialect or "?" for call in calls)
    errors = Counter(call.error_category for call in calls if call.error_category)
    latencies = [c.latency_total_ms for c in calls if c.latency_total_ms is not None]
    ttfts = [c.latency_ttft_ms for c in calls if c.latency_ttft_ms is not None]
    tokens_in = _reported_sum(c.tokens_in for c in calls)
    tokens_out = _reported_sum(c.tokens_out for c in calls)
    reasoning = _reported_sum(c.tokens_reasoning for c in calls)

    title = f"mcc demo: {len(result.captures)} rollouts, {len(calls)} model calls captured in {result.seconds:.1f} s"
    summary = Table(show_header=False)
    summary.add_column(style="bold", no_wrap=True)
    summary.add_column(overflow="fold")
    summary.add_row("rollouts", str(len(result.captures)))
    summary.add_row(
        "calls per dialect", ", ".join(f"{d} {n}" for d, n in sorted(per_dialect.items()))
    )
    summary.add_row(
        "tokens in / out",
        f"{fmt_int(tokens_in)} / {fmt_int(tokens_out)} "
        + (
            "(reasoning not reported)" if reasoning is None else f"({fmt_int(reasoning)} reasoning)"
        ),
    )
    summary.add_row(
        "latency p50 / p95",
        f"{fmt_ms(percentile(latencies, 50))} / {fmt_ms(percentile(latencies, 95))} ms",
    )
    summary.add_row(
        "TTFT p50 / p95", f"{fmt_ms(percentile(ttfts, 50))} / {fmt_ms(percentile(ttfts, 95))} ms"
    )
    summary.add_row(
        "error categories", ", ".join(f"{k} {n}" for k, n in sorted(errors.items())) or "none"
    )
    console = stdout()
    console.print(title, markup=False, soft_wrap=True)
    console.print(summary)
    print_table(
        console,
        STATS_COLUMNS,
        stats_rows(compute_stats(calls)),
        title="per model and dialect (latency and TTFT in ms)",
    )
    first = result.captures[0].rollout_id if result.captures else "<rollout_id>"
    console.print(
        f"capture files: {result.capture_dir}/<rollout_id>.capture.jsonl",
        markup=False,
        soft_wrap=True,
    )
    console.print(f"rollouts:      {result.rollouts_path}", markup=False, soft_wrap=True)
    console.print(f"next:          mcc stats {result.directory}", markup=False, soft_wrap=True)
    console.print(
        f"               mcc show {result.directory} {first}", markup=False, soft_wrap=True
    )
    console.print(f"               mcc validate {result.capture_dir}", markup=False, soft_wrap=True)


def _reported_sum(values: Iterable[int | None]) -> int | None:
    """The sum of the values that were reported; None (unknown, never 0) when none was."""
    reported = [v for v in values if v is not None]
    return sum(reported) if reported else None


_TRAJECTORY_COLUMNS = (
    Col("rollout", "id"),
    Col("trajectories", "number"),
    Col("calls", "number", 2),
    Col("tokens", "number"),
    Col("generated", "number", 1),
    Col("with log-prob", "number", 3),
    Col("breaks", "text", 1),
)


def _print_trajectories(result: DemoResult) -> None:
    from ..records import read_available_model_call_records
    from ..store import CaptureStore
    from ..trajectories import build_token_trajectories

    store = CaptureStore(result.capture_dir)
    rows: list[list[str | Text]] = []
    first = None
    for capture in result.captures:
        records, _ = read_available_model_call_records(store, capture.rollout_id)
        trajectories = build_token_trajectories(records, rollout_id=capture.rollout_id)
        first = first or (trajectories[0] if trajectories else None)
        breaks = [reason for t in trajectories for reason in t.break_reasons]
        rows.append(
            [
                capture.rollout_id,
                str(len(trajectories)),
                str(sum(len(t.model_call_ids) for t in trajectories)),
                fmt_int(sum(len(t.token_ids) for t in trajectories)),
                fmt_int(sum(sum(t.loss_mask) for t in trajectories)),
                fmt_int(sum(p is not None for t in trajectories for p in t.log_probs)),
                "; ".join(breaks) or "none",
            ]
        )
    console = stdout()
    print_table(
        console, _TRAJECTORY_COLUMNS, rows, title="token trajectories (build_token_trajectories)"
    )
    if first is not None:
        start = first.loss_mask.index(1) if 1 in first.loss_mask else 0
        window = slice(max(0, start - 4), start + 8)
        console.print(
            f"first trajectory, tokens {window.start}-{window.stop - 1}: "
            f"ids {first.token_ids[window]}, mask {first.loss_mask[window]}",
            markup=False,
            soft_wrap=True,
        )
    # The line must work where it is printed: Parquet only with pyarrow (the `[arrow]` extra).
    suffix = "parquet" if importlib.util.find_spec("pyarrow") is not None else "jsonl"
    console.print(
        f"export:        mcc export {result.directory} --tokens --out trajectories.{suffix}",
        markup=False,
        soft_wrap=True,
    )
