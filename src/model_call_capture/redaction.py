"""Redaction: remove secrets from a capture line before it is written.

A redaction is any callable `(CaptureLine) -> CaptureLine`; the capture middleware applies
it to every line just before the line is appended (`CaptureMiddleware(..., redact=...)`).
If it raises, the line is not written at all (the rollout is marked incomplete): a
redaction that failed must never let the unredacted payload reach the disk.

`Redactor` is the ready-made one. It replaces

- the values at JSON paths of the parsed payloads, e.g. `request.metadata.api_key`,
  `request.messages[*].content`, `request.**.password` (`*` is any one key or index,
  `**` any number of levels, including none); a path starts at `request` or `response`;
- every match of a regular expression in every string of the payloads (values, not keys),
  and in the raw texts `request_raw` / `response_raw`, which JSON paths cannot address
  (a malformed request body, a stream's raw SSE text).

The raw texts are why patterns matter: a secret in a request that was not valid JSON, or
in a stream's raw body, is reachable only by a pattern. `SECRET_KEY_PATTERNS` lists the
shapes of common API keys and bearer tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from .contracts import CaptureLine

__all__ = ["REDACTED", "SECRET_KEY_PATTERNS", "Redaction", "Redactor"]

Redaction = Callable[[CaptureLine], CaptureLine]
"""A hook that returns the line to write (a changed copy, or the line itself)."""

REDACTED = "[REDACTED]"
"""The default replacement of a redacted value or match."""

SECRET_KEY_PATTERNS: tuple[str, ...] = (
    r"sk-[A-Za-z0-9_-]{16,}",  # OpenAI (sk-..., sk-proj-...) and Anthropic (sk-ant-...) keys
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{8,}=*",  # bearer tokens pasted into a payload
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",  # GitHub tokens
)
"""Regular expressions for common API keys and tokens; pass them as `patterns`."""

_ROOTS = ("request", "response")
_SEGMENT = re.compile(r"\[(\*|\d+)\]|\.?(\*\*|\*|[^.\[\]]+)")


def _parse_path(path: str) -> tuple[str, tuple[str | int, ...]]:
    text = path[2:] if path.startswith("$.") else path
    segments: list[str | int] = []
    position = 0
    while position < len(text):
        match = _SEGMENT.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"invalid redaction path {path!r} at character {position}")
        index, key = match.groups()
        if index is not None:
            segments.append("*" if index == "*" else int(index))
        else:
            segments.append(key)
        position = match.end()
    if not segments or segments[0] not in _ROOTS:
        raise ValueError(f"a redaction path starts at one of {list(_ROOTS)}: {path!r}")
    return str(segments[0]), tuple(segments[1:])


def _redact_path(value: Any, segments: tuple[str | int, ...], replacement: str) -> Any:
    """`value` with everything at `segments` replaced; containers are copied, never mutated."""
    if not segments:
        return replacement
    head, rest = segments[0], segments[1:]
    if head == "**":
        # Zero levels (apply the rest here), then one more level keeping the `**`.
        value = _redact_path(value, rest, replacement) if rest else replacement
        if isinstance(value, dict):
            return {k: _redact_path(v, segments, replacement) for k, v in value.items()}
        if isinstance(value, list):
            return [_redact_path(v, segments, replacement) for v in value]
        return value
    if isinstance(value, dict):
        if head == "*":
            return {k: _redact_path(v, rest, replacement) for k, v in value.items()}
        if isinstance(head, str) and head in value:
            return {**value, head: _redact_path(value[head], rest, replacement)}
        return value
    if isinstance(value, list):
        if head == "*":
            return [_redact_path(v, rest, replacement) for v in value]
        if isinstance(head, int) and head < len(value):
            copy = list(value)
            copy[head] = _redact_path(value[head], rest, replacement)
            return copy
    return value


class Redactor:
    """Replace values at JSON paths and matches of patterns in a line's payloads.

    `paths` are JSON paths rooted at `request` or `response` (see the module docstring);
    `patterns` are regular expressions (strings or compiled) searched in every string
    value of the payloads and in `request_raw` / `response_raw`. Matches and values are
    replaced with `replacement`. The line passed in is never modified.
    """

    def __init__(
        self,
        paths: Iterable[str] = (),
        patterns: Iterable[str | re.Pattern[str]] = (),
        *,
        replacement: str = REDACTED,
    ) -> None:
        self.paths = [_parse_path(p) for p in paths]
        """Parsed paths: (root field, segments)."""
        self.patterns = [p if isinstance(p, re.Pattern) else re.compile(p) for p in patterns]
        """Compiled patterns, applied in order."""
        self.replacement = replacement
        """What a redacted value or match becomes."""
        for pattern in self.patterns:
            if pattern.search("") is not None:
                raise ValueError(f"redaction pattern {pattern.pattern!r} matches the empty string")

    def __call__(self, line: CaptureLine) -> CaptureLine:
        """The line with its secrets replaced (a copy when anything changed)."""
        changes: dict[str, Any] = {}
        for root, segments in self.paths:
            value = changes.get(root, getattr(line, root))
            if value is not None:
                changes[root] = _redact_path(value, segments, self.replacement)
        if self.patterns:
            for name in ("request", "response", "request_raw", "response_raw"):
                value = changes.get(name, getattr(line, name))
                if value is not None and value is not msgspec.UNSET:
                    changes[name] = self._scrub(value)
        return msgspec.structs.replace(line, **changes) if changes else line

    def _scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            for pattern in self.patterns:
                value = pattern.sub(self.replacement, value)
            return value
        if isinstance(value, dict):
            return {k: self._scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._scrub(v) for v in value]
        return value
