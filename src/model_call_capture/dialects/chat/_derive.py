"""Chat Completions record derivation: the facts of a `ModelCallRecord` from its payloads.

`derive` decodes the response into small view Structs that declare only the members it
reads (see `dialects/base.py`, "views for derivation"). What a response states the same way
in Chat Completions and legacy Completions (its id, model, first finish reason and usage:
`UsageView`, `choices_derived`) is derived here for both.
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

__all__ = ["UsageView", "choices_derived", "derive", "nonempty"]


class _TokenDetails(msgspec.Struct, gc=False):
    cached_tokens: Any = None
    reasoning_tokens: Any = None


class UsageView(msgspec.Struct, gc=False):
    """The members of an OpenAI `usage` (chat and Completions) that derivation reads."""

    prompt_tokens: Any = None
    completion_tokens: Any = None
    total_tokens: Any = None
    prompt_cache_hit_tokens: Any = None
    prompt_tokens_details: _TokenDetails | NotObject = None
    completion_tokens_details: _TokenDetails | NotObject = None


class _FunctionView(msgspec.Struct, gc=False):
    name: Any = None
    arguments: Any = None


class _ToolCallView(msgspec.Struct, gc=False):
    id: Any = None
    function: _FunctionView | NotObject = None


class _MessageView(msgspec.Struct, gc=False):
    tool_calls: list[_ToolCallView | NotObject] | NotList = None
    function_call: _FunctionView | NotObject = None
    reasoning_content: Any = None
    reasoning: Any = None
    # NeMo Gym's model server puts the token fields on the message (NeMo RL reads them back).
    prompt_token_ids: Any = None
    generation_token_ids: Any = None
    generation_log_probs: Any = None


class _TokenLogprobView(msgspec.Struct, gc=False):
    token: Any = None
    logprob: Any = None


class _LogprobsView(msgspec.Struct, gc=False):
    content: list[_TokenLogprobView | NotObject] | NotList = None


class _ChoiceView(msgspec.Struct, gc=False):
    message: _MessageView | NotObject = None
    finish_reason: Any = None
    token_ids: Any = None
    logprobs: _LogprobsView | NotObject = None


class _ResponseView(msgspec.Struct, gc=False):
    """The members of a `chat.completion` that `derive` reads; the rest is skipped unread."""

    id: Any = None
    model: Any = None
    usage: UsageView | NotObject = None
    choices: list[_ChoiceView | NotObject] | NotList = None
    prompt_token_ids: Any = None


_response_view = msgspec.json.Decoder(_ResponseView)
_NO_USAGE = UsageView()
_NO_MESSAGE = _MessageView()
_NO_CHOICE = _ChoiceView()
_NO_LOGPROB = _TokenLogprobView()


def nonempty(value: object) -> str | None:
    """`value` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def derive(request: Payload, response: Payload) -> Derived:
    """Derive record facts from a request and a `chat.completion` (possibly null); never raises.

    finish_reason, tool_calls and reasoning_content describe the first choice, which is the
    one clients use; with `n > 1` the other choices stay in the response. The token fields
    are those of a single-choice response (`dialects._tokens`).
    """
    try:
        return _derive(request, decode_view(response, _response_view) or _ResponseView())
    except Exception:  # a malformed body must still give a record
        return Derived(model=nonempty(request_model(request)))


def choices_derived(
    request: Payload, ident: object, model: object, finish_reason: object, usage: object
) -> Derived:
    """The facts a chat or Completions response states the same way: its id, its model (the
    request's when it names none), its first choice's finish reason, and its usage (the
    cached tokens in `prompt_tokens_details`, else DeepSeek's `prompt_cache_hit_tokens`)."""
    if type(usage) is not UsageView:
        usage = _NO_USAGE
    tokens_in = token_count(usage.prompt_tokens)
    tokens_out = token_count(usage.completion_tokens)
    total = token_count(usage.total_tokens)
    if total is None and tokens_in is not None and tokens_out is not None:
        total = tokens_in + tokens_out
    details = usage.prompt_tokens_details
    cached = token_count(details.cached_tokens) if type(details) is _TokenDetails else None
    if cached is None:
        cached = token_count(usage.prompt_cache_hit_tokens)  # DeepSeek
    details = usage.completion_tokens_details
    return Derived(
        response_id=nonempty(ident),
        model=model if isinstance(model, str) and model else nonempty(request_model(request)),
        finish_reason=nonempty(finish_reason),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        tokens_reasoning=(
            token_count(details.reasoning_tokens) if type(details) is _TokenDetails else None
        ),
        tokens_total=total,
        cached_tokens=cached,
        cache_hit=None if cached is None else cached > 0,
    )


