"""A rollout's setup, the system prompt and the tool definitions of its calls, in every
dialect: shown once when unchanged, again where a call changes them, and not among the
turns of a call's input (the conversation model both `mcc view` and `mcc show` read)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from model_call_capture.store import CaptureStore
from model_call_capture.viewer import CallView, Entries, Limits, build_conversation, create_app

from .conftest import HOSTILE_TOOL, SCRIPT

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "The city"}},
}
PIRATE = f"You are a pirate. {SCRIPT}"


def _line(dialect: str, request: dict[str, Any], response: dict[str, Any], at: float) -> bytes:
    return json.dumps(
        {
            "dialect": dialect,
            "started_at": at,
            "completed_at": at + 0.5,
            "status_code": 200,
            "request": {"model": "m", **request},
            "response": response,
        }
    ).encode()


def _chat(messages: list[dict[str, Any]], tools: list[Any] | None, answer: str, at: float) -> bytes:
    request: dict[str, Any] = {"messages": messages}
    if tools is not None:
        request["tools"] = tools
    response = {"choices": [{"message": {"role": "assistant", "content": answer}}]}
    return _line("chat", request, response, at)


CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather now",
            "parameters": WEATHER,
        },
    },
    {
        "type": "function",
        "function": {"name": HOSTILE_TOOL, "description": SCRIPT, "parameters": {"x": SCRIPT}},
    },
]


def write_setup_dir(root: Path) -> Path:
    """One rollout per dialect, each with a system prompt and tools (none for Completions);
    the chat rollout keeps them for its second call and changes them for its third."""
    store = CaptureStore(root)
    system = {"role": "system", "content": PIRATE}
    hi = {"role": "user", "content": "Hi"}
    store.append("chat", _chat([system, hi], CHAT_TOOLS, "Arr", 1.7e9))
    more = [system, hi, {"role": "assistant", "content": "Arr"}, {"role": "user", "content": "?"}]
    store.append("chat", _chat(more, CHAT_TOOLS, "Arr again", 1.7e9 + 1))
    parrot = {"role": "system", "content": "Now you are a parrot."}
    store.append("chat", _chat([parrot, hi], None, "Squawk", 1.7e9 + 2))
    store.append(
        "responses",
        _line(
            "responses",
            {
                "instructions": "Answer in one line.",
                "input": "Hi",
                "tools": [
                    {"type": "function", "name": "lookup", "description": "Looks up", "parameters": WEATHER},
                    {"type": "web_search", "search_context_size": "low"},
                ],
            },
            {"output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}]},
            1.7e9,
        ),
    )  # fmt: skip
    store.append(
        "messages",
        _line(
            "messages",
            {
                "system": [{"type": "text", "text": "System, as blocks."}],
                "messages": [{"role": "user", "content": "Hi"}],
                "tools": [{"name": "search_docs", "description": "Searches the docs", "input_schema": WEATHER}],
            },
            {"content": [{"type": "text", "text": "ok"}]},
            1.7e9,
        ),
    )  # fmt: skip
    store.append(
        "completions",
        _line("completions", {"prompt": "Once upon"}, {"choices": [{"text": " a time"}]}, 1.7e9),
    )
    return root


@pytest.fixture
def setup_dir(tmp_path: Path) -> Path:
    return write_setup_dir(tmp_path / "calls")


def _conversation(root: Path, rollout_id: str, limits: Limits | None = None) -> Any:
    rollout = CaptureStore(root).rollout(rollout_id)
    return build_conversation(rollout_id, Entries(rollout), limits=limits)


def _texts(turns: Any) -> list[str]:
    return [p.text for t in turns for p in t.parts]


def test_each_dialect_states_its_system_prompt_and_tools(setup_dir: Path) -> None:
    wanted = {
        "chat": ([PIRATE], ["get_weather", HOSTILE_TOOL]),
        "responses": (["Answer in one line."], ["lookup", None]),
        "messages": (["System, as blocks."], ["search_docs"]),
    }
    for rollout_id, (system, tools) in wanted.items():
        conversation = _conversation(setup_dir, rollout_id)
        setup = conversation.setup
        assert setup is not None, rollout_id
        assert _texts(setup.system) == system
        assert [t.name for t in setup.tools] == tools
        first = conversation.items[0]
        assert isinstance(first, CallView)
        assert [t.role for t in first.input] == ["user"]  # the system prompt is not an input turn
        assert first.setup is None  # the first call's setup is the conversation's
    responses = _conversation(setup_dir, "responses").setup
    assert responses.tools[0].description == "Looks up"
    assert json.loads(responses.tools[0].parameters) == WEATHER
    assert responses.tools[0].parameters.startswith("{\n")  # indented for reading
    assert (responses.tools[1].kind, responses.tools[1].parameters) == (
        "web_search",
        '{\n  "search_context_size": "low"\n}',
    )
    messages = _conversation(setup_dir, "messages").setup
    assert json.loads(messages.tools[0].parameters) == WEATHER
    assert messages.tools[0].description == "Searches the docs"
    assert _conversation(setup_dir, "completions").setup is None  # a prompt has no setup


def test_the_setup_is_shown_again_only_where_a_call_changes_it(setup_dir: Path) -> None:
    conversation = _conversation(setup_dir, "chat")
    calls = [i for i in conversation.items if isinstance(i, CallView)]
    assert [c.setup is not None for c in calls] == [False, False, True]
    assert calls[1].setup_note is None
    assert calls[2].setup_note == "the system prompt and the tools changed"
    changed = calls[2].setup
    assert changed is not None
    assert _texts(changed.system) == ["Now you are a parrot."] and changed.tools == []
    assert [t.role for t in calls[2].input] == ["user"]


def test_many_tools_are_counted_not_all_shown(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": f"t{i}"}} for i in range(500)]
    CaptureStore(tmp_path).append("r", _chat([{"role": "user", "content": "x"}], tools, "y", 1.0))
    setup = _conversation(tmp_path, "r", Limits(tools=50)).setup
    assert len(setup.tools) == 50 and setup.tools_left_out == 450


def test_the_rollout_api_carries_the_setup(setup_dir: Path) -> None:
    with TestClient(create_app(setup_dir), base_url="http://127.0.0.1") as client:
        body = client.get("/api/rollouts/chat").json()["conversation"]
    assert body["setup"]["system"][0]["parts"][0]["text"] == PIRATE
    assert [t["name"] for t in body["setup"]["tools"]] == ["get_weather", HOSTILE_TOOL]
    assert body["items"][2]["setup_note"] == "the system prompt and the tools changed"


def _show(root: Path, rollout_id: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "model_call_capture.cli", "show", str(root), rollout_id],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.fixture
def shown(setup_dir: Path) -> Iterator[dict[str, str]]:
    yield {r: _show(setup_dir, r) for r in ("chat", "responses", "messages")}


def test_mcc_show_prints_the_setup(shown: dict[str, str]) -> None:
    chat = shown["chat"]
    assert chat.count("setup: system prompt and tools") == 2
    assert "(the system prompt and the tools changed)" in chat
    assert "get_weather" in chat and "The weather now" in chat and "You are a pirate." in chat
    assert "Answer in one line." in shown["responses"] and "web_search" in shown["responses"]
    assert "System, as blocks." in shown["messages"] and "search_docs" in shown["messages"]
