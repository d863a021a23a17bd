"""The script of a request: the scenario tokens its `model` or `x-mcc-scenario` header names."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SCENARIOS", "Script", "read_script"]

SCENARIOS: dict[str, str] = {
    "ok": "the ordinary reply (the default): reasoning, text, a tool call when tools are offered",
    "text": "text only, no tool call even when tools are offered",
    "incomplete": "stopped by the token limit (response.incomplete / finish_reason length / max_tokens)",
    "failed": "Responses: the stream ends with response.failed; the other dialects send an error event",
    "error_event": "the stream sends an error event after a few deltas (JSON: a 500 error body)",
    "truncate": "the stream (or JSON body) stops halfway; the response itself ends normally",
    "raise_before": "the app raises before sending anything",
    "raise_mid": "the app raises halfway through the body",
    "raise_after_terminal": "the app raises after the terminal event, before closing the response",
    "raise_after_response": "the app raises after the response is complete",
    "raise_timeout": "the app raises TimeoutError before sending anything",
    "raise_connection": "the app raises ConnectionError before sending anything",
    "raise_status": "the app raises httpx.HTTPStatusError carrying a 429 response and its body",
    "status_<code>": "an error reply with that HTTP status and the dialect's error body",
    "empty": "200 with an empty body",
    "no_content": "204 without a body",
    "text_body": "200 with a text/plain body that is not JSON",
    "json_array": "200 with the JSON array [1,2,3]",
    "gzip": "content-encoding gzip (streams: one flushed gzip member, chunk by chunk)",
    "deflate": "content-encoding deflate (zlib)",
    "br": "content-encoding br (brotli)",
    "slow": "20 ms between chunks",
    "keepalive": "SSE comments before the first event and between events",
    "crlf": "SSE lines end with CRLF",
    "split": "the body is sent in 7-byte chunks, splitting lines and UTF-8 characters",
    "uppercase_ct": "content-type Text/Event-Stream",
    "extra_after_terminal": "a comment and an unrelated event after the terminal event",
    "big_<kib>": "the text is about <kib> KiB, sent in 1 KiB deltas",
    "forever": "the stream never ends: deltas until the client disconnects",
    "hang": "nothing is sent until the client disconnects",
}
"""Scenario tokens accepted in `model` or the `x-mcc-scenario` header, with what each does."""


@dataclass(frozen=True, slots=True)
class Script:
    """The scenario tokens of one request; `token in script` asks for one."""

    tokens: frozenset[str] = frozenset()
    """Every token named, parameterised ones (`status_429`) as written."""
    status: int | None = None
    """The status of a `status_<code>` token, if any."""
    big_kib: int = 0
    """The size of a `big_<kib>` token's text, 0 for the ordinary text."""

    def __contains__(self, token: str) -> bool:
        return token in self.tokens


def read_script(model: object, header: bytes | None) -> Script:
    """The script named by the `x-mcc-scenario` header, else by the request's `model`."""
    source = header.decode("latin-1") if header else model if isinstance(model, str) else ""
    tokens = {t.strip() for t in source.split("+") if t.strip()}
    status = big = None
    for token in tokens:
        kind, _, value = token.partition("_")
        if kind == "status" and value.isdigit():
            status = int(value)
        elif kind == "big" and value.isdigit():
            big = int(value)
    return Script(frozenset(tokens), status, big or 0)
