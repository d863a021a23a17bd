"""CaptureMiddleware on a real uvicorn server, driven by the real openai and anthropic SDKs.

Every test serves the scripted model app (`model_call_capture.demo.model_server`) on
127.0.0.1 behind the middleware and checks the capture lines on disk with the stdlib
`json` module as an independent reader. Nothing is mocked except where a test says so:
ENOSPC is injected at the store's append (a real full disk cannot be made here without
root mounts), and the "line durable before the terminal event" test wraps the real store
to pause its append.
"""

from __future__ import annotations

import asyncio
import errno
import gzip
import json
import logging
import socket
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import brotli
import httpx
import openai
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from model_call_capture import middleware as middleware_module
from model_call_capture.contracts import CaptureConfig, CaptureLine
from model_call_capture.demo.model_server import create_app
from model_call_capture.middleware import (
    CAPTURE_EXTENSION,
    CaptureMiddleware,
    _split_rollout_prefix,
    error_category_for_status,
    install_model_call_capture,
)
from model_call_capture.store import CaptureStore
from servers import RunningServer, serve

SERVER_NAME = "policy_model"
MODEL_REF = {"type": "responses_api_models", "name": SERVER_NAME}
PATHS = {"responses": "/v1/responses", "chat": "/v1/chat/completions", "messages": "/v1/messages"}
CHAT_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ANSWER = "It is 18 \u00b0C with light rain in Paris: take a raincoat and an umbrella."
TOOL_TEXT = "Let me check the weather for you \u2014 one moment."
REASONING = "The user asks about the weather; the get_weather tool can tell me."


# -- helpers ---------------------------------------------------------------------------


def config_for(directory: Path, **overrides: Any) -> CaptureConfig:
    return CaptureConfig(
        observability_enabled=True, model_call_capture_dir=str(directory), **overrides
    )


@contextmanager
def capturing(
    directory: Path, *, store: Any = None, app: Any = None, **overrides: Any
) -> Iterator[RunningServer]:
    wrapped = CaptureMiddleware(
        app or create_app(),
        config=config_for(directory, **overrides),
        model_server_name=SERVER_NAME,
        store=store,
    )
    with serve(wrapped) as server:
        yield server


def new_rollout() -> str:
    return f"r-{uuid.uuid4().hex[:12]}"


