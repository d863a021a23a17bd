"""The rollout collector."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from model_call_capture.collection import CollectorBusyError, collect
from model_call_capture.store import CaptureStore

from .conftest import capture_line


class ScriptedAgent:
    """An agent that 'calls the model' by appending a capture line under its rollout id."""

    def __init__(self, capture_dir: Path, fail: set[str] | None = None) -> None:
        self.store = CaptureStore(capture_dir)
        self.fail = fail or set()
        self.bodies: list[dict[str, Any]] = []
        self.running = 0
        self.max_running = 0

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        from model_call_capture.rollout_ids import rollout_id_for_body

        self.bodies.append(body)
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            await asyncio.sleep(0.01)
            rollout_id = rollout_id_for_body(body)
            assert rollout_id is not None
            await asyncio.to_thread(
                self.store.append, rollout_id, capture_line(f"call-{rollout_id}")
            )
            if rollout_id in self.fail:
                raise RuntimeError("agent crashed")
            return {"response": {"text": body["question"].upper()}, "reward": 1.0}
        finally:
            self.running -= 1


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_collect_stamps_clears_dispatches_and_attaches(tmp_path: Path) -> None:
    capture = tmp_path / "captures"
    stale = CaptureStore(capture)
    stale.append("0-1", capture_line("stale-from-a-killed-run"))
    stale.mark_incomplete("0-1")
    stale.append("7-0", capture_line("not-ours"))  # not dispatched by this run: left alone
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"question": "a"}\n\n{"question": "b"}\n')
    agent = ScriptedAgent(capture)

    summary = asyncio.run(
        collect(
            inputs,
            agent,
            capture_dir=capture,
            output_path=tmp_path / "out.jsonl",
            num_repeats=2,
            concurrency=3,
        )
    )
    assert (summary.total, summary.dispatched, summary.succeeded, summary.failed) == (4, 4, 4, {})
    assert agent.max_running == 3  # bounded, and really concurrent
    out = sorted(
        _rows(tmp_path / "out.jsonl"), key=lambda r: (r["_ng_task_index"], r["_ng_rollout_index"])
    )
    assert [(r["_ng_task_index"], r["_ng_rollout_index"], r["response"]["text"]) for r in out] == [
        (0, 0, "A"),
        (0, 1, "A"),
        (1, 0, "B"),
        (1, 1, "B"),
    ]
    for row in out:
        capture_of_row = row["ng_model_call_capture"]
        rollout_id = f"{row['_ng_task_index']}-{row['_ng_rollout_index']}"
        assert capture_of_row["rollout_id"] == rollout_id
        assert [c["model_call_id"] for c in capture_of_row["calls"]] == [f"call-{rollout_id}"]
        assert "gaps" not in capture_of_row  # the stale line and marker of 0-1 were cleared
        assert row["reward"] == 1.0
    assert stale.rollout_ids() == ["0-0", "0-1", "1-0", "1-1", "7-0"]


def test_resume_redispatches_only_unfinished_rows_as_a_new_attempt(tmp_path: Path) -> None:
    capture = tmp_path / "captures"
    rows = [{"question": q} for q in "abc"]
    out = tmp_path / "out.jsonl"
    first = ScriptedAgent(capture, fail={"1-0"})
    summary = asyncio.run(collect(rows, first, capture_dir=capture, output_path=out))
    assert (summary.succeeded, list(summary.failed)) == (2, ["1-0"])
    assert "agent crashed" in summary.failed["1-0"]
    with open(out, "ab") as f:
        f.write(b'{"torn')  # the previous run was killed while writing a row

    second = ScriptedAgent(capture)
    summary = asyncio.run(collect(rows, second, capture_dir=capture, output_path=out, resume=True))
    assert (summary.already_done, summary.dispatched, summary.attempt_index) == (2, 1, 1)
    assert [(b["_ng_task_index"], b["_ng_attempt_index"]) for b in second.bodies] == [(1, 1)]
    resumed = [r for r in _rows_tolerant(out) if r["_ng_task_index"] == 1]
    assert len(resumed) == 1
    attachment = resumed[0]["ng_model_call_capture"]
    assert attachment["rollout_id"] == "1-0-a1"
    assert [c["model_call_id"] for c in attachment["calls"]] == [
        "call-1-0-a1"
    ]  # not the failed attempt's
    assert CaptureStore(capture).rollout_ids() == ["0-0", "1-0", "1-0-a1", "2-0"]

    third = ScriptedAgent(capture)
    summary = asyncio.run(collect(rows, third, capture_dir=capture, output_path=out, resume=True))
    assert (summary.dispatched, third.bodies) == (0, [])


def _rows_tolerant(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def test_without_capture_rows_are_written_untouched(tmp_path: Path) -> None:
    async def agent(body: dict[str, Any]) -> dict[str, Any]:
        return {"response": {"n": 2**70}, "reward": 0.25}

    asyncio.run(collect([{"q": 1}], agent, capture_dir=None, output_path=tmp_path / "out.jsonl"))
    assert (tmp_path / "out.jsonl").read_bytes() == (
        b'{"response":{"n":1180591620717411303424},"reward":0.25,"_ng_task_index":0,"_ng_rollout_index":0}\n'
    )


def test_explicit_rollout_ids_cannot_be_repeated(tmp_path: Path) -> None:
    async def agent(body: dict[str, Any]) -> dict[str, Any]:
        return {}

    with pytest.raises(ValueError, match="explicit _ng_rollout_id"):
        asyncio.run(
            collect(
                [{"_ng_rollout_id": "x"}],
                agent,
                capture_dir=None,
                output_path=tmp_path / "o",
                num_repeats=2,
            )
        )


def test_a_second_collector_on_the_same_capture_dir_is_refused(tmp_path: Path) -> None:
    capture = tmp_path / "captures"

    async def slow(body: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.3)
        return {}

    async def both() -> None:
        first = asyncio.create_task(
            collect([{}], slow, capture_dir=capture, output_path=tmp_path / "1.jsonl")
        )
        await asyncio.sleep(0.05)
        with pytest.raises(CollectorBusyError, match="give each job its own capture directory"):
            await collect([{}], slow, capture_dir=capture, output_path=tmp_path / "2.jsonl")
        await first

    asyncio.run(both())
    assert not (tmp_path / "2.jsonl").exists()
    # Once the first finished, the directory is free again.
    asyncio.run(collect([{}], slow, capture_dir=capture, output_path=tmp_path / "3.jsonl"))


_HOLDER = """
import asyncio, sys
from model_call_capture.collection import collect
async def agent(body):
    print("running", flush=True)
    await asyncio.sleep(30)
    return {}
