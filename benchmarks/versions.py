"""Two versions of the library side by side in one process: capture and reassembly CPU.

    python -m benchmarks.versions OLD_SRC [NEW_SRC] [--rounds N]

`OLD_SRC` and `NEW_SRC` are `src` directories (an earlier commit's checkout, e.g. from
`git worktree add --detach /tmp/old <commit>`; `NEW_SRC` defaults to this checkout's).
Each package is copied under a name of its own (`mcc_old`, `mcc_new`: the package imports
itself only relatively), so both run in the same process, in the same rotation, on the
same caches and the same load: per round, one captured call of the 200-chunk chat stream
(`benchmarks._stream_app`, in process, capture on, then off) and one reassembly of each
dialect's generated 4,000-delta stream (`benchmarks.streams`; Completions: vLLM's stream of
4,000 chunks, when both versions have the dialect), GC paused, for each version,
the order alternating. Prints the medians of process CPU per call and new / old. Used to
show that a refactor of the middleware or a dialect stays within the noise.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._common import post_scope
from ._stream_app import stream_app
from .streams import completions, stream_bytes

DIALECTS = ("chat", "responses", "messages")
_BODY = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}'
_PATH = "/ng-rollout/versions/v1/chat/completions"


async def _call(app: Any) -> None:
    """One streamed call of `app` in process; the client stays connected."""
    received = False

    async def receive() -> dict[str, object]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": _BODY, "more_body": False}
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def send(message: dict[str, object]) -> None:
        pass

    await app(post_scope(_PATH, _BODY), receive, send)


def _load(name: str, src: Path, packages: Path, capture_dir: str) -> dict[str, Any]:
    """The version in `src` imported as `name`: its middlewares (on, off) and reassembler."""
    shutil.copytree(src / "model_call_capture", packages / name)
    contracts = importlib.import_module(f"{name}.contracts")
    middleware = importlib.import_module(f"{name}.middleware")
    reassembly = importlib.import_module(f"{name}.reassembly")
    apps = {
        mode: middleware.CaptureMiddleware(
            stream_app,
            config=contracts.CaptureConfig(
                observability_enabled=mode == "on", model_call_capture_dir=capture_dir
            ),
            model_server_name="versions",
        )
        for mode in ("on", "off")
    }
    return {"apps": apps, "reassembler": reassembly.StreamReassembler}


def _reassemble(reassembler: Any, dialect: str, chunks: list[bytes]) -> None:
    state = reassembler(dialect)
    for chunk in chunks:
        state.feed(chunk)
    state.finish()


def _streams(versions: dict[str, dict[str, Any]]) -> dict[str, list[bytes]]:
    streams = {dialect: stream_bytes(dialect, 4000) for dialect in DIALECTS}
    try:
        for version in versions.values():
            version["reassembler"]("completions")
    except Exception:  # a version from before the Completions dialect
        return streams
    return {**streams, "completions": list(completions(4000))}


async def _rounds(versions: dict[str, dict[str, Any]], rounds: int) -> dict[str, Any]:
    streams = _streams(versions)
    times: dict[str, dict[str, list[float]]] = {name: {} for name in versions}
    for version in versions.values():
        for _ in range(20):  # warm-up: the write threads, the caches
            await _call(version["apps"]["on"])
    names = list(versions)
    for i in range(rounds):
        for name in names if i % 2 else names[::-1]:
            version, out = versions[name], times[name]
            for mode in ("on", "off"):
                started = time.process_time()
                await _call(version["apps"][mode])
                out.setdefault(mode, []).append(time.process_time() - started)
            gc.disable()
            for dialect, chunks in streams.items():
                started = time.process_time()
                _reassemble(version["reassembler"], dialect, chunks)
                out.setdefault(dialect, []).append(time.process_time() - started)
            gc.enable()
    return times


def main(argv: list[str] | None = None) -> int:
    """Measure both versions and print a table of medians and their ratio."""
    root = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.versions", description=__doc__)
    parser.add_argument("old", type=Path, help="the src directory of the earlier version")
    parser.add_argument("new", type=Path, nargs="?", default=root / "src")
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as packages, tempfile.TemporaryDirectory() as captures:
        sys.path.insert(0, packages)
        versions = {
            "old": _load("mcc_old", args.old, Path(packages), f"{captures}/old"),
            "new": _load("mcc_new", args.new, Path(packages), f"{captures}/new"),
        }
        times = asyncio.run(_rounds(versions, args.rounds))
    old, new = times["old"], times["new"]
    print(f"{args.rounds} alternating rounds; medians of process CPU per call, ms")
    print("| measure | old | new | new / old |\n|---|---|---|---|")
    rows = [("captured call, 200-chunk chat stream", "on")]
    rows += [(f"reassembly, {d} generated 4,000 deltas", d) for d in DIALECTS]
    if "completions" in new:
        rows.append(("reassembly, completions vLLM stream, 4,000 chunks", "completions"))
    for label, key in rows:
        a, b = statistics.median(old[key]), statistics.median(new[key])
        print(f"| {label} | {a * 1e3:.3f} | {b * 1e3:.3f} | {b / a:.3f} |")
    added = [statistics.median(t["on"]) - statistics.median(t["off"]) for t in (old, new)]
    print(
        f"| CPU capture adds (on - off) | {added[0] * 1e3:.3f} | {added[1] * 1e3:.3f} | "
        f"{added[1] / added[0]:.3f} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
