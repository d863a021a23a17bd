"""Target 3: durable appends.

c) The segment layout against the shared one (rows 3c, 3c'): information, no target.

a) One writer: `CaptureStore.append` against the raw floor measured in the same run (open
   with O_APPEND, one write, fsync, close, of the same bytes): >= 0.9x the floor's
   appends/s.
b) 64 threads appending to one rollout file: the store's group commit (each call returns
   only after an fsync that covers its line) against one fsync per append with the store's
   own locking discipline (open, exclusive `flock`, write, unlock, fsync, close: the same
   promise, durable on return and writers serialized across processes): >= 4x the
   appends/s. The lock is released before the fsync on both sides, so the baseline's
   fsyncs may overlap as the store's batches do; 3b' keeps the former baseline, which held
   the lock across its fsync and so paid one whole fsync per append in series.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import resource
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from model_call_capture import _codec
from model_call_capture.store import CaptureStore, _writer

from ._common import Row, median, not_ready

__all__ = ["fsync_floor_ms", "run"]

_LINE = bytes(
    _codec.encode_line(
        {
            "format": "model-call-capture/1",
            "model_call_id": "0" * 32,
            "dialect": "chat",
            "request": {"messages": [{"role": "user", "content": "x" * 600}]},
            "response": {"choices": [{"message": {"content": "y" * 600}}]},
        }
    )
)


def _raw_append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _locked_append(path: Path, data: bytes) -> None:
    """One fsync per append, with the store's locking discipline: the exclusive `flock` is
    held around the write only, and the fsync runs after the unlock (as `store/_writer.py`
    does), so concurrent appends' fsyncs may overlap."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            os.write(fd, data)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.fsync(fd)
    finally:
        os.close(fd)


