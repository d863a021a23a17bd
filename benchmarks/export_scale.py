"""Peak memory and time of `mcc export` on a generated capture directory of many rollouts.

`python -m benchmarks.export_scale --rollouts 10000 --calls 10 --payload-bytes 80000`
generates the directory (chat calls with a tool call, usage and a padded request) and
prints the peak RSS and wall time of `mcc export` with and without `--payloads`, each
run in its own subprocess (`--jobs 1`: the RSS of one process). Set `MCC_BEFORE_SRC` to
another checkout's `src` to measure it side by side. The machine is shared: times are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["generate_captures", "peak_rss"]

_MODEL_REF = {"type": "responses_api_models", "name": "policy"}


def _line(rollout: int, call: int, payload_bytes: int) -> bytes:
    pad = "x" * max(0, payload_bytes - 600)
    line = {
        "format": "model-call-capture/1",
        "model_call_id": f"{rollout:06d}-{call:03d}",
        "dialect": "chat",
        "model_ref": _MODEL_REF,
        "started_at": 1_700_000_000.0 + rollout + call / 100,
        "completed_at": 1_700_000_000.5 + rollout + call / 100,
        "latency_ms": 500.0,
        "latency_ttft_ms": 20.0,
        "status_code": 200,
        "error_category": None,
        "request": {"model": "m", "messages": [{"role": "user", "content": pad}]},
        "response": {
            "id": f"chatcmpl-{rollout}-{call}",
            "object": "chat.completion",
            "model": f"model-{rollout % 3}",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "ok",
                        "tool_calls": [
                            {
                                "id": f"call_{call}",
                                "type": "function",
                                "function": {"name": "f", "arguments": '{"a": 1}'},
                            }
                        ],
                    },
                }
            ],
            "usage": {
                "prompt_tokens": 100 + call,
                "completion_tokens": 7,
                "total_tokens": 107 + call,
            },
        },
    }
    return json.dumps(line, separators=(",", ":")).encode() + b"\n"


def generate_captures(root: Path, rollouts: int, calls: int, payload_bytes: int) -> int:
    """Write `rollouts` capture files of `calls` lines each into `root`; the bytes written.

    Plain writes without fsync: a fixture for readers, not a capture.
    """
    root.mkdir(parents=True, exist_ok=True)
    total = 0
    for rollout in range(rollouts):
        data = b"".join(_line(rollout, call, payload_bytes) for call in range(calls))
        (root / f"r{rollout:06d}.capture.jsonl").write_bytes(data)
        total += len(data)
    return total


def peak_rss(args: list[str], src: str | None = None) -> tuple[int, float, int]:
    """Run `mcc ARGS` in a subprocess: (peak RSS in bytes, seconds, exit code)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "model_call_capture.cli", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss * 1024, time.perf_counter() - started, proc.returncode


def main() -> None:
    """Generate a directory and print export figures (see the module docstring)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--payload-bytes", type=int, default=8000)
    parser.add_argument("--dir", default=None)
    ns = parser.parse_args()
    base = Path(ns.dir or tempfile.mkdtemp(prefix="mcc-export-scale-"))
    captures = base / "captures"
    if not captures.is_dir():
        size = generate_captures(captures, ns.rollouts, ns.calls, ns.payload_bytes)
    else:
        size = sum(p.stat().st_size for p in captures.iterdir())
    print(f"{ns.rollouts} rollouts x {ns.calls} calls, {size / 2**20:.0f} MiB in {captures}")
    sources = {"after": None}
    if os.environ.get("MCC_BEFORE_SRC"):
        sources = {"before": os.environ["MCC_BEFORE_SRC"], "after": os.environ.get("PYTHONPATH")}
    for label, src in sources.items():
        for extra in ([], ["--payloads"]):
            out = base / f"out-{label}.parquet"
            jobs = ["--jobs", "1"] if label == "after" else []
            rss, seconds, code = peak_rss(
                ["export", str(captures), "--out", str(out), *extra, *jobs], src
            )
            print(
                f"{label:6} export {' '.join(extra) or '(no payloads)':14} "
                f"peak RSS {rss / 2**20:7.0f} MiB  {seconds:6.1f} s  exit {code}"
            )


if __name__ == "__main__":
    main()
