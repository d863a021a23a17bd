"""A seeded, RL-shaped capture directory for the scale benchmark.

Each rollout is one multi-turn agent conversation in one of the three dialects: every
call's request carries the whole history so far (system prompt, tools, user turn, each
earlier assistant turn and tool result), so requests grow along the rollout, as they do
in agent training. About 60% of the calls are streamed; a few fail (an upstream error,
or a stream cut short), and those keep the raw stream text as the middleware does.
Lines run from about 8 KB (first call) to about 200 KB (long histories, capped).
Deterministic for a seed: the same arguments write the same bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from model_call_capture.contracts import CAPTURE_LINE_FORMAT

__all__ = ["GeneratedDir", "generate"]

DIALECTS = ("chat", "responses", "messages")
STREAM_SHARE = 0.6
FAILURE_SHARE = 0.03
MAX_LINE = 200_000
_WORDS = (
    "the agent reads a file then calls a tool to list the directory and patch the failing "
    "test before running the suite again with more verbose output because the previous "
    "attempt timed out on a slow network mount while the reward model waited for a score"
).split()
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class GeneratedDir:
    """What `generate` wrote."""

    root: Path
    rollouts: int
    lines: int
    bytes: int


class _Text:
    """Pseudo-prose cut from one seeded blob (fast: slicing, not sampling word by word)."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._blob = " ".join(rng.choice(_WORDS) for _ in range(120_000))

    def __call__(self, size: int) -> str:
        start = self._rng.randrange(0, len(self._blob) - size - 1)
        return self._blob[start : start + size]


def _tool_schema(i: int) -> dict[str, Any]:
    return {
        "name": f"tool_{i}",
        "description": f"Tool number {i}: runs a shell step in the sandbox and returns its output. "
        * 3,
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
            "required": ["command"],
        },
    }


_TOOLS = [_tool_schema(i) for i in range(12)]


def _tools(dialect: str) -> list[dict[str, Any]]:
    if dialect == "chat":
        return [{"type": "function", "function": t} for t in _TOOLS]
    if dialect == "responses":
        return [{"type": "function", **t} for t in _TOOLS]
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
        for t in _TOOLS
    ]


def _turn(dialect: str, call_id: str, text: str, args: str, output: str) -> list[dict[str, Any]]:
    """One earlier assistant turn (text and a tool call) and its tool result, as history."""
    if dialect == "chat":
        return [
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "tool_1", "arguments": args},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": output},
        ]
    if dialect == "responses":
        return [
            {"role": "assistant", "content": text},
            {"type": "function_call", "call_id": call_id, "name": "tool_1", "arguments": args},
            {"type": "function_call_output", "call_id": call_id, "output": output},
        ]
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": text},
                {"type": "tool_use", "id": call_id, "name": "tool_1", "input": {"command": args}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
        },
    ]


def _request(
    dialect: str, system: str, history: list[dict[str, Any]], stream: bool
) -> dict[str, Any]:
    model = "claude-bench" if dialect == "messages" else "gpt-bench"
    if dialect == "chat":
        body: dict[str, Any] = {
            "model": model,
            "messages": [{"role": "system", "content": system}, *history],
            "tools": _tools(dialect),
        }
    elif dialect == "responses":
        body = {"model": model, "instructions": system, "input": history, "tools": _tools(dialect)}
    else:
        body = {
            "model": model,
            "max_tokens": 4096,
            "system": system,
            "messages": history,
            "tools": _tools(dialect),
        }
    if stream:
        body["stream"] = True
    return body


