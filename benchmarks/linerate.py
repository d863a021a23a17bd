"""Target 8 (issue 19): capture at line rate, the rows of the issue's table.

A 200-chunk streaming chat model (`benchmarks._stream_app`) served by uvicorn behind
`CaptureMiddleware`, capture on against capture off, each server in its own process
(`benchmarks._server`), with each HTTP parser (h11, httptools) and, for httptools, also
uvloop; on and off always use the same parser and loop, and are measured alternately in
one run:

- 8a: 32 concurrent streaming clients (each its own rollout), requests/s on / off >= 0.8x;
  8a' is the server CPU per request, on / off;
- 8a'': the CPU per request that 0.8x leaves capture, against the reassembler alone
  plus one raw durable append (measured in process, below);
- 8b: one client, calls in sequence: p50 wall of a captured call / an uncaptured one
  <= 1.3x;

and in process (the same app and middleware called directly, no sockets):

- 8c: CPU added per streamed chunk by capture (process CPU, every thread: the tee, the
  reassembly, the line, the durable append), <= 1.5x what the reassembler alone costs
  per chunk on the same chunks (both medians of process CPU per call, in one rotation);
  8c'' is what no capture can skip, in the same rotation: the reassembler alone, one raw
  durable append of the line and the hand-off to a thread and back that keeps the fsync
  off the event loop;
- 8d: wall per captured call beyond its CPU, against the same for an uncaptured call
  followed by one raw durable append (open+write+fsync+close) on the loop thread: what
  capture's hand-off to its write thread and back adds, <= 0.1 ms;
- 8e: read 50,000 capture lines shaped like NeMo Gym's reference files into records,
  against Gym 0.7.0's reader (`benchmarks._gym_reader`), >= 5x.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model_call_capture.contracts import CaptureConfig
from model_call_capture.middleware import CaptureMiddleware
from model_call_capture.records import read_available_model_call_records
from model_call_capture.store import CaptureStore

from ._common import Row, interleaved, median, not_ready, post_scope
from ._stream_app import CHUNKS, stream_app, stream_chunks
from .appends import _raw_append
from .middleware import _Conn, _cpu_seconds, _request, _server, _throughput
from .reassembly import ours as reassemble

__all__ = ["run"]

_ROOT = Path(__file__).resolve().parents[1]
_GYM_REFERENCE = (_ROOT.parent / "shared" / "gym-reference", _ROOT / "tests/data/gym-reference")


def _stacks() -> list[tuple[str, str]]:
    """(HTTP parser, loop) pairs to measure: those installed."""
    stacks = [("h11", "asyncio")]
    if importlib.util.find_spec("httptools") is not None:
        stacks.append(("httptools", "asyncio"))
        if importlib.util.find_spec("uvloop") is not None:
            stacks.append(("httptools", "uvloop"))
    return stacks


def _client_loop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The load generator's event loop: uvloop when installed (the client costs less CPU
    per chunk, so the server, not the client, is what the machine spends on), else asyncio."""
    try:
        import uvloop
    except ImportError:
        return None
    new_loop: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return new_loop


