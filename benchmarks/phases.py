"""Where the time of one captured call goes, phase by phase (issue 19).

    python -m benchmarks.phases [--calls N] [--load]

Calls the 200-chunk streaming app (`benchmarks._stream_app`) behind `CaptureMiddleware`
in process (no sockets), capture on, with timers wrapped around the library's own
functions (instrumentation only: the code under test is not changed), and prints the
median of each phase per call:

- receive / tee: the request body teed (`RequestTee.take`);
- per-chunk tee and feed: the middleware's work per body message, outside the
  downstream `send` and the reassembler;
- reassemble: `StreamReassembler.feed` and `finish`;
- build line, encode, redact: in the write thread (no redaction is configured: 0);
- hand-off: from handing the call to the write thread to that thread starting on it;
- append: `CaptureStore.append` less its fsync; fsync: the `os.fsync` calls;
- wake-up: from the write thread resolving the call's future to the call resuming.

`--load` runs a CPU-bound thread beside the calls (a busy event-loop thread's share of
the GIL, as under many concurrent streams).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from model_call_capture import _codec, reassembly
from model_call_capture.contracts import CaptureConfig
from model_call_capture.middleware import CaptureMiddleware, _request, _writer
from model_call_capture.middleware import _call as call_module
from model_call_capture.store import _store as store_module
from model_call_capture.store import _writer as store_writer

from ._stream_app import stream_app
from .linerate import _call
from .middleware import _request as http_request

PHASES = (
    "receive / tee",
    "per-chunk tee and feed",
    "reassemble",
    "build line",
    "encode",
    "redact",
    "hand-off",
    "append (open, lock, write, close)",
    "fsync",
    "wake-up",
    "whole call (wall)",
    "whole call (CPU, all threads)",
    "wall - CPU - fsync - hand-off - wake-up",
)

_spent: dict[str, float] = defaultdict(float)
_marks: dict[str, float] = {}


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _spent[name] += time.perf_counter() - t

    return wrapper


def _instrument() -> None:
    """Wrap the library's functions with timers (this process only)."""
    _request.RequestTee.take = _timed("receive / tee", _request.RequestTee.take)  # type: ignore[method-assign]
    sr = reassembly.StreamReassembler
    sr.feed = _timed("reassemble", sr.feed)  # type: ignore[method-assign]
    sr.finish = _timed("reassemble", sr.finish)  # type: ignore[method-assign]
    _writer.build_line = _timed("build line", _writer.build_line)
    store_writer._codec = SimpleNamespace(encode_line=_timed("encode", _codec.encode_line))  # type: ignore[attr-defined]
    names = {k: getattr(os, k) for k in dir(os) if not k.startswith("__")}
    store_writer.os = SimpleNamespace(**{**names, "fsync": _timed("fsync", os.fsync)})  # type: ignore[attr-defined]

    blocking = _writer.CaptureWriter._write_blocking

    def write_blocking(self: Any, call: Any, loop: Any, done: Any) -> None:
        _spent["hand-off"] += time.perf_counter() - _marks["submit"]
        blocking(self, call, loop, done)

    _writer.CaptureWriter._write_blocking = write_blocking  # type: ignore[method-assign]
    store = store_module.CaptureStore
    store.append = _timed("append (open, lock, write, close)", store.append)  # type: ignore[method-assign]
    release = call_module.CapturedCall.release

    def timed_release(self: Any) -> None:
        release(self)
        _marks["resolved"] = time.perf_counter()  # the future is resolved right after

    call_module.CapturedCall.release = timed_release  # type: ignore[method-assign]
    write = _writer.CaptureWriter.write

    async def timed_write(self: Any, call: Any) -> None:
        _marks["submit"] = time.perf_counter()
        await write(self, call)
        _spent["wake-up"] += time.perf_counter() - _marks["resolved"]

    _writer.CaptureWriter.write = timed_write  # type: ignore[method-assign]
    send_to = call_module.CapturedCall.send_to

    def timed_send_to(self: Any, send: Any) -> Any:
        async def downstream(message: Any) -> None:
            t = time.perf_counter()
            await send(message)
            _spent["downstream"] += time.perf_counter() - t

        inner = send_to(self, downstream)

        async def capture_send(message: Any) -> None:
            t = time.perf_counter()
            await inner(message)
            _spent["capture_send"] += time.perf_counter() - t

        return capture_send

    call_module.CapturedCall.send_to = timed_send_to  # type: ignore[method-assign]


def _burn(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(1000))


async def _calls(app: Any, n: int) -> dict[str, list[float]]:
    body = http_request("x", True).split(b"\r\n\r\n", 1)[1]
    path = "/ng-rollout/bench-phases/v1/chat/completions"
    out: dict[str, list[float]] = defaultdict(list)
    for i in range(n + 10):
        _spent.clear()
        c, t = time.process_time(), time.perf_counter()
        await _call(app, path, body)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        if i < 10:
            continue
        spent = dict(_spent)
        # The final message's send includes the whole write and its wake-up.
        inside = spent.get("capture_send", 0.0) - spent.get("downstream", 0.0)
        write = sum(
            spent.get(k, 0.0)
            for k in ("hand-off", "append (open, lock, write, close)", "wake-up", "build line")
        )
        feed = spent.get("reassemble", 0.0)
        spent["per-chunk tee and feed"] = max(inside - write - feed, 0.0)
        spent["append (open, lock, write, close)"] = spent.get(
            "append (open, lock, write, close)", 0.0
        ) - spent.get("fsync", 0.0)
        spent["redact"] = 0.0
        spent["whole call (wall)"] = wall
        spent["whole call (CPU, all threads)"] = cpu
        # What the phases above do not explain (the waits are not CPU; the rest is).
        spent["wall - CPU - fsync - hand-off - wake-up"] = (
            wall
            - cpu
            - spent.get("fsync", 0.0)
            - spent.get("hand-off", 0.0)
            - spent.get("wake-up", 0.0)
        )
        for name in PHASES:
            out[name].append(spent.get(name, 0.0))
    return out


def main() -> None:
    """Print the per-phase medians as a markdown table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.phases")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--load", action="store_true", help="a CPU-bound thread runs beside")
    args = parser.parse_args()
    _instrument()
    stop = threading.Event()
    if args.load:
        threading.Thread(target=_burn, args=(stop,), daemon=True).start()
    with tempfile.TemporaryDirectory(dir=os.environ.get("MCC_BENCH_DIR")) as tmp:
        app = CaptureMiddleware(
            stream_app,
            config=CaptureConfig(observability_enabled=True, model_call_capture_dir=tmp),
            model_server_name="bench_model",
        )
        got = asyncio.run(_calls(app, args.calls))
    stop.set()
    print(f"| phase | p50 per call (ms) | p90 (ms) |  # {args.calls} calls, load={args.load}")
    print("|---|---|---|")
    for name in PHASES:
        values = sorted(got[name])
        p90 = values[int(len(values) * 0.9)]
        # (the last row can be negative: an fsync's own CPU is counted in both)
        print(f"| {name} | {statistics.median(values) * 1e3:.3f} | {p90 * 1e3:.3f} |")


if __name__ == "__main__":
    main()
