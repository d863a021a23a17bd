"""Spreading per-file work of an `mcc` command over the machine's cores.

A command splits its work by file: a worker reads one file and returns a small summary,
the parent merges the summaries in input order, so the output is the same whatever the
number of workers.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

import click

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

    `fn` must be a module-level function (it is pickled to the workers) and should return
    a small result: the point is that no worker's data crosses to the parent whole. With
    one job, one path, or other threads running, everything runs in this process.
    A worker's exception is raised here, in order: after the results of the files before
    its batch (files go to workers in batches of a few; the rest of that batch is lost).
    """
    jobs = default_jobs() if jobs is None else jobs
    jobs = min(jobs, len(paths))
    # Workers are forked: they start without re-importing the package. A process with
    # other threads (`main()` called from a threaded program) could fork a copy of a lock
    # some thread holds, and a clean start (spawn) would re-run the caller's main module:
    # such a process reads in its own thread instead.
    if jobs <= 1 or threading.active_count() > 1:
        for path in paths:
            yield fn(path)
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        yield from pool.map(fn, paths, chunksize=_BATCH)
