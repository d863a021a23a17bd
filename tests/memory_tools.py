"""Structural memory bounds for tests: bytes traced by tracemalloc, never time."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

from model_call_capture.reassembly import StreamReassembler, StreamResult

T = TypeVar("T")


def traced_peak(work: Callable[[], T]) -> tuple[T, int]:
    """Run `work()`; its result and the peak bytes allocated while it ran (above the start)."""
    gc.collect()
    started = not tracemalloc.is_tracing()  # PYTHONTRACEMALLOC may have started it already
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        result = work()
        return result, tracemalloc.get_traced_memory()[1] - base
    finally:
        if started:
            tracemalloc.stop()


def reassemble_in_chunks(dialect: str, body: bytes, chunk: int = 65536) -> StreamResult:
    """Feed `body` to a `StreamReassembler` in transport chunks of `chunk` bytes."""
    reassembler = StreamReassembler(dialect)
    view = memoryview(body)
    for offset in range(0, len(body), chunk):
        reassembler.feed(view[offset : offset + chunk])
    return reassembler.finish()