def _over_http(tmp: str, http: str, loop: str, quick: bool) -> tuple[list[Row], _Load]:
    """Rows 8a, 8a' and 8b for one parser and loop, and the server CPU per request."""
    options = ("--app", "stream", "--http", http, "--loop", loop)
    with (
        _server("on", tmp, *options) as (on, on_pid),
        _server("off", tmp, *options) as (off, off_pid),
    ):
        ports, pids = {"on": on, "off": off}, {"on": on_pid, "off": off_pid}
        conns = {mode: _Conn(port) for mode, port in ports.items()}
        walls: dict[str, list[float]] = {"on": [], "off": []}
        try:
            request = _request(f"bench-seq-{http}-{loop}", True)
            n = 20 if quick else 300
            for i in range(n + 10):
                for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
                    wall = conns[mode].call(request)[1]
                    if i >= 10:  # after the warm-up
                        walls[mode].append(wall)
        finally:
            for conn in conns.values():
                conn.close()
        rps: dict[str, list[float]] = {"on": [], "off": []}
        cpu: dict[str, list[float]] = {"on": [], "off": []}
        seconds = 0.5 if quick else 3.0
        for i in range(1 if quick else 4):
            for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
                c0, t0 = _cpu_seconds(pids[mode]), time.perf_counter()
                with asyncio.Runner(loop_factory=_client_loop()) as runner:
                    rate = runner.run(_throughput(ports[mode], 32, seconds))
                used = _cpu_seconds(pids[mode]) - c0
                rps[mode].append(rate)
                cpu[mode].append(used / max(rate * (time.perf_counter() - t0), 1))
    stack = f"{http} + {loop}"
    r_on, r_off = median(rps["on"]), median(rps["off"])
    c_on, c_off = median(cpu["on"]) * 1000, median(cpu["off"]) * 1000
    w_on, w_off = median(walls["on"]) * 1000, median(walls["off"]) * 1000
    spread = "/".join(f"{a / b:.2f}" for a, b in zip(rps["on"], rps["off"], strict=True))
    load = _Load(stack, c_on, c_off)
    return [
        Row(
            "8a",
            f"32 streaming clients, {CHUNKS}-chunk chat streams: requests/s ({stack})",
            f"{r_on:,.0f} req/s on",
            f"{r_off:,.0f} req/s off",
            f"{r_on / r_off:.2f}x",
            ">= 0.8x",
            r_on / r_off >= 0.8,
            f"{len(rps['on'])} x {seconds:g} s per side, alternating; per round {spread}; "
            f"load client on {'uvloop' if _client_loop() else 'asyncio'}",
        ),
        Row(
            "8a'",
            f"server CPU per streaming request ({stack})",
            f"{c_on:.3f} ms on",
            f"{c_off:.3f} ms off",
            f"{c_off / c_on:.2f}x (off/on)",
            "(info)",
            None,
            "utime+stime of the server process per request under the 32-client load; "
            "a server bound by its CPU would serve about off/on as many requests/s",
        ),
        Row(
            "8b",
            f"one client, calls in sequence: captured call / uncaptured call ({stack})",
            f"{w_on:.2f} ms on",
            f"{w_off:.2f} ms off",
            f"{w_on / w_off:.2f}x",
            "<= 1.3x",
            w_on / w_off <= 1.3,
            f"p50 of {len(walls['on'])} calls each, alternating on one keep-alive connection each",
        ),
    ], load


async def _call(app: Any, path: str, body: bytes) -> None:
    """One streamed call of `app` in process; the client stays connected."""
    scope = post_scope(path, body)
    received = False

    async def receive() -> dict[str, object]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def send(message: dict[str, object]) -> None:
        pass

    await app(scope, receive, send)


