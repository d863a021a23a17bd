"""The common legacy Completions chunk, taken without building its dicts.

Almost every chunk a vLLM or OpenAI Completions stream sends is the same small object: ids,
one choice with a fragment of `text`, `finish_reason`, vLLM's `stop_reason` and (under
`return_token_ids`) `prompt_token_ids`/`token_ids`, the legacy `logprobs` lists, and at the
end `usage` and `system_fingerprint`. `StreamState` first decodes a chunk into the typed
`_Chunk` below, which accepts only that shape (`forbid_unknown_fields`: any other member,
type, or a negative index is refused in C), and applies it through the operations of its
general path (`StreamState.choice`, `take_member`, `end_chunk`; `ChoiceState.add_text`,
`take_finish_reason`, `take_stop_reason`, `add_logprobs`, `take_token_ids`): only the
decoding differs. A chunk the shape refuses goes to the general path (plain JSON values),
which alone defines the result: for every chunk this path takes, the state ends exactly as
the general path leaves it, dict key order included (`tests/dialects/test_completions_fast.py`
compares the two on the recorded vLLM and OpenAI streams and on generated ones).

Members whose value the general path takes as it is (`stop_reason`, the token ids) are
`Any` here; `logprobs` is decoded as a dict, in the chunk's own key order, since the merged
object keeps its members in the order they first came. The choices are applied in the
chunk's order, as on the general path, so the bound on new choices (`Allowance`) refuses and
notes the same ones; of the members kept beside the response only `system_fingerprint` (one
key: placed the same either way) is taken here.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from ..chat._choice_stream import ChoiceStream
from ._choice import ChoiceState

__all__ = ["take"]

StreamState: TypeAlias = ChoiceStream[ChoiceState]
"""The Completions stream state as this path sees it (`_stream.StreamState`; named by its
base, so that `_stream` imports this module and not the other way round)."""


class _Choice(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    index: Annotated[int, msgspec.Meta(ge=0)]
    text: str | None = None
    logprobs: dict[str, Any] | None = None
    finish_reason: str | None = None
    stop_reason: Any = UNSET
    prompt_token_ids: Any = None
    token_ids: Any = None


class _Chunk(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    id: str | UnsetType = UNSET
    object: Any = UNSET
    created: int | UnsetType = UNSET
    model: str | UnsetType = UNSET
    choices: list[_Choice] | None = None
    usage: dict[str, Any] | None = None
    system_fingerprint: str | None | UnsetType = UNSET


_decoder = msgspec.json.Decoder(_Chunk)


def take(state: StreamState, data: bytes) -> bool:
    """Apply the chunk `data` to `state` when it has the common shape; False (state untouched) if not."""
    try:
        chunk = _decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return False
    choices = chunk.choices
    if choices:
        known = state.choices
        for choice in choices:
            target = known.get(choice.index) or state.choice(choice.index)
            if target is None:
                continue  # past the bound: `choice` noted it, as on the general path
            if choice.text:
                target.add_text(choice.text)
            if choice.finish_reason:
                target.take_finish_reason(choice.finish_reason)
            if choice.stop_reason is not UNSET:
                target.take_stop_reason(choice.stop_reason)
            if choice.logprobs is not None:
                target.add_logprobs(choice.logprobs)
            if choice.prompt_token_ids is not None or choice.token_ids is not None:
                target.take_token_ids(choice.prompt_token_ids, choice.token_ids)
    if chunk.system_fingerprint is not UNSET:
        state.take_member("system_fingerprint", chunk.system_fingerprint)
    state.end_chunk(chunk.id, chunk.model, chunk.created, chunk.usage)
    return True
