"""One capture of a big generated stream, in a fresh process, reporting peak RSS growth.

    python -m benchmarks._memory <dialect> <n_deltas> on|off <capture_dir> [default|never]

Drives `CaptureMiddleware` around an ASGI app that
generates the stream lazily, with a `send` that drops every byte, and prints one JSON
object: the growth of peak RSS over the RSS just before the call (the kernel's high-water
mark is reset first), the stream size, and the size of the reassembled response object.
The configuration is `default` (`CaptureConfig`'s defaults: raw stream kept in memory
until the call ends, in case it fails, and the per-call byte cap) or `never` (raw stream
retention `never`, the cap lifted to 2^40 bytes).
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from pathlib import Path
from typing import Any

from model_call_capture.contracts import CaptureConfig
from model_call_capture.middleware import CaptureMiddleware
from model_call_capture.store import CaptureStore

from .streams import GENERATORS

_PATHS = {"responses": "/v1/responses", "chat": "/v1/chat/completions", "messages": "/v1/messages"}


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def deep_size(value: Any) -> int:
    """Bytes held by a decoded JSON value (containers and their contents)."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(sys.getsizeof(k) + deep_size(v) for k, v in value.items())
    elif isinstance(value, list):
        size += sum(deep_size(v) for v in value)
    return size


def main() -> None:
    """Run one capture and print the measurement."""
    dialect, n, mode, capture_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    setting = sys.argv[5] if len(sys.argv) > 5 else "default"
    total = [0]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for chunk in GENERATORS[dialect](n):
            total[0] += len(chunk)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    if setting == "never":
        config = CaptureConfig(
            observability_enabled=mode == "on",
            model_call_capture_dir=capture_dir,
            capture_stream_raw="never",
            capture_max_bytes=1 << 40,
        )
    elif setting == "default":
        config = CaptureConfig(
            observability_enabled=mode == "on", model_call_capture_dir=capture_dir
        )
    else:
        raise SystemExit(f"unknown configuration {setting!r}")
    mw = CaptureMiddleware(app, config=config, model_server_name="bench_model")
    path = f"/ng-rollout/bench-memory/{_PATHS[dialect].lstrip('/')}"
    request = json.dumps({"model": "bench", "stream": True}).encode()

    async def call() -> None:
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": request, "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: Any) -> None:
            pass

        scope = {
            "type": "http",
            "method": "POST",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "headers": [(b"content-type", b"application/json")],
            "query_string": b"",
        }
        await mw(scope, receive, send)

    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak-RSS mark (VmHWM)
    base = _status_kib("VmRSS")
    asyncio.run(call())
    peak = _status_kib("VmHWM")
    result: dict[str, Any] = {"growth": (peak - base) * 1024, "stream_bytes": total[0]}
    if mode == "on":
        lines = CaptureStore(capture_dir).read("bench-memory")
        response = lines[-1].response
        result["object_bytes"] = deep_size(response)
        result["line_ok"] = response is not None and lines[-1].error_category is None
        result["cut"] = lines[-1].capture_cut is True
        result["raw_kept"] = isinstance(lines[-1].response_raw, str)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
