"""Tables fit the terminal: numbers whole, ids whole or shortened in the middle, columns
dropped by priority and named, `--wide`, and piped output that follows `COLUMNS`.

The capture files are written by the real store; `mcc` runs as a subprocess, piped and on
a real pseudo-terminal whose size is set with `TIOCSWINSZ`, as a terminal emulator does.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from model_call_capture.cli._table import Col, fit_table, shorten_middle
from model_call_capture.store import CaptureStore

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN = "Qwen/Qwen2.5-72B-Instruct-AWQ"


def _line(model: str, call: int, tokens_in: int) -> bytes:
    return json.dumps(
        {
            "model_call_id": f"call-{call}",
            "dialect": "chat",
            "status_code": 200,
            "latency_ms": 1234567.5,
            "latency_ttft_ms": 98765.25,
            "request": {"model": model, "messages": [{"role": "user", "content": "hi"}]},
            "response": {
                "id": f"chatcmpl-{call}",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "hello"},
                    }
                ],
                "usage": {
                    "prompt_tokens": tokens_in,
                    "completion_tokens": 2_100_000,
                    "total_tokens": tokens_in + 2_100_000,
                },
            },
        }
    ).encode()


@pytest.fixture
def captures(tmp_path: Path) -> Path:
    store = CaptureStore(tmp_path)
    for i in range(3):
        store.append("r", _line(LLAMA, i, 569_000_123))
    store.append("r", _line(QWEN, 9, 11_000_000))
    return tmp_path


# Every figure the stats of `captures` hold, as it must appear: whole.
STATS_NUMBERS = [
    "1,707,000,369",
    "6,300,000",
    "11,000,000",
    "2,100,000",
    "1,234,567.5",
    "98,765.2",
]


def _run(*args: str, columns: int | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    run = subprocess.run(
        [sys.executable, "-m", "model_call_capture.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout + run.stderr


def _on_terminal(*args: str, columns: int) -> str:
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["TERM"] = "dumb"
    proc = subprocess.Popen(
        [sys.executable, "-m", "model_call_capture.cli", *args],
        stdout=secondary,
        stderr=secondary,
        env=env,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_shorten_middle_keeps_both_ends() -> None:
    assert shorten_middle(LLAMA, 40) == LLAMA
    assert shorten_middle(LLAMA, 16) == "meta-lla…nstruct"
    assert shorten_middle(LLAMA, 17) == "meta-lla…Instruct"
    assert shorten_middle("漢字漢字漢字", 7) == "漢…漢字"  # wide characters count two cells
    assert shorten_middle("abc", 1) == "…"


def test_fit_table_drops_by_priority_and_never_cuts_a_number() -> None:
    cols = [
        Col("model", "id"),
        Col("calls", "number"),
        Col("a b c", "number", 2),
        Col("note", "text", 1),
    ]
    rows = [[LLAMA, "12,345,678", "999,999,999", "a long note that can wrap"]]
    natural = fit_table(cols, rows, width=None)
    assert natural.hidden == [] and natural.width == 32 + 10 + 11 + 25 + 2 + 3 + 8
    narrow = fit_table(cols, rows, width=50)
    assert narrow.hidden == ["a b c"]
    assert narrow.width <= 50
    tight = fit_table(cols, rows, width=36)
    assert tight.hidden == ["a b c", "note"]  # the highest priority number goes first
    assert tight.width == 36


@pytest.mark.parametrize("columns", [60, 80, 100, 120])
def test_stats_fits_columns_and_shows_every_number_whole(captures: Path, columns: int) -> None:
    out = _run("stats", str(captures), columns=columns)
    assert _widest(out) <= columns, out
    table = out[out.index("┏") : out.index("┘")]
    cells = [c.strip() for line in table.splitlines() for c in line.split("│")]
    numbers = [c for c in cells if c[:1].isdigit()]
    assert numbers and all(n in STATS_NUMBERS or n in ("1", "3") for n in numbers), numbers
    if columns >= 80:
        assert "1,707,000,369" in numbers  # tokens in comes right after the calls
    assert "…" not in "".join(numbers)
    if columns < 120:
        words = " ".join(out.split())
        assert "not shown at this width: " in words and "(--wide shows them)" in words


def test_model_ids_are_whole_when_there_is_room_and_shortened_in_the_middle_when_not(
    captures: Path,
) -> None:
    roomy = _run("stats", str(captures), columns=160)
    assert LLAMA in roomy and QWEN in roomy and "not shown" not in roomy
    tight = _run("stats", str(captures), columns=60)
    assert "meta-llama/Lla….1-8B-Instruct" in tight and QWEN in tight  # the room left
    cols = [Col("model", "id"), Col("calls", "number")]
    fitted = fit_table(cols, [[LLAMA, "3"], [QWEN, "1"]], width=29)
    assert fitted.width == 29
    assert [str(cell) for cell in fitted.table.columns[0].cells] == [
        "meta-lla…Instruct",  # 17 cells: 29 less the borders, padding and calls
        "Qwen/Qwe…ruct-AWQ",
    ]


def test_piped_without_columns_is_plain_text_at_natural_width(captures: Path) -> None:
    out = _run("stats", str(captures), columns=None)
    for header in ("tokens in", "tokens out", "reasoning", "latency p95", "TTFT p95", "errors"):
        assert header in out  # on one header line: nothing dropped, nothing wrapped
    assert LLAMA in out and "not shown" not in out and "\x1b[" not in out
    assert all(n in out for n in STATS_NUMBERS)


def test_wide_shows_every_column_whatever_the_width(captures: Path) -> None:
    out = _run("stats", str(captures), "--wide", columns=60)
    assert "TTFT p95" in out and LLAMA in out and "not shown" not in out
    assert _widest(out) > 60


@pytest.mark.parametrize("columns", [80, 100])
def test_on_a_terminal_of_its_size(captures: Path, columns: int) -> None:
    for args in (("stats", str(captures)), ("show", str(captures), "r")):
        out = _on_terminal(*args, columns=columns)
        assert _widest(out) <= columns, out
        wanted = STATS_NUMBERS[:2] if args[0] == "stats" else ["569,000,123", "2,100,000"]
        assert all(n in out for n in wanted), out


def test_show_follows_columns_when_piped(captures: Path) -> None:
    out = _run("show", str(captures), "r", columns=100)
    assert _widest(out) <= 100
    assert "569,000,123" in out
    plain = _run("show", str(captures), "r", columns=None)
    assert LLAMA in plain and "TTFT ms" in plain  # every column of the call table
