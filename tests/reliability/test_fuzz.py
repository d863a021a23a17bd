"""Fuzzing with hypothesis: the SSE decoder, each dialect's stream state, record derivation,
and the middleware (driven in-process as a raw ASGI app, so thousands of calls fit in CI).

Properties: no exception escapes; the SSE decoder gives the same events however the bytes
are split and agrees with a small reference parser written from the WHATWG text; every
reassembled response and derived record can be written and read back under its schema
constraints; the middleware forwards every message unchanged and writes one line per call.
Sizes: CI by default; `MCC_NIGHTLY=1` generates >= 100k inputs in all.
"""

from __future__ import annotations

import asyncio
import gzip
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asgi_tools import AppError, Response, scripted_app, split
from conftest import CORPUS, SAMPLES, derive_uncaught, state_failures
from model_call_capture import _codec
from model_call_capture.contracts import CaptureConfig, CaptureLine, ModelCallRecord
from model_call_capture.dialects import DIALECTS, get_dialect
from model_call_capture.middleware import CaptureMiddleware
from model_call_capture.reassembly import StreamReassembler
from model_call_capture.records import build_model_call_record
from model_call_capture.sse import SseDecoder, SseEvent
from model_call_capture.store import CaptureStore
from sse_tools import sse_oracle

from .conftest import Figure, sized

# The nightly size runs for tens of minutes: lift the suite's per-test timeout for it.
pytestmark = pytest.mark.timeout(sized(300, 7200))

_COUNTS: dict[str, int] = {}
_COUNTS_LOCK = threading.Lock()


def _count(name: str) -> None:
    with _COUNTS_LOCK:
        _COUNTS[name] = _COUNTS.get(name, 0) + 1


def _fuzz_settings(ci: int, nightly: int) -> settings:
    return settings(
        max_examples=sized(ci, nightly),
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
        database=None,
    )


def _corpus_streams() -> dict[str, list[bytes]]:
    streams: dict[str, list[bytes]] = {name: [] for name in DIALECTS}
    for name in DIALECTS:
        directory = CORPUS / "streams" / name
        if name == "completions":  # none in the recorded corpus: the bodies written for it
            directory = SAMPLES / "completions"
        if directory.is_dir():
            streams[name] = [p.read_bytes() for p in sorted(directory.glob("*.sse"))]
    return streams


STREAMS = _corpus_streams()
HAVE_CORPUS = all(STREAMS.values())
# The `corpus_dir` fixture skips without the corpus, and fails in CI, which has it.
needs_corpus = pytest.mark.usefixtures("corpus_dir")


def _event_types() -> dict[str, list[str]]:
    found: dict[str, set[str]] = {name: set() for name in DIALECTS}
    for name, bodies in STREAMS.items():
        for body in bodies:
            found[name].update(m.decode() for m in re.findall(rb'"type"\s*:\s*"([a-z_.]+)"', body))
    return {name: sorted(types) or ["message"] for name, types in found.items()}


TYPES = _event_types()
VOCABULARY = sorted(
    {
        *"type id index output_index content_index item_id sequence_number delta text content".split(),
        *"content_block message usage choices finish_reason tool_calls function name arguments".split(),
        *"item response output status error input_tokens output_tokens prompt_tokens".split(),
        *"completion_tokens total_tokens cache_read_input_tokens cache_creation_input_tokens".split(),
        *"prompt_tokens_details cached_tokens input_tokens_details output_tokens_details".split(),
        *"reasoning_tokens summary_index part model role stop_reason partial_json thinking".split(),
        *"signature call_id refusal logprobs reasoning reasoning_content annotations summary".split(),
    }
)

keys = st.sampled_from(VOCABULARY) | st.text(max_size=6)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(sorted({t for ts in TYPES.values() for t in ts}) or ["x"])
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=6),
    max_leaves=25,
)


# Index members take any integer, huge ones included: a state must not allocate by an
# index it was sent (test_hostile_input.py pins that on its own).
json_objects = st.dictionaries(keys, json_values, max_size=8)


# -- the SSE decoder ---------------------------------------------------------------------


