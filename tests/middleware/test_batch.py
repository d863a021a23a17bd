"""Stream chunks after the first token: sent at once, reassembled in batches (`_response`).

The real middleware and reassembler on real streams; the reassembler is wrapped (the only
stand-in) to log what it is fed.
"""

from __future__ import annotations

import errno
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS
from model_call_capture.middleware import _response
from model_call_capture.reassembly import StreamReassembler

from .conftest import (
    Message,
    capture_file,
    capturing,
    new_rollout,
    only_line,
    post,
    sent_after_the_line,
    sent_before_the_line,
    sse_app,
)


def _chunk(text: str) -> bytes:
    delta = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(delta).encode() + b"\n\n"


def _words(n: int) -> list[str]:
    return [f" w{i}" for i in range(n)]


@pytest.fixture
def fed(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """What the reassembler of each captured call is fed, feed by feed."""
    log: list[bytes] = []

    class WatchedReassembler(StreamReassembler):
        def feed(self, data: bytes | bytearray | memoryview) -> None:
            log.append(bytes(data))
            super().feed(data)

    monkeypatch.setattr(_response, "StreamReassembler", WatchedReassembler)
    return log


def test_a_long_stream_is_fed_in_order_in_batches_of_at_most_batch_bytes(
    tmp_path: Path, fed: list[bytes]
) -> None:
    words = _words(600)  # about 50 KB of chunks of about 80 bytes
    chunks = [_chunk(word) for word in words] + [b"data: [DONE]\n\n"]
    rollout = new_rollout()
    reply = post(capturing(tmp_path, app=sse_app(chunks)), rollout, b"{}")
    assert [bytes(m["body"]) for m, _ in reply.body_messages] == [*chunks, b""]
    # Every byte once, in order; the first chunk alone (it carries the first token).
    assert b"".join(fed) == b"".join(chunks)
    assert fed[0] == chunks[0]
    assert all(len(batch) <= _response.BATCH_BYTES for batch in fed)
    total = sum(len(chunk) for chunk in chunks)
    assert total // _response.BATCH_BYTES + 1 <= len(fed) < 20
    line = only_line(tmp_path, rollout)
    assert line["response"]["choices"][0]["message"]["content"] == "".join(words)
    assert line["error_category"] is None


def test_a_client_gone_mid_stream_records_every_chunk_it_was_sent(
    tmp_path: Path, fed: list[bytes]
) -> None:
    words = _words(80)
    chunks = [_chunk(word) for word in words] + [b"data: [DONE]\n\n"]
    sent = [0]

    def client_gone_after_50(message: Message) -> None:
        if message["type"] == "http.response.body":
            sent[0] += 1
            if sent[0] > 50:
                raise OSError(errno.EPIPE, "Broken pipe")

    rollout = new_rollout()
    reply = post(
        capturing(tmp_path, app=sse_app(chunks)), rollout, b"{}", on_send=client_gone_after_50
    )
    assert len(reply.body_messages) == 50
    line = only_line(tmp_path, rollout)
    assert line["error_category"] == "cancelled"
    # The 50 chunks the client got and the 51st the server failed to deliver: the ones
    # still waiting for their batch when the client left are in the record.
    assert line["response_raw"] == b"".join(chunks[:51]).decode()
    assert line["response"]["choices"][0]["message"]["content"] == "".join(words[:51])
    assert len(fed) == 2  # the first chunk, then the batch the end of the call fed


def test_the_first_token_is_timed_by_the_chunk_that_carried_it(
    tmp_path: Path, fed: list[bytes]
) -> None:
    # The first content chunk, then a pause before the rest: the time to first token is
    # that chunk's time, not the time its batch (or the call's end) was reassembled.
    chunks = [_chunk("Hi")] + [_chunk(word) for word in _words(20)] + [b"data: [DONE]\n\n"]
    rollout = new_rollout()
    post(capturing(tmp_path, app=sse_app(chunks, pause_after_first=0.2)), rollout, b"{}")
    line = only_line(tmp_path, rollout)
    assert line["latency_ms"] >= 200
    assert line["latency_ttft_ms"] < 100
    assert len(fed) == 2


def _completing_chunk(dialect: str, chunks: list[bytes]) -> int:
    """The index of the chunk that completes the terminal event (len(chunks) if none).

    The oracle: the reassembler fed one chunk at a time and asked after each, as the
    middleware did before it fed batches.
    """
    reassembler = StreamReassembler(dialect)
    for i, chunk in enumerate(chunks):
        reassembler.feed(chunk)
        if reassembler.terminal is not None:
            return i
    return len(chunks)


_STREAMS = {
    dialect: sorted(CORPUS.glob(f"streams/{dialect}/*.sse"))
    for dialect in ("chat", "responses", "messages")
}


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_chunking_holds_exactly_the_chunk_that_completes_the_terminal_event(
    tmp_path: Path, data: st.DataObject
) -> None:
    # A recorded stream of any dialect, cut at arbitrary points (markers and events
    # straddle chunks): everything before the chunk that completes the terminal event
    # goes out before the line is on disk, that chunk and everything after only once it is.
    dialect = data.draw(st.sampled_from(sorted(_STREAMS)))
    stream = data.draw(st.sampled_from(_STREAMS[dialect])).read_bytes()
    cuts = data.draw(st.lists(st.integers(1, max(len(stream) - 1, 1)), max_size=40))
    # and near the end, where the terminal markers are: cuts inside them are likely
    cuts += data.draw(st.lists(st.integers(max(len(stream) - 120, 1), len(stream)), max_size=8))
    bounds = [0, *sorted(set(cuts)), len(stream)]
    chunks = [stream[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    k = _completing_chunk(dialect, chunks)
    rollout = new_rollout()
    reply = post(
        capturing(tmp_path, app=sse_app(chunks)),
        rollout,
        b"{}",
        dialect,
        watch=capture_file(tmp_path, rollout),
    )
    assert (sent_before_the_line(reply), sent_after_the_line(reply)) == (
        chunks[:k],
        [*chunks[k:], b""],
    )