async def _in_process(capture_dir: str, n: int) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds per call: capture on, capture off, and capture off followed by
    one raw durable append of a line as long as the captured one (open, write, fsync,
    close, on the loop thread): the same work and the same disk weather without capture's
    hand-off to its write thread. The three alternate, their order rotating."""
    apps = {
        mode: CaptureMiddleware(
            stream_app,
            config=CaptureConfig(
                observability_enabled=mode == "on", model_call_capture_dir=capture_dir
            ),
            model_server_name="bench_model",
        )
        for mode in ("on", "off")
    }
    body = _request("x", True).split(b"\r\n\r\n", 1)[1]
    path = "/ng-rollout/bench-inproc/v1/chat/completions"
    floor = Path(capture_dir) / "floor.jsonl"
    for _ in range(10):  # warm-up; then a raw line as long as the captured one
        await _call(apps["on"], path, body)
    line = CaptureStore(capture_dir).path("bench-inproc").read_bytes().splitlines()[-1] + b"\n"

    chunks = stream_chunks()
    pool = ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()

    async def off_then_append() -> None:
        await _call(apps["off"], path, body)
        _raw_append(floor, line)

    async def reassembly() -> None:
        reassemble("chat", chunks)

    def append_and_wake(done: asyncio.Future[None]) -> None:
        _raw_append(floor, line)
        loop.call_soon_threadsafe(done.set_result, None)

    async def least() -> None:
        # What no capture can skip: reassemble, then make the line durable on a thread
        # and wake the loop (as `middleware/_writer.py` hands a call off and back).
        await _call(apps["off"], path, body)
        reassemble("chat", chunks)
        done = loop.create_future()
        pool.submit(append_and_wake, done)
        await done

    calls = {
        "on": lambda: _call(apps["on"], path, body),
        "off": lambda: _call(apps["off"], path, body),
        "off+append": off_then_append,
        "reassembly": reassembly,
        "least": least,
    }
    order = list(calls)
    out: dict[str, list[tuple[float, float]]] = {mode: [] for mode in calls}
    try:
        for i in range(n):
            k = i % len(order)
            for mode in order[k:] + order[:k]:
                c, t = time.process_time(), time.perf_counter()
                await calls[mode]()
                out[mode].append((time.perf_counter() - t, time.process_time() - c))
    finally:
        pool.shutdown()
    return out


def _in_process_rows(tmp: str, quick: bool) -> tuple[list[Row], _Parts]:
    """Rows 8c and 8d, and two parts of a captured call's CPU (for 8a'')."""
    gc.collect()
    got = asyncio.run(_in_process(tmp, 30 if quick else 400))
    wall, cpu = (
        {mode: median([sample[k] for sample in samples]) for mode, samples in got.items()}
        for k in (0, 1)
    )
    # Both sides of 8c are medians of process CPU per call, timed in the same rotation.
    per_chunk = cpu["reassembly"] / CHUNKS
    added = (cpu["on"] - cpu["off"]) / CHUNKS
    least = (cpu["least"] - cpu["off"]) / CHUNKS
    append = cpu["off+append"] - cpu["off"]
    hand_off = cpu["least"] - cpu["off"] - cpu["reassembly"] - append
    chunks = stream_chunks()
    rounds = 20 if quick else 200
    hot, _ = interleaved(
        lambda: reassemble("chat", chunks), lambda: reassemble("chat", chunks), rounds=rounds
    )
    gap = wall["on"] - cpu["on"]
    floor = wall["off+append"] - cpu["off+append"]
    parts = _Parts(
        reassembly_ms=per_chunk * CHUNKS * 1e3,
        append_ms=(cpu["off+append"] - cpu["off"]) * 1e3,
        added_ms=(cpu["on"] - cpu["off"]) * 1e3,
    )
    return [
        Row(
            "8c",
            f"CPU added per streamed chunk by capture ({CHUNKS}-chunk chat stream, in process)",
            f"{added * 1e6:.2f} us/chunk ({(cpu['on'] - cpu['off']) * 1e3:.2f} ms per call)",
            f"{per_chunk * 1e6:.2f} us/chunk (the reassembler alone)",
            f"{added / per_chunk:.2f}x",
            "<= 1.5x",
            added / per_chunk <= 1.5,
            f"process CPU (all threads) per call, on {cpu['on'] * 1e3:.2f} ms / off "
            f"{cpu['off'] * 1e3:.2f} ms, medians of {len(got['on'])} alternating calls; "
            "includes the line, its encoding and the durable append",
        ),
        Row(
            "8c'",
            "the reassembler alone in a loop of its own (the former baseline of 8c)",
            f"{added * 1e6:.2f} us/chunk (8c)",
            f"{hot / CHUNKS * 1e6:.2f} us/chunk (fastest of {rounds} calls in a row, GC paused)",
            f"{added / (hot / CHUNKS):.2f}x",
            "(info)",
            None,
            f"the same reassembler in 8c's rotation takes {cpu['reassembly'] / hot:.2f}x "
            "this: between other work its code and data are no longer in the CPU's caches, "
            "as between the chunks of a served stream",
        ),
        Row(
            "8c''",
            "CPU per chunk that no capture can skip, against 8c's target",
            f"{least * 1e6:.2f} us/chunk ({least / per_chunk:.2f}x the reassembler alone)",
            f"{1.5 * per_chunk * 1e6:.2f} us/chunk (1.5 x {per_chunk * 1e6:.2f})",
            f"{least / (1.5 * per_chunk):.2f} of the target",
            "(info)",
            None,
            f"per call: the reassembler alone {cpu['reassembly'] * 1e3:.3f} ms + one raw "
            f"durable append of the line {append * 1e3:.3f} ms + the hand-off to a thread "
            f"and back {hand_off * 1e3:.3f} ms (the fsync kept off the event loop), in the "
            "same rotation as 8c; nothing of the middleware, the line or its encoding",
        ),
        Row(
            "8d",
            "wall per captured call in process, beyond its CPU",
            f"{gap * 1e3:.3f} ms (wall {wall['on'] * 1e3:.2f} ms, CPU {cpu['on'] * 1e3:.2f} ms)",
            f"{floor * 1e3:.3f} ms (uncaptured call + one raw durable append on the loop "
            f"thread: wall {wall['off+append'] * 1e3:.2f}, CPU {cpu['off+append'] * 1e3:.2f} ms)",
            f"+{(gap - floor) * 1e3:.3f} ms",
            "<= +0.1 ms",
            gap - floor <= 0.0001,
            "what a call waits for besides its CPU, against the same wait without capture's "
            "hand-off to its write thread and back (the fsync's own wait is in both); medians",
        ),
    ], parts


@dataclass(frozen=True)
class _Load:
    """Server CPU per streaming request under the 32-client load, in ms (row 8a')."""

    stack: str
    on_ms: float
    off_ms: float


@dataclass(frozen=True)
class _Parts:
    """CPU of parts of a captured call measured in process, in ms (rows 8c and 8d)."""

    reassembly_ms: float
    """The reassembler alone on the call's chunks."""
    append_ms: float
    """One raw durable append of the call's line (open, write, fsync, close)."""
    added_ms: float
    """Everything capture adds to a call (row 8c)."""


