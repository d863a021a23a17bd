"""Which headers cross the proxy (`proxy/_headers.py`), and how a message's length is framed."""

from __future__ import annotations

import pytest

from model_call_capture.proxy._headers import (
    declared_length,
    forwarded_headers,
    request_headers,
    response_headers,
)


def test_hop_by_hop_headers_are_dropped_and_the_rest_kept_in_order() -> None:
    raw = [
        (b"Authorization", b"Bearer x"),
        (b"Connection", b"keep-alive, X-Private"),
        (b"X-Private", b"1"),
        (b"Keep-Alive", b"timeout=5"),
        (b"Transfer-Encoding", b"chunked"),
        (b"Content-Type", b"application/json"),
        (b"Host", b"proxy:1"),
        (b"X-Api-Key", b"k"),
    ]
    assert forwarded_headers(raw, frozenset({"host"})) == [
        (b"Authorization", b"Bearer x"),
        (b"Content-Type", b"application/json"),
        (b"X-Api-Key", b"k"),
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([(b"content-length", b"12")], 12),
        ([(b"Content-Length", b" 0 ")], 0),
        ([], None),
        ([(b"content-length", b"-1")], None),
        ([(b"content-length", b"1e3")], None),
        ([(b"content-length", b"5"), (b"content-length", b"5")], None),
        ([(b"content-length", b"5"), (b"transfer-encoding", b"chunked")], None),
    ],
)
def test_declared_length(raw: list[tuple[bytes, bytes]], expected: int | None) -> None:
    assert declared_length(raw) == expected


def test_a_request_keeps_its_length_and_loses_host() -> None:
    raw = [(b"host", b"proxy"), (b"content-length", b"7"), (b"authorization", b"Bearer c")]
    assert request_headers(raw, None) == [
        (b"authorization", b"Bearer c"),
        (b"content-length", b"7"),
    ]


def test_a_chunked_request_goes_without_a_length() -> None:
    raw = [(b"transfer-encoding", b"chunked"), (b"content-length", b"7"), (b"x", b"1")]
    assert request_headers(raw, None) == [(b"x", b"1")]


def test_the_upstream_userinfo_replaces_the_client_authorization() -> None:
    raw = [(b"Authorization", b"Bearer client"), (b"x", b"1")]
    assert request_headers(raw, b"Basic b3A6cHc=") == [
        (b"x", b"1"),
        (b"authorization", b"Basic b3A6cHc="),
    ]


def test_a_reply_framed_by_transfer_encoding_loses_its_stale_length() -> None:
    raw = [
        (b"Content-Type", b"application/json"),
        (b"Content-Length", b"7"),
        (b"Transfer-Encoding", b"chunked"),
    ]
    assert response_headers(raw) == [(b"Content-Type", b"application/json")]


def test_a_sized_reply_keeps_its_length() -> None:
    raw = [(b"content-length", b"7"), (b"content-encoding", b"gzip")]
    assert response_headers(raw) == raw
