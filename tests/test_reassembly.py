"""Stream reassembly of all three dialects over the whole recorded corpus.

These tests do not check what each dialect builds (its own test module does); they check
what must hold for any dialect: the transport chunking never changes the result, the
one-shot form equals the incremental one, and no input makes the reassembler raise.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, FULL_CORPUS, state_failures
from model_call_capture import reassembly
from model_call_capture.dialects import DIALECTS as DIALECT_MODULES
from model_call_capture.reassembly import StreamReassembler, StreamResult, reassemble_stream
from model_call_capture.sse import SseDecoder, SseEvent

DIALECTS = ("responses", "chat", "messages")
"""The dialects of the recorded corpus (the Completions dialect has no recorded streams there)."""
STREAMS = sorted(CORPUS.glob("streams/*/*.sse"))
"""Every recorded stream as (path); the dialect is the folder name."""
SMALL = [p for p in STREAMS if p.stat().st_size <= 8_000]


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def reassemble(dialect: str, chunks: list[bytes]) -> StreamResult:
    """Feed `chunks` one by one into a fresh reassembler and finish."""
    reassembler = StreamReassembler(dialect)
    for chunk in chunks:
        reassembler.feed(chunk)
    return reassembler.finish()


def cut(body: bytes, positions: list[int]) -> list[bytes]:
    """`body` cut at the given positions (any order, duplicates and out-of-range ignored)."""
    bounds = [0, *sorted({p for p in positions if 0 < p < len(body)}), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


def awkward_positions(body: bytes) -> list[int]:
    """Cut points that a careless decoder gets wrong.

    Between the CR and LF of every CRLF, inside every `data:` and `event:` field name, right
    after every field colon, and inside every multi-byte UTF-8 character.
    """
    positions: list[int] = []
    for needle, offset in ((b"\r\n", 1), (b"data:", 2), (b"event:", 3), (b":", 1), (b"\n\n", 1)):
        start = body.find(needle)
        while start != -1:
            positions.append(start + offset)
            start = body.find(needle, start + 1)
    positions += [i + 1 for i, byte in enumerate(body) if byte >= 0xC0]  # after a UTF-8 lead byte
    return positions


def test_corpus_has_streams_of_every_dialect() -> None:
    assert {p.parent.name for p in STREAMS} == set(DIALECTS)
    if FULL_CORPUS:
        assert len(STREAMS) == 319


@pytest.mark.parametrize("path", STREAMS, ids=_id)
def test_awkward_splits_give_the_same_result(path: Path) -> None:
    body = path.read_bytes()
    dialect = path.parent.name
    whole = reassemble(dialect, [body])
    assert reassemble(dialect, cut(body, awkward_positions(body))) == whole
    assert reassemble(dialect, cut(body, list(range(7, len(body), 7)))) == whole
    assert reassemble(dialect, cut(body, list(range(4096, len(body), 4096)))) == whole


@pytest.mark.parametrize("path", SMALL, ids=_id)
def test_byte_at_a_time_gives_the_same_result(path: Path) -> None:
    body = path.read_bytes()
    dialect = path.parent.name
    assert reassemble(dialect, [body[i : i + 1] for i in range(len(body))]) == reassemble(
        dialect, [body]
    )


@pytest.mark.parametrize("path", STREAMS, ids=_id)
def test_one_shot_equals_incremental(path: Path) -> None:
    body = path.read_bytes()
    dialect = path.parent.name
    reassembler = StreamReassembler(dialect)
    for chunk in cut(body, list(range(1000, len(body), 1000))):
        reassembler.feed(chunk)
    assert reassemble_stream(dialect, body) == reassembler.finish().response


def test_finish_is_idempotent() -> None:
    reassembler = StreamReassembler("chat")
    reassembler.feed(
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}\n\n'
    )
    first = reassembler.finish()
    assert reassembler.finish() is first


def test_unknown_dialect_is_refused_with_the_known_names() -> None:
    with pytest.raises(
        ValueError,
        match=r"unknown dialect 'embeddings'; expected one of "
        r"\['chat', 'completions', 'messages', 'responses'\]",
    ):
        StreamReassembler("embeddings")


def test_the_decoder_is_told_the_dialects_event_names(monkeypatch: pytest.MonkeyPatch) -> None:
    told: list[tuple[str, ...]] = []

    def decoder(event_names: Iterable[str] = ()) -> SseDecoder:
        told.append(tuple(event_names))
        return SseDecoder(event_names)

    monkeypatch.setattr(reassembly, "SseDecoder", decoder)
    for dialect in DIALECT_MODULES:
        StreamReassembler(dialect)
    assert told == [module.EVENT_NAMES for module in DIALECT_MODULES.values()]
    assert all(told)  # chat too: Groq names its in-stream error event


def test_content_seen_ignores_keep_alive_comments() -> None:
    reassembler = StreamReassembler("chat")
    reassembler.feed(b": OPENROUTER PROCESSING\n\n")
    assert reassembler.content_seen is False
    reassembler.feed(b"data: [DONE]\n\n")
    assert reassembler.content_seen is True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(STREAMS), data=st.data())
def test_any_split_gives_the_same_result(path: Path, data: st.DataObject) -> None:
    body = path.read_bytes()
    dialect = path.parent.name
    positions = data.draw(
        st.lists(st.integers(1, max(1, len(body) - 1)), max_size=40), label="cuts"
    )
    assert reassemble(dialect, cut(body, positions)) == reassemble(dialect, [body])


# --- garbage in, no exception out --------------------------------------------------------

_sse_noise = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.sampled_from(
            [
                b"data: [DONE]\n\n",
                b"data: [DONE]x\n\n",
                b"event: error\n",
                b"data: {}\n\n",
                b"data: []\n\n",
                b"data: null\n\n",
                b'data: {"type":"message_stop"}\n\n',
                b'data: {"type":"response.completed","response":5}\n\n',
                b'data: {"choices":[{"index":"0","delta":[]}]}\n\n',
                b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":null}]}}]}\n\n',
                b'data: {"type":"content_block_delta","index":9,"delta":{"type":"input_json_delta"}}\n\n',
                b'data: {"type":"response.output_text.delta","output_index":-1,"delta":7}\n\n',
                b"\r\n",
                b": comment\r",
                b"\xef\xbb\xbf",
                b"\xff\xfe",
            ]
        ),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(
    dialect=st.sampled_from(sorted(DIALECT_MODULES)),
    pieces=_sse_noise,
    cuts=st.lists(st.integers(0, 600), max_size=6),
)
def test_arbitrary_bytes_never_raise(dialect: str, pieces: list[bytes], cuts: list[int]) -> None:
    body = b"".join(pieces)
    result = reassemble(dialect, cut(body, cuts))
    assert isinstance(result, StreamResult)
    assert result.truncated == (result.terminal is None)
    assert reassemble_stream(dialect, body) == result.response
    assert state_failures(result.dropped) == []


def mutate(body: bytes, rng: random.Random) -> bytes:
    """One of: drop a span, duplicate a span, flip bytes, insert junk, cut the end."""
    if not body:
        return body
    a = rng.randrange(len(body))
    b = min(len(body), a + rng.randrange(1, 200))
    match rng.randrange(5):
        case 0:
            return body[:a] + body[b:]
        case 1:
            return body[:b] + body[a:b] + body[b:]
        case 2:
            flipped = bytearray(body)
            for i in range(a, b, max(1, (b - a) // 5)):
                flipped[i] = rng.randrange(256)
            return bytes(flipped)
        case 3:
            return (
                body[:a]
                + rng.choice([b"}", b"{", b"\n\n", b'"', b"\x00", b"\xc3", b"data: [DONE]\n\n"])
                + body[a:]
            )
        case _:
            return body[:a]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(STREAMS),
    seed=st.integers(0, 2**32 - 1),
    rounds=st.integers(1, 4),
)
def test_mutated_real_streams_never_raise(path: Path, seed: int, rounds: int) -> None:
    rng = random.Random(seed)
    body = path.read_bytes()
    for _ in range(rounds):
        body = mutate(body, rng)
    dialect = path.parent.name
    result = reassemble(dialect, cut(body, [rng.randrange(len(body) + 1) for _ in range(5)]))
    assert isinstance(result, StreamResult)
    assert result.truncated == (result.terminal is None)
    assert state_failures(result.dropped) == []


class _BuggyState:
    """A stand-in for a dialect state with a bug (no real dialect raises, so one is faked)."""

    terminal = None

    def feed(self, event: SseEvent) -> None:
        if event.data == b"bad":
            raise ValueError("boom")
        self.seen = event.data

    def result(self) -> StreamResult:
        return StreamResult(response={"seen": self.seen.decode()}, terminal=None, truncated=True)


def test_a_raising_dialect_state_costs_one_event_not_the_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = SimpleNamespace(
        NAME="chat", PATH="/v1/chat/completions", EVENT_NAMES=(), new_stream_state=_BuggyState
    )
    monkeypatch.setitem(DIALECT_MODULES, "chat", fake)
    reassembler = StreamReassembler("chat")
    reassembler.feed(b"data: bad\n\ndata: good\n\n")
    assert reassembler.finish() == StreamResult(
        response={"seen": "good"},
        terminal=None,
        truncated=True,
        dropped=["event not used (ValueError: boom)"],
    )


def test_a_state_whose_result_raises_still_gives_a_result(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = SimpleNamespace(
        NAME="chat", PATH="/v1/chat/completions", EVENT_NAMES=(), new_stream_state=_BuggyState
    )
    monkeypatch.setitem(DIALECT_MODULES, "chat", fake)
    reassembler = StreamReassembler("chat")
    assert reassembler.finish() == StreamResult(
        response=None,
        terminal=None,
        truncated=True,
        dropped=["result not built (AttributeError: '_BuggyState' object has no attribute 'seen')"],
    )