sse_alphabet = st.sampled_from(
    [
        b"data:",
        b"data: ",
        b"event: ",
        b"id: ",
        b"retry: 10",
        b":",
        b"\n",
        b"\r",
        b"\r\n",
        b"\xef\xbb\xbf",
        b"x",
        b"{}",
        b"[DONE]",
        b"\xc3",
        b"\xa9",
        b"\x00",
        b" ",
        b"message_stop",
        b"a:b",
    ]
)
sse_bodies = st.lists(sse_alphabet, max_size=40).map(b"".join) | st.binary(max_size=200)


def _decode(chunks: list[bytes]) -> list[tuple[bytes, str, str | None]]:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    events += decoder.finish()
    return [(e.data, e.event, e.id) for e in events]


@_fuzz_settings(600, 50_000)
@given(body=sse_bodies, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_sse_decoder_agrees_with_the_reference_however_the_bytes_are_split(
    body: bytes, cuts: list[int]
) -> None:
    _count("SSE decoder")
    expected = [(e.data, e.event, e.id) for e in sse_oracle(body)]
    assert _decode([body]) == expected
    assert _decode(split(body, cuts)) == expected
    assert _decode([body[i : i + 1] for i in range(len(body))]) == expected


# -- the dialects' stream states -----------------------------------------------------------


@st.composite
def events_for(draw: st.DrawFn, dialect: str) -> list[SseEvent]:
    """A corpus stream's events, mutated: dropped, repeated, swapped, or replaced by fuzz."""
    events: list[SseEvent] = []
    if draw(st.booleans()):
        body = draw(st.sampled_from(STREAMS[dialect]))
        decoder = SseDecoder()
        events = decoder.feed(body) + decoder.finish()
    mutations = draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10_000)), max_size=8))
    for op, at in mutations:
        i = at % (len(events) + 1)
        if op == 0 and events:
            del events[min(i, len(events) - 1)]
        elif op == 1 and events:
            events.insert(i, events[min(i, len(events) - 1)])
        elif op == 2:
            doc = draw(json_objects)
            if draw(st.booleans()):
                doc["type"] = draw(st.sampled_from(TYPES[dialect]))
            data = _codec.encode(doc)
            events.insert(i, SseEvent(data, draw(st.sampled_from(["", *TYPES[dialect], "error"]))))
        elif op == 3:
            events.insert(i, SseEvent(draw(st.binary(max_size=30) | st.just(b"[DONE]")), ""))
        elif op == 4 and events:
            victim = events[min(i, len(events) - 1)]
            events[min(i, len(events) - 1)] = SseEvent(
                victim.data[: at % (len(victim.data) + 1)], victim.event
            )
    return events


def _check_stream_state(dialect: str, events: list[SseEvent], request: dict[str, Any]) -> None:
    state = get_dialect(dialect).new_stream_state()
    for event in events:
        state.feed(event)  # must not raise
        _ = state.terminal
    result = state.result()
    assert state_failures(result.dropped) == []  # handled by its rules, not by its net
    assert result.response is None or isinstance(result.response, dict)
    assert result.terminal in (None, "complete", "incomplete", "failed", "error")
    line = CaptureLine(dialect=dialect, request=request, response=result.response)  # type: ignore[arg-type]
    encoded = _codec.encode_line(line)  # what the store writes must be writable
    _check_record(msgspec.json.decode(encoded, type=CaptureLine))


def _check_record(line: CaptureLine) -> None:
    record = build_model_call_record(line, 0)
    if line.dialect in DIALECTS:
        # `build_model_call_record` survives a raising `derive` with an empty derivation;
        # that net must not be what lets this pass: derive outside it, and the record
        # must hold what was derived.
        derived = derive_uncaught(line.dialect, line.request, line.response)
        for name in (f.name for f in msgspec.structs.fields(derived)):
            assert getattr(record, name) == getattr(derived, name), name
    # The record satisfies its schema constraints (counts >= 0, ...) once written and read.
    msgspec.json.decode(_codec.encode(record), type=ModelCallRecord)


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_stream_states_never_raise_on_mutated_and_random_streams(dialect: str) -> None:
    @_fuzz_settings(150, 8_000)
    @given(events=events_for(dialect), request=json_objects)
    def run(events: list[SseEvent], request: dict[str, Any]) -> None:
        _count(f"{dialect} stream state")
        _check_stream_state(dialect, events, request)

    run()


