"""Hostile clients and replies against a real `mcc serve` (issue 15), over real sockets.

Each test runs `mcc serve` as its own process in front of a real upstream on 127.0.0.1:
`RecordingUpstream` on a uvicorn server in a thread (it answers with what it received), or
a plain socket that writes a reply no library would. Targets no HTTP client sends (dot
segments, absolute-form, `*`, `#`) and half-sent requests go on plain sockets. These tests
use only the public API, so they run against older code too (each failed there).
"""

from __future__ import annotations

import base64
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from servers import serve

from .conftest import (
    RecordingUpstream,
    Served,
    closed_port,
    get,
    listening_socket,
    mcc_serve,
    raw_request,
    read_to_end,
    wait_for_lines,
)

USER = "gw-operator"
PASSWORD = "pw-S3CRET-0451"
KEY = "key-S3CRET-2187"
CHAT = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
MIB = 1024 * 1024


def _with_credentials(host_port: str, path: str) -> str:
    return f"http://{USER}:{PASSWORD}@{host_port}{path}?key={KEY}"


def _assert_secret_free(*texts: str) -> None:
    for text in texts:
        for secret in (USER, PASSWORD, KEY):
            assert secret not in text


def _post(target: bytes, body: bytes, *extra: bytes) -> bytes:
    head = [b"POST " + target + b" HTTP/1.1", b"Host: proxy", b"Connection: close"]
    head += [b"Content-Type: application/json", *extra]
    if not any(h.lower().startswith((b"content-length", b"transfer-encoding")) for h in extra):
        head.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(head) + b"\r\n\r\n" + body


# -- 1. the upstream's credentials ------------------------------------------------------


