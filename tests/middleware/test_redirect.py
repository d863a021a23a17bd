"""Redirects keep the rollout prefix: a 3xx `Location` pointing at this server gets it back.

A tiny raw ASGI app answers every request with the status and `Location` the test gives
it, through the real middleware (the in-process driver of `conftest.py`); one test runs a
FastAPI app on uvicorn whose trailing-slash redirect an httpx client follows. Expected
`Location` values are written by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import given, settings
from hypothesis import strategies as st

from model_call_capture.middleware._redirect import MAX_LOCATION_BYTES, RedirectPrefix
from servers import serve

from .conftest import call, capturing, new_rollout, read_lines


def redirecting_app(
    status: int, location: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> Any:
    """A raw ASGI app that answers every request `status` with `Location: location`."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        headers = [(b"location", location), (b"content-length", b"0"), *(extra or [])]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    return app


def _location(tmp_path: Path, location: bytes, *, status: int = 307, path: str = "") -> str:
    rollout = "7-0"
    target = path or f"/ng-rollout/{rollout}/v1/chat/completions"
    exchange = call(capturing(tmp_path, app=redirecting_app(status, location)), target)
    assert exchange.error is None and exchange.status == status
    return exchange.headers["location"]


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        # root-relative: the prefix goes in front of the path
        (b"/v1/chat/completions/", "/ng-rollout/7-0/v1/chat/completions/"),
        (b"/v1/models?limit=2#top", "/ng-rollout/7-0/v1/models?limit=2#top"),
        (b"/", "/ng-rollout/7-0/"),
        # same origin, absolute (the driver's Host is `testserver`, scheme http, port 80)
        (b"http://testserver/v1/responses", "http://testserver/ng-rollout/7-0/v1/responses"),
        (b"http://testserver:80/v1/x", "http://testserver:80/ng-rollout/7-0/v1/x"),
        (b"HTTP://TestServer/v1/x", "HTTP://TestServer/ng-rollout/7-0/v1/x"),
        (b"http://testserver", "http://testserver/ng-rollout/7-0/"),
        (b"http://testserver?q=1", "http://testserver/ng-rollout/7-0/?q=1"),
        # other origins: left alone
        (b"http://other.example/v1/x", "http://other.example/v1/x"),
        (b"https://testserver/v1/x", "https://testserver/v1/x"),  # another scheme
        (b"http://testserver:8080/v1/x", "http://testserver:8080/v1/x"),  # another port
        (b"http://user@testserver/v1/x", "http://user@testserver/v1/x"),
        (b"//testserver/v1/x", "//testserver/v1/x"),  # network-path reference
        (b"//evil.example/v1/x", "//evil.example/v1/x"),
        (b"/\\evil.example/x", "/\\evil.example/x"),  # browsers read `/\` as `//`
        (b"ftp://testserver/x", "ftp://testserver/x"),
        # relative without a slash: resolved against the prefixed URL by the client
        (b"completions/", "completions/"),
        (b"?page=2", "?page=2"),
        (b"../models", "../models"),
        # already prefixed (this rollout or another): left alone
        (b"/ng-rollout/7-0/v1/x", "/ng-rollout/7-0/v1/x"),
        (b"/ng-rollout/9-9/v1/x", "/ng-rollout/9-9/v1/x"),
        (b"http://testserver/ng-rollout/7-0/v1/x", "http://testserver/ng-rollout/7-0/v1/x"),
    ],
)
def test_a_redirect_location_keeps_the_prefix_when_it_points_here(
    tmp_path: Path, location: bytes, expected: str
) -> None:
    assert _location(tmp_path, location) == expected


@pytest.mark.parametrize("status", [300, 301, 302, 303, 307, 308, 399])
def test_every_3xx_is_rewritten(tmp_path: Path, status: int) -> None:
    assert _location(tmp_path, b"/v1/x", status=status) == "/ng-rollout/7-0/v1/x"


