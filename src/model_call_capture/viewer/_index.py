"""The rollouts table of a capture directory: one small summary per rollout, kept up to date.

`RolloutIndex.refresh()` lists the directory (names and sizes, no reading) and notes
which rollouts' files are new, grew, shrank or were replaced; `summarize()` reads only
what a rollout's last file gained since it was last read (`Entries` from the size read
last) when nothing else changed, or the whole rollout otherwise. A page asks `ensure(ids)` for its own rows first,
and a background thread (`RolloutIndex.run`) summarizes the rest, so the first page of a
10,000-rollout directory does not wait for the other 9,950 files.

Memory is one `RolloutSummary` per rollout (its strings capped) and one call at a time
while reading: bounded by the number of rollouts, never by their size.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import msgspec

from ..contracts import ModelCallRecord
from ..errors import CaptureError
from ..rollout_ids import rollout_order
from ..store import CaptureStore, FileVersion, Rollout
from ._entries import Call, DamagedLine, Entries

__all__ = ["SORT_KEYS", "Page", "Query", "RolloutIndex", "RolloutSummary"]

_NAMES_MAX = 8  # distinct models / dialects / error categories kept per rollout
_NAME_CHARS = 120  # characters of a captured name kept in the table
_FACETS_MAX = 200  # distinct values offered in a filter
PAGE_SIZE_MAX = 500

SORT_KEYS = (
    "rollout_id",
    "calls",
    "errors",
    "gaps",
    "tokens_in",
    "tokens_out",
    "latency_ms",
    "first_call",
    "last_call",
)
"""The columns the table sorts by."""


def _name(value: str) -> str:
    return value if len(value) <= _NAME_CHARS else value[: _NAME_CHARS - 1] + "…"


class RolloutSummary(msgspec.Struct, kw_only=True):
    """One row of the rollouts table: sums over the readable calls of one rollout."""

    rollout_id: str
    indexed: bool = False
    """False until the file was read: the figures below are then unknown, not zero."""
    calls: int = 0
    errors: int = 0
    """Calls with an error category."""
    damaged: int = 0
    """Lines that could not be read."""
    capture_gaps: int = 0
    """Gaps the capture recorded in its lines (a payload cut, a body it could not decode)."""
    gaps: int = 0
    """Damaged lines, gaps recorded in lines, plus one when the rollout is marked incomplete."""
    incomplete: bool = False
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_ms: float | None = None
    """Sum of the calls' latencies."""
    models: list[str] = msgspec.field(default_factory=list)
    dialects: list[str] = msgspec.field(default_factory=list)
    error_categories: list[str] = msgspec.field(default_factory=list)
    first_call: float | None = None
    """Earliest `started_at` (Unix seconds)."""
    last_call: float | None = None
    """Latest `completed_at` (Unix seconds)."""
    note: str | None = None
    """Why the file could not be read, when it could not."""

    def add(self, record: ModelCallRecord) -> None:
        """Count one call."""
        self.calls += 1
        if record.error_category is not None:
            self.errors += 1
            _add_name(self.error_categories, record.error_category)
        if record.tokens_in is not None:
            self.tokens_in = (self.tokens_in or 0) + record.tokens_in
        if record.tokens_out is not None:
            self.tokens_out = (self.tokens_out or 0) + record.tokens_out
        if record.latency_total_ms is not None:
            self.latency_ms = (self.latency_ms or 0.0) + record.latency_total_ms
        if record.model is not None:
            _add_name(self.models, record.model)
        if record.dialect is not None:
            _add_name(self.dialects, record.dialect)
        start, end = record.started_at, record.completed_at
        if start is not None and (self.first_call is None or start < self.first_call):
            self.first_call = start
        if end is not None and (self.last_call is None or end > self.last_call):
            self.last_call = end


def _add_name(names: list[str], value: str) -> None:
    value = _name(value)
    if value not in names and len(names) < _NAMES_MAX:
        names.append(value)


@dataclass(slots=True)
class _Listed:
    """What the index knows of one rollout's files."""

    summary: RolloutSummary
    lock: threading.Lock = field(default_factory=threading.Lock)  # held while it is read
    rollout: Rollout | None = None  # its files when listed
    key: tuple[FileVersion, ...] | None = None  # their versions when listed
    read_key: tuple[FileVersion, ...] | None = None  # the versions when last summarized
    read_size: int = 0  # bytes of the last file summarized (where the next read starts)
    next_index: int = 0  # call_index of the next line


def _appended(old: tuple[FileVersion, ...] | None, new: tuple[FileVersion, ...] | None) -> bool:
    """One file, which only grew: the same inode. (The lines a file of a rollout of
    several gains may merge before lines already read: that is read again whole.)"""
    if not old or not new or len(old) != 1 or len(new) != 1:
        return False
    return old[-1].inode == new[-1].inode and old[-1].size <= new[-1].size


