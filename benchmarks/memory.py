"""Target 5: capturing a 100 MB stream grows peak RSS by at most the reassembled object + 5 MB.

Each dialect's generated stream is captured in a fresh process, once with capture on and
once with capture off (same app, same middleware): the added peak RSS is on minus off,
against the size of the reassembled response object (measured with `sys.getsizeof` over
the decoded object) + 5 MB. The headline row uses the default configuration, which keeps
the raw stream until the call ends (`capture_stream_raw: on_failure`; in memory up to
1 MiB, the rest spilled to a temporary file, `middleware/_raw.py`) and cuts a payload at
the default byte cap, so its stream is one under that cap; the row beside it uses the
configuration the budget was first met with (`never`, cap lifted) on a 100 MB stream.
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


def _measure(
    dialect: str, n: int, mode: str, capture_dir: str, setting: str = "default"
) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks._memory", dialect, str(n), mode, capture_dir, setting],
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


def _row(
    target_id: str, what: str, on: dict[str, Any], off: dict[str, Any], n: int, note: str
) -> Row:
    added = on["growth"] - off["growth"]
    budget = on["object_bytes"] + 5 * MB
    kept = "; raw stream kept in the line" if on.get("raw_kept") else ""
    cut = "; capture cut at the byte cap" if on.get("cut") else ""
    return Row(
        target_id,
        what,
        f"+{added / MB:.1f} MB",
        f"{budget / MB:.1f} MB budget (object {on['object_bytes'] / MB:.1f} MB + 5)",
        f"{added / budget:.2f} of budget",
        "<= object + 5 MB" if target_id == "5" else "(info)",
        added <= budget if target_id == "5" else None,
        f"{note}; stream {on['stream_bytes'] / MB:.0f} MB, {n:,} deltas; peak growth on {on['growth'] / MB:.1f} / off {off['growth'] / MB:.1f} MB{kept}{cut}",
    )


def run(quick: bool) -> list[Row]:
    """Per dialect: row 5 with the default configuration, a stream under the default byte
    cap; row 5' with the configuration the budget was tuned on (raw retention `never`, the
    cap lifted), a 100 MB stream. Row 5'': the defaults on a 100 MB stream (`responses`)."""
    size = 2 * MB if quick else 40 * MB
    big = size if quick else 100 * MB  # quick: one size, one "off" process per dialect
    rows = []
    for dialect in ("responses", "chat", "messages"):
        what = (
            f"capture a {size // MB} MB `{dialect}` stream, default configuration: added peak RSS"
        )
        try:
            n, n_big = _deltas_for(dialect, size), _deltas_for(dialect, big)
            with tempfile.TemporaryDirectory(
                prefix="mcc-bench-mem-", dir=os.environ.get("MCC_BENCH_DIR")
            ) as tmp:
                off = _measure(dialect, n, "off", tmp)
                on = _measure(dialect, n, "on", tmp, "default")
                off_big = off if n_big == n else _measure(dialect, n_big, "off", tmp)
                on_never = _measure(dialect, n_big, "on", tmp, "never")
                on_big = (
                    _measure(dialect, n_big, "on", tmp, "default")
                    if dialect == "responses" and not quick
                    else None
                )
            if not on.get("line_ok") or not on_never.get("line_ok"):
                raise RuntimeError("the capture line has no complete response")
            rows.append(
                _row("5", what, on, off, n, "`CaptureConfig()` defaults (raw stream `on_failure`)")
            )
            rows.append(
                _row(
                    "5'",
                    f"same, {big // MB} MB stream, `capture_stream_raw: never`, cap lifted to 2^40",
                    on_never,
                    off_big,
                    n_big,
                    "the configuration the budget was tuned on (the former headline)",
                )
            )
            if on_big is not None:
                rows.append(
                    _row(
                        "5''",
                        f"same, {big // MB} MB stream, default configuration",
                        on_big,
                        off_big,
                        n_big,
                        "past the default cap the payload is cut",
                    )
                )
        except Exception as exc:  # a component not ready: report it, do not crash the run
            rows.append(not_ready("5", what, "<= object + 5 MB", f"{type(exc).__name__}: {exc}"))
    return rows
