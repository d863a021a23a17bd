"""The API dialects: one package each, looked up by name or by request path.

This registry is the one place that lists them.
"""

from __future__ import annotations

from typing import cast

from . import chat, completions, messages, responses
from .base import Derived, DialectModule, StreamResult, StreamState, Terminal

__all__ = [
    "DIALECTS",
    "Derived",
    "DialectModule",
    "StreamResult",
    "StreamState",
    "Terminal",
    "dialect_for_path",
    "get_dialect",
]

DIALECTS: dict[str, DialectModule] = {
    m.NAME: cast(DialectModule, m) for m in (responses, chat, messages, completions)
}
"""Dialect packages (each a `DialectModule`) by name."""

_BY_PATH = {m.PATH: name for name, m in DIALECTS.items()}


def get_dialect(name: str) -> DialectModule:
    """The dialect module called `name`; ValueError naming the known ones otherwise."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown dialect {name!r}; expected one of {sorted(DIALECTS)}") from None


def dialect_for_path(path: str) -> str | None:
    """The dialect observed at a request path (`/v1/chat/completions` -> `chat`), else None."""
    return _BY_PATH.get(path.rstrip("/") or "/")
