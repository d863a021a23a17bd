"""The scripted model server: deterministic replies the official SDKs accept, and scenarios on demand."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from model_call_capture import reassemble_stream
from model_call_capture.demo.model_server import SCENARIOS, create_app
from servers import RunningServer, serve


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve(create_app()) as running:
        yield running


def test_identical_requests_get_identical_bytes_and_distinct_requests_distinct_ids(
    server: RunningServer,
) -> None:
    def ask(content: str) -> httpx.Response:
        body = {"model": "demo-gpt", "messages": [{"role": "user", "content": content}]}
        return httpx.post(f"{server.url}/v1/chat/completions", json=body)

    first, again, other = ask("a"), ask("a"), ask("b")
    assert first.content == again.content
    assert first.json()["id"] != other.json()["id"]
    assert first.json()["id"].startswith("chatcmpl-")


def test_openai_sdk_reads_the_responses_stream_like_the_json_reply(server: RunningServer) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    reply = client.responses.create(model="demo-gpt", input="Weather?", tools=tools)  # type: ignore[arg-type]
    with client.responses.stream(model="demo-gpt", input="Weather?", tools=tools) as stream:  # type: ignore[arg-type]
        final = stream.get_final_response()
    assert [item.type for item in final.output] == ["reasoning", "message", "function_call"]
    assert (
        final.output_text
        == reply.output_text
        == "Let me check the weather for you \u2014 one moment."
    )
    assert final.usage is not None and final.usage.total_tokens == 160


def test_openai_sdk_accumulates_the_chat_tool_call(server: RunningServer) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    tool = {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object"}},
    }
    with client.chat.completions.stream(
        model="demo-gpt",
        messages=[{"role": "user", "content": "Weather?"}],
        tools=[tool],  # type: ignore[list-item]
    ) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert calls is not None
    assert (calls[0].function.name, calls[0].function.arguments) == (
        "get_weather",
        '{"city":"Paris"}',
    )
    assert final.choices[0].finish_reason == "tool_calls"


def test_a_tool_result_gets_a_text_answer(server: RunningServer) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    tool = {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object"}},
    }
    reply = client.chat.completions.create(
        model="demo-gpt",
        messages=[
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
        ],
        tools=[tool],  # type: ignore[list-item]
    )
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].finish_reason == "stop"


def test_anthropic_sdk_accumulates_the_stream_into_the_json_message(server: RunningServer) -> None:
    client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    args = {
        "model": "demo-claude",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Weather?"}],
        "tools": tools,
    }
    reply = client.messages.create(**args)  # type: ignore[call-overload]
    with client.messages.stream(**args) as stream:  # type: ignore[arg-type]
        final = stream.get_final_message()
    # Ids derive from the request body (which says "stream": true here): map one onto the other.
    streamed = json.dumps(final.model_dump()).replace(final.id[4:], reply.id[4:])
    assert json.loads(streamed) == reply.model_dump()
    assert [block.type for block in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[2].input == {"city": "Paris"}  # type: ignore[union-attr]
    assert final.usage.cache_read_input_tokens == 70


@pytest.mark.parametrize(
    ("scenario", "status", "content_type"),
    [
        ("status_429", 429, "application/json"),
        ("status_529", 529, "application/json"),
        ("empty", 200, "application/json"),
        ("no_content", 204, None),
        ("text_body", 200, "text/plain; charset=utf-8"),
        ("json_array", 200, "application/json"),
    ],
)
def test_odd_replies(
    scenario: str, status: int, content_type: str | None, server: RunningServer
) -> None:
    reply = httpx.post(f"{server.url}/v1/messages", json={"model": scenario, "messages": []})
    assert reply.status_code == status
    assert reply.headers.get("content-type") == content_type
    if scenario.startswith("status_"):
        assert reply.json() == {
            "type": "error",
            "error": {"type": reply.json()["error"]["type"], "message": "scripted error"},
        }


def test_the_scenario_header_works_for_malformed_bodies_too(server: RunningServer) -> None:
    reply = httpx.post(
        f"{server.url}/v1/responses", content=b"{bad", headers={"x-mcc-scenario": "status_503"}
    )
    assert reply.status_code == 400  # a body that is not JSON is refused before any scenario
    reply = httpx.post(
        f"{server.url}/v1/responses", json={"model": "x"}, headers={"x-mcc-scenario": "status_503"}
    )
    assert reply.status_code == 503


@pytest.mark.parametrize("dialect_path", ["/v1/responses", "/v1/chat/completions", "/v1/messages"])
def test_truncated_and_error_streams_end_without_their_terminal_event(
    dialect_path: str, server: RunningServer
) -> None:
    terminals = [b"response.completed", b"data: [DONE]", b"message_stop"]
    for scenario in ("truncate", "error_event"):
        body: dict[str, Any] = {
            "model": scenario,
            "stream": True,
            "input": "x",
            "messages": [],
            "max_tokens": 5,
        }
        reply = httpx.post(f"{server.url}{dialect_path}", json=body)
        assert reply.status_code == 200
        assert not any(t in reply.content for t in terminals)
        if scenario == "error_event":
            last = [line for line in reply.text.splitlines() if line.startswith("data: ")][-1]
            event = json.loads(last[6:])
            assert "error" in event or event.get("type") == "error"


def test_every_scenario_token_is_documented() -> None:
    assert {
        "ok",
        "raise_mid",
        "truncate",
        "gzip",
        "br",
        "deflate",
        "slow",
        "hang",
        "forever",
    } <= set(SCENARIOS)
    assert all(isinstance(text, str) and text for text in SCENARIOS.values())


def _vllm_request(stream: bool, **extra: Any) -> dict[str, Any]:
    return {
        "model": "demo-gpt",
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [{"type": "function", "function": {"name": "get_weather"}}],
        "return_token_ids": True,
        "stream": stream,
        **extra,
    }


def test_vllm_mode_stream_and_json_carry_the_same_token_ids(server: RunningServer) -> None:
    with httpx.Client(base_url=server.url) as client:
        whole: dict[str, Any] = client.post(
            "/v1/chat/completions", json=_vllm_request(False, logprobs=True)
        ).json()
        body = client.post("/v1/chat/completions", json=_vllm_request(True, logprobs=True)).content
    streamed = reassemble_stream("chat", body)
    assert streamed is not None
    # the generation, written out: the tool-call text, then <|im_end|> (257)
    text = (
        "Let me check the weather for you \u2014 one moment."
        '<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n</tool_call>'
    )
    generation = [*text.encode(), 257]
    replies: list[dict[str, Any]] = [whole, streamed]
    for reply in replies:
        choice = reply["choices"][0]
        assert choice["token_ids"] == generation
        assert [e["token"] for e in choice["logprobs"]["content"]][:3] == ["L", "e", "t"]
        assert [e["logprob"] for e in choice["logprobs"]["content"]][:2] == [
            -(1 + (ord("L") + 0) % 16) / 64,
            -(1 + (ord("e") + 1) % 16) / 64,
        ]
        assert reply["prompt_token_ids"][0] == 256 and reply["prompt_token_ids"][-11:] == [
            256,
            *b"assistant\n",
        ]
        assert "reasoning_content" not in choice["message"]
    assert whole["usage"]["prompt_tokens"] == len(whole["prompt_token_ids"])
    assert whole["usage"]["completion_tokens"] == len(generation)


def test_vllm_mode_spells_tokens_as_ids_when_asked(server: RunningServer) -> None:
    request = _vllm_request(False, logprobs=True, return_tokens_as_token_ids=True)
    with httpx.Client(base_url=server.url) as client:
        reply = client.post("/v1/chat/completions", json=request).json()
    tokens = [e["token"] for e in reply["choices"][0]["logprobs"]["content"]]
    assert tokens[:2] == [f"token_id:{ord('L')}", f"token_id:{ord('e')}"]
    assert tokens[-1] == "token_id:257"


def test_without_return_token_ids_the_reply_has_no_token_fields(server: RunningServer) -> None:
    request = _vllm_request(False)
    del request["return_token_ids"]
    with httpx.Client(base_url=server.url) as client:
        reply = client.post("/v1/chat/completions", json=request).json()
    assert "prompt_token_ids" not in reply and "token_ids" not in reply["choices"][0]
    assert reply["choices"][0]["message"]["reasoning_content"]
