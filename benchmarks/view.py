"""Target 7 (issue 17): `mcc view` on a large directory.

7a: time to the first page: from the moment `mcc view` says `Serving ...` to a complete
first page (the HTML, then `/api/rollouts` with its 50 rows summarized), against a full
read of the same directory (`mcc stats --jobs 1`), which is what a viewer that summarized
everything before answering would wait for. 7b: the peak RSS of the `mcc view` process
once its background index has read every file and it has served a conversation page,
against the size of the directory.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from ._common import Row
from ._generate import generate

__all__ = ["run"]

FIRST_PAGE_TARGET_S = 1.0
RSS_TARGET_MIB = 256


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as reply:  # 127.0.0.1 only
        body: bytes = reply.read()
        return body


def _vm_hwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/<pid>/status")


def _measure(root: Path, rollouts: int) -> dict[str, Any]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "model_call_capture.cli", "view", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        match = re.fullmatch(r"Serving (\S+)\n", proc.stdout.readline())
        assert match, "mcc view did not start"
        url = match.group(1)
        serving = time.perf_counter()
        _get(url)
        page = json.loads(_get(url + "api/rollouts"))
        first = time.perf_counter()
        assert len(page["rollouts"]) == min(50, rollouts)
        assert all(r["indexed"] for r in page["rollouts"])
        while page["indexed"] < rollouts:  # the background index reads the rest
            time.sleep(0.2)
            page = json.loads(_get(url + "api/rollouts?sort=calls&order=desc"))
        indexed = time.perf_counter()
        biggest = page["rollouts"][0]["rollout_id"]
        _get(url + f"api/rollouts/{biggest}")
        return {
            "startup_s": serving - started,
            "first_page_s": first - serving,
            "all_indexed_s": indexed - serving,
            "rss_mib": _vm_hwm_mib(proc.pid),
        }
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def _full_read_s(root: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "model_call_capture.cli",
            "stats",
            str(root),
            "--jobs",
            "1",
            "--json",
        ],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def run(quick: bool) -> list[Row]:
    """Rows 7a (time to the first page) and 7b (peak RSS of `mcc view`)."""
    rollouts, calls = (300, 3) if quick else (10_000, 4)
    with tempfile.TemporaryDirectory(prefix="mcc-bench-view-") as tmp:
        made = generate(Path(tmp), rollouts, calls=calls)
        full = _full_read_s(made.root)
        got = _measure(made.root, rollouts)
    size = f"{rollouts:,} rollouts, {made.lines:,} lines ({made.bytes / 2**20:,.0f} MiB)"
    return [
        Row(
            "7a",
            f"mcc view: time to the first page, {size}",
            f"{got['first_page_s']:.2f} s",
            f"{full:.2f} s (mcc stats --jobs 1, the whole directory)",
            f"{full / got['first_page_s']:.0f}x sooner",
            f"< {FIRST_PAGE_TARGET_S:g} s",
            got["first_page_s"] < FIRST_PAGE_TARGET_S,
            f"from `Serving` (process start to `Serving`: {got['startup_s']:.2f} s); "
            f"the background index had read every file {got['all_indexed_s']:.1f} s after `Serving`",
        ),
        Row(
            "7b",
            f"mcc view: peak RSS, {size}, every file indexed, a conversation served",
            f"{got['rss_mib']:.0f} MiB",
            f"{made.bytes / 2**20:,.0f} MiB of captures",
            f"{got['rss_mib'] / (made.bytes / 2**20):.2f}x",
            f"<= {RSS_TARGET_MIB} MiB",
            got["rss_mib"] <= RSS_TARGET_MIB,
            "one summary per rollout; files read one line at a time",
        ),
    ]
