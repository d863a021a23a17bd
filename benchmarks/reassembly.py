"""Target 1: reassembly throughput per dialect, ours against the SDK accumulators (>= 10x).

Rows 1t: what the typed path of the OpenAI streams of choices (chat's and Completions'
`_fast`) saves, per chunk, against the general path alone on the same events.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from model_call_capture.dialects import get_dialect
from model_call_capture.dialects.chat import _choice_stream
from model_call_capture.reassembly import StreamReassembler
from model_call_capture.sse import SseDecoder, SseEvent

from ._common import Row, interleaved
from .sdk import SDK_REASSEMBLERS
from .streams import completions, stream_bytes

__all__ = ["run"]

TARGET = 10.0
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "streams"
_EVENT_END = re.compile(rb"(?<=\n\n)|(?<=\r\n\r\n)|(?<=\r\r)")


def _chunks(body: bytes) -> list[bytes]:
    """A recorded body cut after each event, as a server flushes it."""
    return [c for c in _EVENT_END.split(body) if c]


def ours(dialect: str, chunks: list[bytes]) -> Any:
    """Our reassembly of one stream."""
    reassembler = StreamReassembler(dialect)
    for chunk in chunks:
        reassembler.feed(chunk)
    return reassembler.finish().response


def _workload(fn: Callable[[list[bytes]], Any], streams: list[list[bytes]]) -> Callable[[], None]:
    def run() -> None:
        for chunks in streams:
            fn(chunks)

    return run


def _corpus(dialect: str) -> tuple[list[list[bytes]], int]:
    """Recorded streams the SDK can take (both sides get the same set), and how many it cannot."""
    sdk = SDK_REASSEMBLERS[dialect]
    kept, refused = [], 0
    for path in sorted((CORPUS / dialect).glob("*.sse")):
        chunks = _chunks(path.read_bytes())
        try:
            if sdk(chunks) is None:
                raise ValueError("no result")
        except Exception:
            refused += 1
            continue
        kept.append(chunks)
    return kept, refused


def _row(dialect: str, label: str, streams: list[list[bytes]], rounds: int, note: str) -> Row:
    size = sum(len(c) for s in streams for c in s)
    t_ours, t_sdk = interleaved(
        _workload(lambda c: ours(dialect, c), streams),
        _workload(SDK_REASSEMBLERS[dialect], streams),
        rounds=rounds,
    )
    ratio = t_sdk / t_ours
    mb = size / 1e6
    return Row(
        "1",
        f"reassembly `{dialect}`, {label}",
        f"{mb / t_ours:.1f} MB/s",
        f"{mb / t_sdk:.1f} MB/s (SDK)",
        f"{ratio:.1f}x",
        f">= {TARGET:g}x",
        ratio >= TARGET,
        note,
    )


def run(quick: bool) -> list[Row]:
    """Rows for every dialect: recorded corpus (if present) and a generated stream."""
    rounds = 3 if quick else 9
    rows = []
    for dialect in ("responses", "chat", "messages"):
        if CORPUS.is_dir():
            streams, refused = _corpus(dialect)
            if quick:
                streams = streams[:20]
            note = f"{len(streams)} streams, {sum(len(c) for s in streams for c in s) / 1e6:.2f} MB"
            if refused:
                note += f"; {refused} the SDK cannot take left out"
            rows.append(_row(dialect, "recorded corpus", streams, rounds, note))
        else:
            rows.append(
                Row(
                    "1",
                    f"reassembly `{dialect}`, recorded corpus",
                    "n/a",
                    "n/a",
                    "n/a",
                    f">= {TARGET:g}x",
                    None,
                    f"skipped: {CORPUS} absent",
                )
            )
        n = 300 if quick else 4000
        gen = [stream_bytes(dialect, n)]
        size = sum(map(len, gen[0]))
        rows.append(
            _row(
                dialect,
                "generated stream",
                gen,
                rounds,
                f"{n} deltas, {len(gen[0])} events, {size / 1e6:.2f} MB",
            )
        )
        rows.append(_split(dialect, gen[0], rounds))
    n = 300 if quick else 4000
    rows.append(_typed("chat", "generated stream", stream_bytes("chat", n), rounds))
    rows.append(_typed("completions", "vLLM stream (row 9c's)", list(completions(n)), rounds))
    rows.append(
        _typed(
            "completions",
            "vLLM stream, token ids + log-probs",
            list(completions(n, token_ids=True)),
            rounds,
        )
    )
    return rows


def _events(dialect: str, chunks: list[bytes]) -> list[SseEvent]:
    decoder = SseDecoder(get_dialect(dialect).EVENT_NAMES)
    decoded: list[SseEvent] = []
    for chunk in chunks:
        decoded += decoder.feed(chunk)
    return decoded + decoder.finish()


def _typed(dialect: str, label: str, chunks: list[bytes], rounds: int) -> Row:
    """The stream state per event with its typed path, against the general path alone."""
    module = get_dialect(dialect)
    decoded = _events(dialect, chunks)
    misses = _choice_stream.MISSES

    def state() -> None:
        s = module.new_stream_state()
        for event in decoded:
            s.feed(event)
        s.result()

    def general() -> None:
        _choice_stream.MISSES = 0  # the typed path never tried
        try:
            state()
        finally:
            _choice_stream.MISSES = misses

    t_typed, t_general = interleaved(state, general, rounds=rounds)
    us = 1e6 / len(decoded)
    return Row(
        "1t",
        f"`{dialect}` {label}: stream state per event, typed path",
        f"{t_typed * us:.2f} us",
        f"{t_general * us:.2f} us (general path alone)",
        f"{t_general / t_typed:.2f}x",
        "(info)",
        None,
        f"{len(decoded)} events, {sum(map(len, chunks)) / 1e6:.2f} MB",
    )


def _split(dialect: str, chunks: list[bytes], rounds: int) -> Row:
    """Where our time goes per event: the SSE decoder against the dialect's stream state."""
    module = get_dialect(dialect)
    decoded = _events(dialect, chunks)

    def sse() -> None:
        d = SseDecoder(module.EVENT_NAMES)
        for chunk in chunks:
            d.feed(chunk)
        d.finish()

    def state() -> None:
        s = module.new_stream_state()
        for event in decoded:
            s.feed(event)
        s.result()

    t_sse, t_state = interleaved(sse, state, rounds=rounds)
    t_all, t_sdk = interleaved(
        lambda: ours(dialect, chunks), lambda: SDK_REASSEMBLERS[dialect](chunks), rounds=rounds
    )
    n = len(decoded)
    us = 1e6 / n
    return Row(
        "1'",
        f"`{dialect}` generated: time per event",
        f"{t_all * us:.2f} us (SSE {t_sse * us:.2f} + state {t_state * us:.2f})",
        f"{t_sdk * us:.2f} us (SDK)",
        f"{t_sdk / t_all:.1f}x",
        "(info)",
        None,
        "where our time goes",
    )
