"""Token trajectories: a rollout's calls chained into token sequences with a loss mask.

An RL step trains on one token sequence per conversation: every prompt, template and
tool token masked out, every generated token masked in with the log-probability it was
sampled with. A multi-turn agent makes one call per turn, and each call's prompt is
(when the conversation was only extended) the previous call's prompt, its generation,
then the tool results and template tokens of the next turn. `build_token_trajectories`
finds those chains in the records of one rollout. The rule (docs/formats.md, "Token
trajectories"):

1. Only calls with both `prompt_token_ids` and `generation_token_ids` take part; calls
   without them (the server returned none, or they were malformed) are in no trajectory.
2. Calls are taken in the order they started (`started_at`, then `call_index`).
3. A call continues an open chain when the chain's sequence (its last call's prompt +
   generation) is a prefix of the call's prompt and the chain's last call completed
   before this call started. Of several such chains the longest sequence wins (the most
   specific), then the one that completed last.
4. Otherwise the call starts a new chain, and `break_reasons` says, for each open chain
   (most recent first), why it was not continued: `concurrent` (its last call had not
   completed when this one started: sub-agents, parallel calls), `prompt_shorter` (this
   prompt is a proper prefix of the chain: truncated context) or `history_rewritten`
   (the prompts differ at some position: rewritten or summarised history, another agent);
   past four open chains, one `more` entry counts the rest.

A trajectory's `token_ids` are its last call's prompt + generation; `loss_mask` is 1 on
each call's generated span, which sits at the same position in every later prompt of the
chain; `log_probs` holds the generating call's log-probs there (null where it had none)
and null elsewhere. Pure functions: memory is that of one rollout's records.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_right, insort
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice

from .contracts import ModelCallRecord, TokenTrajectory

__all__ = ["build_token_trajectories", "calls_without_token_ids"]

_MAX_REASONS = 4
"""Open chains a new chain explains itself against (the most recent ones); the rest are counted."""
_INDEX_FROM = 64
"""Chains past which they are filed by digest rather than each checked against each call."""


@dataclass(slots=True)
class _Chain:
    calls: list[ModelCallRecord]
    sequence: list[int]
    completed_at: float | None
    order: int
    """Position of the chain's last call in start order, for "the one that completed last"."""
    reasons: list[str]
    filed: tuple[int, bytes] | None = None
    """(length, digest) of `sequence` where `_OpenChains` files it; None if not filed."""


def _label(record: ModelCallRecord) -> str:
    return record.model_call_id or f"call_index {record.call_index}"


def _start_key(record: ModelCallRecord) -> tuple[float, int]:
    started = record.started_at
    return (started if started is not None else float("inf"), record.call_index)


def _is_prefix(prefix: list[int], values: list[int]) -> bool:
    n = len(prefix)
    if n > len(values):
        return False
    # Most chains a call does not continue differ at the first or last token of the
    # chain: rejected without copying the prompt.
    if n and (values[0] != prefix[0] or values[n - 1] != prefix[n - 1]):
        return False
    return values[:n] == prefix


def _overlaps(chain: _Chain, record: ModelCallRecord) -> bool:
    """Whether the chain's last call was still running when `record` started."""
    return (
        chain.completed_at is not None
        and record.started_at is not None
        and chain.completed_at > record.started_at
    )


def _why_not(chain: _Chain, record: ModelCallRecord, prompt: list[int]) -> str:
    """Why `record` does not continue `chain` (the chain is not a usable prefix of its prompt)."""
    last = _label(chain.calls[-1])
    this = _label(record)
    sequence = chain.sequence
    if _overlaps(chain, record):
        return f"concurrent: {this} started before {last} completed"
    limit = min(len(sequence), len(prompt))
    position = next((i for i in range(limit) if sequence[i] != prompt[i]), limit)
    if position == len(prompt) and len(prompt) < len(sequence):
        return (
            f"prompt_shorter: prompt of {this} ({len(prompt)} tokens) is a prefix of "
            f"{last} prompt + generation ({len(sequence)} tokens)"
        )
    return f"history_rewritten: prompt of {this} differs from {last} prompt + generation at token {position}"


