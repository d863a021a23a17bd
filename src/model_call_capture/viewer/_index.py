"""The rollouts table of a capture directory: one small summary per rollout, kept up to date.

`RolloutIndex.refresh()` lists the directory (names and sizes, no reading) and notes
which rollouts' files are new, grew, shrank or were replaced; `summarize()` reads only
what a rollout's last file gained since it was last read (`Entries` from the size read
last) when nothing else changed, or the whole rollout otherwise. A page asks `ensure(ids)` for its own rows first,
and a background thread (`RolloutIndex.run`) summarizes the rest, so the first page of a
10,000-rollout directory does not wait for the other 9,950 files.

The collector's rollouts file beside the captures (`_outcomes`) is read after each listing
(what it gained; by a page only up to `_PAGE_READ_BYTES`, the rest by the background
thread, outside the listing lock), and each row's reward and fields are joined to its
rollout's summary. A page carries the totals and histograms of the rows its filters
match (`_charts`), summed again only when a row changed.

Memory is one `RolloutSummary` per rollout (its strings capped), its fixed-size call bins
and outcome, and one call or row at a time while reading: bounded by the number of
rollouts, never by their size.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..errors import CaptureError
from ..rollout_ids import rollout_order
from ..store import CaptureStore, FileVersion, Rollout
from ._charts import CallBins, Overview, overview
from ._entries import Call, DamagedLine, Entries
from ._outcomes import Outcome, OutcomeFile, Outcomes, beside
from ._rows import (
    FIELD_SORT,
    SORT_KEYS,
    Query,
    RolloutSummary,
    copy_summary,
    cut_name,
    facets,
    matches,
    sorted_rows,
)

__all__ = ["FIELD_SORT", "SORT_KEYS", "Page", "Query", "RolloutIndex", "RolloutSummary"]

PAGE_SIZE_MAX = 500
_PAGE_READ_BYTES = 8 << 20  # of the rollouts file, read on a page's request; more: background


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
    bins: CallBins = field(default_factory=CallBins)  # its calls' tokens and latency


def _appended(old: tuple[FileVersion, ...] | None, new: tuple[FileVersion, ...] | None) -> bool:
    """One file, which only grew: the same inode. (The lines a file of a rollout of
    several gains may merge before lines already read: that is read again whole.)"""
    if not old or not new or len(old) != 1 or len(new) != 1:
        return False
    return old[-1].inode == new[-1].inode and old[-1].size <= new[-1].size


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
    fields: list[str]
    """The rollouts file's field names (columns), `reward` first when present."""
    rollouts_file: OutcomeFile
    """The rollouts file read, and what was wrong with it."""
    overview: Overview
    """Totals and histograms of the rollouts matching the filters (all pages)."""


