"""The rows of the rollouts table and how a page picks them: filters, sort, facets.

A `RolloutSummary` is one rollout's row (sums over its readable calls, names capped, and
its row of the collector's rollouts file); a `Query` is what a page asks for. Sorting is
natural everywhere a person reads: ids by `rollout_order`, text fields the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ..contracts import ModelCallRecord
from ..rollout_ids import rollout_order
from ._outcomes import Scalar

__all__ = [
    "FIELD_SORT",
    "SORT_KEYS",
    "Query",
    "RolloutSummary",
    "copy_summary",
    "cut_name",
    "facets",
    "matches",
    "sorted_rows",
]

_NAMES_MAX = 8  # distinct models / dialects / error categories kept per rollout
_NAME_CHARS = 120  # characters of a captured name kept in the table
_FACETS_MAX = 200  # distinct values offered in a filter

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
    "reward",
)
"""The columns the table sorts by; also `field:<name>`, a field of the rollouts file."""
FIELD_SORT = "field:"


def cut_name(value: str) -> str:
    """A captured name as the table keeps it: at most 120 characters."""
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
    reward: float | None = None
    """The rollouts file's `reward` for it, when a finite number."""
    fields: dict[str, Scalar] | None = None
    """Its row in the rollouts file (scalar members, `reward` as written); None: no row."""

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
    value = cut_name(value)
    if value not in names and len(names) < _NAMES_MAX:
        names.append(value)


class Query(msgspec.Struct, kw_only=True, frozen=True):
    """What a page of the table shows: filters, sort and the page."""

    model: str | None = None
    dialect: str | None = None
    error: str | None = None
    """An error category, `any` (a call failed) or `none` (no call failed)."""
    search: str | None = None
    """Text found (ignoring case) in the rollout id, a model, a dialect or an error category."""
    reward_min: float | None = None
    """Only rollouts with a numeric reward at least this."""
    reward_max: float | None = None
    """Only rollouts with a numeric reward at most this."""
    sort: str = "rollout_id"
    descending: bool = False
    page: int = 1
    page_size: int = 50


def copy_summary(summary: RolloutSummary) -> RolloutSummary:
    """A copy whose lists can be handed out while the index keeps counting."""
    return msgspec.structs.replace(
        summary,
        models=list(summary.models),
        dialects=list(summary.dialects),
        error_categories=list(summary.error_categories),
    )


def _sort_value(row: RolloutSummary, key: str) -> Any:
    """The row's value for `key`, comparable with every other row's; None when unknown.

    Numbers before text, text in natural order (`run 2` before `run 10`), as ids are.
    """
    if key.startswith(FIELD_SORT):
        value = None if row.fields is None else row.fields.get(key[len(FIELD_SORT) :])
        if value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (0, value)
        return (1, rollout_order(str(value).lower() if isinstance(value, bool) else value))
    if key == "reward":
        return row.reward
    return getattr(row, key) if row.indexed else None


def sorted_rows(rows: list[RolloutSummary], key: str, descending: bool) -> list[RolloutSummary]:
    """`rows` (in id order) sorted by `key`; rows whose value is unknown last, in id order."""
    keyed = [(_sort_value(r, key), r) for r in rows]
    known = [(v, r) for v, r in keyed if v is not None]
    unknown = [r for v, r in keyed if v is None]
    known.sort(key=lambda pair: pair[0], reverse=descending)  # stable: ids break ties
    return [r for _, r in known] + unknown


def matches(row: RolloutSummary, query: Query) -> bool:
    """Whether the row passes every filter of `query`."""
    if query.reward_min is not None or query.reward_max is not None:
        reward = row.reward
        if reward is None:
            return False
        if query.reward_min is not None and reward < query.reward_min:
            return False
        if query.reward_max is not None and reward > query.reward_max:
            return False
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


def facets(rows: Sequence[RolloutSummary]) -> tuple[list[str], list[str], list[str]]:
    """The models, dialects and error categories the filters offer (at most 200 each)."""
    found: tuple[set[str], set[str], set[str]] = (set(), set(), set())
    for row in rows:
        for names, values in zip(
            found, (row.models, row.dialects, row.error_categories), strict=True
        ):
            if len(names) < _FACETS_MAX:
                names.update(values)
    return sorted(found[0]), sorted(found[1]), sorted(found[2])
