"""What the scripted model says in the OpenAI Chat Completions dialect.

With `"return_token_ids": true` the reply is vLLM's (`_tokens`): token ids of the prompt
and of the generation, log-probs when asked for, and no reasoning (a chat template does
not render it back into the next prompt).
"""

from __future__ import annotations

from typing import Any

from . import _tokens
from ._reply import CREATED, REASONING, Event, Reply
from ._script import Script

__all__ = ["ChatReply"]


class ChatReply(Reply):
    """A reply of `POST /v1/chat/completions`: one choice, reasoning content, tool calls."""

    def __init__(self, request: dict[str, Any], body: bytes, script: Script) -> None:
        super().__init__(request, body, script)
        self.token_mode = request.get("return_token_ids") is True
        self.logprobs = request.get("logprobs") is True
        self.as_ids = request.get("return_tokens_as_token_ids") is True
        self.prompt_ids = _tokens.render_prompt(request) if self.token_mode else []

    def _tool_pieces(self) -> tuple[str, str, str]:
        return _tokens.tool_call_text(self.tool, self.arguments)

    def generation_ids(self) -> list[int]:
        """The generated ids: the message body the template renders, then `<|im_end|>`."""
        body = self.text + ("".join(self._tool_pieces()) if self.tool else "")
        end = [] if self.incomplete else [_tokens.IM_END]
        return [*_tokens.encode(body), *end]

    def _tokens_of(self, ids: list[int], start: int) -> dict[str, Any]:
        """The vLLM fields of a choice (or chunk choice) whose generated ids are `ids`."""
        fields: dict[str, Any] = {"token_ids": ids}
        if self.logprobs:
            entries = _tokens.logprob_entries(ids, start, as_ids=self.as_ids)
            fields["logprobs"] = {"content": entries}
        return fields

    def json(self) -> dict[str, Any]:
        """The chat completion."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if not self.token_mode:
            message["reasoning_content"] = REASONING
        if self.tool:
            message["tool_calls"] = [
                {
                    "id": self._id("call"),
                    "type": "function",
                    "function": {"name": self.tool, "arguments": self.arguments},
                }
            ]
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": self._finish_reason(),
            "logprobs": None,
        }
        reply: dict[str, Any] = {
            "id": f"chatcmpl-{self.key}",
            "object": "chat.completion",
            "created": CREATED,
            "model": self.model,
            "choices": [choice],
            "usage": self._usage(),
        }
        if self.token_mode:
            choice.update(self._tokens_of(self.generation_ids(), 0))
            reply["prompt_token_ids"] = self.prompt_ids
        return reply

    def events(self) -> list[Event]:
        """Chunks to the usage chunk and `[DONE]`, or to the scripted error."""
        if self.token_mode:
            return self._token_events()
        chunks: list[Any] = [self._chunk({"role": "assistant", "content": ""})]
        framed: list[Event]
        chunks.append(self._chunk({"reasoning_content": REASONING}))
        chunks += [self._chunk({"content": delta}) for delta in self.deltas()]
        if "error_event" in self.script or "failed" in self.script:
            chunks.append(_ERROR_CHUNK)
            framed = [(None, chunk) for chunk in chunks]
            return framed
        if self.tool:
            chunks.append(self._chunk({"tool_calls": [self._first_call()]}))
            for piece in self.argument_pieces:
                chunks.append(
                    self._chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                )
        chunks.append(self._chunk({}, self._finish_reason()))
        usage = self._chunk({}, usage=self._usage())
        usage["choices"] = []
        chunks.append(usage)
        framed = [(None, chunk) for chunk in chunks]
        return [*framed, (None, b"[DONE]")]

    def _token_events(self) -> list[Event]:
        """vLLM's stream: the prompt ids in the first chunk, each delta's ids in its chunk."""
        position = 0

        def chunk(delta: dict[str, Any], ids: list[int], finish: str | None = None) -> Any:
            nonlocal position
            out = self._chunk(delta, finish)
            out["choices"][0].update(self._tokens_of(ids, position))
            position += len(ids)
            return out

        first = chunk({"role": "assistant", "content": ""}, [])
        first["prompt_token_ids"] = self.prompt_ids
        chunks: list[Any] = [first]
        chunks += [chunk({"content": d}, _tokens.encode(d)) for d in self.deltas()]
        if "error_event" in self.script or "failed" in self.script:
            return [(None, c) for c in [*chunks, _ERROR_CHUNK]]
        tail: list[int] = []
        if self.tool:
            head, _, end = self._tool_pieces()
            chunks.append(chunk({"tool_calls": [self._first_call()]}, _tokens.encode(head)))
            for piece in self.argument_pieces:
                delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
                chunks.append(chunk(delta, _tokens.encode(piece)))
            tail = _tokens.encode(end)
        if not self.incomplete:
            tail.append(_tokens.IM_END)
        chunks.append(chunk({}, tail, self._finish_reason()))
        usage = self._chunk({}, usage=self._usage())
        usage["choices"] = []
        chunks.append(usage)
        return [*[(None, c) for c in chunks], (None, b"[DONE]")]

    def _first_call(self) -> dict[str, Any]:
        return {
            "index": 0,
            "id": self._id("call"),
            "type": "function",
            "function": {"name": self.tool, "arguments": ""},
        }

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
        if self.token_mode:  # the counts the ids give
            prompt, generated = len(self.prompt_ids), len(self.generation_ids())
            return {
                "prompt_tokens": prompt,
                "completion_tokens": generated,
                "total_tokens": prompt + generated,
            }
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


_ERROR_CHUNK = {
    "error": {
        "message": "The server had an error while processing your request.",
        "type": "server_error",
        "param": None,
        "code": None,
    }
}
