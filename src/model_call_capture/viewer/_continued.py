"""A completion prompt that continues the last call: the last prompt and its answer, then more.

A multi-turn rollout over the legacy Completions dialect sends each prompt as one text (or
one list of token ids) holding the whole history: `Continued` remembers what the next
prompt would start with, so the conversation shows only what it adds.
"""

from __future__ import annotations

import msgspec

from .. import _codec
from ..dialects.base import Part, Turn, text_of

__all__ = ["Continued"]


def _only_part(turns: list[Turn]) -> Part | None:
    """The one part of a request or response of one turn with one part, else None."""
    return turns[0].parts[0] if len(turns) == 1 and len(turns[0].parts) == 1 else None


def _ids(part: Part) -> list[int] | None:
    """The token ids a `token_ids` part spells (a JSON list), else None."""
    if part.name != "token_ids":
        return None
    try:
        ids = _codec.decode(part.text)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    return ids if isinstance(ids, list) and all(type(i) is int for i in ids) else None


class Continued:
    """What the next prompt starts with when it continues this call, as a completion prompt
    (text or token ids) of a multi-turn rollout does: this prompt, then its answer. Such a
    prompt is shown from where it goes on, instead of as a history that does not continue."""

    __slots__ = ("ids", "text")

    def __init__(self) -> None:
        self.text: str | None = None
        self.ids: list[int] | None = None

    def cut(self, request: list[Turn]) -> tuple[list[Turn], str] | None:
        """The request shown from where it continues the last call, and a note; else None."""
        part = _only_part(request)
        if part is None:
            return None
        role = request[0].role
        ids = _ids(part)
        if ids is not None and self.ids and len(ids) > len(self.ids):
            if ids[: len(self.ids)] == self.ids:
                rest = Part(part.kind, text_of(ids[len(self.ids) :]), name=part.name)
                note = f"the prompt above and its answer, then {len(ids) - len(self.ids)} new token ids"
                return [Turn(role, [rest])], note
        text = self.text
        if (
            part.kind == "text"
            and text
            and len(part.text) > len(text)
            and part.text.startswith(text)
        ):
            rest = Part("text", part.text[len(text) :], name=part.name)
            return [Turn(role, [rest])], "the prompt above and its answer, then this"
        return None

    def remember(
        self, request: list[Turn], response: list[Turn], generated: list[int] | None
    ) -> None:
        """Keep what the next prompt would start with (nothing unless one part each way)."""
        part, answer = _only_part(request), _only_part(response)
        self.text = self.ids = None
        if part is None:
            return
        if part.kind == "text" and (answer is None or answer.kind == "text"):
            self.text = part.text + (answer.text if answer is not None else "")
        ids = _ids(part)
        if ids is not None and generated is not None:
            self.ids = ids + generated