def _derive(request: Payload, resp: _ResponseView) -> Derived:
    choices = resp.choices
    first = (
        choices[0]
        if type(choices) is list and choices and type(choices[0]) is _ChoiceView
        else _NO_CHOICE
    )
    message = first.message if type(first.message) is _MessageView else _NO_MESSAGE
    derived = choices_derived(request, resp.id, resp.model, first.finish_reason, resp.usage)
    raw_calls = message.tool_calls
    if raw_calls is not None or message.function_call is not None:
        derived.tool_calls = _tool_calls(raw_calls, message.function_call)
    derived.reasoning_content = nonempty(message.reasoning_content) or nonempty(message.reasoning)
    logprobs = first.logprobs
    if (  # the common case, decided without building a candidate
        resp.prompt_token_ids is None
        and first.token_ids is None
        and message.prompt_token_ids is None
        and message.generation_token_ids is None
        and message.generation_log_probs is None
        and (type(logprobs) is not _LogprobsView or logprobs.content is None)
        and (type(choices) is not list or len(choices) < 2)
    ):
        return derived  # no token fields: the defaults are what the record holds
    tokens = _tokens(resp)
    if tokens is not NO_TOKENS:
        derived.prompt_token_ids = tokens.prompt_token_ids
        derived.generation_token_ids = tokens.generation_token_ids
        derived.generation_log_probs = tokens.generation_log_probs
        derived.derivation_problems = tokens.problems or msgspec.UNSET
    return derived


def _tool_calls(raw_calls: object, legacy: object) -> list[ToolCall]:
    """The first choice's tool calls, then its legacy `function_call` (when present)."""
    tool_calls: list[ToolCall] = []
    for call in raw_calls if isinstance(raw_calls, list) else []:
        if not isinstance(call, _ToolCallView):
            continue
        function = call.function if isinstance(call.function, _FunctionView) else None
        tool_calls.append(
            ToolCall(
                call_id=nonempty(call.id),
                name=None if function is None else nonempty(function.name),
                arguments=None if function is None else tool_arguments(function.arguments),
            )
        )
    if isinstance(legacy, _FunctionView):
        tool_calls.append(
            ToolCall(
                call_id=None,
                name=nonempty(legacy.name),
                arguments=tool_arguments(legacy.arguments),
            )
        )
    return tool_calls


def _candidates(resp: _ResponseView, index: int, choice: _ChoiceView) -> Candidates:
    """Where the response put the token fields of choice `index` (docs/formats.md lists the shapes)."""
    found = Candidates()
    at = f"choices[{index}]"
    message = choice.message if isinstance(choice.message, _MessageView) else _NO_MESSAGE
    if resp.prompt_token_ids is not None:  # vLLM `return_token_ids`
        found.prompt.append(("prompt_token_ids", resp.prompt_token_ids))
    if message.prompt_token_ids is not None:  # NeMo Gym (the message NeMo RL takes back)
        found.prompt.append((f"{at}.message.prompt_token_ids", message.prompt_token_ids))
    if choice.token_ids is not None:  # vLLM `return_token_ids`
        found.generation.append((f"{at}.token_ids", choice.token_ids))
    if message.generation_token_ids is not None:  # NeMo Gym (the message NeMo RL takes back)
        found.generation.append(
            (f"{at}.message.generation_token_ids", message.generation_token_ids)
        )
    if message.generation_log_probs is not None:  # NeMo Gym (the message NeMo RL takes back)
        found.log_probs.append((f"{at}.message.generation_log_probs", message.generation_log_probs))
    logprobs = choice.logprobs
    content = logprobs.content if isinstance(logprobs, _LogprobsView) else None
    if content is not None:  # OpenAI and vLLM `logprobs: true`
        path = f"{at}.logprobs.content"
        if not isinstance(content, list):
            found.log_probs.append((path, content))
            return found
        entries = [e if isinstance(e, _TokenLogprobView) else _NO_LOGPROB for e in content]
        spelled = ids_from_logprobs(path, [e.token for e in entries])
        if spelled is not None:  # vLLM `return_tokens_as_token_ids`
            found.generation.append(spelled)
        found.log_probs.append((f"{path}[].logprob", [e.logprob for e in entries]))
    return found


def _carries_tokens(choice: _ChoiceView) -> bool:
    message = choice.message
    logprobs = choice.logprobs
    return (
        choice.token_ids is not None
        or (isinstance(logprobs, _LogprobsView) and logprobs.content is not None)
        or (
            isinstance(message, _MessageView)
            and (
                message.prompt_token_ids is not None
                or message.generation_token_ids is not None
                or message.generation_log_probs is not None
            )
        )
    )


def _tokens(resp: _ResponseView) -> TokenFacts:
    """The token fields of a single-choice completion; with several choices, none (and why)."""
    listed = resp.choices if isinstance(resp.choices, list) else []
    if resp.prompt_token_ids is None and not any(
        _carries_tokens(c) for c in listed if isinstance(c, _ChoiceView)
    ):
        return NO_TOKENS
    found = [_candidates(resp, i, c) for i, c in enumerate(listed) if isinstance(c, _ChoiceView)]
    if len(found) > 1 and any(not f.empty() for f in found):
        return ambiguous(
            f"{len(found)} choices: token fields are kept for single-choice responses only"
        )
    if found:
        return resolve(found[0])
    return resolve(Candidates(prompt=[("prompt_token_ids", resp.prompt_token_ids)]))