def _budget_row(load: _Load, parts: _Parts) -> Row:
    """Row 8a'': what 0.8x leaves capture per request, against two parts it cannot skip.

    A server bound by its CPU serves on/off = off CPU / on CPU requests/s, so 0.8x leaves
    capture 0.25 x the uncaptured request's CPU. A captured stream must be reassembled and
    its line made durable: the reassembler alone and one raw durable append, each timed
    in process in this run, are the least capture inside the server can add.
    """
    budget = 0.25 * load.off_ms
    least = parts.reassembly_ms + parts.append_ms
    return Row(
        "8a''",
        f"CPU per request that 0.8x leaves capture, against its least ({load.stack})",
        f"{least:.3f} ms (the reassembler alone {parts.reassembly_ms:.3f} + one raw "
        f"durable append {parts.append_ms:.3f})",
        f"{budget:.3f} ms (0.25 x {load.off_ms:.3f} ms off, row 8a')",
        f"{least / budget:.2f} of the budget",
        "(info)",
        None,
        f"capture adds {load.on_ms - load.off_ms:.3f} ms per request under the load "
        f"(8a'), {parts.added_ms:.3f} ms in process (8c): the rest is what any loop as slow "
        "pays the kernel per send, and the write threads' Python under the GIL (`python -m "
        "benchmarks.contention --control 3.7`)",
    )


def _gym_lines() -> list[bytes]:
    """Every line of NeMo Gym's reference capture files (full set, else the sample)."""
    for root in _GYM_REFERENCE:
        if root.is_dir():
            lines = []
            for path in sorted(root.glob("*/*.capture.jsonl")):
                lines += [line for line in path.read_bytes().splitlines() if line.strip()]
            if lines:
                return lines
    raise FileNotFoundError("no NeMo Gym reference capture files found")


def _reading_rows(tmp: str, quick: bool) -> list[Row]:
    """Rows 8e and 8e': 50,000 Gym-shaped lines -> records, ours against Gym's reader."""
    from . import _gym_reader  # needs orjson (the dev extra), as Gym does

    lines = _gym_lines()
    n = 2_000 if quick else 50_000
    data = b"\n".join(lines[i % len(lines)] for i in range(n)) + b"\n"
    store = CaptureStore(tmp)
    path = store.path("bench-gym")
    path.write_bytes(data)

    def ours() -> None:
        read_available_model_call_records(store, "bench-gym")

    def ours_payloads() -> None:
        records, _ = read_available_model_call_records(store, "bench-gym")
        for record in records:
            record.request  # noqa: B018 - decoded on first read: what an importer pays
            record.response  # noqa: B018

    def gym() -> None:
        _gym_reader.read_available_model_call_records(path)

    rounds = 3 if quick else 7
    ours_s, gym_s = interleaved(ours, gym, rounds=rounds, pause_gc=False)
    full_s, gym2_s = interleaved(ours_payloads, gym, rounds=rounds, pause_gc=False)
    size = len(data) / 1e6
    return [
        Row(
            "8e",
            f"read {n:,} lines -> records, lines shaped like NeMo Gym's reference files",
            f"{n / ours_s:,.0f} records/s",
            f"{n / gym_s:,.0f} records/s (Gym 0.7.0's reader: orjson + pydantic)",
            f"{gym_s / ours_s:.1f}x",
            ">= 5x",
            gym_s / ours_s >= 5,
            f"{len(lines)} reference lines repeated, {size:.1f} MB; records as each "
            "reader returns them (ours decode payloads on first read); GC on; min of "
            f"{rounds} alternating rounds",
        ),
        Row(
            "8e'",
            "same, then every record's `request` and `response` read",
            f"{n / full_s:,.0f} records/s",
            f"{n / gym2_s:,.0f} records/s (Gym's are dicts already)",
            f"{gym2_s / full_s:.1f}x",
            "(info)",
            None,
            "what an importer of training data pays",
        ),
    ]


def run(quick: bool) -> list[Row]:
    """Rows 8a-8e."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(
        prefix="mcc-bench-linerate-", dir=os.environ.get("MCC_BENCH_DIR")
    ) as tmp:
        loads: list[_Load] = []
        for http, loop in _stacks():
            try:
                stack_rows, load = _over_http(tmp, http, loop, quick)
            except Exception as exc:  # a component not ready: report it, do not crash the run
                rows.append(not_ready("8a", f"{http} + {loop}", ">= 0.8x", repr(exc)))
                continue
            rows += stack_rows
            loads.append(load)
        try:
            in_process, parts = _in_process_rows(tmp, quick)
        except Exception as exc:
            rows.append(not_ready("8c", "_in_process_rows", "see docstring", repr(exc)))
        else:
            rows += [_budget_row(load, parts) for load in loads] + in_process
        try:
            rows += _reading_rows(tmp, quick)
        except Exception as exc:
            rows.append(not_ready("8e", "_reading_rows", "see docstring", repr(exc)))
    return rows
