"""A generated capture directory: many rollouts of many lines of a chosen size.

For the scale figures of `mcc stats` and `mcc validate` (peak memory, lines/s) and for the
memory test of `mcc stats`. Lines are chat completions with a padded prompt, so each line
has about the size asked for; latencies vary with a seeded generator so percentiles mean
something.

    python -m benchmarks.captures DIR --rollouts 500 --lines 50 --line-kb 16
"""

from __future__ import annotations

import argparse
import random
import uuid
from pathlib import Path

from model_call_capture import _codec
from model_call_capture.contracts import CAPTURE_LINE_FORMAT

__all__ = ["write_rollouts"]


def _line(rng: random.Random, i: int, pad: str) -> bytes | bytearray:
    model = ("gpt-a", "gpt-b")[i % 2]
    return _codec.encode_line(
        {
            "format": CAPTURE_LINE_FORMAT,
            "model_call_id": uuid.UUID(int=rng.getrandbits(128)).hex,
            "dialect": "chat",
            "model_ref": {"type": "responses_api_models", "name": "bench_model"},
            "started_at": 1800000000.0 + i,
            "completed_at": 1800000000.5 + i,
            "latency_ms": round(rng.uniform(50, 5000), 3),
            "latency_ttft_ms": round(rng.uniform(10, 500), 3),
            "status_code": 200,
            "error_category": None,
            "request": {"model": model, "messages": [{"role": "user", "content": pad}]},
            "response": {
                "id": f"chatcmpl-{i}",
                "object": "chat.completion",
                "created": 1800000000,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100 + i % 7, "completion_tokens": 5, "total_tokens": 0},
            },
        }
    )


def write_rollouts(
    root: Path, *, rollouts: int, lines: int, line_bytes: int, seed: int = 14
) -> list[Path]:
    """Write `rollouts` capture files of `lines` lines of about `line_bytes` bytes each."""
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    pad = "x" * max(0, line_bytes - 700)
    paths = []
    for r in range(rollouts):
        path = root / f"{r}-0.capture.jsonl"
        with path.open("wb") as f:
            f.writelines(_line(rng, r * lines + i, pad) for i in range(lines))
        paths.append(path)
    return paths


def main() -> None:
    """Write a directory (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--rollouts", type=int, default=500)
    parser.add_argument("--lines", type=int, default=50)
    parser.add_argument("--line-kb", type=int, default=16)
    args = parser.parse_args()
    write_rollouts(
        args.root, rollouts=args.rollouts, lines=args.lines, line_bytes=args.line_kb * 1024
    )


if __name__ == "__main__":
    main()