def read_lines(directory: Path, rollout_id: str) -> list[dict[str, Any]]:
    path = directory / f"{rollout_id}.capture.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def wait_lines(
    directory: Path, rollout_id: str, count: int = 1, timeout: float = 10.0
) -> list[dict[str, Any]]:
    """Lines of a rollout, waiting for `count` of them (calls the client abandoned finish later)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = read_lines(directory, rollout_id)
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.01)


def only_line(directory: Path, rollout_id: str) -> dict[str, Any]:
    lines = wait_lines(directory, rollout_id)
    assert len(lines) == 1, lines
    return lines[0]


def chat_body(model: str = "demo-gpt", *, stream: bool = False, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }
    if stream:
        body["stream"] = True
    return body | extra


def body_for(dialect: str, model: str, *, stream: bool) -> dict[str, Any]:
    if dialect == "chat":
        return chat_body(model, stream=stream, tools=[CHAT_TOOL])
    if dialect == "responses":
        tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
        return {"model": model, "input": "Weather in Paris?", "tools": [tool], "stream": stream}
    tool = {"name": "get_weather", "input_schema": {"type": "object"}}
    return {
        "model": model,
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [tool],
        "stream": stream,
    }


def raw_exchange(
    server: RunningServer, path: str, body: bytes, *, headers: dict[str, str] | None = None
) -> bytes:
    """Every byte the server sends for one request, read from a plain socket until it closes."""
    head = [
        f"POST {path} HTTP/1.1",
        f"host: 127.0.0.1:{server.port}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        *(f"{k}: {v}" for k, v in (headers or {}).items()),
    ]
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        received = bytearray()
        while chunk := sock.recv(65536):
            received += chunk
    # uvicorn's Date header is the only thing allowed to differ between two servers.
    return b"\r\n".join(
        line for line in bytes(received).split(b"\r\n") if not line.lower().startswith(b"date: ")
    )


# -- the real SDKs, sync and async -------------------------------------------------------


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("captures")


@pytest.fixture(scope="module")
def server(shared_dir: Path) -> Iterator[RunningServer]:
    with capturing(shared_dir) as running:
        yield running


@pytest.fixture(scope="module")
def plain_server() -> Iterator[RunningServer]:
    with serve(create_app()) as running:
        yield running


def test_openai_chat_sync_json_and_stream(server: RunningServer, shared_dir: Path) -> None:
    rollout = new_rollout()
    client = openai.OpenAI(
        base_url=f"{server.url}/ng-rollout/{rollout}/v1", api_key="k", max_retries=0
    )
    raw = client.chat.completions.with_raw_response.create(
        model="demo-gpt",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[CHAT_TOOL],  # type: ignore[list-item]
    )
    completion = raw.parse()
    assert completion.choices[0].message.tool_calls is not None
    stream = client.chat.completions.create(
        model="demo-gpt",
        messages=[{"role": "user", "content": "And now?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == ANSWER

    first, second = wait_lines(shared_dir, rollout, 2)
    assert first["request"] == {
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "model": "demo-gpt",
        "tools": [CHAT_TOOL],
    }
    assert first["response"] == json.loads(raw.http_response.content)
    assert first["response"]["usage"] == {
        "prompt_tokens": 120,
        "completion_tokens": 40,
        "total_tokens": 160,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    assert {
        k: first[k] for k in ("format", "dialect", "model_ref", "status_code", "error_category")
    } == {
        "format": "model-call-capture/1",
        "dialect": "chat",
        "model_ref": MODEL_REF,
        "status_code": 200,
        "error_category": None,
    }
    assert "stream" not in first and "response_raw" not in first and "request_raw" not in first
    assert second["request"] == {
        "messages": [{"role": "user", "content": "And now?"}],
        "model": "demo-gpt",
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert second["stream"] is True
    assert second["error_category"] is None
    assert "response_raw" not in second  # on_failure: a stream that ended well keeps no raw text
    message = second["response"]["choices"][0]["message"]
    assert message["content"] == text
    assert message["reasoning_content"] == REASONING
    assert second["response"]["usage"]["total_tokens"] == 160
    for line in (first, second):
        assert line["started_at"] <= line["completed_at"]
        assert 0 <= line["latency_ttft_ms"] <= line["latency_ms"]
        assert len(line["model_call_id"]) == 32
    assert first["model_call_id"] != second["model_call_id"]


def test_openai_responses_async_json_and_stream(server: RunningServer, shared_dir: Path) -> None:
    rollout = new_rollout()

    async def calls() -> tuple[Any, list[Any]]:
        async with openai.AsyncOpenAI(
            base_url=f"{server.url}/ng-rollout/{rollout}/v1", api_key="k", max_retries=0
        ) as client:
            raw = await client.responses.with_raw_response.create(
                model="demo-gpt", input="Weather in Paris?"
            )
            stream = await client.responses.create(
                model="demo-gpt", input="Weather in Paris?", stream=True
            )
            events = [event async for event in stream]
            return raw, events

    raw, events = asyncio.run(calls())
    assert raw.parse().output_text == ANSWER
    assert events[-1].type == "response.completed"
    first, second = wait_lines(shared_dir, rollout, 2)
    assert first["dialect"] == "responses"
    assert first["request"] == {"model": "demo-gpt", "input": "Weather in Paris?"}
    assert first["response"] == json.loads(raw.http_response.content)
    assert second["request"] == {"model": "demo-gpt", "input": "Weather in Paris?", "stream": True}
    assert second["stream"] is True and second["error_category"] is None
    assert second["response"]["id"] == events[-1].response.id
    assert second["response"]["status"] == "completed"
    assert second["response"]["usage"] == {
        "input_tokens": 120,
        "input_tokens_details": {"cached_tokens": 64},
        "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 12},
        "total_tokens": 160,
    }
    texts = [
        c["text"]
        for item in second["response"]["output"]
        if item["type"] == "message"
        for c in item["content"]
    ]
    assert texts == [ANSWER]


def test_anthropic_sync_json_and_async_stream(server: RunningServer, shared_dir: Path) -> None:
    rollout = new_rollout()
    base = f"{server.url}/ng-rollout/{rollout}"  # the anthropic SDK appends /v1/messages itself
    tool = {
        "name": "get_weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    client = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
    raw = client.messages.with_raw_response.create(
        model="demo-claude",
        max_tokens=256,
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[tool],  # type: ignore[list-item]
    )
    assert [block.type for block in raw.parse().content] == ["thinking", "text", "tool_use"]

    async def stream() -> Any:
        async with anthropic.AsyncAnthropic(base_url=base, api_key="k", max_retries=0) as aclient:
            async with aclient.messages.stream(
                model="demo-claude", max_tokens=256, messages=[{"role": "user", "content": "Hi"}]
            ) as events:
                return await events.get_final_message()

    final = asyncio.run(stream())
    first, second = wait_lines(shared_dir, rollout, 2)
    assert first["dialect"] == "messages"
    assert first["request"] == {
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "model": "demo-claude",
        "tools": [tool],
    }
    assert first["response"] == json.loads(raw.http_response.content)
    assert second["request"] == {
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Hi"}],
        "model": "demo-claude",
        "stream": True,
    }
    assert second["stream"] is True and second["error_category"] is None
    assert second["response"]["id"] == final.id
    assert second["response"]["stop_reason"] == "end_turn"
    assert second["response"]["content"] == [
        {"type": "thinking", "thinking": REASONING, "signature": final.content[0].signature},
        {"type": "text", "text": ANSWER},
    ]
    assert second["response"]["usage"] == {
        "input_tokens": 20,
        "cache_creation_input_tokens": 30,
        "cache_read_input_tokens": 70,
        "output_tokens": 40,
    }


# -- bytes are never changed ----------------------------------------------------------

BYTE_CASES = [
    "demo-gpt",
    "text",
    "incomplete",
    "failed",
    "error_event",
    "truncate",
    "raise_before",
    "raise_mid",
    "raise_after_terminal",
    "raise_after_response",
    "raise_timeout",
    "raise_connection",
    "raise_status",
    "status_401",
    "status_429",
    "status_500",
    "status_529",
    "empty",
    "no_content",
    "text_body",
    "json_array",
    "gzip",
    "deflate",
    "br",
    "gzip+split",
    "br+raise_mid",
    "keepalive",
    "crlf",
    "split",
    "uppercase_ct",
    "extra_after_terminal",
    "big_40",
]


@pytest.mark.parametrize("dialect", ["responses", "chat", "messages"])
def test_client_bytes_are_identical_with_and_without_capture(
    dialect: str, server: RunningServer, plain_server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    calls = 0
    for case in BYTE_CASES:
        for stream in (False, True):
            body = json.dumps(body_for(dialect, case, stream=stream)).encode()
            direct = raw_exchange(plain_server, PATHS[dialect], body)
            captured = raw_exchange(server, f"/ng-rollout/{rollout}{PATHS[dialect]}", body)
            assert captured == direct, (case, stream)
            calls += 1
    for body in (b"{not json", b"[]", b'"hello"', b"", b"\xff\xfe"):
        assert raw_exchange(server, f"/ng-rollout/{rollout}{PATHS[dialect]}", body) == raw_exchange(
            plain_server, PATHS[dialect], body
        )
        calls += 1
    lines = wait_lines(shared_dir, rollout, calls)
    assert len(lines) == calls
    assert len({line["model_call_id"] for line in lines}) == calls


# -- the end of a response waits for its line -----------------------------------------


class PausingStore(CaptureStore):
    """The real store, whose append waits for `release` (to observe the order of events)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.entered = threading.Event()
        self.release = threading.Event()

    def append(self, rollout_id: str, line: CaptureLine | bytes) -> None:
        self.entered.set()
        assert self.release.wait(10)
        super().append(rollout_id, line)


TERMINALS = {
    "responses": b"event: response.completed",
    "chat": b"data: [DONE]",
    "messages": b"event: message_stop",
}


