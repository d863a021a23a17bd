"""The common Chat Completions chunk, taken without building its dicts.

Most chunks of a chat stream are the same small object: ids, one choice, a delta of text.
`StreamState` first decodes a chunk into the typed `_Chunk` below, which accepts only
that shape (`forbid_unknown_fields`: any other member, type or negative index is refused
in C), and applies it through the operations of its general path (`StreamState.choice`,
`take_member`, `end_chunk`; `ChoiceState.take_role`, `add_text`,
`take_finish_reason`): only the decoding differs. A chunk the shape refuses goes to the
general path (plain JSON values), which alone defines the result: for every chunk this
path takes, the state ends exactly as the general path leaves it, dict key order included (`tests/dialects/test_chat_fast.py` compares the two
on every corpus stream and on generated ones). A stream whose chunks keep being refused
stops being tried (`_choice_stream.MISSES`), so it pays the refused attempt only a few times.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import UNSET, UnsetType

from ._choice import ChoiceState
from ._choice_stream import ChoiceStream

StreamState = ChoiceStream[ChoiceState]
"""The chat stream state as this path sees it (`_stream.StreamState`; named by its base, so
that `_stream` imports this module and not the other way round)."""

__all__ = ["take"]


class _Delta(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    role: str | None | UnsetType = UNSET
    content: str | None | UnsetType = UNSET
    reasoning_content: str | None | UnsetType = UNSET
    reasoning: str | None | UnsetType = UNSET


class _Choice(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    index: Annotated[int, msgspec.Meta(ge=0)]
    delta: _Delta | UnsetType = UNSET
    finish_reason: str | None = None
    logprobs: None = None


class _Chunk(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    id: str | UnsetType = UNSET
    object: Any = UNSET
    created: int | UnsetType = UNSET
    model: str | UnsetType = UNSET
    choices: list[_Choice] | UnsetType = UNSET
    usage: dict[str, Any] | None | UnsetType = UNSET
    system_fingerprint: str | None | UnsetType = UNSET
    service_tier: str | None | UnsetType = UNSET
    obfuscation: Any = UNSET


_decoder = msgspec.json.Decoder(_Chunk)


def take(state: StreamState, data: bytes) -> bool:
    """Apply the chunk `data` to `state` when it has the common shape; False (state untouched) if not."""
    try:
        chunk = _decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return False
    choices = chunk.choices
    fingerprint, tier = chunk.system_fingerprint, chunk.service_tier
    if (
        fingerprint is not UNSET
        and tier is not UNSET
        and not state.has_member("system_fingerprint")
        and not state.has_member("service_tier")
    ) or (choices is not UNSET and not _ordered(state, choices)):
        return False
    if choices is not UNSET:
        known = state.choices
        for choice in choices:
            target = known.get(choice.index) or state.choice(choice.index)
            assert target is not None  # `_ordered` let only choices within the bound through
            delta = choice.delta
            if delta is not UNSET:
                if delta.role:
                    target.take_role(delta.role)
                if delta.content is not UNSET:
                    target.add_text("content", delta.content)
                if delta.reasoning_content is not UNSET:
                    target.add_text("reasoning_content", delta.reasoning_content)
                if delta.reasoning is not UNSET:
                    target.add_text("reasoning", delta.reasoning)
            if choice.finish_reason:
                target.take_finish_reason(choice.finish_reason)
    if fingerprint is not UNSET:
        state.take_member("system_fingerprint", fingerprint)
    if tier is not UNSET:
        state.take_member("service_tier", tier)
    state.end_chunk(chunk.id, chunk.model, chunk.created, chunk.usage)
    return True


def _ordered(state: StreamState, choices: list[_Choice]) -> bool:
    """False when a choice's delta brings two new text members (or a choice comes twice),
    or when the chunk's new choices would pass the stream's bound (`_choice.MAX_ENTRIES`):
    the general path drops them and notes it.

    The general path adds new keys in the chunk's own order, which the typed chunk does
    not keep; one new key per dict is placed the same either way.
    """
    if len(choices) > 1 and len({choice.index for choice in choices}) < len(choices):
        return False  # two entries for one choice: left to the general path
    left, known = state.new_choices.left, state.choices
    if left < len(choices):  # one comparison a chunk until the bound is near
        if sum(choice.index not in known for choice in choices) > left:
            return False
    for choice in choices:
        delta = choice.delta
        if delta is UNSET or (delta.reasoning_content is UNSET and delta.reasoning is UNSET):
            continue  # at most `content`: one new key at most
        present = [
            key
            for key, value in (
                ("content", delta.content),
                ("reasoning_content", delta.reasoning_content),
                ("reasoning", delta.reasoning),
            )
            if value is not UNSET
        ]
        target = known.get(choice.index)
        parts = target.parts if target is not None else {}
        if sum(key not in parts for key in present) > 1:
            return False
    return True