def _lock_held_append(path: Path, data: bytes) -> None:
    """One fsync per append with the `flock` held across the fsync (the former 3b baseline):
    the appends' fsyncs run one after another, which the store never does."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


class _WakeFloor:
    """The most any append that sleeps until it is durable can reach: no I/O at all.

    Each call hands its thread's lock to a flusher thread and sleeps on it; the flusher
    takes every lock handed over so far at once and wakes their threads, as a group
    commit wakes a batch after its fsync, but with nothing written and nothing synced.
    What is left is the handing over and one sleep and one wake per call: what threads
    cost on this machine, which bounds row 3b whatever the store does.

    With `path`, the flusher also writes the batch's lines to that file with one `writev`
    and fsyncs once before it wakes them (row 3b'''''): the least a group commit does, with
    none of the store's open, lock, checks and close a batch.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._fd = (
            None
            if path is None
            else os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        )
        self._lock = threading.Lock()
        self._handed: list[threading.Lock] = []
        self._ready = threading.Semaphore(0)
        self._local = threading.local()
        self._stop = False
        self._thread = threading.Thread(target=self._flush, daemon=True)
        self._thread.start()

    def call(self) -> None:
        """Hand this thread's lock over and sleep until the flusher wakes it."""
        mine: threading.Lock | None = getattr(self._local, "lock", None)
        if mine is None:
            mine = self._local.lock = threading.Lock()
        mine.acquire()
        with self._lock:
            self._handed.append(mine)
        self._ready.release()
        mine.acquire()  # sleeps until the flusher releases it
        mine.release()

    def close(self) -> None:
        """Stop the flusher thread."""
        self._stop = True
        self._ready.release()
        self._thread.join()
        if self._fd is not None:
            os.close(self._fd)

    def _flush(self) -> None:
        while True:
            self._ready.acquire()
            with self._lock:
                handed, self._handed = self._handed, []
            if self._fd is not None and handed:
                os.writev(self._fd, [_LINE] * len(handed))
                os.fsync(self._fd)
            for lock in handed:
                lock.release()
            # Each call released the semaphore once, after handing its lock over: take
            # the counts of this batch's other calls, so an empty batch never runs.
            for _ in range(len(handed) - 1):
                self._ready.acquire()
            if self._stop:
                return


@contextlib.contextmanager
def _batches_written_alone(path: Path) -> Iterator[None]:
    """While the block runs, the store's group commit writes each batch with one `writev`
    and one fsync of `path`, opened once, and nothing else (row 3b''''''): the store's own
    batching and waking, without the open, lock, checks and close of each batch."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    real = _writer._write_durably

    def write(
        path: str, lines: Sequence[bytes | bytearray], creation: object, *, strict: bool = False
    ) -> None:
        os.writev(fd, lines)
        os.fsync(fd)

    _writer._write_durably = write
    try:
        yield
    finally:
        _writer._write_durably = real
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


def _cpu_per_append(
    fns: tuple[Callable[[], None], Callable[[], None]], n: int
) -> tuple[float, float]:
    """Seconds of CPU (user + system, this process) per call of each of `fns`, measured in
    alternating runs of 20 calls (the CPU cost of an fsync drifts with the disk's weather)."""
    totals = [0.0, 0.0]
    for _ in range(max(1, n // 20)):
        for i, fn in enumerate(fns):
            before = resource.getrusage(resource.RUSAGE_SELF)
            for _ in range(20):
                fn()
            after = resource.getrusage(resource.RUSAGE_SELF)
            totals[i] += after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    calls = max(1, n // 20) * 20
    return totals[0] / calls, totals[1] / calls


def _threads(n_threads: int, per_thread: int, append: Callable[[], None]) -> tuple[float, float]:
    """Appends/s of `n_threads` threads each calling `append` `per_thread` times, and the
    process's CPU seconds (user + system, all threads) per append."""
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
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    for t in threads:
        t.join()
    elapsed, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    if errors:
        raise errors[0]
    n = n_threads * per_thread
    return n / elapsed, (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) / n


def run(quick: bool) -> list[Row]:
    """Rows 3a (one writer) and 3b (64 concurrent writers)."""
    rows = []
    with tempfile.TemporaryDirectory(
        prefix="mcc-bench-appends-", dir=os.environ.get("MCC_BENCH_DIR")
    ) as tmp:
        root = Path(tmp)
        what = "one writer: durable appends/s"
        try:
            ours, floor = _single(root, 30 if quick else 400)
            ratio = ours / floor
            store, raw_path = CaptureStore(root), root / "raw.jsonl"
            n_cpu = 40 if quick else 600
            cpu_ours, cpu_raw = _cpu_per_append(
                (lambda: store.append("single", _LINE), lambda: _raw_append(raw_path, _LINE)), n_cpu
            )
            rows.append(
                Row(
                    "3a",
                    what,
                    f"{ours:,.0f}/s",
                    f"{floor:,.0f}/s (open+write+fsync+close)",
                    f"{ratio:.2f}x",
                    ">= 0.9x",
                    ratio >= 0.9,
                    f"{len(_LINE)} B lines; medians of alternating single appends",
                )
            )
            rows.append(
                Row(
                    "3a'",
                    "CPU (user+sys) per durable append",
                    f"{cpu_ours * 1e6:.0f} us",
                    f"{cpu_raw * 1e6:.0f} us (raw)",
                    f"{cpu_ours / cpu_raw:.1f}x",
                    "(info)",
                    None,
                    "what an append costs the process besides waiting for the disk",
                )
            )
        except Exception as exc:  # a component not ready: report it, do not crash the run
            rows.append(not_ready("3a", what, ">= 0.9x", f"{type(exc).__name__}: {exc}"))
        rows.extend(_many(root, quick))
        rows.extend(_layouts(root, quick))
    return rows


def _layouts(root: Path, quick: bool) -> list[Row]:
    """Rows 3c and 3c': the segment layout (`capture_layout: segments`, what `auto` writes
    where locks are not coherent across hosts) against the shared layout, one writer and
    64 threads, alternating in one run."""
    what = "one writer: segments layout, durable appends/s"
    try:
        shared = CaptureStore(root / "shared", layout="shared")
        segments = CaptureStore(root / "segments", layout="segments")
        sides: list[tuple[CaptureStore, list[float]]] = [(shared, []), (segments, [])]
        for store, _ in sides:
            store.append("single", _LINE)  # create the files outside the timing
        for i in range(10 if quick else 400):
            for store, out in sides if i % 2 == 0 else sides[::-1]:
                t = time.perf_counter()
                store.append("single", _LINE)
                out.append(time.perf_counter() - t)
        one_shared, one_segments = (1 / median(out) for _, out in sides)
        threaded: list[list[float]] = [[], []]
        for i in range(1 if quick else 6):
            for k in (0, 1) if i % 2 == 0 else (1, 0):
                append = functools.partial(sides[k][0].append, "many", _LINE)
                threaded[k].append(_threads(64, 1 if quick else 15, append)[0])
        many_shared, many_segments = (median(runs) for runs in threaded)
    except Exception as exc:  # a component not ready: report it, do not crash the run
        return [not_ready("3c", what, "(info)", f"{type(exc).__name__}: {exc}")]
    return [
        Row(
            "3c",
            what,
            f"{one_segments:,.0f}/s (segments)",
            f"{one_shared:,.0f}/s (shared file, flock)",
            f"{one_segments / one_shared:.2f}x",
            "(info)",
            None,
            "a writer's segment stays open: no open, flock, checks or close per append",
        ),
        Row(
            "3c'",
            "64 threads, one rollout: segments layout, appends/s",
            f"{many_segments:,.0f}/s (segments, group commit)",
            f"{many_shared:,.0f}/s (shared file, group commit)",
            f"{many_segments / many_shared:.2f}x",
            "(info)",
            None,
            "the same batching; a batch is one writev and one fsync of the open segment",
        ),
    ]


def _many(root: Path, quick: bool) -> list[Row]:
    """Rows 3b (64 writers, the store's locking discipline on both sides) and the rows that
    explain it: the former baseline (lock held across the fsync) and no lock at all."""
    what = "64 threads, one file: appends/s"
    try:
        store = CaptureStore(root)
        store.append("many", _LINE)
        wake = _WakeFloor()
        flusher = _WakeFloor(root / "many-flusher.jsonl")
        alone = root / "many-alone.jsonl"
        alone_runs: list[tuple[float, float]] = []
        sides: list[tuple[Callable[[], None], list[tuple[float, float]]]] = [
            (lambda: store.append("many", _LINE), []),
            (lambda: _locked_append(root / "many-locked.jsonl", _LINE), []),
            (lambda: _lock_held_append(root / "many-held.jsonl", _LINE), []),
            (lambda: _raw_append(root / "many-raw.jsonl", _LINE), []),
            (wake.call, []),
            (flusher.call, []),
            (lambda: store.append("many-alone", _LINE), alone_runs),
        ]
        per = 3 if quick else 15
        try:
            for i in range(1 if quick else 10):
                # Rotate which side goes first: the disk's weather drifts within a round.
                k = i % len(sides)
                for fn, out in sides[k:] + sides[:k]:
                    with (
                        _batches_written_alone(alone)
                        if out is alone_runs
                        else contextlib.nullcontext()
                    ):
                        out.append(_threads(64, per, fn))
        finally:
            wake.close()
            flusher.close()
        g, s, h, u, w, f, a = (median([rate for rate, _ in runs]) for _, runs in sides)
        g_cpu, s_cpu, w_cpu, f_cpu, a_cpu = (
            median([cpu for _, cpu in sides[i][1]]) for i in (0, 1, 4, 5, 6)
        )
        fsync_ms = fsync_floor_ms(root, 10 if quick else 40)
    except Exception as exc:  # a component not ready: report it, do not crash the run
        return [not_ready("3b", what, ">= 4x", f"{type(exc).__name__}: {exc}")]
    return [
        Row(
            "3b",
            what,
            f"{g:,.0f}/s (group commit)",
            f"{s:,.0f}/s (one fsync per append; flock around the write, fsync after unlock)",
            f"{g / s:.1f}x",
            ">= 4x",
            g / s >= 4,
            f"{64 * per} appends per side per round; same promise and the store's own locking: durable on return, writes serialized by flock, fsyncs free to overlap; fsync p50 {fsync_ms:.2f} ms now",
        ),
        Row(
            "3b'",
            "64 threads, one file, former baseline: flock held across the fsync",
            f"{g:,.0f}/s (group commit)",
            f"{h:,.0f}/s (one fsync per append, under flock)",
            f"{g / h:.1f}x",
            "(info)",
            None,
            "the former 3b headline: its fsyncs run one after another, which the store's locking never asks for",
        ),
        Row(
            "3b''",
            "64 threads, one file, baseline without any lock",
            f"{g:,.0f}/s (group commit)",
            f"{u:,.0f}/s (open+write+fsync+close, no lock)",
            f"{g / u:.1f}x",
            "(info)",
            None,
            "not the same promise: no serialization across processes/hosts; the kernel already merges concurrent fsyncs of one inode",
        ),
        Row(
            "3b'''",
            "64 threads, one file: CPU (user+sys) per append",
            f"{g_cpu * 1e6:.0f} us (group commit)",
            f"{s_cpu * 1e6:.0f} us (one fsync per append, fsync after unlock)",
            f"{g_cpu / s_cpu:.2f}x",
            "(info)",
            None,
            "all threads of the process; the group-commit gain is about fsync time / this CPU",
        ),
        Row(
            "3b''''",
            "64 threads: the floor of an append that sleeps until durable, no I/O at all",
            f"{g:,.0f}/s (group commit, {g / w:.2f} of the floor)",
            f"{w:,.0f}/s (hand over, sleep, be woken by a flusher thread; "
            f"{w_cpu * 1e6:.0f} us CPU a call)",
            f"{w / s:.1f}x the 3b baseline",
            "(info)",
            None,
            "nothing written or synced: one sleep and one wake per call, which any design "
            f"that returns once the line is durable pays; 3b's 4x needs {4 * s:,.0f}/s",
        ),
        Row(
            "3b'''''",
            "64 threads: the least group commit, a flusher thread with one writev and one fsync a batch",
            f"{g:,.0f}/s (group commit, {g / f:.2f} of it)",
            f"{f:,.0f}/s (hand over, sleep, be woken once the flusher's fsync covers the line; "
            f"{f_cpu * 1e6:.0f} us CPU a call)",
            f"{f / s:.1f}x the 3b baseline",
            "(info)",
            None,
            "the file opened once; no flock, fstat, torn-line or cleared-file check; one "
            "process: the batching alone, with none of the store's promises across processes",
        ),
        Row(
            "3b''''''",
            "64 threads: the store's own batching, each batch only written and fsynced",
            f"{g:,.0f}/s (group commit, {g / a:.2f} of it)",
            f"{a:,.0f}/s (the store's leader, batches and wake-ups; one writev and one fsync "
            f"of a file opened once a batch; {a_cpu * 1e6:.0f} us CPU a call)",
            f"{a / s:.1f}x the 3b baseline",
            "(info)",
            None,
            "what the store's design reaches without the open, flock, fstat, checks and "
            "close of each batch that its promises across processes need",
        ),
    ]
