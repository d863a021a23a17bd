"""Redirects keep the rollout prefix: a 3xx `Location` on the server gets `/ng-rollout/<id>` back.

The middleware strips `/ng-rollout/<rollout_id>` before the app routes, so an app that
redirects (a trailing slash, a moved route) names a path without it, and a client that
follows the redirect would leave the rollout. As NeMo Gym 0.7.0 does, the `Location` of a
3xx reply to a prefixed request gets the prefix put in front of its path when it points
at this server:

- a root-relative path (`/v1/responses/`): `/ng-rollout/<id>/v1/responses/` (after
  `root_path`, when the path starts with it, since that is where the prefix was found);
- an absolute `http`/`https` URL of the request's own origin (scheme, host and port of
  the request, default ports made explicit): the same, inside the URL.

Left alone, byte for byte: another origin; a network-path reference (`//host/...`); a
relative reference without a leading slash (`next`, `?page=2`, `../x`), which the client
resolves against the prefixed URL it asked for; a path already under `/ng-rollout/`;
and anything that is not plain visible ASCII of at most `MAX_LOCATION_BYTES` (CR, LF,
spaces, control or non-ASCII bytes, `/\\host`): such a value is the app's to answer for,
and rewriting it could only make it worse. Pure functions: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._asgi import Message
from ..rollout_ids import ROLLOUT_PREFIX

__all__ = ["MAX_LOCATION_BYTES", "RedirectPrefix"]

MAX_LOCATION_BYTES = 8192
"""Longest `Location` value rewritten; a longer one is forwarded as it is."""

_PLAIN = re.compile(rb"[\x21-\x7e]+\Z")
_ABSOLUTE = re.compile(rb"(https?)://([^/?#]*)(.*)\Z", re.IGNORECASE | re.DOTALL)
_DEFAULT_PORTS = {b"http": b"80", b"https": b"443"}
_PREFIX = ROLLOUT_PREFIX.encode("ascii")
_AFTER_ROOT = (b"", b"/", b"?", b"#")


class RedirectPrefix:
    """The rewriting of `Location` headers for one prefixed request (see the module docstring)."""

    __slots__ = ("rollout_id", "scope")

    def __init__(self, scope: Mapping[str, Any], rollout_id: str) -> None:
        # Built for every prefixed request: the work waits for a redirect to need it.
        self.scope = scope
        """The request's scope (its `root_path`, `Host` header and scheme)."""
        self.rollout_id = rollout_id
        """A valid rollout id (ASCII: it is written into a header)."""

    @property
    def prefix(self) -> bytes:
        """`/ng-rollout/<id>`, to put in front of a path."""
        return _PREFIX + self.rollout_id.encode("ascii")

    @property
    def root(self) -> bytes:
        """The app's `root_path`, after which the prefix sits."""
        root = self.scope.get("root_path") or ""
        return root.encode("utf-8") if isinstance(root, str) else b""

    @property
    def origin(self) -> tuple[bytes, bytes, bytes] | None:
        """(scheme, host, port) of the request, lower case; None when unknown."""
        return _request_origin(self.scope)

    def start_message(self, message: Message) -> Message:
        """The `http.response.start` message with its `Location` rewritten (a copy), or itself.

        Never raises: headers the server would refuse are the app's to answer for.
        """
        try:
            return self._start_message(message)
        except Exception:
            return message

    def _start_message(self, message: Message) -> Message:
        status = message.get("status")
        headers = message.get("headers")
        if type(status) is not int or not 300 <= status <= 399 or not headers:
            return message
        changed = False
        out = []
        for header in headers:
            name, value = header
            if isinstance(name, bytes) and name.lower() == b"location" and isinstance(value, bytes):
                new = self.location(value)
                if new is not None:
                    header = (name, new)
                    changed = True
            out.append(header)
        return {**message, "headers": out} if changed else message

    def location(self, value: bytes) -> bytes | None:
        """`value` with the prefix put in front of its path, or None to leave it as it is."""
        if len(value) > MAX_LOCATION_BYTES or not _PLAIN.match(value):
            return None
        if value.startswith(b"/"):
            if value[1:2] in (b"/", b"\\"):  # `//host`, `/\host`: another host, or a trick
                return None
            return self._path(value)
        match = _ABSOLUTE.match(value)
        if match is None or self.origin is None:
            return None
        scheme, authority, rest = match.groups()
        if _origin(scheme, authority) != self.origin:
            return None
        if not rest.startswith(b"/"):  # `http://host`, `http://host?q`: the path is `/`
            rest = b"/" + rest
        path = self._path(rest)
        if path is None:
            return None
        return value[: match.start(3)] + path

    def _path(self, path: bytes) -> bytes | None:
        root = self.root
        head, tail = b"", path
        if root and path.startswith(root) and path[len(root) : len(root) + 1] in _AFTER_ROOT:
            head, tail = root, path[len(root) :]
        if tail.startswith(_PREFIX):  # already prefixed (by the app, for this or another id)
            return None
        if not tail.startswith(b"/"):
            tail = b"/" + tail
        return head + self.prefix + tail


def _request_origin(scope: Mapping[str, Any]) -> tuple[bytes, bytes, bytes] | None:
    scheme = scope.get("scheme") or "http"
    if scheme not in ("http", "https"):
        return None
    host: bytes | None = None
    for name, value in scope.get("headers") or ():
        if isinstance(name, bytes) and name.lower() == b"host" and isinstance(value, bytes):
            if host is not None:  # two Host headers: no origin to trust
                return None
            host = value
    if host is None:
        server = scope.get("server")
        if not server or not isinstance(server[0], str):
            return None
        host = f"{server[0]}:{server[1]}".encode("ascii", "replace")
    return _origin(scheme.encode("ascii"), host)


def _origin(scheme: bytes, authority: bytes) -> tuple[bytes, bytes, bytes] | None:
    """(scheme, host, port) lower case with the default port made explicit; None if odd."""
    scheme = scheme.lower()
    if b"@" in authority or not authority:
        return None  # userinfo in a redirect target is never this server
    if authority.startswith(b"["):  # IPv6 literal
        end = authority.find(b"]")
        if end < 0:
            return None
        host, rest = authority[: end + 1], authority[end + 1 :]
        port = rest[1:] if rest.startswith(b":") else (None if rest else b"")
    else:
        host, _, port = authority.partition(b":")
    if port is None or (port and not port.isdigit()):
        return None
    return scheme, host.lower(), port.lstrip(b"0") or _DEFAULT_PORTS.get(scheme, b"")
