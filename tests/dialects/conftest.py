"""Helpers shared by the dialect tests: derived fields, body forms and JSON value strategies."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import strategies as st

DERIVED_FIELDS = [
    "response_id",
    "model",
    "response_status",
    "finish_reason",
    "tokens_in",
    "tokens_out",
    "tokens_reasoning",
    "tokens_total",
    "cached_tokens",
    "cache_hit",
    "cache_creation_tokens",
    "tool_calls",
    "reasoning_content",
]
"""The `Derived` fields compared with what NeMo Gym derived from the same call."""


def as_json_text(body: Any) -> Any:
    """A body as a record read from a capture file holds it: JSON text (written by `json`, not our codec)."""
    return msgspec.Raw(json.dumps(body).encode())


def undescribed_properties(schema: dict[str, Any]) -> list[str]:
    """`Definition.property` for each property of the schema's `$defs` without a description."""
    return [
        f"{name}.{prop}"
        for name, definition in schema["$defs"].items()
        for prop, sub in definition.get("properties", {}).items()
        if not sub.get("description")
    ]


FORMS = pytest.mark.parametrize(
    "form", [lambda body: body, as_json_text], ids=["dict", "json text"]
)
"""derive takes a decoded body or its JSON text; both must give the same facts."""

# Characters JSON text writes each in its own way: plain, quote, backslash, newline, NUL,
# Latin-1, BMP and astral (a surrogate pair in `\u` escapes). A fixed alphabet also spares
# Hypothesis building its Unicode tables.
_text = st.text('a "\\\n\x00é€😀', max_size=5)
# Values a JSON text can hold: no NaN, no infinity (json.dumps would write `Infinity`, which
# no reader accepts, so the text and the dict forms could not agree).
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
)


def json_values(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """JSON values nested two containers deep, objects keyed by `keys`.

    A fixed depth rather than `st.recursive`: each input is a few dozen choices, so drawing
    stays cheap on a loaded machine (Hypothesis's too_slow health check times the first inputs
    drawn). Under a body's own keys, two levels reach the usage counters `derive` reads
    (`usage.input_tokens_details.cached_tokens`).
    """
    inner = _scalars | st.lists(_scalars, max_size=3) | st.dictionaries(keys, _scalars, max_size=3)
    return _scalars | st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4)


# --- the typed and general paths of the OpenAI streams of choices (chat, Completions) -----

EVERY_CHUNK = 1 << 30
"""`MISSES` under which every chunk is tried on the typed path, however many it refused."""


def _reassembled(dialect: str, body: bytes, pieces: int) -> bytes:
    """The whole result of reassembling `body` (cut into `pieces`) as canonical JSON bytes."""
    from model_call_capture.reassembly import StreamReassembler

    reassembler = StreamReassembler(dialect)
    step = max(1, len(body) // pieces)
    for start in range(0, len(body), step):
        reassembler.feed(body[start : start + step])
    result = reassembler.finish()
    return msgspec.json.encode(
        [result.response, result.terminal, result.truncated, result.error, result.dropped]
    )


def both_paths(
    dialect: str, body: bytes, pieces: int = 1, misses: int = EVERY_CHUNK
) -> tuple[bytes, bytes]:
    """`body` reassembled by the general path alone (`_choice_stream.MISSES = 0`), then with
    the typed path tried (`misses`: by default on every chunk), each as canonical JSON bytes
    (dict key order counts) with the terminal kind, the error and the notes."""
    from model_call_capture.dialects.chat import _choice_stream

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_choice_stream, "MISSES", 0)
        general = _reassembled(dialect, body, pieces)
        monkeypatch.setattr(_choice_stream, "MISSES", misses)
        typed = _reassembled(dialect, body, pieces)
    return general, typed


def sse_body(payloads: list[Any]) -> bytes:
    """A data-only stream: one `data:` event per payload (a str is sent as it is: raw JSON
    text), then `[DONE]`."""
    return b"".join(
        b"data: " + (p.encode() if isinstance(p, str) else json.dumps(p).encode()) + b"\n\n"
        for p in payloads
    ) + (b"data: [DONE]\n\n")


def typed_taken(dialect: str, body: bytes) -> int:
    """How many of the body's data events the typed path of `dialect` takes, every one tried
    on it in turn (none on the general path), into one stream state."""
    from model_call_capture.dialects import get_dialect

    state: Any = get_dialect(dialect).new_stream_state()
    return sum(state._take(part[6:]) for part in body.split(b"\n\n") if part.startswith(b"data: {"))
