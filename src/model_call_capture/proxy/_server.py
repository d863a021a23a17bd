"""The uvicorn server under `mcc serve`: admission at accept, a deadline on request heads.

What uvicorn (0.3x to 0.5x, h11 and httptools alike) offers and what it does not:

- `timeout_keep_alive` closes a connection that is idle *after* a response. It is not
  armed when a connection opens, and the first byte of a new request cancels it: a client
  that connects and sends nothing, or half a request head, holds the connection forever
  (slowloris).
- `h11_max_incomplete_event_size` (16 KiB by default) bounds the size of a head, not the
  time it takes.
- `limit_concurrency` answers 503 to a request whose head arrives while that many
  connections (or requests) are open. Connections whose head never arrives count against
  it but are never refused, so they take descriptors until accept fails for everyone.

`head_deadline_protocol` adds to uvicorn's h11 protocol what is missing:

- a deadline: from the moment a connection opens, and again from the end of each
  response, the next request head must be complete within `head_timeout_s`; otherwise the
  connection is closed (with a 408 when part of a head had arrived). The same deadline
  bounds how long the server keeps reading a body the app did not want after it answered.
  A stalled *body* is the app's to time out (`ProxyApp(body_timeout_s=...)`);
- admission when a connection is accepted (`_admission.Admission`), in place of
  `limit_concurrency`: past the cap the connection that has waited longest for a head is
  closed, and a new one is refused (503) only when every open one is busy with a request.

`ProxyServer` is uvicorn's `Server` with the event loop's accept failures given to the
same admission (counted, logged once per interval) instead of one traceback each, and
`server_options` the `uvicorn.Config` arguments that go with it, logs included (`_logging`).
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._admission import Admission, accept_batch, descriptor_cap, descriptor_limit
from ._logging import log_config

__all__ = [
    "DEFAULT_HEAD_TIMEOUT_S",
    "DEFAULT_MAX_CONNECTIONS",
    "ProxyServer",
    "head_deadline_protocol",
    "server_options",
]

DEFAULT_HEAD_TIMEOUT_S = 10.0
"""Default time a client has to send a complete request head."""
DEFAULT_MAX_CONNECTIONS = 4096
"""Default most client connections open at once (fewer when the descriptor limit is lower)."""


LISTEN_BACKLOG = 2048
"""Connections the kernel holds for accept (uvicorn's default backlog)."""


def _reply(status: bytes, body: bytes) -> bytes:
    return (
        b"HTTP/1.1 " + status + b"\r\n"
        b"content-type: text/plain; charset=utf-8\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n"
        b"connection: close\r\n\r\n" + body
    )


_TIMEOUT_REPLY = _reply(b"408 Request Timeout", b"request head not received in time")
_BUSY_REPLY = _reply(b"503 Service Unavailable", b"every connection is busy; try again")


def head_deadline_protocol(
    head_timeout_s: float, admission: Admission | None = None
) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request head is late, and
    admitting connections through `admission` when one is given (module docstring)."""

    class HeadDeadlineProtocol(H11Protocol):
        """`H11Protocol` with a deadline on every request head and admission at accept."""

        _head_timer: asyncio.TimerHandle | None = None
        _waited_after: Any = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if admission is not None and not admission.admit(self.loop, self):
                transport.write(_BUSY_REPLY)
                transport.close()
                return
            self._arm()

        def on_response_complete(self) -> None:
            # Armed first: a pipelined request that starts inside the call disarms it.
            self._arm()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            if admission is not None:
                admission.release(self)
            super().connection_lost(exc)

        def waiting_for_head(self) -> bool:
            """No request in progress since the connection opened or its last response."""
            return self.cycle is self._waited_after and not self.transport.is_closing()

        def shed(self) -> None:
            """Close the connection (the admission needs its descriptor)."""
            self.transport.close()

        def _arm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            # The cycle being waited after: a new request replaces it, and the timer is moot.
            self._waited_after = self.cycle
            self._head_timer = self.loop.call_later(head_timeout_s, self._late, self.cycle)
            if admission is not None:
                admission.wait(self)

        def _late(self, waited_after: Any) -> None:
            self._head_timer = None
            if self.cycle is not waited_after or self.transport.is_closing():
                return
            # A 408 only to a client that was sending a new head, not to one still
            # sending a body the app already answered.
            if self.conn.our_state is h11.IDLE and self.conn.trailing_data[0]:
                self.transport.write(_TIMEOUT_REPLY)
            self.transport.close()

    HeadDeadlineProtocol.admission = admission  # type: ignore[attr-defined]
    return HeadDeadlineProtocol


class ProxyServer(uvicorn.Server):
    """uvicorn's `Server`, its event loop's accept failures handled by the admission of
    its protocol (`server_options`): counted and logged once per interval, each closing
    the connection that waited longest for a head, instead of a traceback per failure."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start-up, with the exception handler installed first."""
        admission = getattr(self.config.http_protocol_class, "admission", None)
        if admission is not None:
            asyncio.get_running_loop().set_exception_handler(admission.exception_handler)
        await super().startup(sockets)
        # asyncio listens with the backlog it accepts in one go, kept small so that the
        # descriptors of one batch fit in the room `descriptor_cap` keeps; the kernel's
        # queue of connections waiting for accept is set larger again, so that a burst of
        # connections waits in it instead of being dropped to a 1 s SYN retry.
        for server in self.servers:
            for transport_socket in server.sockets:
                with socket.socket(fileno=os.dup(transport_socket.fileno())) as listener:
                    listener.listen(LISTEN_BACKLOG)


def server_options(
    *, head_timeout_s: float, max_connections: int | None, log_level: str = "warning"
) -> dict[str, Any]:
    """Keyword arguments for `uvicorn.Config` (run it with `ProxyServer`) that bound what
    each client may hold, and log without blocking and without the query values clients
    send (`_logging`).

    `max_connections` is taken as given (`mcc serve` checks it against the descriptor
    limit first); None is as many as the descriptor limit serves (`descriptor_cap`).
    """
    limit = descriptor_limit()
    cap = descriptor_cap(limit) if max_connections is None else max_connections
    batch = accept_batch(limit)
    return {
        "log_config": log_config(log_level),
        "http": head_deadline_protocol(head_timeout_s, Admission(max(cap, 1), batch=batch)),
        # How many connections asyncio accepts in one go, which the cap leaves room for
        # (`ProxyServer` gives the kernel's queue its own, larger, backlog).
        "backlog": batch,
    }
