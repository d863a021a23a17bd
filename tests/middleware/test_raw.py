"""A stream's raw text past `MEMORY_BYTES`: spilled to a real anonymous temporary file.

The spill must be invisible in the line: a failed stream's line is byte for byte the line
the all-in-memory path writes (the path every stream under the threshold takes, forced
here by lifting `MEMORY_BYTES`), on recorded corpus streams cut and failed in several
ways and on a stream over the real threshold. Spilled bytes do not count against the
memory budget until the line needs them; the file descriptor is closed on every path;
a spill that fails drops the raw text with a gap and never fails the call.

Files, writes and reads are real (in the system temporary directory). Two faults cannot
be produced for real here and are injected at the spill module's `tempfile`: EIO (no
device-mapper to make a failing disk) and EMFILE (lowering the process's descriptor
limit would also break the test runner's own threads and sockets). A real full disk is
in tests/reliability/test_disk_faults.py.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import re
import stat
import tempfile
import time
import types
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import CORPUS
from model_call_capture.middleware import _raw, _response
from model_call_capture.middleware._budget import BLOCK
from model_call_capture.middleware._raw import MEMORY_BYTES, RawText
from model_call_capture.reassembly import StreamReassembler, StreamResult
from servers import serve

from .conftest import (
    PATHS,
    call,
    capturing,
    chat_body,
    count_lines,
    new_rollout,
    only_line,
    read_lines,
)
from .test_budget import stream_chunks

DATA = Path(__file__).parent.parent / "data"
IN_MEMORY = 1 << 40
"""A `MEMORY_BYTES` no stream reaches: the all-in-memory path, as before the spill."""
SPENT = "the capture memory budget (capture_memory_budget_bytes) was spent"


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def spill_beyond(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    """Spill raw texts past `size` bytes in memory instead of `MEMORY_BYTES`."""
    monkeypatch.setattr(_response, "MEMORY_BYTES", size)


class FileSpy:
    """The real temporary file, counting its writes, or failing them with `fail` (injected)."""

    def __init__(self, fail: int | None = None) -> None:
        self.file = tempfile.TemporaryFile(buffering=0)
        self.writes: list[int] = []
        self.fail = fail

    def write(self, data: memoryview) -> int:
        if self.fail is not None:
            raise OSError(self.fail, os.strerror(self.fail))
        self.writes.append(len(data))
        return self.file.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.file, name)


class Files:
    """What the spill module opened, through a stand-in `tempfile` (the real files inside)."""

    def __init__(self, open_error: int | None = None, write_error: int | None = None) -> None:
        self.opened: list[FileSpy] = []
        self.open_error = open_error
        self.write_error = write_error

    def TemporaryFile(self, buffering: int) -> FileSpy:  # tempfile's name
        assert buffering == 0
        if self.open_error is not None:
            raise OSError(self.open_error, os.strerror(self.open_error))
        spy = FileSpy(self.write_error)
        self.opened.append(spy)
        return spy


@pytest.fixture
def files(monkeypatch: pytest.MonkeyPatch) -> Files:
    spy = Files()
    monkeypatch.setattr(_raw, "tempfile", types.SimpleNamespace(TemporaryFile=spy.TemporaryFile))
    return spy


# -- the spill file alone ----------------------------------------------------------------------


def test_a_spilled_text_is_an_anonymous_file_only_its_owner_can_open() -> None:
    before = open_fds()
    raw = RawText()
    raw += b"data: one\n\n"
    raw.spill()
    raw += b"data: two\n\n"
    assert (bytes(raw), raw.spilled) == (b"data: two\n\n", 11)
    assert raw._file is not None
    info = os.fstat(raw._file.fileno())
    assert (info.st_nlink, stat.S_IMODE(info.st_mode), stat.S_ISREG(info.st_mode)) == (
        0,
        0o600,
        True,
    )
    target = os.readlink(f"/proc/self/fd/{raw._file.fileno()}")
    assert target.startswith(tempfile.gettempdir()) and target.endswith(" (deleted)")
    assert raw.read() == b"data: one\n\ndata: two\n\n"
    assert open_fds() == before + 1
    raw.close()
    raw.close()
    assert open_fds() == before


def test_a_closed_text_cannot_be_spilled_or_read_and_says_so() -> None:
    raw = RawText()
    raw += b"x" * 10
    raw.spill()
    raw.close()
    raw += b"y"
    with pytest.raises(OSError, match="closed"):
        raw.spill()
    with pytest.raises(OSError, match="closed"):
        raw.read()


def test_a_text_that_never_spilled_opens_no_file() -> None:
    raw = RawText()
    raw += b"data: [DONE]\n\n"
    assert raw._file is None
    assert (raw.spilled, bytes(raw.read())) == (0, b"data: [DONE]\n\n")


# -- the line is the line the in-memory path writes ----------------------------------------------


def corpus_streams(dialect: str, count: int = 3) -> list[bytes]:
    """The `count` largest recorded streams of `dialect` that end well (their terminal event,
    nothing dropped): from the corpus, which has dozens (its sample in tests/data a few per
    dialect), or for a dialect the corpus lacks (Completions) the replies recorded from a real
    server in tests/data/<dialect>/."""
    paths = list(CORPUS.glob(f"streams/{dialect}/*.sse")) or list((DATA / dialect).glob("*.sse"))
    streams = []
    for path in sorted(paths, key=lambda p: -p.stat().st_size):
        stream = path.read_bytes()
        result = reassemble(dialect, stream)
        if result.terminal == "complete" and not result.dropped:
            streams.append(stream)
    return streams[:count]


def spill_size(stream: bytes) -> int:
    """What a test keeps in memory before spilling `stream`: 1,000 bytes, or less for a short
    stream, so that even half of it spills at least twice."""
    return min(1000, len(stream) // 8)


def reassemble(dialect: str, stream: bytes) -> StreamResult:
    """The stream reassembled in one piece."""
    reassembler = StreamReassembler(dialect)
    reassembler.feed(stream)
    return reassembler.finish()


def pieces(stream: bytes) -> list[bytes]:
    """`stream` in chunks of uneven sizes, so events and lines straddle chunk boundaries (and
    a short stream, such as a recorded Completions reply, still comes in a dozen pieces)."""
    sizes = (97, 311, 1024, 13, 4096) if len(stream) >= 6000 else (29, 61, 131, 7, 257)
    start = 0
    out: list[bytes] = []
    while start < len(stream):
        size = sizes[len(out) % len(sizes)]
        out.append(stream[start : start + size])
        start += size
    return out


def replay_app(chunks: list[bytes], *, stop: int | None = None, then: str = "end") -> Any:
    """Sends `chunks` as an SSE stream; at chunk `stop` it ends the body, raises or is cancelled."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body", False):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for n, chunk in enumerate(chunks):
            if n == stop:
                if then == "raise":
                    raise RuntimeError("the model server broke mid-stream")
                if then == "cancel":
                    raise asyncio.CancelledError
                break
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


