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

from collections.abc import Iterable
from dataclasses import dataclass

from .contracts import ModelCallRecord, TokenTrajectory

__all__ = ["build_token_trajectories"]

_MAX_REASONS = 4
"""Open chains a new chain explains itself against (the most recent ones); the rest are counted."""


@dataclass(slots=True)
class _Chain:
    calls: list[ModelCallRecord]
    sequence: list[int]
    completed_at: float | None
    order: int
    """Position of the chain's last call in start order, for "the one that completed last"."""
    reasons: list[str]


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


def _reasons(chains: list[_Chain], record: ModelCallRecord, prompt: list[int]) -> list[str]:
    """Why `record` continues none of `chains`: the most recent few, then how many more."""
    recent = sorted(chains, key=lambda c: c.order, reverse=True)
    reasons = [_why_not(c, record, prompt) for c in recent[:_MAX_REASONS]]
    if len(recent) > _MAX_REASONS:
        reasons.append(f"more: {len(recent) - _MAX_REASONS} earlier chains not continued either")
    return reasons


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


def build_token_trajectories(
    records: Iterable[ModelCallRecord], *, rollout_id: str | None = None
) -> list[TokenTrajectory]:
    """The token trajectories of one rollout's records, in the order their first calls started.

    `records` are the calls of one rollout (`read_model_call_records(store, rollout_id)`);
    `rollout_id` is written into every trajectory. The chaining rule is in this module's
    docstring and in docs/formats.md, "Token trajectories".
    """
    usable = [
        r for r in records if r.prompt_token_ids is not None and r.generation_token_ids is not None
    ]
    usable.sort(key=_start_key)
    chains: list[_Chain] = []
    for order, record in enumerate(usable):
        prompt = record.prompt_token_ids or []
        generated = record.generation_token_ids or []
        candidates = [c for c in chains if _extends(c, record, prompt)]
        if candidates:
            chain = max(candidates, key=lambda c: (len(c.sequence), c.order))
            chain.calls.append(record)
        else:
            chain = _Chain([record], [], None, order, _reasons(chains, record, prompt))
            chains.append(chain)
        chain.sequence = prompt + generated
        chain.completed_at = record.completed_at
        chain.order = order
    return [_trajectory(chain, rollout_id) for chain in chains]
