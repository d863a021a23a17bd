"""Security: rollout ids cannot escape the capture directory, symlinks are not followed,
credentials in headers never reach a file, file modes, and one collector per directory.

Everything runs for real: uvicorn on 127.0.0.1, real files, a real second process.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model_call_capture.collection import CollectorBusyError, collect
from model_call_capture.contracts import CaptureLine
from model_call_capture.errors import InvalidRolloutIdError
from model_call_capture.redaction import REDACTED, SECRET_KEY_PATTERNS, Redactor
from model_call_capture.store import CaptureStore

from .apps import CHAT_REPLY, capturing, read_json_lines, reply_app
from .conftest import Figure

CHAT = "/v1/chat/completions"
SECRET = "sk-live-0123456789abcdefSECRETSECRET"
HOSTILE_IDS = [
    "..",
    ".",
    "..%2F..%2Fescaped",
    "%2E%2E%2F%2E%2E%2Fescaped",
    "%2Fetc%2Fescaped",
    "a%2F..%2F..%2Fescaped",
    "..%5C..%5Cescaped",
    "escaped%00",
    "%E2%88%95etc",  # U+2215 DIVISION SLASH
    "%EF%BC%8F%EF%BC%8Fescaped",  # U+FF0F FULLWIDTH SOLIDUS
    "%EF%BC%8E%EF%BC%8E",  # U+FF0E FULLWIDTH FULL STOP x2
    "%E2%80%A4%E2%80%A4",  # U+2024 ONE DOT LEADER x2
    "caf%C3%A9",  # a non-ASCII letter
    "-leading-dash",
    ".hidden",
    "a" * 201,
    "b" * 10_000,
]


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_hostile_rollout_ids_in_the_url_never_name_a_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, figures: list[Figure]
) -> None:
    directory = tmp_path / "deep" / "captures"
    directory.mkdir(parents=True)
    with caplog.at_level(logging.WARNING), capturing(reply_app(), directory) as server:
        for rollout in HOSTILE_IDS:
            # http.client sends the path as given: httpx would resolve `..` segments itself.
            connection = http.client.HTTPConnection(server.host, server.port, timeout=30)
            try:
                connection.request("POST", f"/ng-rollout/{rollout}{CHAT}", body=b'{"model":"m"}')
                reply = connection.getresponse()
                assert (reply.status, reply.read()) == (200, CHAT_REPLY), rollout
            finally:
                connection.close()
    assert _tree(tmp_path) == {"deep", "deep/captures"}  # nothing written, anywhere
    refused = [r for r in caplog.records if "forwarded without capture" in r.getMessage()]
    assert 10 <= len(refused) <= len(HOSTILE_IDS)
    assert all(len(r.getMessage()) < 500 for r in refused)  # an overlong id is not echoed whole
    figures.append(
        Figure(
            "hostile rollout ids in the URL (traversal, %2F, absolute, NUL, unicode look-alikes, overlong)",
            f"real HTTP requests, {len(HOSTILE_IDS)} ids",
            len(HOSTILE_IDS),
            0,
            0,
            "call served, not captured, one warning per id; no file created anywhere",
        )
    )


@settings(max_examples=300, deadline=None, database=None)
@given(
    rollout_id=st.text(max_size=250)
    | st.sampled_from(["..", "../x", "/abs", "a/../../b", "a\0b", "x\n"])
)
def test_a_rollout_id_is_refused_or_names_a_file_directly_in_the_directory(rollout_id: str) -> None:
    root = Path("/nonexistent-capture-root")
    store = CaptureStore(root)
    try:
        path = store.path(rollout_id)
    except InvalidRolloutIdError:
        return
    assert path.parent == root and path.name == f"{rollout_id}.capture.jsonl"
    assert os.path.realpath(path) == f"{root}/{rollout_id}.capture.jsonl"
    assert rollout_id.isascii() and rollout_id not in (".", "..") and len(rollout_id) <= 200


def test_symlinks_placed_in_the_directory_are_never_followed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, figures: list[Figure]
) -> None:
    directory = tmp_path / "captures"
    directory.mkdir()
    outside = tmp_path / "precious.txt"
    outside.write_bytes(b"do not touch\n")
    (directory / "victim.capture.jsonl").symlink_to(outside)
    (directory / "victim.capture.incomplete").symlink_to(tmp_path / "planted-marker")
    with caplog.at_level(logging.ERROR), capturing(reply_app(), directory) as server:
        with httpx.Client(timeout=30) as client:
            for _ in range(3):
                reply = client.post(
                    f"{server.url}/ng-rollout/victim{CHAT}", content=b'{"model":"m"}'
                )
                assert (reply.status_code, reply.content) == (200, CHAT_REPLY)
    assert outside.read_bytes() == b"do not touch\n"
    assert not (tmp_path / "planted-marker").exists()
    failures = [
        r.getMessage()
        for r in caplog.records
        if "capture failed for rollout 'victim'" in r.getMessage()
    ]
    assert len(failures) == 1 and "refusing to follow a symlink" in failures[0]
    # Reading refuses too, instead of reading the target.
    with pytest.raises(OSError, match="refusing to follow a symlink"):
        CaptureStore(directory).read("victim")
    figures.append(
        Figure(
            "symlink planted in the capture directory (file and marker)",
            "real symlinks to files outside the directory",
            3,
            0,
            0,
            "calls served, not captured, one error log; the targets are untouched",
        )
    )


def test_credentials_in_headers_never_reach_a_file(tmp_path: Path, figures: list[Figure]) -> None:
    headers = {
        "authorization": f"Bearer {SECRET}-auth",
        "x-api-key": f"{SECRET}-xapikey",
        "api-key": f"{SECRET}-azure",
        "cookie": f"session={SECRET}-cookie",
        "proxy-authorization": f"Basic {SECRET}-proxy",
        "openai-organization": f"{SECRET}-org",
    }
    reply_headers = [
        (b"content-type", b"application/json"),
        (b"set-cookie", f"s={SECRET}-setcookie".encode()),
    ]
    with capturing(reply_app(headers=reply_headers), tmp_path) as server:
        with httpx.Client(timeout=30) as client:
            for stream in (False, True):
                body = b'{"model":"m","stream":%s}' % (b"true" if stream else b"false")
                reply = client.post(
                    f"{server.url}/ng-rollout/r{CHAT}", content=body, headers=headers
                )
                assert reply.status_code == 200
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert len(read_json_lines(tmp_path / "r.capture.jsonl")) == 2
    assert SECRET.encode() not in written
    assert b"authorization" not in written.lower() and b"cookie" not in written.lower()
    figures.append(
        Figure(
            "credentials in request headers (Authorization, x-api-key, api-key, cookie, proxy) and set-cookie",
            "real HTTP requests carrying a marker secret",
            2,
            2,
            0,
            "lines hold bodies only: the secret is in no file",
        )
    )


KEY = "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"


def test_a_known_key_pattern_never_reaches_the_disk_through_the_middleware(
    tmp_path: Path, figures: list[Figure]
) -> None:
    echo = (
        b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"your key is '
        + KEY.encode()
        + b'"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    redact = Redactor(["request.metadata.api_key"], SECRET_KEY_PATTERNS)
    bodies = [
        # in a field, in free text, in a body that is not JSON (only `request_raw` holds it)
        b'{"model":"m","metadata":{"api_key":"%s"},"messages":[{"role":"user","content":"use %s"}]}'
        % (KEY.encode(), KEY.encode()),
        b'{"model":"m","messages":[{"content":"%s"' % KEY.encode(),
    ]
    with capturing(
        reply_app(echo, headers=[(b"content-type", b"text/event-stream")]),
        tmp_path,
        redact=redact,
        capture_stream_raw="always",
    ) as server:
        with httpx.Client(timeout=30) as client:
            for body in bodies:
                reply = client.post(f"{server.url}/ng-rollout/r{CHAT}", content=body)
                assert reply.content == echo  # the client still gets what the app sent
    first, second = read_json_lines(tmp_path / "r.capture.jsonl")
    assert first["request"]["metadata"] == {"api_key": REDACTED}
    assert first["request"]["messages"][0]["content"] == f"use {REDACTED}"
    assert first["response"]["choices"][0]["message"]["content"] == f"your key is {REDACTED}"
    # The path on `request` cannot reach a body kept as text: the text is replaced whole.
    assert second["request_raw"] == REDACTED
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert b"sk-proj" not in written
    figures.append(
        Figure(
            "API key in request and response bodies, with the redaction hook",
            "real HTTP: key in a field, in text, in a non-JSON body, echoed in an SSE stream",
            2,
            2,
            0,
            "the key is in no file (`[REDACTED]` instead); the client still gets the app's bytes",
        )
    )


def test_a_failing_redaction_writes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(line: CaptureLine) -> CaptureLine:
        raise RuntimeError("redaction failed")

    with caplog.at_level(logging.ERROR), capturing(reply_app(), tmp_path, redact=broken) as server:
        for _ in range(3):
            reply = httpx.post(f"{server.url}/ng-rollout/r{CHAT}", content=KEY.encode(), timeout=30)
            assert (reply.status_code, reply.content) == (200, CHAT_REPLY)
    assert not (tmp_path / "r.capture.jsonl").exists()
    assert (tmp_path / "r.capture.incomplete").exists()
    assert sum("capture failed for rollout 'r'" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize(
    ("umask", "file_mode", "expected"),
    [(0o000, None, 0o600), (0o022, None, 0o600), (0o000, 0o640, 0o640)],
)
def test_capture_files_are_private_unless_configured(
    umask: int, file_mode: int | None, expected: int, tmp_path: Path
) -> None:
    store = (
        CaptureStore(tmp_path) if file_mode is None else CaptureStore(tmp_path, file_mode=file_mode)
    )
    old = os.umask(umask)
    try:
        store.append("r", CaptureLine(model_call_id="c"))
        store.mark_incomplete("r")
    finally:
        os.umask(old)
    assert stat.S_IMODE(store.path("r").stat().st_mode) == expected
    assert stat.S_IMODE(store.incomplete_path("r").stat().st_mode) == expected


def test_files_written_through_the_middleware_are_mode_0600(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        with capturing(reply_app(), tmp_path) as server:
            httpx.post(f"{server.url}/ng-rollout/r{CHAT}", content=b"{}", timeout=30)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.capture.jsonl").stat().st_mode) == 0o600


_FIRST_JOB = """
import asyncio, sys
from model_call_capture.collection import collect
from model_call_capture.contracts import CaptureLine
from model_call_capture.redaction import REDACTED, SECRET_KEY_PATTERNS, Redactor
from model_call_capture.store import CaptureStore

