"""One choice of a Chat Completions stream being built, and the merge rules of its deltas.

The rules are those of `_stream`'s module docstring: text members are concatenated, other
strings keep their first non-empty value, numbers and booleans their last non-null one,
lists with an integer `index` merge entry by entry.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._text import TextParts
from ..base import Allowance, DroppedNotes

__all__ = ["MAX_ENTRIES", "ChoiceState", "merge", "settle"]

_CONCAT = frozenset(
    {
        "content",
        "refusal",
        "reasoning_content",
        "reasoning",
        "arguments",
        "text",
        "data",
        "transcript",
        "summary",
    }
)
"""Delta fields whose fragments are concatenated; every other string keeps its first value."""


_CHOICE_KNOWN = frozenset({"index", "delta", "finish_reason", "logprobs", "token_ids"})
"""Choice fields handled by hand; any other is merged into the choice as it comes."""

MAX_ENTRIES = 4096
"""Choices a stream may create, and tool calls all its choices together may create.

Real streams have a handful of each (`n` is a few, a turn makes tens of tool calls, rarely
hundreds), so 4,096 leaves them a margin of ten or more. A fragment of a few bytes (`{"id":
"x"}`) creates an entry of hundreds of bytes, so a stream of tiny new entries multiplied its
length by up to 35 outside the server's memory budget; at the bound the entries cost a few
MB. Past it a new entry is dropped with a note; fragments of existing entries keep merging.
"""


class _Joined(TextParts):
    """A concatenated member inside a merged object, until `settle` makes it a string.

    Rebuilding the string at each fragment (`old + value`) copies the text so far every
    time: a stream of many fragments of one member (a vendor field under a delta, or at
    the top of the chunk) cost time quadratic in its length, on the event loop.
    """

    __slots__ = ()


class _Indexed(list[Any]):
    """A merged list that finds its entries by their integer `index` (`by_index`).

    Scanning the list for each fragment's index cost time quadratic in the number of
    entries; the first entry of each index is the one merged into, as in a scan.
    """

    __slots__ = ("by_index",)

    def __init__(self, entries: Iterable[Any] = ()) -> None:
        super().__init__(entries)
        self.by_index: dict[Any, dict[str, Any]] = {}
        for entry in entries:
            self.register(entry)

    def register(self, entry: Any) -> None:
        """Find `entry` by its `index` from now on, unless an earlier entry has that index."""
        if isinstance(entry, dict):
            index = entry.get("index")
            try:
                self.by_index.setdefault(index, entry)
            except TypeError:  # an unhashable `index`: no integer equals it
                pass


def merge(acc: dict[str, Any], delta: dict[str, Any]) -> None:
    """Merge one delta object into the accumulated one, by the rules in the module docstring.

    Concatenated members and indexed lists are kept in forms that grow in place (`_Joined`,
    `_Indexed`); `settle` turns them into plain strings and lists before a build.
    """
    for key, value in delta.items():
        if value is None:
            acc.setdefault(key, None)
            continue
        old = acc.get(key)
        if old is None:
            if isinstance(value, list):
                acc[key] = merged = _Indexed()
                merge_list(merged, value)
            elif isinstance(value, dict):
                acc[key] = {}
                merge(acc[key], value)
            else:
                acc[key] = value
        elif isinstance(value, str):
            if type(old) is _Joined:
                old.append(value)
            elif isinstance(old, str) and key in _CONCAT:
                acc[key] = joined = _Joined(old)
                joined.append(value)
            elif not old and value:
                acc[key] = value
        elif isinstance(value, dict) and isinstance(old, dict):
            merge(old, value)
        elif isinstance(value, list) and isinstance(old, list):
            if type(old) is not _Indexed:  # a list taken whole from a delta, or settled
                acc[key] = old = _Indexed(old)
            merge_list(old, value)
        else:
            acc[key] = value


def merge_list(acc: _Indexed, values: list[Any]) -> None:
    """Entries with an integer `index` merge into the entry of that index; others are appended."""
    for value in values:
        index = value.get("index") if isinstance(value, dict) else None
        if isinstance(index, int) and not isinstance(index, bool):
            entry = acc.by_index.get(index)
            if entry is None:
                entry = {}
                merge(entry, value)
                acc.append(entry)
                acc.by_index[index] = entry
            else:
                merge(entry, value)
        else:
            acc.append(value)
            acc.register(value)


def settle(tree: dict[str, Any]) -> None:
    """Turn the `_Joined` and `_Indexed` values anywhere in a merged object into plain ones.

    In place and iterative (a merged object is as deep as the deltas were), so the built
    response and the state share their values; merging goes on from plain values.
    """
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:  # values are replaced, never added: iterating is safe
            kind = type(value)
            if kind is _Joined:
                node[key] = value.value()
            elif kind is _Indexed:
                node[key] = plain = list(value)
                stack.append(plain)
            elif kind is dict or kind is list:
                stack.append(value)


class ChoiceState:
    """One choice being built: text fields grow in `TextParts`, joined at the end."""

    __slots__ = (
        "extra",
        "finish_reason",
        "index",
        "logprobs",
        "message_extra",
        "parts",
        "role",
        "token_ids",
        "tool_calls",
        "_ids",
        "_lost_last",
        "_new_tool_calls",
        "last_call",
    )

    def __init__(self, index: int, new_tool_calls: Allowance | None = None) -> None:
        self.index = index
        self._new_tool_calls = (
            Allowance("tool calls", MAX_ENTRIES) if new_tool_calls is None else new_tool_calls
        )
        """The stream's: tool calls of every choice count against one bound."""
        self._lost_last = False
        """True once a new call without an `index` was dropped: fragments without an id
        continue that call, not the last one kept."""
        self.role: str | None = None
        self.parts: dict[str, TextParts | None] = {}
        """Text fields by name; None while the server sent only null for the field."""
        self.tool_calls: dict[int, dict[str, Any]] = {}
        self.last_call = -1
        """The highest index in `tool_calls` (a fragment without one continues that call)."""
        self._ids: dict[Any, int] = {}
        """How many calls have each `id` (kept as fragments come: a scan per fragment was
        quadratic in the number of calls)."""
        self.message_extra: dict[str, Any] = {}
        self.logprobs: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.token_ids: list[Any] | None = None
        self.extra: dict[str, Any] = {}

    def feed(self, choice: dict[str, Any], notes: DroppedNotes) -> None:
        """Merge one choice of a chunk (plain JSON values) by the rules of `_stream`."""
        delta = choice.get("delta")
        if isinstance(delta, dict):
            self._feed_delta(delta, notes)
        elif delta is not None:
            notes.add(f"choice {self.index}: delta is not an object")
        self.take_finish_reason(choice.get("finish_reason"))
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict):
            if self.logprobs is None:
                self.logprobs = {}
            for key, value in logprobs.items():
                if isinstance(value, list):
                    self.logprobs.setdefault(key, [])
                    if not isinstance(self.logprobs[key], list):
                        self.logprobs[key] = []
                    self.logprobs[key].extend(value)
                else:
                    self.logprobs.setdefault(key, value)
        token_ids = choice.get("token_ids")
        if token_ids is not None:
            if self.token_ids is None:
                self.token_ids = []
            if isinstance(token_ids, list):
                self.token_ids += token_ids
            else:
                self.token_ids.append(token_ids)
        if not _CHOICE_KNOWN.issuperset(choice):  # checked in C; built only when there are others
            merge(self.extra, {k: v for k, v in choice.items() if k not in _CHOICE_KNOWN})

    # The operations both paths apply a delta with (this one, and `_fast`'s typed one).

    def take_role(self, value: object) -> None:
        """`role`: its first non-empty string."""
        if isinstance(value, str) and value and not self.role:
            self.role = value

    def add_text(self, key: str, value: str | None) -> None:
        """A text member of the delta (`content`, `reasoning`, ...): concatenated; a null is
        kept only while the member has no text."""
        parts = self.parts.get(key)
        if value is None:
            self.parts.setdefault(key, None)
        elif parts is None:
            self.parts[key] = TextParts(value)
        else:
            parts.append(value)

    def take_finish_reason(self, value: object) -> None:
        """`finish_reason`: its last non-empty string."""
        if isinstance(value, str) and value:
            self.finish_reason = value

    def _feed_delta(self, delta: dict[str, Any], notes: DroppedNotes) -> None:
        for key, value in delta.items():
            if key == "role":
                self.take_role(value)
            elif key == "tool_calls":
                if isinstance(value, list):
                    for call in value:
                        self._feed_tool_call(call, notes)
                elif value is not None:
                    notes.add(f"choice {self.index}: tool_calls is not a list")
            elif key in _CONCAT and (value is None or isinstance(value, str)):
                self.add_text(key, value)
            else:
                merge(self.message_extra, {key: value})

    def _feed_tool_call(self, call: object, notes: DroppedNotes) -> None:
        if not isinstance(call, dict):
            notes.add(f"choice {self.index}: tool call fragment is not an object")
            return
        index = call.get("index")
        indexless = False
        if not isinstance(index, int) or isinstance(index, bool):
            indexless = True
            # No index (some compatible servers): a new id starts a new call, else continue the last.
            call_id = call.get("id")
            try:
                known = call_id in self._ids
            except TypeError:  # an unhashable id is no call's
                known = False
            if self.tool_calls and (not call_id or known):
                if self._lost_last and not call_id:
                    return
                index = self.last_call
            else:
                index = self.last_call + 1
        entry = self.tool_calls.get(index)
        if entry is None:
            if not self._new_tool_calls.take(notes, f"choice {self.index}: tool call {index}"):
                self._lost_last = indexless
                return
            entry = self.tool_calls[index] = {"_args": TextParts()}
            self.last_call = max(self.last_call, index)
            self._count_id(None, 1)
        old_id = entry.get("id")
        for key, value in call.items():
            if key == "index":
                continue
            if key == "function" and isinstance(value, dict):
                fn = entry.get("function")
                if not isinstance(fn, dict):
                    fn = entry["function"] = {}
                for fkey, fvalue in value.items():
                    if fkey == "arguments" and isinstance(fvalue, str):
                        entry["_args"].append(fvalue)
                    else:
                        merge(fn, {fkey: fvalue})
            else:
                merge(entry, {key: value})
        new_id = entry.get("id")
        if new_id is not old_id:
            self._count_id(old_id, -1)
            self._count_id(new_id, 1)

    def _count_id(self, call_id: Any, step: int) -> None:
        try:
            count = self._ids.get(call_id, 0) + step
        except TypeError:  # an unhashable id: no fragment's id can be found equal to it
            return
        if count:
            self._ids[call_id] = count
        else:
            del self._ids[call_id]

    def build(self) -> dict[str, Any]:
        settle(self.message_extra)
        settle(self.extra)
        message: dict[str, Any] = {"role": self.role or "assistant", "content": None}
        for key, parts in self.parts.items():
            message[key] = None if parts is None else parts.value()
        for key, value in self.message_extra.items():
            message.setdefault(key, value)
        if self.tool_calls:
            calls = []
            for index in sorted(self.tool_calls):
                entry = self.tool_calls[index]
                settle(entry)
                fn = entry.get("function")
                function = dict(fn) if isinstance(fn, dict) else {}
                function["arguments"] = entry["_args"].value()
                call = {
                    "id": entry.get("id"),
                    "type": entry.get("type") or "function",
                    "function": function,
                }
                for key, value in entry.items():
                    if key != "_args":
                        call.setdefault(key, value)
                calls.append(call)
            message["tool_calls"] = calls
        choice: dict[str, Any] = {
            "index": self.index,
            "message": message,
            "logprobs": self.logprobs,
            "finish_reason": self.finish_reason,
        }
        if self.token_ids is not None:
            choice["token_ids"] = self.token_ids
        for key, value in self.extra.items():
            choice.setdefault(key, value)
        return choice
