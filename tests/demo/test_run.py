"""The demo driver (`demo/run.py`): model server, middleware, agent and collector, in-process."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from model_call_capture.demo.model_server import create_app
from model_call_capture.demo.run import run_demo_async, serving


def test_run_demo_writes_captures_and_rollouts_and_returns_the_attachments(tmp_path: Path) -> None:
    result = asyncio.run(run_demo_async(tmp_path / "demo", rollouts=2))
    assert result.directory == (tmp_path / "demo").resolve()
    assert result.capture_dir == result.directory / "model-calls"
    assert result.rollouts_path == result.directory / "rollouts.jsonl"
    assert [(c.rollout_id, c.metrics.num_calls) for c in result.captures] == [
        ("0-0", 6),
        ("1-0", 6),
    ]
    assert sorted(p.name for p in result.capture_dir.glob("*.capture.jsonl")) == [
        "0-0.capture.jsonl",
        "1-0.capture.jsonl",
    ]
    rows = [json.loads(line) for line in result.rollouts_path.read_text().splitlines()]
    assert sorted(row["ng_model_call_capture"]["rollout_id"] for row in rows) == ["0-0", "1-0"]
    assert result.seconds > 0


def test_a_rerun_removes_only_the_earlier_demo_files(tmp_path: Path) -> None:
    captures = tmp_path / "model-calls"
    captures.mkdir()
    (captures / "8-0.capture.jsonl").write_text("{}\n")
    (captures / "8-0.capture.incomplete").write_text("")
    (captures / "notes.txt").write_text("mine")
    (tmp_path / "rollouts.jsonl").write_text("{}\n")
    result = asyncio.run(run_demo_async(tmp_path, rollouts=1))
    assert sorted(p.name for p in captures.iterdir() if not p.name.startswith(".")) == [
        "0-0.capture.jsonl",
        "notes.txt",
    ]
    assert (captures / "notes.txt").read_text() == "mine"
    assert [c.rollout_id for c in result.captures] == ["0-0"]


def test_serving_runs_uvicorn_on_a_free_local_port_until_the_block_ends() -> None:
    async def scenario() -> str:
        async with serving(create_app()) as url:
            assert url.startswith("http://127.0.0.1:")
            async with httpx.AsyncClient() as client:
                response = await client.get(url + "/v1/models")
            assert response.json()["data"][0]["id"] == "demo-gpt"
        return url

    url = asyncio.run(scenario())
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/v1/models")