def client_gone_after(messages: int) -> Any:
    """An `on_send` that fails like a server whose client left, from body message `messages` on."""
    sent = [0]

    def on_send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent[0] += 1
            if sent[0] > messages:
                raise OSError(errno.EPIPE, "Broken pipe")

    return on_send


KINDS: dict[str, tuple[dict[str, Any], dict[str, Any], bool]] = {
    # kind: (config, how the stream goes wrong, whether the client leaves half way)
    "ended well, always": ({"capture_stream_raw": "always"}, {}, False),
    "ended well, on_failure": ({}, {}, False),
    "truncated": ({}, {"then": "end"}, False),
    "app raised": ({}, {"then": "raise"}, False),
    "client gone": ({}, {}, True),
    "cut at the cap": ({"capture_max_bytes": "half"}, {}, False),
    "cut at the cap, always": (
        {"capture_max_bytes": "half", "capture_stream_raw": "always"},
        {},
        False,
    ),
}
_VARYING = re.compile(
    rb'"(model_call_id|started_at|completed_at|latency_ms|latency_ttft_ms)":("[^"]*"|[^,}]*)'
)


def line_bytes(directory: Path, rollout: str) -> bytes:
    """The rollout's one line as written, with its id and clock readings blanked."""
    (line,) = (directory / f"{rollout}.capture.jsonl").read_bytes().splitlines()
    return _VARYING.sub(rb'"\1":0', line)