@pytest.mark.parametrize("status", [200, 201, 299, 400, 404, 500])
def test_other_statuses_keep_their_location(tmp_path: Path, status: int) -> None:
    assert _location(tmp_path, b"/v1/x", status=status) == "/v1/x"


def test_an_unprefixed_request_keeps_its_location(tmp_path: Path) -> None:
    assert _location(tmp_path, b"/v1/x", path="/v1/chat/completions") == "/v1/x"


def test_an_unobserved_prefixed_path_is_rewritten_too(tmp_path: Path) -> None:
    # The prefix is stripped from every prefixed request, captured or not.
    assert _location(tmp_path, b"/v1/models/", path="/ng-rollout/7-0/v1/models") == (
        "/ng-rollout/7-0/v1/models/"
    )
    assert list(tmp_path.iterdir()) == []  # and nothing is captured for it


def test_an_invalid_rollout_id_is_never_written_into_a_header(tmp_path: Path) -> None:
    assert _location(tmp_path, b"/v1/x", path="/ng-rollout/.hidden/v1/chat/completions") == "/v1/x"


@pytest.mark.parametrize(
    "location",
    [
        b"/v1/x\r\nSet-Cookie: a=b",  # header injection: never rewritten (the server refuses it)
        b"/v1/x\n",
        b"/v1/\x00x",
        b"/v1/a b",
        b"/caf\xc3\xa9",  # not ASCII
        b"/\x7f",
        b"/" + b"a" * MAX_LOCATION_BYTES,  # longer than the bound
        b"",
    ],
)
def test_hostile_locations_are_left_byte_for_byte(location: bytes) -> None:
    prefix = RedirectPrefix({"headers": [(b"host", b"h")], "scheme": "http"}, "7-0")
    message = {"type": "http.response.start", "status": 302, "headers": [(b"location", location)]}
    assert prefix.start_message(message) is message


def test_the_bound_itself_is_rewritten() -> None:
    prefix = RedirectPrefix({"headers": [(b"host", b"h")], "scheme": "http"}, "7-0")
    value = b"/" + b"a" * (MAX_LOCATION_BYTES - 1)
    assert prefix.location(value) == b"/ng-rollout/7-0" + value


@pytest.mark.parametrize(
    "message",
    [
        {"type": "http.response.start", "status": 302, "headers": [(b"location",)]},
        {"type": "http.response.start", "status": 302, "headers": [("location", "/x")]},
        {"type": "http.response.start", "status": "302", "headers": [(b"location", b"/x")]},
        {"type": "http.response.start", "status": 302, "headers": None},
        {"type": "http.response.start", "status": 302},
    ],
)
def test_odd_start_messages_pass_unchanged(message: dict[str, Any]) -> None:
    prefix = RedirectPrefix({"headers": [(b"host", b"h")], "scheme": "http"}, "7-0")
    assert prefix.start_message(message) is message


def test_other_headers_and_every_location_header_are_kept_in_order(tmp_path: Path) -> None:
    app = redirecting_app(302, b"/a", extra=[(b"x-other", b"/b"), (b"Location", b"/c")])
    exchange = call(capturing(tmp_path, app=app), "/ng-rollout/7-0/v1/responses")
    (start,) = [m for m in exchange.messages if m["type"] == "http.response.start"]
    assert start["headers"] == [
        (b"location", b"/ng-rollout/7-0/a"),
        (b"content-length", b"0"),
        (b"x-other", b"/b"),
        (b"Location", b"/ng-rollout/7-0/c"),
    ]


@pytest.mark.parametrize(
    ("root_path", "location", "expected"),
    [
        ("/api", b"/api/v1/x", b"/api/ng-rollout/7-0/v1/x"),  # after root_path, where it was
        ("/api", b"/api", b"/api/ng-rollout/7-0/"),
        ("/api", b"/apix/v1", b"/ng-rollout/7-0/apix/v1"),  # not under root_path: in front
        ("/api", b"/api/ng-rollout/7-0/v1", None),  # already prefixed after root_path
    ],
)
def test_the_prefix_goes_after_root_path(
    root_path: str, location: bytes, expected: bytes | None
) -> None:
    scope = {"headers": [(b"host", b"h")], "scheme": "http", "root_path": root_path}
    assert RedirectPrefix(scope, "7-0").location(location) == expected


