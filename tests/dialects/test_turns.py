"""What each dialect says a call's turns are (`request_turns` / `response_turns`).

Expected turns are written out by hand from the payloads; hostile payloads (any JSON
value in any member) never raise.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from model_call_capture.dialects import DIALECTS
from model_call_capture.dialects.base import Part, Turn

from .conftest import json_values

CHAT_REQUEST = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "look first",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a cat"},
    ],
}
CHAT_RESPONSE = {
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "A cat.", "refusal": None}},
        {"index": 1, "message": {"role": "assistant", "content": "Cat."}},
    ]
}


def test_chat_turns() -> None:
    chat = DIALECTS["chat"]
    assert chat.request_turns(CHAT_REQUEST) == [
        Turn("system", [Part("text", "Be brief.")]),
        Turn(
            "user",
            [Part("text", "What is in"), Part("attachment", "data:image/png;base64", "image_url")],
        ),
        Turn(
            "assistant",
            [
                Part("reasoning", "look first"),
                Part("tool_call", name="look", call_id="c1", arguments="{}"),
            ],
        ),
        Turn("tool", [Part("tool_result", "a cat", call_id="c1")]),
    ]
    # One assistant turn per choice (n > 1 is kept, not merged).
    assert chat.response_turns(CHAT_RESPONSE) == [
        Turn("assistant", [Part("text", "A cat.")]),
        Turn("assistant", [Part("text", "Cat.")]),
    ]


def test_responses_turns() -> None:
    responses = DIALECTS["responses"]
    request = {
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "use the tool"}]},
            {"type": "function_call", "call_id": "f1", "name": "weather", "arguments": '{"c":1}'},
            {"type": "function_call_output", "call_id": "f1", "output": "rain"},
            {"type": "input_file", "filename": "x.pdf"},
        ],
    }
    assert responses.request_turns(request) == [
        Turn("system", [Part("text", "Be brief.")]),
        Turn("user", [Part("text", "Weather?")]),
        Turn(
            "assistant",
            [
                Part("reasoning", "use the tool"),
                Part("tool_call", name="weather", call_id="f1", arguments='{"c":1}'),
            ],
        ),
        Turn("tool", [Part("tool_result", "rain", call_id="f1")]),
        Turn("user", [Part("attachment", "x.pdf", "input_file")]),
    ]
    assert responses.request_turns({"input": "Hi"}) == [Turn("user", [Part("text", "Hi")])]
    response = {
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Rain."}],
            },
            {"type": "web_search_call", "id": "ws1", "status": "completed"},
        ]
    }
    assert responses.response_turns(response) == [
        Turn(
            "assistant",
            [
                Part("text", "Rain."),
                Part(
                    "other",
                    '{"type":"web_search_call","id":"ws1","status":"completed"}',
                    "web_search_call",
                ),
            ],
        )
    ]


def test_messages_turns() -> None:
    messages = DIALECTS["messages"]
    request = {
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "tool", "signature": "s"},
                    {"type": "tool_use", "id": "t1", "name": "weather", "input": {"c": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "rain",
                        "is_error": True,
                    },
                    {"type": "text", "text": "And tomorrow?"},
                    {"type": "image", "source": {"type": "url", "url": "https://x/cat.png"}},
                ],
            },
        ],
    }
    assert messages.request_turns(request) == [
        Turn("system", [Part("text", "Be brief.")]),
        Turn("user", [Part("text", "Weather?")]),
        Turn(
            "assistant",
            [
                Part("reasoning", "tool"),
                Part("tool_call", name="weather", call_id="t1", arguments='{"c":1}'),
            ],
        ),
        # The tool result travels in a user message; it becomes a tool turn of its own.
        Turn("tool", [Part("tool_result", "rain", call_id="t1", error=True)]),
        Turn(
            "user",
            [Part("text", "And tomorrow?"), Part("attachment", "https://x/cat.png", "image")],
        ),
    ]
    assert messages.response_turns({"content": [{"type": "text", "text": "Rain."}]}) == [
        Turn("assistant", [Part("text", "Rain.")])
    ]


_members = st.sampled_from(
    ["messages", "input", "instructions", "system", "choices", "message", "output", "content",
     "role", "type", "text", "tool_calls", "function", "arguments", "name", "id", "call_id",
     "output", "source", "image_url", "url", "summary", "tool_use_id", "is_error", "input_text",
     "prompt", "suffix"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(json_values(_members))
def test_turns_never_raise_whatever_the_payload_holds(payload: Any) -> None:
    for module in DIALECTS.values():
        for turns in (module.request_turns(payload), module.response_turns(payload)):
            assert all(isinstance(t, Turn) for t in turns)
            assert all(isinstance(p.text, str) for t in turns for p in t.parts)


def test_completions_turns() -> None:
    completions = DIALECTS["completions"]
    assert completions.request_turns({"prompt": "Once upon", "suffix": "The end."}) == [
        Turn("prompt", [Part("text", "Once upon"), Part("text", "The end.", name="suffix")])
    ]
    assert completions.request_turns({"prompt": ["a", [1, 2]]}) == [
        Turn("prompt", [Part("text", "a")]),
        Turn("prompt", [Part("other", "[1,2]", name="token_ids")]),
    ]
    assert completions.request_turns({"prompt": [1, 2, 3]}) == [
        Turn("prompt", [Part("other", "[1,2,3]", name="token_ids")])
    ]
    assert completions.request_turns({"prompt": [[1], [2]]}) == [
        Turn("prompt", [Part("other", "[1]", name="token_ids")]),
        Turn("prompt", [Part("other", "[2]", name="token_ids")]),
    ]
    assert completions.request_turns({"model": "m"}) == []
    response = {"choices": [{"index": 0, "text": " there"}, {"index": 1, "text": ""}, "junk"]}
    assert completions.response_turns(response) == [
        Turn("assistant", [Part("text", " there")]),
        Turn("assistant", []),
    ]
