"""Fuzzing the capturing proxy with hostile request targets, headers and bodies (hypothesis).

The app `create_proxy_app` builds (`TargetGuard`, `CaptureMiddleware`, `ProxyApp`) is driven
in process, the way a server drives it, on one event loop in a thread, in front of a real
upstream on 127.0.0.1 (`RecordingUpstream` on uvicorn). In process, the app also gets
what uvicorn would have refused (bytes outside ASCII, a `Content-Length` the body does not
match), so it is checked beyond what a server lets through.

Properties: no exception escapes the app; every response is well formed (one start with
a status in 100..599 and byte headers, then body messages, the last one final), and cut
or absent only when the client left; every capture line written decodes as a `CaptureLine`.
Bounded: a fixed number of examples, each with a deadline.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model_call_capture.contracts import CaptureLine
from model_call_capture.proxy import create_proxy_app
from servers import serve

from .conftest import RecordingUpstream

EXAMPLES = 300
EXAMPLE_DEADLINE_S = 20.0

_PIECES = [
    b"/", b"..", b".", b"%2e", b"%2E%2e", b".%2E", b"%2f", b"%2F", b"%5c", b"\\", b"#", b"*",
    b"http://h", b"HTTPS://u@h:1", b"ftp://h", b"ng-rollout", b"/ng-rollout/", b"fz-1", b"fz-2",
    b"v1", b"chat", b"completions", b"responses", b"messages", b"models", b"%", b"%zz",
    b"%00", b"@", b":", b"?", b"//", b"&", b"=", b"key=x", b" ", b"\xc3\xa9", b"\x01", b"\xff",
]  # fmt: skip
_CAPTURED = [b"/ng-rollout/fz-1/v1/chat/completions", b"/ng-rollout/fz-2/v1/messages"]

_GOOD = [b"/v1/models", b"/v1/chat/completions", b"/v1/responses?stream=1", *_CAPTURED]

targets = st.one_of(
    st.sampled_from(_GOOD),
    st.sampled_from(_CAPTURED),
    st.lists(st.sampled_from(_PIECES), max_size=12).map(b"".join),
    st.tuples(st.sampled_from(_CAPTURED), st.lists(st.sampled_from(_PIECES), max_size=4)).map(
        lambda parts: parts[0] + b"".join(parts[1])
    ),
    st.binary(max_size=40),
)
_TOKEN = st.from_regex(rb"\A[!#$%&'*+.^_`|~0-9A-Za-z-]{1,12}\Z")
_VALUE = st.binary(max_size=30).map(lambda b: bytes(c for c in b if c >= 0x20 and c != 0x7F))
header = st.one_of(
    st.tuples(
        st.just(b"content-length"),
        st.sampled_from([b"0", b"5", b"-1", b"abc", b"99999999999999999999", b"5, 5", b" 3 "]),
    ),
    st.tuples(
        st.just(b"transfer-encoding"), st.sampled_from([b"chunked", b"gzip, chunked", b"identity"])
    ),
    st.tuples(
        st.just(b"connection"),
        st.sampled_from([b"close", b"content-length, host", b"authorization", b"keep-alive"]),
    ),
    st.tuples(
        st.sampled_from([b"host", b"authorization", b"expect", b"content-encoding", b"te"]), _VALUE
    ),
    st.tuples(st.just(b"content-type"), st.sampled_from([b"application/json", b"text/plain"])),
    st.tuples(_TOKEN, _VALUE),
)
bodies = st.lists(
    st.sampled_from([b'{"model":"m","messages":[]}', b"{", b"\x00\xff", b""])
    | st.binary(max_size=120),
    max_size=4,
)


@pytest.fixture(scope="module")
def harness() -> Iterator[tuple[Any, asyncio.AbstractEventLoop, Path]]:
    """The proxy app in front of a real upstream, and the loop (in a thread) that runs it."""
    directory = Path(tempfile.mkdtemp(prefix="mcc-proxy-fuzz-", dir=_fast_dir()))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="proxy-fuzz-loop", daemon=True)
    thread.start()
    with serve(RecordingUpstream()) as upstream:
        app = create_proxy_app(
            f"{upstream.url}/gw?key=op",
            str(directory),
            name="fuzz",
            timeout_s=5,
            max_request_bytes=256,
            body_timeout_s=0.2,
        )
        try:
            yield app, loop, directory
        finally:
            asyncio.run_coroutine_threadsafe(_shutdown(app), loop).result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            loop.close()
            shutil.rmtree(directory)


def _fast_dir() -> str | None:
    # tmpfs when there is one: an fsync per captured call on a disk would not fit in CI.
    return "/dev/shm" if Path("/dev/shm").is_dir() else None


async def _shutdown(app: Any) -> None:
    events = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> dict[str, Any]:
        return next(events)

    async def send(message: Any) -> None:
        pass

    await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)


async def _exchange(
    app: Any, scope: dict[str, Any], incoming: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Drive one request as a server would; the messages the app sent.

    Past the messages given, `receive` waits until the response ended (a client that
    stopped sending, or one waiting for its answer), then says the client is gone; once
    the client is gone it says so at once.
    """
    sent: list[dict[str, Any]] = []
    finished = asyncio.Event()
    pending = list(incoming)

    async def receive() -> dict[str, Any]:
        if pending:
            message = pending.pop(0)
            if message["type"] == "http.disconnect":
                finished.set()
            return message
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(dict(message))
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            finished.set()

    try:
        await app(scope, receive, send)
    finally:
        finished.set()
    return sent


