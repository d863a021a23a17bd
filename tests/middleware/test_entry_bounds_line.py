"""A stream past its dialect's entry bound (`MAX_ENTRIES`) reaches the line as gone wrong.

The stream state drops the new entries past the bound with a `dropped` note; the
middleware then keeps the stream's raw text (`capture_stream_raw: on_failure`, the
default), so the line carries the bounded response and the evidence of what was cut. A
stream of exactly the bound is a stream that ended well: no raw text.
"""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import PATHS, call, capturing, new_rollout, only_line
from .test_raw import pieces, replay_app

BOUND = 4096


def _choices(count: int) -> bytes:
    lines = [
        b"data: "
        + json.dumps({"id": "c", "choices": [{"index": i, "delta": {"content": "x"}}]}).encode()
        + b"\n\n"
        for i in range(count)
    ]
    return b"".join(lines) + b"data: [DONE]\n\n"


def test_a_chat_stream_past_the_bound_keeps_its_raw_text(tmp_path: Path) -> None:
    lines = {}
    for count in (BOUND, BOUND + 1):
        stream = _choices(count)
        mw = capturing(tmp_path, app=replay_app(pieces(stream)))
        rollout = new_rollout()
        reply = call(mw, f"/ng-rollout/{rollout}{PATHS['chat']}", b'{"model":"m"}')
        assert reply.body == stream  # the client got every byte either way
        lines[count] = (only_line(tmp_path, rollout), stream)
    kept, _ = lines[BOUND]
    assert len(kept["response"]["choices"]) == BOUND
    assert "response_raw" not in kept
    past, stream = lines[BOUND + 1]
    assert len(past["response"]["choices"]) == BOUND
    assert past["response_raw"] == stream.decode()
    assert past["error_category"] is None
