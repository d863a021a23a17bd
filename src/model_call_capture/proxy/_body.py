"""The request body, read from the client as the upstream takes it: never whole in memory.

`RequestBody` is the `content` of the upstream request: httpx pulls one chunk at a time
from it while it writes to the upstream, so a large upload costs the proxy one chunk plus
the server's read buffer, not the body. Reading it enforces the client's bounds: past
`limit` bytes it raises `BodyTooLarge` (413), after `idle_timeout_s` without a chunk
`BodyTimeout` (408), a body that does not match its `Content-Length` `BodyMismatch` (400;
a server checks it too, but the upstream connection must never be asked to send a body
its own head contradicts), and a client that leaves raises `ClientGone`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from .._asgi import Receive

__all__ = [
    "BodyError",
    "BodyMismatch",
    "BodyTimeout",
    "BodyTooLarge",
    "ClientGone",
    "RequestBody",
]


class BodyError(Exception):
    """Reading the request body failed; the subclass says how."""


class BodyTooLarge(BodyError):
    """The body is larger than the proxy accepts."""


class BodyTimeout(BodyError):
    """The client stopped sending its body."""


class BodyMismatch(BodyError):
    """The body is longer or shorter than its `Content-Length` says."""


class ClientGone(BodyError):
    """The client disconnected before its body ended."""


class RequestBody:
    """The body of one request, read from `receive` chunk by chunk, once.

    `done` is set when reading is over (the last chunk was read, or reading failed), so
    a watcher may take `receive` over from then on.
    """

    def __init__(
        self,
        receive: Receive,
        *,
        limit: int,
        idle_timeout_s: float,
        declared: int | None = None,
    ) -> None:
        self._receive = receive
        self.limit = limit
        self.declared = declared
        """The request's `Content-Length`, when it has one."""
        self.idle_timeout_s = idle_timeout_s
        self.received = 0
        """Bytes read so far."""
        self.done = asyncio.Event()
        self.complete = False
        """True once the last chunk was read."""

    async def _next(self) -> bytes:
        try:
            message = await asyncio.wait_for(self._receive(), self.idle_timeout_s)
        except TimeoutError:
            self.done.set()
            raise BodyTimeout(f"no request body received for {self.idle_timeout_s:g} s") from None
        if message["type"] == "http.disconnect":
            self.done.set()
            raise ClientGone("the client disconnected while sending its body")
        chunk: bytes = message.get("body", b"")
        self.received += len(chunk)
        if self.received > self.limit:
            self.done.set()
            raise BodyTooLarge(
                f"the request body is larger than this proxy accepts ({self.limit} bytes)"
            )
        ends = not message.get("more_body", False)
        if self.declared is not None and (
            self.received > self.declared or (ends and self.received < self.declared)
        ):
            self.done.set()
            raise BodyMismatch(
                f"the request body does not match its Content-Length ({self.declared} bytes)"
            )
        if ends:
            self.complete = True
            self.done.set()
        return chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """The chunks, as the client sends them (empty ones skipped)."""
        while not self.complete:
            chunk = await self._next()
            if chunk:
                yield chunk

    async def drain(self) -> None:
        """Read and drop what the upstream did not take, so the capture sees the request."""
        while not self.done.is_set():
            await self._next()
