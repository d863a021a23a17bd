"""What the viewer tests share: capture lines written by hand, a hostile capture directory,
and `mcc view` started as a real subprocess."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from model_call_capture.store import CaptureStore

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # writes a terminal's clipboard
SCRIPT = "<script>window.__pwned = 'script'</script>"
IMG = "<img src=x onerror=\"window.__pwned = 'img'\">"
LINK = "<a href=\"javascript:window.__pwned = 'link'\">click me</a>"
HOSTILE_MODEL = "<svg onload=\"window.__pwned = 'model'\">"
HOSTILE_TOOL = "<b onmouseover=\"window.__pwned = 'tool'\">tool</b>"
HOSTILE_ARGS = json.dumps({"q": "</pre><script>window.__pwned = 'args'</script>"})


def chat_line(
    *,
    user: str = "Hello?",
    answer: str = "Hi.",
    model: str = "gpt-test",
    tool: tuple[str, str] | None = None,
    tool_result: str | None = None,
    started_at: float = 1_700_000_000.0,
    status_code: int = 200,
    error_category: str | None = None,
    response_raw: str | None = None,
    tokens: tuple[int, int] = (10, 5),
    gaps: list[dict[str, str]] | None = None,
) -> bytes:
    """One chat capture line: a user turn (plus a tool result when given) and the answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    if tool_result is not None:
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {"name": "look", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": tool_result},
        ]
    message: dict[str, Any] = {"role": "assistant", "content": answer}
    if tool is not None:
        message["tool_calls"] = [
            {"id": "t1", "type": "function", "function": {"name": tool[0], "arguments": tool[1]}}
        ]
    return json.dumps(
        {
            "model_call_id": f"call-{started_at}",
            "dialect": "chat",
            "started_at": started_at,
            "completed_at": started_at + 0.5,
            "latency_ms": 500.0,
            "latency_ttft_ms": 120.0,
            "status_code": status_code,
            "error_category": error_category,
            "request": {"model": model, "messages": messages},
            "response": {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
            },
            "response_raw": response_raw,
            **({"gaps": gaps} if gaps else {}),
        }
    ).encode()


def write_hostile_dir(root: Path) -> Path:
    """A capture directory whose captured text tries to run script, load images, plant
    links and drive a terminal, plus a damaged line; returns `root`."""
    store = CaptureStore(root)
    text = f"{SCRIPT} {IMG} {LINK} {OSC52}"
    store.append(
        "evil",
        chat_line(
            user=text,
            answer=f"sure {SCRIPT}",
            model=HOSTILE_MODEL,
            tool=(HOSTILE_TOOL, HOSTILE_ARGS),
            response_raw=f"data: {SCRIPT}\n\n",
            gaps=[{"code": "raw_text_cut", "detail": IMG}],
        ),
    )
    with open(store.path("evil"), "ab") as f:
        f.write(b'{"dialect": "<script>window.__pwned = 1</script>", "status_code": [}\n')
    store.append(
        "evil",
        chat_line(
            user=text,
            answer=IMG,
            model=HOSTILE_MODEL,
            tool_result=LINK,
            started_at=1_700_000_001.0,
            error_category="<i onclick=x>upstream</i>",
            status_code=502,
        ),
    )
    store.append("plain", chat_line())
    return root


@contextmanager
def mcc_view(directory: Path, *args: str) -> Iterator[str]:
    """`mcc view DIR` as a real subprocess on port 0: yields its URL, stops it after."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "model_call_capture.cli", "view", str(directory), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        match = re.fullmatch(r"Serving (http://127\.0\.0\.1:\d+/)\n", first)
        assert match, (first, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        yield match.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def rollout_row(task_index: int, repeat: int = 0, **fields: Any) -> bytes:
    """One line of a collector's rollouts file: the agent's record and the `_ng_*` stamps."""
    row = {
        "response": {"output": [{"type": "message", "content": "an answer " * 20}]},
        **fields,
        "_ng_task_index": task_index,
        "_ng_rollout_index": repeat,
        "ng_model_call_capture": {"rollout_id": f"{task_index}-{repeat}", "calls": []},
    }
    return json.dumps(row).encode() + b"\n"


HOSTILE_FIELD = "<script>window.__pwned = 'field'</script>"


def write_hostile_rollouts(root: Path, max_line_bytes: int) -> Path:
    """Captures of rollouts 0-0, 1-0, 2-0 and 10-0, and beside them a rollouts file that is
    wrong every way a file can be; returns the file. Its lines, numbered as editors do:

    1 0-0 reward 0.5 with a script tag in a field; 2 not JSON; 3 a JSON array; 4 names no
    rollout; 5 an id that is not one; 6 a line longer than `max_line_bytes`; 7 1-0 reward
    "high" (not a number); 8 a rollout without captures; 9 0-0 again, reward 0.25 (shown);
    10 2-0 reward 1 with a script tag in a 5,000-character text; 11 10-0 reward 2.
    """
    store = CaptureStore(root)
    for rollout_id in ("0-0", "1-0", "2-0", "10-0"):
        store.append(rollout_id, chat_line())
    path = root / "rollouts.jsonl"
    path.write_bytes(
        rollout_row(0, reward=0.5, note=HOSTILE_FIELD)
        + b"{not json\n"
        + b"[1, 2]\n"
        + b'{"reward": 1}\n'
        + b'{"_ng_rollout_id": "../../etc/passwd", "reward": 1}\n'
        + rollout_row(5, reward=1, blob="x" * (max_line_bytes + 10))
        + rollout_row(1, reward="high")
        + rollout_row(99, reward=3)
        + rollout_row(0, reward=0.25, note="again")
        + rollout_row(2, reward=1, note=HOSTILE_FIELD + "y" * 5000)
        + rollout_row(10, reward=2)
    )
    return path
