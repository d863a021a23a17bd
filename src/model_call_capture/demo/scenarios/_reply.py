"""What the scripted model says in every dialect: its texts, the reply base class, error bodies.

A reply is deterministic: ids derive from the request body and timestamps are fixed, so
two identical requests get identical bytes.
"""

from __future__ import annotations

import abc
import hashlib
from typing import Any, TypeAlias

from ._script import Script

__all__ = [
    "CITIES",
    "CREATED",
    "REASONING",
    "Event",
    "Reply",
    "error_body",
]

CREATED = 1700000000
"""The fixed creation time of every reply and model."""
REASONING = "The user asks about the weather; the get_weather tool can tell me."
"""The reasoning (summary, thinking) of every reply."""
_TOOL_TEXT = "Let me check the weather for you \u2014 one moment."
"""The text of a reply that calls the offered tool."""
CITIES = ("Paris", "Lyon", "Berlin", "Amsterdam")
"""The cities the scripted model knows; it asks the weather of the first one a request
names (the demo's questions name one each), Paris when none."""


def city_of(body: bytes) -> str:
    """The city of `CITIES` the request `body` names first (Paris when it names none)."""
    found = [(at, city) for city in CITIES if (at := body.find(city.encode())) >= 0]
    return min(found)[1] if found else CITIES[0]


_FILLER = "All work and no play makes a dull model. "
"""Repeated to make the text of a `big_<kib>` reply."""

Event: TypeAlias = tuple[str | None, Any]
"""One stream event: its SSE `event:` name (None for none) and its data (a JSON value, or bytes as is)."""


class Reply(abc.ABC):
    """The reply to one request in one dialect: its JSON body and its stream events.

    The reply has reasoning, text, and a tool call when the request offers a tool and
    does not already end with a tool result; the script can take the tool call away
    (`text`), cut the text (`incomplete`) or make it big (`big_<kib>`).
    """

    def __init__(self, request: dict[str, Any], body: bytes, script: Script) -> None:
        self.model = str(request.get("model") or "demo-model")
        self.key = hashlib.sha256(body).hexdigest()[:24]
        self.script = script
        self.incomplete = "incomplete" in script
        tool = None if "text" in script or self.incomplete else self._offered_tool(request)
        self.tool = tool
        self.city = city_of(body)
        self.arguments = f'{{"city":"{self.city}"}}'
        """The arguments of the tool call: the city the request asks about."""
        self.argument_pieces = ('{"city":', f'"{self.city}"}}')
        """The tool-call arguments as a stream sends them."""
        if script.big_kib:
            size = script.big_kib * 1024
            self.text = (_FILLER * (size // len(_FILLER) + 1))[:size]
        else:
            answer = (
                f"It is 18 \u00b0C with light rain in {self.city}: take a raincoat and an umbrella."
            )
            self.text = _TOOL_TEXT if tool else answer
        if self.incomplete:
            self.text = self.text[: len(self.text) // 2]

    def deltas(self) -> list[str]:
        """The text in the pieces a stream sends."""
        size = 1024 if self.script.big_kib else 12
        return [self.text[i : i + size] for i in range(0, len(self.text), size)]

    @abc.abstractmethod
    def json(self) -> dict[str, Any]:
        """The JSON body of the reply."""

    @abc.abstractmethod
    def events(self) -> list[Event]:
        """The stream of the reply, event by event."""

    @abc.abstractmethod
    def delta_event(self, text: str, n: int) -> Event:
        """One more text delta, the `n`th, for the never-ending stream."""

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{self.key}"

    def _offered_tool(self, request: dict[str, Any]) -> str | None:
        """The first tool the request offers, unless the conversation already ends with a tool result."""
        tools = request.get("tools")
        if not isinstance(tools, list) or not tools or not isinstance(tools[0], dict):
            return None
        name = self._tool_name(tools[0])
        if not isinstance(name, str) or self._ends_with_tool_result(request):
            return None
        return name

    def _tool_name(self, tool: dict[str, Any]) -> object:
        return tool.get("name")

    @abc.abstractmethod
    def _ends_with_tool_result(self, request: dict[str, Any]) -> bool:
        """Whether the request's conversation ends with the result of a tool call."""


def error_body(dialect: str, status: int, message: str) -> dict[str, Any]:
    """The error body `dialect`'s provider sends with `status`."""
    kind = {
        400: ("invalid_request_error", "invalid_request_error"),
        401: ("authentication_error", "invalid_api_key"),
        403: ("permission_error", "permission_denied"),
        404: ("not_found_error", "not_found"),
        405: ("invalid_request_error", "method_not_allowed"),
        408: ("timeout_error", "timeout"),
        413: ("request_too_large", "request_too_large"),
        429: ("rate_limit_error", "rate_limit_exceeded"),
        529: ("overloaded_error", "overloaded"),
    }.get(
        status,
        (
            "api_error" if status >= 500 else "invalid_request_error",
            "server_error" if status >= 500 else "error",
        ),
    )
    if dialect == "messages":
        return {"type": "error", "error": {"type": kind[0], "message": message}}
    return {"error": {"message": message, "type": kind[0], "param": None, "code": kind[1]}}
