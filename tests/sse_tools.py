"""An SSE oracle for the tests: a whole-input decoder written from the specification text."""

from __future__ import annotations

import re

from model_call_capture.sse import SseEvent

BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"\r\n|\r|\n")


def sse_oracle(body: bytes) -> list[SseEvent]:
    """The events of a whole body, read directly from the WHATWG "event stream interpretation".

    Plus the library's documented difference: an unterminated last event is delivered at the
    end of input.
    """
    if body.startswith(BOM):
        body = body[3:]
    lines = _LINE_END.split(body)
    events: list[SseEvent] = []
    data: list[bytes] = []
    event = ""
    retry: int | None = None
    last_id: str | None = None
    # A final piece without a line end is still a line here (end of input delivers it).
    for line in [*lines, b""]:
        if not line:
            if data:
                events.append(SseEvent(b"\n".join(data), event, last_id, retry))
            data, event, retry = [], "", None
            continue
        if line.startswith(b":"):
            continue
        if b":" in line:
            name, value = line.split(b":", 1)
            if value.startswith(b" "):
                value = value[1:]
        else:
            name, value = line, b""
        if name == b"data":
            data.append(value)
        elif name == b"event":
            event = value.decode("utf-8", "replace")
        elif name == b"id" and b"\0" not in value:
            last_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            retry = int(value)
    return events
