"""Token ids and log-probs of a response, checked strictly: what the chat and Responses dialects share.

A server returns the prompt and generated token ids of a call, and the log-probability of
each generated token, in one of a few shapes (docs/formats.md, "Token ids and
log-probs"). Each dialect finds the candidate values of each field in its response
(`Candidates`); `resolve` checks them and decides:

- an id is a plain JSON integer in 0 .. 2^31-1 (a bool, a float such as `3.0` or a string
  is not an id), or, in a log-probs entry only, the string `token_id:N` that vLLM's
  `return_tokens_as_token_ids` writes; a log-prob is a JSON number (not a bool);
- nothing is coerced: a field with one bad value is null, and the record says why in a
  `derivation_problems` entry (`ObservationGap`: a code and a detail naming the path);
- two sources of one field (vLLM's `token_ids` and its `token_id:N` log-probs) must agree;
- the generated ids and their log-probs must have the same length.

Null means the server did not return the field. No I/O; never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..contracts import ObservationGap

__all__ = [
    "AMBIGUOUS",
    "DISAGREE",
    "INVALID_IDS",
    "INVALID_LOG_PROBS",
    "LENGTHS",
    "NO_TOKENS",
    "Candidates",
    "TokenFacts",
    "ambiguous",
    "ids_from_logprobs",
    "resolve",
]

INVALID_IDS = "token_ids_invalid"
"""A token-id field holds a value that is not a list of integer ids."""
INVALID_LOG_PROBS = "log_probs_invalid"
"""A log-prob field holds a value that is not a list of numbers."""
DISAGREE = "token_sources_disagree"
"""Two sources of one field (e.g. `token_ids` and `token_id:N` log-probs) give different values."""
LENGTHS = "token_lengths_disagree"
"""The generated ids and their log-probs have different lengths."""
AMBIGUOUS = "token_ids_ambiguous"
"""Several choices (or output items) carry token fields: which call they describe is unknown."""

_MAX_ID = 2**31 - 1
_MAX_LOG_PROB = 2**1023  # a JSON integer decodes to any size; past this, no float holds it
_TOKEN_ID = re.compile(r"token_id:(0|[1-9][0-9]{0,9})")
_MAX_DETAIL = 200


def _kind(value: object) -> str:
    """The JSON name of a value's type, for a problem's detail."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


@dataclass(slots=True)
class TokenFacts:
    """The token fields of one call, as `ModelCallRecord` holds them, and the problems found."""

    prompt_token_ids: list[int] | None = None
    generation_token_ids: list[int] | None = None
    generation_log_probs: list[float] | None = None
    problems: list[ObservationGap] = field(default_factory=list)

    def problem(self, code: str, detail: str) -> None:
        """Record one problem (the detail is cut to a bounded length)."""
        self.problems.append(ObservationGap(code=code, detail=detail[:_MAX_DETAIL]))


NO_TOKENS = TokenFacts()
"""The facts of a response without any token field (shared: never add a problem to it)."""


@dataclass(slots=True)
class Candidates:
    """Where a response put each token field: (path, raw value) pairs, in order of preference."""

    prompt: list[tuple[str, Any]] = field(default_factory=list)
    generation: list[tuple[str, Any]] = field(default_factory=list)
    log_probs: list[tuple[str, Any]] = field(default_factory=list)

    def empty(self) -> bool:
        """True when the response carried no token field at all."""
        return not (self.prompt or self.generation or self.log_probs)


def _ids(path: str, value: Any, facts: TokenFacts) -> list[int] | None:
    if not isinstance(value, list):
        facts.problem(INVALID_IDS, f"{path}: {_kind(value)}, not a list of ids")
        return None
    for index, item in enumerate(value):
        if type(item) is not int or not 0 <= item <= _MAX_ID:
            what = _kind(item) if type(item) is not int else "out of range (0 .. 2^31-1)"
            facts.problem(INVALID_IDS, f"{path}[{index}]: {what}, not a token id")
            return None
    return value


def _log_probs(path: str, value: Any, facts: TokenFacts) -> list[float] | None:
    if not isinstance(value, list):
        facts.problem(INVALID_LOG_PROBS, f"{path}: {_kind(value)}, not a list of numbers")
        return None
    out: list[float] = []
    for index, item in enumerate(value):
        if type(item) is float:
            out.append(item)
        elif type(item) is int and -_MAX_LOG_PROB <= item <= _MAX_LOG_PROB:
            out.append(float(item))
        else:
            what = "an integer beyond a float" if type(item) is int else _kind(item)
            facts.problem(INVALID_LOG_PROBS, f"{path}[{index}]: {what}, not a number")
            return None
    return out


def ids_from_logprobs(path: str, tokens: list[Any]) -> tuple[str, Any] | None:
    """The generated ids spelled as vLLM's `token_id:N` log-prob tokens, as a candidate.

    None when no token has that form (OpenAI's text tokens: log-probs without ids). When
    some do and some do not, the others stay in the list as they are, so that `resolve`
    reports the first of them.
    """
    matches = [_TOKEN_ID.fullmatch(t) if isinstance(t, str) else None for t in tokens]
    if not any(matches):
        return None
    ids = [tokens[i] if m is None else int(m.group(1)) for i, m in enumerate(matches)]
    return f"{path}[].token", ids


def _pick(
    candidates: list[tuple[str, Any]], check: Any, facts: TokenFacts, name: str
) -> list[Any] | None:
    """The one value of a field: every candidate valid, all equal; else None and a problem."""
    chosen: list[Any] | None = None
    chosen_path = ""
    for path, raw in candidates:
        value = check(path, raw, facts)
        if value is None:
            return None
        if chosen is None:
            chosen, chosen_path = value, path
        elif value != chosen:
            facts.problem(DISAGREE, f"{name}: {chosen_path} and {path} differ")
            return None
    return chosen


def resolve(candidates: Candidates) -> TokenFacts:
    """The token fields of a single-choice response from their candidates (see the module docstring)."""
    facts = TokenFacts()
    if candidates.empty():
        return facts
    facts.prompt_token_ids = _pick(candidates.prompt, _ids, facts, "prompt_token_ids")
    generation = _pick(candidates.generation, _ids, facts, "generation_token_ids")
    log_probs = _pick(candidates.log_probs, _log_probs, facts, "generation_log_probs")
    if generation is not None and log_probs is not None and len(generation) != len(log_probs):
        facts.problem(
            LENGTHS,
            f"generation_token_ids has {len(generation)}, generation_log_probs {len(log_probs)}",
        )
        generation = log_probs = None
    facts.generation_token_ids = generation
    facts.generation_log_probs = log_probs
    return facts


def ambiguous(detail: str) -> TokenFacts:
    """No token fields, and the problem that several choices or items carry them."""
    facts = TokenFacts()
    facts.problem(AMBIGUOUS, detail)
    return facts
