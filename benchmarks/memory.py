"""Target 5: capturing a 100 MB stream grows peak RSS by at most the reassembled object + 5 MB.

Each dialect's generated stream is captured in a fresh process with raw stream retention
`never`, once with capture on and once with capture off (same app, same middleware): the
added peak RSS is on minus off, against the size of the reassembled response object
(measured with `sys.getsizeof` over the decoded object) + 5 MB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ._common import Row, not_ready
from .streams import stream_bytes

__all__ = ["run"]

MB = 1024 * 1024


def _deltas_for(dialect: str, size: int) -> int:
    """The number of text deltas that makes the generated stream about `size` bytes."""
    small, big = (
        sum(map(len, stream_bytes(dialect, 1000))),
        sum(map(len, stream_bytes(dialect, 3000))),
    )
    per_delta = (big - small) / 2000
    return max(100, int((size - small) / per_delta) + 1000)


def _measure(dialect: str, n: int, mode: str, capture_dir: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks._memory", dialect, str(n), mode, capture_dir],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=600,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(
            out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"
        )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def run(quick: bool) -> list[Row]:
    """One row per dialect."""
    size = 2 * MB if quick else 100 * MB
    rows = []
    for dialect in ("responses", "chat", "messages"):
        what = f"capture a {size // MB} MB `{dialect}` stream: added peak RSS"
        try:
            n = _deltas_for(dialect, size)
            with tempfile.TemporaryDirectory(
                prefix="mcc-bench-mem-", dir=os.environ.get("MCC_BENCH_DIR")
            ) as tmp:
                off = _measure(dialect, n, "off", tmp)
                on = _measure(dialect, n, "on", tmp)
            if not on.get("line_ok"):
                raise RuntimeError("the capture line has no complete response")
            added = on["growth"] - off["growth"]
            budget = on["object_bytes"] + 5 * MB
            rows.append(
                Row(
                    "5",
                    what,
                    f"+{added / MB:.1f} MB",
                    f"{budget / MB:.1f} MB budget (object {on['object_bytes'] / MB:.1f} MB + 5)",
                    f"{added / budget:.2f} of budget",
                    "<= object + 5 MB",
                    added <= budget,
                    f"stream {on['stream_bytes'] / MB:.0f} MB, {n:,} deltas; peak growth on {on['growth'] / MB:.1f} / off {off['growth'] / MB:.1f} MB",
                )
            )
        except Exception as exc:  # a component not ready: report it, do not crash the run
            rows.append(not_ready("5", what, "<= object + 5 MB", f"{type(exc).__name__}: {exc}"))
    return rows
