"""A process pool over files: `map_files(fn, paths, jobs)`, results in input order."""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

__all__ = ["default_jobs", "map_files"]

R = TypeVar("R")

_CHUNK = 16


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def map_files(fn: Callable[[Path], R], paths: Sequence[Path], jobs: int) -> Iterator[R]:
    """`fn(path)` for every path, yielded in the order of `paths`, on up to `jobs` processes.

    `fn` must be picklable (a module-level function or a `functools.partial` of one).
    Files go to workers `_CHUNK` at a time; at most `2 * jobs` chunks are in flight, so
    memory is bounded by a few chunks of results, not by the number of files, however
    slowly the caller consumes them. With `jobs <= 1` (or a single path) everything runs
    in this process.
    """
    if jobs <= 1 or len(paths) <= 1:
        for path in paths:
            yield fn(path)
        return
    # Files go in chunks: one task per small file costs more in IPC than it saves.
    chunks = [paths[i : i + _CHUNK] for i in range(0, len(paths), _CHUNK)]
    # forkserver: a fork of this process could copy a lock some thread holds.
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        pending: deque[Future[list[R]]] = deque()
        todo = iter(chunks)
        for chunk in todo:
            pending.append(pool.submit(_run_chunk, fn, chunk))
            if len(pending) >= 2 * jobs:
                break
        while pending:
            results = pending.popleft().result()
            for chunk in todo:
                pending.append(pool.submit(_run_chunk, fn, chunk))
                break
            yield from results


def _run_chunk(fn: Callable[[Path], R], paths: Sequence[Path]) -> list[R]:
    return [fn(path) for path in paths]
