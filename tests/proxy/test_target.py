"""Request targets (`proxy/_target.py`) and the upstream URL a request goes to (`ProxyApp._target`).

Pure functions, spelled out case by case; the same rules end to end through `mcc serve`
are in test_security.py.
"""

from __future__ import annotations

import pytest

from model_call_capture.proxy import ProxyApp
from model_call_capture.proxy._target import (
    BadTarget,
    merge_query,
    origin_path,
    resolve_dot_segments,
    resolve_request_path,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"/v1/models", b"/v1/models"),
        (b"http://h/v1/models", b"/v1/models"),
        (b"HTTPS://user@h:8/v1/x", b"/v1/x"),
        (b"http://h", b"/"),
        (b"http://h/", b"/"),
    ],
)
def test_origin_path(raw: bytes, expected: bytes) -> None:
    assert origin_path(raw, b"") == expected


@pytest.mark.parametrize(
    ("raw", "query", "reason"),
    [
        (b"*", b"", "asterisk-form"),
        (b"/v1/models#top", b"", "fragment"),
        (b"/v1/models", b"a=1#top", "fragment"),
        (b"ftp://h/v1", b"", "http(s) URL"),
        (b"host:443", b"", "must be a path"),
        (b"v1/models", b"", "must be a path"),
        (b"", b"", "must be a path"),
    ],
)
def test_origin_path_refuses(raw: bytes, query: bytes, reason: str) -> None:
    with pytest.raises(BadTarget, match=reason.replace("(", r"\(").replace(")", r"\)")):
        origin_path(raw, query)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"/", b"/"),
        (b"/v1/chat/completions", b"/v1/chat/completions"),
        (b"/v1/./models", b"/v1/models"),
        (b"/v1/x/../models", b"/v1/models"),
        (b"/v1/%2e/models", b"/v1/models"),
        (b"/v1/x/%2E%2e/models", b"/v1/models"),
        (b"/v1/x/.%2e/models", b"/v1/models"),
        (b"/v1/..", b"/"),
        (b"/v1/.", b"/v1/"),
        (b"/v1/x/..", b"/v1/"),
        (b"/a//b/../c", b"/a//c"),
        (b"/v1/...", b"/v1/..."),
        (b"/v1/.hidden", b"/v1/.hidden"),
        (b"/v1/models/org%2Fmodel", b"/v1/models/org%2Fmodel"),
        (b"/v1/%2E%2E%2E", b"/v1/%2E%2E%2E"),
    ],
)
def test_resolve_dot_segments(raw: bytes, expected: bytes) -> None:
    assert resolve_dot_segments(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        b"/..",
        b"/v1/../..",
        b"/v1/../../other",
        b"/%2e%2e/x",
        b"/v1/..%2f..%2fother",
        b"/v1/..%5c..%5cother",
        b"/v1/a%2F..%2Fb",
        b"/v1/..\\..\\other",
        b"/v1/.%2f",
    ],
)
def test_resolve_dot_segments_refuses(raw: bytes) -> None:
    with pytest.raises(BadTarget):
        resolve_dot_segments(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"/ng-rollout/r1/v1/./chat/completions", b"/ng-rollout/r1/v1/chat/completions"),
        (b"/ng-rollout/r1/v1/../v1/messages", b"/ng-rollout/r1/v1/messages"),
        (b"/ng-rollout/r1", b"/ng-rollout/r1"),
        (b"/ng-rollout/a%2Fb/v1/responses", b"/ng-rollout/a%2Fb/v1/responses"),
        (b"/v1/x/../models", b"/v1/models"),
    ],
)
def test_resolve_request_path(raw: bytes, expected: bytes) -> None:
    assert resolve_request_path(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        b"/ng-rollout/r1/..",
        b"/ng-rollout/r1/../../v1",
        b"/ng-rollout/r1/v1/../../other",
        b"/ng-rollout/../v1/models",
        b"/ng-rollout/%2E/v1/models",
    ],
)
def test_resolve_request_path_does_not_climb_out_of_the_prefix(raw: bytes) -> None:
    with pytest.raises(BadTarget):
        resolve_request_path(raw)


@pytest.mark.parametrize(
    ("operator", "request_query", "expected"),
    [
        (b"", b"a=1&&b", b"a=1&&b"),
        (b"key=K", b"", b"key=K"),
        (b"key=K", b"a=1", b"key=K&a=1"),
        (b"key=K&v=2", b"key=evil&a=1&v=3", b"key=K&v=2&a=1"),
        (b"api-version=1", b"api%2Dversion=9&x", b"api-version=1&x"),
        (b"a+b=1", b"a%20b=2&c=3", b"a+b=1&c=3"),
    ],
)
def test_merge_query(operator: bytes, request_query: bytes, expected: bytes) -> None:
    assert merge_query(operator, request_query) == expected


@pytest.mark.parametrize(
    ("upstream", "path", "query", "expected"),
    [
        ("http://vllm:8000", "/v1/chat/completions", b"", "http://vllm:8000/v1/chat/completions"),
        ("http://vllm:8000/", "/v1/models", b"a=1", "http://vllm:8000/v1/models?a=1"),
        ("http://vllm:8000/v1", "/v1/responses", b"", "http://vllm:8000/v1/responses"),
        ("https://gw.example/openai", "/v1/messages", b"", "https://gw.example/openai/v1/messages"),
        ("http://u:p@gw/base?key=K", "/v1/models", b"a=1", "http://gw/base/v1/models?key=K&a=1"),
        ("http://gw/base", "/v1/x/../models", b"", "http://gw/base/v1/models"),
        ("http://gw/base", "http://elsewhere/v1/models", b"", "http://gw/base/v1/models"),
    ],
)
def test_target_url(upstream: str, path: str, query: bytes, expected: str) -> None:
    scope = {"type": "http", "path": path, "raw_path": path.encode(), "query_string": query}
    assert str(ProxyApp(upstream)._target(scope)) == expected


def test_a_target_without_raw_path_is_quoted_from_path() -> None:
    scope = {"type": "http", "path": "/v1/a b/é%", "query_string": b""}
    assert ProxyApp("http://h")._target(scope).raw_path == b"/v1/a%20b/%C3%A9%25"


@pytest.mark.parametrize("raw", [b"/v1/a\x01b", b"/v1/\xc3\xa9", b"/v1/../../x", b"*"])
def test_a_target_httpx_cannot_build_is_a_bad_target(raw: bytes) -> None:
    scope = {"type": "http", "path": "/", "raw_path": raw, "query_string": b""}
    with pytest.raises(BadTarget):
        ProxyApp("http://h/base")._target(scope)
