"""The uvicorn server under `mcc serve`: a deadline on request heads and a connection cap.

What uvicorn (0.3x to 0.5x, h11 and httptools alike) offers and what it does not:

- `timeout_keep_alive` closes a connection that is idle *after* a response. It is not
  armed when a connection opens, and the first byte of a new request cancels it: a client
  that connects and sends nothing, or half a request head, holds the connection forever
  (slowloris).
- `h11_max_incomplete_event_size` (16 KiB by default) bounds the size of a head, not the
  time it takes.
- `limit_concurrency` answers 503 to a request whose head arrives while that many
  connections (or requests) are open. Connections whose head never arrives count against
  it, so without a head deadline a slowloris turns the cap into a denial of service.

`head_deadline_protocol` adds the missing deadline to uvicorn's h11 protocol: from the
moment a connection opens, and again from the end of each response, the next request head
must be complete within `head_timeout_s`; otherwise the connection is closed (with a 408
when part of a head had arrived). The same deadline bounds how long the server keeps
reading a body the app did not want after it answered. A stalled *body* is the app's to
time out (`ProxyApp(body_timeout_s=...)`).

uvicorn's access log (on at `--log-level info`) prints each request target whole, and
clients of Gemini- or Azure-style APIs send their key in the query (`?key=...`): the
configuration `server_options` gives logs the target with every query value hidden
(`HiddenQueryValues`), so no key a client sends reaches a log line.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

import h11
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "DEFAULT_HEAD_TIMEOUT_S",
    "DEFAULT_MAX_CONNECTIONS",
    "HiddenQueryValues",
    "head_deadline_protocol",
    "server_options",
]

DEFAULT_HEAD_TIMEOUT_S = 10.0
"""Default time a client has to send a complete request head."""
DEFAULT_MAX_CONNECTIONS = 4096
"""Default number of client connections served at once; a request past it gets 503."""

_TIMEOUT_BODY = b"request head not received in time"
_TIMEOUT_REPLY = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: " + str(len(_TIMEOUT_BODY)).encode() + b"\r\n"
    b"connection: close\r\n\r\n" + _TIMEOUT_BODY
)


def head_deadline_protocol(head_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request head is late."""

    class HeadDeadlineProtocol(H11Protocol):
        """`H11Protocol` with a deadline on every request head (see the module docstring)."""

        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            # Armed first: a pipelined request that starts inside the call disarms it.
            self._arm()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            # The cycle being waited after: a new request replaces it, and the timer is moot.
            self._head_timer = self.loop.call_later(head_timeout_s, self._late, self.cycle)

        def _late(self, waited_after: Any) -> None:
            self._head_timer = None
            if self.cycle is not waited_after or self.transport.is_closing():
                return
            # A 408 only to a client that was sending a new head, not to one still
            # sending a body the app already answered.
            if self.conn.our_state is h11.IDLE and self.conn.trailing_data[0]:
                self.transport.write(_TIMEOUT_REPLY)
            self.transport.close()

    return HeadDeadlineProtocol


class HiddenQueryValues(logging.Filter):
    """Hides the query values of the request target in uvicorn's access log records.

    `?key=K&api-version=2&K2` is logged `?key=***&api-version=***&***`: the names stay
    (they say what was sent), a member without `=` may be a key itself.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        # uvicorn's h11 and httptools protocols log (client, method, target, version, status).
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            path, mark, query = args[2].partition("?")
            if mark:
                hidden = "&".join(
                    name + "=***" if eq else "***"
                    for name, eq, _ in (member.partition("=") for member in query.split("&"))
                )
                record.args = (*args[:2], f"{path}?{hidden}", *args[3:])
        return True


def _log_config() -> dict[str, Any]:
    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["hidden_query_values"] = {"()": HiddenQueryValues}
    config["handlers"]["access"]["filters"] = ["hidden_query_values"]
    return config


def server_options(*, head_timeout_s: float, max_connections: int | None) -> dict[str, Any]:
    """Keyword arguments for `uvicorn.Config` that bound what each client may hold (and
    keep the query values clients send out of the access log)."""
    return {
        "log_config": _log_config(),
        "http": head_deadline_protocol(head_timeout_s),
        # uvicorn counts the connection asking among the open ones: one more serves N.
        "limit_concurrency": None if max_connections is None else max_connections + 1,
    }