async def agent(body):
    CaptureStore(sys.argv[1]).append("0-0", CaptureLine(model_call_id="first-job-call"))
    print("captured", flush=True)
    await asyncio.sleep(60)
    return {}

asyncio.run(collect([{"q": 1}], agent, capture_dir=sys.argv[1], output_path=sys.argv[2]))
"""


def test_a_second_collection_job_is_refused_and_clears_nothing(
    tmp_path: Path, figures: list[Figure]
) -> None:
    capture = tmp_path / "captures"
    first = subprocess.Popen(
        [sys.executable, "-c", _FIRST_JOB, str(capture), str(tmp_path / "first.jsonl")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout is not None and first.stdout.readline() == "captured\n"
        dispatched: list[dict[str, Any]] = []

        async def agent(body: dict[str, Any]) -> dict[str, Any]:
            dispatched.append(body)
            return {}

        # The same rows: a second job would clear rollout 0-0 before dispatching it.
        with pytest.raises(
            CollectorBusyError, match=f"pid {first.pid}.*give each job its own capture directory"
        ):
            asyncio.run(
                collect(
                    [{"q": 1}], agent, capture_dir=capture, output_path=tmp_path / "second.jsonl"
                )
            )
        assert dispatched == []
        assert [ln.model_call_id for ln in CaptureStore(capture).read("0-0")] == ["first-job-call"]
    finally:
        first.kill()
        first.wait()
        assert first.stdout is not None
        first.stdout.close()
    figures.append(
        Figure(
            "second collection job on the same capture directory",
            "real second job while the first (another process) runs",
            1,
            1,
            0,
            "`CollectorBusyError` naming the first job's pid; nothing dispatched, nothing cleared",
        )
    )


# -- redaction that cannot apply fails closed ------------------------------------------------

KEY_FIELD = b'{"model":"m","metadata":{"api_key":"%s"}' % KEY.encode()
UNREADABLE_BODIES = [
    pytest.param(KEY_FIELD + b',"temperature":NaN}', 0, id="NaN"),
    pytest.param(KEY_FIELD + b',"user":"\\ud800"}', 0, id="lone surrogate"),
    pytest.param(KEY_FIELD + b',"user":"caf\xe9"}', 0, id="invalid UTF-8"),
    pytest.param(KEY_FIELD + b',"pad":"' + b"a" * 4000 + b'"}', 1000, id="over capture_max_bytes"),
]


@pytest.mark.parametrize(("body", "cap"), UNREADABLE_BODIES)
def test_a_path_redaction_that_cannot_apply_writes_no_raw_text(
    body: bytes, cap: int, tmp_path: Path, figures: list[Figure]
) -> None:
    redact = Redactor(["request.metadata.api_key"])  # a path only: no pattern to fall back on
    with capturing(reply_app(), tmp_path, redact=redact, capture_max_bytes=cap or 1 << 20) as s:
        reply = httpx.post(f"{s.url}/ng-rollout/r{CHAT}", content=body, timeout=30)
        assert (reply.status_code, reply.content) == (200, CHAT_REPLY)
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert (line["request"], line["request_raw"]) == (None, REDACTED)
    assert line["gaps"] == [
        {
            "code": "redacted_raw",
            "detail": "request_raw: redaction paths on `request` cannot reach a body kept as text",
        }
    ]
    assert line["response"] == json.loads(CHAT_REPLY)
    assert KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    if cap:
        figures.append(
            Figure(
                "API key at a redaction path, in request bodies that are not JSON objects "
                "(NaN, lone surrogate, invalid UTF-8) or over capture_max_bytes",
                "real HTTP requests, a `Redactor` with a path and no pattern",
                4,
                4,
                0,
                "call served unchanged; `request_raw: [REDACTED]` with a `redacted_raw` gap; "
                "the key is in no file",
            )
        )


def test_a_key_split_across_stream_deltas_is_in_no_file(
    tmp_path: Path, figures: list[Figure]
) -> None:
    pieces = ["your key is " + KEY[:9], KEY[9:22], KEY[22:]]
    stream = b"".join(
        b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n'
        % piece.encode()
        for piece in pieces
    ) + (
        b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    with capturing(
        reply_app(stream, headers=[(b"content-type", b"text/event-stream")], chunks=5),
        tmp_path,
        redact=Redactor(patterns=SECRET_KEY_PATTERNS),
        capture_stream_raw="always",
    ) as server:
        reply = httpx.post(
            f"{server.url}/ng-rollout/r{CHAT}", content=b'{"stream":true}', timeout=30
        )
        assert reply.content == stream
    (line,) = read_json_lines(tmp_path / "r.capture.jsonl")
    assert line["response"]["choices"][0]["message"]["content"] == f"your key is {REDACTED}"
    assert line["response_raw"] == REDACTED
    assert [gap["code"] for gap in line["gaps"]] == ["redacted_raw"]
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert not any(piece.encode() in written for piece in (KEY[:9], KEY[9:22], KEY[22:]))
    figures.append(
        Figure(
            "API key split across three SSE deltas, raw stream kept (`always`)",
            "real HTTP stream, `Redactor(patterns=SECRET_KEY_PATTERNS)`",
            1,
            1,
            0,
            "client gets the stream unchanged; the reassembled text is redacted, the raw SSE "
            "text is replaced (`redacted_raw` gap); no piece of the key is in any file",
        )
    )


def test_a_deeply_nested_request_is_redacted_not_dropped(
    tmp_path: Path, figures: list[Figure]
) -> None:
    depth = 900  # decodes, and overflowed the recursive redaction
    body = b'{"model":"m","x":' + b'{"password":"hunter2","x":' * depth + b"0" + b"}" * depth + b"}"
    with capturing(
        reply_app(), tmp_path, redact=Redactor(["request.**.password"], SECRET_KEY_PATTERNS)
    ) as server:
        reply = httpx.post(f"{server.url}/ng-rollout/r{CHAT}", content=body, timeout=30)
        assert (reply.status_code, reply.content) == (200, CHAT_REPLY)
    data = (tmp_path / "r.capture.jsonl").read_bytes()
    assert data.count(b'"password":"[REDACTED]"') == depth and b"hunter2" not in data
    assert not (tmp_path / "r.capture.incomplete").exists()
    figures.append(
        Figure(
            f"request nested {depth} levels deep, with a `Redactor`",
            "real HTTP request",
            1,
            1,
            0,
            "line written with every level redacted (no RecursionError, rollout complete)",
        )
    )