@pytest.mark.parametrize("failure", ["unreachable", "silent"])
def test_upstream_credentials_reach_no_client_capture_or_log(tmp_path: Path, failure: str) -> None:
    silent = listening_socket()  # accepts (the kernel does), never answers
    port = closed_port() if failure == "unreachable" else silent.getsockname()[1]
    try:
        upstream = _with_credentials(f"127.0.0.1:{port}", "/v1")
        with mcc_serve(upstream, tmp_path, "--timeout", "0.5") as served:
            reply = httpx.post(
                f"{served.url}/ng-rollout/creds-1/v1/chat/completions", content=CHAT, timeout=20
            )
    finally:
        silent.close()
    status, verb = (502, "unreachable") if failure == "unreachable" else (504, "timed out after")
    assert reply.status_code == status
    # Named as it is, its query values hidden (it used to be `upstream *** unreachable`).
    shown = f"http://127.0.0.1:{port}/v1?key=***"
    assert reply.json()["error"]["message"].startswith(f"upstream {shown} {verb}")
    assert served.banner.startswith(f"mcc serve: {served.url} -> {shown}, ")
    logged = [line for line in served.stderr().splitlines() if "(rollout creds-1)" in line]
    assert len(logged) == 1
    assert f"POST /v1/chat/completions (rollout creds-1): upstream {shown} {verb}" in logged[0]
    (line,) = wait_for_lines(served.capture_dir, "creds-1")
    capture = (served.capture_dir / "creds-1.capture.jsonl").read_text()
    _assert_secret_free(reply.text, capture, served.banner, served.stderr())
    assert (line.status_code, line.request) == (
        status,
        {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    )


def test_the_upstream_query_and_userinfo_go_upstream_and_win(tmp_path: Path) -> None:
    upstream = RecordingUpstream()
    with serve(upstream) as up:
        with mcc_serve(_with_credentials(f"127.0.0.1:{up.port}", "/gw"), tmp_path) as served:
            reply = httpx.get(
                f"{served.url}/v1/models?a=1&key=client-override&b=%20",
                headers={"authorization": "Bearer client"},
            )
    assert reply.status_code == 200
    got = reply.json()
    assert got["path"] == "/gw/v1/models"
    assert got["query"] == f"key={KEY}&a=1&b=%20"
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert got["headers"]["authorization"] == f"Basic {basic}"


def _access_line(served: Served, needle: str) -> str:
    """The first line of the server's stdout (uvicorn's access log) holding `needle`."""
    found: list[str] = []

    def read() -> None:
        assert served.proc.stdout is not None
        for line in served.proc.stdout:  # each log record is flushed as it is written
            if needle in line:
                found.append(line)
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert found, f"no line with {needle!r} on stdout"
    return found[0]


def test_a_client_key_in_the_query_string_reaches_no_log_line(tmp_path: Path) -> None:
    # Gemini- and Azure-style clients put their key in the query (`?key=...`); uvicorn's
    # access log (on at `--log-level info`, on stdout) used to print every target whole.
    upstream = RecordingUpstream()
    target = "/ng-rollout/q-1/v1/chat/completions?key=CLIENTKEY1&api-version=2&CLIENTKEY2"
    with serve(upstream) as up:
        with mcc_serve(f"http://127.0.0.1:{up.port}/v1", tmp_path, "--log-level", "info") as served:
            reply = httpx.post(f"{served.url}{target}", content=CHAT)
            access = _access_line(served, '"POST /ng-rollout/q-1/')
            wait_for_lines(served.capture_dir, "q-1")
    assert reply.status_code == 200
    assert reply.json()["query"] == "key=CLIENTKEY1&api-version=2&CLIENTKEY2"  # sent whole
    hidden = "/ng-rollout/q-1/v1/chat/completions?key=***&api-version=***&***"
    assert f'"POST {hidden} HTTP/1.1" 200' in access
    for text in (access, served.stderr()):  # (the capture holds what the upstream echoed)
        assert "CLIENTKEY" not in text


# -- 9. the request body streams, within a bound -----------------------------------------


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def _body(size: int, chunk: int = MIB) -> Iterator[bytes]:
    block = b"x" * chunk
    for offset in range(0, size, chunk):
        yield block[: min(chunk, size - offset)]


def test_a_large_upload_streams_through_without_growing_the_proxy(tmp_path: Path) -> None:
    """Peak RSS (the kernel's high-water mark, reset first) grows by far less than the body."""
    size = 48 * MIB  # under the default --max-request-bytes
    with serve(RecordingUpstream()) as up:
        with mcc_serve(up.url, tmp_path) as served:
            pid = served.proc.pid
            httpx.post(f"{served.url}/v1/upload", content=b"warm-up")
            Path(f"/proc/{pid}/clear_refs").write_text("5")
            before = _status_kib(pid, "VmRSS")
            reply = httpx.post(
                f"{served.url}/v1/upload",
                content=_body(size),
                headers={"content-length": str(size)},
                timeout=120,
            )
            grown = (_status_kib(pid, "VmHWM") - before) * 1024
    assert reply.status_code == 200
    assert reply.json()["body_bytes"] == size
    assert grown < 16 * MIB, f"peak RSS grew by {grown / MIB:.1f} MiB for a {size // MIB} MiB body"


def test_a_declared_body_over_the_limit_is_413_before_it_is_read(tmp_path: Path) -> None:
    upstream = RecordingUpstream()
    with serve(upstream) as up:
        with mcc_serve(up.url, tmp_path, "--max-request-bytes", "1000") as served:
            upstream.seen.clear()  # the start-up probe
            head = _post(b"/ng-rollout/big-1/v1/chat/completions", b"", b"Content-Length: 1001")
            reply = raw_request(served.port, head)
    assert reply.status == 413
    assert reply.json()["error"]["type"] == "request_too_large"
    assert reply.headers["connection"] == "close"
    assert upstream.seen == []
    (line,) = wait_for_lines(served.capture_dir, "big-1")
    assert (line.status_code, line.error_category) == (413, "client_error")


@pytest.mark.parametrize(
    ("target", "shape"),
    [
        (b"/ng-rollout/shape-1/v1/messages", "anthropic"),
        (b"/v1/messages/count_tokens", "anthropic"),
        (b"/ng-rollout/shape-1/v1/chat/completions", "openai"),
        (b"/v1/responses", "openai"),
        (b"/v1/embeddings", "openai"),
    ],
)
def test_an_error_the_proxy_makes_has_the_shape_of_the_api_called(
    tmp_path: Path, target: bytes, shape: str
) -> None:
    """Each SDK reads `type` and `code` only from its own shape (the proxy used to answer
    every path in Anthropic's)."""
    with serve(RecordingUpstream()) as up:
        with mcc_serve(up.url, tmp_path, "--max-request-bytes", "10") as served:
            reply = raw_request(served.port, _post(target, CHAT))
    message = f"the request body ({len(CHAT)} bytes) is larger than this proxy accepts (10 bytes)"
    assert reply.status == 413
    if shape == "anthropic":
        assert reply.json() == {
            "type": "error",
            "error": {"type": "request_too_large", "message": message},
        }
    else:
        assert reply.json() == {
            "error": {
                "message": message,
                "type": "request_too_large",
                "param": None,
                "code": "request_too_large",
            }
        }


def test_a_chunked_body_over_the_limit_is_413(tmp_path: Path) -> None:
    chunks = b"".join(b"100\r\n" + b"y" * 256 + b"\r\n" for _ in range(8)) + b"0\r\n\r\n"
    with serve(RecordingUpstream()) as up:
        with mcc_serve(up.url, tmp_path, "--max-request-bytes", "1000") as served:
            reply = raw_request(
                served.port, _post(b"/v1/chat/completions", chunks, b"Transfer-Encoding: chunked")
            )
    assert reply.status == 413
    assert "1000 bytes" in reply.json()["error"]["message"]


def test_a_body_that_stalls_is_408_and_recorded_as_timeout(tmp_path: Path) -> None:
    with serve(RecordingUpstream()) as up:
        with mcc_serve(up.url, tmp_path, "--body-timeout", "0.5") as served:
            half = _post(
                b"/ng-rollout/stall-1/v1/chat/completions", CHAT[:10], b"Content-Length: 100"
            )
            reply = raw_request(served.port, half)
    assert reply.status == 408
    assert reply.json() == {  # OpenAI's error shape, on OpenAI's path
        "error": {
            "message": "no request body received for 0.5 s",
            "type": "request_timeout",
            "param": None,
            "code": "request_timeout",
        }
    }
    (line,) = wait_for_lines(served.capture_dir, "stall-1")
    assert (line.status_code, line.error_category) == (408, "timeout")


# -- 10. half-sent requests, and the connection cap --------------------------------------


def test_half_sent_requests_are_cut_at_the_header_timeout_and_the_oldest_past_the_cap(
    tmp_path: Path,
) -> None:
    """300 heads that never end against a cap of 50: each new connection past the cap
    closes the one that has waited longest, so a request is served at once (it used to be
    answered 503 until the deadline freed a slot); the 49 kept to the end get their 408."""
    options = ("--header-timeout", "2", "--max-connections", "50")
    with serve(RecordingUpstream()) as up, mcc_serve(up.url, tmp_path, *options) as served:
        idle = []
        try:
            for _ in range(300):  # slowloris: heads that never end
                sock = socket.create_connection(("127.0.0.1", served.port), timeout=15)
                sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-")
                idle.append(sock)
            served_at_once = raw_request(served.port, get(b"/v1/models"))
            cut = [read_to_end(sock).split(b"\r\n", 1)[0] for sock in idle]
        finally:
            for sock in idle:
                sock.close()
    assert served_at_once.status == 200
    assert cut == [b""] * 251 + [b"HTTP/1.1 408 Request Timeout"] * 49


# -- 11. the target stays under the upstream base path ----------------------------------


@pytest.mark.parametrize(
    "target",
    [
        b"/v1/../../other",
        b"/ng-rollout/x/v1/../../other",
        b"/v1/%2e%2e/%2E%2e/other",
        b"/ng-rollout/x/v1/%2e%2e/.%2E/other",
        b"/v1/..%2f..%2fother",
        b"/ng-rollout/x/../../other",
    ],
)
def test_a_target_that_climbs_out_of_the_base_is_400(tmp_path: Path, target: bytes) -> None:
    upstream = RecordingUpstream()
    with serve(upstream) as up, mcc_serve(f"{up.url}/gw", tmp_path) as served:
        upstream.seen.clear()  # the start-up probe
        reply = raw_request(served.port, get(target))
    assert reply.status == 400
    assert reply.json()["error"]["type"] == "invalid_request_target"
    assert upstream.seen == []


def test_dot_segments_are_resolved_before_routing_and_capture(tmp_path: Path) -> None:
    upstream = RecordingUpstream()
    with serve(upstream) as up, mcc_serve(f"{up.url}/gw", tmp_path) as served:
        models = raw_request(served.port, get(b"/v1/../v1/./models"))
        chat = raw_request(
            served.port, _post(b"/ng-rollout/dots-1/v1/./x/../chat/completions", CHAT)
        )
    assert (models.status, models.json()["path"]) == (200, "/gw/v1/models")
    assert (chat.status, chat.json()["path"]) == (200, "/gw/v1/chat/completions")
    (line,) = wait_for_lines(served.capture_dir, "dots-1")
    assert (line.dialect, line.status_code) == ("chat", 200)


# -- 12. absolute-form, `*` and `#` --------------------------------------------------------


def test_request_target_forms(tmp_path: Path) -> None:
    upstream = RecordingUpstream()
    with serve(upstream) as up, mcc_serve(f"{up.url}/gw", tmp_path) as served:
        upstream.seen.clear()  # the start-up probe
        absolute = raw_request(served.port, get(b"http://elsewhere.example/v1/models?a=1"))
        captured = raw_request(
            served.port, _post(b"https://h/ng-rollout/abs-1/v1/chat/completions", CHAT)
        )
        star = raw_request(
            served.port, b"OPTIONS * HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n"
        )
        fragment = raw_request(served.port, get(b"/v1/models#top"))
        in_query = raw_request(served.port, get(b"/v1/models?a=1#top"))
    # RFC 9112 section 3.2.2: absolute-form is taken by its path, not by its host.
    assert (absolute.status, absolute.json()["path"], absolute.json()["query"]) == (
        200,
        "/gw/v1/models",
        "a=1",
    )
    assert absolute.json()["headers"]["host"] == f"127.0.0.1:{up.port}"
    assert captured.status == 200
    assert [line.dialect for line in wait_for_lines(served.capture_dir, "abs-1")] == ["chat"]
    assert [star.status, fragment.status, in_query.status] == [400, 400, 400]
    assert len(upstream.seen) == 2
    assert "Traceback" not in served.stderr()


# -- 13. an upstream reply framed twice ---------------------------------------------------

_REPLY_BODY = (
    b'{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":'
    b'[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}'
)


_PROBE_REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


@contextmanager
def _raw_upstream(reply: bytes) -> Iterator[int]:
    """A socket server that reads each request head and body, then writes `reply` and closes.

    `GET /` (the start-up probe of `mcc_serve`) gets a plain reply.
    """
    listener = listening_socket()
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(h.split(b":")[1])
                    for h in head.split(b"\r\n")
                    if h.lower().startswith(b"content-length")
                ),
                0,
            )
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(_PROBE_REPLY if head.startswith(b"GET / ") else reply)

    def run() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def test_a_reply_with_transfer_encoding_and_a_stale_content_length_reaches_the_client_whole(
    tmp_path: Path,
) -> None:
    half = len(_REPLY_BODY) // 2
    chunked = b"".join(
        f"{len(part):x}\r\n".encode() + part + b"\r\n"
        for part in (_REPLY_BODY[:half], _REPLY_BODY[half:])
    )
    reply = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked + b"0\r\n\r\n"
    )
    with _raw_upstream(reply) as port, mcc_serve(f"http://127.0.0.1:{port}", tmp_path) as served:
        got = httpx.post(f"{served.url}/ng-rollout/te-1/v1/chat/completions", content=CHAT)
    assert got.status_code == 200
    assert got.content == _REPLY_BODY
    assert "content-length" not in got.headers
    (line,) = wait_for_lines(served.capture_dir, "te-1")
    assert (line.status_code, line.error_category) == (200, None)
    assert (
        line.response is not None and line.response["choices"][0]["message"]["content"] == "hello"
    )


def test_an_empty_reply_is_recorded_as_it_ended_when_the_client_leaves_at_once(
    tmp_path: Path,
) -> None:
    # With `content-length: 0` the client has the whole reply with its head and may close
    # the connection at once; the line was written only at the (empty) body message after
    # it, and the proxy, seeing the client gone first, recorded the call as `cancelled`
    # (4 of 8 calls here). The start of such a reply now waits for the line.
    reply = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    calls = 12
    with _raw_upstream(reply) as port, mcc_serve(f"http://127.0.0.1:{port}", tmp_path) as served:
        for i in range(calls):
            with socket.create_connection(("127.0.0.1", served.port)) as client:
                client.sendall(_post(f"/ng-rollout/empty-{i}/v1/chat/completions".encode(), CHAT))
                head = b""
                while b"\r\n\r\n" not in head:
                    head += client.recv(65536)
            assert head.startswith(b"HTTP/1.1 404 ")  # and the client leaves
        lines = [wait_for_lines(served.capture_dir, f"empty-{i}")[0] for i in range(calls)]
    assert [(line.status_code, line.error_category) for line in lines] == [
        (404, "not_found")
    ] * calls
