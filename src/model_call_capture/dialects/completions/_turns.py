"""The conversation of a legacy Completions call, as turns people read (`dialects.base.Turn`).

A request sends a `prompt`: a text, a list of texts, token ids, or a list of token-id
lists (one prompt each), and perhaps a `suffix`; each prompt is a `prompt` turn (token ids
are shown as their JSON list, named `token_ids`). A response holds one choice per
generated text, each an assistant turn. Payloads are hostile: any member may hold any JSON
value, and nothing here raises.
"""

from __future__ import annotations

from typing import Any

from ..base import Part, Tool, Turn, text_of

__all__ = ["request_tools", "request_turns", "response_turns"]

ROLE = "prompt"
"""The role of a prompt's turn: a completion prompt is raw text, not a user message."""


def _is_ids(value: object) -> bool:
    return isinstance(value, list) and all(type(v) is int for v in value)


def _prompt_part(prompt: object) -> Part:
    if isinstance(prompt, str):
        return Part("text", prompt)
    if _is_ids(prompt):
        return Part("other", text_of(prompt), name="token_ids")
    return Part("other", text_of(prompt))


def request_turns(request: Any) -> list[Turn]:
    """One `prompt` turn per prompt of the request, the `suffix` (if any) on the last."""
    if not isinstance(request, dict) or "prompt" not in request:
        return []
    prompt = request.get("prompt")
    if isinstance(prompt, list) and prompt and not _is_ids(prompt):
        turns = [Turn(ROLE, [_prompt_part(p)]) for p in prompt]
    else:
        turns = [Turn(ROLE, [_prompt_part(prompt)])]
    suffix = request.get("suffix")
    if suffix is not None and suffix != "":
        turns[-1].parts.append(Part("text", text_of(suffix), name="suffix"))
    return turns


def response_turns(response: Any) -> list[Turn]:
    """One assistant turn per choice of a response."""
    choices = response.get("choices") if isinstance(response, dict) else None
    if not isinstance(choices, list):
        return []
    turns = []
    for choice in choices:
        if isinstance(choice, dict):
            text = choice.get("text")
            parts = [] if text is None or text == "" else [Part("text", text_of(text))]
            turns.append(Turn("assistant", parts))
    return turns


def request_tools(request: Any) -> list[Tool]:
    """None: a completion request offers no tools."""
    return []
