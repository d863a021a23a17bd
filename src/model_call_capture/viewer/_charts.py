"""Totals and distributions of the rollouts a table shows, as numbers the page draws.

Memory is fixed per rollout whatever its size: the calls of a rollout are counted into
`CallBins` as they are read (tokens and latency per call, in power-of-two bins, at most
`_LOG_BINS` each, only the bins used kept), and rewards are one number per rollout,
already held. A page's totals and histograms are sums over the rows its filters match.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol

import msgspec

from ..contracts import ModelCallRecord

__all__ = ["Bin", "CallBins", "Histogram", "Overview", "Totals", "overview"]

_LOG_BINS = 48  # bin i >= 1 holds [2**(i-1), 2**i); the last takes everything larger
_REWARD_BINS = 10  # equal-width bins of the rewards, unless they take at most this many values


class Bin(msgspec.Struct, kw_only=True):
    """One bar: values in `[low, high)` (or equal to `low` when `low == high`), and how many."""

    low: float
    high: float
    count: int


class Histogram(msgspec.Struct, kw_only=True):
    """A distribution: its bars in order, and how many values it counts."""

    name: str
    """`tokens`, `latency_ms` or `reward`."""
    title: str
    bins: list[Bin]
    count: int


class Totals(msgspec.Struct, kw_only=True):
    """Sums over the rollouts matching a page's filters (those read so far)."""

    rollouts: int
    calls: int
    errors: int
    """Calls with an error category."""
    tokens_in: int
    tokens_out: int
    rewarded: int
    """Rollouts with a numeric reward."""
    mean_reward: float | None


class Overview(msgspec.Struct, kw_only=True):
    """What the page draws above the table."""

    totals: Totals
    histograms: list[Histogram]


def _log_bin(value: float) -> int:
    if value < 1:
        return 0
    return min(int(value).bit_length(), _LOG_BINS - 1)


class CallBins:
    """Per-call tokens (in + out) and latency of one rollout, counted in power-of-two bins."""

    __slots__ = ("latency", "tokens")

    def __init__(self) -> None:
        self.tokens: dict[int, int] = {}
        self.latency: dict[int, int] = {}

    def add(self, record: ModelCallRecord) -> None:
        """Count one call (a figure the call does not know is left out)."""
        if record.tokens_in is not None or record.tokens_out is not None:
            index = _log_bin((record.tokens_in or 0) + (record.tokens_out or 0))
            self.tokens[index] = self.tokens.get(index, 0) + 1
        latency = record.latency_total_ms
        if latency is not None and math.isfinite(latency):
            index = _log_bin(latency)
            self.latency[index] = self.latency.get(index, 0) + 1

    def copy(self) -> CallBins:
        """A copy to count on (the index swaps a rollout's bins in when a read ends)."""
        other = CallBins()
        other.tokens, other.latency = dict(self.tokens), dict(self.latency)
        return other


class _Row(Protocol):
    """What `overview` reads of a table row (a `RolloutSummary`)."""

    @property
    def indexed(self) -> bool: ...
    @property
    def calls(self) -> int: ...
    @property
    def errors(self) -> int: ...
    @property
    def tokens_in(self) -> int | None: ...
    @property
    def tokens_out(self) -> int | None: ...
    @property
    def reward(self) -> float | None: ...


def _log_histogram(name: str, title: str, counts: dict[int, int]) -> Histogram:
    if not counts:
        return Histogram(name=name, title=title, bins=[], count=0)
    bins = [
        Bin(low=0 if i == 0 else 2 ** (i - 1), high=2**i, count=counts.get(i, 0))
        for i in range(min(counts), max(counts) + 1)
    ]
    return Histogram(name=name, title=title, bins=bins, count=sum(counts.values()))


def _reward_histogram(rewards: Sequence[float]) -> Histogram:
    title = "reward per rollout"
    if not rewards:
        return Histogram(name="reward", title=title, bins=[], count=0)
    distinct: set[float] = set()
    for value in rewards:
        distinct.add(value)
        if len(distinct) > _REWARD_BINS:
            break
    low, high = min(rewards), max(rewards)
    if len(distinct) <= _REWARD_BINS:  # a bar per value (0 and 1, a 1-5 grade)
        counted = dict.fromkeys(sorted(distinct), 0)
        for value in rewards:
            counted[value] += 1
        bins = [Bin(low=v, high=v, count=n) for v, n in counted.items()]
    else:
        # Scaled before subtracting: rewards near the float limits cannot overflow.
        scale = 1.0 if math.isfinite(high - low) else 0.5
        width = (high * scale - low * scale) / _REWARD_BINS
        counts = [0] * _REWARD_BINS
        for value in rewards:
            step = (value * scale - low * scale) / width
            counts[min(int(step), _REWARD_BINS - 1)] += 1
        width /= scale
        bins = [
            Bin(low=low + i * width, high=low + (i + 1) * width, count=n)
            for i, n in enumerate(counts)
        ]
    return Histogram(name="reward", title=title, bins=bins, count=len(rewards))


def overview(rows: Iterable[tuple[_Row, CallBins]]) -> Overview:
    """Totals and histograms of `rows` (rows not read yet count only as rollouts)."""
    rollouts = calls = errors = tokens_in = tokens_out = 0
    tokens: dict[int, int] = {}
    latency: dict[int, int] = {}
    rewards: list[float] = []
    for row, bins in rows:
        rollouts += 1
        if row.reward is not None:
            rewards.append(row.reward)
        if not row.indexed:
            continue
        calls += row.calls
        errors += row.errors
        tokens_in += row.tokens_in or 0
        tokens_out += row.tokens_out or 0
        for total, part in ((tokens, bins.tokens), (latency, bins.latency)):
            for index, n in part.items():
                total[index] = total.get(index, 0) + n
    mean = math.fsum(rewards) / len(rewards) if rewards else None
    return Overview(
        totals=Totals(
            rollouts=rollouts,
            calls=calls,
            errors=errors,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            rewarded=len(rewards),
            mean_reward=mean if mean is None or math.isfinite(mean) else None,
        ),
        histograms=[
            _log_histogram("tokens", "tokens per call (in + out)", tokens),
            _log_histogram("latency_ms", "latency per call (ms)", latency),
            _reward_histogram(rewards),
        ],
    )
