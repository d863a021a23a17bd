"""Stream reassembly: SSE bytes in, the dialect's final response object out.

`StreamReassembler` joins an SSE decoder, told the dialect's event names, with one
dialect's stream state. It is fed transport chunks as they pass and holds only the object
being built (plus at most one incomplete SSE line), never the raw stream.
"""

from __future__ import annotations

from .dialects import StreamResult, StreamState, Terminal, get_dialect
from .sse import SseDecoder

__all__ = ["StreamReassembler", "StreamResult", "reassemble_stream"]


class StreamReassembler:
    """Incremental reassembly of one stream of `dialect` (`responses`, `chat`, `messages`)."""

    __slots__ = ("_decoder", "_failures", "_result", "_state", "dialect")

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        module = get_dialect(dialect)
        self._decoder = SseDecoder(module.EVENT_NAMES)
        self._state: StreamState = module.new_stream_state()
        self._result: StreamResult | None = None
        self._failures: list[str] = []

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Feed one transport chunk; never raises on malformed input."""
        for event in self._decoder.feed(data):
            # A stream state must not raise; if one does anyway (a bug), the capture loses
            # that event, not the whole stream, and the result says so. (The `try` is free
            # in CPython 3.11+ until something raises, so it stays per event.)
            try:
                self._state.feed(event)
            except Exception as exc:
                self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        if len(self._failures) < 8:
            self._failures.append(f"event not used ({type(exc).__name__}: {exc})")

    @property
    def terminal(self) -> Terminal | None:
        """The terminal kind once the dialect's terminal (or error) event has been fed."""
        return self._state.terminal

    @property
    def content_seen(self) -> bool:
        """True once the stream carried anything other than SSE comments (keep-alives)."""
        return self._decoder.content_seen

    def finish(self) -> StreamResult:
        """End of stream: deliver any unterminated last event and return the result."""
        if self._result is None:
            for event in self._decoder.finish():
                try:
                    self._state.feed(event)
                except Exception as exc:
                    self._failed(exc)
            try:
                result = self._state.result()
            except Exception as exc:
                terminal = self._state.terminal
                result = StreamResult(response=None, terminal=terminal, truncated=terminal is None)
                self._failures.append(f"result not built ({type(exc).__name__}: {exc})")
            result.dropped.extend(self._failures)
            self._result = result
        return self._result


def reassemble_stream(dialect: str, body: bytes) -> dict[str, object] | None:
    """Reassemble a whole SSE body in one call; the final response object, or None."""
    reassembler = StreamReassembler(dialect)
    reassembler.feed(body)
    return reassembler.finish().response
