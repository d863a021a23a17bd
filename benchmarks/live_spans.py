"""Target 10: live OTLP spans (`otlp_endpoint`) against capture alone, side by side.

Two capture servers run in their own processes (`benchmarks._server`): capture on, and
capture on with `otlp_endpoint` set to a local OTLP/HTTP sink in a third process
(`benchmarks._otlp_sink`, which takes every request and answers 200). The same clients as
section 4 alternate between them, so both see the same machine:

- p50 latency of a JSON call, live spans against none: within the noise (+0.3 ms);
- requests/s with 32 concurrent streaming clients, live / none >= 0.9 (the spans are
  built and sent by a thread of the server process, which shares its CPU).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._common import Row, median, not_ready
from .middleware import _Conn, _cpu_seconds, _request, _server, _throughput

__all__ = ["run"]


@contextmanager
def _sink() -> Iterator[int]:
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks._otlp_sink"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=root,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the OTLP sink did not start")
        yield int(line)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _json_latencies(ports: dict[str, int], n: int) -> dict[str, list[float]]:
    conns = {mode: _Conn(port) for mode, port in ports.items()}
    out: dict[str, list[float]] = {mode: [] for mode in ports}
    try:
        request = _request("bench-live", False)
        for mode in ports:
            for _ in range(5):
                conns[mode].call(request)
        modes = list(ports)
        for i in range(n):
            for mode in modes if i % 2 == 0 else reversed(modes):
                out[mode].append(conns[mode].call(request)[1])
    finally:
        for conn in conns.values():
            conn.close()
    return out


def run(quick: bool) -> list[Row]:
    """Rows 10a (JSON latency) and 10b (streaming requests/s), live spans against none."""
    targets = (
        ("10a", "JSON call with live spans: added p50 latency", "<= 0.3 ms"),
        ("10b", "32 streaming clients with live spans: requests/s", ">= 0.9x"),
    )
    with tempfile.TemporaryDirectory(
        prefix="mcc-bench-live-", dir=os.environ.get("MCC_BENCH_DIR")
    ) as tmp:
        try:
            with (
                _sink() as sink,
                _server("on", tmp) as (on, on_pid),
                _server("on", tmp, "--otlp", f"http://127.0.0.1:{sink}") as (live, live_pid),
            ):
                ports = {"on": on, "live": live}
                pids = {"on": on_pid, "live": live_pid}
                js = _json_latencies(ports, 40 if quick else 400)
                seconds = 0.5 if quick else 3.0
                rps: dict[str, list[float]] = {"on": [], "live": []}
                cpu: dict[str, list[float]] = {"on": [], "live": []}
                for i in range(1 if quick else 3):
                    for mode in ("on", "live") if i % 2 == 0 else ("live", "on"):
                        c0, t0 = _cpu_seconds(pids[mode]), time.perf_counter()
                        rate = asyncio.run(_throughput(ports[mode], 32, seconds))
                        rps[mode].append(rate)
                        used = _cpu_seconds(pids[mode]) - c0
                        cpu[mode].append(used / (rate * (time.perf_counter() - t0)))
        except Exception as exc:  # a component not ready: report it, do not crash the run
            return [not_ready(t, w, g, f"{type(exc).__name__}: {exc}") for t, w, g in targets]
    on_ms, live_ms = median(js["on"]) * 1000, median(js["live"]) * 1000
    r_on, r_live = median(rps["on"]), median(rps["live"])
    c_on, c_live = median(cpu["on"]) * 1000, median(cpu["live"]) * 1000
    return [
        Row(
            "10a",
            targets[0][1],
            f"{live_ms - on_ms:+.2f} ms (p50 {live_ms:.2f} ms live)",
            f"p50 {on_ms:.2f} ms without",
            f"{live_ms / on_ms:.2f}x",
            targets[0][2],
            live_ms - on_ms <= 0.3,
            f"{len(js['on'])} calls each, alternating; both servers capture to disk",
        ),
        Row(
            "10b",
            targets[1][1],
            f"{r_live:,.0f} req/s live",
            f"{r_on:,.0f} req/s without",
            f"{r_live / r_on:.2f}x",
            targets[1][2],
            r_live / r_on >= 0.9,
            f"{len(rps['on'])} x {seconds:g} s per side, alternating; server CPU per request {c_live:.3f} ms live, {c_on:.3f} ms without (spans are built and sent by a thread of the server)",
        ),
    ]
