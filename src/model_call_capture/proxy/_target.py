"""Request targets: which upstream path and query a client may reach (pure, no I/O).

A request for `/v1/x` goes to `<base>/v1/x` and nowhere else. A target is normalised before
anything routes, captures or forwards it:

- origin-form (`/v1/models`) is kept; absolute-form (`GET http://host/v1/models`, which an
  HTTP/1.1 server must accept, RFC 9112 section 3.2.2) is taken by its path; asterisk-form
  (`OPTIONS *`), authority-form, a fragment (`#`, which a client never sends) and anything
  else that is not a path are refused;
- dot segments (`.` and `..`, also percent-encoded: `%2e%2E`) are resolved as RFC 3986
  section 5.2.4 says; a `..` that would climb above the root is refused, and under the
  `/ng-rollout/<id>` prefix the root is the end of the prefix (it stands for the base);
- a segment that hides a dot segment behind an encoded slash or backslash (`..%2f..`) is
  refused too: an upstream that decodes `%2F` before it routes would climb with it.

The query of the operator's upstream URL is merged into every request's (`merge_query`).
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from ..rollout_ids import ROLLOUT_PREFIX

__all__ = [
    "BadTarget",
    "hide_query_values",
    "merge_query",
    "origin_path",
    "resolve_dot_segments",
    "resolve_request_path",
]


class BadTarget(ValueError):
    """A request target the proxy refuses with 400; the message tells the client why."""


_SCHEME = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*://")
_DOT_SEGMENTS = frozenset({b".", b".."})
_SEPARATORS = re.compile(rb"[/\\]")
_PREFIX = ROLLOUT_PREFIX.encode("ascii")


def origin_path(raw_path: bytes, query: bytes) -> bytes:
    """The path of a request target, as the server split it from its query.

    Absolute-form gives its path (`http://h/v1/x` -> `/v1/x`, `http://h` -> `/`); every
    other form that is not a path raises `BadTarget`.
    """
    if b"#" in raw_path or b"#" in query:
        raise BadTarget("a request target cannot carry a fragment ('#')")
    if raw_path == b"*":
        raise BadTarget("the asterisk-form target ('OPTIONS *') is not forwarded")
    absolute = _SCHEME.match(raw_path)
    if absolute is not None:
        scheme = raw_path[: absolute.end() - 3].lower()
        if scheme not in (b"http", b"https"):
            raise BadTarget("an absolute-form target must be an http(s) URL")
        rest = raw_path[absolute.end() :]
        slash = rest.find(b"/")
        raw_path = rest[slash:] if slash >= 0 else b"/"
    if not raw_path.startswith(b"/"):
        raise BadTarget("a request target must be a path such as /v1/chat/completions")
    return raw_path


def resolve_dot_segments(raw_path: bytes) -> bytes:
    """`raw_path` (starting with `/`) without dot segments, other segments byte for byte.

    Raises `BadTarget` when a `..` would climb above `/`, or a segment decodes to a path
    that holds a dot segment (`..%2F..`).
    """
    segments = raw_path.split(b"/")[1:]
    out: list[bytes] = []
    last = len(segments) - 1
    for i, segment in enumerate(segments):
        decoded = unquote_to_bytes(segment) if b"%" in segment else segment
        if decoded not in _DOT_SEGMENTS:
            if (b"/" in decoded or b"\\" in decoded) and any(
                part in _DOT_SEGMENTS for part in _SEPARATORS.split(decoded)
            ):
                raise BadTarget("a path segment hides a dot segment behind an encoded slash")
            out.append(segment)
            continue
        if decoded == b"..":
            if not out:
                raise BadTarget("the path climbs above the upstream base path ('..')")
            out.pop()
        if i == last:  # `/a/b/..` is `/a/`: the slash stays
            out.append(b"")
    return b"/" + b"/".join(out)


def resolve_request_path(raw_path: bytes) -> bytes:
    """The path with its dot segments resolved; after `/ng-rollout/<id>` on its own.

    The rollout prefix stands for the upstream base, so a `..` may not climb out of what
    follows it (`/ng-rollout/x/v1/../../other` is refused, as `/v1/../../other` is).
    """
    if not raw_path.startswith(_PREFIX):
        return resolve_dot_segments(raw_path)
    rollout_id, slash, rest = raw_path[len(_PREFIX) :].partition(b"/")
    if unquote_to_bytes(rollout_id) in _DOT_SEGMENTS:
        raise BadTarget("the rollout id cannot be a dot segment")
    if not slash:
        return raw_path
    return _PREFIX + rollout_id + resolve_dot_segments(b"/" + rest)


def _name(pair: bytes) -> bytes:
    return unquote_to_bytes(pair.partition(b"=")[0].replace(b"+", b" "))


def merge_query(operator: bytes, request: bytes) -> bytes:
    """The query sent upstream: the operator's pairs first, then the request's.

    A request pair whose name the operator's query sets is dropped, so a client can neither
    override nor duplicate (parameter pollution) what the operator put in the upstream URL.
    Without an operator query the request's query goes as it came, byte for byte.
    """
    if not operator:
        return request
    own = [pair for pair in operator.split(b"&") if pair]
    taken = {_name(pair) for pair in own}
    rest = [pair for pair in request.split(b"&") if pair and _name(pair) not in taken]
    return b"&".join(own + rest)


def hide_query_values(query: str) -> str:
    """`key=K&api-version=2&K2` as `key=***&api-version=***&***`: the names stay (they say
    what was sent), every value is hidden, and a member without `=` may be a key itself."""
    return "&".join(
        name + "=***" if eq else "***"
        for name, eq, _ in (member.partition("=") for member in query.split("&"))
    )
