"""The write handoff: lines written off the event loop, failures logged once, concurrency."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from model_call_capture.middleware import _writer

from .conftest import (
    ANSWER,
    DIALECTS,
    PATHS,
    TERMINALS,
    FullDiskStore,
    body_for,
    capturing,
    chat_body,
    drive,
    new_rollout,
    post,
    read_lines,
)


def test_unwritable_capture_dir_never_fails_the_call_and_logs_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the capture directory should be")
    directory = blocker / "captures"  # ENOTDIR for every write, also for root
    rollout = new_rollout()
    app = capturing(directory)
    with caplog.at_level(logging.ERROR, "model_call_capture"):
        for _ in range(3):
            reply = post(app, rollout, chat_body())
            assert reply.status == 200
            assert reply.json()["choices"][0]["message"]["content"] == ANSWER
    failures = [r for r in caplog.records if "capture failed" in r.getMessage()]
    assert len(failures) == 1
    assert rollout in failures[0].getMessage()
    assert blocker.read_text() == "a file where the capture directory should be"


def test_enospc_marks_the_rollout_incomplete_and_logs_once_per_rollout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FullDiskStore(tmp_path)
    first, second = new_rollout(), new_rollout()
    app = capturing(tmp_path, store=store)
    with caplog.at_level(logging.ERROR, "model_call_capture"):
        for rollout in (first, first, second, first):
            assert post(app, rollout, chat_body(stream=True)).status == 200
    failures = [r.getMessage() for r in caplog.records if "capture failed" in r.getMessage()]
    assert len(failures) == 2
    assert "No space left on device" in failures[0]
    assert store.is_incomplete(first) and store.is_incomplete(second)
    assert not store.path(first).exists()


def test_a_capture_directory_removed_while_serving_is_recreated(tmp_path: Path) -> None:
    directory = tmp_path / "captures"
    rollout = new_rollout()
    app = capturing(directory)
    post(app, rollout, chat_body())
    assert len(read_lines(directory, rollout)) == 1
    for path in directory.iterdir():
        path.unlink()
    directory.rmdir()
    assert post(app, rollout, chat_body()).status == 200
    assert len(read_lines(directory, rollout)) == 1


def test_64_concurrent_streams_across_8_rollouts_are_each_recorded_once(tmp_path: Path) -> None:
    rollouts = [new_rollout() for _ in range(8)]
    app = capturing(tmp_path)

    async def one(i: int) -> bytes:
        dialect = DIALECTS[i % 3]
        body = body_for(dialect, "keepalive", stream=True) | {"metadata": {"call": str(i)}}
        path = f"/ng-rollout/{rollouts[i % 8]}{PATHS[dialect]}"
        return (await drive(app, path, json.dumps(body).encode())).body

    async def run() -> list[bytes]:
        return await asyncio.gather(*(one(i) for i in range(64)))

    bodies = asyncio.run(run())
    assert all(TERMINALS[DIALECTS[i % 3]] in body for i, body in enumerate(bodies))
    ids = set()
    for r, rollout in enumerate(rollouts):
        lines = read_lines(tmp_path, rollout)
        calls = sorted(int(line["request"]["metadata"]["call"]) for line in lines)
        assert calls == list(range(r, 64, 8))
        assert all(line["error_category"] is None and line["stream"] is True for line in lines)
        ids |= {line["model_call_id"] for line in lines}
    assert len(ids) == 64
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{r}.capture.jsonl" for r in rollouts
    )


def test_free_memory_is_handed_back_before_the_line_of_a_big_body_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spy around the real function: it still trims (glibc), and counts the calls.
    calls: list[int] = []
    real = _writer._release_free_memory

    def spy() -> None:
        calls.append(1)
        real()

    monkeypatch.setattr(_writer, "_release_free_memory", spy)
    api = FastAPI()
    text = "z" * (9 << 20)

    @api.post("/v1/chat/completions")
    async def complete(request: Request) -> JSONResponse:
        size = (await request.json())["size"]
        return JSONResponse(
            {
                "id": "chatcmpl-big",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text[:size]},
                        "finish_reason": "stop",
                    }
                ],
            }
        )

    rollout = new_rollout()
    app: Any = capturing(tmp_path, app=api)
    assert post(app, rollout, chat_body(size=10)).status == 200
    assert calls == []
    reply = post(app, rollout, chat_body(size=len(text)))
    assert reply.status == 200
    assert calls == [1]
    lines = read_lines(tmp_path, rollout)
    assert [len(line["response"]["choices"][0]["message"]["content"]) for line in lines] == [
        10,
        9 << 20,
    ]
