"""Full-text search over the messages of a capture directory's rollouts, bounded.

A search reads the rollouts in the table's natural order, one line at a time through the
store's line reader (`store.RolloutLines`: lines over the reader's cap are skipped, never
held), and looks for the query in the texts of each call's turns, request and response
(`DialectModule.request_turns` / `response_turns`: said text, reasoning, tool names,
arguments and results). It ignores case (Unicode case folding) and takes the query as
literal text, never as a pattern. It stops at a number of matching rollouts, at a time
budget, or when told to (`Search.cancel`, the client went away), and says how far it got.

Most lines do not hold the query: a line is decoded only when its text could hold it
(`_Needle.may_hold`, a substring test on the line's bytes), so a search costs about one
read of the files. Memory: one line, the hits (capped) and the list of rollout ids.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import msgspec

from ..contracts import CaptureLine
from ..dialects import DIALECTS
from ..dialects.base import Turn
from ..store import Rollout, RolloutLines

__all__ = ["QUERY_CHARS_MAX", "Search", "SearchHit", "SearchResult"]

QUERY_CHARS_MAX = 200
"""Characters of a query kept; longer ones are refused."""
_SNIPPET_CHARS = 80  # characters shown on each side of a match
_STEP_S = 0.05  # how long one `step` runs before the caller looks at its client again


class SearchHit(msgspec.Struct, kw_only=True):
    """A rollout whose messages hold the query: where it first does, and the text around it."""

    rollout_id: str
    call_index: int
    """The call whose request or response holds it (`call_index`, from 0)."""
    where: str
    """`request` or `response`."""
    role: str
    """The role of the turn that holds it."""
    snippet: str
    """The text around the first match (at most 80 characters each side)."""
    match_start: int
    """Where the match starts in `snippet`."""


class SearchResult(msgspec.Struct, kw_only=True):
    """What a search found, and how far it got."""

    query: str
    hits: list[SearchHit]
    searched: int
    """Rollouts searched through."""
    rollouts: int
    """Rollouts in the directory when the search started."""
    complete: bool
    """Every rollout was searched."""
    stopped: str | None
    """Why it stopped early: `matches` (the cap), `time` (the budget) or `cancelled`."""
    elapsed_s: float
    budget_s: float
    max_matches: int
    resume_after: str | None
    """The last rollout searched, when it stopped early: `after=` this goes on."""
    note: str
    """The above in words: `searched 120 of 10,000 rollouts; stopped after 5.0 s`."""


class _Lines(msgspec.Struct):
    """What a search reads of a line: the dialect, and the payloads its turns come from."""

    dialect: Any = None
    request: Any = None
    response: Any = None


_decode_lines = msgspec.json.Decoder(_Lines).decode
_SKIP = CaptureLine()  # a line that cannot hold the query: not decoded
_ESCAPED = frozenset('"\\/') | frozenset(map(chr, range(0x20))) | {"\x7f"}


class _Needle:
    """The query, folded, and the test of whether a raw line could hold it."""

    def __init__(self, query: str) -> None:
        self.folded = query.casefold()
        # A query JSON writes as it is (nothing escaped) is found in a line's text as it
        # is, unless the line escapes characters (`\\u`): then the line is decoded.
        self.plain = not (_ESCAPED & set(self.folded))
        self.ascii = self.folded.encode() if self.folded.isascii() else None

    def may_hold(self, raw: bytes) -> bool:
        """False only when no string of the line `raw` can contain the query."""
        if not self.plain or b"\\u" in raw:
            return True
        if raw.isascii():  # ASCII text: bytes.lower() folds it as casefold() does
            return self.ascii is not None and self.ascii in raw.lower()
        return self.folded in raw.decode("utf-8", "replace").casefold()

    def find(self, text: str) -> int:
        """Where the query starts in `text` (folded positions), or -1."""
        return text.casefold().find(self.folded)


class Search:
    """One search over rollouts (ids in order, `files` gives each one's files or None).

    Call `step()` until `done`, then `result()`; each step searches for about `_STEP_S`
    seconds, so a caller can check its client between steps and `cancel()`.
    """

    def __init__(
        self,
        query: str,
        rollout_ids: list[str],
        files: Callable[[str], Rollout | None],
        *,
        max_line_bytes: int,
        budget_s: float = 5.0,
        max_matches: int = 100,
        after: str | None = None,
    ) -> None:
        self.query = query
        self.needle = _Needle(query)
        self.ids = rollout_ids
        self.files = files
        self.max_line_bytes = max_line_bytes
        self.budget_s = budget_s
        self.max_matches = max_matches
        self.start = rollout_ids.index(after) + 1 if after in rollout_ids else 0
        self.hits: list[SearchHit] = []
        self.searched = 0
        self.stopped: str | None = None
        self.done = False
        self.last: str | None = None
        self.began = time.monotonic()
        self._work = self._search()

    def _search(self) -> Generator[None, None, None]:
        """Search rollout after rollout, yielding after each line (and each rollout)."""
        for rollout_id in self.ids[self.start :]:
            rollout = self.files(rollout_id)
            if rollout is not None:
                for hit in self._rollout(rollout):
                    if hit is not None:
                        self.hits.append(hit)
                        break
                    yield
            self.searched += 1
            self.last = rollout_id
            if len(self.hits) >= self.max_matches:
                self.stopped = "matches"
                return
            yield

    def _rollout(self, rollout: Rollout) -> Iterator[SearchHit | None]:
        lines = RolloutLines(
            rollout, strict=False, max_line_bytes=self.max_line_bytes, decode=self._decode
        )
        try:
            for index, line in lines:
                yield None if line is _SKIP else self._match(rollout.id, index, line)
        except (OSError, ValueError):  # a file that cannot be read, or of a newer format
            return

    def _decode(self, raw: bytes, *, path: Any, line_index: int | None) -> CaptureLine:
        if not self.needle.may_hold(raw):
            return _SKIP
        lines = _decode_lines(raw)  # a damaged line raises: the reader counts and skips it
        return CaptureLine(dialect=lines.dialect, request=lines.request, response=lines.response)

    def _match(self, rollout_id: str, index: int, line: CaptureLine) -> SearchHit | None:
        module = DIALECTS.get(line.dialect) if isinstance(line.dialect, str) else None
        if module is None:
            return None
        for where, turns in (
            ("request", module.request_turns),
            ("response", module.response_turns),
        ):
            try:
                found = turns(line.request if where == "request" else line.response)
            except Exception:  # a bug in a dialect must not end the search
                continue
            hit = self._in_turns(found)
            if hit is not None:
                role, text, at = hit
                lo = max(at - _SNIPPET_CHARS, 0)
                snippet = text[lo : at + len(self.query) + _SNIPPET_CHARS]
                return SearchHit(
                    rollout_id=rollout_id,
                    call_index=index,
                    where=where,
                    role=role[:40],
                    snippet=snippet,
                    match_start=at - lo,
                )
        return None

    def _in_turns(self, turns: list[Turn]) -> tuple[str, str, int] | None:
        for turn in turns:
            for part in turn.parts:
                for text in (part.text, part.arguments, part.name):
                    if text:
                        at = self.needle.find(text)
                        if at >= 0:
                            return turn.role, text, at
        return None

    def step(self, slice_s: float = _STEP_S) -> None:
        """Search on for about `slice_s` seconds, or until done (the budget, the cap, the end)."""
        now = time.monotonic()
        until = min(now + slice_s, self.began + self.budget_s)
        for _ in self._work:
            if time.monotonic() >= until:
                if until >= self.began + self.budget_s:
                    self.stopped, self.done = "time", True
                return
        self.done = True

    def cancel(self) -> None:
        """Stop: the client went away."""
        self.stopped, self.done = "cancelled", True
        try:
            self._work.close()
        except ValueError:  # a step is running on another thread: it ends at its slice
            pass

    def result(self) -> SearchResult:
        """How far the search got, and what it found."""
        total = len(self.ids)
        searched = self.start + self.searched
        elapsed = time.monotonic() - self.began
        complete = self.stopped is None or (self.stopped == "matches" and searched == total)
        note = f"searched {searched:,} of {total:,} rollouts"
        if self.stopped == "time":
            note += f"; stopped after {self.budget_s:g} s"
        elif self.stopped == "matches" and not complete:
            note += f"; stopped after {self.max_matches:,} matches"
        elif self.stopped == "cancelled":
            note += "; cancelled"
        return SearchResult(
            query=self.query,
            hits=self.hits,
            searched=searched,
            rollouts=total,
            complete=complete,
            stopped=None if complete else self.stopped,
            elapsed_s=round(elapsed, 3),
            budget_s=self.budget_s,
            max_matches=self.max_matches,
            resume_after=None if complete else self.last,
            note=note,
        )
