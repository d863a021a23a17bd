"""The capturing reverse proxy (`proxy.py`, `mcc serve`), with real parts only.

The end-to-end tests run two real processes on 127.0.0.1: the demo model server as the
upstream, and `mcc serve` in front of it; the official openai and anthropic SDK clients and
raw httpx clients drive them. The failure tests run the proxy on a real uvicorn server in a
thread (tests/servers.py) in front of upstreams that fail on purpose: a closed port, a
socket that accepts and never answers, an app that stalls in the middle of a stream.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from model_call_capture import CaptureStore
from model_call_capture.proxy import ProxyApp, _forwarded_headers, create_proxy_app
from servers import serve

API_KEY = "sk-secret-never-recorded-4242"
ROLLOUT = "proxy-7"

_UPSTREAM_CODE = """
import socket, sys, uvicorn
from model_call_capture.demo.model_server import create_app
sock = socket.socket(fileno=int(sys.argv[1]))
config = uvicorn.Config(create_app(), log_level="warning", server_header=False, date_header=False)
uvicorn.Server(config).run(sockets=[sock])
"""


def _listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def _wait_until_serving(url: str, proc: subprocess.Popen[Any], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}: {log.read_text()}")
        try:
            httpx.get(url + "/", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer: {log.read_text()}")


def _stop(proc: subprocess.Popen[Any]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture(scope="module")
def upstream_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo model server, as its own process on a socket bound here (no port race)."""
    log = tmp_path_factory.mktemp("upstream") / "stderr.log"
    sock = _listening_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", _UPSTREAM_CODE, str(sock.fileno())],
            pass_fds=[sock.fileno()],
            stderr=err,
        )
    sock.close()
    try:
        _wait_until_serving(url, proc, log)
        yield url
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def proxy(
    tmp_path_factory: pytest.TempPathFactory, upstream_url: str
) -> Iterator[tuple[str, Path]]:
    """`mcc serve` in front of the upstream, as its own process; yields (its URL, capture dir)."""
    root = tmp_path_factory.mktemp("proxy")
    capture_dir = root / "captures"
    log = root / "stderr.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "model_call_capture.cli",
                "serve",
                "--upstream",
                upstream_url,
                "--capture-dir",
                str(capture_dir),
                "--name",
                "proxy-test",
                "--port",
                "0",
                "--timeout",
                "20",
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        match = re.match(r"mcc serve: http://127\.0\.0\.1:(\d+) -> ", first)
        assert match, f"unexpected first line {first!r}: {log.read_text()}"
        url = f"http://127.0.0.1:{match.group(1)}"
        _wait_until_serving(url, proc, log)
        yield url, capture_dir
    finally:
        _stop(proc)


def _lines(capture_dir: Path, rollout_id: str) -> list[Any]:
    return CaptureStore(capture_dir).read(rollout_id)


# -- the SDKs through the proxy ------------------------------------------------------


