"""The operator's upstream URL: where calls go, what goes with them, and how it is named.

The URL may carry credentials: userinfo (`http://user:pw@gateway/v1`) and query parameters
(`?key=...`). They are the operator's: they go upstream with every call (userinfo as HTTP
Basic `Authorization`, as httpx would send it, the query merged into every request's), and
nowhere else. Messages and logs name the upstream by `display`: the URL without its
userinfo and with its query values hidden (`https://gw:8443/v1?key=***`), and otherwise
whole. `scrub` blanks the credentials out of text that could quote them (an error an
upstream or httpx raised).
"""

from __future__ import annotations

import base64
from urllib.parse import unquote

import httpx

from ._target import hide_query_values

__all__ = ["Upstream"]

_HIDDEN = "***"


def _display(url: httpx.URL) -> str:
    host = f"[{url.host}]" if ":" in url.host else url.host
    port = f":{url.port}" if url.port is not None else ""
    path = url.raw_path.split(b"?", 1)[0].decode("ascii", "replace")
    query = url.query.decode("ascii", "replace")
    hidden = f"?{hide_query_values(query)}" if query else ""
    return f"{url.scheme}://{host}{port}{'' if path == '/' and not hidden else path}{hidden}"


class Upstream:
    """A parsed upstream base URL (`http://vllm:8000`, `https://user:pw@gw/v1?key=K`).

    Raises `ValueError` for anything but an http(s) URL with a host; the message names the
    URL without its credentials.
    """

    __slots__ = ("authorization", "base_path", "display", "origin", "query", "_secrets", "_url")

    def __init__(self, url: str) -> None:
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, ValueError, TypeError) as exc:
            raise ValueError(
                f"upstream must be an http(s) URL, got one that does not parse ({type(exc).__name__})"
            ) from None
        if not parsed.host:
            # Without `scheme://` (`op:pw@vllm:8000`) the parser takes the start for a
            # scheme and the rest, password included, for a path: nothing of it is shown.
            raise ValueError(
                "upstream must be an http(s) URL with a host, such as http://localhost:8000; "
                "the value given has no scheme:// or no host (not shown: it may hold credentials)"
            )
        if parsed.scheme not in ("http", "https"):
            raise ValueError(f"upstream must be an http(s) URL, got {_display(parsed)!r}")
        self.origin = httpx.URL(scheme=parsed.scheme, host=parsed.host, port=parsed.port)
        """Scheme, host and port only: request URLs are built on it, free of credentials."""
        self.base_path: bytes = parsed.raw_path.split(b"?", 1)[0].rstrip(b"/")
        """The path every request path is appended to (raw, no trailing slash)."""
        self.query: bytes = parsed.query
        """The raw query of the upstream URL, merged into every request's."""
        self.display = _display(parsed)
        """How messages and logs name the upstream: no userinfo, query values hidden."""
        self.authorization: bytes | None = None
        """`Basic ...` from the URL's userinfo; it replaces a client's Authorization."""
        if parsed.userinfo:
            userpass = f"{parsed.username}:{parsed.password}".encode()
            self.authorization = b"Basic " + base64.b64encode(userpass)
        # The URL whole is shown as `display` wherever it is quoted; its parts are hidden.
        self._url = url
        secrets = {parsed.userinfo.decode("ascii", "replace"), self.query.decode("ascii")}
        secrets |= {parsed.username, parsed.password}
        secrets |= set(parsed.userinfo.decode("ascii", "replace").split(":", 1))
        for pair in self.query.decode("ascii").split("&"):
            value = pair.partition("=")[2]
            secrets |= {value, unquote(value.replace("+", " "))}
        # Longest first, so a secret that contains another is blanked whole.
        self._secrets = sorted((s for s in secrets if s), key=len, reverse=True)

    def scrub(self, text: str) -> str:
        """`text` with the upstream URL as `display`, and every other credential of it
        (userinfo, its parts, query values, decoded or not) replaced by `***`."""
        text = text.replace(self._url, self.display)
        for secret in self._secrets:
            text = text.replace(secret, _HIDDEN)
        return text
