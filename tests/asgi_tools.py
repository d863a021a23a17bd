"""A scripted ASGI app for the fuzz tests, and the way they cut bodies into pieces.

`tests/middleware/test_hostile_fuzz.py` and `tests/reliability/test_fuzz.py` drive the
middleware with apps that read the whole request, then send a generated response message
by message, and may raise part way: that app lives here, once.
"""

from __future__ import annotations

from typing import Any

Response = tuple[int, list[tuple[bytes, bytes]], list[bytes]]
"""A generated response: status, headers, the body's chunks (one body message each)."""


class AppError(Exception):
    """What a scripted app raises part way through, on purpose."""


def split(body: bytes, cuts: list[int]) -> list[bytes]:
    """`body` cut at the positions `cuts` (taken modulo its length, repeats ignored)."""
    points = sorted({c % (len(body) + 1) for c in cuts})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


def scripted_app(
    response: Response, raise_at: int | None, received: list[bytes], sent: list[dict[str, Any]]
) -> Any:
    """An app that reads the whole request (its body messages into `received`), then sends
    `response` (each message into `sent` as it goes), raising `AppError` instead of its
    message number `raise_at` (0 is the start)."""
    status, headers, chunks = response

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            received.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        messages = [{"type": "http.response.start", "status": status, "headers": headers}]
        messages += [
            {"type": "http.response.body", "body": c, "more_body": i < len(chunks) - 1}
            for i, c in enumerate(chunks)
        ]
        for n, message in enumerate(messages):
            if n == raise_at:
                raise AppError("the app failed part way")
            sent.append(message)
            await send(message)

    return app
