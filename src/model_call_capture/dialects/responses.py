"""OpenAI Responses API: wire types, terminal events, stream reassembly and record derivation."""

from __future__ import annotations

from typing import Any

from ..sse import SseEvent
from .base import Derived, StreamResult, Terminal

NAME = "responses"
PATH = "/v1/responses"


class StreamState:
    """Incremental reassembly of one OpenAI Responses API stream (placeholder until implemented)."""

    def __init__(self) -> None:
        self._terminal: Terminal | None = None

    def feed(self, event: SseEvent) -> None:
        """Take one event."""

    @property
    def terminal(self) -> Terminal | None:
        """The terminal kind once seen."""
        return self._terminal

    def result(self) -> StreamResult:
        """The response reassembled so far."""
        return StreamResult(response=None, terminal=self._terminal, truncated=self._terminal is None)


def new_stream_state() -> StreamState:
    """A fresh stream state."""
    return StreamState()


def derive(request: dict[str, Any] | None, response: dict[str, Any] | None) -> Derived:
    """Derive record facts from a request and response; never raises."""
    return Derived()
