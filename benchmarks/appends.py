"""Target 3: durable appends.

a) One writer: `CaptureStore.append` against the raw floor measured in the same run (open
   with O_APPEND, one write, fsync, close, of the same bytes): >= 0.9x the floor's
   appends/s.
b) 64 threads appending to one rollout file: the store's group commit (each call returns
   only after an fsync that covers its line) against one fsync per append (each thread
   opens, writes, fsyncs, closes: the same durability promise): >= 4x the appends/s.
"""

from __future__ import annotations

import fcntl
import os
import resource
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from model_call_capture import _codec
from model_call_capture.store import CaptureStore

from ._common import Row, median, not_ready

__all__ = ["run", "fsync_floor_ms"]

_LINE = _codec.encode_line(
    {"format": "model-call-capture/1", "model_call_id": "0" * 32, "dialect": "chat", "request": {"messages": [{"role": "user", "content": "x" * 600}]}, "response": {"choices": [{"message": {"content": "y" * 600}}]}}
)


def _raw_append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _locked_append(path: Path, data: bytes) -> None:
    """One fsync per append, serialized as the store serializes writers (flock held over it)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_floor_ms(root: Path, n: int = 60) -> float:
    """Median ms of one raw durable append (open, write, fsync, close) of one line."""
    path = root / "floor.jsonl"
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        _raw_append(path, _LINE)
        samples.append(time.perf_counter() - t)
    path.unlink()
    return median(samples) * 1000


def _single(root: Path, n: int) -> tuple[float, float]:
    """Appends/s of the store and of the raw floor: medians of `n` alternating single appends.

    Alternating one append at a time gives both sides the same disk weather (fsync time on
    a shared virtual disk drifts by 3x within a minute).
    """
    store = CaptureStore(root)
    raw_path = root / "raw.jsonl"
    store.append("single", _LINE)  # create the file (and fsync the directory) outside the timing
    _raw_append(raw_path, _LINE)
    ours: list[float] = []
    floor: list[float] = []
    for i in range(n):
        pair: list[tuple[Callable[[], None], list[float]]] = [
            (lambda: store.append("single", _LINE), ours),
            (lambda: _raw_append(raw_path, _LINE), floor),
        ]
        for fn, out in pair if i % 2 == 0 else pair[::-1]:
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    return 1 / median(ours), 1 / median(floor)


def _cpu_per_append(fn: Callable[[], None], n: int) -> float:
    """Seconds of CPU (user + system, this process) per call of `fn`."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(n):
        fn()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / n


def _threads(n_threads: int, per_thread: int, append: Callable[[], None]) -> float:
    """Appends/s of `n_threads` threads each calling `append` `per_thread` times."""
    barrier = threading.Barrier(n_threads + 1)
    errors: list[BaseException] = []

    def work() -> None:
        barrier.wait()
        try:
            for _ in range(per_thread):
                append()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return n_threads * per_thread / elapsed


def run(quick: bool) -> list[Row]:
    """Rows 3a (one writer) and 3b (64 concurrent writers)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcc-bench-appends-", dir=os.environ.get("MCC_BENCH_DIR")) as tmp:
        root = Path(tmp)
        what = "one writer: durable appends/s"
        try:
            ours, floor = _single(root, 30 if quick else 400)
            ratio = ours / floor
            store, raw_path = CaptureStore(root), root / "raw.jsonl"
            n_cpu = 30 if quick else 300
            cpu_ours = _cpu_per_append(lambda: store.append("single", _LINE), n_cpu)
            cpu_raw = _cpu_per_append(lambda: _raw_append(raw_path, _LINE), n_cpu)
            rows.append(Row("3a", what, f"{ours:,.0f}/s", f"{floor:,.0f}/s (open+write+fsync+close)", f"{ratio:.2f}x", ">= 0.9x", ratio >= 0.9, f"{len(_LINE)} B lines; medians of alternating single appends"))
            rows.append(Row("3a'", "CPU (user+sys) per durable append", f"{cpu_ours * 1e6:.0f} us", f"{cpu_raw * 1e6:.0f} us (raw)", f"{cpu_ours / cpu_raw:.1f}x", "(info)", None, "what an append costs the process besides waiting for the disk"))
        except Exception as exc:  # a component not ready: report it, do not crash the run
            rows.append(not_ready("3a", what, ">= 0.9x", f"{type(exc).__name__}: {exc}"))
        what = "64 threads, one file: appends/s"
        try:
            store = CaptureStore(root)
            store.append("many", _LINE)
            locked_path = root / "many-locked.jsonl"
            raw_path = root / "many-raw.jsonl"
            per = 3 if quick else 15
            group, locked, unlocked = [], [], []
            for _ in range(1 if quick else 5):
                group.append(_threads(64, per, lambda: store.append("many", _LINE)))
                locked.append(_threads(64, per, lambda: _locked_append(locked_path, _LINE)))
                unlocked.append(_threads(64, per, lambda: _raw_append(raw_path, _LINE)))
            g, s, u = median(group), median(locked), median(unlocked)
            fsync_ms = fsync_floor_ms(root, 10 if quick else 40)
            rows.append(Row("3b", what, f"{g:,.0f}/s (group commit)", f"{s:,.0f}/s (one fsync per append, under flock)", f"{g / s:.1f}x", ">= 4x", g / s >= 4, f"{64 * per} appends per side per round; same promise: durable on return, writers serialized by flock; fsync p50 {fsync_ms:.2f} ms now (the ratio is about fsync time / store CPU per append)"))
            rows.append(Row("3b'", "64 threads, one file, baseline without the lock", f"{g:,.0f}/s (group commit)", f"{u:,.0f}/s (open+write+fsync+close, no lock)", f"{g / u:.1f}x", "(info)", None, "not the same promise: no serialization across processes/hosts; the kernel already merges concurrent fsyncs of one inode"))
        except Exception as exc:  # a component not ready: report it, do not crash the run
            rows.append(not_ready("3b", what, ">= 4x", f"{type(exc).__name__}: {exc}"))
    return rows
