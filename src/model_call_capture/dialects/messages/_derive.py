"""Record facts derived from a Messages request and response."""

from __future__ import annotations

from typing import Any

import msgspec

from ...contracts import ToolCall
from ..base import Derived, NotList, NotObject, Payload, decode_view, request_model, token_count

__all__ = ["derive"]


class _UsageView(msgspec.Struct, gc=False):
    input_tokens: Any = None
    output_tokens: Any = None
    cache_read_input_tokens: Any = None
    cache_creation_input_tokens: Any = None


class _BlockView(msgspec.Struct, gc=False):
    type: Any = None
    id: Any = None
    name: Any = None
    input: Any = None
    thinking: Any = None


class _ResponseView(msgspec.Struct, gc=False):
    """The members of a Messages response that `derive` reads; the rest is skipped unread."""

    id: Any = None
    model: Any = None
    stop_reason: Any = None
    usage: _UsageView | NotObject = None
    content: list[_BlockView | NotObject] | NotList = None


_response_view = msgspec.json.Decoder(_ResponseView)
_NO_RESPONSE = _ResponseView()  # read, never written
_NO_USAGE = _UsageView()


def derive(request: Payload, response: Payload) -> Derived:
    """Derive record facts from a request and a Messages response; never raises.

    `tokens_in` folds cache reads and writes into `input_tokens`, which excludes them;
    Anthropic reports no reasoning tokens, so `tokens_reasoning` stays None. Tool calls
    are the `tool_use` blocks (the calls the caller must run); server and MCP tool calls
    are run by the API and answered inside the same message. `reasoning_content` is the
    text of the `thinking` blocks joined with a newline (redacted thinking is opaque).
    `response_status` stays None: a Messages response has no status (NeMo Gym reads a
    `status` member of any body).
    """
    resp = decode_view(response, _response_view) or _NO_RESPONSE
    model = resp.model
    if not (isinstance(model, str) and model):
        model = request_model(request)
    content = resp.content
    tool_calls: list[ToolCall] = []
    thinking: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, _BlockView):
                continue
            kind = block.type
            if kind == "tool_use":
                call_id, name = block.id, block.name
                tool_calls.append(
                    ToolCall(
                        call_id=call_id if isinstance(call_id, str) else None,
                        name=name if isinstance(name, str) else None,
                        arguments=block.input,
                    )
                )
            elif kind == "thinking" and isinstance(block.thinking, str) and block.thinking:
                thinking.append(block.thinking)
    usage = resp.usage if isinstance(resp.usage, _UsageView) else _NO_USAGE
    plain = token_count(usage.input_tokens)
    cached, created = usage.cache_read_input_tokens, usage.cache_creation_input_tokens
    read_count, create_count = token_count(cached), token_count(created)
    # An absent cache count means no cache traffic; a present but invalid one is unknown.
    cache_known = (cached is None or read_count is not None) and (
        created is None or create_count is not None
    )
    tokens_in = (
        plain + (read_count or 0) + (create_count or 0)
        if plain is not None and cache_known
        else None
    )
    tokens_out = token_count(usage.output_tokens)
    # One constructor call, not a blank `Derived` filled in: a Struct's attribute store is
    # the interpreter's slow path, and every record read passes here.
    return Derived(
        response_id=resp.id if isinstance(resp.id, str) else None,
        model=model if isinstance(model, str) and model else None,
        finish_reason=resp.stop_reason if isinstance(resp.stop_reason, str) else None,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        tokens_total=(
            tokens_in + tokens_out if tokens_in is not None and tokens_out is not None else None
        ),
        cached_tokens=read_count,
        cache_hit=None if read_count is None else read_count > 0,
        cache_creation_tokens=create_count,
        tool_calls=tool_calls,
        reasoning_content="\n".join(thinking) or None,
    )
