"""Spreading per-rollout work (an export, `mcc stats`, `mcc validate`) over the machine's cores.

The work is split by rollout (or file): a worker reads one and returns a small result,
the caller consumes the results in input order, so the output is the same whatever the
number of workers.

A fork copies every lock of the caller's other threads (DuckDB's, pyarrow's, the
program's own) in whatever state it is, and a worker that then needs one some thread held
waits forever. So the workers are forked from the caller only while it has no other
thread (native ones included: Linux lists them in `/proc/self/task`); otherwise, or where
that cannot be told, they come from a fork server (`multiprocessing`'s `forkserver`
start method), a fresh interpreter that imports the workers' modules once
(`set_forkserver_preload`) and forks each worker from itself: a worker starts with those
imports done and nothing of the caller's threads. A fork is the cheaper of the two (no
second interpreter, no second import: docs/performance-history.md, "Workers from a fork server").
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

from . import _codec

__all__ = ["default_jobs", "in_worker", "map_files"]

_P = TypeVar("_P")
_R = TypeVar("_R")

# Files handed to a worker at a time: enough to amortize the round trip of small files,
# few enough that the results of one batch stay small and the cores stay busy to the end.
_BATCH = 8

# What a worker keeps entered for its whole life (see `_start_worker`).
_worker_context = contextlib.ExitStack()
_in_worker = False


def default_jobs() -> int:
    """All cores (`os.cpu_count()`), at least 1."""
    return os.cpu_count() or 1


def map_files(
    fn: Callable[[_P], _R],
    paths: Sequence[_P],
    jobs: int | None,
    *,
    preload: Sequence[str] = (),
) -> Iterator[_R]:
    """`fn(path)` for each of `paths`, yielded in input order, computed by up to `jobs` processes.

    `fn` must be picklable (a module-level function, or a `functools.partial` of one).
    The workers are forked from this process when it has no other thread; otherwise they
    start from a fork server that has imported `fn`'s module and the modules named in
    `preload` (those `fn` imports on first call), so that each worker does not import
    them again (it is `multiprocessing`'s one fork server of the process, started by the
    first call with that call's modules; a later call's workers import their own). As in
    any `multiprocessing` program that does not fork, a script run by path that calls
    this must guard its entry point with `if __name__ == "__main__"`: each worker of the
    fork server imports it. Files go to workers a few at a time and at most `2 * jobs`
    batches are in flight, so memory is bounded by a few batches of results, not by the
    number of files, however slowly the caller consumes them. With one job or one path,
    everything runs in this process. A worker's exception is raised here, in order,
    after the results of the files before its batch.
    """
    with _codec.kept_heap():  # for the whole run here; each worker enters its own
        yield from _map_files(fn, paths, default_jobs() if jobs is None else jobs, preload)


def _map_files(
    fn: Callable[[_P], _R], paths: Sequence[_P], jobs: int, preload: Sequence[str]
) -> Iterator[_R]:
    jobs = min(jobs, len(paths))
    if jobs <= 1:
        for path in paths:
            yield fn(path)
        return
    batches = iter([paths[i : i + _BATCH] for i in range(0, len(paths), _BATCH)])
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=_context(fn, preload), initializer=_start_worker
    )
    # The workers, and the fork server (which imports modules before it ignores SIGINT),
    # start with Ctrl-C held back until `_start_worker` ignores it; here it is delivered
    # once they are started.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pending: deque[Future[list[_R]]] = deque(
            pool.submit(_run_batch, fn, batch) for batch in itertools.islice(batches, 2 * jobs)
        )
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        while pending:
            results = pending.popleft().result()
            for batch in itertools.islice(batches, 1):
                pending.append(pool.submit(_run_batch, fn, batch))
            yield from results
    except BaseException:
        # Ctrl-C here, an error, or a caller that stopped reading: the batches not started
        # are dropped, and the workers (which ignore SIGINT) exit after their current one.
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _context(
    fn: Callable[..., object], preload: Sequence[str]
) -> multiprocessing.context.BaseContext:
    """`fork` in a process of one thread, else `forkserver` with its preload set.

    Never the process-wide default start method, which is the caller's to choose.
    """
    if _only_thread():
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    module = getattr(getattr(fn, "func", fn), "__module__", None)
    modules = [__name__, *preload, *([module] if module else [])]
    context.set_forkserver_preload(list(dict.fromkeys(modules)))
    return context


def _only_thread() -> bool:
    """Whether this process has one thread, native threads counted (False where unknown).

    No other thread can start one meanwhile: the only thread is the one asking.
    """
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def in_worker() -> bool:
    """Whether this process is a worker `map_files` started (never the caller's own process)."""
    return _in_worker


def _start_worker() -> None:
    global _in_worker
    _in_worker = True
    # A terminal's Ctrl-C reaches every process of the group. A worker interrupted inside
    # the pool's queues can die holding their lock, and the pool then waits for ever (the
    # parent sees no dead worker): the parent alone handles it (`_map_files`).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    # The glibc heap kept between lines (`_codec.kept_heap`) for the worker's whole life,
    # between files too: a worker of the fork server was not forked from the caller's
    # block, so it would otherwise start with glibc's defaults.
    _worker_context.enter_context(_codec.kept_heap())


def _run_batch(fn: Callable[[_P], _R], paths: Sequence[_P]) -> list[_R]:
    return [fn(path) for path in paths]
