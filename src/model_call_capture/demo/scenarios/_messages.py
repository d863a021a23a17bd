"""What the scripted model says in the Anthropic Messages dialect."""

from __future__ import annotations

from typing import Any

from ._reply import REASONING, Event, Reply

__all__ = ["MessagesReply"]


class MessagesReply(Reply):
    """A reply of `POST /v1/messages`: thinking, text and tool-use content blocks."""

    def json(self) -> dict[str, Any]:
        """The message."""
        return {
            "id": self._id("msg"),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self._content(),
            "stop_reason": self._stop_reason(),
            "stop_sequence": None,
            "usage": self._usage(),
        }

    def events(self) -> list[Event]:
        """`message_start` to `message_stop`, or to the scripted error."""
        events: list[dict[str, Any]] = []
        start = self.json() | {"content": [], "stop_reason": None, "usage": self._usage(1)}
        events.append({"type": "message_start", "message": start})
        events += self._thinking_block()
        events.append(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            }
        )
        events += [self._text_delta(delta) for delta in self.deltas()]
        if "error_event" in self.script or "failed" in self.script:
            events.append(
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            )
            return [(e["type"], e) for e in events]
        events.append({"type": "content_block_stop", "index": 1})
        if self.tool:
            events += self._tool_use_block()
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": self._stop_reason(), "stop_sequence": None},
                "usage": {"output_tokens": 40},
            }
        )
        events.append({"type": "message_stop"})
        return [(e["type"], e) for e in events]

    def delta_event(self, text: str, n: int) -> Event:
        """One more `content_block_delta` of the text block."""
        return "content_block_delta", self._text_delta(text)

    def _ends_with_tool_result(self, request: dict[str, Any]) -> bool:
        messages = request.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        content = last.get("content") if isinstance(last, dict) else None
        return isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )

    def _thinking_block(self) -> list[dict[str, Any]]:
        """The thinking block's events (a `ping` among them, as real streams have)."""
        return [
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
            {"type": "ping"},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": REASONING},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": f"sig-{self.key}"},
            },
            {"type": "content_block_stop", "index": 0},
        ]

    def _tool_use_block(self) -> list[dict[str, Any]]:
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": self._id("toolu"),
            "name": self.tool,
            "input": {},
        }
        return [
            {"type": "content_block_start", "index": 2, "content_block": block},
            *(
                {
                    "type": "content_block_delta",
                    "index": 2,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
                for piece in self.argument_pieces
            ),
            {"type": "content_block_stop", "index": 2},
        ]

    def _text_delta(self, text: str) -> dict[str, Any]:
        return {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": text},
        }

    def _usage(self, output_tokens: int = 40) -> dict[str, Any]:
        return {
            "input_tokens": 20,
            "cache_creation_input_tokens": 30,
            "cache_read_input_tokens": 70,
            "output_tokens": output_tokens,
        }

    def _stop_reason(self) -> str:
        return "max_tokens" if self.incomplete else "tool_use" if self.tool else "end_turn"

    def _content(self) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": REASONING, "signature": f"sig-{self.key}"},
            {"type": "text", "text": self.text},
        ]
        if self.tool:
            content.append(
                {
                    "type": "tool_use",
                    "id": self._id("toolu"),
                    "name": self.tool,
                    "input": {"city": self.city},
                }
            )
        return content
