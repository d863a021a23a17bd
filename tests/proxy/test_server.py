"""The uvicorn side of `mcc serve` (`proxy/_server.py`): the request-head deadline and the cap.

A tiny app on a real uvicorn server in a thread (tests/servers.py), configured with
`server_options`, and plain sockets that send what a slowloris client sends: nothing, half
a head, a head one byte at a time. The keep-alive timeout is set far above the head
deadline, so what closes a connection here is the deadline.
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

from model_call_capture.proxy import server_options
from servers import serve

from .conftest import parse_reply, read_to_end

HEAD = b"GET /v1/models HTTP/1.1\r\nHost: proxy\r\n\r\n"
TIMEOUT_LINE = b"HTTP/1.1 408 Request Timeout\r\n"


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    if scope["path"] == "/slow":  # a response that outlasts the head deadline
        await send({"type": "http.response.body", "body": b"o", "more_body": True})
        await asyncio.sleep(1.5)
        await send({"type": "http.response.body", "body": b"k"})
        return
    await send({"type": "http.response.body", "body": b"ok"})


def _serve(head_timeout_s: float = 0.5, max_connections: int | None = None) -> Any:
    options = server_options(head_timeout_s=head_timeout_s, max_connections=max_connections)
    return serve(_app, timeout_keep_alive=60, **options)


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _read_ok(sock: socket.socket) -> bytes:
    """One reply of `_app` on a connection that stays open (it ends with its body, `ok`)."""
    data = bytearray()
    while not data.endswith(b"ok"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return bytes(data)


def test_a_connection_that_sends_nothing_is_closed_silently() -> None:
    with _serve() as server, _connect(server.port) as sock:
        assert read_to_end(sock) == b""


def test_half_a_head_is_answered_408_and_closed() -> None:
    with _serve() as server, _connect(server.port) as sock:
        sock.sendall(HEAD[:20])
        reply = read_to_end(sock)
    assert reply.startswith(TIMEOUT_LINE)
    assert parse_reply(reply).headers["connection"] == "close"


def test_a_head_sent_a_byte_at_a_time_is_cut_at_the_deadline() -> None:
    """The deadline is for the whole head, not between two bytes of it."""
    with _serve() as server, _connect(server.port) as sock:
        sent = 0
        try:
            for byte in HEAD[:-1]:
                sock.sendall(bytes([byte]))
                sent += 1
                time.sleep(0.05)
        except OSError:
            pass  # the server closed the connection while the head was still arriving
        reply = read_to_end(sock)
    assert sent < len(HEAD) - 1
    assert reply.startswith(TIMEOUT_LINE)


def test_the_deadline_is_armed_again_after_each_response() -> None:
    with _serve() as server, _connect(server.port) as sock:
        sock.sendall(HEAD)
        first = _read_ok(sock)
        sock.sendall(HEAD[:20])
        rest = read_to_end(sock)
    assert first.startswith(b"HTTP/1.1 200 OK\r\n") and first.endswith(b"ok")
    assert rest.startswith(TIMEOUT_LINE)


def test_a_response_that_outlasts_the_deadline_is_not_cut() -> None:
    with _serve() as server, _connect(server.port) as sock:
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n")
        reply = parse_reply(read_to_end(sock))
    assert (reply.status, reply.body) == (200, b"ok")


def test_pipelined_requests_are_all_answered() -> None:
    with _serve() as server, _connect(server.port) as sock:
        sock.sendall(HEAD + HEAD + HEAD.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        replies = read_to_end(sock)
    assert replies.count(b"HTTP/1.1 200 OK\r\n") == 3
    assert TIMEOUT_LINE not in replies


def test_past_the_cap_the_connection_waiting_longest_for_a_head_is_closed() -> None:
    """Admission at accept: an idle connection and a half-sent one hold the cap of 2; the
    third connection closes the one that began waiting first and is served."""
    close = HEAD.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    with _serve(head_timeout_s=30, max_connections=2) as server, _connect(server.port) as idle:
        idle.sendall(HEAD)
        assert _read_ok(idle).endswith(b"ok")  # waiting since the end of its response
        with _connect(server.port) as half:
            half.sendall(HEAD[:20])  # waiting since it opened, after `idle` began to
            time.sleep(0.1)
            with _connect(server.port) as third:
                third.sendall(close)
                served = parse_reply(read_to_end(third))
            assert read_to_end(idle) == b""  # closed, without a reply
            half.settimeout(0.5)
            with pytest.raises(TimeoutError):  # still open, still waited for
                half.recv(1)
    assert served.status == 200


def test_past_the_cap_with_every_connection_busy_a_new_one_is_503() -> None:
    slow = b"GET /slow HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n"
    with _serve(head_timeout_s=30, max_connections=2) as server:
        with _connect(server.port) as one, _connect(server.port) as two:
            one.sendall(slow)
            two.sendall(slow)
            time.sleep(0.3)  # both requests are in progress
            with _connect(server.port) as third:
                busy = parse_reply(read_to_end(third))
            assert parse_reply(read_to_end(one)).status == 200
        with _connect(server.port) as fourth:
            fourth.sendall(HEAD.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
            served = parse_reply(read_to_end(fourth))
    assert busy.status == 503
    assert served.status == 200


def test_a_head_over_the_size_bound_is_400() -> None:
    with _serve() as server, _connect(server.port) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n")
        reply = read_to_end(sock)
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
