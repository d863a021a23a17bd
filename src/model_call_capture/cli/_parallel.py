"""Spreading per-file work of an `mcc` command over the machine's cores.

A command splits its work by file: a worker reads one file and returns a small summary,
the parent merges the summaries in input order, so the output is the same whatever the
number of workers.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

import click

from .. import _codec

__all__ = ["default_jobs", "jobs_option", "map_files"]

_P = TypeVar("_P")
_R = TypeVar("_R")

# Files handed to a worker at a time: enough to amortize the round trip of small files,
# few enough that the results of one batch stay small and the cores stay busy to the end.
_BATCH = 8


def default_jobs() -> int:
    """All cores (`os.cpu_count()`), at least 1."""
    return os.cpu_count() or 1


def jobs_option() -> Callable[[Callable[..., object]], Callable[..., object]]:
    """The `--jobs N` option shared by the commands that read many files."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=None,
        help="Worker processes reading files in parallel [default: all cores].",
    )


def map_files(fn: Callable[[_P], _R], paths: Sequence[_P], jobs: int | None) -> Iterator[_R]:
    """`fn(path)` for each of `paths`, yielded in input order, computed by up to `jobs` processes.

    `fn` must be picklable (a module-level function, or a `functools.partial` of one). Files
    go to workers a few at a time and at most `2 * jobs` batches are in flight, so memory
    is bounded by a few batches of results, not by the number of files, however slowly
    the caller consumes them. With one job, one path, or other threads running,
    everything runs in this process. A worker's exception is raised here, in order,
    after the results of the files before its batch.
    """
    with _codec.kept_heap():  # for the whole run (forked workers inherit it)
        yield from _map_files(fn, paths, default_jobs() if jobs is None else jobs)


def _map_files(fn: Callable[[_P], _R], paths: Sequence[_P], jobs: int) -> Iterator[_R]:
    jobs = min(jobs, len(paths))
    # Workers are forked: they start without re-importing the package. A process with
    # other threads (`main()` called from a threaded program) could fork a copy of a lock
    # some thread holds, and a clean start (spawn) would re-run the caller's main module:
    # such a process reads in its own thread instead.
    if jobs <= 1 or threading.active_count() > 1:
        for path in paths:
            yield fn(path)
        return
    batches = iter([paths[i : i + _BATCH] for i in range(0, len(paths), _BATCH)])
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        pending: deque[Future[list[_R]]] = deque(
            pool.submit(_run_batch, fn, batch) for batch in itertools.islice(batches, 2 * jobs)
        )
        while pending:
            results = pending.popleft().result()
            for batch in itertools.islice(batches, 1):
                pending.append(pool.submit(_run_batch, fn, batch))
            yield from results


def _run_batch(fn: Callable[[_P], _R], paths: Sequence[_P]) -> list[_R]:
    return [fn(path) for path in paths]