def _extends(chain: _Chain, record: ModelCallRecord, prompt: list[int]) -> bool:
    return not _overlaps(chain, record) and _is_prefix(chain.sequence, prompt)


def _trajectory(chain: _Chain, rollout_id: str | None) -> TokenTrajectory:
    token_ids = chain.sequence
    loss_mask = [0] * len(token_ids)
    log_probs: list[float | None] = [None] * len(token_ids)
    for record in chain.calls:
        prompt = record.prompt_token_ids or []
        generated = record.generation_token_ids or []
        start = len(prompt)
        loss_mask[start : start + len(generated)] = [1] * len(generated)
        scores = record.generation_log_probs
        # Derived records have one log-prob per id; a hand-built one may not: then none.
        if scores is not None and len(scores) == len(generated):
            log_probs[start : start + len(generated)] = scores
    return TokenTrajectory(
        rollout_id=rollout_id,
        model_call_ids=[record.model_call_id for record in chain.calls],
        token_ids=list(token_ids),
        loss_mask=loss_mask,
        log_probs=log_probs,
        break_reasons=chain.reasons,
    )


def _packed(ids: list[int]) -> bytes | None:
    """The ids as fixed-width bytes (a prefix of n ids is 8n bytes); None if they do not fit."""
    try:
        return array("q", ids).tobytes()
    except (OverflowError, TypeError):  # a hand-built record's ids: compared one by one
        return None