@_fuzz_settings(200, 5_000)
@given(data=st.data())
def test_reassembly_is_the_same_however_a_recorded_stream_is_split(data: st.DataObject) -> None:
    _count("reassembly of split recorded streams")
    dialect = data.draw(st.sampled_from(sorted(DIALECTS)))
    body = data.draw(st.sampled_from(STREAMS[dialect]))
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=30))
    whole = StreamReassembler(dialect)
    whole.feed(body)
    in_pieces = StreamReassembler(dialect)
    for chunk in split(body, cuts):
        in_pieces.feed(chunk)
    assert in_pieces.terminal == whole.terminal
    expected, got = whole.finish(), in_pieces.finish()
    assert (got.response, got.terminal, got.truncated, got.error) == (
        expected.response,
        expected.terminal,
        expected.truncated,
        expected.error,
    )


# -- record derivation ---------------------------------------------------------------------


def _corpus_bodies() -> list[dict[str, Any]]:
    bodies = (_codec.decode(p.read_bytes()) for p in sorted(CORPUS.glob("json/*/*.json")))
    return [body for body in bodies if isinstance(body, dict)]


# Random objects rarely hold the members derivation reads: real bodies (whole, or with
# members dropped) make sure each dialect's derivation does its work on every run.
_real_bodies = st.sampled_from(_corpus_bodies() or [{}])
_responses = (
    st.none()
    | json_objects
    | _real_bodies
    | st.tuples(_real_bodies, st.sets(keys, max_size=4)).map(
        lambda pair: {k: v for k, v in pair[0].items() if k not in pair[1]}
    )
)

capture_lines = st.builds(
    CaptureLine,
    model_call_id=st.none() | st.text(max_size=10),
    dialect=st.none() | st.sampled_from(sorted(DIALECTS)),
    status_code=st.none() | st.integers(100, 999),
    error_category=st.none() | st.text(max_size=10),
    latency_ms=st.none() | st.floats(0, 1e9),
    latency_ttft_ms=st.none() | st.floats(0, 1e9),
    request=st.none() | json_objects,
    response=_responses,
    response_raw=st.none() | st.text(max_size=20),
    capture_cut=st.booleans(),
)


@_fuzz_settings(300, 8_000)
@given(line=capture_lines)
def test_record_derivation_never_raises_and_yields_valid_records(line: CaptureLine) -> None:
    _count("record derivation")
    _check_record(line)


@_fuzz_settings(300, 8_000)
@given(raw=st.binary(max_size=300) | json_objects.map(_codec.encode))
def test_reading_arbitrary_bytes_counts_damage_instead_of_raising(raw: bytes) -> None:
    _count("capture-file reader")
    directory = Path(tempfile.mkdtemp(dir=_fast_dir()))
    try:
        (directory / "r.capture.jsonl").write_bytes(raw)
        store = CaptureStore(directory)
        try:
            lines, damaged = store.read_available("r")
        except ValueError as exc:  # only a line naming a format this reader does not know
            assert "format" in str(exc)
            return
        assert len(lines) + damaged == len([part for part in raw.split(b"\n") if part.strip()])
        for _, line in lines:
            _check_record(line)
    finally:
        shutil.rmtree(directory)


# -- the middleware ------------------------------------------------------------------------


def _fast_dir() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


@pytest.fixture(scope="module")
def middleware() -> Iterator[tuple[CaptureMiddleware, Path]]:
    # The real store, on tmpfs when there is one: thousands of fsyncs on a disk would not
    # fit in CI; durability is what the crash tests check.
    directory = Path(tempfile.mkdtemp(prefix="mcc-fuzz-", dir=_fast_dir()))
    config = CaptureConfig(
        observability_enabled=True, model_call_capture_dir=str(directory), capture_max_bytes=4096
    )
    mw = CaptureMiddleware(_unset_app, config=config, model_server_name="fuzz")
    yield mw, directory
    shutil.rmtree(directory)