def _check_response(sent: list[dict[str, Any]], client_left: bool) -> None:
    if not sent:
        assert client_left, "no response to a client that stayed"
        return
    start, *body = sent
    assert start["type"] == "http.response.start"
    assert isinstance(start["status"], int) and 100 <= start["status"] <= 599
    assert all(isinstance(k, bytes) and isinstance(v, bytes) for k, v in start.get("headers", []))
    assert all(m["type"] == "http.response.body" for m in body)
    assert all(isinstance(m.get("body", b""), bytes) for m in body)
    finals = [i for i, m in enumerate(body) if not m.get("more_body", False)]
    if client_left and not finals:
        return  # cut when the client left: nobody is there to read the end
    assert finals == [len(body) - 1], "the body must end once, with its last message"


def _check_captures(directory: Path) -> None:
    for path in directory.glob("*.capture.jsonl"):
        for raw in path.read_bytes().splitlines():
            if raw.strip():
                msgspec.json.decode(raw, type=CaptureLine)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "HEAD", "OPTIONS", "DELETE"]),
    target=targets,
    headers=st.just([]) | st.lists(header, max_size=4),
    chunks=bodies,
    ending=st.sampled_from(["complete"] * 8 + ["disconnect", "stall"]),
)
def test_hostile_requests_get_a_well_formed_reply_and_valid_captures(
    harness: tuple[Any, asyncio.AbstractEventLoop, Path],
    method: str,
    target: bytes,
    headers: list[tuple[bytes, bytes]],
    chunks: list[bytes],
    ending: str,
) -> None:
    app, loop, directory = harness
    raw_path, _, query = target.partition(b"?")  # as uvicorn splits a target
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "root_path": "",
        "path": unquote(raw_path.decode("latin-1")),
        "raw_path": raw_path,
        "query_string": query,
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8787),
    }
    pieces = chunks or [b""]
    incoming = [
        {"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1}
        for i, piece in enumerate(pieces)
    ]
    if ending == "disconnect":
        incoming[-1]["more_body"] = True
        incoming.append({"type": "http.disconnect"})
    elif ending == "stall":
        incoming[-1]["more_body"] = True
    future = asyncio.run_coroutine_threadsafe(_exchange(app, scope, incoming), loop)
    sent = future.result(timeout=EXAMPLE_DEADLINE_S)
    _check_response(sent, client_left=ending == "disconnect")
    _check_captures(directory)
