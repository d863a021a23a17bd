"""Fuzzing the middleware in process with hostile bodies, headers and SSE streams.

hypothesis drives requests (JSON, `NaN`, lone surrogates, invalid UTF-8, control bytes,
deep nesting, compressed or lying about it, in pieces) and responses (JSON or SSE events
carrying secrets split across deltas, compressed or not, any content-type, a
content-length that may lie, the app raising part way) through `CaptureMiddleware` with a
small byte cap, a small memory budget and, sometimes, a `Redactor`, using the `drive`
harness. Properties, for every example:

- no exception escapes but the app's own;
- the app receives every request byte and the client every response message, unchanged;
- an observed call writes exactly one line, and every line is valid: the library's reader
  counts no damage, and the line validates against `capture-line.schema.json`;
- each raw text stays within about the cap once written, and the budget is all given back;
- with the redactor on, no secret can be read back from a line: not from its values, not
  from a raw text once its JSON escapes are decoded, not by joining a stream's deltas.

250 examples in the normal run (about 20 s); `MCC_NIGHTLY=1` runs 8,000.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import brotli
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from asgi_tools import AppError, Response, scripted_app, split
from model_call_capture.contracts import CaptureConfig
from model_call_capture.middleware import CaptureMiddleware
from model_call_capture.redaction import SECRET_KEY_PATTERNS, Redactor
from model_call_capture.store import CaptureStore
from schema_tools import schema_registry

from .conftest import PATHS, drive

KEY = "sk-proj-Fz9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz"
"""A secret the redactor's patterns know."""
PATH_SECRET = "hunter2-only-the-path-knows"
"""A secret only the redactor's path (`request.api_key`) knows."""
CAP = 4096
LINE_SCHEMA = "https://model-call-capture.dev/schemas/v1/capture-line.schema.json"
VALIDATOR = Draft202012Validator({"$ref": LINE_SCHEMA}, registry=schema_registry())

ENCODERS: dict[bytes, Any] = {
    b"gzip": lambda data: gzip.compress(data, mtime=0),
    b"deflate": zlib.compress,
    b"br": brotli.compress,
    b"zstd": lambda data: b"\x28\xb5\x2f\xfd" + data,  # not decodable here
}

# -- strategies ----------------------------------------------------------------------------

texts = st.text(max_size=12) | st.sampled_from(
    [KEY, KEY[:10], KEY[10:], "\x00\x1f", "\u2028", "\\", '"', "\ud800"]
)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def raw_bodies(draw: st.DrawFn, *, request: bool = False) -> bytes:
    """A request or reply body: JSON, hostile near-JSON, or bytes."""
    kind = draw(st.integers(0, 6))
    value = draw(st.dictionaries(st.sampled_from(["model", "input", "api_key", "x"]), json_values))
    if request and draw(st.booleans()):
        value["api_key"] = PATH_SECRET
    try:
        text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    except ValueError:
        text = "{}"
    if kind == 0:
        return text.encode("utf-8", "surrogatepass")
    if kind == 1:
        return text[:-1].encode("utf-8", "surrogatepass") + b',"t":NaN}'
    if kind == 2:  # deep, but within what the reader's recursion allows in this test
        depth = draw(st.integers(1, 600))
        return b'{"x":' + b"[" * depth + json.dumps(KEY).encode() + b"]" * depth + b"}"
    if kind == 3:
        return draw(st.binary(max_size=300)) + KEY.encode() + draw(st.binary(max_size=50))
    if kind == 4:
        return draw(st.sampled_from([b"\x00", b"\xff", b"\x1b"])) * draw(st.integers(0, 3 * CAP))
    if kind == 5:
        return b'{"api_key":"' + KEY.replace("p", "\\u0070").encode() + b'","t":NaN}'
    return text.encode("utf-8", "surrogatepass") * draw(st.integers(1, 30))


def _chat_event(delta: str) -> bytes:
    event = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": delta}}],
    }
    return b"data: " + json.dumps(event).encode() + b"\n\n"


@st.composite
def sse_streams(draw: st.DrawFn) -> bytes:
    """A chat-like stream whose deltas may split the key, with hostile bits in between."""
    deltas = draw(st.lists(texts, max_size=12))
    if draw(st.booleans()):
        cut = draw(st.integers(1, len(KEY) - 1))
        deltas += [KEY[:cut], KEY[cut:]]
    events = [_chat_event(d) for d in deltas]
    events += draw(
        st.lists(
            st.sampled_from([b": ping\n\n", b"data: {}\n\n", b"\x00\n\n", b"data: \xff\n\n"]),
            max_size=3,
        )
    )
    if draw(st.booleans()):
        events.append(b"data: [DONE]\n\n")
    return b"".join(draw(st.permutations(events)) if draw(st.booleans()) else events)


