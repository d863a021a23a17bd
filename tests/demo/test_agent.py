"""The embedded demo agent, against the scripted model server behind the capture middleware.

Real parts: uvicorn on 127.0.0.1 (tests/servers.py), the real openai and anthropic SDK
clients inside the agent, real capture files.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from model_call_capture import CaptureConfig, install_model_call_capture
from model_call_capture.correlation import RolloutCorrelation
from model_call_capture.demo.agent import DemoAgent, get_weather
from model_call_capture.demo.model_server import create_app
from servers import serve

ANSWER = "It is 18 \u00b0C with light rain in Paris: take a raincoat and an umbrella."


def _run_agent(
    capture_dir: Path, run: dict[str, Any], *, capture_on: bool = True
) -> dict[str, Any]:
    server_config = CaptureConfig(
        observability_enabled=True, model_call_capture_dir=str(capture_dir)
    )
    app = install_model_call_capture(create_app(), server_config, model_server_name="agent-test")
    agent_config = server_config if capture_on else CaptureConfig()
    with serve(app) as server:
        agent = DemoAgent(server.url, RolloutCorrelation(agent_config))
        return asyncio.run(agent(run))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_one_rollout_makes_six_calls_across_the_three_dialects(tmp_path: Path) -> None:
    result = _run_agent(
        tmp_path, {"_ng_task_index": 5, "_ng_rollout_index": 2, "question": "Weather in Paris?"}
    )
    assert result == {
        "response": {"chat": ANSWER, "responses": ANSWER, "messages": ANSWER},
        "reward": 1.0,
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["5-2.capture.jsonl"]
    lines = _lines(tmp_path / "5-2.capture.jsonl")
    assert [
        (line["dialect"], line.get("stream", False), line["status_code"]) for line in lines
    ] == [
        ("chat", False, 200),
        ("chat", True, 200),
        ("responses", False, 200),
        ("responses", True, 200),
        ("messages", False, 200),
        ("messages", True, 200),
    ]
    tool_call = lines[0]["response"]["choices"][0]["message"]["tool_calls"][0]
    assert tool_call["function"] == {"name": "get_weather", "arguments": '{"city":"Paris"}'}
    # The agent ran the tool and sent its result back in the streamed follow-up.
    assert lines[1]["request"]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": tool_call["id"],
        "content": "Paris: 18 C, light rain",
    }
    assert lines[2]["request"]["reasoning"] == {"effort": "low", "summary": "auto"}
    assert lines[4]["request"]["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert [line["request"]["messages"][0]["content"] for line in (lines[0], lines[4])] == [
        "Weather in Paris?"
    ] * 2


def test_simulate_rate_limit_adds_one_recorded_429(tmp_path: Path) -> None:
    result = _run_agent(
        tmp_path, {"_ng_task_index": 0, "_ng_rollout_index": 0, "simulate_rate_limit": True}
    )
    assert result["reward"] == 1.0
    lines = _lines(tmp_path / "0-0.capture.jsonl")
    assert [
        (line["dialect"], line["status_code"], line.get("error_category")) for line in lines[:2]
    ] == [
        ("chat", 429, "rate_limit"),
        ("chat", 200, None),
    ]
    assert len(lines) == 7


def test_with_capture_off_the_agent_calls_unprefixed_and_nothing_is_captured(
    tmp_path: Path,
) -> None:
    result = _run_agent(tmp_path, {"_ng_task_index": 1, "_ng_rollout_index": 0}, capture_on=False)
    assert result["reward"] == 1.0
    assert list(tmp_path.iterdir()) == []


def test_get_weather_is_canned() -> None:
    assert get_weather("Oslo") == "Oslo: 18 C, light rain"