asyncio.run(collect([{}], agent, capture_dir=sys.argv[1], output_path=sys.argv[2]))
"""


def test_a_collector_in_another_process_is_detected(tmp_path: Path) -> None:
    capture = tmp_path / "captures"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(capture), str(tmp_path / "1.jsonl")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "running"

        async def agent(body: dict[str, Any]) -> dict[str, Any]:
            return {}

        with pytest.raises(CollectorBusyError, match=rf"pid {holder.pid}"):
            asyncio.run(collect([{}], agent, capture_dir=capture, output_path=tmp_path / "2.jsonl"))
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    deadline = time.monotonic() + 5
    while True:  # the kernel drops a dead process's lock
        try:
            asyncio.run(collect([{}], agent, capture_dir=capture, output_path=tmp_path / "3.jsonl"))
            break
        except CollectorBusyError:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_collect_calls_an_http_agent_run_endpoint(tmp_path: Path) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from servers import serve

    seen: list[dict[str, Any]] = []

    async def run(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append(body)
        return JSONResponse({"response": {"echo": body["q"]}, "reward": 1})

    app = Starlette(routes=[Route("/run", run, methods=["POST"])])
    with serve(app) as server:
        summary = asyncio.run(
            collect(
                [{"q": "x"}],
                server.url,
                capture_dir=tmp_path / "c",
                output_path=tmp_path / "out.jsonl",
            )
        )
    assert summary.succeeded == 1
    assert seen == [{"q": "x", "_ng_task_index": 0, "_ng_rollout_index": 0}]
    (row,) = _rows(tmp_path / "out.jsonl")
    assert row["response"] == {"echo": "x"}
    assert row["ng_model_call_capture"]["gaps"] == [{"code": "model_call_capture_no_records"}]


# -- end to end: real model server with capture, real agent with the openai SDK, collector ---

_MODEL_RESPONSE = {
    "id": "resp_e2e",
    "object": "response",
    "created_at": 1800000000,
    "model": "scripted-model",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "4", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 11,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 12,
    },
}


def _model_app(capture_dir: Path, enabled: bool) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from model_call_capture.contracts import CaptureConfig
    from model_call_capture.middleware import install_model_call_capture

    async def responses(request: Request) -> JSONResponse:
        await request.body()
        return JSONResponse(_MODEL_RESPONSE)

    app = Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])
    config = CaptureConfig(observability_enabled=enabled, model_call_capture_dir=str(capture_dir))
    return install_model_call_capture(app, config, model_server_name="policy_model")


def _agent_app(model_url: str, correlation: Any, crash_once: set[tuple[int, int]]) -> Any:
    import openai
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def run(request: Request) -> JSONResponse:
        body = await request.json()
        client = openai.AsyncOpenAI(
            api_key="test", base_url=correlation.base_url_for_run(f"{model_url}/v1", body)
        )
        async with client:
            response = await client.responses.create(model="scripted-model", input=body["question"])
        key = (body["_ng_task_index"], body["_ng_rollout_index"])
        if key in crash_once and not body.get("_ng_attempt_index"):
            return JSONResponse({"error": "agent crashed after its model call"}, status_code=500)
        return JSONResponse(
            {
                "response": response.model_dump(mode="json"),
                "reward": float(response.output_text == "4"),
            }
        )

    return Starlette(routes=[Route("/run", run, methods=["POST"])])


def _run_e2e(tmp_path: Path, enabled: bool) -> tuple[list[dict[str, Any]], Path]:
    from model_call_capture.correlation import RolloutCorrelation
    from servers import serve

    capture = tmp_path / ("on" if enabled else "off") / "captures"
    out = tmp_path / ("on" if enabled else "off") / "out.jsonl"
    correlation = RolloutCorrelation.from_config(
        {"observability_enabled": enabled, "model_call_capture_dir": str(capture)}
    )
    rows = [{"question": "2+2?"}, {"question": "3+1?"}]
    with (
        serve(_model_app(capture, enabled)) as model,
        serve(_agent_app(model.url, correlation, {(1, 0)})) as agent,
    ):
        collector_dir = capture if enabled else None
        first = asyncio.run(
            collect(rows, agent.url, capture_dir=collector_dir, output_path=out, num_repeats=2)
        )
        assert (first.succeeded, sorted(first.failed)) == (3, ["1-0"])
        second = asyncio.run(
            collect(
                rows,
                agent.url,
                capture_dir=collector_dir,
                output_path=out,
                num_repeats=2,
                resume=True,
            )
        )
        assert (second.dispatched, second.succeeded, second.attempt_index) == (1, 1, 1)
    return sorted(_rows(out), key=lambda r: (r["_ng_task_index"], r["_ng_rollout_index"])), capture


def test_end_to_end_with_real_servers_the_openai_sdk_and_the_collector(tmp_path: Path) -> None:
    on, capture = _run_e2e(tmp_path, enabled=True)
    off, capture_off = _run_e2e(tmp_path, enabled=False)

    assert [
        (r["_ng_task_index"], r["_ng_rollout_index"], r.get("_ng_attempt_index")) for r in on
    ] == [
        (0, 0, None),
        (0, 1, None),
        (1, 0, 1),
        (1, 1, None),
    ]
    for row in on:
        attachment = row["ng_model_call_capture"]
        assert "gaps" not in attachment
        assert attachment["metrics"]["num_calls"] == 1
        assert attachment["metrics"]["tokens_total"] == 12
        (call,) = attachment["calls"]
        assert (call["response_id"], call["model"], call["status_code"]) == (
            "resp_e2e",
            "scripted-model",
            200,
        )
        assert call["model_ref"] == {"type": "responses_api_models", "name": "policy_model"}
    assert on[2]["ng_model_call_capture"]["rollout_id"] == "1-0-a1"
    # The crashed first attempt keeps its own capture; the resumed attempt's never mixes with it.
    store = CaptureStore(capture)
    assert store.rollout_ids() == ["0-0", "0-1", "1-0", "1-0-a1", "1-1"]
    assert len(store.read("1-0")) == 1 and len(store.read("1-0-a1")) == 1

    # Capture off: nothing captured, nothing attached, and the agent's fields are byte-identical.
    assert not capture_off.exists()
    assert all("ng_model_call_capture" not in r for r in off)
    from model_call_capture import _codec

    for with_capture, without in zip(on, off, strict=True):
        for field in ("response", "reward"):
            assert _codec.encode(with_capture[field]) == _codec.encode(without[field])
