"""Captured text reaches the terminal as literal, escaped text: never markup, never a control.

The capture files are written by the real store; `mcc` runs in-process through `main()`
(the entry point of the `mcc` script) and as a subprocess on a real pseudo-terminal, where
rich writes what a terminal would receive.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from model_call_capture.cli import main
from model_call_capture.cli._common import safe_text
from model_call_capture.store import CaptureStore

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # writes the clipboard of the terminal
OSC8 = "\x1b]8;;https://evil.example\x1b\\here\x1b]8;;\x1b\\"  # a hidden link
MARKUP_BREAK = "gpt[/]"
MARKUP_LINK = "[link=https://e.x]gpt[/link]"  # short: a table cell must not wrap it


def _line(model: str, *, tool: str = "get_weather", finish: str = "stop", raw: str = "") -> bytes:
    return json.dumps(
        {
            "model_call_id": "call-1",
            "dialect": "chat",
            "status_code": 200,
            "latency_ms": 12.5,
            "request": {"model": model, "messages": [{"role": "user", "content": OSC52}]},
            "response": {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": finish,
                        "message": {
                            "role": "assistant",
                            "content": f"hi {OSC8}",
                            "tool_calls": [
                                {
                                    "id": "t1",
                                    "type": "function",
                                    "function": {"name": tool, "arguments": "{}"},
                                }
                            ],
                        },
                    }
                ],
            },
            "response_raw": raw or None,
        }
    ).encode()


def _mcc(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), out + err


@pytest.mark.parametrize("model", [MARKUP_BREAK, MARKUP_LINK, "[bold]x", "a\\[b]"])
def test_captured_strings_are_never_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str
) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line(model, tool=f"{model}-t", finish=f"{model}-f"))
    store.append("ok", _line("gpt-4o"))
    code, out = _mcc(capsys, "stats", str(tmp_path))
    assert code == 0, out
    assert model in out and "gpt-4o" in out
    code, out = _mcc(capsys, "show", str(tmp_path), "r")
    assert code == 0, out
    for text in (model, f"{model}-t", f"{model}-f"):
        assert text in out


def test_control_characters_are_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # long escaped names on one line
    store = CaptureStore(tmp_path)
    store.append(
        "r",
        _line(f"gpt{OSC52}", tool=f"t{OSC8}", finish="stop\x9b31m\u202e", raw=f"data: {OSC52}\n"),
    )
    for args in (("stats", str(tmp_path)), ("show", str(tmp_path), "r", "--payloads")):
        code, out = _mcc(capsys, *args)
        assert code == 0, out
        assert not set(out) & {"\x1b", "\x07", "\x9b", "\u202e"}, repr(out)
        assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in out
    assert "\\x9b31m\\u202e" in out and "\\x1b]8;;https://evil.example\\x1b" in out


def test_on_a_terminal_only_rich_styles_are_escape_sequences(tmp_path: Path) -> None:
    # A real pseudo-terminal: rich styles what it prints, and nothing captured gets through.
    store = CaptureStore(tmp_path)
    store.append("r", _line(f"gpt{OSC52}{MARKUP_LINK}", raw=f"data: {OSC52}\n"))
    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "300", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "model_call_capture.cli", "show", str(tmp_path), "r", "--payloads"],
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
    out = b"".join(chunks).decode()
    assert "\x1b[1m" in out  # rich saw a terminal: it styles the headings
    assert "\x1b]" not in out and "\x07" not in out  # no OSC sequence at all
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in out
    assert "[link=https://e.x]" in out


def test_validate_prints_file_names_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = tmp_path / f"evil{OSC52}.capture.jsonl"
    name.write_bytes(b"not json\n")
    code, out = _mcc(capsys, "validate", str(name))
    assert code == 1
    assert "\x1b" not in out and f"evil{safe_text(OSC52)}.capture.jsonl:1: invalid JSON" in out


def test_safe_text_escapes_controls_and_keeps_text() -> None:
    assert safe_text("a\x1b[31mb\x00\x7f\x85é€\t") == "a\\x1b[31mb\\x00\\x7f\\x85é€\t"
    assert safe_text("a\nb") == "a\\x0ab"
    assert safe_text("a\nb\r", multiline=True) == "a\nb\\x0d"
    assert safe_text("\u202eevil\u2066") == "\\u202eevil\\u2066"


def test_show_prints_damaged_lines_and_gaps_where_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # long escaped names on one line
    store = CaptureStore(tmp_path)
    first = json.loads(_line("gpt-4o"))
    first["gaps"] = [{"code": "raw_text_cut", "detail": f"kept {OSC52}"}]
    store.append("r", json.dumps(first).encode())
    with open(store.path("r"), "ab") as f:
        f.write(json.dumps({"dialect": OSC8}).encode() + b"\n")
    store.append("r", _line("gpt-4o"))
    code, out = _mcc(capsys, "show", str(tmp_path), "r")
    assert code == 0, out
    assert "\x1b" not in out and "\x07" not in out
    order = [
        out.find("─ call 0 ─"),
        out.find("gap: raw_text_cut: kept \\x1b]52;c;cm0gLXJmIH4=\\x07"),
        out.find("line 2: damaged: Invalid enum value '\\x1b]8;;https://evil.example"),
        out.find("─ call 2 ─"),
    ]
    assert -1 not in order and order == sorted(order), order
    assert "1 unreadable line (shown where they are)" in out


def test_tool_call_ids_are_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The ids of tool calls and of the tool results answering them were printed as they
    # came: a model (or a client) choosing an id like OSC52 wrote to the terminal.
    line = json.loads(_line("gpt-4o"))
    line["request"]["messages"] += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"a{OSC52}",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"a{OSC52}", "content": "sunny"},
    ]
    line["response"]["choices"][0]["message"]["tool_calls"][0]["id"] = f"t{OSC8}\x9b31m"
    CaptureStore(tmp_path).append("r", json.dumps(line).encode())
    code, out = _mcc(capsys, "show", str(tmp_path), "r")
    assert code == 0, out
    assert not set(out) & {"\x1b", "\x07", "\x9b"}, repr(out)
    assert f"a{safe_text(OSC52)}" in out  # the call and its result
    assert f"t{safe_text(OSC8)}\\x9b31m" in out


@pytest.mark.parametrize("command", [("stats", "--json"), ("show", "r", "--raw", "--payloads")])
def test_json_output_escapes_what_could_drive_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    # JSON escapes C0 controls but writes C1 controls (U+009B is CSI) and direction
    # overrides as they are; written as `\u` escapes they are the same JSON value.
    model = f"gpt{OSC52}\x9b31m\u202e\x85"
    CaptureStore(tmp_path).append("r", _line(model, finish="stop\u2066"))
    code, out = _mcc(capsys, command[0], str(tmp_path), *command[1:])
    assert code == 0, out
    assert not set(out) & {"\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\x85"}, repr(out)
    assert model in _strings(json.loads(out))  # the same value, read back


def _strings(value: object) -> list[str]:
    """Every string in a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _strings(item)]


def test_error_messages_are_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A path named by an error (a planted name the user tab-completed) is escaped too.
    name = tmp_path / f"evil{OSC52}"
    os.mkfifo(name)  # neither a file nor a directory: the command's own error names it
    code, out = _mcc(capsys, "stats", str(name))
    assert code == 1
    assert "\x1b" not in out and "\x07" not in out, repr(out)
    assert f"evil{safe_text(OSC52)}" in out