def _response(
    dialect: str, rid: str, text: str, call_id: str, args: str, tin: int, tout: int
) -> dict[str, Any]:
    """A complete response with text and one tool call, and its usage."""
    if dialect == "chat":
        return {
            "id": f"chatcmpl-{rid}",
            "object": "chat.completion",
            "created": 1800000000,
            "model": "gpt-bench",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": text,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": "tool_1", "arguments": args},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {
                "prompt_tokens": tin,
                "completion_tokens": tout,
                "total_tokens": tin + tout,
                "prompt_tokens_details": {"cached_tokens": tin // 2},
            },
        }
    if dialect == "responses":
        return {
            "id": f"resp_{rid}",
            "object": "response",
            "created_at": 1800000000,
            "status": "completed",
            "model": "gpt-bench",
            "output": [
                {
                    "type": "message",
                    "id": f"msg_{rid}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                },
                {
                    "type": "function_call",
                    "id": f"fc_{rid}",
                    "call_id": call_id,
                    "name": "tool_1",
                    "arguments": args,
                    "status": "completed",
                },
            ],
            "usage": {
                "input_tokens": tin,
                "output_tokens": tout,
                "total_tokens": tin + tout,
                "input_tokens_details": {"cached_tokens": tin // 2},
                "output_tokens_details": {"reasoning_tokens": tout // 4},
            },
        }
    return {
        "id": f"msg_{rid}",
        "type": "message",
        "role": "assistant",
        "model": "claude-bench",
        "content": [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": call_id, "name": "tool_1", "input": {"command": args}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": tin, "output_tokens": tout, "cache_read_input_tokens": tin // 2},
    }


def _cut_stream(dialect: str, text: str) -> str:
    """The raw SSE text of a stream that broke off mid-answer (kept on the failed line)."""
    pieces = [text[i : i + 24] for i in range(0, len(text), 24)]
    if dialect == "chat":
        return "".join(
            "data: "
            + _encode(
                {"object": "chat.completion.chunk", "choices": [{"delta": {"content": p}}]}
            ).decode()
            + "\n\n"
            for p in pieces
        )
    if dialect == "responses":
        return "".join(
            "event: response.output_text.delta\ndata: "
            + _encode({"type": "response.output_text.delta", "delta": p}).decode()
            + "\n\n"
            for p in pieces
        )
    return "".join(
        "event: content_block_delta\ndata: "
        + _encode(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
        ).decode()
        + "\n\n"
        for p in pieces
    )


def _rollout(rng: random.Random, text: _Text, index: int, calls: int) -> list[bytes]:
    dialect = DIALECTS[index % len(DIALECTS)]
    system = text(rng.randint(3000, 5000))
    history: list[dict[str, Any]] = [{"role": "user", "content": text(rng.randint(300, 1500))}]
    lines: list[bytes] = []
    clock = 1800000000.0 + index * 1000.0
    for _ in range(calls):
        stream = rng.random() < STREAM_SHARE
        request = _request(dialect, system, history, stream)
        request_bytes = _encode(request)
        if len(request_bytes) > MAX_LINE - 8000:
            break  # the context window is full: the rollout ends here
        rid = f"{rng.getrandbits(96):024x}"
        call_id = f"call_{rid}"
        answer = text(rng.randint(100, 500))
        args = _encode({"command": text(rng.randint(20, 120))}).decode()
        tin, tout = len(request_bytes) // 4, len(answer) // 4 + 20
        latency = rng.uniform(200.0, 9000.0)
        line: dict[str, Any] = {
            "format": CAPTURE_LINE_FORMAT,
            "model_call_id": f"{rng.getrandbits(128):032x}",
            "dialect": dialect,
            "model_ref": {"type": "responses_api_models", "name": "policy_model"},
            "started_at": clock,
            "completed_at": clock + latency / 1000,
            "latency_ms": round(latency, 3),
            "latency_ttft_ms": round(rng.uniform(50.0, 900.0), 3),
            "status_code": 200,
            "error_category": None,
            "request": request,
            "response": _response(dialect, rid, answer, call_id, args, tin, tout),
        }
        if rng.random() < FAILURE_SHARE:
            line["status_code"] = 502 if not stream else 200
            line["error_category"] = "upstream_error"
            line["response"] = None
            line["response_raw"] = (
                _cut_stream(dialect, answer[: len(answer) // 2])
                if stream
                else '{"error": {"message": "bad gateway"}}'
            )
        if stream:
            line["stream"] = True
        lines.append(_encode(line) + b"\n")
        clock += latency / 1000 + 0.05
        # Tool outputs are mostly short, now and then a long log or file.
        size = rng.randint(100, 500) if rng.random() < 0.95 else rng.randint(3000, 12000)
        history += _turn(dialect, call_id, answer, args, text(size))
    return lines


def generate(root: Path, rollouts: int, *, seed: int = 14, calls: int = 50) -> GeneratedDir:
    """Write `rollouts` capture files (`calls` lines each, fewer when a history fills up) under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    text = _Text(rng)
    total_lines = total_bytes = 0
    for i in range(rollouts):
        lines = _rollout(rng, text, i, calls)
        data = b"".join(lines)
        (root / f"scale-{i:06d}.capture.jsonl").write_bytes(data)
        total_lines += len(lines)
        total_bytes += len(data)
    return GeneratedDir(root, rollouts, total_lines, total_bytes)
