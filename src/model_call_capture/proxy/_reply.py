"""The replies the proxy makes itself, in the error shape OpenAI and Anthropic clients parse."""

from __future__ import annotations

from .. import _codec
from .._asgi import Scope, Send

__all__ = ["send_error", "set_error_category"]


async def send_error(
    send: Send, status: int, kind: str, message: str, *, close: bool = False
) -> None:
    """A JSON error reply (an `APIStatusError` in both SDKs).

    `close` ends the connection after it: the client may still be sending a body the
    proxy will not read, and the server would otherwise read it to its end.
    """
    body = _codec.encode({"type": "error", "error": {"type": kind, "message": message}})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def set_error_category(scope: Scope, category: str) -> None:
    """Name the failure on the capture record, when a capture middleware is listening."""
    context = (scope.get("extensions") or {}).get("model_call_capture")
    if context is not None:
        context.error_category = category
