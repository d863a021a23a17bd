"""The demo driver behind `mcc demo`: model server, capture middleware, agent and collector.

Everything is real and local: the scripted model server runs on uvicorn on a free port of
127.0.0.1 behind `CaptureMiddleware`, the agent calls it with the official SDK clients,
and the rollout collector clears stale captures, dispatches the rollouts and attaches
`ng_model_call_capture` to each output row.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ..contracts import CaptureConfig, ModelCallCapture
from ..store import CaptureStore

__all__ = [
    "MODEL_SERVER_NAME",
    "QUESTIONS",
    "DemoError",
    "DemoResult",
    "run_demo",
    "run_demo_async",
    "serving",
]

QUESTIONS = (
    "What should I wear in Paris today?",
    "Is it a good day for a picnic in Lyon?",
    "Do I need an umbrella in Berlin?",
    "Should I cycle to work in Amsterdam today?",
)
"""The demo's tasks; rollout i asks question i modulo their number."""

MODEL_SERVER_NAME = "demo-model"
"""The `model_ref.name` recorded on the demo's calls."""


class DemoError(RuntimeError):
    """The demo did not complete (a rollout failed)."""


@dataclass(frozen=True, slots=True)
class DemoResult:
    """What a demo run left behind."""

    directory: Path
    """The demo directory (absolute)."""
    capture_dir: Path
    """`<directory>/model-calls`, one `<rollout_id>.capture.jsonl` per rollout."""
    rollouts_path: Path
    """`<directory>/rollouts.jsonl`, one row per rollout with its attachment."""
    captures: list[ModelCallCapture]
    """The `ng_model_call_capture` attachment of each output row, in row order."""
    seconds: float
    """Wall-clock duration of the run."""


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve `app` with uvicorn on a free port of 127.0.0.1 in this event loop; yields its URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", ws="none", log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("the demo model server stopped during startup")
            await asyncio.sleep(0.005)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


def _clear_previous(capture_dir: Path, rollouts_path: Path) -> None:
    """Remove what an earlier demo left (only demo files), so a rerun starts clean."""
    rollouts_path.unlink(missing_ok=True)
    store = CaptureStore(capture_dir)
    for rollout_id in store.rollout_ids():
        store.clear(rollout_id)


async def run_demo_async(
    directory: Path, *, rollouts: int = 4, concurrency: int = 4, tokens: bool = False
) -> DemoResult:
    """Run `rollouts` demo rollouts, writing into `directory`; see `DemoResult`.

    With `tokens`, each rollout is the `TokenAgent`'s multi-turn chat against the scripted
    server's vLLM mode (token ids and log-probs on every call) instead of the tour of the
    three dialects.
    """
    from ..collection import ATTACHMENT_KEY, collect, read_rows
    from ..correlation import RolloutCorrelation
    from ..middleware import install_model_call_capture
    from .agent import DemoAgent, TokenAgent
    from .model_server import create_app

    started = time.monotonic()
    directory = directory.expanduser().resolve()
    capture_dir = directory / "model-calls"
    rollouts_path = directory / "rollouts.jsonl"
    capture_dir.mkdir(parents=True, exist_ok=True)
    _clear_previous(capture_dir, rollouts_path)

    config = CaptureConfig(observability_enabled=True, model_call_capture_dir=str(capture_dir))
    app = install_model_call_capture(create_app(), config, model_server_name=MODEL_SERVER_NAME)
    # Every fourth rollout starts with a call the server rate-limits, to show a recorded failure.
    rows = [
        {
            "question": QUESTIONS[i % len(QUESTIONS)],
            "simulate_rate_limit": i % 4 == 3 and not tokens,
        }
        for i in range(rollouts)
    ]
    agent_class = TokenAgent if tokens else DemoAgent
    async with serving(app) as url:
        summary = await collect(
            rows,
            agent_class(url, RolloutCorrelation(config)),
            capture_dir=capture_dir,
            output_path=rollouts_path,
            concurrency=concurrency,
        )
    if summary.failed:
        rollout_id, error = next(iter(summary.failed.items()))
        raise DemoError(
            f"{len(summary.failed)} of {rollouts} demo rollouts failed; rollout {rollout_id}: {error}"
        )
    output = sorted(
        read_rows(rollouts_path),
        key=lambda row: (row.get("_ng_task_index", 0), row.get("_ng_rollout_index", 0)),
    )
    captures = [
        msgspec.convert(row[ATTACHMENT_KEY], ModelCallCapture)
        for row in output
        if ATTACHMENT_KEY in row
    ]
    return DemoResult(directory, capture_dir, rollouts_path, captures, time.monotonic() - started)


def run_demo(directory: Path, *, rollouts: int = 4, tokens: bool = False) -> DemoResult:
    """Blocking form of `run_demo_async`, for the command line."""
    return asyncio.run(run_demo_async(directory, rollouts=rollouts, tokens=tokens))
