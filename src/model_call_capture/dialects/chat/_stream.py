"""Chat Completions stream reassembly: the I/O-free stream state, fed decoded SSE events.

The state does not decode chunks into the wire types: it decodes each chunk with msgspec
into plain JSON values and merges those, so every field a provider adds
(`reasoning_details`, `x_groq`, Azure's `content_filter_results`, ...) survives into the
reassembled object and one mistyped field never costs the whole chunk. (The common chunk,
ids and one delta of text, is first tried on a typed path, `_fast`, which ends exactly
where this general path would.) The merge rules live with the choice being built
(`_choice`); for the fields of a delta:

- text (`content`, `refusal`, `reasoning_content`, `reasoning`, `arguments`, `text`, ...)
  is concatenated;
- any other string (ids, names, `role`, `type`) keeps its first non-empty value: the SDK
  concatenates repeats into `call_Acall_A`, and Azure's first chunk has an empty id;
- numbers and booleans take the last non-null value (the SDK sums numbers), and null never
  erases a value;
- lists whose entries carry an integer `index` are merged entry by entry, other lists are
  extended;
- `finish_reason` is the last non-null value, since OpenRouter sends a usage chunk with
  `finish_reason: null` after the `stop` chunk; usage is the last chunk that carried one;
- vLLM's token ids (`return_token_ids`): the chunk's `prompt_token_ids` (sent in the first
  chunk) keeps its first value; each choice's `token_ids` (the ids of that chunk's delta)
  are concatenated in order, a value that is not a list kept as one entry so that record
  derivation reports it instead of a silently shorter list; `logprobs` lists are
  concatenated in order too.

The envelope (ids, `usage`, members a provider adds) and the terminal events are those of
every OpenAI stream of choices (`_choice_stream`): `data: [DONE]` completes the stream; a
data object with an `error` member, or an `event: error`, ends it with "error", which wins
over a later `[DONE]`.
"""

from __future__ import annotations

from typing import Any

from ..base import Allowance
from . import _choice, _fast
from ._choice import ChoiceState
from ._choice_stream import END_MARKER_LEN, ChoiceStream, may_end

__all__ = ["END_MARKER_LEN", "StreamState", "may_end", "new_stream_state"]


class StreamState(ChoiceStream[ChoiceState]):
    """Incremental reassembly of one OpenAI Chat Completions stream into a `chat.completion`."""

    __slots__ = ("_new_tool_calls", "_prompt_token_ids")

    OBJECT = "chat.completion"
    CHUNK_SKIP = frozenset(
        {
            "id",
            "object",
            "created",
            "model",
            "choices",
            "usage",
            "error",
            "obfuscation",
            "prompt_token_ids",
        }
    )
    """Chunk fields merged by hand (or per-chunk padding that means nothing once joined)."""
    _take = _fast.take

    def __init__(self) -> None:
        super().__init__(_choice.MAX_ENTRIES)
        self._new_tool_calls = Allowance("tool calls", _choice.MAX_ENTRIES)
        """Shared by all the choices: their tool calls count against one bound."""
        self._prompt_token_ids: Any = None

    def _chunk(self, chunk: dict[str, Any]) -> None:
        if self._prompt_token_ids is None:
            self._prompt_token_ids = chunk.get("prompt_token_ids")
        super()._chunk(chunk)

    def _new_choice(self, index: int) -> ChoiceState:
        return ChoiceState(index, self._new_tool_calls)

    def _members(self, response: dict[str, Any]) -> None:
        if self._prompt_token_ids is not None:
            response["prompt_token_ids"] = self._prompt_token_ids


def new_stream_state() -> StreamState:
    """A fresh Chat Completions stream state."""
    return StreamState()
