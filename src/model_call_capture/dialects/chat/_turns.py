"""The conversation of a Chat Completions call, as turns people read (`dialects.base.Turn`).

Requests send `messages` (each with a `role`, `content` as a string or a list of typed
parts, `tool_calls`, `tool_call_id`); a response holds one assistant message per choice.
Payloads are hostile: any member may hold any JSON value, and nothing here raises.
"""

from __future__ import annotations

from typing import Any

from ..base import Part, Tool, Turn, content_parts, flat_tool, text_of, tools_of

__all__ = ["request_tools", "request_turns", "response_turns"]


_TEXT_KINDS = ("text", None)
_ATTACHMENTS = ("image_url", "input_audio", "file", "image", "audio")


def _content_parts(content: object) -> list[Part]:
    return content_parts(content, _TEXT_KINDS, _ATTACHMENTS, _attachment)


def _attachment(item: dict[str, Any]) -> str:
    """What an attachment is, without its bytes (a data URL can be megabytes)."""
    inner = item.get(item.get("type") or "") if isinstance(item.get("type"), str) else None
    if isinstance(inner, dict):
        url = inner.get("url")
        if isinstance(url, str):
            return url.split(",", 1)[0] if url.startswith("data:") else url
        for key in ("filename", "file_id", "format"):
            if isinstance(inner.get(key), str):
                return f"{key}: {inner[key]}"
    return ""


def _tool_calls(value: object) -> list[Part]:
    if not isinstance(value, list):
        return []
    parts = []
    for call in value:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments")
        parts.append(
            Part(
                "tool_call",
                name=text_of(function.get("name")) or None,
                call_id=text_of(call.get("id")) or None,
                arguments=None if arguments is None else text_of(arguments),
            )
        )
    return parts


def _message_turn(message: dict[str, Any]) -> Turn:
    role = text_of(message.get("role")) or "?"
    parts: list[Part] = []
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str) and message[key]:
            parts.append(Part("reasoning", message[key]))
            break
    if role == "tool":
        content = message.get("content")
        text = "\n".join(p.text for p in _content_parts(content)) if content is not None else ""
        parts.append(
            Part("tool_result", text, call_id=text_of(message.get("tool_call_id")) or None)
        )
        return Turn(role, parts)
    parts.extend(_content_parts(message.get("content")))
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        parts.append(Part("text", message["refusal"], name="refusal"))
    parts.extend(_tool_calls(message.get("tool_calls")))
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        parts.extend(_tool_calls([{"function": legacy}]))
    return Turn(role, parts)


def request_turns(request: Any) -> list[Turn]:
    """The turns of a request's `messages`, in order."""
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list):
        return []
    return [
        _message_turn(m) if isinstance(m, dict) else Turn("?", [Part("other", text_of(m))])
        for m in messages
    ]


def response_turns(response: Any) -> list[Turn]:
    """One assistant turn per choice of a response."""
    choices = response.get("choices") if isinstance(response, dict) else None
    if not isinstance(choices, list):
        return []
    turns = []
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict):
            turn = _message_turn(message)
            turn.role = "assistant" if turn.role == "?" else turn.role
            turns.append(turn)
    return turns


def _tool(item: dict[str, Any]) -> Tool:
    """`{"type": "function", "function": {...}}` (or `custom`), or a legacy `functions` entry."""
    kind = text_of(item.get("type")) or "function"
    inner = item.get(kind)
    if not isinstance(inner, dict):
        return flat_tool(item, ("parameters",))
    tool = flat_tool(inner, ("parameters", "format"))
    tool.kind = kind
    return tool


def request_tools(request: Any) -> list[Tool]:
    """The request's `tools`, then its legacy `functions`."""
    if not isinstance(request, dict):
        return []
    return tools_of(request.get("tools"), _tool) + tools_of(request.get("functions"), _tool)
