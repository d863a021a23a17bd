"""Concurrent large streams through `mcc serve`: the proxy's peak RSS against its budget.

    python -m benchmarks.proxy_streams [--streams 32] [--mib 80] [--budget-mib 1024 ...]

Runs `mcc serve --capture-memory-budget B` as its own process in front of a chat model
that streams `--mib` MiB of text deltas per call (a raw ASGI app on uvicorn in this
process, its chunks built once), and sends `--streams` captured streaming calls at once
(one thread each, reading every byte). For each budget it prints the proxy process's
peak RSS (`VmHWM`) over its RSS after a warm-up call, and that growth as a multiple of the
budget. Linux only; the machine may be shared, so figures vary by a few percent.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import uvicorn

MIB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[1]
_DELTA = 4096
"""Characters of text in each stream chunk."""


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    event = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "bench-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(event).encode() + b"\n\n"


def stream_app(mib: float) -> Callable[..., Any]:
    """A chat model streaming about `mib` MiB of text per call, in 4 KiB deltas."""
    text = _chunk({"content": "x" * _DELTA})
    count = max(1, int(mib * MIB) // len(text))
    head = _chunk({"role": "assistant", "content": ""})
    tail = _chunk({}, "stop") + b"data: [DONE]\n\n"

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body", False):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": head, "more_body": True})
        for _ in range(count):
            await send({"type": "http.response.body", "body": text, "more_body": True})
        await send({"type": "http.response.body", "body": tail, "more_body": False})

    return app


def start_upstream(app: Callable[..., Any]) -> tuple[str, uvicorn.Server]:
    """`app` on uvicorn in a thread of this process; its URL and server."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


def status_kib(pid: int, field: str) -> int:
    """A `/proc/<pid>/status` field in KiB (`VmRSS`, `VmHWM`)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def start_proxy(
    upstream: str, capture_dir: str, *options: str, src: Path = ROOT / "src"
) -> tuple[subprocess.Popen[str], str]:
    """`mcc serve` as its own process; the process and its URL."""
    command = [sys.executable, "-m", "model_call_capture.cli", "serve", "--upstream", upstream]
    command += ["--capture-dir", capture_dir, "--port", "0", *options]
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    match = re.match(r"mcc serve: (http://[^ ]+) -> ", proc.stdout.readline())
    if match is None:
        proc.kill()
        raise RuntimeError("mcc serve did not start")
    return proc, match.group(1)


def _call(url: str, rollout: str, received: list[int]) -> None:
    body = {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]}
    size = 0
    with httpx.stream(
        "POST",
        f"{url}/ng-rollout/{rollout}/v1/chat/completions",
        json={**body, "stream": True},
        timeout=600,
    ) as reply:
        for chunk in reply.iter_raw():
            size += len(chunk)
    received.append(size)


def concurrent_streams(url: str, streams: int, prefix: str) -> list[int]:
    """`streams` captured streaming calls at once; the bytes each client received."""
    received: list[int] = []
    threads = [
        threading.Thread(target=_call, args=(url, f"{prefix}-{n}", received))
        for n in range(streams)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return received


def measure(upstream: str, streams: int, budget: int) -> tuple[float, float]:
    """(peak RSS growth in MiB, seconds) of one `mcc serve` under `streams` streams."""
    with tempfile.TemporaryDirectory() as capture_dir:
        proc, url = start_proxy(upstream, capture_dir, "--capture-memory-budget", str(budget))
        try:
            httpx.get(f"{url}/v1/models", timeout=30)
            concurrent_streams(url, 1, "warm")
            before = status_kib(proc.pid, "VmRSS")
            started = time.perf_counter()
            concurrent_streams(url, streams, "bench")
            seconds = time.perf_counter() - started
            grown = (status_kib(proc.pid, "VmHWM") - before) / 1024
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    return grown, seconds


def main() -> None:
    """Measure and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--mib", type=float, default=80, help="MiB streamed per call")
    parser.add_argument("--budget-mib", type=int, nargs="+", default=[1024, 256, 64])
    args = parser.parse_args()
    upstream, server = start_upstream(stream_app(args.mib))
    try:
        print(f"{args.streams} concurrent streams of {args.mib:g} MiB, captured")
        print("| budget | peak RSS growth | x budget | over the budget, per stream | time |")
        print("|---|---|---|---|---|")
        for budget_mib in args.budget_mib:
            grown, seconds = measure(upstream, args.streams, budget_mib * MIB)
            times = f"{grown / budget_mib:.2f}" if budget_mib else "-"
            over = (grown - budget_mib) / args.streams
            print(
                f"| {budget_mib} MiB | {grown:.0f} MiB | {times} | {over:.2f} MiB | {seconds:.1f} s |"
            )
    finally:
        server.should_exit = True


if __name__ == "__main__":
    main()
