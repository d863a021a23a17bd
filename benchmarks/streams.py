"""Generated streams of the dialects, shaped like the providers' real ones.

Each generator yields one SSE event per chunk (what a model server sends and what the
middleware sees), lazily, so a 100 MB stream never exists whole in memory. Text arrives
in deltas of a few characters, as from a real model; the full text needed by the closing
events of the Responses API is rebuilt from the same deterministic sequence.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

__all__ = ["GENERATORS", "completions", "delta_text", "stream_bytes"]

_WORDS = (
    " the",
    " weather",
    " in",
    " Paris",
    " is",
    " mild",
    ",",
    " with",
    " light",
    " rain",
    " expected",
    ".",
)
_ARGS = ['{"', "city", '":"', "Paris", '","', "unit", '":"', "celsius", '"}']


def delta_text(i: int) -> str:
    """The i-th text delta (deterministic)."""
    return _WORDS[i % len(_WORDS)]


def _full_text(start: int, n: int) -> str:
    return "".join(delta_text(i) for i in range(start, start + n))


def _sse(event: str | None, data: object) -> bytes:
    payload = data if isinstance(data, bytes) else json.dumps(data, separators=(",", ":")).encode()
    return (b"event: " + event.encode() + b"\n" if event else b"") + b"data: " + payload + b"\n\n"


def chat(n: int) -> Iterator[bytes]:
    """A Chat Completions stream: reasoning, `n` text deltas, a tool call, usage, [DONE]."""
    head = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1752169304,
        "model": "gpt-bench",
        "system_fingerprint": "fp_bench",
    }

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        return _sse(
            None,
            {
                **head,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
                "usage": None,
            },
        )

    yield chunk({"role": "assistant", "content": ""})
    reasoning = n // 4
    for i in range(reasoning):
        yield chunk({"reasoning_content": delta_text(i)})
    for i in range(reasoning, n):
        yield chunk({"content": delta_text(i)})
    yield chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_bench",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        }
    )
    for piece in _ARGS:
        yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls")
    usage = {
        "prompt_tokens": 812,
        "completion_tokens": n + 12,
        "total_tokens": 824 + n,
        "prompt_tokens_details": {"cached_tokens": 512},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    yield _sse(None, {**head, "choices": [], "usage": usage})
    yield _sse(None, b"[DONE]")


def messages(n: int) -> Iterator[bytes]:
    """An Anthropic Messages stream: a thinking block, `n` deltas in all, a tool_use block."""
    usage = {
        "input_tokens": 2751,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 1024,
        "output_tokens": 2,
        "service_tier": "standard",
    }
    message: dict[str, object] = {
        "model": "claude-bench",
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield _sse("message_start", {"type": "message_start", "message": message})
    thinking = n // 4
    yield _sse(
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
    )
    for i in range(thinking):
        yield _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": delta_text(i)},
            },
        )
    yield _sse(
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQBCkYIBRgCIkB" + "x" * 200},
        },
    )
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield _sse(
        "content_block_start",
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    )
    for i in range(thinking, n):
        if i % 200 == 0:
            yield _sse("ping", {"type": "ping"})
        yield _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": delta_text(i)},
            },
        )
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": 1})
    yield _sse(
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_bench",
                "name": "get_weather",
                "input": {},
            },
        },
    )
    for piece in _ARGS:
        yield _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            },
        )
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": 2})
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": n + 12},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


def responses(n: int) -> Iterator[bytes]:
    """An OpenAI Responses stream: a reasoning summary, `n` deltas in all, a function call."""
    seq = iter(range(1 << 62))
    summary_n = n // 4
    base = {
        "id": "resp_bench",
        "object": "response",
        "created_at": 1757630616,
        "status": "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-bench",
        "output": [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": "low", "summary": "detailed"},
        "service_tier": "auto",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                "strict": False,
            }
        ],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": {},
    }

    def ev(kind: str, **fields: object) -> bytes:
        return _sse(kind, {"type": kind, "sequence_number": next(seq), **fields})

    yield ev("response.created", response=base)
    yield ev("response.in_progress", response=base)
    rs = {"id": "rs_bench", "type": "reasoning", "summary": []}
    yield ev("response.output_item.added", output_index=0, item=rs)
    yield ev(
        "response.reasoning_summary_part.added",
        item_id="rs_bench",
        output_index=0,
        summary_index=0,
        part={"type": "summary_text", "text": ""},
    )
    for i in range(summary_n):
        yield ev(
            "response.reasoning_summary_text.delta",
            item_id="rs_bench",
            output_index=0,
            summary_index=0,
            delta=delta_text(i),
        )
    summary = _full_text(0, summary_n)
    yield ev(
        "response.reasoning_summary_text.done",
        item_id="rs_bench",
        output_index=0,
        summary_index=0,
        text=summary,
    )
    yield ev(
        "response.reasoning_summary_part.done",
        item_id="rs_bench",
        output_index=0,
        summary_index=0,
        part={"type": "summary_text", "text": summary},
    )
    rs_done = {**rs, "summary": [{"type": "summary_text", "text": summary}]}
    yield ev("response.output_item.done", output_index=0, item=rs_done)
    del summary
    msg = {
        "id": "msg_bench",
        "type": "message",
        "status": "in_progress",
        "content": [],
        "role": "assistant",
    }
    yield ev("response.output_item.added", output_index=1, item=msg)
    yield ev(
        "response.content_part.added",
        item_id="msg_bench",
        output_index=1,
        content_index=0,
        part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
    )
    for i in range(summary_n, n):
        yield ev(
            "response.output_text.delta",
            item_id="msg_bench",
            output_index=1,
            content_index=0,
            delta=delta_text(i),
            logprobs=[],
        )
    text = _full_text(summary_n, n - summary_n)
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    yield ev(
        "response.output_text.done",
        item_id="msg_bench",
        output_index=1,
        content_index=0,
        text=text,
        logprobs=[],
    )
    yield ev(
        "response.content_part.done",
        item_id="msg_bench",
        output_index=1,
        content_index=0,
        part=part,
    )
    msg_done = {**msg, "status": "completed", "content": [part]}
    yield ev("response.output_item.done", output_index=1, item=msg_done)
    fc = {
        "id": "fc_bench",
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": "call_bench",
        "name": "get_weather",
    }
    yield ev("response.output_item.added", output_index=2, item=fc)
    for piece in _ARGS:
        yield ev(
            "response.function_call_arguments.delta",
            item_id="fc_bench",
            output_index=2,
            delta=piece,
        )
    args = "".join(_ARGS)
    yield ev(
        "response.function_call_arguments.done", item_id="fc_bench", output_index=2, arguments=args
    )
    fc_done = {**fc, "status": "completed", "arguments": args}
    yield ev("response.output_item.done", output_index=2, item=fc_done)
    usage = {
        "input_tokens": 812,
        "input_tokens_details": {"cached_tokens": 512},
        "output_tokens": n + 12,
        "output_tokens_details": {"reasoning_tokens": summary_n},
        "total_tokens": 824 + n,
    }
    yield ev(
        "response.completed",
        response={
            **base,
            "status": "completed",
            "output": [rs_done, msg_done, fc_done],
            "usage": usage,
        },
    )


def completions(n: int, *, token_ids: bool = False) -> Iterator[bytes]:
    """A legacy Completions stream as vLLM sends it: `n` chunks of one token's text, usage, [DONE].

    Plain (`token_ids` false) it is the stream of row 9c (`benchmarks.vllm_dropin`): every
    choice member present, `logprobs`, `stop_reason` and the token ids null. With
    `token_ids` it is an RL rollout's: `return_token_ids` and `logprobs: 1`, the prompt's
    ids in the first chunk. (Not in `GENERATORS`: the benchmarks that go through it build
    lines of the dialects they know, and this one is for row 1's typed/general split.)
    """
    head = {
        "id": "cmpl-bench",
        "object": "text_completion",
        "created": 1752169304,
        "model": "tiny-llama",
    }
    offset = 0
    for i in range(n):
        text = delta_text(i)
        choice: dict[str, object] = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": "length" if i == n - 1 else None,
            "stop_reason": None,
            "prompt_token_ids": None,
            "token_ids": None,
        }
        if token_ids:
            choice["logprobs"] = {
                "text_offset": [offset],
                "token_logprobs": [-0.25 - i % 7],
                "tokens": [text],
                "top_logprobs": [{text: -0.25 - i % 7}],
            }
            choice["prompt_token_ids"] = list(range(1, 25)) if i == 0 else None
            choice["token_ids"] = [1000 + i % 97]
        offset += len(text)
        yield _sse(None, {**head, "choices": [choice]})
    usage = {"prompt_tokens": 24, "total_tokens": 24 + n, "completion_tokens": n}
    yield _sse(None, {**head, "choices": [], "usage": usage})
    yield _sse(None, b"[DONE]")


GENERATORS: dict[str, Callable[[int], Iterator[bytes]]] = {
    "responses": responses,
    "chat": chat,
    "messages": messages,
}
"""Stream generators by dialect; the argument is the number of text deltas."""


def stream_bytes(dialect: str, n: int) -> list[bytes]:
    """A generated stream as its list of chunks (one event each)."""
    return list(GENERATORS[dialect](n))
