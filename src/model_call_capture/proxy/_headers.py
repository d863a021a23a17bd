"""Which headers cross the proxy, in each direction, and how a message's length is framed."""

from __future__ import annotations

__all__ = [
    "HOP_BY_HOP_HEADERS",
    "declared_length",
    "forwarded_headers",
    "request_headers",
    "response_headers",
]

HOP_BY_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
"""Headers that describe one connection, not the message (RFC 9110 section 7.6.1)."""


def forwarded_headers(
    raw: list[tuple[bytes, bytes]], drop: frozenset[str]
) -> list[tuple[bytes, bytes]]:
    """Headers without hop-by-hop ones, those named in `Connection`, and `drop`."""
    named: set[str] = set()
    for key, value in raw:
        if key.lower() == b"connection":
            named.update(t.strip().lower() for t in value.decode("latin-1").split(","))
    return [
        (key, value)
        for key, value in raw
        if (k := key.decode("latin-1").lower()) not in HOP_BY_HOP_HEADERS
        and k not in named
        and k not in drop
    ]


def _has(raw: list[tuple[bytes, bytes]], name: bytes) -> bool:
    return any(key.lower() == name for key, _ in raw)


def declared_length(raw: list[tuple[bytes, bytes]]) -> int | None:
    """The one decimal `Content-Length` of a message without `Transfer-Encoding`, else None."""
    if _has(raw, b"transfer-encoding"):
        return None
    values = [value.strip() for key, value in raw if key.lower() == b"content-length"]
    if len(values) != 1 or not values[0].isdigit():
        return None
    return int(values[0])


def request_headers(
    raw: list[tuple[bytes, bytes]], authorization: bytes | None
) -> list[tuple[bytes, bytes]]:
    """The headers of a request as it goes upstream.

    `Host` is the upstream's (httpx sets it). The body streams through with the client's
    framing: a valid `Content-Length` goes as it came (httpx then sends no chunked
    encoding), anything else is dropped and httpx sends the body chunked. `authorization`
    (from the upstream URL's userinfo) replaces the client's.
    """
    drop = {"host", "content-length"}
    if authorization is not None:
        drop.add("authorization")
    headers = forwarded_headers(raw, frozenset(drop))
    length = declared_length(raw)
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    if authorization is not None:
        headers.append((b"authorization", authorization))
    return headers


def response_headers(raw: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The headers of an upstream reply as they go to the client.

    A reply with `Transfer-Encoding` is framed by it, never by a `Content-Length` it also
    carries (RFC 9112 section 6.3). The proxy forwards the body de-chunked, so such a
    length is stale: it is dropped and the server frames the body itself.
    """
    drop = frozenset({"content-length"}) if _has(raw, b"transfer-encoding") else frozenset()
    return forwarded_headers(raw, drop)
