"""The embedded demo agent: one rollout makes six model calls with the official SDK clients.

It is written the way an agent author would write one: `base_url_for_run` turns the
model server's base URL into `.../ng-rollout/<rollout_id>/v1` for the run request (only
while capture is on), the `openai` and `anthropic` clients are pointed at it, and the
agent otherwise knows nothing about capture. One rollout uses
every dialect, JSON and streaming, asks for a tool call, runs the tool and sends its
result back, and asks for reasoning. A run request with `simulate_rate_limit` first
makes one call that the scripted server answers with 429, so the demo shows a failed call.
"""

from __future__ import annotations

from typing import Any

from anthropic import AsyncAnthropic
from openai import AsyncOpenAI, RateLimitError

from .. import _codec
from ..correlation import RolloutCorrelation

__all__ = [
    "ANTHROPIC_MODEL",
    "OPENAI_MODEL",
    "TOKEN_TURNS",
    "DemoAgent",
    "TokenAgent",
    "get_weather",
]

OPENAI_MODEL = "demo-gpt"
"""The model name the agent asks the OpenAI-compatible endpoints for."""
ANTHROPIC_MODEL = "demo-claude"
"""The model name the agent asks the Anthropic-compatible endpoint for."""

_WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


# Asks the scripted server to pace its streams like a real model (the `slow` scenario),
# so the demo's latency and time to first token differ the way they do in production.
_PACED = {"x-mcc-scenario": "slow"}


def get_weather(city: str) -> str:
    """The demo's one tool: a canned forecast (the agent runs it; the model server never does)."""
    return f"{city}: 18 C, light rain"


class DemoAgent:
    """An async agent callable: `await agent(run_request) -> {"response": ..., "reward": ...}`.

    `model_base_url` is the model server's base URL (`http://127.0.0.1:PORT`); while
    `correlation` has capture on, every call goes to
    `<model_base_url>/ng-rollout/<rollout_id>/v1/...`.
    """

    def __init__(self, model_base_url: str, correlation: RolloutCorrelation) -> None:
        self.model_base_url = model_base_url.rstrip("/")
        self.correlation = correlation

    async def __call__(self, run: dict[str, Any]) -> dict[str, Any]:
        """Run one rollout for the run request `run` (task/rollout indices or `_ng_rollout_id`)."""
        base = self.correlation.base_url_for_run(f"{self.model_base_url}/v1", run)
        question = str(run.get("question") or "What should I wear in Paris today?")
        async with (
            AsyncOpenAI(
                base_url=base, api_key="demo-key", max_retries=0, default_headers=_PACED
            ) as openai,
            # the Anthropic SDK appends /v1/messages itself
            AsyncAnthropic(
                base_url=base.removesuffix("/v1"),
                api_key="demo-key",
                max_retries=0,
                default_headers=_PACED,
            ) as anthropic,
        ):
            if run.get("simulate_rate_limit"):
                await self._rate_limited_once(openai, question)
            answers = {
                "chat": await self._chat_with_tool(openai, question),
                "responses": await self._responses(openai, question),
                "messages": await self._messages(anthropic, question),
            }
        reward = 1.0 if all(answers.values()) else 0.0
        return {"response": answers, "reward": reward}

    @staticmethod
    async def _rate_limited_once(client: AsyncOpenAI, question: str) -> None:
        """A call the demo server answers with 429, to show how a failed call is recorded.

        The `x-mcc-scenario` header asks the scripted server for the failure; the agent
        shrugs it off and goes on, as an agent with its own retry policy would.
        """
        try:
            await client.chat.completions.create(
                model=OPENAI_MODEL,
                messages=[{"role": "user", "content": question}],
                extra_headers={"x-mcc-scenario": "status_429"},
            )
        except RateLimitError:
            return
        raise RuntimeError("the demo server was asked for a 429 and did not send one")

    @staticmethod
    async def _chat_with_tool(client: AsyncOpenAI, question: str) -> str:
        """Chat Completions: a JSON call that asks for a tool, then a stream with the tool's result."""
        messages: list[Any] = [{"role": "user", "content": question}]
        first = await client.chat.completions.create(
            model=OPENAI_MODEL, messages=messages, tools=[_WEATHER_TOOL]
        )
        reply = first.choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        for call in reply.tool_calls or []:
            function = getattr(call, "function", None)
            arguments = _codec.decode_object(getattr(function, "arguments", None) or "") or {}
            city = str(arguments.get("city") or "Paris")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": get_weather(city)})
        stream = await client.chat.completions.create(
            model=OPENAI_MODEL,
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
        )
        text = []
        async for chunk in stream:
            for choice in chunk.choices:
                text.append(choice.delta.content or "")
        return "".join(text)

    @staticmethod
    async def _responses(client: AsyncOpenAI, question: str) -> str:
        """Responses: a JSON call with reasoning, then the same question streamed."""
        first = await client.responses.create(
            model=OPENAI_MODEL, input=question, reasoning={"effort": "low", "summary": "auto"}
        )
        history: list[Any] = [{"role": "user", "content": question}]
        if first.output_text:
            history.append({"role": "assistant", "content": first.output_text})
        history.append({"role": "user", "content": "Shorter, please."})
        stream = await client.responses.create(model=OPENAI_MODEL, input=history, stream=True)
        text = []
        async for event in stream:
            if event.type == "response.output_text.delta":
                text.append(event.delta)
        return "".join(text) or first.output_text

    @staticmethod
    async def _messages(client: AsyncAnthropic, question: str) -> str:
        """Anthropic Messages: a JSON call with extended thinking, then a stream."""
        first = await client.messages.create(
            model=ANTHROPIC_MODEL,
            max_tokens=2048,
            thinking={"type": "enabled", "budget_tokens": 1024},
            messages=[{"role": "user", "content": question}],
        )
        said = "".join(block.text for block in first.content if block.type == "text")
        stream = await client.messages.create(
            model=ANTHROPIC_MODEL,
            max_tokens=1024,
            messages=[
                {"role": "user", "content": question},
                {"role": "assistant", "content": said or "..."},
                {"role": "user", "content": "Shorter, please."},
            ],
            stream=True,
        )
        text = []
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                text.append(event.delta.text)
        return "".join(text) or said


