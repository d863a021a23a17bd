"""The conversation of an Anthropic Messages call, as turns people read (`dialects.base.Turn`).

A request sends `system` (a string or text blocks) and `messages`, whose `content` is a
string or a list of blocks (`text`, `image`, `document`, `tool_use`, `tool_result`,
`thinking`, ...); a response's `content` is the assistant's blocks. Tool results travel
inside user messages; here they become a `tool` turn of their own, as the other
dialects have. Payloads are hostile: any member may hold any JSON value, and nothing
here raises.
"""

from __future__ import annotations

from typing import Any

from ..base import Part, Tool, Turn, flat_tool, text_of, tools_of

__all__ = ["request_tools", "request_turns", "response_turns"]

_ATTACHMENTS = ("image", "document", "file", "container_upload")


def _source(block: dict[str, Any]) -> str:
    """What an attachment is, without its bytes."""
    source = block.get("source")
    if isinstance(source, dict):
        for key in ("url", "file_id", "media_type"):
            value = source.get(key)
            if isinstance(value, str):
                return value
    return text_of(block.get("title")) if isinstance(block.get("title"), str) else ""


def _block(block: object) -> Part:
    if not isinstance(block, dict):
        return Part("text", text_of(block))
    kind = block.get("type")
    if kind == "text":
        return Part("text", text_of(block.get("text")))
    if kind == "thinking":
        return Part("reasoning", text_of(block.get("thinking")))
    if kind == "redacted_thinking":
        return Part("reasoning", "(redacted)")
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return Part(
            "tool_call",
            name=text_of(block.get("name")) or None,
            call_id=text_of(block.get("id")) or None,
            arguments=text_of(block.get("input", {})),
        )
    if kind == "tool_result":
        content = block.get("content")
        text = (
            "\n".join(p.text for p in map(_block, content))
            if isinstance(content, list)
            else text_of(content)
        )
        return Part(
            "tool_result",
            text,
            call_id=text_of(block.get("tool_use_id")) or None,
            error=block.get("is_error") is True,
        )
    if kind in _ATTACHMENTS:
        return Part("attachment", _source(block), name=str(kind))
    return Part("other", text_of(block), name=text_of(kind))


def _message_turns(message: object) -> list[Turn]:
    if not isinstance(message, dict):
        return [Turn("?", [Part("other", text_of(message))])]
    role = text_of(message.get("role")) or "?"
    content = message.get("content")
    if not isinstance(content, list):
        return [Turn(role, [Part("text", text_of(content))] if content else [])]
    turns: list[Turn] = []
    for part in map(_block, content):
        part_role = "tool" if part.kind == "tool_result" else role
        if turns and turns[-1].role == part_role:
            turns[-1].parts.append(part)
        else:
            turns.append(Turn(part_role, [part]))
    return turns


def request_turns(request: Any) -> list[Turn]:
    """The turns of a request: its system prompt, then its messages."""
    if not isinstance(request, dict):
        return []
    turns = []
    system = request.get("system")
    if isinstance(system, list):
        turns.append(Turn("system", [_block(b) for b in system]))
    elif system:
        turns.append(Turn("system", [Part("text", text_of(system))]))
    messages = request.get("messages")
    if isinstance(messages, list):
        for message in messages:
            turns.extend(_message_turns(message))
    return turns


def response_turns(response: Any) -> list[Turn]:
    """The assistant turn of a response's content blocks."""
    if not isinstance(response, dict) or not isinstance(response.get("content"), list):
        return []
    return [Turn("assistant", [_block(b) for b in response["content"]])]


def _tool(item: dict[str, Any]) -> Tool:
    return flat_tool(item, ("input_schema",))


def request_tools(request: Any) -> list[Tool]:
    """The request's `tools`: client tools (`input_schema`) and server tools (`web_search_...`)."""
    return tools_of(request.get("tools"), _tool) if isinstance(request, dict) else []