class RolloutIndex:
    """The summaries of every rollout under a capture directory; thread-safe."""

    def __init__(
        self,
        store: CaptureStore,
        *,
        refresh_interval_s: float = 1.0,
        outcomes: Outcomes | None = None,
    ) -> None:
        self.store = store
        """The directory, read only."""
        self.outcomes = outcomes or Outcomes(
            beside(store.root), max_line_bytes=store.max_line_bytes
        )
        """The collector's rollouts file (by default `rollouts.jsonl` in or above the directory)."""
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
        self._outcome_file = OutcomeFile()
        self._outcomes_lock = threading.Lock()  # held while `outcomes` is read or joined
        self._unjoined = False  # rollouts listed since the last join
        self._generation = 0  # counts changes to the rows (under `_lock`)
        self._drawn: tuple[tuple[Any, ...], Overview] | None = None  # the last overview
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
            added = False
            with self._lock:
                for gone in self._files.keys() - seen.keys():
                    del self._files[gone]
                    self._generation += 1
                for rollout_id, (rollout, key, incomplete) in seen.items():
                    entry = self._files.get(rollout_id)
                    if entry is None:
                        entry = _Listed(RolloutSummary(rollout_id=rollout_id))
                        self._files[rollout_id] = entry
                        added = True
                        self._generation += 1
                    entry.rollout, entry.key = rollout, key
                    summary = entry.summary
                    if summary.incomplete != incomplete:
                        summary.incomplete = incomplete
                        summary.gaps = summary.damaged + summary.capture_gaps + incomplete
            self._listed_at = time.monotonic()
            self.listing_s = self._listed_at - started
            self._unjoined |= added
        self._read_outcomes(seen.keys(), wait=force)

    def _read_outcomes(self, rollout_ids: Iterable[str], *, wait: bool) -> None:
        """Read what the rollouts file gained and join it to the summaries.

        Outside the listing lock, so pages are listed and served while the background
        thread (`wait`) reads a large file; a page reads at most `_PAGE_READ_BYTES` of it
        and never waits for a read under way.
        """
        if not self._outcomes_lock.acquire(blocking=wait):
            return
        try:
            limit = None if wait else _PAGE_READ_BYTES
            if self.outcomes.refresh(rollout_ids, max_bytes=limit) or self._unjoined:
                self._unjoined = False
                self._join(self.outcomes.by_id, self.outcomes.file)
        finally:
            self._outcomes_lock.release()

    def _join(self, outcomes: dict[str, Outcome], file: OutcomeFile) -> None:
        """Put each rollout's outcome on its summary (under the outcomes lock)."""
        shown = msgspec.structs.replace(
            file, fields=list(file.fields), problems=list(file.problems)
        )
        with self._lock:
            self._outcome_file = shown
            self._generation += 1
            for rollout_id, entry in self._files.items():
                outcome = outcomes.get(rollout_id)
                entry.summary.reward = None if outcome is None else outcome.reward
                entry.summary.fields = None if outcome is None else outcome.fields

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
                summary, bins = copy_summary(entry.summary), entry.bins.copy()
            if rollout is None:
                return
            start, first = entry.read_size, entry.next_index
            if _appended(old, key):  # only the last file grew: read what it gained
                rollout = Rollout(rollout.id, rollout.files[-1:])
            else:  # another file, or one cleared and written anew: read it all again
                summary = RolloutSummary(rollout_id=rollout_id, incomplete=summary.incomplete)
                bins = CallBins()
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
                    bins.add(item.record)
                    summary.capture_gaps += len(item.gaps)
            summary.damaged += entries.damaged
            if entries.newer is not None:
                summary.note = cut_name(entries.newer)
            summary.indexed = True
            with self._lock:
                summary.incomplete = entry.summary.incomplete  # the listing may have changed it
                summary.gaps = summary.damaged + summary.capture_gaps + summary.incomplete
                summary.reward, summary.fields = entry.summary.reward, entry.summary.fields
                entry.summary, entry.bins = summary, bins
                self._generation += 1
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
            bins = {f.summary.rollout_id: f.bins for f in self._files.values()}
            outcome_file = self._outcome_file
            generation = self._generation
        order = sorted(rows, key=lambda r: rollout_order(r.rollout_id))
        if query.sort != "rollout_id":
            # Unknown figures after the others whichever way (rows not read yet, no reward).
            order = sorted_rows(order, query.sort, query.descending)
        elif query.descending:
            order.reverse()
        size = min(max(query.page_size, 1), PAGE_SIZE_MAX)
        matching = [r for r in order if matches(r, query)]
        drawn = self._overview(generation, query, matching, bins)
        start = (max(query.page, 1) - 1) * size
        shown = matching[start : start + size]
        self.ensure(r.rollout_id for r in shown)
        with self._lock:
            shown = [
                copy_summary(self._files[r.rollout_id].summary)
                if r.rollout_id in self._files
                else r
                for r in shown
            ]
            indexed = sum(f.summary.indexed for f in self._files.values())
        offered = facets([*rows, *shown])  # with this page's rows as just summarized
        return Page(
            rollouts=shown,
            total=len(matching),
            page=max(query.page, 1),
            page_size=size,
            rollouts_in_directory=len(rows),
            indexed=indexed,
            models=offered[0],
            dialects=offered[1],
            error_categories=offered[2],
            fields=outcome_file.fields,
            rollouts_file=outcome_file,
            overview=drawn,
        )

    def _overview(
        self,
        generation: int,
        query: Query,
        matching: list[RolloutSummary],
        bins: dict[str, CallBins],
    ) -> Overview:
        """The overview of `matching`; the last one again while no row changed (a page
        polled every 2 s does not sum 10,000 rows each time)."""
        key = (generation, query.model, query.dialect, query.error, query.search,
               query.reward_min, query.reward_max)  # fmt: skip
        drawn = self._drawn
        if drawn is None or drawn[0] != key:
            drawn = key, overview((r, bins[r.rollout_id]) for r in matching)
            self._drawn = drawn
        return drawn[1]

    def rollouts_file(self) -> OutcomeFile:
        """The collector's rollouts file as last read, and what was wrong with it."""
        self.refresh()
        with self._lock:
            return self._outcome_file

    def summary(self, rollout_id: str) -> RolloutSummary | None:
        """The current summary of one rollout (summarized now if it changed); None if unknown."""
        self.refresh()
        self.summarize(rollout_id)
        with self._lock:
            entry = self._files.get(rollout_id)
            return None if entry is None else copy_summary(entry.summary)

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


def _guarded(entries: Entries, summary: RolloutSummary) -> Iterator[Call | DamagedLine]:
    """`entries`, ending with a note on the summary when the file cannot be read on."""
    try:
        yield from entries
    except (OSError, CaptureError) as exc:
        summary.note = cut_name(" ".join(str(exc).split()))
