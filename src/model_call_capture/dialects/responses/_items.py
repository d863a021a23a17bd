"""One output item of a Responses stream being rebuilt from its events."""

from __future__ import annotations

from typing import Any

from .._text import TextParts

__all__ = ["ItemState", "as_index"]

_Any = dict[str, Any]


def as_index(value: Any) -> int | None:
    """A position sent by the stream, or None when it is not a non-negative integer."""
    return value if type(value) is int and value >= 0 else None


def _placed(existing: Any, values: dict[int, Any]) -> list[Any]:
    """A copy of `existing` (a list, else empty) with each of `values` at its position.

    Positions come from the stream and may be absurd (`content_index: 10**9`), so a
    position past the end appends instead of padding: memory stays proportional to what
    arrived, and the order of the parts is kept. One copy for all of them: a copy per
    position made a stream of many parts cost time quadratic in their number.
    """
    items = list(existing) if isinstance(existing, list) else []
    for index in sorted(values):
        if index < len(items):
            items[index] = values[index]
        else:
            items.append(values[index])
    return items


class ItemState:
    """One output item being rebuilt: the item as last announced plus what deltas added."""

    __slots__ = ("annotations", "done", "final_parts", "item", "logprobs", "parts", "texts")

    def __init__(self, item: _Any) -> None:
        self.item = item
        self.done = False
        self.parts: dict[tuple[str, int], _Any] = {}
        self.final_parts: set[tuple[str, int]] = set()
        self.texts: dict[tuple[str, str, int], TextParts] = {}
        self.annotations: dict[int, list[tuple[int, Any]]] = {}
        self.logprobs: dict[int, list[Any]] = {}
        """Output-text log-probs by content index, in the order the deltas sent them."""

    def build(self) -> _Any:
        """The item as far as it is known (the server's own item once it is done)."""
        if self.done:
            return self.item
        out = dict(self.item)
        parts = {key: dict(part) for key, part in self.parts.items()}
        commands: dict[int, str] = {}
        for (where, field, index), fragments in self.texts.items():
            text = fragments.value()
            if where == "content" or where == "summary":
                parts.setdefault((where, index), {})[field] = text
            elif where == "field":
                out[field] = text
            elif where == "operation":
                operation = out.get("operation")
                out["operation"] = {
                    **(operation if isinstance(operation, dict) else {}),
                    field: text,
                }
            else:  # a shell command
                commands[index] = text
        if commands:
            action = out.get("action")
            action = dict(action) if isinstance(action, dict) else {}
            action["commands"] = _placed(action.get("commands"), commands)
            out["action"] = action
        for content_index, logprobs in self.logprobs.items():
            part = parts.setdefault(("content", content_index), {"type": "output_text", "text": ""})
            part["logprobs"] = list(logprobs)
        for content_index, added in self.annotations.items():
            if ("content", content_index) in self.final_parts:
                continue
            part = parts.setdefault(("content", content_index), {"type": "output_text", "text": ""})
            existing = part.get("annotations")
            annotations = list(existing) if isinstance(existing, list) else []
            for _, annotation in sorted(added, key=lambda pair: pair[0]):
                annotations.append(annotation)
            part["annotations"] = annotations
        for container in ("content", "summary"):
            placed = {index: part for (kind, index), part in parts.items() if kind == container}
            if placed:
                merged = _placed(out.get(container), placed)
                out[container] = [part for part in merged if part is not None]
        return out