class Query(msgspec.Struct, kw_only=True, frozen=True):
    """What a page of the table shows: filters, sort and the page."""

    model: str | None = None
    dialect: str | None = None
    error: str | None = None
    """An error category, `any` (a call failed) or `none` (no call failed)."""
    search: str | None = None
    """Text found (ignoring case) in the rollout id, a model, a dialect or an error category."""
    sort: str = "rollout_id"
    descending: bool = False
    page: int = 1
    page_size: int = 50


class Page(msgspec.Struct, kw_only=True):
    """One page of the table, and what the filters can choose from."""

    rollouts: list[RolloutSummary]
    total: int
    """Rollouts matching the filters."""
    page: int
    page_size: int
    rollouts_in_directory: int
    indexed: int
    """Rollouts summarized so far (the others are still being read)."""
    models: list[str]
    dialects: list[str]
    error_categories: list[str]


class RolloutIndex:
    """The summaries of every rollout under a capture directory; thread-safe."""

    def __init__(self, store: CaptureStore, *, refresh_interval_s: float = 1.0) -> None:
        self.store = store
        """The directory, read only."""
        self.refresh_interval_s = refresh_interval_s
        """Listings closer together than this are skipped (a page load lists at most once)."""
        self._files: dict[str, _Listed] = {}
        self._lock = threading.Lock()
        self._listing = threading.Lock()
        self._listed_at = -float("inf")
        self.listing_s = 0.0
        """How long the last listing of the directory took."""
        self._stop = threading.Event()
        self._list = store.listing
        self._order: tuple[tuple[str, ...], list[str]] = ((), [])  # listed ids, sorted

    # -- listing -----------------------------------------------------------------------

    def refresh(self, *, force: bool = False) -> None:
        """List the directory: new, changed and removed capture files (no file is read).

        One listing at a time: a caller that finds one under way waits for it and uses it
        (a page asked for while the background thread lists must not see a half-built index).
        """
        with self._listing:
            if not force and time.monotonic() - self._listed_at < self.refresh_interval_s:
                return
            started = time.monotonic()
            seen = self._list()
            with self._lock:
                for gone in self._files.keys() - seen.keys():
                    del self._files[gone]
                for rollout_id, (rollout, key, incomplete) in seen.items():
                    entry = self._files.get(rollout_id)
                    if entry is None:
                        entry = _Listed(RolloutSummary(rollout_id=rollout_id))
                        self._files[rollout_id] = entry
                    entry.rollout, entry.key = rollout, key
                    summary = entry.summary
                    if summary.incomplete != incomplete:
                        summary.incomplete = incomplete
                        summary.gaps = summary.damaged + summary.capture_gaps + incomplete
            self._listed_at = time.monotonic()
            self.listing_s = self._listed_at - started

    # -- reading -----------------------------------------------------------------------

    def stale(self) -> list[str]:
        """Ids of rollouts whose file changed since it was summarized."""
        with self._lock:
            return [
                i for i, f in self._files.items() if f.key != f.read_key or not f.summary.indexed
            ]

    def ensure(self, rollout_ids: Iterable[str]) -> None:
        """Summarize these rollouts now where their files changed."""
        for rollout_id in rollout_ids:
            self.summarize(rollout_id)

    def summarize(self, rollout_id: str) -> None:
        """Read what the rollout's files gained since its last summary (all of it if replaced).

        The file is read outside the index's lock (pages are served meanwhile) and the new
        summary swapped in when done.
        """
        with self._lock:
            entry = self._files.get(rollout_id)
        if entry is None:
            return
        with entry.lock:
            with self._lock:
                key, old, rollout = entry.key, entry.read_key, entry.rollout
                if key == old and entry.summary.indexed:
                    return
                summary = _copy(entry.summary)
            if rollout is None:
                return
            start, first = entry.read_size, entry.next_index
            if _appended(old, key):  # only the last file grew: read what it gained
                rollout = Rollout(rollout.id, rollout.files[-1:])
            else:  # another file, or one cleared and written anew: read it all again
                summary = RolloutSummary(rollout_id=rollout_id, incomplete=summary.incomplete)
                start = first = 0
            entries = Entries(
                rollout,
                max_line_bytes=self.store.max_line_bytes,
                start=start,
                first_index=first,
            )
            for item in _guarded(entries, summary):
                first += 1
                if isinstance(item, Call):
                    summary.add(item.record)
                    summary.capture_gaps += len(item.gaps)
            summary.damaged += entries.damaged
            summary.indexed = True
            with self._lock:
                summary.incomplete = entry.summary.incomplete  # the listing may have changed it
                summary.gaps = summary.damaged + summary.capture_gaps + summary.incomplete
                entry.summary = summary
                entry.read_size = start + entries.size
                entry.next_index = first
                # A file that could not be read to its end is read again whole next time.
                entry.read_key = key if summary.note is None else None

    def run_once(self) -> None:
        """List the directory, then summarize every rollout whose file changed."""
        self.refresh(force=True)
        for rollout_id in self.stale():
            if self._stop.is_set():
                return
            self.summarize(rollout_id)

    def run(self, *, idle_s: float = 1.0) -> None:
        """Keep the index current until `stop()`: `run_once`, then wait.

        The wait is `idle_s`, or five times what the last listing took when that is longer,
        so following a directory of many files costs a bounded share of a core.
        """
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(max(idle_s, 5 * self.listing_s))

    def stop(self) -> None:
        """End `run`."""
        self._stop.set()

    # -- querying ----------------------------------------------------------------------

    def page(self, query: Query) -> Page:
        """One page of rollouts: filtered, sorted, and summarized first where they changed."""
        self.refresh()
        with self._lock:
            rows = [f.summary for f in self._files.values()]
        facets = _facets(rows)
        order = sorted(rows, key=lambda r: rollout_order(r.rollout_id))
        if query.sort != "rollout_id":
            # Unindexed rows after the others whichever way: their figures are unknown.
            order = _sorted(order, query.sort, query.descending)
        elif query.descending:
            order.reverse()
        size = min(max(query.page_size, 1), PAGE_SIZE_MAX)
        matching = [r for r in order if _matches(r, query)]
        start = (max(query.page, 1) - 1) * size
        shown = matching[start : start + size]
        self.ensure(r.rollout_id for r in shown)
        with self._lock:
            shown = [
                _copy(self._files[r.rollout_id].summary) if r.rollout_id in self._files else r
                for r in shown
            ]
            indexed = sum(f.summary.indexed for f in self._files.values())
        return Page(
            rollouts=shown,
            total=len(matching),
            page=max(query.page, 1),
            page_size=size,
            rollouts_in_directory=len(rows),
            indexed=indexed,
            models=facets[0],
            dialects=facets[1],
            error_categories=facets[2],
        )

    def summary(self, rollout_id: str) -> RolloutSummary | None:
        """The current summary of one rollout (summarized now if it changed); None if unknown."""
        self.refresh()
        self.summarize(rollout_id)
        with self._lock:
            entry = self._files.get(rollout_id)
            return None if entry is None else _copy(entry.summary)

    def ordered(self) -> list[str]:
        """The ids of every rollout listed, in natural order (`rollout_order`); sorted again
        only when the listing changed."""
        self.refresh()
        with self._lock:
            listed = tuple(self._files)
            if listed != self._order[0]:
                self._order = (listed, sorted(listed, key=rollout_order))
            return self._order[1]

    def neighbours(self, rollout_id: str) -> tuple[str | None, str | None]:
        """The rollouts before and after `rollout_id` in natural order (None at the ends)."""
        order = self.ordered()
        try:
            at = order.index(rollout_id)
        except ValueError:
            return None, None
        return (order[at - 1] if at else None), (order[at + 1] if at + 1 < len(order) else None)

    def rollout(self, rollout_id: str) -> Rollout | None:
        """The files of a listed rollout, as last listed; None when it is not listed."""
        with self._lock:
            entry = self._files.get(rollout_id)
            return None if entry is None else entry.rollout


