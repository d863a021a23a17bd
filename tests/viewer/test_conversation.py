"""Records into the conversation a person reads: each turn once, in order, capped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from conftest import COMPLETIONS_QUESTIONS, CompletionsRollout
from model_call_capture.dialects.base import StatedError
from model_call_capture.store import CaptureStore
from model_call_capture.viewer import CallView, Entries, Limits, build_conversation
from model_call_capture.viewer._entries import DamagedLine

from .conftest import chat_line


def _flat(calls: list[CallView]) -> list[tuple[str, ...]]:
    """(where, role, kind, text or name) of every part, in page order."""
    out: list[tuple[str, ...]] = []
    for call in calls:
        for where, turns in (("in", call.input), (f"call {call.index}", call.output)):
            for turn in turns:
                for p in turn.parts:
                    out.append((where, turn.role, p.kind, p.name or p.text))
    return out


def test_the_demo_rollout_reads_as_one_conversation(demo_calls: Path) -> None:
    store = CaptureStore(demo_calls)
    conversation = build_conversation(
        "1-0", Entries(store.rollout("1-0"), max_line_bytes=store.max_line_bytes)
    )
    calls = [i for i in conversation.items if isinstance(i, CallView)]
    assert (conversation.calls, conversation.damaged, len(calls)) == (6, 0, 6)
    answer = "It is 18 °C with light rain in Lyon: take a raincoat and an umbrella."
    reasoning = "The user asks about the weather; the get_weather tool can tell me."
    assert _flat(calls) == [
        ("in", "user", "text", "Is it a good day for a picnic in Lyon?"),
        ("call 0", "assistant", "reasoning", reasoning),
        ("call 0", "assistant", "text", "Let me check the weather for you — one moment."),
        ("call 0", "assistant", "tool_call", "get_weather"),
        # Call 1 sends the history back: only the tool result is new.
        ("in", "tool", "tool_result", "Lyon: 18 C, light rain"),
        ("call 1", "assistant", "reasoning", reasoning),
        ("call 1", "assistant", "text", answer),
        # Call 2 (responses) starts over with the first question: nothing new to show.
        ("call 2", "assistant", "reasoning", reasoning),
        ("call 2", "assistant", "text", answer),
        ("in", "user", "text", "Shorter, please."),
        ("call 3", "assistant", "reasoning", reasoning),
        ("call 3", "assistant", "text", answer),
        ("call 4", "assistant", "reasoning", reasoning),
        ("call 4", "assistant", "text", answer),
        ("in", "user", "text", "Shorter, please."),
        ("call 5", "assistant", "reasoning", reasoning),
        ("call 5", "assistant", "text", answer),
    ]
    assert [c.input_note for c in calls] == [
        None,
        None,
        "no new input: this request sends the first turn above again",
        None,
        "no new input: this request sends the first turn above again",
        None,
    ]
    tool_call = calls[0].output[0].parts[2]
    assert tool_call.arguments == '{\n  "city": "Lyon"\n}'  # pretty JSON
    result = calls[1].input[0].parts[0]
    assert (result.answers, result.call_id) == ("get_weather", tool_call.call_id)
    assert [c.dialect for c in calls] == [
        "chat",
        "chat",
        "responses",
        "responses",
        "messages",
        "messages",
    ]
    assert [c.finish_reason for c in calls] == [
        "tool_calls",
        "stop",
        None,
        None,
        "end_turn",
        "end_turn",
    ]
    assert [c.tokens_out for c in calls] == [40] * 6


def test_damaged_lines_stay_where_they_are(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", chat_line(user="one"))
    with open(store.path("r"), "ab") as f:
        f.write(b"{oops\n")
    store.append("r", chat_line(user="two"))
    conversation = build_conversation(
        "r", Entries(store.rollout("r"), max_line_bytes=store.max_line_bytes)
    )
    kinds = [
        (type(i).__name__, getattr(i, "index", getattr(i, "line", None)))
        for i in conversation.items
    ]
    assert kinds == [("CallView", 0), ("DamagedLine", 2), ("CallView", 2)]  # line 2 of the file
    damaged = conversation.items[1]
    assert isinstance(damaged, DamagedLine) and damaged.reason.startswith("JSON is malformed")
    second = conversation.items[2]
    assert isinstance(second, CallView)
    assert second.input_note == "this request does not continue the history above"
    assert second.input[0].parts[0].text == "two"


def test_the_gaps_a_line_records_are_on_its_call(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    line = json.loads(chat_line())
    line["gaps"] = [{"code": "raw_text_cut", "detail": "kept 64 MiB"}, {"code": "redacted_raw"}]
    line["stream"] = True
    store.append("r", json.dumps(line).encode())
    store.append("r", chat_line())
    conversation = build_conversation(
        "r", Entries(store.rollout("r"), max_line_bytes=store.max_line_bytes)
    )
    first, second = conversation.items
    assert isinstance(first, CallView) and isinstance(second, CallView)
    assert [(g.code, g.detail) for g in first.gaps] == [
        ("raw_text_cut", "kept 64 MiB"),
        ("redacted_raw", msgspec.UNSET),
    ]
    assert (first.stream, second.gaps, second.stream) == (True, [], None)


def test_a_huge_rollout_is_cut_with_notes(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for i in range(5):
        store.append("r", chat_line(user=f"{i} " + "x" * 1000, answer="y" * 50))
    limits = Limits(calls=3, part_chars=100, total_chars=250, cut_part_chars=10)
    conversation = build_conversation(
        "r", Entries(store.rollout("r"), max_line_bytes=store.max_line_bytes), limits=limits
    )
    calls = [i for i in conversation.items if isinstance(i, CallView)]
    assert (conversation.calls, len(calls)) == (5, 3)
    texts = [(p.text, p.cut) for c in calls for t in c.input + c.output for p in t.parts]
    # 100 characters while the page's 250 last (spent in the third part), then 10 each:
    # what is left out is counted, not kept.
    assert texts == [
        ("0 " + "x" * 98, 902),
        ("y" * 50, 0),
        ("1 " + "x" * 98, 902),
        ("y" * 10, 40),
        ("2 " + "x" * 8, 992),
        ("y" * 10, 40),
    ]
    assert conversation.notes == [
        "2 later calls not shown (a page shows 3)",
        "5 long texts cut short; the raw tab of a call has them",
    ]


def test_a_call_of_many_parts_is_cut_with_a_note(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    line = json.loads(chat_line())
    calls = [{"id": f"t{i}", "function": {"name": "f", "arguments": "{}"}} for i in range(500)]
    line["response"]["choices"][0]["message"]["tool_calls"] = calls
    store.append("r", json.dumps(line).encode())
    limits = Limits(parts=100)
    (call,) = build_conversation(
        "r", Entries(store.rollout("r"), max_line_bytes=store.max_line_bytes), limits=limits
    ).items
    assert isinstance(call, CallView)
    # The user turn, then the answer's text and its first 98 tool calls.
    assert [len(t.parts) for t in call.input + call.output] == [1, 99]
    assert call.output[0].parts[-1].call_id == "t97"
    notes = build_conversation(
        "r", Entries(store.rollout("r"), max_line_bytes=store.max_line_bytes), limits=limits
    ).notes
    assert notes == ["402 parts of turns not shown (a page shows 100)"]


def _error_line(
    response: object, raw: str | None, *, dialect: str, status: int, stream: bool
) -> bytes:
    line: dict[str, object] = {
        "dialect": dialect,
        "status_code": status,
        "error_category": "upstream_error" if status >= 500 or stream else "rate_limit",
        "request": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        "response": response,
        "stream": stream,
    }
    if raw is not None:
        line["response_raw"] = raw
    return json.dumps(line).encode()


CHAT_STREAM_ERROR = (
    'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
    '"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n'
    'data: {"error":{"message":"The server is overloaded","type":"server_error","code":503}}\n\n'
    "data: [DONE]\n\n"
)
MESSAGES_STREAM_ERROR = (
    "event: message_start\n"
    'data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
    '"model":"claude","content":[],"usage":{"input_tokens":3,"output_tokens":0}}}\n\n'
    "event: error\n"
    'data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
)
RESPONSES_STREAM_ERROR = (
    "event: error\n"
    'data: {"type":"error","code":"server_error","message":"The server had an error","param":null}\n\n'
)


def test_a_call_shows_the_error_its_api_stated(tmp_path: Path, demo_calls: Path) -> None:
    demo_store = CaptureStore(demo_calls)
    demo = build_conversation("3-0", Entries(demo_store.rollout("3-0")))
    first = next(i for i in demo.items if isinstance(i, CallView))
    assert (first.status_code, first.error) == (
        429,
        StatedError(message="scripted error", type="rate_limit_error", code="rate_limit_exceeded"),
    )
    store = CaptureStore(tmp_path)
    lines = [
        _error_line(None, CHAT_STREAM_ERROR, dialect="chat", status=200, stream=True),
        _error_line(None, MESSAGES_STREAM_ERROR, dialect="messages", status=200, stream=True),
        _error_line(None, RESPONSES_STREAM_ERROR, dialect="responses", status=200, stream=True),
        _error_line(
            {"object": "response", "status": "failed", "output": [],
             "error": {"code": "rate_limit_exceeded", "message": "Too many tokens"}},
            None, dialect="responses", status=200, stream=False,
        ),
        _error_line(
            {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: required"}},
            None, dialect="messages", status=400, stream=False,
        ),
        _error_line(None, "<html>\n<h1>502 Bad Gateway</h1>\n</html>", dialect="chat", status=502, stream=False),
        _error_line({"error": "model not loaded"}, None, dialect="chat", status=503, stream=False),
        chat_line(answer="fine"),
    ]  # fmt: skip
    for line in lines:
        store.append("r", line)
    conversation = build_conversation("r", Entries(store.rollout("r")))
    errors = [i.error for i in conversation.items if isinstance(i, CallView)]
    assert errors == [
        StatedError(message="The server is overloaded", type="server_error", code="503"),
        StatedError(message="Overloaded", type="overloaded_error"),
        StatedError(message="The server had an error", code="server_error"),
        StatedError(message="Too many tokens", code="rate_limit_exceeded"),
        StatedError(message="max_tokens: required", type="invalid_request_error"),
        StatedError(message="<html> <h1>502 Bad Gateway</h1> </html>"),
        StatedError(message="model not loaded"),
        None,
    ]


def _completion_line(prompt: Any, text: str, started_at: float) -> bytes:
    """One legacy Completions capture line: its prompt (a text or ids) and one choice."""
    return json.dumps(
        {
            "model_call_id": f"call-{started_at}",
            "dialect": "completions",
            "started_at": started_at,
            "status_code": 200,
            "request": {"model": "m", "prompt": prompt},
            "response": {"id": "cmpl-1", "choices": [{"index": 0, "text": text}]},
        }
    ).encode()


def test_a_completion_prompt_that_goes_on_from_the_last_is_shown_from_there(
    tmp_path: Path,
) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _completion_line("Q: Paris?\nA:", " Rain.", 1.0))
    store.append("r", _completion_line("Q: Paris?\nA: Rain.\nQ: Rome?\nA:", " Sun.", 2.0))
    store.append("r", _completion_line("Q: Oslo?\nA:", " Snow.", 3.0))  # a new conversation
    items = build_conversation(
        "r", Entries(store.rollout("r"), max_line_bytes=store.max_line_bytes)
    ).items
    assert [
        (c.input_note, [(t.role, [p.text for p in t.parts]) for t in c.input])
        for c in items
        if isinstance(c, CallView)
    ] == [
        (None, [("prompt", ["Q: Paris?\nA:"])]),
        ("the prompt above and its answer, then this", [("prompt", ["\nQ: Rome?\nA:"])]),
        ("this request does not continue the history above", [("prompt", ["Q: Oslo?\nA:"])]),
    ]


def test_token_id_prompts_of_a_token_in_token_out_rollout_show_their_new_ids(
    completions_rollout: CompletionsRollout,
) -> None:
    store = CaptureStore(completions_rollout.directory)
    rollout = completions_rollout.rollout_id
    items = build_conversation(
        rollout, Entries(store.rollout(rollout), max_line_bytes=store.max_line_bytes)
    ).items
    calls = [c for c in items if isinstance(c, CallView)]
    assert json.loads(calls[0].input[0].parts[0].text) == completions_rollout.seen[0][0]
    for call, question in zip(calls[1:], COMPLETIONS_QUESTIONS[1:], strict=True):
        new = list(f"Q: {question}\nA:".encode())
        assert call.input_note == f"the prompt above and its answer, then {len(new)} new token ids"
        assert [p.name for t in call.input for p in t.parts] == ["token_ids"]
        assert json.loads(call.input[0].parts[0].text) == new
