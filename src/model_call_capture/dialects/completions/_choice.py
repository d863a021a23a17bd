"""One choice of a legacy Completions stream being built, and the operations that merge it.

The rules are those of `_stream`'s module docstring; the general path (`ChoiceState.feed`,
plain JSON values) and the typed one (`_fast`) both apply a choice through the operations
below, so the rules are written once.
"""

from __future__ import annotations

from typing import Any

from .._text import TextParts
from ..base import DroppedNotes
from ..chat._choice import merge, settle

__all__ = ["ChoiceState"]

_CHOICE_KNOWN = frozenset(
    {"index", "text", "finish_reason", "stop_reason", "logprobs", "token_ids", "prompt_token_ids"}
)
"""Choice members merged by hand; any other is merged into the choice as it comes."""


class ChoiceState:
    """One choice being built: its text grows in `TextParts`, joined at the end."""

    __slots__ = (
        "extra",
        "finish_reason",
        "index",
        "logprobs",
        "prompt_token_ids",
        "stop_reason",
        "stopped",
        "text",
        "token_ids",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.text = TextParts()
        self.finish_reason: str | None = None
        self.stop_reason: Any = None
        self.stopped = False
        """True once a chunk carried `stop_reason` (even null): the built choice has the key."""
        self.logprobs: dict[str, Any] | None = None
        self.prompt_token_ids: Any = None
        self.token_ids: list[Any] | None = None
        self.extra: dict[str, Any] = {}

    def feed(self, choice: dict[str, Any], notes: DroppedNotes) -> None:
        """Merge one choice of a chunk (plain JSON values) by the rules of the module docstring."""
        text = choice.get("text")
        if isinstance(text, str):
            self.add_text(text)
        elif text is not None:
            notes.add(f"choice {self.index}: text is not a string")
        self.take_finish_reason(choice.get("finish_reason"))
        if "stop_reason" in choice:
            self.take_stop_reason(choice["stop_reason"])
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict):
            self.add_logprobs(logprobs)
        elif logprobs is not None:
            notes.add(f"choice {self.index}: logprobs is not an object")
        self.take_token_ids(choice.get("prompt_token_ids"), choice.get("token_ids"))
        if not _CHOICE_KNOWN.issuperset(choice):  # checked in C; built only when there are others
            merge(self.extra, {k: v for k, v in choice.items() if k not in _CHOICE_KNOWN})

    # The operations both paths apply a choice with (this one, and `_fast`'s typed one).

    def add_text(self, text: str) -> None:
        """A fragment of `text`: concatenated."""
        if text:
            self.text.append(text)

    def take_finish_reason(self, value: object) -> None:
        """`finish_reason`: its last non-empty string."""
        if isinstance(value, str) and value:
            self.finish_reason = value

    def take_stop_reason(self, value: object) -> None:
        """`stop_reason` (present, even null): its last non-null value."""
        self.stopped = True
        if value is not None:
            self.stop_reason = value

    def add_logprobs(self, logprobs: dict[str, Any]) -> None:
        """A chunk's log-probs: lists concatenated in order, any other value kept first."""
        kept = self.logprobs
        if kept is None:
            kept = self.logprobs = {}
        for key, value in logprobs.items():
            if isinstance(value, list):
                old = kept.get(key)
                if isinstance(old, list):
                    old.extend(value)
                else:
                    kept[key] = list(value)
            else:
                kept.setdefault(key, value)

    def take_token_ids(self, prompt_token_ids: object, token_ids: object) -> None:
        """vLLM's ids: the first non-null `prompt_token_ids`; `token_ids` concatenated."""
        if self.prompt_token_ids is None:
            self.prompt_token_ids = prompt_token_ids
        if token_ids is not None:
            if self.token_ids is None:
                self.token_ids = []
            if isinstance(token_ids, list):
                self.token_ids.extend(token_ids)
            else:
                self.token_ids.append(token_ids)

    def build(self) -> dict[str, Any]:
        """The choice as a `text_completion` holds it."""
        settle(self.extra)
        choice: dict[str, Any] = {
            "index": self.index,
            "text": self.text.value(),
            "logprobs": self.logprobs,
            "finish_reason": self.finish_reason,
        }
        if self.stopped:
            choice["stop_reason"] = self.stop_reason
        if self.prompt_token_ids is not None:
            choice["prompt_token_ids"] = self.prompt_token_ids
        if self.token_ids is not None:
            choice["token_ids"] = self.token_ids
        for key, value in self.extra.items():
            choice.setdefault(key, value)
        return choice