def test_sdk_calls_through_the_proxy_are_answered_and_captured(proxy: tuple[str, Path]) -> None:
    url, capture_dir = proxy
    base = f"{url}/ng-rollout/{ROLLOUT}"
    oai = openai.OpenAI(base_url=base + "/v1", api_key=API_KEY, max_retries=0)
    ant = anthropic.Anthropic(base_url=base, api_key=API_KEY, max_retries=0)

    chat = oai.chat.completions.create(
        model="demo-gpt", messages=[{"role": "user", "content": "hi"}]
    )
    assert chat.choices[0].message.content or chat.choices[0].message.tool_calls
    chunks = list(
        oai.chat.completions.create(
            model="demo-gpt",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks
    response = oai.responses.create(model="demo-gpt", input="hi")
    assert response.status == "completed"
    events = [e.type for e in oai.responses.create(model="demo-gpt", input="hi", stream=True)]
    assert events[-1] == "response.completed"
    message = ant.messages.create(
        model="demo-claude", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.stop_reason is not None
    with ant.messages.stream(
        model="demo-claude", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as s:
        final = s.get_final_message()
    assert final.stop_reason is not None

    lines = _lines(capture_dir, ROLLOUT)
    assert [
        (line.dialect, line.status_code, line.error_category, line.stream is True) for line in lines
    ] == [
        ("chat", 200, None, False),
        ("chat", 200, None, True),
        ("responses", 200, None, False),
        ("responses", 200, None, True),
        ("messages", 200, None, False),
        ("messages", 200, None, True),
    ]
    assert {line.model_ref.name for line in lines if line.model_ref} == {"proxy-test"}
    assert [line.response is not None for line in lines] == [True] * 6
    # Headers are forwarded (the upstream got the key) but never recorded.
    assert API_KEY.encode() not in (capture_dir / f"{ROLLOUT}.capture.jsonl").read_bytes()


# -- byte for byte -------------------------------------------------------------------

_CASES: list[tuple[str, dict[str, Any]]] = [
    (
        "/v1/chat/completions",
        {"model": "demo-gpt", "messages": [{"role": "user", "content": "hi"}]},
    ),
    (
        "/v1/chat/completions",
        {
            "model": "demo-gpt",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ),
    ("/v1/responses", {"model": "demo-gpt", "input": "hi"}),
    ("/v1/responses", {"model": "demo-gpt", "input": "hi", "stream": True}),
    (
        "/v1/messages",
        {"model": "demo-claude", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]},
    ),
    (
        "/v1/messages",
        {
            "model": "demo-claude",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
        },
    ),
    # Compressed bodies pass through still compressed (the scenario is named by `model`).
    ("/v1/chat/completions", {"model": "gzip", "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/responses", {"model": "br+slow", "input": "hi", "stream": True}),
]


def _raw_exchange(
    url: str, body: dict[str, Any]
) -> tuple[int, tuple[str, str], bytes, list[bytes]]:
    """Status, (content type, content encoding), the raw (still encoded) body, and its chunks as they arrived."""
    with httpx.Client(timeout=20) as client:
        with client.stream(
            "POST", url, json=body, headers={"authorization": f"Bearer {API_KEY}"}
        ) as response:
            chunks = list(response.iter_raw())
            kind = (
                response.headers.get("content-type", ""),
                response.headers.get("content-encoding", ""),
            )
            return response.status_code, kind, b"".join(chunks), chunks


@pytest.mark.parametrize(
    ("path", "body"),
    _CASES,
    ids=[f"{p}-{b['model']}{'-stream' if b.get('stream') else ''}" for p, b in _CASES],
)
def test_client_gets_the_bytes_the_upstream_sent(
    proxy: tuple[str, Path], upstream_url: str, path: str, body: dict[str, Any]
) -> None:
    url, capture_dir = proxy
    rollout_id = (
        "bytes-"
        + re.sub(r"[^a-z]", "", path + body["model"])
        + ("-s" if body.get("stream") else "")
    )
    direct = _raw_exchange(upstream_url + path, body)
    proxied = _raw_exchange(f"{url}/ng-rollout/{rollout_id}{path}", body)
    unprefixed = _raw_exchange(url + path, body)
    assert direct[0] == 200
    assert proxied[:3] == direct[:3]
    assert unprefixed[:3] == direct[:3]
    content_type, encoding = direct[1]
    assert encoding == {"gzip": "gzip", "br+slow": "br"}.get(body["model"], "")
    if encoding == "gzip":
        assert direct[2][:2] == b"\x1f\x8b"  # the gzip magic: the client got the compressed bytes
    if body.get("stream"):
        assert content_type.startswith("text/event-stream")
        assert len(proxied[3]) > 1, "a stream must reach the client in more than one piece"
    assert len(_lines(capture_dir, rollout_id)) == 1  # the prefixed call only


def test_unprefixed_calls_are_forwarded_but_not_captured(proxy: tuple[str, Path]) -> None:
    url, capture_dir = proxy
    before = sorted(p.name for p in capture_dir.iterdir()) if capture_dir.exists() else []
    status, _, _, _ = _raw_exchange(url + "/v1/chat/completions", _CASES[0][1])
    assert status == 200
    after = sorted(p.name for p in capture_dir.iterdir()) if capture_dir.exists() else []
    assert after == before


def test_a_client_that_leaves_mid_stream_is_recorded_as_cancelled(proxy: tuple[str, Path]) -> None:
    url, capture_dir = proxy
    body = {"model": "forever", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.stream(
        "POST", f"{url}/ng-rollout/leaver-1/v1/chat/completions", json=body, timeout=20
    ) as response:
        chunks = response.iter_raw()
        assert next(chunks).startswith(b"data: ")
        next(chunks)
    # Wait for the line, not the file: the file exists a moment before its line is written.
    store, deadline = CaptureStore(capture_dir), time.monotonic() + 10
    while not store.read_available("leaver-1")[0] and time.monotonic() < deadline:
        time.sleep(0.05)
    (line,) = _lines(capture_dir, "leaver-1")
    assert (line.status_code, line.error_category, line.stream) == (200, "cancelled", True)


# -- failures ------------------------------------------------------------------------


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


def test_upstream_down_is_502_and_recorded_as_connection(tmp_path: Path) -> None:
    app = create_proxy_app(f"http://127.0.0.1:{_closed_port()}", str(tmp_path), name="p")
    with serve(app) as server:
        client = openai.OpenAI(
            base_url=f"{server.url}/ng-rollout/down-1/v1", api_key=API_KEY, max_retries=0
        )
        with pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(
                model="demo-gpt", messages=[{"role": "user", "content": "hi"}]
            )
    assert raised.value.status_code == 502
    assert "unreachable (ConnectError" in raised.value.message
    (line,) = _lines(tmp_path, "down-1")
    assert (line.status_code, line.error_category, line.dialect) == (502, "connection", "chat")
    assert line.request == {"model": "demo-gpt", "messages": [{"role": "user", "content": "hi"}]}


def test_slow_upstream_is_504_and_recorded_as_timeout(tmp_path: Path) -> None:
    silent = _listening_socket()  # accepts connections (the kernel does), never answers
    try:
        app = create_proxy_app(
            f"http://127.0.0.1:{silent.getsockname()[1]}", str(tmp_path), name="p", timeout_s=0.3
        )
        with serve(app) as server:
            client = anthropic.Anthropic(
                base_url=f"{server.url}/ng-rollout/slow-1", api_key=API_KEY, max_retries=0
            )
            with pytest.raises(anthropic.APIStatusError) as raised:
                client.messages.create(
                    model="demo-claude", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
                )
    finally:
        silent.close()
    assert raised.value.status_code == 504
    assert "timed out after 0.3 s (ReadTimeout)" in raised.value.message
    (line,) = _lines(tmp_path, "slow-1")
    assert (line.status_code, line.error_category, line.dialect) == (504, "timeout", "messages")
    assert line.response is not None and line.response["error"]["type"] == "upstream_timeout"


async def _stalling_upstream(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Starts a chat stream, sends one event, then stalls until the proxy gives up and hangs up."""
    if scope["type"] != "http":
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
    )
    chunk = b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
    await send({"type": "http.response.body", "body": chunk, "more_body": True})
    while (await receive())["type"] != "http.disconnect":
        pass


def test_timeout_in_the_middle_of_a_stream_cuts_it_and_is_recorded(tmp_path: Path) -> None:
    with serve(_stalling_upstream) as upstream:
        with serve(
            create_proxy_app(upstream.url, str(tmp_path), name="p", timeout_s=0.3)
        ) as server:
            received = bytearray()
            with pytest.raises(httpx.RemoteProtocolError):
                with httpx.stream(
                    "POST",
                    f"{server.url}/ng-rollout/stall-1/v1/chat/completions",
                    json={"stream": True},
                    timeout=10,
                ) as response:
                    assert response.status_code == 200
                    for chunk in response.iter_raw():
                        received += chunk
    assert received.startswith(b'data: {"id":"c1"')
    (line,) = _lines(tmp_path, "stall-1")
    assert (line.status_code, line.error_category, line.stream) == (200, "timeout", True)


# -- pieces --------------------------------------------------------------------------


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
    assert _forwarded_headers(raw, frozenset({"host"})) == [
        (b"Authorization", b"Bearer x"),
        (b"Content-Type", b"application/json"),
        (b"X-Api-Key", b"k"),
    ]


@pytest.mark.parametrize(
    ("upstream", "path", "query", "expected"),
    [
        ("http://vllm:8000", "/v1/chat/completions", b"", "http://vllm:8000/v1/chat/completions"),
        ("http://vllm:8000/", "/v1/models", b"a=1", "http://vllm:8000/v1/models?a=1"),
        ("http://vllm:8000/v1", "/v1/responses", b"", "http://vllm:8000/v1/responses"),
        ("https://gw.example/openai", "/v1/messages", b"", "https://gw.example/openai/v1/messages"),
    ],
)
def test_target_url(upstream: str, path: str, query: bytes, expected: str) -> None:
    scope = {"type": "http", "path": path, "raw_path": path.encode(), "query_string": query}
    assert str(ProxyApp(upstream)._target(scope)) == expected


@pytest.mark.parametrize("upstream", ["ftp://host", "localhost:8000", "http://"])
def test_an_upstream_that_is_not_an_http_url_is_refused(upstream: str) -> None:
    with pytest.raises(ValueError, match="upstream must be an http"):
        ProxyApp(upstream)


def test_serve_on_a_taken_port_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from model_call_capture.cli import main

    taken = _listening_socket()
    port = taken.getsockname()[1]
    try:
        with pytest.raises(SystemExit) as exited:
            main(
                [
                    "serve",
                    "--upstream",
                    "http://127.0.0.1:1",
                    "--capture-dir",
                    str(tmp_path),
                    "--port",
                    str(port),
                ]
            )
    finally:
        taken.close()
    assert exited.value.code == 1
    assert (
        capsys.readouterr().err
        == f"mcc: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )
