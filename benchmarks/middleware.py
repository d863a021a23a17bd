"""Target 4: the capture middleware on a real uvicorn server, capture on against capture off.

Two servers run side by side in their own processes (`benchmarks._server`): the scripted
model server behind `CaptureMiddleware` with `observability_enabled` true and false (off
still strips the rollout prefix, so both serve the same URLs). A lean raw-socket HTTP/1.1
client alternates between them request by request, so both see the same machine.

- added p50 latency of a JSON call: p50(on) - p50(off), against one fsync (median of raw
  durable appends measured in the same run, on the capture directory's filesystem) + 0.3 ms;
- added time to first body byte of a stream: p50(on) - p50(off), against 0.1 ms;
- requests/s with 32 concurrent streaming clients (each its own rollout), on / off >= 0.8;
  a third server, capture on with a store that encodes each line and writes nothing
  (`nodisk`), splits the server CPU per request into the middleware's Python work and the
  durable append (row 4c'').
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from model_call_capture import _codec
from model_call_capture.contracts import CaptureConfig
from model_call_capture.demo.model_server import create_app
from model_call_capture.middleware import CaptureMiddleware

from ._common import Row, median, not_ready, post_scope
from .appends import _LINE, _raw_append
from .reassembly import ours as reassemble

__all__ = ["run"]

_PATH = "/ng-rollout/{rollout}/v1/chat/completions"


def _request(rollout: str, stream: bool, model: str = "demo-gpt") -> bytes:
    body = _codec.encode(
        {
            "model": model,
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
            "stream": stream,
        }
    )
    head = (
        f"POST {_PATH.format(rollout=rollout)} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


@contextmanager
def _server(
    mode: str, capture_dir: str, *options: str, src: str | None = None
) -> Iterator[tuple[int, int]]:
    """A benchmark server (`benchmarks._server`) in its own process: (port, pid).

    `src`: another source tree of the library to serve from (its `src` directory).
    """
    root = Path(__file__).resolve().parents[1]
    env = None
    if src is not None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(root)])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks._server", mode, capture_dir, *options],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=root,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"capture-{mode} server did not start")
        yield int(line), proc.pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class _Conn:
    """One keep-alive HTTP/1.1 connection; `call` returns (seconds to first body byte, total)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def call(self, request: bytes) -> tuple[float, float]:
        t0 = time.perf_counter()
        self.sock.sendall(request)
        buf = b""
        first = 0.0
        head_end = -1
        length: int | None = None
        while True:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("server closed the connection")
            buf += data
            if head_end < 0:
                head_end = buf.find(b"\r\n\r\n")
                if head_end < 0:
                    continue
                head = buf[:head_end].lower()
                if not head.startswith(b"http/1.1 200"):
                    raise RuntimeError(f"unexpected reply {buf[:200]!r}")
                for line in head.split(b"\r\n"):
                    if line.startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                head_end += 4
            if not first and len(buf) > head_end:
                first = time.perf_counter()
            if length is not None and len(buf) - head_end >= length:
                break
            if length is None and buf.endswith(b"\r\n0\r\n\r\n"):
                break
        return first - t0, time.perf_counter() - t0

    def close(self) -> None:
        self.sock.close()


def _latencies(
    ports: dict[str, int], stream: bool, n: int, floor: Path
) -> dict[str, list[tuple[float, float]]]:
    """(first byte, total) seconds of `n` calls to each server, alternating; under "fsync",
    the time of one raw durable append to `floor` after each pair (the same disk weather)."""
    conns = {mode: _Conn(port) for mode, port in ports.items()}
    out: dict[str, list[tuple[float, float]]] = {mode: [] for mode in ports}
    out["fsync"] = []
    try:
        request = _request("bench-latency", stream)
        for mode in ports:  # warm-up: create files, fill caches
            for _ in range(5):
                conns[mode].call(request)
        for i in range(n):
            order = ("on", "off") if i % 2 == 0 else ("off", "on")
            for mode in order:
                out[mode].append(conns[mode].call(request))
            t = time.perf_counter()
            _raw_append(floor, _LINE)
            out["fsync"].append((0.0, time.perf_counter() - t))
    finally:
        for conn in conns.values():
            conn.close()
    return out


async def _stream_client(
    port: int, rollout: str, stop: float, count: list[int], model: str
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 24)
    request = _request(rollout, True, model)
    try:
        while time.perf_counter() < stop:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"unexpected reply {head[:200]!r}")
            await reader.readuntil(b"\r\n0\r\n\r\n")
            count[0] += 1
    finally:
        writer.close()


async def _throughput(port: int, clients: int, seconds: float, model: str = "demo-gpt") -> float:
    count = [0]
    t0 = time.perf_counter()
    stop = t0 + seconds
    await asyncio.gather(
        *(_stream_client(port, f"bench-rps-{i}", stop, count, model) for i in range(clients))
    )
    return count[0] / (time.perf_counter() - t0)


def run(quick: bool) -> list[Row]:
    """Rows 4a (JSON latency), 4b (stream time to first byte), 4c (streaming requests/s)."""
    targets = (
        ("4a", "JSON call: added p50 latency", "<= 1 fsync + 0.3 ms"),
        ("4b", "stream: added p50 time to first byte", "<= 0.1 ms"),
        ("4c", "32 streaming clients: requests/s", ">= 0.8x"),
    )
    with tempfile.TemporaryDirectory(
        prefix="mcc-bench-mw-", dir=os.environ.get("MCC_BENCH_DIR")
    ) as tmp:
        try:
            with (
                _server("on", tmp) as (on, on_pid),
                _server("off", tmp) as (off, off_pid),
                _server("nodisk", tmp) as (nodisk, nodisk_pid),
            ):
                ports = {"on": on, "off": off}
                pids = {"on": on_pid, "off": off_pid, "nodisk": nodisk_pid}
                n = 40 if quick else 400
                js = _latencies(ports, False, n, Path(tmp) / "floor.jsonl")
                st = _latencies(ports, True, n, Path(tmp) / "floor.jsonl")
                seconds = 0.5 if quick else 3.0
                rps: dict[str, list[float]] = {"on": [], "off": [], "nodisk": []}
                cpu: dict[str, list[float]] = {"on": [], "off": [], "nodisk": []}
                ports["nodisk"] = nodisk
                for i in range(1 if quick else 3):
                    for mode in ("on", "off", "nodisk") if i % 2 == 0 else ("nodisk", "off", "on"):
                        c0, t0 = _cpu_seconds(pids[mode]), time.perf_counter()
                        rate = asyncio.run(_throughput(ports[mode], 32, seconds))
                        used = _cpu_seconds(pids[mode]) - c0
                        rps[mode].append(rate)
                        cpu[mode].append(used / (rate * (time.perf_counter() - t0)))
            raw_cpu_ms = _raw_append_cpu_ms(Path(tmp) / "floor.jsonl", 40 if quick else 400)
            chunks = asyncio.run(_stream_chunks())
            reassembly_cpu_ms = _reassembly_cpu_ms(chunks, 200 if quick else 2000)
            first_on, first_off = asyncio.run(_first_body_in_process(tmp, 200 if quick else 2000))
        except Exception as exc:  # a component not ready: report it, do not crash the run
            return [not_ready(t, w, g, f"{type(exc).__name__}: {exc}") for t, w, g in targets]
    rows = []
    on_ms, off_ms = (
        median([t for _, t in js["on"]]) * 1000,
        median([t for _, t in js["off"]]) * 1000,
    )
    budget = median([t for _, t in js["fsync"]]) * 1000 + 0.3
    added = on_ms - off_ms
    rows.append(
        Row(
            "4a",
            targets[0][1],
            f"+{added:.2f} ms (p50 {on_ms:.2f} ms on)",
            f"{budget:.2f} ms budget (fsync p50 {budget - 0.3:.2f} + 0.3; p50 {off_ms:.2f} ms off)",
            f"{added / budget:.2f} of budget",
            targets[0][2],
            added <= budget,
            f"{n} calls each, alternating, each pair followed by one raw append (open+write+fsync+close of a {len(_LINE)} B line) timed for the budget",
        )
    )
    on_f, off_f = median([f for f, _ in st["on"]]) * 1000, median([f for f, _ in st["off"]]) * 1000
    added_f = on_f - off_f
    rows.append(
        Row(
            "4b",
            targets[1][1],
            f"{added_f:+.3f} ms (p50 {on_f:.3f} ms on)",
            f"p50 {off_f:.3f} ms off",
            f"{on_f / off_f:.3f}x",
            targets[1][2],
            added_f <= 0.1,
            f"{n} streams each, alternating; whole stream p50 {median([t for _, t in st['on']]) * 1000:.2f} / {median([t for _, t in st['off']]) * 1000:.2f} ms on/off",
        )
    )
    rows.append(
        Row(
            "4b'",
            "stream: the middleware's own share of the time to first byte",
            f"{(first_on - first_off) * 1e6:+.1f} us (first body message {first_on * 1e6:.1f} us after the call, on)",
            f"{first_off * 1e6:.1f} us off",
            f"{first_on / first_off:.2f}x",
            "(info)",
            None,
            "in process: the same app and middleware called directly, no sockets, no scheduler; what 4b adds beyond this comes from the machine (threads, wake-ups), not from code on the first-byte path",
        )
    )
    r_on, r_off = median(rps["on"]), median(rps["off"])
    rows.append(
        Row(
            "4c",
            targets[2][1],
            f"{r_on:,.0f} req/s on",
            f"{r_off:,.0f} req/s off",
            f"{r_on / r_off:.2f}x",
            targets[2][2],
            r_on / r_off >= 0.8,
            f"{len(rps['on'])} x {seconds:g} s per side, alternating; uvicorn with h11 + asyncio (section 8 also runs httptools and uvloop)",
        )
    )
    c_on, c_off = median(cpu["on"]) * 1000, median(cpu["off"]) * 1000
    rows.append(
        Row(
            "4c'",
            "server CPU per streaming request",
            f"{c_on:.3f} ms on",
            f"{c_off:.3f} ms off",
            f"{c_on / c_off:.1f}x",
            "(info)",
            None,
            "utime+stime of the server process per request: the server is CPU-bound, so requests/s on/off is about the inverse of this ratio",
        )
    )
    c_nd = median(cpu["nodisk"]) * 1000
    rows.append(
        Row(
            "4c''",
            "added server CPU per streaming request, split",
            f"+{c_on - c_off:.3f} ms on = +{c_nd - c_off:.3f} capture without disk + {c_on - c_nd:.3f} durable append",
            f"{c_off:.3f} ms off",
            f"{(c_nd - c_off) / max(c_on - c_off, 1e-9):.2f} of it without disk",
            "(info)",
            None,
            f"third server: capture on, the store encodes each line and writes nothing ({median(rps['nodisk']):,.0f} req/s); 0.8x needs the whole addition <= {c_off / 4:.3f} ms, and one raw durable append (open+write+fsync+close, no capture) alone costs {raw_cpu_ms:.3f} ms of CPU here, reassembling the stream alone ({len(chunks)} chunks) {reassembly_cpu_ms:.3f} ms",
        )
    )
    return rows


def _raw_append_cpu_ms(path: Path, n: int) -> float:
    """CPU (user + system) of this process per raw durable append of a line, in ms."""
    t0 = time.process_time()
    for _ in range(n):
        _raw_append(path, _LINE)
    return (time.process_time() - t0) / n * 1000


async def _asgi_stream(app: Any, path: str) -> tuple[list[bytes], float]:
    """Call `app` in process with the benchmark's streaming request: the body chunks it sent,
    and the seconds from the call to its first body message."""
    body = _request("bench-chunks", True).split(b"\r\n\r\n", 1)[1]
    scope = post_scope(path, body)
    received = False
    chunks: list[bytes] = []
    first = 0.0

    async def receive() -> dict[str, object]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)  # the client stays connected
        raise AssertionError("unreachable")

    async def send(message: dict[str, object]) -> None:
        nonlocal first
        if message["type"] == "http.response.body" and message.get("body"):
            if not chunks:
                first = time.perf_counter()
            body = message["body"]
            assert isinstance(body, bytes | bytearray | memoryview)
            chunks.append(bytes(body))

    t0 = time.perf_counter()
    await app(scope, receive, send)
    return chunks, first - t0


async def _stream_chunks() -> list[bytes]:
    """The body chunks the scripted app sends for the benchmark's streaming request."""
    return (await _asgi_stream(create_app(), "/v1/chat/completions"))[0]


async def _first_body_in_process(capture_dir: str, n: int) -> tuple[float, float]:
    """Median seconds from the call to the first body message, capture on / off, in process:
    the middleware's own share of the time to first byte, without sockets or scheduling."""
    apps = {
        on: CaptureMiddleware(
            create_app(),
            config=CaptureConfig(observability_enabled=on, model_call_capture_dir=capture_dir),
            model_server_name="bench_model",
        )
        for on in (True, False)
    }
    times: dict[bool, list[float]] = {True: [], False: []}
    for i in range(n):
        for on in (True, False) if i % 2 == 0 else (False, True):
            times[on].append(
                (await _asgi_stream(apps[on], "/ng-rollout/bench-first/v1/chat/completions"))[1]
            )
    return median(times[True][n // 10 :]), median(times[False][n // 10 :])


def _reassembly_cpu_ms(chunks: list[bytes], n: int) -> float:
    """CPU per stream of reassembling `chunks` (fed as they were sent), in ms."""
    t0 = time.process_time()
    for _ in range(n):
        reassemble("chat", chunks)
    return (time.process_time() - t0) / n * 1000


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
