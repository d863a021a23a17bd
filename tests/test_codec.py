"""`_codec.kept_heap` and `bulk_decoding`: what they ask of the allocator, and when.

What the heap settings save is measured in benchmarks/ (docs/performance-history.md,
"Reading faster"); here a spy stands in for glibc's `mallopt` (its settings cannot be
read back), and one test calls the real one.
"""

from __future__ import annotations

import gc
import threading

import pytest

from conftest import require_capability
from model_call_capture import _codec

M_TOP_PAD, M_MMAP_THRESHOLD = -2, -3


@pytest.fixture
def mallopt_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    calls: list[tuple[int, int]] = []

    def spy(param: int, value: int) -> int:
        calls.append((param, value))
        return 1

    monkeypatch.setattr(_codec, "_mallopt", lambda: spy)
    return calls


def test_the_pad_is_set_once_for_nested_blocks_and_reset_when_the_last_ends(
    mallopt_calls: list[tuple[int, int]],
) -> None:
    with _codec.kept_heap():
        assert mallopt_calls == [(M_TOP_PAD, 16 << 20), (M_MMAP_THRESHOLD, 4 << 20)]
        with _codec.bulk_decoding(), _codec.kept_heap():
            pass
        assert len(mallopt_calls) == 2
    assert mallopt_calls[2:] == [(M_TOP_PAD, 128 * 1024)]


def test_blocks_in_threads_reset_the_pad_only_when_all_have_ended(
    mallopt_calls: list[tuple[int, int]],
) -> None:
    inside = threading.Barrier(9)
    leave = threading.Event()

    def block() -> None:
        with _codec.kept_heap():
            inside.wait()
            leave.wait()

    threads = [threading.Thread(target=block) for _ in range(8)]
    for t in threads:
        t.start()
    inside.wait()
    assert mallopt_calls == [(M_TOP_PAD, 16 << 20), (M_MMAP_THRESHOLD, 4 << 20)]
    leave.set()
    for t in threads:
        t.join()
    assert mallopt_calls[2:] == [(M_TOP_PAD, 128 * 1024)]


def test_bulk_decoding_pauses_the_collector_and_restores_it_as_it_was(
    mallopt_calls: list[tuple[int, int]],
) -> None:
    assert gc.isenabled()
    with _codec.bulk_decoding():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with _codec.bulk_decoding():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_allocator_the_user_tuned_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    _codec._mallopt.cache_clear()
    monkeypatch.setenv("MALLOC_TOP_PAD_", "0")
    try:
        assert _codec._mallopt() is None
    finally:
        _codec._mallopt.cache_clear()


def test_the_real_mallopt_accepts_the_settings() -> None:
    mallopt = _codec._mallopt()
    require_capability(
        "glibc's mallopt",
        mallopt is not None,
        "not glibc, or the allocator is tuned by the environment",
    )
    assert mallopt is not None
    assert mallopt(M_TOP_PAD, 16 << 20) == 1  # glibc returns 1 on success
    assert mallopt(M_TOP_PAD, 128 * 1024) == 1
