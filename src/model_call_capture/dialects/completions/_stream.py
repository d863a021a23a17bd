"""Completions stream reassembly: the I/O-free stream state, fed decoded SSE events.

A legacy Completions stream is a sequence of `text_completion` chunks, each with the
choices it adds to, then (with `stream_options.include_usage`) a chunk of empty `choices`
and `usage`, then `data: [DONE]`. As in chat, the state decodes each chunk into plain JSON
values and merges those, so every field a server adds survives into the reassembled
object and one mistyped field never costs the whole chunk. Per choice (joined by `index`):

- `text` is concatenated;
- `finish_reason` is the last non-empty value and `stop_reason` (vLLM) the last non-null
  one: vLLM sends `stop_reason: null` in every chunk and the value in the last;
- `logprobs` lists (`tokens`, `token_logprobs`, `top_logprobs`, `text_offset`) are
  concatenated in order (vLLM's offsets are already counted from the choice's start);
- vLLM's token ids (`return_token_ids`): the choice's `prompt_token_ids` (in its first
  chunk only) keeps its first value; its `token_ids` (the ids of that chunk's text) are
  concatenated in order, a value that is not a list kept as one entry so that record
  derivation reports it instead of a silently shorter list;
- any other member is merged by chat's rules (`chat._choice.merge`).

The envelope and the terminal events are those of every OpenAI stream of choices
(`chat._choice_stream`): the chunk's `id`, `model` and `created` keep their first non-empty
value, `usage` the last chunk that carried one; `data: [DONE]` completes the stream; a data
object with an `error` member (vLLM sends one, then `[DONE]`) or an `event: error` ends it
with "error", which wins over a later `[DONE]`. A stream creates at most `MAX_ENTRIES`
choices; past it a new choice is dropped with a note. The common chunk is first tried on a
typed path (`_fast`), which ends exactly where this general path would.
"""

from __future__ import annotations

from ..chat._choice_stream import END_MARKER_LEN, ChoiceStream, may_end
from . import _fast
from ._choice import ChoiceState

__all__ = ["END_MARKER_LEN", "MAX_ENTRIES", "StreamState", "may_end", "new_stream_state"]

MAX_ENTRIES = 4096
"""Choices a stream may create (the figure of every dialect; `chat._choice.MAX_ENTRIES`
says why): `n` times the number of prompts is a handful in real streams."""


class StreamState(ChoiceStream[ChoiceState]):
    """Incremental reassembly of one legacy Completions stream into a `text_completion`."""

    __slots__ = ()

    OBJECT = "text_completion"
    CHUNK_SKIP = frozenset({"id", "object", "created", "model", "choices", "usage", "error"})
    """Chunk members merged by hand."""
    _take = _fast.take

    def __init__(self) -> None:
        super().__init__(MAX_ENTRIES)

    def _new_choice(self, index: int) -> ChoiceState:
        return ChoiceState(index)


def new_stream_state() -> StreamState:
    """A fresh Completions stream state."""
    return StreamState()
