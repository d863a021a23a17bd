"""The replies the proxy makes itself, in the error shape of the API the client called.

Anthropic's (`/v1/messages` and below) is `{"type": "error", "error": {"type", "message"}}`;
OpenAI's (every other path: chat, responses, models, ...) is `{"error": {"message", "type",
"param", "code"}}`. Each SDK raises its `APIStatusError` with the message either way, but
only reads `type` and `code` from its own shape.
"""

from __future__ import annotations

from .. import _codec
from .._asgi import Scope, Send
from ..dialects import messages
from ..rollout_ids import split_rollout_prefix

__all__ = ["send_error", "set_error_category"]


def _error_body(path: str, kind: str, message: str) -> bytes:
    path = split_rollout_prefix(path)[1]
    if path == messages.PATH or path.startswith(messages.PATH + "/"):
        return _codec.encode({"type": "error", "error": {"type": kind, "message": message}})
    error = {"message": message, "type": kind, "param": None, "code": kind}
    return _codec.encode({"error": error})


async def send_error(
    send: Send, path: str, status: int, kind: str, message: str, *, close: bool = False
) -> None:
    """A JSON error reply to a request for `path`, in its API's shape (module docstring).

    `close` ends the connection after it: the client may still be sending a body the
    proxy will not read, and the server would otherwise read it to its end.
    """
    body = _error_body(path, kind, message)
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
