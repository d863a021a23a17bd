"""The `error_category` of a status, an app exception and a reassembled stream: pure tables."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from model_call_capture.dialects import StreamResult
from model_call_capture.middleware import error_category_for_status
from model_call_capture.middleware._outcome import classify_exception, stream_outcome


@pytest.mark.parametrize(
    ("status", "category"),
    [
        (200, None),
        (301, None),
        (400, "client_error"),
        (401, "auth"),
        (403, "auth"),
        (404, "not_found"),
        (408, "timeout"),
        (409, "client_error"),
        (429, "rate_limit"),
        (499, "client_error"),
        (500, "upstream_error"),
        (504, "timeout"),
        (529, "upstream_error"),
        (None, None),
    ],
)
def test_error_category_for_status_matches_gym(status: int | None, category: str | None) -> None:
    assert error_category_for_status(status) == category


# Exceptions shaped like those of the HTTP clients and SDKs, without importing them.
class ReadTimeout(Exception):
    pass


class APITimeoutError(Exception):
    pass


class ConnectError(Exception):
    pass


class ServerDisconnectedError(Exception):
    pass


class WithStatus(Exception):
    def __init__(self, status_code: Any) -> None:
        super().__init__("status")
        self.status_code = status_code


class Response:
    def __init__(self, status_code: Any, content: Any) -> None:
        self.status_code = status_code
        self.content = content


class WithResponse(Exception):
    def __init__(self, response: Any, status_code: Any = None) -> None:
        super().__init__("response")
        self.response = response
        if status_code is not None:
            self.status_code = status_code


class UnreadResponse:
    status_code = 502

    @property
    def content(self) -> bytes:
        raise RuntimeError("the body was never read")


def _http_status_error(status: int, content: bytes) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://upstream.invalid/v1")
    response = httpx.Response(status, content=content, request=request)
    return httpx.HTTPStatusError("upstream", request=request, response=response)


EXCEPTIONS = {
    "cancelled": (asyncio.CancelledError(), ("cancelled", None, None)),
    "builtin timeout": (TimeoutError("t"), ("timeout", None, None)),
    "asyncio timeout": (TimeoutError(), ("timeout", None, None)),
    "a class named ...Timeout": (ReadTimeout(), ("timeout", None, None)),
    "a class named ...TimeoutError": (APITimeoutError(), ("timeout", None, None)),
    "httpx timeout": (httpx.ReadTimeout("t"), ("timeout", None, None)),
    "httpx's timeout base class itself": (httpx.TimeoutException("t"), ("timeout", None, None)),
    "builtin connection error": (ConnectionResetError(), ("connection", None, None)),
    "a class named ConnectError": (ConnectError(), ("connection", None, None)),
    "aiohttp's disconnect": (ServerDisconnectedError(), ("connection", None, None)),
    "httpx connect error": (httpx.ConnectError("c"), ("connection", None, None)),
    "httpx protocol error": (httpx.RemoteProtocolError("p"), ("connection", None, None)),
    "anything else": (ValueError("v"), ("exception", None, None)),
    "status_code on the exception": (WithStatus(503), ("exception", 503, None)),
    "status_code out of range": (WithStatus(1000), ("exception", None, None)),
    "status_code at the low end of the range": (WithStatus(100), ("exception", 100, None)),
    "status_code at the high end of the range": (WithStatus(999), ("exception", 999, None)),
    "status_code below the range": (WithStatus(99), ("exception", None, None)),
    "status_code not an int": (WithStatus("429"), ("exception", None, None)),
    "response with bytes": (
        WithResponse(Response(429, b'{"error":"slow"}')),
        ("exception", 429, b'{"error":"slow"}'),
    ),
    "response with text": (
        WithResponse(Response(500, "caf\u00e9")),
        ("exception", 500, b"caf\xc3\xa9"),
    ),
    "response with a lone surrogate in its text": (
        WithResponse(Response(500, "a\ud800")),
        ("exception", 500, b"a\xed\xa0\x80"),
    ),
    "response with content of another type": (
        WithResponse(Response(500, 42)),
        ("exception", 500, None),
    ),
    "response with an empty body": (WithResponse(Response(500, b"")), ("exception", 500, None)),
    "response status wins over the exception's": (
        WithResponse(Response(404, None), status_code=500),
        ("exception", 404, None),
    ),
    "response without a status": (
        WithResponse(Response(None, b"x"), status_code=418),
        ("exception", 418, b"x"),
    ),
    "response body never read": (WithResponse(UnreadResponse()), ("exception", 502, None)),
    "httpx status error": (
        _http_status_error(429, b'{"error":"slow down"}'),
        ("exception", 429, b'{"error":"slow down"}'),
    ),
}


@pytest.mark.parametrize("case", list(EXCEPTIONS))
def test_classify_exception(case: str) -> None:
    exc, expected = EXCEPTIONS[case]
    assert classify_exception(exc) == expected


def _result(
    terminal: Any, response: dict[str, Any] | None = None, dropped: list[str] | None = None
) -> StreamResult:
    return StreamResult(
        response={"id": "x"} if response is None else response,
        terminal=terminal,
        truncated=terminal is None,
        dropped=dropped or [],
    )


STREAMS = {
    "not reassembled": (None, False, ("capture_parse_error", True)),
    "not reassembled, cut": (None, True, ("capture_parse_error", True)),
    "completed": (_result("complete"), False, (None, False)),
    "completed, some events not used": (_result("complete", dropped=["x"]), False, (None, True)),
    "cut at the byte cap": (_result(None), True, (None, True)),
    "cut after an error event": (_result("error"), True, (None, True)),
    "error event": (_result("error"), False, ("upstream_error", True)),
    "failed": (_result("failed"), False, ("upstream_error", True)),
    "incomplete": (_result("incomplete"), False, ("incomplete", True)),
    "no terminal event": (_result(None), False, ("stream_truncated", True)),
    "terminal but no object": (
        StreamResult(response=None, terminal="complete", truncated=False),
        False,
        ("capture_parse_error", True),
    ),
}


@pytest.mark.parametrize("case", list(STREAMS))
def test_stream_outcome(case: str) -> None:
    result, cut, expected = STREAMS[case]
    assert stream_outcome(result, cut=cut) == expected


# The class names classify_exception knows as connection failures, each pinned by a bare
# class of that name (no parent that could classify it instead).
CONNECTION_ERROR_NAMES = [
    "ConnectError",
    "NetworkError",
    "RemoteProtocolError",
    "APIConnectionError",
    "ClientConnectionError",
    "ServerDisconnectedError",
]


@pytest.mark.parametrize("name", CONNECTION_ERROR_NAMES)
def test_each_connection_error_name_is_a_connection_failure(name: str) -> None:
    bare = type(name, (Exception,), {})
    assert classify_exception(bare("gone")) == ("connection", None, None)


# aiohttp is not installed here: its two classes are rebuilt with aiohttp's names and
# hierarchy (ServerDisconnectedError < ServerConnectionError < ClientConnectionError <
# ClientError < Exception), as the middleware would see them in an app that uses it.
_aiohttp = {"__module__": "aiohttp.client_exceptions"}
AiohttpClientConnectionError = type(
    "ClientConnectionError", (type("ClientError", (Exception,), _aiohttp),), _aiohttp
)
AiohttpServerDisconnectedError = type(
    "ServerDisconnectedError",
    (type("ServerConnectionError", (AiohttpClientConnectionError,), _aiohttp),),
    _aiohttp,
)

# The SDKs build their errors on httpx2 (their HTTP client), not on httpx.
_REQUEST = httpx2.Request("POST", "http://upstream.invalid/v1/chat/completions")
REAL_CONNECTION_ERRORS = {
    "httpx.RemoteProtocolError": httpx.RemoteProtocolError("peer closed"),
    "httpx.NetworkError": httpx.NetworkError("network down"),
    "httpx.ReadError": httpx.ReadError("read failed"),
    "httpx.ConnectError": httpx.ConnectError("refused"),
    "openai.APIConnectionError": openai.APIConnectionError(request=_REQUEST),
    "anthropic.APIConnectionError": anthropic.APIConnectionError(request=_REQUEST),
    "aiohttp.ClientConnectionError (rebuilt)": AiohttpClientConnectionError("reset"),
    "aiohttp.ServerDisconnectedError (rebuilt)": AiohttpServerDisconnectedError("gone"),
}


@pytest.mark.parametrize("case", list(REAL_CONNECTION_ERRORS))
def test_real_connection_errors_are_connection_failures(case: str) -> None:
    assert classify_exception(REAL_CONNECTION_ERRORS[case]) == ("connection", None, None)
