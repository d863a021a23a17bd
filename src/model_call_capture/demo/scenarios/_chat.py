"""What the scripted model says in the OpenAI Chat Completions dialect."""

from __future__ import annotations

from typing import Any

from ._reply import ARGUMENT_PIECES, ARGUMENTS, CREATED, REASONING, Event, Reply

__all__ = ["ChatReply"]


class ChatReply(Reply):
    """A reply of `POST /v1/chat/completions`: one choice, reasoning content, tool calls."""

    def json(self) -> dict[str, Any]:
        """The chat completion."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.text,
            "reasoning_content": REASONING,
        }
        if self.tool:
            message["tool_calls"] = [
                {
                    "id": self._id("call"),
                    "type": "function",
                    "function": {"name": self.tool, "arguments": ARGUMENTS},
                }
            ]
        return {
            "id": f"chatcmpl-{self.key}",
            "object": "chat.completion",
            "created": CREATED,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": self._finish_reason(),
                    "logprobs": None,
                }
            ],
            "usage": self._usage(),
        }

    def events(self) -> list[Event]:
        """Chunks to the usage chunk and `[DONE]`, or to the scripted error."""
        chunks: list[Any] = [self._chunk({"role": "assistant", "content": ""})]
        framed: list[Event]
        chunks.append(self._chunk({"reasoning_content": REASONING}))
        chunks += [self._chunk({"content": delta}) for delta in self.deltas()]
        if "error_event" in self.script or "failed" in self.script:
            chunks.append(
                {
                    "error": {
                        "message": "The server had an error while processing your request.",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                }
            )
            framed = [(None, chunk) for chunk in chunks]
            return framed
        if self.tool:
            first = {
                "index": 0,
                "id": self._id("call"),
                "type": "function",
                "function": {"name": self.tool, "arguments": ""},
            }
            chunks.append(self._chunk({"tool_calls": [first]}))
            for piece in ARGUMENT_PIECES:
                chunks.append(
                    self._chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                )
        chunks.append(self._chunk({}, self._finish_reason()))
        usage = self._chunk({}, usage=self._usage())
        usage["choices"] = []
        chunks.append(usage)
        framed = [(None, chunk) for chunk in chunks]
        return [*framed, (None, b"[DONE]")]

    def delta_event(self, text: str, n: int) -> Event:
        """One more content chunk."""
        return None, self._chunk({"content": text})

    def _tool_name(self, tool: dict[str, Any]) -> object:
        function = tool.get("function")
        return function.get("name") if isinstance(function, dict) else tool.get("name")

    def _ends_with_tool_result(self, request: dict[str, Any]) -> bool:
        messages = request.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        return isinstance(last, dict) and last.get("role") == "tool"

    def _usage(self) -> dict[str, Any]:
        return {
            "prompt_tokens": 120,
            "completion_tokens": 40,
            "total_tokens": 160,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 12},
        }

    def _finish_reason(self) -> str:
        return "length" if self.incomplete else "tool_calls" if self.tool else "stop"

    def _chunk(
        self, delta: dict[str, Any], finish: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{self.key}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            **extra,
        }
