"""The ASGI types the library's apps and middleware are written against (ASGI 3, HTTP)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TypeAlias

__all__ = ["ASGIApp", "Message", "Receive", "Scope", "Send"]

Scope: TypeAlias = MutableMapping[str, Any]
"""The connection scope (`type`, `path`, `raw_path`, `headers`, `extensions`, ...)."""
Message: TypeAlias = MutableMapping[str, Any]
"""One event from `receive` or to `send` (`http.request`, `http.response.body`, ...)."""
Receive: TypeAlias = Callable[[], Awaitable[Message]]
"""Awaits the next event from the client."""
Send: TypeAlias = Callable[[Message], Awaitable[None]]
"""Sends one event to the client."""
ASGIApp: TypeAlias = Callable[[Scope, Receive, Send], Awaitable[None]]
"""An ASGI 3 application."""
