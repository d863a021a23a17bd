"""Completions record derivation: the facts of a `ModelCallRecord` from its payloads.

`derive` decodes the response into small view Structs that declare only the members it
reads (see `dialects/base.py`, "views for derivation"). The id, model, finish reason and
usage are derived as chat's (`chat._derive.choices_derived`: `prompt_tokens` counts cached
tokens inside); a completion has no tool calls and no reasoning.

Token fields (`dialects._tokens`; docs/formats.md, "Token ids and log-probs"): vLLM's
`return_token_ids` puts them on each choice (`choices[i].prompt_token_ids`,
`choices[i].token_ids`), and the legacy log-probs are parallel lists
(`logprobs.token_logprobs`, `logprobs.tokens`, the latter spelled `token_id:N` under
vLLM's `return_tokens_as_token_ids`). With `echo`, those lists cover the prompt's tokens
first (the first one without a log-prob), then the generated ones, while `token_ids`
holds the generated ids only: the generated part is what follows the prompt's tokens,
counted by the choice's `prompt_token_ids`, else by `usage.prompt_tokens` (a single
choice's prompt).
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._tokens import (
    LENGTHS,
    Candidates,
    TokenFacts,
    ambiguous,
    ids_from_logprobs,
    resolve,
)
from ..base import Derived, NotList, NotObject, Payload, RequestView, decode_view, request_model
from ..chat._derive import UsageView, choices_derived, nonempty

__all__ = ["derive"]


class _LogprobsView(msgspec.Struct, gc=False):
    tokens: Any = None
    token_logprobs: Any = None


class _ChoiceView(msgspec.Struct, gc=False):
    finish_reason: Any = None
    prompt_token_ids: Any = None
    token_ids: Any = None
    logprobs: _LogprobsView | NotObject = None


class _ResponseView(msgspec.Struct, gc=False):
    """The members of a `text_completion` that `derive` reads; the rest is skipped unread."""

    id: Any = None
    model: Any = None
    usage: UsageView | NotObject = None
    choices: list[_ChoiceView | NotObject] | NotList = None


_response_view = msgspec.json.Decoder(_ResponseView)
_request_view = msgspec.json.Decoder(RequestView)
_NO_CHOICE = _ChoiceView()


def derive(request: Payload, response: Payload) -> Derived:
    """Derive record facts from a request and a `text_completion` (possibly null); never raises.

    finish_reason describes the first choice; with `n > 1` or several prompts the other
    choices stay in the response. The token fields are those of a single-choice response.
    """
    try:
        return _derive(request, decode_view(response, _response_view) or _ResponseView())
    except Exception:  # a malformed body must still give a record
        return Derived(model=nonempty(request_model(request)))


def _derive(request: Payload, resp: _ResponseView) -> Derived:
    choices = resp.choices if type(resp.choices) is list else []
    first = choices[0] if choices and type(choices[0]) is _ChoiceView else _NO_CHOICE
    derived = choices_derived(request, resp.id, resp.model, first.finish_reason, resp.usage)
    carriers = [c for c in choices if type(c) is _ChoiceView and _carries_tokens(c)]
    if not carriers:
        return derived  # no token fields: the defaults are what the record holds
    if len(choices) > 1:
        tokens = ambiguous(
            f"{len(choices)} choices: token fields are kept for single-choice responses only"
        )
    else:
        tokens = _tokens(carriers[0], _echoed(request), derived.tokens_in)
    derived.prompt_token_ids = tokens.prompt_token_ids
    derived.generation_token_ids = tokens.generation_token_ids
    derived.generation_log_probs = tokens.generation_log_probs
    derived.derivation_problems = tokens.problems or msgspec.UNSET
    return derived


def _carries_tokens(choice: _ChoiceView) -> bool:
    logprobs = choice.logprobs
    return (
        choice.prompt_token_ids is not None
        or choice.token_ids is not None
        or (
            type(logprobs) is _LogprobsView
            and (logprobs.token_logprobs is not None or logprobs.tokens is not None)
        )
    )


def _echoed(request: Payload) -> bool:
    """Whether the request asked for `echo` (the log-probs then start with the prompt's)."""
    view = decode_view(request, _request_view)
    return view is not None and view.echo is True


def _tokens(choice: _ChoiceView, echo: bool, prompt_tokens: int | None) -> TokenFacts:
    """The token fields of the one choice (see the module docstring)."""
    found = Candidates()
    at = "choices[0]"
    if choice.prompt_token_ids is not None:
        found.prompt.append((f"{at}.prompt_token_ids", choice.prompt_token_ids))
    if choice.token_ids is not None:
        found.generation.append((f"{at}.token_ids", choice.token_ids))
    logprobs = choice.logprobs
    if type(logprobs) is not _LogprobsView:
        return resolve(found)
    skip = 0
    if echo:
        prompt = choice.prompt_token_ids
        counted = len(prompt) if isinstance(prompt, list) else prompt_tokens
        if counted is None:
            return _unsplit(
                found,
                f"{at}.logprobs: with echo the prompt's tokens come first, "
                "and their number is not known",
            )
        skip = counted
    path = f"{at}.logprobs"
    suffix = f"[{skip}:]" if skip else ""
    tokens = logprobs.tokens
    if isinstance(tokens, list):
        spelled = ids_from_logprobs(path, tokens[skip:])
        if spelled is not None:  # vLLM `return_tokens_as_token_ids`
            found.generation.append((f"{path}.tokens{suffix}", spelled[1]))
    values = logprobs.token_logprobs
    if isinstance(values, list):
        if len(values) < skip:
            return _unsplit(
                found,
                f"{path}.token_logprobs has {len(values)} entries, fewer than the "
                f"{skip} prompt tokens echoed before the generated ones",
            )
        found.log_probs.append((f"{path}.token_logprobs{suffix}", values[skip:]))
    elif values is not None:
        found.log_probs.append((f"{path}.token_logprobs", values))
    return resolve(found)


def _unsplit(found: Candidates, detail: str) -> TokenFacts:
    """The fields but the log-probs, which cannot be told from the echoed prompt's."""
    facts = resolve(found)
    facts.generation_log_probs = None
    facts.problem(LENGTHS, detail)
    return facts
