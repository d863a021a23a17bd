"""How a call ended, as an `error_category`: pure functions of the call's facts, no I/O.

The categories and what each means are listed in docs/formats.md, 'Capture line'; they
are the ones NeMo Gym derives (docs/compatibility.md, 'Capture lines').
"""

from __future__ import annotations

import asyncio

from ..dialects import StreamResult

__all__ = [
    "CONNECTION_ERRORS",
    "classify_exception",
    "error_category_for_status",
    "stream_outcome",
]

CONNECTION_ERRORS = frozenset(
    {
        "ConnectError",
        "NetworkError",
        "RemoteProtocolError",
        "APIConnectionError",
        "ClientConnectionError",
        "ServerDisconnectedError",
    }
)
"""Class names (httpx, aiohttp, the SDKs) of exceptions that mean the connection failed."""


def error_category_for_status(status: int | None) -> str | None:
    """The `error_category` an HTTP status implies, None for success and 1xx-3xx."""
    if status is None or status < 400:
        return None
    if status in (408, 504):
        return "timeout"
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status < 500:
        return "client_error"
    return "upstream_error"


def classify_exception(exc: BaseException) -> tuple[str, int | None, bytes | None]:
    """(category, status the exception carries, body it carries) for an app exception.

    Duck-typed so no HTTP client library is imported: timeouts and connection failures
    are recognised by the standard classes and by the class names httpx, aiohttp and the
    SDKs use; `exc.response.status_code` / `exc.status_code` give the status, and an
    already-read `exc.response.content` the body.
    """
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled", None, None
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, TimeoutError) or any(
        n.endswith(("Timeout", "TimeoutError", "TimeoutException")) for n in names
    ):
        category = "timeout"
    elif isinstance(exc, ConnectionError) or names & CONNECTION_ERRORS:
        category = "connection"
    else:
        category = "exception"
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if not isinstance(status, int):
        status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or not 100 <= status <= 999:
        status = None
    body: bytes | None = None
    if response is not None:
        try:
            content = response.content
        except Exception:  # e.g. httpx.ResponseNotRead: the body was never read
            content = None
        if isinstance(content, bytes | bytearray) and content:
            body = bytes(content)
        elif isinstance(content, str) and content:
            body = content.encode("utf-8", "surrogatepass")
    return category, status, body


def stream_outcome(result: StreamResult | None, *, cut: bool) -> tuple[str | None, bool]:
    """(category a reassembled stream implies for a 2xx reply, whether it went wrong).

    `result` is None when the stream could not be reassembled at all (undecodable, or a
    failure inside the capture); `cut` is True when the capture stopped at the byte cap,
    so whether the stream ended well is unknown. A stream that went wrong keeps its raw
    text under the `on_failure` policy.
    """
    if result is None:
        return "capture_parse_error", True
    if cut:
        return None, True
    if result.terminal in ("error", "failed"):
        return "upstream_error", True
    if result.terminal == "incomplete":
        return "incomplete", True
    if result.terminal is None:
        return "stream_truncated", True
    if result.response is None:
        return "capture_parse_error", True
    return None, bool(result.dropped)
