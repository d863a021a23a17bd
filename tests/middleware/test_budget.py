"""The capture memory budget: its accounting alone, then calls through the middleware in
process, then real concurrent streams on uvicorn.

Past the budget a call's capture degrades (raw stream text dropped first, then the payload
cut, each with a `memory_budget` gap) and the client still gets every byte unchanged.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from model_call_capture.middleware._budget import BLOCK, BudgetShare, MemoryBudget
from servers import serve

from .conftest import call, capturing, chat_body, new_rollout, only_line

CHAT_PATH = "/v1/chat/completions"
SPENT = "the capture memory budget (capture_memory_budget_bytes) was spent"


# -- the accounting alone ------------------------------------------------------------------


def test_a_share_reserves_a_block_at_a_time_times_its_weight() -> None:
    budget = MemoryBudget(10 * BLOCK)
    share = BudgetShare(2)
    assert budget.grow(share, 0, 100)
    assert (share.held, share.limit, budget.used) == (2 * BLOCK, BLOCK, 2 * BLOCK)
    assert budget.grow(share, 100, BLOCK - 100)  # still inside the reservation: no new block
    assert budget.used == 2 * BLOCK
    assert budget.grow(share, BLOCK, 1)
    assert (share.limit, budget.used, budget.peak) == (2 * BLOCK, 4 * BLOCK, 4 * BLOCK)
    budget.release(share)
    assert (budget.used, budget.peak, share.held, share.limit) == (0, 4 * BLOCK, 0, 0)
    assert not budget.grow(share, 0, 1)  # a released share takes nothing more
    assert budget.used == 0


def test_a_nearly_spent_budget_grants_what_is_needed_and_no_more() -> None:
    budget = MemoryBudget(BLOCK + 10)
    first, second = BudgetShare(1), BudgetShare(1)
    assert budget.grow(first, 0, BLOCK)
    assert not budget.grow(second, 0, 11)
    assert budget.grow(second, 0, 10)
    assert (second.limit, budget.used) == (10, BLOCK + 10)


def test_dropping_a_copy_lets_the_same_reservation_keep_more() -> None:
    budget = MemoryBudget(3 * BLOCK)
    share = BudgetShare(3)
    assert budget.grow(share, 0, 1)
    assert share.limit == BLOCK and not budget.grow(share, BLOCK, 1)
    share.reweigh(1)
    assert share.limit == 3 * BLOCK and budget.grow(share, BLOCK, 1)


def test_a_spilled_share_holds_one_copy_and_a_fixed_part_until_read_back() -> None:
    budget = MemoryBudget(100 * BLOCK)
    share = BudgetShare(3)
    assert budget.grow(share, 0, 10 * BLOCK)
    assert (share.held, share.limit) == (30 * BLOCK, 10 * BLOCK)
    share.reweigh(1, 4 * BLOCK)  # spilled: the reassembly once, 4 blocks still in memory
    assert (share.held, share.limit) == (30 * BLOCK, 26 * BLOCK)
    assert budget.grow(share, 26 * BLOCK, 1)  # one byte past it: one more block
    assert (share.held, share.limit, budget.used) == (31 * BLOCK, 27 * BLOCK, 31 * BLOCK)
    share.reweigh(3)  # read back for the line: three copies of the 27 blocks kept
    assert share.limit == 31 * BLOCK // 3
    assert budget.grow(share, 27 * BLOCK, 0)
    assert (share.held, share.limit, budget.used) == (81 * BLOCK, 27 * BLOCK, 81 * BLOCK)
    small = MemoryBudget(40 * BLOCK)
    other = BudgetShare(1)
    assert small.grow(other, 0, 30 * BLOCK)
    other.reweigh(3)
    assert not small.grow(other, 30 * BLOCK, 0)  # 90 blocks do not fit in 40
    assert small.used == 30 * BLOCK


def test_a_budget_of_zero_keeps_nothing() -> None:
    assert not MemoryBudget(0).grow(BudgetShare(1), 0, 1)


# -- through the middleware, in process ----------------------------------------------------


def _chat_event(text: str) -> bytes:
    chunk = {
        "id": "chatcmpl-b",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


def stream_chunks(events: int, text: str = "word ") -> list[bytes]:
    """A chat stream of `events` content deltas, one SSE event per chunk, ending well."""
    end = {
        "id": "chatcmpl-b",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    return [
        *(_chat_event(text) for _ in range(events)),
        b"data: " + json.dumps(end).encode() + b"\n\n",
        b"data: [DONE]\n\n",
    ]


def streaming_app(chunks: list[bytes], content_type: bytes = b"text/event-stream") -> Any:
    """An app that reads the request, then sends `chunks` one message each.

    It yields to the event loop between chunks, as a model server waiting for its next
    tokens does: on loopback a send never blocks, so without it streams would not overlap.
    """

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body", False):
            pass
        headers = [(b"content-type", content_type)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


def test_under_the_budget_nothing_changes(tmp_path: Path) -> None:
    chunks = stream_chunks(200)
    mw = capturing(
        tmp_path,
        app=streaming_app(chunks),
        capture_stream_raw="always",
        capture_memory_budget_bytes=1 << 20,
    )
    rollout = new_rollout()
    reply = call(mw, f"/ng-rollout/{rollout}{CHAT_PATH}", json.dumps(chat_body()).encode())
    assert reply.body == b"".join(chunks)
    line = only_line(tmp_path, rollout)
    assert line["response_raw"] == b"".join(chunks).decode() and "gaps" not in line
    assert (mw.budget.used, 0 < mw.budget.peak <= 1 << 20) == (0, True)


def test_past_the_budget_a_stream_drops_its_raw_text_first(tmp_path: Path) -> None:
    chunks = stream_chunks(4000)  # about 600 KB: the raw text does not fit, the reassembly does
    stream = b"".join(chunks)
    budget = 3 * BLOCK + 2 * BLOCK  # the request's share, then the stream's
    mw = capturing(
        tmp_path,
        app=streaming_app(chunks),
        capture_stream_raw="always",
        capture_memory_budget_bytes=budget * 4,
    )
    rollout = new_rollout()
    reply = call(mw, f"/ng-rollout/{rollout}{CHAT_PATH}", json.dumps(chat_body()).encode())
    assert reply.body == stream  # the client got every byte, unchanged
    line = only_line(tmp_path, rollout)
    assert line["error_category"] is None and "capture_cut" not in line
    assert line["response"]["choices"][0]["message"]["content"] == "word " * 4000
    assert "response_raw" not in line
    ((gap,),) = [line["gaps"]]
    assert gap["code"] == "memory_budget"
    assert gap["detail"].startswith("response_raw: the raw stream text was dropped after ")
    assert gap["detail"].endswith(SPENT)
    assert mw.budget.used == 0 and mw.budget.peak <= budget * 4


def test_past_the_budget_a_stream_is_cut_but_served_whole(tmp_path: Path) -> None:
    chunks = stream_chunks(4000, "x" * 200)  # the reassembly alone passes the budget
    mw = capturing(
        tmp_path,
        app=streaming_app(chunks),
        capture_stream_raw="on_failure",
        capture_memory_budget_bytes=8 * BLOCK,
    )
    rollout = new_rollout()
    reply = call(mw, f"/ng-rollout/{rollout}{CHAT_PATH}", json.dumps(chat_body()).encode())
    assert reply.body == b"".join(chunks)
    line = only_line(tmp_path, rollout)
    assert line["capture_cut"] is True and line["error_category"] is None
    assert [g["code"] for g in line["gaps"]] == ["memory_budget", "memory_budget"]
    assert line["gaps"][0]["detail"].startswith("response_raw: the raw stream text was dropped")
    assert line["gaps"][1]["detail"].startswith("response: cut after ")
    assert "response_raw" not in line
    content = line["response"]["choices"][0]["message"]["content"]
    assert 0 < len(content) < 4000 * 200 and set(content) == {"x"}
    assert mw.budget.used == 0 and mw.budget.peak <= 8 * BLOCK


def test_past_the_budget_a_json_reply_and_a_request_are_cut(tmp_path: Path) -> None:
    reply_body = json.dumps({"id": "c", "pad": "y" * (1 << 20)}).encode()
    request = json.dumps(chat_body(pad="z" * (1 << 20))).encode()
    mw = capturing(
        tmp_path,
        app=streaming_app([reply_body], b"application/json"),
        capture_memory_budget_bytes=4 * BLOCK,
    )
    rollout = new_rollout()
    reply = call(mw, f"/ng-rollout/{rollout}{CHAT_PATH}", [request[:70000], request[70000:]])
    assert reply.body == reply_body
    line = only_line(tmp_path, rollout)
    # The first piece of the request fits; a piece that does not fit is not kept at all.
    assert (line["capture_cut"], line["request"]) == (True, None)
    assert line["request_raw"] == request[:70000].decode()
    assert (line["response"], line["error_category"]) == (None, None)
    assert "response_raw" not in line
    assert line["gaps"] == [
        {"code": "memory_budget", "detail": f"request: cut after 70000 bytes: {SPENT}"},
        {"code": "memory_budget", "detail": f"response: cut after 0 bytes: {SPENT}"},
    ]
    assert mw.budget.used == 0


def test_a_budget_of_zero_records_every_call_without_payloads(tmp_path: Path) -> None:
    chunks = stream_chunks(3)
    mw = capturing(
        tmp_path,
        app=streaming_app(chunks),
        capture_stream_raw="always",
        capture_memory_budget_bytes=0,
    )
    rollout = new_rollout()
    reply = call(mw, f"/ng-rollout/{rollout}{CHAT_PATH}", b'{"model":"m"}')
    assert reply.body == b"".join(chunks)
    line = only_line(tmp_path, rollout)
    assert (line["request"], line["status_code"], line["capture_cut"]) == (None, 200, True)
    assert [g["detail"].split(":")[0] for g in line["gaps"]] == [
        "request",
        "response_raw",
        "response",
    ]


# -- real concurrent streams -----------------------------------------------------------------


async def _read_stream(client: httpx.AsyncClient, url: str) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    async with client.stream("POST", url, content=json.dumps(chat_body(stream=True))) as reply:
        async for piece in reply.aiter_raw():
            digest.update(piece)
            size += len(piece)
    return size, digest.hexdigest()


@pytest.mark.parametrize("streams", [12])
def test_concurrent_streams_stay_within_the_budget_and_reach_clients_whole(
    streams: int, tmp_path: Path
) -> None:
    chunks = stream_chunks(12_000)  # about 1.9 MB each, raw text kept: ~5.6 MB of budget each
    stream = b"".join(chunks)
    limit = 8 << 20
    mw = capturing(
        tmp_path,
        app=streaming_app(chunks),
        capture_stream_raw="always",
        capture_memory_budget_bytes=limit,
    )
    rollouts = [new_rollout() for _ in range(streams)]

    async def run(url: str) -> list[tuple[int, str]]:
        async with httpx.AsyncClient(timeout=120) as client:
            return await asyncio.gather(
                *(_read_stream(client, f"{url}/ng-rollout/{r}{CHAT_PATH}") for r in rollouts)
            )

    with serve(mw) as server:
        received = asyncio.run(run(server.url))
    assert received == [(len(stream), hashlib.sha256(stream).hexdigest())] * streams
    lines = [only_line(tmp_path, r) for r in rollouts]
    for line in lines:  # each line is whole, or says what it left out
        assert line["error_category"] is None
        gaps = [g["detail"].split(":")[0] for g in line.get("gaps", [])]
        assert all(g["code"] == "memory_budget" for g in line.get("gaps", []))
        if "response_raw" in gaps:
            assert "response_raw" not in line
        else:
            assert line["response_raw"] == stream.decode()
        if "response" in gaps:
            assert line["capture_cut"] is True
        else:
            assert line["response"]["choices"][0]["message"]["content"] == "word " * 12_000
    assert any("gaps" in line for line in lines)
    assert limit // 2 <= mw.budget.peak <= limit and mw.budget.used == 0
