"""The capturing proxy end to end: `mcc serve` and the official SDK clients, real parts only.

Two real processes on 127.0.0.1: the demo model server as the upstream, and `mcc serve` in
front of it; the openai and anthropic SDK clients and raw httpx clients drive them. The
failure tests run the proxy on a real uvicorn server in a thread (tests/servers.py) in
front of upstreams that fail on purpose: a closed port, a socket that accepts and never
answers, an app that stalls in the middle of a stream.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from model_call_capture.proxy import create_proxy_app
from servers import serve

from .conftest import API_KEY, closed_port, lines, listening_socket, mcc_serve, wait_for_lines

ROLLOUT = "proxy-7"


@pytest.fixture(scope="module")
def proxy(
    tmp_path_factory: pytest.TempPathFactory, upstream_url: str
) -> Iterator[tuple[str, Path]]:
    """`mcc serve` in front of the upstream, as its own process; yields (its URL, capture dir)."""
    with mcc_serve(upstream_url, tmp_path_factory.mktemp("proxy"), "--timeout", "20") as served:
        yield served.url, served.capture_dir


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

    got = lines(capture_dir, ROLLOUT)
    assert [
        (line.dialect, line.status_code, line.error_category, line.stream is True) for line in got
    ] == [
        ("chat", 200, None, False),
        ("chat", 200, None, True),
        ("responses", 200, None, False),
        ("responses", 200, None, True),
        ("messages", 200, None, False),
        ("messages", 200, None, True),
    ]
    assert {line.model_ref.name for line in got if line.model_ref} == {"proxy-test"}
    assert [line.response is not None for line in got] == [True] * 6
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
    assert len(lines(capture_dir, rollout_id)) == 1  # the prefixed call only


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
    (line,) = wait_for_lines(capture_dir, "leaver-1")
    assert (line.status_code, line.error_category, line.stream) == (200, "cancelled", True)


# -- failures ------------------------------------------------------------------------


def test_upstream_down_is_502_and_recorded_as_connection(tmp_path: Path) -> None:
    app = create_proxy_app(f"http://127.0.0.1:{closed_port()}", str(tmp_path), name="p")
    with serve(app) as server:
        client = openai.OpenAI(
            base_url=f"{server.url}/ng-rollout/down-1/v1", api_key=API_KEY, max_retries=0
        )
        with client, pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(
                model="demo-gpt", messages=[{"role": "user", "content": "hi"}]
            )
    assert raised.value.status_code == 502
    assert "unreachable (ConnectError" in raised.value.message
    # OpenAI's error shape on OpenAI's path: the SDK reads its code (it used to get
    # Anthropic's shape, and None).
    assert (raised.value.code, raised.value.type) == ("upstream_connection_error",) * 2
    (line,) = lines(tmp_path, "down-1")
    assert (line.status_code, line.error_category, line.dialect) == (502, "connection", "chat")
    assert line.request == {"model": "demo-gpt", "messages": [{"role": "user", "content": "hi"}]}


def test_slow_upstream_is_504_and_recorded_as_timeout(tmp_path: Path) -> None:
    silent = listening_socket()  # accepts connections (the kernel does), never answers
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
    (line,) = lines(tmp_path, "slow-1")
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
    (line,) = lines(tmp_path, "stall-1")
    assert (line.status_code, line.error_category, line.stream) == (200, "timeout", True)


# -- the command --------------------------------------------------------------------


def test_serve_on_a_taken_port_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from model_call_capture.cli import main

    taken = listening_socket()
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
        == f"mcc serve: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )


# -- the capture limits ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "gap"),
    [
        (("--capture-max-bytes", "16"), None),
        (("--capture-memory-budget", "0"), "memory_budget"),
    ],
)
def test_the_capture_limits_are_set_from_the_command_line(
    tmp_path: Path, upstream_url: str, options: tuple[str, str], gap: str | None
) -> None:
    """`mcc serve` used to capture with the defaults (64 MiB a call, 1 GiB in all) only."""
    with mcc_serve(upstream_url, tmp_path, *options) as served:
        client = openai.OpenAI(
            base_url=f"{served.url}/ng-rollout/limits-1/v1", api_key=API_KEY, max_retries=0
        )
        with client:
            reply = client.chat.completions.create(
                model="demo-gpt", messages=[{"role": "user", "content": "hi"}]
            )
        (line,) = wait_for_lines(served.capture_dir, "limits-1")
    assert reply.choices  # the call itself is untouched
    assert line.capture_cut is True
    if gap is not None:
        assert gap in {g.code for g in line.gaps}