def run_kind(directory: Path, dialect: str, stream: bytes, kind: str) -> tuple[bytes, Any]:
    """One call of `kind` replaying `stream`; (its line, blanked, and the line parsed)."""
    config, how, leaves = KINDS[kind]
    config = {k: len(stream) // 2 if v == "half" else v for k, v in config.items()}
    chunks = pieces(stream)
    stop = len(chunks) // 2 if how else None
    mw = capturing(directory, app=replay_app(chunks, stop=stop, **how), **config)
    rollout = new_rollout()
    options = {"on_send": client_gone_after(len(chunks) // 2)} if leaves else {}
    reply = call(mw, f"/ng-rollout/{rollout}{PATHS[dialect]}", b'{"model":"m"}', **options)
    if not how and not leaves:
        assert reply.body == stream  # the client got every byte, spill or not
    return line_bytes(directory, rollout), only_line(directory, rollout)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("dialect", list(PATHS))
def test_a_spilled_stream_writes_the_line_the_in_memory_path_writes(
    dialect: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: Files
) -> None:
    streams = corpus_streams(dialect)
    if len(streams) < 3:  # Completions: only small replies recorded, in tests/data/completions
        pytest.skip(f"the corpus at {CORPUS} has no 3 {dialect} streams of 6 KB that end well")
    for n, stream in enumerate(streams):
        spill_beyond(monkeypatch, IN_MEMORY)
        expected, line = run_kind(tmp_path, dialect, stream, kind)
        assert len(files.opened) == n
        # A corpus stream of 100 KB spills about 100 times; half of any stream at least twice.
        spill_beyond(monkeypatch, spill_size(stream))
        assert run_kind(tmp_path, dialect, stream, kind)[0] == expected
        assert len(files.opened) == n + 1 and len(files.opened[-1].writes) >= 2
        kept = kind != "ended well, on_failure"  # every other kind keeps its raw text
        assert ("response_raw" in line) == kept, kind
        if kind == "truncated":  # what the app sent before it stopped, by hand
            assert (
                line["response_raw"]
                == b"".join(pieces(stream)[: len(pieces(stream)) // 2]).decode()
            )
        if kind == "ended well, always":
            assert line["response_raw"] == stream.decode()


def test_a_stream_over_the_real_threshold_writes_the_same_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: Files
) -> None:
    chunks = stream_chunks(20_000)  # about 3 MB: spilled at the real MEMORY_BYTES
    stream = b"".join(chunks)
    assert len(stream) > 2 * MEMORY_BYTES
    lines = []
    for memory in (IN_MEMORY, MEMORY_BYTES):
        spill_beyond(monkeypatch, memory)
        for then in ("end", "raise"):
            mw = capturing(tmp_path, app=replay_app(chunks, stop=len(chunks) - 2, then=then))
            rollout = new_rollout()
            call(mw, f"/ng-rollout/{rollout}{PATHS['chat']}", b'{"model":"m"}')
            lines.append(line_bytes(tmp_path, rollout))
    assert lines[2:] == lines[:2]
    assert len(files.opened) == 2  # one spill file per call past the threshold, none before
    first = json.loads(lines[0])
    assert first["response_raw"] == b"".join(chunks[:-2]).decode()
    assert first["error_category"] == "stream_truncated"


def test_a_spill_writes_a_megabyte_at_a_time_and_a_short_stream_opens_no_file(
    tmp_path: Path, files: Files
) -> None:
    chunks = stream_chunks(30_000)  # about 4.5 MB in chunks of about 150 bytes
    mw = capturing(tmp_path, app=replay_app(chunks), capture_stream_raw="always")
    rollout = new_rollout()
    call(mw, f"/ng-rollout/{rollout}{PATHS['chat']}", b'{"model":"m"}')
    assert only_line(tmp_path, rollout)["response_raw"] == b"".join(chunks).decode()
    ((spy,),) = [files.opened]
    assert len(spy.writes) == sum(len(c) for c in chunks) // MEMORY_BYTES
    assert all(MEMORY_BYTES - 200 < size <= MEMORY_BYTES for size in spy.writes)
    for policy in ("always", "on_failure"):
        mw = capturing(tmp_path, app=replay_app(stream_chunks(200)), capture_stream_raw=policy)
        call(mw, f"/ng-rollout/{new_rollout()}{PATHS['chat']}", b'{"model":"m"}')
    assert len(files.opened) == 1


# -- the memory budget counts what is in memory ---------------------------------------------------


def test_spilled_bytes_do_not_count_against_the_budget(tmp_path: Path) -> None:
    chunks = stream_chunks(30_000)  # about 4.5 MB: in memory its raw text would need 13.5 MB
    size = sum(len(c) for c in chunks)
    mw = capturing(tmp_path, app=replay_app(chunks), capture_memory_budget_bytes=8 << 20)
    rollout = new_rollout()
    call(mw, f"/ng-rollout/{rollout}{PATHS['chat']}", b'{"model":"m"}')
    line = only_line(tmp_path, rollout)
    assert "gaps" not in line and line["response"]["choices"][0]["message"]["content"]
    # The reassembly once, the part in memory, a block of slack and the request's share.
    assert size < mw.budget.peak <= size + MEMORY_BYTES + 4 * BLOCK
    assert mw.budget.used == 0


@pytest.mark.parametrize("budget", [8 << 20, 64 << 20])
def test_reading_a_spilled_text_back_asks_the_budget_for_it(budget: int, tmp_path: Path) -> None:
    chunks = stream_chunks(30_000)
    sent = b"".join(chunks[:-2])  # the stream stops before its end: a failure keeps the text
    mw = capturing(
        tmp_path,
        app=replay_app(chunks, stop=len(chunks) - 2),
        capture_memory_budget_bytes=budget,
    )
    rollout = new_rollout()
    call(mw, f"/ng-rollout/{rollout}{PATHS['chat']}", b'{"model":"m"}')
    line = only_line(tmp_path, rollout)
    if budget == 64 << 20:
        assert line["response_raw"] == sent.decode() and "gaps" not in line
    else:  # the text, read back, would need three copies of 4.5 MB: dropped, as said
        assert "response_raw" not in line
        assert line["gaps"] == [
            {
                "code": "memory_budget",
                "detail": f"response_raw: the raw stream text was dropped after {len(sent)} "
                f"bytes: {SPENT}",
            }
        ]
    assert mw.budget.used == 0


# -- a failed spill drops the text, never the call ------------------------------------------------


@pytest.mark.parametrize(
    ("where", "error", "code"),
    [("write_error", errno.EIO, "EIO"), ("open_error", errno.EMFILE, "EMFILE")],
)
def test_a_failed_spill_drops_the_raw_text_with_a_gap(
    where: str, error: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Files(**{where: error})
    monkeypatch.setattr(_raw, "tempfile", types.SimpleNamespace(TemporaryFile=spy.TemporaryFile))
    spill_beyond(monkeypatch, 4096)
    chunks = stream_chunks(400)
    before = open_fds()
    mw = capturing(tmp_path, app=replay_app(chunks, stop=300, then="raise"))
    rollout = new_rollout()
    reply = call(mw, f"/ng-rollout/{rollout}{PATHS['chat']}", b'{"model":"m"}')
    assert reply.body == b"".join(chunks[:300])  # the client got what the app sent
    line = only_line(tmp_path, rollout)
    assert line["error_category"] is not None and "response_raw" not in line
    assert line["response"]["choices"][0]["message"]["content"] == "word " * 300
    ((gap,),) = [line["gaps"]]
    assert gap["code"] == "raw_text_spill_failed"
    assert re.fullmatch(
        r"response_raw: the raw stream text was dropped after \d+ bytes: "
        rf"its temporary file failed \({code}: {re.escape(os.strerror(error))}\)",
        gap["detail"],
    ), gap
    assert all(opened.file.closed for opened in spy.opened)  # closed when the text was dropped
    assert open_fds() == before


# -- the descriptor is closed on every path ----------------------------------------------------


def one_call(directory: Path, kind: str) -> None:
    chunks = stream_chunks(400)  # about 60 KB: spilled past the 4 KB set below
    overrides: dict[str, Any] = {}
    options: dict[str, Any] = {}
    how: dict[str, Any] = {}
    if kind in ("truncated", "app raised", "cancelled"):
        how = {"stop": 300, "then": {"truncated": "end", "app raised": "raise"}.get(kind, "cancel")}
    elif kind == "client gone":
        options["on_send"] = client_gone_after(200)
    elif kind == "cut at the cap":
        overrides["capture_max_bytes"] = 20_000
    elif kind == "memory budget":
        # The request's share (a block at BODY_WEIGHT 2), then 30 KB for the stream's.
        overrides["capture_memory_budget_bytes"] = 2 * BLOCK + 30_000
    elif kind == "always":
        overrides["capture_stream_raw"] = "always"
    mw = capturing(directory, app=replay_app(chunks, **how), **overrides)
    rollout = new_rollout()
    if kind == "cancelled":
        with pytest.raises(asyncio.CancelledError):
            call(mw, f"/ng-rollout/{rollout}{PATHS['chat']}", b'{"model":"m"}', **options)
    else:
        call(mw, f"/ng-rollout/{rollout}{PATHS['chat']}", b'{"model":"m"}', **options)
    (line,) = read_lines(directory, rollout)
    if kind == "memory budget":
        assert [g["detail"].split(":")[0] for g in line["gaps"]] == ["response_raw", "response"]
        assert "response_raw" not in line
    elif kind != "ended well":
        assert "response_raw" in line, kind


FD_KINDS = ["ended well", "always", "truncated", "app raised", "cancelled", "client gone"]
FD_KINDS += ["cut at the cap", "memory budget"]


@pytest.mark.parametrize("kind", FD_KINDS)
def test_no_descriptor_leaks_whatever_way_a_call_ends(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: Files
) -> None:
    spill_beyond(monkeypatch, 4096)
    one_call(tmp_path, kind)  # the first call starts what stays (the write threads)
    before = open_fds()
    for _ in range(40):
        one_call(tmp_path, kind)
    assert open_fds() == before
    assert len(files.opened) == 41 and all(spy.file.closed for spy in files.opened)


# -- a real server and a real client that leaves ----------------------------------------------------


def waiting_app(chunks: list[bytes]) -> Any:
    """Streams `chunks`, then waits for the client to leave (`http.disconnect`), as a slow
    model server listening for disconnects does."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body", False):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass

    return app


def test_a_client_leaving_a_big_stream_over_uvicorn_gets_its_text_read_back(
    tmp_path: Path, files: Files
) -> None:
    chunks = stream_chunks(12_000)[:-2]  # about 1.9 MB: spilled at the real threshold; no end
    stream = b"".join(chunks)
    mw = capturing(tmp_path, app=waiting_app(chunks))
    rollout = new_rollout()
    with serve(mw) as server:
        before = open_fds()
        url = f"{server.url}/ng-rollout/{rollout}{PATHS['chat']}"
        with httpx.stream("POST", url, json=chat_body(stream=True), timeout=60) as reply:
            got = b""
            for piece in reply.iter_raw():
                got += piece
                if len(got) == len(stream):
                    break
        assert got == stream
        deadline = time.monotonic() + 20
        path = tmp_path / f"{rollout}.capture.jsonl"
        while not count_lines(path) and time.monotonic() < deadline:  # a whole line
            time.sleep(0.02)
        line = only_line(tmp_path, rollout)
        assert line["error_category"] == "cancelled"
        assert line["response_raw"] == stream.decode()
        assert len(files.opened) == 1 and files.opened[0].file.closed
        while open_fds() > before and time.monotonic() < deadline:  # the socket closes too
            time.sleep(0.02)
        assert open_fds() <= before