@pytest.mark.parametrize("dialect", ["responses", "chat", "messages"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_the_end_of_a_response_reaches_the_client_only_after_its_line_is_on_disk(
    dialect: str, stream: bool, tmp_path: Path
) -> None:
    store = PausingStore(tmp_path)
    rollout = new_rollout()
    received = bytearray()
    seen_end_with_lines: list[int] = []
    body = body_for(dialect, "demo-gpt", stream=stream)

    def client(url: str) -> None:
        with httpx.stream("POST", url, json=body, timeout=20) as response:
            for chunk in response.iter_raw():
                received.extend(chunk)
                if stream and TERMINALS[dialect] in received and not seen_end_with_lines:
                    seen_end_with_lines.append(len(read_lines(tmp_path, rollout)))
        if not stream:
            seen_end_with_lines.append(len(read_lines(tmp_path, rollout)))

    with capturing(tmp_path, store=store) as server:
        thread = threading.Thread(
            target=client, args=(f"{server.url}/ng-rollout/{rollout}{PATHS[dialect]}",)
        )
        thread.start()
        assert store.entered.wait(10)
        time.sleep(0.2)  # give a wrongly released end every chance to arrive
        assert TERMINALS[dialect] not in received
        assert not seen_end_with_lines
        if stream:
            assert len(received) > 0  # everything before the terminal event went out at once
        store.release.set()
        thread.join(10)
    assert seen_end_with_lines == [1]
    assert json.loads(bytes(received)) if not stream else TERMINALS[dialect] in received


class RawStreamClient:
    """A plain-socket HTTP/1.1 client that reads a response in a thread as its bytes arrive."""

    def __init__(self, server: RunningServer, path: str, body: bytes) -> None:
        self.received = bytearray()
        self.arrived = threading.Condition()
        self.sock = socket.create_connection((server.host, server.port), timeout=20)
        head = (
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.sock.sendall(head.encode() + body)
        self.thread = threading.Thread(target=self._read)
        self.thread.start()

    def _read(self) -> None:
        while chunk := self.sock.recv(65536):
            with self.arrived:
                self.received += chunk
                self.arrived.notify_all()

    def wait_for(self, data: bytes, timeout: float = 10.0) -> bool:
        with self.arrived:
            return self.arrived.wait_for(lambda: data in self.received, timeout)

    def close(self) -> bytes:
        self.thread.join(20)
        self.sock.close()
        return bytes(self.received)


def test_the_first_chunk_of_a_stream_reaches_the_client_before_capture_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real reassembler, wrapped (the only stand-in here) so that its first feed waits
    # until the client has the first chunk: capturing before forwarding would stall it.
    import model_call_capture.middleware as middleware
    from model_call_capture.reassembly import StreamReassembler

    client_has_first_chunk = threading.Event()
    first_feed_saw: list[bool] = []

    class WatchedReassembler(StreamReassembler):
        def feed(self, data: bytes | bytearray | memoryview) -> None:
            if not first_feed_saw:
                first_feed_saw.append(client_has_first_chunk.wait(5))
            super().feed(data)

    monkeypatch.setattr(middleware, "StreamReassembler", WatchedReassembler)
    store = PausingStore(tmp_path)
    rollout = new_rollout()
    body = json.dumps(chat_body(stream=True)).encode()
    with capturing(tmp_path, store=store) as server:
        client = RawStreamClient(server, f"/ng-rollout/{rollout}/v1/chat/completions", body)
        try:
            assert client.wait_for(b'"role":"assistant"')  # the first chunk of the demo stream
            client_has_first_chunk.set()
            assert store.entered.wait(10)  # the append is blocked: the stream has reached its end
            time.sleep(0.2)  # give a wrongly released end every chance to arrive
            assert b"data: [DONE]" not in client.received
        finally:
            client_has_first_chunk.set()
            store.release.set()
        received = client.close()
    assert first_feed_saw == [True]
    assert received.endswith(b"\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
    assert only_line(tmp_path, rollout)["response"]["choices"][0]["message"]["content"] == ANSWER


def sse_app(chunks: list[bytes]) -> Any:
    """A raw ASGI app that streams `chunks` as they are, then closes the response."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(0.01)  # one chunk per write: the client sees each as it goes
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


# Streams whose terminal event is completed by a chunk that carries no marker of its own,
# or only a marker that must be looked for with care. The last chunk must be held.
HELD_LAST_CHUNK = {
    "chat [DONE] split across chunks": (
        "chat",
        [
            b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n',
            b"data: [DO",
            b"NE]\n\n",
        ],
    ),
    "chat error event completed by a bare blank line": (
        "chat",
        [
            b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n',
            b'event: error\ndata: {"message":"boom"}\n',
            b"\n",
        ],
    ),
    "messages message_stop spelled with a JSON escape": (
        "messages",
        [
            b'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","content":[],"model":"x"}}\n\n',
            b'event: stop\ndata: {"type":"message\\u005fstop"}\n\n',
        ],
    ),
    "responses error event named in capitals": (
        "responses",
        [
            b'event: response.created\ndata: {"type":"response.created","response":{"id":"r1","object":"response","output":[]}}\n\n',
            b'event: ERROR\ndata: {"type":"ERR","message":"boom"}\n\n',
        ],
    ),
}


@pytest.mark.parametrize("case", list(HELD_LAST_CHUNK))
def test_a_chunk_that_completes_the_terminal_event_without_a_marker_of_its_own_is_held(
    case: str, tmp_path: Path
) -> None:
    dialect, chunks = HELD_LAST_CHUNK[case]
    store = PausingStore(tmp_path)
    rollout = new_rollout()
    framed = [b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks]  # chunked transfer coding
    with capturing(tmp_path, store=store, app=sse_app(chunks)) as server:
        client = RawStreamClient(server, f"/ng-rollout/{rollout}{PATHS[dialect]}", b"{}")
        try:
            assert client.wait_for(framed[-2])  # everything before the last chunk went out at once
            assert store.entered.wait(10)
            time.sleep(0.2)  # give a wrongly released end every chance to arrive
            assert bytes(client.received).endswith(b"".join(framed[:-1]))
        finally:
            store.release.set()
        received = client.close()
    assert received.endswith(b"".join(framed) + b"0\r\n\r\n")
    assert only_line(tmp_path, rollout)["error_category"] in (None, "upstream_error")


def test_json_final_message_waits_when_the_body_is_sent_in_pieces(tmp_path: Path) -> None:
    store = PausingStore(tmp_path)
    rollout = new_rollout()
    result: list[int] = []

    def client(url: str) -> None:
        response = httpx.post(url, json=chat_body("split"), timeout=20)
        assert response.json()["object"] == "chat.completion"
        result.append(len(read_lines(tmp_path, rollout)))

    with capturing(tmp_path, store=store) as server:
        thread = threading.Thread(
            target=client, args=(f"{server.url}/ng-rollout/{rollout}/v1/chat/completions",)
        )
        thread.start()
        assert store.entered.wait(10)
        time.sleep(0.1)
        assert result == []
        store.release.set()
        thread.join(10)
    assert result == [1]


# -- many concurrent calls -------------------------------------------------------------


def test_64_concurrent_streams_across_8_rollouts_are_each_recorded_once(tmp_path: Path) -> None:
    rollouts = [new_rollout() for _ in range(8)]
    dialects = ["responses", "chat", "messages"]

    async def one(client: httpx.AsyncClient, url: str, i: int) -> bytes:
        dialect = dialects[i % 3]
        body = body_for(dialect, "keepalive", stream=True) | {"metadata": {"call": str(i)}}
        async with client.stream(
            "POST", f"{url}/ng-rollout/{rollouts[i % 8]}{PATHS[dialect]}", json=body
        ) as r:
            return b"".join([chunk async for chunk in r.aiter_raw()])

    async def run(url: str) -> list[bytes]:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(limits=limits, timeout=30) as client:
            return await asyncio.gather(*(one(client, url, i) for i in range(64)))

    with capturing(tmp_path) as server:
        bodies = asyncio.run(run(server.url))
    assert all(TERMINALS[dialects[i % 3]] in body for i, body in enumerate(bodies))
    ids = set()
    for r, rollout in enumerate(rollouts):
        lines = read_lines(tmp_path, rollout)
        calls = sorted(int(line["request"]["metadata"]["call"]) for line in lines)
        assert calls == list(range(r, 64, 8))
        assert all(line["error_category"] is None and line["stream"] is True for line in lines)
        ids |= {line["model_call_id"] for line in lines}
    assert len(ids) == 64
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{r}.capture.jsonl" for r in rollouts
    )


# -- the failure table -------------------------------------------------------------------


def post(
    server: RunningServer, rollout: str | None, body: Any, dialect: str = "chat"
) -> httpx.Response:
    prefix = f"/ng-rollout/{rollout}" if rollout is not None else ""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{server.url}{prefix}{PATHS[dialect]}", content=content, timeout=20)


def test_unwritable_capture_dir_never_fails_the_call_and_logs_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the capture directory should be")
    directory = blocker / "captures"  # ENOTDIR for every write, also for root
    rollout = new_rollout()
    with caplog.at_level(logging.ERROR, "model_call_capture"), capturing(directory) as server:
        for _ in range(3):
            response = post(server, rollout, chat_body())
            assert response.status_code == 200
            assert response.json()["choices"][0]["message"]["content"] == ANSWER
    failures = [r for r in caplog.records if "capture failed" in r.getMessage()]
    assert len(failures) == 1
    assert rollout in failures[0].getMessage()
    assert blocker.read_text() == "a file where the capture directory should be"


class FullDiskStore(CaptureStore):
    """Injected fault: append fails with ENOSPC as os.write would on a full disk."""

    def append(self, rollout_id: str, line: CaptureLine | bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device (injected)")


def test_enospc_marks_the_rollout_incomplete_and_logs_once_per_rollout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FullDiskStore(tmp_path)
    first, second = new_rollout(), new_rollout()
    with (
        caplog.at_level(logging.ERROR, "model_call_capture"),
        capturing(tmp_path, store=store) as server,
    ):
        for rollout in (first, first, second, first):
            assert post(server, rollout, chat_body(stream=True)).status_code == 200
    failures = [r.getMessage() for r in caplog.records if "capture failed" in r.getMessage()]
    assert len(failures) == 2
    assert "No space left on device" in failures[0]
    assert store.is_incomplete(first) and store.is_incomplete(second)
    assert not store.path(first).exists()


def test_app_raising_before_the_response(server: RunningServer, shared_dir: Path) -> None:
    rollout = new_rollout()
    assert (
        post(server, rollout, chat_body("raise_before")).status_code == 500
    )  # uvicorn's own reply
    line = only_line(shared_dir, rollout)
    assert line["status_code"] is None
    assert line["error_category"] == "exception"
    assert line["request"] == chat_body("raise_before")
    assert line["response"] is None and line["latency_ttft_ms"] is None
    assert "response_raw" not in line


@pytest.mark.parametrize(
    ("scenario", "status", "category", "raw"),
    [
        ("raise_timeout", None, "timeout", None),
        ("raise_connection", None, "connection", None),
        ("raise_status", 429, "rate_limit", '{"error":"slow down"}'),
    ],
)
def test_exceptions_keep_their_category_status_and_body(
    scenario: str,
    status: int | None,
    category: str,
    raw: str | None,
    server: RunningServer,
    shared_dir: Path,
) -> None:
    rollout = new_rollout()
    post(server, rollout, chat_body(scenario))
    line = only_line(shared_dir, rollout)
    assert (line["status_code"], line["error_category"], line.get("response_raw")) == (
        status,
        category,
        raw,
    )


def test_app_raising_during_a_stream_keeps_the_partial_reconstruction(
    server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    with pytest.raises(httpx.RemoteProtocolError):
        post(server, rollout, chat_body("raise_mid", stream=True))
    line = only_line(shared_dir, rollout)
    assert (line["status_code"], line["error_category"], line["stream"]) == (200, "exception", True)
    content = line["response"]["choices"][0]["message"]["content"]
    assert content and ANSWER.startswith(content) and content != ANSWER
    assert line["response_raw"].startswith("data: {")
    assert "[DONE]" not in line["response_raw"]


def test_app_raising_after_the_terminal_event_keeps_the_complete_response(
    server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    received = bytearray()
    with pytest.raises(httpx.RemoteProtocolError):
        with httpx.stream(
            "POST",
            f"{server.url}/ng-rollout/{rollout}/v1/messages",
            json=body_for("messages", "raise_after_terminal", stream=True),
        ) as response:
            for chunk in response.iter_raw():
                received += chunk
    assert TERMINALS["messages"] in received  # the held terminal event was released
    line = only_line(shared_dir, rollout)
    assert (line["status_code"], line["error_category"]) == (200, "exception")
    assert line["response"]["stop_reason"] == "tool_use"
    assert line["response"]["content"][2] == {
        "type": "tool_use",
        "id": line["response"]["content"][2]["id"],
        "name": "get_weather",
        "input": {"city": "Paris"},
    }


def test_app_raising_after_the_response_is_complete(
    server: RunningServer, shared_dir: Path
) -> None:
    """The client got the whole response and the line was written first: it records a success."""
    rollout = new_rollout()
    response = post(server, rollout, chat_body("raise_after_response", stream=True))
    assert response.status_code == 200 and response.text.endswith("data: [DONE]\n\n")
    line = only_line(shared_dir, rollout)
    assert (line["status_code"], line["error_category"]) == (200, None)
    assert line["response"]["choices"][0]["message"]["content"] == ANSWER


def test_client_disconnect_mid_stream_is_recorded_as_cancelled(
    server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    with httpx.stream(
        "POST",
        f"{server.url}/ng-rollout/{rollout}/v1/chat/completions",
        json=chat_body("slow", stream=True),
    ) as response:
        chunks = response.iter_raw()
        assert next(chunks).startswith(b"data: ")
        next(chunks)
    line = only_line(shared_dir, rollout)
    assert (line["status_code"], line["error_category"], line["stream"]) == (200, "cancelled", True)
    assert line["response"]["choices"][0]["message"]["role"] == "assistant"
    assert "[DONE]" not in line["response_raw"]


def test_truncated_upstream_stream(server: RunningServer, shared_dir: Path) -> None:
    rollout = new_rollout()
    response = post(server, rollout, body_for("responses", "truncate", stream=True), "responses")
    assert response.status_code == 200
    line = only_line(shared_dir, rollout)
    assert (line["status_code"], line["error_category"]) == (200, "stream_truncated")
    assert line["response"]["id"].startswith("resp_")
    assert line["response_raw"] == response.text


@pytest.mark.parametrize(
    ("body", "raw"),
    [
        (b"{not json", "{not json"),
        (b"[]", "[]"),
        (b'"hello"', '"hello"'),
        (b"null", "null"),
        (b"42", "42"),
        (b"   \n", "   \n"),
        (b'{"input":"caf\xe9"}', '{"input":"caf\\xe9"}'),
        (b'{"s":"\\ud800"}', '{"s":"\\ud800"}'),
        (b'{"x":NaN}', '{"x":NaN}'),
    ],
)
def test_malformed_and_non_object_request_bodies(
    body: bytes, raw: str, server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    response = post(server, rollout, body)
    assert response.status_code == 400
    line = only_line(shared_dir, rollout)
    assert line["request"] is None
    assert line["request_raw"] == raw
    assert (line["status_code"], line["error_category"]) == (400, "client_error")
    assert line["response"] == response.json()


def test_empty_request_body_has_no_raw_text(server: RunningServer, shared_dir: Path) -> None:
    rollout = new_rollout()
    post(server, rollout, b"")
    line = only_line(shared_dir, rollout)
    assert line["request"] is None and "request_raw" not in line


def test_request_with_big_integers_is_kept_exactly(server: RunningServer, shared_dir: Path) -> None:
    rollout = new_rollout()
    post(
        server, rollout, b'{"model":"demo-gpt","seed":123456789012345678901234567890,"messages":[]}'
    )
    assert only_line(shared_dir, rollout)["request"]["seed"] == 123456789012345678901234567890


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
@pytest.mark.parametrize("dialect", ["responses", "chat", "messages"])
def test_encoded_responses_are_decoded_for_capture_and_forwarded_encoded(
    coding: str, dialect: str, server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    url = f"{server.url}/ng-rollout/{rollout}{PATHS[dialect]}"
    decode = {"gzip": gzip.decompress, "deflate": zlib.decompress, "br": brotli.decompress}[coding]
    decoded = []
    for stream in (False, True):
        with httpx.stream(
            "POST", url, json=body_for(dialect, coding, stream=stream), timeout=20
        ) as reply:
            assert reply.headers["content-encoding"] == coding
            decoded.append(decode(b"".join(reply.iter_raw())))  # the client got encoded bytes
    first, second = wait_lines(shared_dir, rollout, 2)
    assert first["response"] == json.loads(decoded[0])
    assert first["error_category"] is None and second["error_category"] is None
    assert second["response"] is not None and "response_raw" not in second
    assert TERMINALS[dialect] in decoded[1]


def test_gzip_stream_raw_text_is_the_decoded_sse(shared_dir: Path, tmp_path: Path) -> None:
    rollout = new_rollout()
    with capturing(tmp_path, capture_stream_raw="always") as server:
        reply = post(server, rollout, chat_body("gzip+split", stream=True))
    line = only_line(tmp_path, rollout)
    assert line["response_raw"] == reply.text  # httpx decoded the gzip stream the same way
    assert line["response"]["choices"][0]["message"]["content"] == ANSWER


@pytest.mark.parametrize(
    ("path_id", "shown"),
    [
        ("%2E%2E%2F%2E%2E%2Fescaped", "../../escaped"),
        ("..", ".."),
        ("%C3%A9t%C3%A9", "\u00e9t\u00e9"),
        ("%EF%BD%81bc", "\uff41bc"),  # a fullwidth look-alike of "abc"
        ("a" * 300, "a" * 300),
        (".hidden", ".hidden"),
    ],
)
def test_invalid_rollout_ids_are_forwarded_not_captured_and_logged(
    path_id: str, shown: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "captures"
    directory.mkdir()
    with caplog.at_level(logging.WARNING, "model_call_capture"), capturing(directory) as server:
        for _ in range(2):
            raw = raw_exchange(
                server,
                f"/ng-rollout/{path_id}/v1/chat/completions",
                json.dumps(chat_body()).encode(),
            )
            assert raw.startswith(b"HTTP/1.1 200 OK")
            assert ANSWER.encode() in raw
    assert list(directory.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["captures"]
    warnings = [r.getMessage() for r in caplog.records if "without capture" in r.getMessage()]
    assert len(warnings) == 1
    assert "invalid rollout id" in warnings[0]


def test_capture_disabled_strips_the_prefix_and_writes_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "captures"
    app = install_model_call_capture(
        create_app(),
        CaptureConfig(model_call_capture_dir=str(directory)),
        model_server_name=SERVER_NAME,
    )
    with serve(app) as server:
        client = openai.OpenAI(
            base_url=f"{server.url}/ng-rollout/0-0/v1", api_key="k", max_retries=0
        )
        reply = client.chat.completions.create(
            model="demo-gpt", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.choices[0].message.content == ANSWER
    assert not directory.exists()


def test_unprefixed_and_unobserved_calls_are_not_captured(
    server: RunningServer, shared_dir: Path
) -> None:
    before = sorted(p.name for p in shared_dir.iterdir())
    assert post(server, None, chat_body()).json()["object"] == "chat.completion"
    rollout = new_rollout()
    models = httpx.get(f"{server.url}/ng-rollout/{rollout}/v1/models")
    assert models.json()["object"] == "list"
    assert sorted(p.name for p in shared_dir.iterdir()) == before


@pytest.mark.parametrize(
    ("scenario", "stream", "status", "category", "response_raw"),
    [
        ("status_401", False, 401, "auth", None),
        ("status_404", False, 404, "not_found", None),
        ("status_408", False, 408, "timeout", None),
        ("status_422", False, 422, "client_error", None),
        ("status_429", False, 429, "rate_limit", None),
        ("status_503", False, 503, "upstream_error", None),
        ("status_504", False, 504, "timeout", None),
        ("empty", False, 200, None, None),
        ("no_content", False, 204, None, None),
        ("text_body", False, 200, "capture_parse_error", "not json"),
        ("json_array", False, 200, "capture_parse_error", "[1,2,3]"),
        ("truncate", False, 200, "capture_parse_error", "..."),
        ("error_event", True, 200, "upstream_error", "..."),
        ("incomplete", True, 200, "incomplete", "..."),
        ("failed", True, 200, "upstream_error", "..."),
        ("incomplete", False, 200, None, None),
    ],
)
def test_error_categories(
    scenario: str,
    stream: bool,
    status: int,
    category: str | None,
    response_raw: str | None,
    server: RunningServer,
    shared_dir: Path,
) -> None:
    rollout = new_rollout()
    reply = post(server, rollout, body_for("responses", scenario, stream=stream), "responses")
    line = only_line(shared_dir, rollout)
    assert (line["status_code"], line["error_category"]) == (status, category)
    if response_raw == "...":
        assert line["response_raw"] == reply.text
    else:
        assert line.get("response_raw") == response_raw
    if scenario.startswith("status_"):
        assert line["response"] == reply.json()
    if not reply.content:
        assert line["latency_ttft_ms"] is None


def test_keepalive_comments_do_not_count_as_the_first_token(
    server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    post(server, rollout, chat_body("keepalive+slow", stream=True))
    line = only_line(shared_dir, rollout)
    # The comment goes out at once, the first event 20 ms later.
    assert line["latency_ttft_ms"] >= 15


def test_the_byte_cap_cuts_the_capture_not_the_response(tmp_path: Path) -> None:
    rollout = new_rollout()
    cap = 4096
    with capturing(tmp_path, capture_max_bytes=cap) as server:
        stream_reply = post(server, rollout, chat_body("big_64", stream=True))
        json_reply = post(server, rollout, chat_body("big_64"))
        big_request = post(server, rollout, chat_body(padding="x" * 10_000))
    assert len(stream_reply.content) > 64 * 1024 and stream_reply.text.endswith("data: [DONE]\n\n")
    assert len(json_reply.json()["choices"][0]["message"]["content"]) == 64 * 1024
    assert big_request.status_code == 200
    stream_line, json_line, request_line = wait_lines(tmp_path, rollout, 3)
    assert stream_line["capture_cut"] is True and stream_line["error_category"] is None
    assert stream_line["response_raw"] == stream_reply.text[:cap]
    assert stream_line["response"]["choices"][0]["message"]["content"].startswith(
        "All work and no play"
    )
    assert json_line["capture_cut"] is True and json_line["error_category"] is None
    assert json_line["response"] is None and json_line["response_raw"] == json_reply.text[:cap]
    assert request_line["capture_cut"] is True and request_line["request"] is None
    assert len(request_line["request_raw"]) == cap
    assert request_line["response"] == big_request.json()


def test_an_endless_stream_is_cut_for_capture_and_recorded_on_disconnect(tmp_path: Path) -> None:
    rollout = new_rollout()
    with capturing(tmp_path, capture_max_bytes=64 * 1024, capture_stream_raw="never") as server:
        with httpx.stream(
            "POST",
            f"{server.url}/ng-rollout/{rollout}/v1/messages",
            json=body_for("messages", "forever", stream=True),
        ) as response:
            received = 0
            for chunk in response.iter_raw():
                received += len(chunk)
                if received > 1024 * 1024:
                    break
        line = only_line(tmp_path, rollout)
    assert (line["error_category"], line["capture_cut"]) == ("cancelled", True)
    assert "response_raw" not in line


@pytest.mark.parametrize(
    ("policy", "scenario", "kept"),
    [
        ("always", "demo-gpt", True),
        ("on_failure", "demo-gpt", False),
        ("on_failure", "error_event", True),
        ("never", "error_event", False),
    ],
)
def test_stream_raw_policy(policy: str, scenario: str, kept: bool, tmp_path: Path) -> None:
    rollout = new_rollout()
    with capturing(tmp_path, capture_stream_raw=policy) as server:
        reply = post(server, rollout, chat_body(scenario, stream=True))
    line = only_line(tmp_path, rollout)
    assert line.get("response_raw") == (reply.text if kept else None)


# -- mounting, routing and the capture context ----------------------------------------


def test_install_on_fastapi_uses_add_middleware_and_routes_the_stripped_path(
    tmp_path: Path,
) -> None:
    api = FastAPI()

    @api.post("/v1/chat/completions")
    async def complete(request: Request) -> JSONResponse:
        context = request.scope["extensions"][CAPTURE_EXTENSION]
        context.error_category = "connection"  # as a proxy whose upstream failed would
        return JSONResponse({"error": {"message": "upstream unreachable"}}, status_code=502)

    mounted = install_model_call_capture(api, config_for(tmp_path), model_server_name=SERVER_NAME)
    assert mounted is api
    rollout = new_rollout()
    with serve(api) as server:
        reply = post(server, rollout, chat_body())
    assert reply.status_code == 502
    line = only_line(tmp_path, rollout)
    assert (line["status_code"], line["error_category"]) == (502, "connection")
    assert line["response"] == {"error": {"message": "upstream unreachable"}}


def test_install_accepts_a_global_config_mapping(tmp_path: Path) -> None:
    app = install_model_call_capture(
        create_app(),
        {
            "observability_enabled": True,
            "model_call_capture_dir": str(tmp_path),
            "policy_model": {},
        },
        model_server_name=SERVER_NAME,
    )
    assert isinstance(app, CaptureMiddleware)
    assert app.store is not None


@pytest.mark.parametrize(
    ("path", "raw_path", "root_path", "expected"),
    [
        (
            "/ng-rollout/3-1/v1/messages",
            b"/ng-rollout/3-1/v1/messages",
            "",
            ("3-1", "/v1/messages", b"/v1/messages"),
        ),
        ("/ng-rollout/3-1", b"/ng-rollout/3-1", "", ("3-1", "/", b"/")),
        (
            "/ng-rollout/a/../b/v1/x",
            b"/ng-rollout/a%2F..%2Fb/v1/x",
            "",
            ("a/../b", "/v1/x", b"/v1/x"),
        ),
        ("/ng-rollout/\u00e9/v1/x", b"/ng-rollout/%C3%A9/v1/x", "", ("\u00e9", "/v1/x", b"/v1/x")),
        ("/ng-rollout/r/v1/x", None, "", ("r", "/v1/x", None)),
        (
            "/api/ng-rollout/r/v1/x",
            b"/api/ng-rollout/r/v1/x",
            "/api",
            ("r", "/api/v1/x", b"/api/v1/x"),
        ),
    ],
)
def test_prefix_is_split_from_path_and_raw_path(
    path: str, raw_path: bytes | None, root_path: str, expected: tuple[str, str, bytes | None]
) -> None:
    scope: dict[str, Any] = {
        "type": "http",
        "path": path,
        "root_path": root_path,
        "query_string": b"q=1",
    }
    if raw_path is not None:
        scope["raw_path"] = raw_path
    split = _split_rollout_prefix(scope)
    assert split is not None
    rollout_id, new_scope = split
    assert (rollout_id, new_scope["path"], new_scope.get("raw_path")) == expected
    assert new_scope["root_path"] == root_path and new_scope["query_string"] == b"q=1"
    assert scope["path"] == path  # the caller's scope is not modified


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/ng-rollouts/x/v1", "/ng-rollout"])
def test_paths_without_the_prefix_are_left_alone(path: str) -> None:
    assert _split_rollout_prefix({"type": "http", "path": path, "raw_path": path.encode()}) is None


def test_non_http_scopes_pass_straight_through(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope)

    middleware = CaptureMiddleware(app, config=config_for(tmp_path), model_server_name=SERVER_NAME)
    scope = {"type": "websocket", "path": "/ng-rollout/r/v1/chat/completions"}

    async def never(*_: Any) -> Any:
        raise AssertionError

    asyncio.run(middleware(scope, never, never))
    assert seen == [scope] and seen[0] is scope


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


def test_client_gone_before_any_response_is_recorded_as_cancelled(
    server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{server.url}/ng-rollout/{rollout}/v1/chat/completions",
            json=chat_body("hang"),
            timeout=0.3,
        )
    line = only_line(shared_dir, rollout)
    assert (line["status_code"], line["error_category"], line["response"]) == (
        None,
        "cancelled",
        None,
    )
    assert line["latency_ttft_ms"] is None
    assert line["request"] == chat_body("hang")


# -- the same outcome NeMo Gym records ----------------------------------------------------

# (Gym file, dialect, scenario, stream, request body or None for the scenario's body)
GYM_CASES = [
    ("matrix/chat-json", "chat", "demo-gpt", False, None),
    ("matrix/chat-empty-200", "chat", "empty", False, None),
    ("matrix/chat-empty-204", "chat", "no_content", False, None),
    ("matrix/chat-json-array", "chat", "json_array", False, None),
    ("matrix/chat-text", "chat", "text_body", False, None),
    ("matrix/chat-status", "chat", "status_500", False, None),
    ("matrix/chat-raise", "chat", "raise_before", False, None),
    ("matrix/chat-sse-raise-mid", "chat", "raise_mid", True, None),
    ("matrix/chat-sse-truncated", "chat", "truncate", True, None),
    ("matrix/chat-sse-error", "chat", "error_event", True, None),
    ("matrix/chat-sse-keepalive", "chat", "keepalive", True, None),
    ("matrix/chat-sse-split", "chat", "split", True, None),
    ("matrix/chat-sse-crlf", "chat", "crlf", True, None),
    ("matrix/messages-sse", "messages", "demo-gpt", True, None),
    ("matrix/messages-sse-error", "messages", "error_event", True, None),
    ("matrix/messages-sse-truncated", "messages", "truncate", True, None),
    ("matrix/responses-sse", "responses", "demo-gpt", True, None),
    ("matrix/responses-sse-incomplete", "responses", "incomplete", True, None),
    ("matrix/responses-sse-failed", "responses", "failed", True, None),
    ("matrix/responses-sse-error", "responses", "error_event", True, None),
    ("matrix/responses-json-status-incomplete", "responses", "incomplete", False, None),
    ("status/exc-raise-status429", "chat", "raise_status", False, None),
    ("status/exc-raise-connection", "chat", "raise_connection", False, None),
    ("status/exc-raise-asyncio-timeout", "chat", "raise_timeout", False, None),
    ("status/status-401", "chat", "status_401", False, None),
    ("status/status-504", "chat", "status_504", False, None),
    ("requests/req-01", "responses", "", False, b"{not-json"),
    ("requests/req-02", "responses", "", False, b"[]"),
    ("requests/req-04", "responses", "", False, b"null"),
    ("requests/req-05", "responses", "", False, b""),
    ("requests/req-06", "responses", "", False, b"   \n"),
]

# Deliberate differences, each explained in the module docstring of middleware.py and in
# the report: streams that ended well keep no raw SSE text by default (Gym always keeps
# it; `capture_stream_raw: always` does too), and a stream cut by an exception keeps its
# partial reconstruction (Gym drops it).
KEEPS_RAW_ONLY_ON_FAILURE = {"demo-gpt", "keepalive", "split", "crlf"}
KEEPS_PARTIAL_RESPONSE = {"raise_mid"}


@pytest.mark.parametrize(
    ("gym_file", "dialect", "scenario", "stream", "body"), GYM_CASES, ids=[c[0] for c in GYM_CASES]
)
def test_outcome_matches_the_line_gym_wrote(
    gym_file: str,
    dialect: str,
    scenario: str,
    stream: bool,
    body: bytes | None,
    gym_reference_dir: Path,
    server: RunningServer,
    shared_dir: Path,
) -> None:
    gym = json.loads((gym_reference_dir / f"{gym_file}.capture.jsonl").read_text().splitlines()[0])
    rollout = new_rollout()
    content = (
        body
        if body is not None
        else json.dumps(body_for(dialect, scenario, stream=stream)).encode()
    )
    try:
        post(server, rollout, content, dialect)
    except httpx.RemoteProtocolError:
        assert scenario.startswith("raise_")
    ours = only_line(shared_dir, rollout)

    def shape(line: dict[str, Any]) -> dict[str, Any]:
        return {
            "status_code": line["status_code"],
            "error_category": line["error_category"],
            "request is null": line["request"] is None,
            "request_raw": line.get("request_raw"),
            "response is null": line["response"] is None,
            "has response_raw": "response_raw" in line,
            "has ttft": line["latency_ttft_ms"] is not None,
        }

    expected = shape(gym)
    if scenario in KEEPS_RAW_ONLY_ON_FAILURE and stream:
        expected["has response_raw"] = False
    if scenario in KEEPS_PARTIAL_RESPONSE:
        expected["response is null"] = False
    if gym_file.startswith("requests/"):
        expected["status_code"] = 400  # Gym's FastAPI app said 422; the scripted app says 400
    assert shape(ours) == expected


def test_an_unknown_content_encoding_is_forwarded_and_recorded_without_a_body(
    tmp_path: Path,
) -> None:
    payload = b"\x28\xb5\x2f\xfd not really zstd"

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"application/json"), (b"content-encoding", b"zstd")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    rollout = new_rollout()
    with capturing(tmp_path, app=app) as server:
        with httpx.stream(
            "POST", f"{server.url}/ng-rollout/{rollout}/v1/chat/completions", json=chat_body()
        ) as reply:
            assert b"".join(reply.iter_raw()) == payload
    line = only_line(tmp_path, rollout)
    assert (line["status_code"], line["error_category"], line["response"]) == (
        200,
        "capture_parse_error",
        None,
    )
    assert "response_raw" not in line
    assert line["latency_ttft_ms"] is not None


def test_a_capture_directory_removed_while_serving_is_recreated(tmp_path: Path) -> None:
    directory = tmp_path / "captures"
    rollout = new_rollout()
    with capturing(directory) as server:
        post(server, rollout, chat_body())
        assert len(read_lines(directory, rollout)) == 1
        for path in directory.iterdir():
            path.unlink()
        directory.rmdir()
        assert post(server, rollout, chat_body()).status_code == 200
    assert len(read_lines(directory, rollout)) == 1


def test_request_headers_never_reach_the_capture_file(
    server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    client = openai.OpenAI(
        base_url=f"{server.url}/ng-rollout/{rollout}/v1",
        api_key="sk-test-SECRET-0123456789",
        default_headers={"cookie": "session=COOKIE-SECRET", "x-api-key": "XKEY-SECRET"},
        max_retries=0,
    )
    client.chat.completions.create(model="demo-gpt", messages=[{"role": "user", "content": "hi"}])
    only_line(shared_dir, rollout)
    text = (shared_dir / f"{rollout}.capture.jsonl").read_text()
    assert "SECRET" not in text


def test_free_memory_is_handed_back_before_the_line_of_a_big_body_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spy around the real function: it still trims (glibc), and counts the calls.
    calls: list[int] = []
    real = middleware_module._release_free_memory

    def counted() -> None:
        calls.append(1)
        real()

    monkeypatch.setattr(middleware_module, "_release_free_memory", counted)
    api = FastAPI()
    text = "z" * (9 << 20)

    @api.post("/v1/chat/completions")
    async def complete(request: Request) -> JSONResponse:
        size = (await request.json())["size"]
        return JSONResponse(
            {
                "id": "chatcmpl-big",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text[:size]},
                        "finish_reason": "stop",
                    }
                ],
            }
        )

    rollout = new_rollout()
    with capturing(tmp_path, app=api) as server:
        assert post(server, rollout, chat_body(size=10)).status_code == 200
        assert calls == []
        reply = post(server, rollout, chat_body(size=len(text)))
    assert reply.status_code == 200
    assert calls == [1]
    lines = read_lines(tmp_path, rollout)
    assert [len(line["response"]["choices"][0]["message"]["content"]) for line in lines] == [
        10,
        9 << 20,
    ]
