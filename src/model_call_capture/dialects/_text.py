"""A string built from many small fragments, with bounded memory overhead.

A stream carries its text in deltas of a few characters. Kept as a list of fragments,
each costs a str object and a list slot, far more than its few characters of text: a
long stream would hold many times its text in overhead. Here the fragments are joined
every `_BATCH` appends, so the overhead is bounded by one batch plus one reference per
joined piece, and appending stays a list append.
"""

from __future__ import annotations

__all__ = ["TextParts"]

_BATCH = 256


class TextParts:
    """Fragments of one text field; `value()` is their concatenation."""

    __slots__ = ("_joined", "_tail")

    def __init__(self, first: str = "") -> None:
        self._joined: list[str] = []
        self._tail: list[str] = [first] if first else []

    def append(self, fragment: str) -> None:
        """Add a fragment at the end."""
        tail = self._tail
        tail.append(fragment)
        if len(tail) >= _BATCH:
            self._joined.append("".join(tail))
            tail.clear()

    def value(self) -> str:
        """The text so far.

        The fragments are replaced by the result, so the built response and this state
        share one string instead of holding the text twice, and asking again is free.
        """
        joined = self._joined
        if self._tail:
            joined.append("".join(self._tail))
            self._tail.clear()
        if len(joined) > 1:
            joined[:] = ["".join(joined)]
        return joined[0] if joined else ""

    def __bool__(self) -> bool:
        return bool(self._joined or self._tail)
