"""Hostile and broken input through the real middleware on a real uvicorn server.

For each input: the app receives exactly what the client sent, the client receives exactly
what the app sent (raw bytes, before any content decoding), and the capture line records
what it can with the right category. Lines are read with the stdlib `json` module.
"""

from __future__ import annotations

import asyncio
import gc
import gzip
import hashlib
import json
import socket
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import brotli
import httpx
import pytest

from model_call_capture import _codec

from .apps import (
    CHAT_REPLY,
    capturing,
    endless_sse_app,
    read_json_lines,
    reply_app,
    stream_app,
    wait_for,
)
from .conftest import NIGHTLY, Figure, sized

CHAT = "/v1/chat/completions"
DEEP = b'{"model":"m","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}"


class RecordingApp:
    """Reads the whole request (keeping its size, hash and up to 1 MB of it), then replies."""

    def __init__(
        self, body: bytes = CHAT_REPLY, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        self.body = body
        self.headers = headers if headers is not None else [(b"content-type", b"application/json")]
        self.received: list[tuple[int, str, bytes]] = []
        self.disconnected = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        digest, size, head = hashlib.sha256(), 0, bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.disconnected += 1
                return
            chunk = message.get("body", b"")
            digest.update(chunk)
            size += len(chunk)
            if len(head) < 1 << 20:
                head += chunk[: (1 << 20) - len(head)]
            if not message.get("more_body", False):
                break
        self.received.append((size, digest.hexdigest(), bytes(head)))
        await send({"type": "http.response.start", "status": 200, "headers": self.headers})
        await send({"type": "http.response.body", "body": self.body})


def _has_line(path: Path) -> bool:
    """True once the file holds a whole line (it exists, empty, just before its first write)."""
    return path.exists() and path.read_bytes().endswith(b"\n")


def _post_raw(url: str, content: Any, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    with (
        httpx.Client(timeout=60) as client,
        client.stream("POST", url, content=content, headers=headers) as reply,
    ):
        return reply.status_code, b"".join(reply.iter_raw())


REQUESTS: list[tuple[str, bytes, dict[str, Any]]] = [
    (
        "malformed JSON",
        b'{"model":"m","messages":[',
        {"request": None, "request_raw": '{"model":"m","messages":['},
    ),
    ("JSON nested 100,000 deep", DEEP, {"request": None, "request_raw": DEEP.decode()}),
    (
        "invalid UTF-8",
        b'{"model":"caf\xe9\xff"}',
        {"request": None, "request_raw": '{"model":"caf\\xe9\\xff"}'},
    ),
    (
        "lone surrogate",
        b'{"model":"\\ud800"}',
        {"request": None, "request_raw": '{"model":"\\ud800"}'},
    ),
    (
        "integers beyond 64 bits",
        b'{"model":"m","seed":340282366920938463463374607431768211457,"n":-18446744073709551617}',
        {
            "request": {
                "model": "m",
                "seed": 340282366920938463463374607431768211457,
                "n": -18446744073709551617,
            }
        },
    ),
    (
        "NaN",
        b'{"model":"m","temperature":NaN}',
        {"request": None, "request_raw": '{"model":"m","temperature":NaN}'},
    ),
    # The last value wins, as in the stdlib and in every mainstream JSON parser.
    ("duplicate keys", b'{"model":"a","model":"b"}', {"request": {"model": "b"}}),
]


@pytest.mark.parametrize(("name", "body", "expected"), REQUESTS, ids=[r[0] for r in REQUESTS])
def test_hostile_request_bodies(
    name: str, body: bytes, expected: dict[str, Any], tmp_path: Path, figures: list[Figure]
) -> None:
    app = RecordingApp()
    with capturing(app, tmp_path) as server:
        status, received = _post_raw(f"{server.url}/ng-rollout/r{CHAT}", body)
    assert (status, received) == (200, CHAT_REPLY)
    assert app.received == [(len(body), hashlib.sha256(body).hexdigest(), body[: 1 << 20])]
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert {key: line.get(key) for key in expected} == expected
    assert line["response"] == json.loads(CHAT_REPLY)
    assert (line["status_code"], line["error_category"]) == (200, None)
    figures.append(
        Figure(f"request: {name}", "real HTTP request", 1, 1, 0, _request_outcome(expected))
    )


def _request_outcome(expected: dict[str, Any]) -> str:
    if expected.get("request") is None:
        return "call served unchanged; `request: null`, body kept as text in `request_raw`"
    return "call served unchanged; request recorded exactly"


def _big_body(size: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    head = b'{"model":"m","pad":"'
    yield head
    left = size - len(head) - 2
    while left > 0:
        n = min(chunk, left)
        yield b"a" * n
        left -= n
    yield b'"}'


def test_a_huge_request_body_is_cut_for_capture_not_for_the_app(
    tmp_path: Path, figures: list[Figure]
) -> None:
    size = sized(20, 200) << 20
    cap = sized(4, 64) << 20
    app = RecordingApp()
    with capturing(app, tmp_path, capture_max_bytes=cap) as server:
        status, received = _post_raw(f"{server.url}/ng-rollout/r{CHAT}", _big_body(size))
    assert (status, received) == (200, CHAT_REPLY)
    expected_digest = hashlib.sha256()
    for piece in _big_body(size):
        expected_digest.update(piece)
    assert app.received[0][:2] == (size, expected_digest.hexdigest())
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert line["capture_cut"] is True and line["request"] is None
    assert len(line["request_raw"]) == cap and line["request_raw"].startswith(
        '{"model":"m","pad":"aaa'
    )
    assert line["error_category"] is None and line["response"] == json.loads(CHAT_REPLY)
    figures.append(
        Figure(
            f"request body of {size >> 20} MB"
            + ("" if NIGHTLY else " (200 MB in the nightly size)"),
            f"real streamed upload, capture_max_bytes {cap >> 20} MB",
            1,
            1,
            0,
            "app got every byte; line has `capture_cut: true` and the first capture_max_bytes as text",
        )
    )


def test_a_slow_request_body_is_captured_whole(tmp_path: Path) -> None:
    pieces = [b'{"model":', b'"m","messages":', b"[]}"]

    def slowly() -> Iterator[bytes]:
        for piece in pieces:
            time.sleep(0.2)
            yield piece

    app = RecordingApp()
    with capturing(app, tmp_path) as server:
        assert _post_raw(f"{server.url}/ng-rollout/r{CHAT}", slowly()) == (200, CHAT_REPLY)
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert line["request"] == {"model": "m", "messages": []}


def test_a_client_that_disconnects_mid_body_is_recorded_as_cancelled(
    tmp_path: Path, figures: list[Figure]
) -> None:
    app = RecordingApp()
    with capturing(app, tmp_path) as server:
        with socket.create_connection((server.host, server.port)) as sock:
            sock.sendall(
                f"POST /ng-rollout/r{CHAT} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                "content-length: 1000\r\n\r\n".encode()
                + b'{"model":"m","mess'
            )
            time.sleep(0.2)
        assert wait_for(lambda: _has_line(tmp_path / "r.capture.jsonl"))
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert (line["error_category"], line["status_code"]) == ("cancelled", None)
    assert (line["request"], line["request_raw"]) == (None, '{"model":"m","mess')
    assert app.disconnected == 1
    figures.append(
        Figure(
            "client disconnects mid-body",
            "real socket closed after 18 of 1000 bytes",
            1,
            1,
            0,
            "line with `error_category: cancelled` and the partial body as `request_raw`",
        )
    )


def test_an_endless_stream_is_cut_for_capture_not_for_the_client(
    tmp_path: Path, figures: list[Figure]
) -> None:
    event = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"la "}}]}\n\n'
    cap = 16 * 1024
    with capturing(
        endless_sse_app(event), tmp_path, capture_max_bytes=cap, capture_stream_raw="always"
    ) as server:
        received = bytearray()
        with (
            httpx.Client(timeout=30) as client,
            client.stream("POST", f"{server.url}/ng-rollout/r{CHAT}", content=b"{}") as reply,
        ):
            for chunk in reply.iter_raw():
                received += chunk
                if len(received) > 2 << 20:
                    break
        assert wait_for(lambda: _has_line(tmp_path / "r.capture.jsonl"))
    whole = len(received) // len(event) * len(event)
    assert bytes(received[:whole]) == event * (whole // len(event))  # every byte, unchanged
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert (line["capture_cut"], line["error_category"], line["stream"]) == (
        True,
        "cancelled",
        True,
    )
    assert line["response_raw"] == (event * (cap // len(event) + 1))[:cap].decode()
    assert line["response"]["choices"][0]["message"]["content"].startswith("la la ")
    figures.append(
        Figure(
            "upstream sends SSE forever",
            f"real endless stream, capture_max_bytes {cap >> 10} KB, client reads 2 MB then leaves",
            1,
            1,
            0,
            "client got every byte; line cut at the cap (`capture_cut: true`), `cancelled` when the client left",
        )
    )


REPLY_JSON = {"id": "chatcmpl-9", "object": "chat.completion", "model": "m", "choices": []}
RESPONSES: list[tuple[str, bytes, list[tuple[bytes, bytes]], dict[str, Any]]] = [
    (
        "gzip JSON",
        gzip.compress(json.dumps(REPLY_JSON).encode(), mtime=0),
        [(b"content-type", b"application/json"), (b"content-encoding", b"gzip")],
        {"response": REPLY_JSON, "error_category": None},
    ),
    (
        "corrupt gzip",
        b"\x1f\x8b\x08\x00garbage-not-deflate",
        [(b"content-type", b"application/json"), (b"content-encoding", b"gzip")],
        {"response": None, "error_category": "capture_parse_error"},
    ),
    (
        "unknown content-encoding",
        b"zzzz",
        [(b"content-type", b"application/json"), (b"content-encoding", b"zstd-from-the-future")],
        {"response": None, "error_category": "capture_parse_error"},
    ),
    (
        "JSON without content-type",
        json.dumps(REPLY_JSON).encode(),
        [],
        {"response": REPLY_JSON, "error_category": None},
    ),
    (
        "JSON as text/plain",
        json.dumps(REPLY_JSON).encode(),
        [(b"content-type", b"text/plain; charset=latin-1")],
        {"response": REPLY_JSON, "error_category": None},
    ),
    (
        "SSE with odd content-type casing",
        b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
        [(b"Content-Type", b"Text/Event-Stream ; charset=UTF-8")],
        {"stream": True, "error_category": None},
    ),
    (
        "SSE body without content-type",
        b"data: [DONE]\n\n",
        [],
        {
            "response": None,
            "response_raw": "data: [DONE]\n\n",
            "error_category": "capture_parse_error",
        },
    ),
    (
        "HTML error page with 200",
        b"<html>502 Bad Gateway</html>",
        [(b"content-type", b"text/html")],
        {
            "response": None,
            "response_raw": "<html>502 Bad Gateway</html>",
            "error_category": "capture_parse_error",
        },
    ),
    (
        "response nested 100,000 deep",
        DEEP,
        [(b"content-type", b"application/json")],
        {"response": None, "error_category": "capture_parse_error"},
    ),
    (
        "empty 200 body",
        b"",
        [(b"content-type", b"application/json")],
        {"response": None, "error_category": None},
    ),
]


@pytest.mark.parametrize(
    ("name", "body", "headers", "expected"), RESPONSES, ids=[r[0] for r in RESPONSES]
)
def test_hostile_responses_reach_the_client_unchanged(
    name: str,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    expected: dict[str, Any],
    tmp_path: Path,
    figures: list[Figure],
) -> None:
    with capturing(reply_app(body, headers=headers, chunks=3), tmp_path) as server:
        status, received = _post_raw(f"{server.url}/ng-rollout/r{CHAT}", b'{"model":"m"}')
    assert (status, received) == (200, body)
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert {key: line.get(key) for key in expected} == expected
    assert line["request"] == {"model": "m"}
    figures.append(
        Figure(
            f"response: {name}",
            "real HTTP response, sent in 3 pieces",
            1,
            1,
            0,
            f"client got the exact bytes; line `error_category: {expected['error_category'] or 'null'}`",
        )
    )


HUGE = 10_000_000
HUGE_INDEX_STREAMS = [
    pytest.param(
        "chat",
        b'data: {"id":"c","choices":[{"index":%d,"delta":{"content":"x"}}]}\n\n' % HUGE,
        id="chat choice index",
    ),
    pytest.param(
        "chat",
        b'data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"t","function":{"name":"f"}}]}}]}\n\n'
        % HUGE,
        id="chat tool_call index",
    ),
    pytest.param(
        "messages",
        b'data: {"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":"x"}}\n\n'
        % HUGE,
        id="messages block index",
    ),
    pytest.param(
        "responses",
        b'data: {"type":"response.output_text.delta","output_index":%d,"content_index":0,"delta":"x"}\n\n'
        % HUGE,
        id="responses output_index",
    ),
    pytest.param(
        "responses",
        b'data: {"type":"response.output_text.delta","output_index":0,"content_index":%d,"delta":"x"}\n\n'
        % HUGE,
        id="responses content_index",
    ),
    pytest.param(
        "responses",
        b'data: {"type":"response.output_item.added","output_index":0,"item":{"type":"shell_call","action":{}}}\n\n'
        b'data: {"type":"response.shell_call_command.delta","output_index":0,"command_index":%d,"delta":"ls"}\n\n'
        % HUGE,
        id="responses command_index",
    ),
]


@pytest.mark.parametrize(("dialect", "body"), HUGE_INDEX_STREAMS)
def test_huge_indexes_in_stream_events_cost_no_memory(dialect: str, body: bytes) -> None:
    """An index is a position, not a size: a provider (or an attacker behind a proxy) that
    sends index 10,000,000 must not make the capture allocate, or write, that many entries.
    (At 10**9 the responses bugs take 8 GB: an OOM kill of the model server.)"""
    import tracemalloc

    from model_call_capture import _codec
    from model_call_capture.reassembly import reassemble_stream

    tracemalloc.start()
    try:
        response = reassemble_stream(dialect, body)
        encoded = _codec.encode(response)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(encoded) < 2_000
    assert peak < 5_000_000


BOMBS = [
    pytest.param(b"\x00", b"br", id="brotli of NUL bytes"),
    pytest.param(b"\xff", b"br", id="brotli of invalid UTF-8"),
    pytest.param(b"\x01\xfe", b"gzip", id="gzip of control and invalid bytes"),
]


@pytest.mark.parametrize(("unit", "encoding"), BOMBS)
def test_a_small_bomb_of_escaped_bytes_makes_a_line_of_about_the_cap(
    unit: bytes, encoding: bytes, tmp_path: Path, figures: list[Figure]
) -> None:
    """Each decoded byte is written as a 4-6 byte escape: the line once reached 6x the cap."""
    cap = 4 << 20
    payload = unit * (cap // len(unit) + 1000)
    body = brotli.compress(payload) if encoding == b"br" else gzip.compress(payload, mtime=0)
    headers = [(b"content-type", b"application/json"), (b"content-encoding", encoding)]
    with capturing(reply_app(body, headers=headers), tmp_path, capture_max_bytes=cap) as server:
        status, received = _post_raw(f"{server.url}/ng-rollout/r{CHAT}", b'{"model":"m"}')
    assert (status, received) == (200, body)
    size = (tmp_path / "r.capture.jsonl").stat().st_size
    assert size <= cap * 1.25 + 4096  # was 6x (NUL) and 5x (invalid bytes)
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert (line["capture_cut"], line["error_category"]) == (True, None)
    assert [gap["code"] for gap in line["gaps"]] == ["raw_text_cut"]
    kept = line["response_raw"]
    assert kept == _codec.raw_text(payload[: len(kept)])[: len(kept)]
    if unit == b"\x00":
        figures.append(
            Figure(
                f"response: {len(body)} B brotli body decoding to NUL bytes, capture_max_bytes "
                f"{cap >> 20} MB",
                "real HTTP response",
                1,
                1,
                0,
                f"client got the exact bytes; line of {size / cap:.2f}x capture_max_bytes "
                "(was 6x), `capture_cut` with a `raw_text_cut` gap",
            )
        )


def test_a_request_of_control_bytes_makes_a_line_of_about_the_cap(tmp_path: Path) -> None:
    cap = 1 << 20
    body = b"\x00" * cap
    app = RecordingApp()
    with capturing(app, tmp_path, capture_max_bytes=cap) as server:
        assert _post_raw(f"{server.url}/ng-rollout/r{CHAT}", body) == (200, CHAT_REPLY)
    assert app.received[0][0] == cap
    assert (tmp_path / "r.capture.jsonl").stat().st_size <= cap + 4096  # was 6x
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert line["request_raw"] == "\x00" * (cap // 6) and line["capture_cut"] is True


ENCODED_REQUESTS = [
    pytest.param(b"gzip", lambda data: gzip.compress(data, mtime=0), True, id="gzip"),
    pytest.param(b"deflate", zlib.compress, True, id="deflate"),
    pytest.param(b"br", brotli.compress, True, id="br"),
    # The `zstandard` package is not installed here (nor a dependency): recorded undecodable.
    pytest.param(b"zstd", lambda data: b"\x28\xb5\x2f\xfd" + data, False, id="zstd"),
]


@pytest.mark.parametrize(("encoding", "encode", "decodable"), ENCODED_REQUESTS)
def test_compressed_requests_are_decoded_for_capture(
    encoding: bytes,
    encode: Any,
    decodable: bool,
    tmp_path: Path,
    figures: list[Figure],
) -> None:
    request = {"model": "m", "messages": [{"role": "user", "content": "hi " * 500}]}
    body = encode(json.dumps(request).encode())
    app = RecordingApp()
    with capturing(app, tmp_path) as server:
        status, received = _post_raw(
            f"{server.url}/ng-rollout/r{CHAT}", body, {"content-encoding": encoding.decode()}
        )
    assert (status, received) == (200, CHAT_REPLY)
    assert app.received == [(len(body), hashlib.sha256(body).hexdigest(), body)]  # still encoded
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert "request_raw" not in line and line["response"] == json.loads(CHAT_REPLY)
    if decodable:
        assert line["request"] == request and "gaps" not in line
    else:
        assert line["request"] is None
        assert line["gaps"] == [
            {"code": "request_undecodable", "detail": "content-encoding zstd is not supported"}
        ]
    figures.append(
        Figure(
            f"request: `Content-Encoding: {encoding.decode()}`",
            "real HTTP request",
            1,
            1,
            0,
            "app got the encoded bytes; "
            + (
                "request decoded for the line"
                if decodable
                else "`request: null`, no raw bytes, a `request_undecodable` gap"
            ),
        )
    )


def _status_kib(field: str) -> int:
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith(field + ":"):
            return int(row.split()[1])
    raise LookupError(field)


def _peak_growth_mb(
    chunks: list[bytes], streams: int, directory: Path, **overrides: Any
) -> tuple[float, list[dict[str, Any]]]:
    """Serve `streams` concurrent copies of the stream; peak RSS growth (MB) and the lines."""
    expected = hashlib.sha256(b"".join(chunks)).hexdigest()

    async def read(client: httpx.AsyncClient, url: str) -> str:
        digest = hashlib.sha256()
        async with client.stream("POST", url, content=b'{"stream":true}') as reply:
            async for piece in reply.aiter_raw():
                digest.update(piece)
        return digest.hexdigest()

    async def run(url: str) -> list[str]:
        async with httpx.AsyncClient(timeout=300) as client:
            return await asyncio.gather(
                *(read(client, f"{url}/ng-rollout/s{i}{CHAT}") for i in range(streams))
            )

    directory.mkdir()
    with capturing(stream_app(chunks), directory, **overrides) as server:
        gc.collect()
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak-RSS mark (VmHWM)
        base = _status_kib("VmRSS")
        digests = asyncio.run(run(server.url))
        peak = _status_kib("VmHWM")
    assert digests == [expected] * streams  # every client got every byte, unchanged
    lines = [
        only for i in range(streams) for only in read_json_lines(directory / f"s{i}.capture.jsonl")
    ]
    assert len(lines) == streams
    return (peak - base) / 1024, lines


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
def test_many_large_streams_at_once_stay_within_the_memory_budget(
    tmp_path: Path, figures: list[Figure]
) -> None:
    event = (
        b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
        b'"delta":{"content":"word "}}]}\n\n'
    )
    chunk = event * 80  # 8 KB messages: a fast model, or a proxy batching its upstream reads
    chunks = [chunk] * (sized(4, 32) * (1 << 20) // len(chunk)) + [b"data: [DONE]\n\n"]
    streams, budget = 8, 16 << 20
    # The raw text is kept (`always`): about three copies of each stream's bytes. The
    # bounded run goes first: the heap the other run frees would hide its growth.
    bounded, lines = _peak_growth_mb(
        chunks,
        streams,
        tmp_path / "b",
        capture_stream_raw="always",
        capture_memory_budget_bytes=budget,
    )
    unbounded, _ = _peak_growth_mb(chunks, streams, tmp_path / "a", capture_stream_raw="always")
    assert bounded < unbounded / 2
    assert all(line["error_category"] is None for line in lines)
    assert any(g["code"] == "memory_budget" for line in lines for g in line.get("gaps", []))
    stream_mb = sum(map(len, chunks)) / (1 << 20)
    figures.append(
        Figure(
            f"{streams} streams of {stream_mb:.0f} MB at once, raw text kept",
            "real concurrent HTTP streams, capture_memory_budget_bytes 16 MB against 1 GiB",
            streams,
            streams,
            0,
            f"every client got every byte; peak RSS growth {bounded:.0f} MB with the 16 MB "
            f"budget against {unbounded:.0f} MB; lines past it carry a `memory_budget` gap",
        )
    )
