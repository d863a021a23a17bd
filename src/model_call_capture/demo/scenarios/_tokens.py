"""The demo's vLLM mode: a byte-level tokenizer and a chat template, deterministic and honest.

A request with `"return_token_ids": true` gets the fields vLLM adds
(`prompt_token_ids`, `choices[].token_ids`, and in streams the ids of each chunk's delta),
from a tokenizer a reader can check by hand:

- ids 0-255 are the bytes of the UTF-8 text; 256 is `<|im_start|>`, 257 `<|im_end|>`;
- the chat template (ChatML-like) renders the offered tools as a system block, then each
  message as `<|im_start|>{role}\\n{body}<|im_end|>\\n`, then `<|im_start|>assistant\\n`;
  an assistant message's body is its content followed by one
  `<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>` per tool call;
- the generated ids are the reply's body then `<|im_end|>` (when it stopped by itself).

So the prompt ids are exactly the tokenization of the rendered template, and a client that
sends the reply back as an assistant message gets a next prompt that starts with this
prompt + generation: a multi-turn conversation is one token trajectory. Log-probs (with
`"logprobs": true`) are scripted, not a model's: `-(1 + (id + position) % 16) / 64`,
exact in float32; tokens are spelled `token_id:N` with `return_tokens_as_token_ids`.
"""

from __future__ import annotations

from typing import Any

from ... import _codec

__all__ = [
    "IM_END",
    "IM_START",
    "body_text",
    "encode",
    "log_prob",
    "logprob_entries",
    "render_prompt",
    "tool_call_text",
]

IM_START = 256
"""The id of `<|im_start|>`."""
IM_END = 257
"""The id of `<|im_end|>`."""
_SPECIAL = {IM_START: "<|im_start|>", IM_END: "<|im_end|>"}


def encode(text: str) -> list[int]:
    """The ids of `text`: its UTF-8 bytes."""
    return list(text.encode("utf-8", "surrogatepass"))


def tool_call_text(name: object, arguments: object) -> tuple[str, str, str]:
    """A tool call as the template renders it: (head, arguments, tail), in that order."""
    head = '<tool_call>\n{"name": ' + _codec.encode(name).decode() + ', "arguments": '
    args = arguments if isinstance(arguments, str) else _codec.encode(arguments).decode()
    return head, args, "}\n</tool_call>"


def _content(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: their text, in order
        return "".join(
            str(p.get("text") or "")
            for p in value
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def body_text(message: dict[str, Any]) -> str:
    """The body the template renders for one message: content, then each tool call."""
    text = _content(message.get("content"))
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            text += "".join(tool_call_text(function.get("name"), function.get("arguments")))
    return text


def _block(role: str, body: str) -> list[int]:
    return [IM_START, *encode(role + "\n" + body), IM_END, *encode("\n")]


def render_prompt(request: dict[str, Any]) -> list[int]:
    """The prompt ids of a chat request: tools, every message, the generation prompt."""
    ids: list[int] = []
    tools = request.get("tools")
    if isinstance(tools, list) and tools:
        listed = "\n".join(_codec.encode(tool).decode() for tool in tools)
        ids += _block("system", "# Tools\n" + listed)
    messages = request.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict):
            ids += _block(str(message.get("role") or ""), body_text(message))
        else:
            ids += _block("", _codec.encode(message).decode())
    return [*ids, IM_START, *encode("assistant\n")]


def log_prob(token_id: int, position: int) -> float:
    """The scripted log-prob of the generated token `token_id` at generation position `position`."""
    return -(1 + (token_id + position) % 16) / 64


def logprob_entries(ids: list[int], start: int, *, as_ids: bool) -> list[dict[str, Any]]:
    """`logprobs.content` entries of `ids`, the first at generation position `start`."""
    entries = []
    for offset, token_id in enumerate(ids):
        if as_ids:
            token = f"token_id:{token_id}"
        elif token_id in _SPECIAL:
            token = _SPECIAL[token_id]
        else:
            token = bytes([token_id]).decode("utf-8", "backslashreplace")
        raw = list(_SPECIAL[token_id].encode()) if token_id in _SPECIAL else [token_id]
        entries.append(
            {
                "token": token,
                "logprob": log_prob(token_id, start + offset),
                "bytes": raw,
                "top_logprobs": [],
            }
        )
    return entries
