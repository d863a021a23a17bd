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
  and in the raw texts `request_raw` / `response_raw` (a body that was not a JSON object,
  a stream's raw SSE text). `SECRET_KEY_PATTERNS` lists the shapes of common API keys and
  bearer tokens.

It fails closed. A raw text is replaced whole by the replacement, with a `redacted_raw`
gap on the line naming the field and the reason, when

- a path is rooted at its payload: a body kept as text (not a JSON object: `NaN`, a lone
  surrogate, invalid UTF-8; or cut at `capture_max_bytes`) has no structure a path can
  address, so the value the path names would otherwise be written as it came;
- it is a stream's raw SSE text (or a response body with a line starting `data:`, as a
  stream sent without its content-type is kept) and patterns are set: a secret that a
  stream splits across delta events is never whole in the text (the reassembled `response` joins the
  deltas, so patterns do find it there). Redacting the events instead would need to know,
  for every dialect, which fields are pieces of one string and in which order they join,
  and the raw text is only kept for debugging; the reassembled response stays;
- a pattern still matches the text once its JSON string escapes are decoded
  (`"sk-\\u0070roj-..."` is the key to every JSON reader, and no match in the text).

The payloads are copied and walked iteratively: a body nested as deep as the decoder
accepts is redacted, never dropped for a `RecursionError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from .contracts import CaptureLine, ObservationGap

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


def _copy(value: Any, text: Callable[[str], str] | None) -> Any:
    """A copy of a JSON value whose strings went through `text` (keys are kept as they are).

    Iterative, so a body nested as deep as the JSON decoder allows never overflows the
    stack: each new container is put in place at once and filled when its turn comes.
    """
    if isinstance(value, str):
        return value if text is None else text(value)
    if not isinstance(value, dict | list):
        return value
    top: Any = {} if isinstance(value, dict) else []
    work: list[tuple[Any, Any]] = [(value, top)]
    while work:
        source, target = work.pop()
        for key, item in source.items() if isinstance(source, dict) else enumerate(source):
            if isinstance(item, dict | list):
                new: Any = {} if isinstance(item, dict) else []
                work.append((item, new))
            elif text is not None and isinstance(item, str):
                new = text(item)
            else:
                new = item
            if isinstance(target, dict):
                target[key] = new
            else:
                target.append(new)
    return top


def _replace_at(box: list[Any], segments: tuple[str | int, ...], replacement: str) -> None:
    """Replace, in place, everything at `segments` under `box[0]` (a copy the caller owns).

    Iterative like `_copy`. `**` is applied as zero levels (the rest of the path, here)
    and then one level down keeping the `**`; the step down is queued before the rest, so
    it runs after everything the rest replaced, on what is left.
    """
    # (step down for `**`, container, key in it, segments still to apply)
    work: list[tuple[bool, Any, Any, tuple[str | int, ...]]] = [(False, box, 0, segments)]
    while work:
        down, parent, key, segs = work.pop()
        value = parent[key]
        if down:
            if isinstance(value, dict | list):
                keys = list(value) if isinstance(value, dict) else range(len(value))
                work.extend((False, value, k, segs) for k in keys)
            continue
        if not segs:
            parent[key] = replacement
            continue
        head, rest = segs[0], segs[1:]
        if head == "**":
            if not rest:
                parent[key] = replacement
                continue
            work.append((True, parent, key, segs))
            work.append((False, parent, key, rest))
        elif isinstance(value, dict):
            if head == "*":
                work.extend((False, value, k, rest) for k in value)
            elif isinstance(head, str) and head in value:
                work.append((False, value, head, rest))
        elif isinstance(value, list):
            if head == "*":
                work.extend((False, value, i, rest) for i in range(len(value)))
            elif isinstance(head, int) and head < len(value):
                work.append((False, value, head, rest))


_SSE_DATA = re.compile(r"^data:", re.MULTILINE)
"""A `data:` field at the start of a line: the text is (or holds) an event stream."""
_JSON_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


def _unescaped(text: str) -> str:
    """`text` with JSON string escapes decoded: how a JSON reader would see the strings in it."""
    if "\\" not in text:
        return text
    return _JSON_ESCAPE.sub(
        lambda m: chr(int(m.group(1), 16)) if m.group(1) else _SIMPLE_ESCAPES[m.group(2)], text
    )


class Redactor:
    """Replace values at JSON paths and matches of patterns in a line's payloads.

    `paths` are JSON paths rooted at `request` or `response` (see the module docstring);
    `patterns` are regular expressions (strings or compiled) searched in every string
    value of the payloads and in `request_raw` / `response_raw`. Matches and values are
    replaced with `replacement`. A raw text these cannot be trusted on is replaced whole
    (see the module docstring), with a `redacted_raw` gap saying why. The line passed in
    is never modified.
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
        gaps: list[ObservationGap] = []
        text = self._scrub if self.patterns else None
        for root in _ROOTS:
            segments = [s for r, s in self.paths if r == root]
            value = getattr(line, root)
            if value is not None and (segments or text is not None):
                box = [_copy(value, text)]
                for path in segments:
                    _replace_at(box, path, self.replacement)
                changes[root] = box[0]
            raw = getattr(line, f"{root}_raw")
            if isinstance(raw, str) and (segments or text is not None):
                reason = self._distrust(line, root, raw, bool(segments))
                scrubbed = raw if text is None or reason else text(raw)
                if reason is None and any(p.search(_unescaped(scrubbed)) for p in self.patterns):
                    reason = "a pattern matches it once its JSON escapes are decoded"
                if reason is not None:
                    scrubbed = self.replacement
                    gaps.append(ObservationGap(code="redacted_raw", detail=f"{root}_raw: {reason}"))
                changes[f"{root}_raw"] = scrubbed
        if gaps:
            changes["gaps"] = [*(line.gaps or ()), *gaps]
        return msgspec.structs.replace(line, **changes) if changes else line

    def _distrust(self, line: CaptureLine, root: str, raw: str, has_paths: bool) -> str | None:
        """Why the raw text of `root` cannot be redacted in place, None when it can."""
        if has_paths:
            return f"redaction paths on `{root}` cannot reach a body kept as text"
        # An event stream sent without its content-type is kept as a plain body.
        if root == "response" and (line.stream is True or _SSE_DATA.search(raw)):
            return "patterns cannot be trusted on a stream's raw text: a secret may be split across events"
        return None

    def _scrub(self, value: str) -> str:
        for pattern in self.patterns:
            value = pattern.sub(self.replacement, value)
        return value
