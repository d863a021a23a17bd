"""CaptureMiddleware on a real uvicorn server, driven by the real openai and anthropic SDKs.

What needs a real server stays here: the SDK clients as users run them, clients that
disconnect (a closed socket, a timeout), and the bytes on the wire. Each test serves the
scripted model app (`model_call_capture.demo.model_server`) on 127.0.0.1 behind the
middleware and checks the capture lines on disk with the stdlib `json` module as an
independent reader. Nothing is mocked except where a test says so.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from model_call_capture.contracts import CaptureLine
from model_call_capture.demo.model_server import create_app
from model_call_capture.records import read_model_call_records
from model_call_capture.store import CaptureStore
from servers import RunningServer, serve

from .conftest import (
    ANSWER,
    CHAT_TOOL,
    DIALECTS,
    MODEL_REF,
    PATHS,
    REASONING,
    TERMINALS,
    body_for,
    capturing,
    chat_body,
    new_rollout,
    read_lines,
)


@contextmanager
def serving(directory: Path, **options: Any) -> Iterator[RunningServer]:
    """The scripted model server (or `app=`) behind the middleware, on uvicorn."""
    with serve(capturing(directory, **options)) as server:
        yield server


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


def raw_exchange(server: RunningServer, path: str, body: bytes) -> bytes:
    """Every byte the server sends for one request, read from a plain socket until it closes."""
    head = [
        f"POST {path} HTTP/1.1",
        f"host: 127.0.0.1:{server.port}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
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


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("captures")


@pytest.fixture(scope="module")
def server(shared_dir: Path) -> Iterator[RunningServer]:
    with serving(shared_dir) as running:
        yield running


@pytest.fixture(scope="module")
def plain_server() -> Iterator[RunningServer]:
    with serve(create_app()) as running:
        yield running


# -- the real SDKs, sync and async -------------------------------------------------------


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


def test_openai_completions_sync_json_and_stream_with_token_ids(
    server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    client = openai.OpenAI(
        base_url=f"{server.url}/ng-rollout/{rollout}/v1", api_key="k", max_retries=0
    )
    vllm = {"return_token_ids": True}
    raw = client.completions.with_raw_response.create(
        model="demo-gpt", prompt="Weather in Paris?", logprobs=1, extra_body=vllm
    )
    completion = raw.parse()
    choice = completion.choices[0]
    assert choice.text == ANSWER
    stream = client.completions.create(
        model="demo-gpt",
        prompt=[1, 2, 3],
        stream=True,
        stream_options={"include_usage": True},
        extra_body=vllm,
    )
    chunks = list(stream)
    streamed_ids = [
        i for c in chunks for ch in c.choices for i in (ch.model_extra or {})["token_ids"]
    ]
    assert "".join(ch.text for c in chunks for ch in c.choices) == ANSWER

    first, second = wait_lines(shared_dir, rollout, 2)
    assert first["request"] == {
        "model": "demo-gpt",
        "prompt": "Weather in Paris?",
        "logprobs": 1,
        "return_token_ids": True,
    }
    assert first["response"] == json.loads(raw.http_response.content)
    assert (first["dialect"], first["status_code"], first["error_category"]) == (
        "completions",
        200,
        None,
    )
    assert second["stream"] is True and second["error_category"] is None
    assert second["response"]["choices"][0]["prompt_token_ids"] == [1, 2, 3]
    assert second["response"]["choices"][0]["token_ids"] == streamed_ids
    assert second["response"]["usage"] == chunks[-1].usage.model_dump(exclude_none=True)  # type: ignore[union-attr]

    records = read_model_call_records(CaptureStore(shared_dir), rollout)
    extra = choice.model_extra or {}
    assert [
        (r.dialect, r.prompt_token_ids, r.generation_token_ids, r.generation_log_probs)
        for r in records
    ] == [
        (
            "completions",
            extra["prompt_token_ids"],
            extra["token_ids"],
            choice.logprobs.token_logprobs,  # type: ignore[union-attr]
        ),
        ("completions", [1, 2, 3], streamed_ids, None),
    ]


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


# -- clients that leave ------------------------------------------------------------------


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


def test_an_endless_stream_is_cut_for_capture_and_recorded_on_disconnect(tmp_path: Path) -> None:
    rollout = new_rollout()
    with serving(tmp_path, capture_max_bytes=64 * 1024, capture_stream_raw="never") as server:
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


# -- on the wire -----------------------------------------------------------------------
# tests/middleware/test_call.py compares every message of every scenario in process; here
# a few scenarios go through uvicorn, so the bytes include its framing and its 500 page.

WIRE_CASES = ["demo-gpt", "raise_before", "raise_mid", "gzip+split", "keepalive", "big_40"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_client_bytes_are_identical_with_and_without_capture(
    dialect: str, server: RunningServer, plain_server: RunningServer, shared_dir: Path
) -> None:
    rollout = new_rollout()
    calls = 0
    for case in WIRE_CASES:
        for stream in (False, True):
            body = json.dumps(body_for(dialect, case, stream=stream)).encode()
            direct = raw_exchange(plain_server, PATHS[dialect], body)
            captured = raw_exchange(server, f"/ng-rollout/{rollout}{PATHS[dialect]}", body)
            assert captured == direct, (case, stream)
            calls += 1
    lines = wait_lines(shared_dir, rollout, calls)
    assert len(lines) == calls


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


def test_a_real_client_reads_a_stream_up_to_its_end_while_the_line_is_written(
    tmp_path: Path,
) -> None:
    store = PausingStore(tmp_path)
    rollout = new_rollout()
    received = bytearray()
    lines_at_the_end: list[int] = []

    def client(url: str) -> None:
        body = body_for("chat", "demo-gpt", stream=True)
        with httpx.stream("POST", url, json=body, timeout=20) as response:
            for chunk in response.iter_raw():
                received.extend(chunk)
                if TERMINALS["chat"] in received and not lines_at_the_end:
                    lines_at_the_end.append(len(read_lines(tmp_path, rollout)))

    with serving(tmp_path, store=store) as server:
        thread = threading.Thread(
            target=client, args=(f"{server.url}/ng-rollout/{rollout}{PATHS['chat']}",)
        )
        thread.start()
        assert store.entered.wait(10)
        time.sleep(0.2)  # give a wrongly released end every chance to arrive
        assert received and TERMINALS["chat"] not in received  # all but the end, at once
        store.release.set()
        thread.join(10)
    assert lines_at_the_end == [1]