@st.composite
def encoded(draw: st.DrawFn, body: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """`body` maybe content-encoded (or lying about it), and the headers saying so."""
    choice = draw(st.sampled_from([None, None, b"gzip", b"deflate", b"br", b"zstd", b"lie", b"x"]))
    if choice is None:
        return body, []
    if choice == b"lie":
        return body, [(b"content-encoding", b"gzip")]
    if choice == b"x":
        return body, [(b"Content-Encoding", b"identity, \xff")]
    return ENCODERS[choice](body), [(b"content-encoding", choice)]


@st.composite
def responses(draw: st.DrawFn) -> Response:
    body = draw(sse_streams() | raw_bodies())
    body, headers = draw(encoded(body))
    content_type = draw(
        st.sampled_from(
            [b"text/event-stream", b"application/json", b"TEXT/Event-Stream; x", b"\xff", None]
        )
    )
    if content_type is not None:
        headers.append((b"content-type", content_type))
    if draw(st.booleans()):
        length = len(body) + draw(st.sampled_from([0, 0, -1, 1, 10**9]))
        headers.append((b"content-length", str(max(length, 0)).encode()))
    chunks = split(body, draw(st.lists(st.integers(0, 10**6), max_size=8))) or [b""]
    return draw(st.sampled_from([200, 200, 201, 400, 500])), headers, chunks


# -- the harness ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def directory() -> Iterator[Path]:
    # tmpfs when there is one: hundreds of fsyncs on a disk would be slow.
    root = "/dev/shm" if Path("/dev/shm").is_dir() else None
    path = Path(tempfile.mkdtemp(prefix="mcc-mw-fuzz-", dir=root))
    yield path
    shutil.rmtree(path)


@settings(
    max_examples=8000 if os.environ.get("MCC_NIGHTLY") == "1" else 250,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(
    dialect=st.sampled_from([*PATHS, "models"]),
    request=raw_bodies(request=True).flatmap(encoded),
    cuts=st.lists(st.integers(0, 10**6), max_size=4),
    response=responses(),
    raise_at=st.none() | st.integers(0, 6),
    redact=st.booleans(),
    budget=st.sampled_from([0, 3000, 64 * 1024, 1 << 20]),
    raw_policy=st.sampled_from(["always", "on_failure", "never"]),
)
def test_hostile_calls_are_served_unchanged_and_recorded_validly(
    directory: Path,
    dialect: str,
    request: tuple[bytes, list[tuple[bytes, bytes]]],
    cuts: list[int],
    response: Response,
    raise_at: int | None,
    redact: bool,
    budget: int,
    raw_policy: str,
) -> None:
    body, request_headers = request
    pieces = split(body, cuts)
    received: list[bytes] = []
    sent: list[dict[str, Any]] = []
    config = CaptureConfig(
        observability_enabled=True,
        model_call_capture_dir=str(directory),
        capture_max_bytes=CAP,
        capture_memory_budget_bytes=budget,
        capture_stream_raw=raw_policy,  # type: ignore[arg-type]
    )
    mw = CaptureMiddleware(
        scripted_app(response, raise_at, received, sent),
        config=config,
        model_server_name="fuzz",
        redact=Redactor(["request.api_key"], SECRET_KEY_PATTERNS) if redact else None,
    )
    rollout = "r-secret" if redact else "r-plain"
    path = f"/ng-rollout/{rollout}{PATHS.get(dialect, '/v1/models')}"
    file = directory / f"{rollout}.capture.jsonl"
    before = file.read_bytes().count(b"\n") if file.exists() else 0

    exchange = asyncio.run(drive(mw, path, list(pieces), headers=request_headers))

    if exchange.error is not None:
        assert isinstance(exchange.error, AppError) and raise_at is not None
    assert b"".join(received) == body and received == (pieces or [b""])
    assert exchange.messages == sent  # every message, unchanged, in order
    assert mw.budget.used == 0
    data = file.read_bytes() if file.exists() else b""
    new = data.splitlines()[before:]
    assert len(new) == (0 if dialect == "models" else 1)
    for raw_line in new:
        assert len(raw_line) <= 6 * CAP + 8192  # payloads and texts bounded by the cap
        line = json.loads(raw_line)
        VALIDATOR.validate(line)
        for name in ("request_raw", "response_raw"):
            text = line.get(name)
            if isinstance(text, str):
                assert len(json.dumps(text, ensure_ascii=False).encode()) <= 1.25 * CAP + 2
    lines, damaged = CaptureStore(directory).read_available(rollout)
    assert damaged == 0 and len(lines) == before + len(new)
    if redact:
        for raw_line in new:
            assert not _secrets_in(json.loads(raw_line)), raw_line[:2000]


_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _secrets_in(line: dict[str, Any]) -> set[str]:
    """The secrets a reader of `line` can read back: in its values, in its raw texts once
    their JSON escapes are decoded, or by joining the content deltas of a raw stream."""
    found: set[str] = set()
    texts = [json.dumps(line, ensure_ascii=False)]
    for name in ("request_raw", "response_raw"):
        raw = line.get(name)
        if isinstance(raw, str):
            texts.append(_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), raw))
            texts.append("".join(_deltas(raw)))
    for text in texts:
        found |= {secret for secret in (KEY, PATH_SECRET) if secret in text}
    return found


def _deltas(raw: str) -> Iterator[str]:
    for event in raw.split("\n\n"):
        if event.startswith("data: {"):
            try:
                content = json.loads(event[6:])["choices"][0]["delta"]["content"]
            except (ValueError, LookupError, TypeError):
                continue
            if isinstance(content, str):
                yield content
