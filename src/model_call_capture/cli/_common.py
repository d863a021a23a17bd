"""What the `mcc` commands share: consoles, locating a capture directory, reading its records."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console

from ..contracts import ModelCallRecord
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..store import CAPTURE_SUFFIX

__all__ = [
    "RolloutRecords",
    "capture_root",
    "fmt_int",
    "fmt_ms",
    "max_line_bytes_option",
    "percentile",
    "read_rollouts",
    "stderr",
    "stdout",
]


def stdout() -> Console:
    """The console for results (tables, JSON); wide when piped, so tables are not squeezed."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)
    return console


def stderr() -> Console:
    """The console for progress and notes, so stdout stays clean for pipes."""
    return Console(stderr=True, highlight=False)


def capture_root(path: str | Path) -> Path:
    """The directory holding `*.capture.jsonl` files: `path`, or `path/model-calls` (a demo dir)."""
    root = Path(path)
    if not root.is_dir():
        raise click.ClickException(f"{root}: no such directory")
    nested = root / "model-calls"
    if not any(root.glob(f"*{CAPTURE_SUFFIX}")) and nested.is_dir():
        return nested
    return root


@dataclass(slots=True)
class RolloutRecords:
    """The readable records of one rollout, and how many of its lines could not be read."""

    rollout_id: str
    records: list[ModelCallRecord]
    invalid_count: int


def read_rollouts(root: Path, rollout_ids: Sequence[str] | None = None) -> list[RolloutRecords]:
    """The records of every rollout in `root` (or of `rollout_ids`), in rollout-id order."""
    from ..records import read_available_model_call_records
    from ..store import CaptureStore

    store = CaptureStore(root)
    ids = sorted(store.rollout_ids()) if rollout_ids is None else list(rollout_ids)
    out = []
    for rollout_id in ids:
        records, invalid = read_available_model_call_records(store, rollout_id)
        out.append(RolloutRecords(rollout_id, list(records), invalid))
    return out


def max_line_bytes_option() -> Callable[[Callable[..., object]], Callable[..., object]]:
    """The `--max-line-bytes N` option of the commands that read capture files."""
    return click.option(
        "--max-line-bytes",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_LINE_BYTES,
        show_default=True,
        help="A longer line is counted as damaged, without being held in memory.",
    )


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank `p`th percentile (a value that occurred); None for no values.

    Sorting makes a transient list of the values (one group's at a time in `mcc stats`).
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def fmt_ms(value: float | None) -> str:
    """Milliseconds for a table cell; `-` when unknown."""
    return "-" if value is None else f"{value:,.1f}"


def fmt_int(value: int | None) -> str:
    """A count for a table cell; `-` when unknown."""
    return "-" if value is None else f"{value:,}"