@pytest.mark.parametrize(
    ("scope", "location", "expected"),
    [
        # no Host header: the server's address is the origin
        (
            {"server": ("127.0.0.1", 8000)},
            b"http://127.0.0.1:8000/v1",
            b"http://127.0.0.1:8000/ng-rollout/7-0/v1",
        ),
        # two Host headers: no origin is trusted, absolute URLs are left alone
        ({"headers": [(b"host", b"h"), (b"host", b"h")]}, b"http://h/v1", None),
        (
            {"headers": [(b"host", b"[::1]:8000")]},
            b"http://[::1]:8000/v1",
            b"http://[::1]:8000/ng-rollout/7-0/v1",
        ),
        (
            {"headers": [(b"host", b"h")], "scheme": "https"},
            b"https://h:443/v1",
            b"https://h:443/ng-rollout/7-0/v1",
        ),
        ({"headers": [(b"host", b"h")], "scheme": "ws"}, b"http://h/v1", None),
    ],
)
def test_the_origin_of_the_request(
    scope: dict[str, Any], location: bytes, expected: bytes | None
) -> None:
    assert RedirectPrefix(scope, "7-0").location(location) == expected


def test_a_client_following_a_trailing_slash_redirect_stays_captured(tmp_path: Path) -> None:
    app = FastAPI()  # redirect_slashes: `/v1/chat/completions/` -> 307 to the route

    @app.post("/v1/chat/completions")
    async def chat() -> dict[str, Any]:
        return {"id": "chatcmpl-9", "object": "chat.completion", "model": "m", "choices": []}

    rollout = new_rollout()
    with serve(capturing(tmp_path, app=app)) as server:
        url = f"{server.url}/ng-rollout/{rollout}/v1/chat/completions/"
        first = httpx.post(url, json={"model": "m", "messages": []})
        assert first.status_code == 307
        assert first.headers["location"] == (
            f"{server.url}/ng-rollout/{rollout}/v1/chat/completions"
        )
        followed = httpx.post(url, json={"model": "m", "messages": []}, follow_redirects=True)
        assert followed.status_code == 200
    lines = read_lines(tmp_path, rollout)
    # The trailing-slash path is an observed path too, so each redirect is a line; what
    # matters is the last one: the followed request was captured under the rollout.
    assert [line["status_code"] for line in lines] == [307, 307, 200]
    assert lines[-1]["response"]["id"] == "chatcmpl-9"


@settings(max_examples=400, deadline=None)
@given(
    location=st.one_of(
        st.binary(max_size=64),
        st.builds(
            lambda head, tail: head + tail,
            st.sampled_from([b"/", b"//", b"/\\", b"http://h", b"HTTP://h:80", b"https://h", b""]),
            st.binary(max_size=48)
            | st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40).map(
                str.encode
            ),
        ),
    ),
    root_path=st.sampled_from(["", "/api"]),
)
def test_any_location_is_left_alone_or_only_gets_the_prefix(
    location: bytes, root_path: str
) -> None:
    scope = {"headers": [(b"host", b"h")], "scheme": "http", "root_path": root_path}
    new = RedirectPrefix(scope, "7-0").location(location)
    if new is None:
        return
    # Only plain visible ASCII comes out, and it is the input with the prefix inserted once
    # where the path starts (and a `/` when the path was empty, `http://h?q` -> `.../?q`).
    assert all(0x21 <= b <= 0x7E for b in new)
    prefix = b"/ng-rollout/7-0"
    at = new.index(prefix)
    removed = new[:at] + new[at + len(prefix) :]
    assert removed in (location, location[:at] + b"/" + location[at:])
    assert not new.startswith((b"//", b"/\\"))