def _copy(summary: RolloutSummary) -> RolloutSummary:
    return msgspec.structs.replace(
        summary,
        models=list(summary.models),
        dialects=list(summary.dialects),
        error_categories=list(summary.error_categories),
    )


def _guarded(entries: Entries, summary: RolloutSummary) -> Iterator[Call | DamagedLine]:
    """`entries`, ending with a note on the summary when the file cannot be read on."""
    try:
        yield from entries
    except (OSError, CaptureError) as exc:
        summary.note = _name(" ".join(str(exc).split()))


def _sorted(rows: list[RolloutSummary], key: str, descending: bool) -> list[RolloutSummary]:
    known = [r for r in rows if r.indexed and getattr(r, key) is not None]
    unknown = [r for r in rows if not (r.indexed and getattr(r, key) is not None)]
    known.sort(key=lambda r: getattr(r, key), reverse=descending)  # stable: ids break ties
    return known + unknown


def _matches(row: RolloutSummary, query: Query) -> bool:
    if query.model and query.model not in row.models:
        return False
    if query.dialect and query.dialect not in row.dialects:
        return False
    if query.error == "any":
        if not row.errors:
            return False
    elif query.error == "none":
        if row.errors or not row.indexed:
            return False
    elif query.error and query.error not in row.error_categories:
        return False
    if query.search:
        needle = query.search.casefold()
        haystack = (row.rollout_id, *row.models, *row.dialects, *row.error_categories)
        if not any(needle in text.casefold() for text in haystack):
            return False
    return True


def _facets(rows: Sequence[RolloutSummary]) -> tuple[list[str], list[str], list[str]]:
    found: tuple[set[str], set[str], set[str]] = (set(), set(), set())
    for row in rows:
        for names, values in zip(
            found, (row.models, row.dialects, row.error_categories), strict=True
        ):
            if len(names) < _FACETS_MAX:
                names.update(values)
    return sorted(found[0]), sorted(found[1]), sorted(found[2])
