"""Record facts of a Responses call, read from its request and response bodies.

`derive` decodes the response into small view Structs holding only the members it reads
(see `base.decode_view`): a response of megabytes costs no more than the fields used.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...contracts import ToolCall
from .._tokens import NO_TOKENS, Candidates, TokenFacts, ambiguous, ids_from_logprobs, resolve
from ..base import (
    Derived,
    NotList,
    NotObject,
    Payload,
    decode_view,
    request_model,
    token_count,
    tool_arguments,
)

__all__ = ["derive"]


class _TokenDetails(msgspec.Struct, gc=False):
    cached_tokens: Any = None
    reasoning_tokens: Any = None


class _UsageView(msgspec.Struct, gc=False):
    input_tokens: Any = None
    output_tokens: Any = None
    total_tokens: Any = None
    input_tokens_details: _TokenDetails | NotObject = None
    output_tokens_details: _TokenDetails | NotObject = None


class _TextView(msgspec.Struct, gc=False):
    text: Any = None


class _TokenLogprobView(msgspec.Struct, gc=False):
    token: Any = None
    logprob: Any = None


class _PartView(msgspec.Struct, gc=False):
    text: Any = None
    logprobs: list[_TokenLogprobView | NotObject] | NotList = None


class _ItemView(msgspec.Struct, gc=False):
    type: Any = None
    call_id: Any = None
    name: Any = None
    arguments: Any = None
    input: Any = None
    summary: list[_TextView | NotObject] | NotList = None
    content: list[_PartView | NotObject] | NotList = None
    # NeMo Gym's model servers put the token fields of a generation on its last output item.
    prompt_token_ids: Any = None
    generation_token_ids: Any = None
    generation_log_probs: Any = None


class _IncompleteView(msgspec.Struct, gc=False):
    reason: Any = None


class _ResponseView(msgspec.Struct, gc=False):
    """The members of a Responses `response` that `derive` reads; the rest is skipped unread."""

    id: Any = None
    model: Any = None
    status: Any = None
    incomplete_details: _IncompleteView | NotObject = None
    usage: _UsageView | NotObject = None
    output: list[_ItemView | NotObject] | NotList = None


_response_view = msgspec.json.Decoder(_ResponseView)
_NO_RESPONSE = _ResponseView()  # read, never written
_NO_USAGE = _UsageView()
_NO_LOGPROB = _TokenLogprobView()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def derive(request: Payload, response: Payload) -> Derived:
    """Derive record facts from a Responses request and response; never raises.

    Cached tokens are part of `input_tokens` and reasoning tokens part of `output_tokens`,
    so nothing is added twice. `finish_reason` is `incomplete_details.reason` (null for a
    completed response, as NeMo Gym records it). Tool calls are the `function_call` and
    `custom_tool_call` items; reasoning is every summary and reasoning text, in order,
    joined by a newline.
    """
    resp = decode_view(response, _response_view) or _NO_RESPONSE
    usage = resp.usage if type(resp.usage) is _UsageView else _NO_USAGE
    tokens_in = token_count(usage.input_tokens)
    tokens_out = token_count(usage.output_tokens)
    tokens_total = token_count(usage.total_tokens)
    if tokens_total is None and tokens_in is not None and tokens_out is not None:
        tokens_total = tokens_in + tokens_out
    details = usage.input_tokens_details
    cached = token_count(details.cached_tokens) if type(details) is _TokenDetails else None
    details = usage.output_tokens_details
    tool_calls: list[ToolCall] = []
    reasoning: list[str] = []
    output = resp.output
    token_fields = False
    for item in output if type(output) is list else ():
        if type(item) is not _ItemView:
            continue
        kind = item.type
        if not token_fields:
            token_fields = (
                item.prompt_token_ids is not None
                or item.generation_token_ids is not None
                or item.generation_log_probs is not None
                or (kind == "message" and _has_text_logprobs(item))
            )
        if kind == "function_call" or kind == "custom_tool_call":
            raw = item.arguments if kind == "function_call" else item.input
            tool_calls.append(
                ToolCall(
                    call_id=_str(item.call_id), name=_str(item.name), arguments=tool_arguments(raw)
                )
            )
        elif kind == "reasoning":
            for parts in (item.summary, item.content):
                for part in parts if isinstance(parts, list) else []:
                    text = part.text if isinstance(part, (_TextView, _PartView)) else None
                    if isinstance(text, str) and text:
                        reasoning.append(text)
    incomplete = resp.incomplete_details
    tokens = _tokens(output) if token_fields else NO_TOKENS
    derived = Derived(
        response_id=_str(resp.id),
        model=_str(resp.model) or _str(request_model(request)),
        response_status=_str(resp.status),
        finish_reason=_str(incomplete.reason) if isinstance(incomplete, _IncompleteView) else None,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        tokens_reasoning=(
            token_count(details.reasoning_tokens) if type(details) is _TokenDetails else None
        ),
        tokens_total=tokens_total,
        cached_tokens=cached,
        cache_hit=None if cached is None else cached > 0,
        tool_calls=tool_calls,
        reasoning_content="\n".join(reasoning) if reasoning else None,
    )
    if tokens is not NO_TOKENS:  # most responses have none: their defaults are what they hold
        derived.prompt_token_ids = tokens.prompt_token_ids
        derived.generation_token_ids = tokens.generation_token_ids
        derived.generation_log_probs = tokens.generation_log_probs
        derived.derivation_problems = tokens.problems or msgspec.UNSET
    return derived


def _item_candidates(index: int, item: _ItemView) -> Candidates:
    """The token fields NeMo Gym put on output item `index`."""
    found = Candidates()
    at = f"output[{index}]"
    if item.prompt_token_ids is not None:
        found.prompt.append((f"{at}.prompt_token_ids", item.prompt_token_ids))
    if item.generation_token_ids is not None:
        found.generation.append((f"{at}.generation_token_ids", item.generation_token_ids))
    if item.generation_log_probs is not None:
        found.log_probs.append((f"{at}.generation_log_probs", item.generation_log_probs))
    return found


def _text_logprobs(items: list[tuple[int, _ItemView]]) -> Candidates:
    """OpenAI's `output_text.logprobs` of every message item, in order (log-probs of the text only)."""
    found = Candidates()
    entries: list[Any] = []
    path = ""
    for index, item in items:
        if item.type != "message" or not isinstance(item.content, list):
            continue
        for number, part in enumerate(item.content):
            # OpenAI writes `logprobs: []` on every part when none were asked for: not returned.
            if not isinstance(part, _PartView) or part.logprobs is None or part.logprobs == []:
                continue
            at = f"output[{index}].content[{number}].logprobs"
            if not isinstance(part.logprobs, list):
                found.log_probs.append((at, part.logprobs))
                return found
            path = path or at
            entries += [
                e if isinstance(e, _TokenLogprobView) else _NO_LOGPROB for e in part.logprobs
            ]
    if path:
        spelled = ids_from_logprobs(path, [e.token for e in entries])
        if spelled is not None:
            found.generation.append(spelled)
        found.log_probs.append((f"{path}[].logprob", [e.logprob for e in entries]))
    return found


def _tokens(output: object) -> TokenFacts:
    """The token fields of a response: one output item's NeMo Gym fields, else the text log-probs."""
    items = (
        [(i, it) for i, it in enumerate(output) if isinstance(it, _ItemView)]
        if isinstance(output, list)
        else []
    )
    carrying = [
        (i, _item_candidates(i, it))
        for i, it in items
        if it.prompt_token_ids is not None
        or it.generation_token_ids is not None
        or it.generation_log_probs is not None
    ]
    if len(carrying) > 1:
        return ambiguous(
            f"{len(carrying)} output items (output[{carrying[0][0]}], output[{carrying[1][0]}], ...) carry token fields"
        )
    if carrying:
        return resolve(carrying[0][1])
    return resolve(_text_logprobs(items))


def _has_text_logprobs(item: _ItemView) -> bool:
    """Whether a message item has a part with log-probs (OpenAI's `[]` when none were asked for)."""
    content = item.content
    if isinstance(content, list):
        for part in content:
            if type(part) is _PartView and part.logprobs:
                return True
    return False