TOKEN_TURNS = 5
"""Model calls of one `TokenAgent` rollout."""

_FOLLOW_UPS = ("And tomorrow?", "Thanks. One word to sum it up?")

# vLLM's extra request fields: token ids of the prompt and the generation, log-probs
# whose tokens are spelled `token_id:N`.
_TOKEN_FIELDS = {"return_token_ids": True, "logprobs": True, "return_tokens_as_token_ids": True}


class TokenAgent:
    """The `mcc demo --tokens` agent: one multi-turn, tool-using chat per rollout, token ids asked for.

    Five Chat Completions calls (JSON and streaming alternately) against the scripted
    server's vLLM mode: the model calls the tool, the agent runs it and sends the result
    back, the user asks follow-ups. Every reply goes back into the history as the
    assistant message the server sent, so the rollout is one token trajectory.
    """

    def __init__(self, model_base_url: str, correlation: RolloutCorrelation) -> None:
        self.model_base_url = model_base_url.rstrip("/")
        self.correlation = correlation

    async def __call__(self, run: dict[str, Any]) -> dict[str, Any]:
        """Run one rollout for the run request `run`."""
        base = self.correlation.base_url_for_run(f"{self.model_base_url}/v1", run)
        question = str(run.get("question") or "What should I wear in Paris today?")
        messages: list[Any] = [{"role": "user", "content": question}]
        follow_ups = list(_FOLLOW_UPS)
        said = ""
        async with AsyncOpenAI(base_url=base, api_key="demo-key", max_retries=0) as client:
            for turn in range(TOKEN_TURNS):
                message = await _chat_turn(client, messages, stream=turn % 2 == 1)
                messages.append(message)
                said = str(message.get("content") or "")
                calls = message.get("tool_calls") or []
                for call in calls:
                    arguments = _codec.decode_object(call["function"]["arguments"]) or {}
                    city = str(arguments.get("city") or "Paris")
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": get_weather(city)}
                    )
                if not calls and follow_ups:
                    messages.append({"role": "user", "content": follow_ups.pop(0)})
        return {"response": said, "reward": 1.0 if said else 0.0}


async def _chat_turn(client: AsyncOpenAI, messages: list[Any], *, stream: bool) -> dict[str, Any]:
    """One call; the assistant message it produced, as the history carries it."""
    if not stream:
        reply = await client.chat.completions.create(
            model=OPENAI_MODEL, messages=messages, tools=[_WEATHER_TOOL], extra_body=_TOKEN_FIELDS
        )
        return reply.choices[0].message.model_dump(exclude_none=True)
    chunks = await client.chat.completions.create(
        model=OPENAI_MODEL,
        messages=messages,
        tools=[_WEATHER_TOOL],
        stream=True,
        extra_body=_TOKEN_FIELDS,
    )
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    async for chunk in chunks:
        for choice in chunk.choices:
            text.append(choice.delta.content or "")
            for part in choice.delta.tool_calls or []:
                call = calls.setdefault(
                    part.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] = call["id"] or part.id or ""
                if part.function is not None:
                    call["function"]["name"] += part.function.name or ""
                    call["function"]["arguments"] += part.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message
