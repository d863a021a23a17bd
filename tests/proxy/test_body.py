"""The request body, streamed and bounded (`proxy/_body.py`), fed ASGI messages in process.

`receive` here is the ASGI interface itself (a queue of the messages a server would
deliver), not a mock of anything; the same bounds through `mcc serve` over real sockets
are in test_security.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from model_call_capture.proxy._body import BodyTimeout, BodyTooLarge, ClientGone, RequestBody


def _receive(*messages: dict[str, Any]) -> Any:
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for message in messages:
        queue.put_nowait(message)
    return queue.get  # an empty queue never answers: a client that stalls


def _chunk(body: bytes, more: bool = True) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


async def _read(body: RequestBody) -> list[bytes]:
    return [chunk async for chunk in body]


def test_the_body_comes_chunk_by_chunk() -> None:
    body = RequestBody(
        _receive(_chunk(b"ab"), _chunk(b""), _chunk(b"cd", more=False)),
        limit=4,
        idle_timeout_s=5,
    )
    assert asyncio.run(_read(body)) == [b"ab", b"cd"]
    assert (body.received, body.complete, body.done.is_set()) == (4, True, True)


def test_an_empty_body() -> None:
    body = RequestBody(_receive({"type": "http.request"}), limit=0, idle_timeout_s=5)
    assert asyncio.run(_read(body)) == []
    assert body.complete


def test_past_the_limit_reading_stops() -> None:
    body = RequestBody(
        _receive(_chunk(b"abc"), _chunk(b"de", more=False)), limit=4, idle_timeout_s=5
    )
    with pytest.raises(BodyTooLarge, match=r"larger than this proxy accepts \(4 bytes\)"):
        asyncio.run(_read(body))
    assert body.done.is_set() and not body.complete


def test_a_stalled_body_times_out() -> None:
    body = RequestBody(_receive(_chunk(b"ab")), limit=100, idle_timeout_s=0.05)
    with pytest.raises(BodyTimeout, match=r"no request body received for 0\.05 s"):
        asyncio.run(_read(body))
    assert body.done.is_set()


def test_a_client_that_leaves() -> None:
    body = RequestBody(
        _receive(_chunk(b"ab"), {"type": "http.disconnect"}), limit=100, idle_timeout_s=5
    )
    with pytest.raises(ClientGone):
        asyncio.run(_read(body))


def test_drain_reads_what_the_upstream_did_not_take() -> None:
    body = RequestBody(
        _receive(_chunk(b"ab"), _chunk(b"cd"), _chunk(b"ef", more=False)),
        limit=100,
        idle_timeout_s=5,
    )

    async def first_then_drain() -> bytes:
        chunks = aiter(body)
        first = await anext(chunks)
        await body.drain()
        return first

    assert asyncio.run(first_then_drain()) == b"ab"
    assert (body.received, body.complete) == (6, True)