async def _unset_app(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("each example sets the app")


content_types = st.sampled_from(
    [
        None,
        b"text/event-stream",
        b"application/json",
        b"TEXT/EVENT-STREAM; charset=utf-8",
        b"text/plain",
        b"\xff",
    ]
)


@st.composite
def responses(draw: st.DrawFn) -> Response:
    dialect_body = b""
    if draw(st.booleans()):
        dialect_body = draw(st.sampled_from([b for bodies in STREAMS.values() for b in bodies]))
    body = dialect_body or draw(
        sse_bodies | json_objects.map(_codec.encode) | st.binary(max_size=300)
    )
    headers: list[tuple[bytes, bytes]] = []
    content_type = draw(content_types)
    if content_type is not None:
        headers.append((b"content-type", content_type))
    if draw(st.integers(0, 3)) == 0:
        body = gzip.compress(body, mtime=0)
        headers.append((b"content-encoding", b"gzip"))
    if draw(st.integers(0, 5)) == 0:
        body = draw(st.binary(max_size=50))  # a body that lies about its encoding/type
    chunks = split(body, draw(st.lists(st.integers(0, 100_000), max_size=10)))
    status = draw(st.sampled_from([200, 200, 200, 201, 400, 401, 429, 500, 503]))
    return status, headers, chunks


@_fuzz_settings(500, 8_000)
@given(
    path=st.sampled_from(["/v1/responses", "/v1/chat/completions", "/v1/messages", "/v1/models"]),
    request=st.lists(st.binary(max_size=100) | json_objects.map(_codec.encode), max_size=3),
    response=responses(),
    raise_at=st.none() | st.integers(0, 12),
)
def test_the_middleware_forwards_every_message_unchanged(
    middleware: tuple[CaptureMiddleware, Path],
    path: str,
    request: list[bytes],
    response: Response,
    raise_at: int | None,
) -> None:
    _count("middleware")
    mw, directory = middleware
    sent_by_app: list[dict[str, Any]] = []
    received_by_app: list[bytes] = []
    app = scripted_app(response, raise_at, received_by_app, sent_by_app)
    forwarded: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        forwarded.append(dict(message))

    pieces = request or [b""]
    incoming = iter(
        [
            {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1}
            for i, p in enumerate(pieces)
        ]
    )

    async def receive() -> dict[str, Any]:
        return next(incoming, {"type": "http.disconnect"})

    rollout = "fuzz"
    full_path = f"/ng-rollout/{rollout}{path}"
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": full_path,
        "raw_path": full_path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    before = _line_count(directory)
    mw.app = app
    try:
        asyncio.run(mw(scope, receive, send))
    except AppError:
        assert raise_at is not None  # the app's own exception, re-raised unchanged
    assert forwarded == sent_by_app  # same messages, same bytes, same order
    assert received_by_app == pieces
    if path != "/v1/models":
        _count("middleware: observed calls")
        if _line_count(directory) == before + 1:  # one line per observed call, whatever happened
            _count("middleware: lines written")
        assert _line_count(directory) == before + 1


def _line_count(directory: Path) -> int:
    path = directory / "fuzz.capture.jsonl"
    if not path.exists():
        return 0
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def test_fuzz_figures(figures: list[Figure]) -> None:
    """Runs last in this module: puts the number of generated inputs into the table."""
    total = sum(_COUNTS.values())
    if not total:
        pytest.skip("run together with the fuzz tests of this module")
    lines = _COUNTS.pop("middleware: lines written", 0)
    observed = _COUNTS.pop("middleware: observed calls", 0)
    # The table states what was lost: count it, and check it, instead of printing a 0.
    if "middleware" in _COUNTS:
        assert 0 < observed <= _COUNTS["middleware"]
        assert lines == observed  # no observed call lost its line
    for name, count in sorted(_COUNTS.items()):
        middleware = name == "middleware"
        figures.append(
            Figure(
                f"fuzz: {name}",
                "hypothesis: random status, headers, gzip, chunking, app raising mid-response"
                if middleware
                else "hypothesis-generated inputs",
                count,
                lines if middleware else "-",
                observed - lines if middleware else "-",
                "every message forwarded unchanged; one line per observed call"
                if middleware
                else "no exception escaped; properties held",
            )
        )
    print(f"{total} generated inputs: {_COUNTS}")
