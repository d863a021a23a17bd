"""The figures of `mcc stats`, folded rollout by rollout in bounded memory.

A worker reads one rollout record by record and folds it into a `FileStats`: per
(model, dialect), counts and sums, and the latencies and TTFTs as `array('d')` (8 bytes a
call). Percentiles are exact nearest-rank values, so every latency has to be kept until
the end: 8 bytes a call is 40 MB for five million calls, and the output stays what it was
(a sketch such as t-digest would be bounded, but its p95 would be a value no call had).
Nothing else of a record outlives its line, so memory grows with the number of calls,
never with the bytes of the payloads.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..contracts import ModelCallRecord
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..store import Rollout
from ._common import JsonNote

__all__ = ["NOTES_KEPT", "FileStats", "GroupStats", "StatsJob", "read_file_stats"]

NOTES_KEPT = 1000
"""Damaged lines `mcc stats --json` lists one by one at most (memory stays bounded on a
directory of damaged files; the count of the others is one more note)."""

_Key = tuple[str | None, str | None]
_TOKENS = ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens")


@dataclass(slots=True)
class GroupStats:
    """What `mcc stats` keeps of the calls of one (model, dialect): sums, counts, latencies."""

    calls: int = 0
    categories: Counter[str] = field(default_factory=Counter)
    tokens: list[int | None] = field(default_factory=lambda: [None] * len(_TOKENS))
    latencies: array[float] = field(default_factory=lambda: array("d"))
    ttfts: array[float] = field(default_factory=lambda: array("d"))

    def add(self, record: ModelCallRecord) -> None:
        """Fold one record in."""
        self.calls += 1
        if record.error_category is not None:
            self.categories[record.error_category] += 1
        tokens = self.tokens
        for i, name in enumerate(_TOKENS):
            value = getattr(record, name)
            if value is not None:
                total = tokens[i]
                tokens[i] = value if total is None else total + value
        if record.latency_total_ms is not None:
            self.latencies.append(record.latency_total_ms)
        if record.latency_ttft_ms is not None:
            self.ttfts.append(record.latency_ttft_ms)

    def merge(self, other: GroupStats) -> None:
        """Fold another group's figures in (sums and counts add, latencies concatenate)."""
        self.calls += other.calls
        self.categories.update(other.categories)
        for i, value in enumerate(other.tokens):
            if value is not None:
                total = self.tokens[i]
                self.tokens[i] = value if total is None else total + value
        self.latencies.extend(other.latencies)
        self.ttfts.extend(other.ttfts)

    def token_sum(self, name: str) -> int | None:
        """The sum of a token field over the calls that reported it; None when none did."""
        return self.tokens[_TOKENS.index(name)]


@dataclass(slots=True)
class FileStats:
    """The summary of one capture file: its groups, damaged lines, and why it could not be read."""

    groups: dict[_Key, GroupStats] = field(default_factory=dict)
    calls: int = 0
    damaged: int = 0
    error: str | None = None
    newer: list[str] = field(default_factory=list)
    """Where a line of a newer format stopped the reading of a rollout (one each)."""
    notes: list[JsonNote] = field(default_factory=list)
    """What was skipped or read in part, in file order (at most `NOTES_KEPT` damaged lines)."""
    listed: int = 0
    """The damaged lines among `notes`."""

    def add_records(self, records: Iterable[ModelCallRecord]) -> None:
        """Fold records in, one at a time."""
        groups = self.groups
        for record in records:
            key = (record.model, record.dialect)
            group = groups.get(key)
            if group is None:
                group = groups[key] = GroupStats()
            group.add(record)
            self.calls += 1

    def merge(self, other: FileStats) -> None:
        """Fold another file's summary in (its error is the caller's to report)."""
        for key, group in other.groups.items():
            mine = self.groups.get(key)
            if mine is None:
                self.groups[key] = group
            else:
                mine.merge(group)
        self.calls += other.calls
        self.damaged += other.damaged
        self.newer.extend(other.newer)
        for note in other.notes:  # a rollout has at most one note of another kind
            if note.kind != "damaged":
                self.notes.append(note)
            elif self.listed < NOTES_KEPT:
                self.notes.append(note)
                self.listed += 1


@dataclass(frozen=True, slots=True)
class StatsJob:
    """One rollout for a worker: the rollout and the reader's line cap (picklable)."""

    rollout: Rollout
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES


def read_file_stats(job: StatsJob) -> FileStats:
    """The summary of one rollout, read record by record (a worker's whole job).

    A file that cannot be read (a FIFO, a directory, an I/O error) gives a summary with
    `error` set naming it, so one bad file never stops the others. A line of a newer
    format ends the rollout's reading, as it does the viewer's: the calls before it are
    kept and the line is named in `newer` (the reader's `UnsupportedFormatError`).
    """
    from ..errors import UnsupportedFormatError
    from ..records import iter_rollout_records
    from ..viewer._entries import damaged_reason

    stats = FileStats()
    rollout_id = job.rollout.id
    stream = iter_rollout_records(job.rollout, max_line_bytes=job.max_line_bytes)
    lines = stream.lines

    def damaged(index: int, line: int, exc: BaseException | None) -> None:
        if stats.listed < NOTES_KEPT:
            stats.listed += 1
            file = None if lines.file is None else str(lines.file)
            reason = damaged_reason(exc)
            stats.notes.append(
                JsonNote(kind="damaged", rollout=rollout_id, file=file, line=line, message=reason)
            )

    lines.on_damaged = damaged
    try:
        stats.add_records(stream)
    except OSError as exc:
        error = f"{lines.file}: {exc.strerror or exc}"
        note = JsonNote(
            kind="unreadable_file", rollout=rollout_id, file=str(lines.file), message=error
        )
        return FileStats(error=error, notes=[note])
    except UnsupportedFormatError as exc:
        text = " ".join(str(exc).split())
        stats.newer.append(f"rollout {rollout_id} read up to {text}")
        file = None if exc.path is None else str(exc.path)
        stats.notes.append(
            JsonNote(kind="newer", rollout=rollout_id, file=file, line=exc.line, message=text)
        )
    stats.damaged = stream.damaged
    return stats