def _digest(data: bytes | memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class _OpenChains:
    """The chains so far, and which of them a call continues.

    Up to `_INDEX_FROM` chains each is checked against each call (a few comparisons, at
    the speed of a memory copy). Past that, checking every chain against every call cost
    time quadratic in the calls of a rollout (10,000 concurrent calls: 9.6 s, four times
    that for each doubling), so the chains are filed by the length and a digest of their
    sequence: a call looks up, for each length filed up to its prompt's, the digest of its
    prompt's prefix of that length (one incremental hash over the prompt), and checks only
    the chains filed there, id by id (a digest that matches by chance costs one check).
    """

    __slots__ = ("_filed", "_lengths", "_recent", "_unfiled", "chains", "indexed")

    def __init__(self) -> None:
        self.chains: list[_Chain] = []
        """Every chain, in the order its first call started."""
        self.indexed = False
        """Whether the chains are filed (past `_INDEX_FROM` of them)."""
        self._recent: dict[int, _Chain] = {}
        """Every chain (by id), the one whose last call started last at the end."""
        self._filed: dict[int, dict[bytes, dict[int, _Chain]]] = {}
        """length -> digest -> chains (by id), in the order they were filed."""
        self._lengths: list[int] = []
        """The lengths in `_filed`, sorted."""
        self._unfiled: dict[int, _Chain] = {}
        """Chains whose ids do not pack (hand-built records): checked against every call."""

    def continued(self, record: ModelCallRecord, prompt: list[int]) -> _Chain | None:
        """The chain `record` continues (rule 3 of the module docstring), or None."""
        packed = _packed(prompt) if self.indexed else None
        if packed is None:  # every chain, checked the plain way
            return _best(c for c in self._recent.values() if _extends(c, record, prompt))
        best = _best(c for c in self._unfiled.values() if _extends(c, record, prompt))
        hits: list[dict[int, _Chain]] = []
        hasher, view, at = hashlib.blake2b(digest_size=16), memoryview(packed), 0
        for n in islice(self._lengths, bisect_right(self._lengths, len(prompt))):
            hasher.update(view[8 * at : 8 * n])
            at = n
            bucket = self._filed[n].get(hasher.copy().digest())
            if bucket is not None:
                hits.append(bucket)
        for bucket in reversed(hits):  # the longest first; in a bucket, the latest first
            for chain in reversed(bucket.values()):
                if _extends(chain, record, prompt):  # the digest matched: verified here
                    return _best(c for c in (best, chain) if c is not None)
        return best

    def reasons(self, record: ModelCallRecord, prompt: list[int]) -> list[str]:
        """Why `record` continues no chain: the most recent few, then how many more."""
        recent = list(islice(reversed(self._recent.values()), _MAX_REASONS))
        reasons = [_why_not(c, record, prompt) for c in recent]
        if len(self._recent) > _MAX_REASONS:
            more = len(self._recent) - _MAX_REASONS
            reasons.append(f"more: {more} earlier chains not continued either")
        return reasons

    def extend(self, chain: _Chain, record: ModelCallRecord, order: int) -> None:
        """`chain` now ends with `record`, the `order`th call (a new chain: its first)."""
        if chain.filed is not None or id(chain) in self._unfiled:
            self._unfile(chain)
        chain.sequence = (record.prompt_token_ids or []) + (record.generation_token_ids or [])
        chain.completed_at = record.completed_at
        chain.order = order
        self._recent.pop(id(chain), None)
        self._recent[id(chain)] = chain
        if self.indexed:
            self._file(chain)
        elif len(self._recent) > _INDEX_FROM:
            self.indexed = True
            for each in self._recent.values():
                self._file(each)

    def _file(self, chain: _Chain) -> None:
        packed = _packed(chain.sequence)
        if packed is None:
            self._unfiled[id(chain)] = chain
            return
        length = len(chain.sequence)
        chain.filed = (length, _digest(packed))
        if length not in self._filed:
            self._filed[length] = {}
            insort(self._lengths, length)
        self._filed[length].setdefault(chain.filed[1], {})[id(chain)] = chain

    def _unfile(self, chain: _Chain) -> None:
        if chain.filed is None:
            del self._unfiled[id(chain)]
            return
        length, digest = chain.filed
        chain.filed = None
        bucket = self._filed[length][digest]
        del bucket[id(chain)]
        if not bucket:
            del self._filed[length][digest]
            if not self._filed[length]:
                del self._filed[length]
                self._lengths.pop(bisect_right(self._lengths, length) - 1)


def _best(chains: Iterable[_Chain]) -> _Chain | None:
    """Of several chains a call continues, the longest, then the one that completed last."""
    return max(chains, key=lambda c: (len(c.sequence), c.order), default=None)


def _has_token_ids(record: ModelCallRecord) -> bool:
    """Rule 1: only calls with both token id lists take part in a trajectory."""
    return record.prompt_token_ids is not None and record.generation_token_ids is not None


def calls_without_token_ids(records: Iterable[ModelCallRecord]) -> int:
    """How many of `records` are in no trajectory because they carry no token ids (rule 1):
    the server returned none (vLLM returns them when the request asks, `return_token_ids`)."""
    return sum(not _has_token_ids(r) for r in records)


def build_token_trajectories(
    records: Iterable[ModelCallRecord], *, rollout_id: str | None = None
) -> list[TokenTrajectory]:
    """The token trajectories of one rollout's records, in the order their first calls started.

    `records` are the calls of one rollout (`read_model_call_records(store, rollout_id)`);
    `rollout_id` is written into every trajectory. The chaining rule is in this module's
    docstring and in docs/formats.md, "Token trajectories".
    """
    usable = [r for r in records if _has_token_ids(r)]
    usable.sort(key=_start_key)
    chains = _OpenChains()
    for order, record in enumerate(usable):
        prompt = record.prompt_token_ids or []
        chain = chains.continued(record, prompt)
        if chain is None:
            chain = _Chain([record], [], None, order, chains.reasons(record, prompt))
            chains.chains.append(chain)
        else:
            chain.calls.append(record)
        chains.extend(chain, record, order)
    return [_trajectory(chain, rollout_id) for chain in chains.chains]
