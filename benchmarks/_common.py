"""Shared pieces: result rows, interleaved timing, the markdown table."""

from __future__ import annotations

import gc
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Row", "format_table", "interleaved", "not_ready", "post_scope"]


@dataclass
class Row:
    """One line of the results table."""

    target_id: str
    """Which target of issue 8 the row belongs to (`1`, `2`, `3a`, ...)."""
    what: str
    ours: str
    baseline: str
    ratio: str
    target: str
    met: bool | None
    """None when the row is informational or could not be measured."""
    note: str = ""


def not_ready(target_id: str, what: str, target: str, reason: str) -> Row:
    """The row of a benchmark whose component is missing or broken."""
    return Row(target_id, what, "n/a", "n/a", "n/a (not ready)", target, None, reason)


def interleaved(
    ours: Callable[[], object],
    baseline: Callable[[], object],
    *,
    rounds: int,
    stat: Callable[[list[float]], float] = min,
    pause_gc: bool = True,
) -> tuple[float, float]:
    """Seconds per call of `ours` and `baseline`, timed alternately (ABAB...).

    Alternating spreads the machine's noise over both sides; `min` (the default) is the
    right statistic for CPU-bound work, where noise only ever adds time. Unless
    `pause_gc` is false, the cyclic GC is paused while a call is timed, as `timeit` does,
    so one side does not pay for garbage the other left behind.
    """
    a: list[float] = []
    b: list[float] = []
    ours()
    baseline()  # warm caches and lazy imports on both sides
    gc.collect()
    for i in range(rounds):
        for fn, out in ((ours, a), (baseline, b)) if i % 2 == 0 else ((baseline, b), (ours, a)):
            if pause_gc:
                gc.disable()
            try:
                t = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t)
            finally:
                gc.enable()
    return stat(a), stat(b)


def median(values: list[float]) -> float:
    """The median (re-exported for the benchmarks that time I/O)."""
    return statistics.median(values)


def verdict(met: bool | None) -> str:
    """`met`, `NOT met`, or `n/a`."""
    return "n/a" if met is None else ("met" if met else "**NOT met**")


def format_table(rows: list[Row]) -> str:
    """The rows as a GitHub markdown table."""
    head = "| # | measure | ours | baseline | ratio | target | verdict | note |\n|---|---|---|---|---|---|---|---|"
    lines = [head]
    for r in rows:
        cells = [r.target_id, r.what, r.ours, r.baseline, r.ratio, r.target, verdict(r.met), r.note]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def post_scope(path: str, body: bytes) -> dict[str, Any]:
    """The ASGI scope of a JSON `POST path` with `body`, for calling an app in process."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
        "extensions": {},
    }


def machine() -> str:
    """One line describing where the run happened."""
    capture_dir = os.environ.get("MCC_BENCH_DIR") or tempfile.gettempdir()
    try:
        fs = (
            subprocess.run(["df", "-T", capture_dir], capture_output=True, text=True, check=False)
            .stdout.splitlines()[-1]
            .split()
        )
        disk = f"{fs[0]} ({fs[1]})"
    except Exception:  # df missing: not worth failing the run
        disk = "unknown"
    return (
        f"nproc {os.cpu_count()}, {platform.machine()}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}; capture dir {capture_dir} on {disk}"
    )
