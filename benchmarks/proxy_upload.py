"""A large upload through `mcc serve`: the proxy's peak RSS growth and the time, side by side.

    python -m benchmarks.proxy_upload [--mib 256] [--compare OTHER_SRC]

Runs `mcc serve` (this checkout's `src/`, and with `--compare` also another checkout's,
in the same run) as its own process in front of a sink upstream on 127.0.0.1 (a raw ASGI
app on uvicorn in this process that counts the bytes and drops them), and uploads a body
of `--mib` MiB with a `Content-Length`, once unprefixed (forwarded, not captured) and once
to `/ng-rollout/<id>/v1/chat/completions` (captured: the capture keeps at most
`capture_max_bytes` of it). For each it prints the growth of the proxy process's peak RSS
(`VmHWM`, reset through `/proc/<pid>/clear_refs` before the upload, over `VmRSS` just
before) and the upload's wall time, next to a direct upload to the sink. Linux only. The
machine may be shared: times are noisy, compare them within one run.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn

MIB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[1]


async def _sink(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Counts the request body and drops it; answers with the count."""
    if scope["type"] != "http":
        return
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body", False) or message["type"] == "http.disconnect":
            break
    body = b'{"bytes":%d}' % size
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _start_sink() -> tuple[str, uvicorn.Server]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(_sink, lifespan="off", log_level="warning", access_log=False)
    )
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def _body(size: int) -> Iterator[bytes]:
    block = b"x" * MIB
    for offset in range(0, size, MIB):
        yield block[: min(MIB, size - offset)]


def _upload(url: str, size: int) -> float:
    started = time.perf_counter()
    reply = httpx.post(url, content=_body(size), headers={"content-length": str(size)}, timeout=600)
    elapsed = time.perf_counter() - started
    if reply.status_code != 200:
        raise RuntimeError(f"{url}: {reply.status_code} {reply.text[:200]}")
    return elapsed


def _serve(
    src: Path, upstream: str, size: int, capture_dir: str
) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, "-m", "model_call_capture.cli", "serve", "--upstream", upstream]
    command += ["--capture-dir", capture_dir, "--port", "0"]
    helped = subprocess.run(
        [*command[:4], "--help"], env=env, capture_output=True, text=True, check=True
    )
    if "--max-request-bytes" in helped.stdout:
        command += ["--max-request-bytes", str(size)]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    match = re.match(r"mcc serve: (http://[^ ]+) -> ", proc.stdout.readline())
    if match is None:
        proc.kill()
        raise RuntimeError("mcc serve did not start")
    return proc, match.group(1)


def _measure(src: Path, upstream: str, size: int) -> dict[str, tuple[float, float]]:
    """{path kind: (peak RSS growth in MiB, seconds)} for one proxy checkout."""
    results = {}
    with tempfile.TemporaryDirectory() as capture_dir:
        proc, url = _serve(src, upstream, size, capture_dir)
        try:
            _upload(f"{url}/v1/warm-up", 1024)
            for kind, path in (
                ("forwarded", "/v1/upload"),
                ("captured", "/ng-rollout/bench-1/v1/chat/completions"),
            ):
                Path(f"/proc/{proc.pid}/clear_refs").write_text("5")
                before = _status_kib(proc.pid, "VmRSS")
                seconds = _upload(url + path, size)
                grown = (_status_kib(proc.pid, "VmHWM") - before) / 1024
                results[kind] = (grown, seconds)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    return results


def main() -> None:
    """Measure and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=256, help="body size in MiB")
    parser.add_argument("--compare", type=Path, help="another checkout's src/ to measure too")
    args = parser.parse_args()
    size = args.mib * MIB
    upstream, sink = _start_sink()
    try:
        _upload(upstream, 1024)
        direct = min(_upload(upstream, size) for _ in range(2))
        sources = [("this checkout", ROOT / "src")]
        if args.compare:
            sources.append((str(args.compare), args.compare))
        print(f"upload of {args.mib} MiB with Content-Length; direct to the sink: {direct:.2f} s")
        print("| proxy | path | peak RSS growth | x body | time | x direct |")
        print("|---|---|---|---|---|---|")
        for name, src in sources:
            for kind, (grown, seconds) in _measure(src, upstream, size).items():
                print(
                    f"| {name} | {kind} | {grown:.1f} MiB | {grown / args.mib:.2f} | {seconds:.2f} s | {seconds / direct:.2f} |"
                )
    finally:
        sink.should_exit = True


if __name__ == "__main__":
    main()
