"""The conversation of a Responses call, as turns people read (`dialects.base.Turn`).

A request sends `instructions` (the system prompt) and `input`: a string, or a list of
items (messages, `function_call`, `function_call_output`, `reasoning`, built-in tool
calls); a response's `output` is a list of the same items. Consecutive items of the
assistant (reasoning, messages, tool calls) make one assistant turn. Payloads are
hostile: any member may hold any JSON value, and nothing here raises.
"""

from __future__ import annotations

from typing import Any

from ..base import Part, Tool, Turn, content_parts, flat_tool, text_of, tools_of

__all__ = ["request_tools", "request_turns", "response_turns"]

_ATTACHMENTS = ("input_image", "input_file", "input_audio")


_TEXT_KINDS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")


def _content_parts(content: object) -> list[Part]:
    return content_parts(content, _TEXT_KINDS, _ATTACHMENTS, _attachment)


def _attachment(item: dict[str, Any]) -> str:
    """What an attachment is, without its bytes (a data URL can be megabytes)."""
    for key in ("image_url", "file_url", "filename", "file_id"):
        value = item.get(key)
        if isinstance(value, str):
            return value.split(",", 1)[0] if value.startswith("data:") else value
    return ""


def _reasoning(item: dict[str, Any]) -> list[Part]:
    texts = []
    for key in ("summary", "content"):
        pieces = item.get(key)
        if isinstance(pieces, list):
            texts += [text_of(p.get("text")) for p in pieces if isinstance(p, dict)]
    if not texts and item.get("encrypted_content"):
        texts.append("(encrypted)")
    return [Part("reasoning", "\n\n".join(texts))]


def _item(item: object) -> tuple[str, list[Part]]:
    """The role an item belongs to, and its parts."""
    if not isinstance(item, dict):
        return "user", [Part("other", text_of(item))]
    kind = item.get("type")
    if kind == "function_call" or kind == "custom_tool_call":
        arguments = item.get("arguments", item.get("input"))
        call = Part(
            "tool_call",
            name=text_of(item.get("name")) or None,
            call_id=text_of(item.get("call_id")) or None,
            arguments=None if arguments is None else text_of(arguments),
        )
        return "assistant", [call]
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        text = (
            "\n".join(p.text for p in _content_parts(output))
            if isinstance(output, list)
            else text_of(output)
        )
        return "tool", [Part("tool_result", text, call_id=text_of(item.get("call_id")) or None)]
    if kind == "reasoning":
        return "assistant", _reasoning(item)
    if isinstance(kind, str) and kind.startswith("input_"):  # a bare content part, as input
        return "user", _content_parts([item])
    if kind in (None, "message"):
        return text_of(item.get("role")) or "user", _content_parts(item.get("content"))
    # A built-in tool call (web search, file search, computer use, ...): shown as it is.
    return "assistant", [Part("other", text_of(item), name=text_of(kind))]


def _turns(items: list[Any]) -> list[Turn]:
    turns: list[Turn] = []
    for item in items:
        role, parts = _item(item)
        if role == "assistant" and turns and turns[-1].role == "assistant":
            turns[-1].parts.extend(parts)
        else:
            turns.append(Turn(role, parts))
    return turns


def request_turns(request: Any) -> list[Turn]:
    """The turns of a request: its instructions, then its input."""
    if not isinstance(request, dict):
        return []
    turns = []
    instructions = request.get("instructions")
    if instructions:
        turns.append(Turn("system", _content_parts(instructions)))
    given = request.get("input")
    if isinstance(given, list):
        turns.extend(_turns(given))
    elif given is not None:
        turns.append(Turn("user", _content_parts(given)))
    return turns


def response_turns(response: Any) -> list[Turn]:
    """The assistant turn of a response's `output` items (tool results never appear there)."""
    output = response.get("output") if isinstance(response, dict) else None
    if not isinstance(output, list):
        return []
    return _turns(output)


def _tool(item: dict[str, Any]) -> Tool:
    return flat_tool(item, ("parameters", "format"))


def request_tools(request: Any) -> list[Tool]:
    """The request's `tools`: functions, custom tools and built-ins (`web_search`, ...)."""
    return tools_of(request.get("tools"), _tool) if isinstance(request, dict) else []
