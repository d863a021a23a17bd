"""`_parallel.map_files`: workers that share nothing with the caller's threads.

The hazard is real and deterministic here: a lock some other thread of the caller holds
when the workers start. A worker forked from the caller gets a copy of that lock, held
for ever; a worker of the fork server gets a fresh one. A caller without other threads
has no such lock, and forks its workers. Each run is a real subprocess
killed after a timeout, so a deadlock fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from model_call_capture import _codec
from model_call_capture._parallel import map_files

TESTS = Path(__file__).resolve().parent

# Held by a thread of the caller for the whole of `map_files` in `_HOLD_AND_MAP`.
_LOCK = threading.Lock()


def _square_under_lock(n: int) -> tuple[int, int, int]:
    with _LOCK:  # a worker forked while the caller's thread held it would wait here for ever
        return n * n, os.getpid(), os.getppid()


def _kept_depth(n: int) -> tuple[int, int]:
    return _codec._kept_depth, os.getpid()


_HOLD_AND_MAP = """
import json, os, sys, threading
sys.path.insert(0, sys.argv[1])
import test_cli_parallel as t
from model_call_capture._parallel import map_files
held, done = threading.Event(), threading.Event()
def hold():
    with t._LOCK:
        held.set()
        done.wait(600)
holder = threading.Thread(target=hold)
holder.start()
held.wait()
results = list(map_files(t._square_under_lock, list(range(40)), 2))
still_held = t._LOCK.locked()
done.set()
holder.join()
print(json.dumps({
    "squares": [square for square, _, _ in results],
    "pids": sorted({pid for _, pid, _ in results}),
    "ppids": sorted({ppid for _, _, ppid in results}),
    "parent": os.getpid(),
    "held": still_held,
}))
"""

# The same without any other thread: the workers are forked from the caller itself.
_MAP_ALONE = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import test_cli_parallel as t
from model_call_capture._parallel import map_files
assert len(os.listdir("/proc/self/task")) == 1
results = list(map_files(t._square_under_lock, list(range(40)), 2))
print(json.dumps({
    "squares": [square for square, _, _ in results],
    "pids": sorted({pid for _, pid, _ in results}),
    "ppids": sorted({ppid for _, _, ppid in results}),
    "parent": os.getpid(),
}))
"""


def _run(code: str, timeout: float) -> subprocess.CompletedProcess[str] | None:
    """Run `code`, None if it did not end within `timeout` (it and its workers killed)."""
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(TESTS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the workers go with it
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return None
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def test_workers_do_not_inherit_a_lock_another_thread_of_the_caller_holds() -> None:
    run = _run(_HOLD_AND_MAP, timeout=45)
    assert run is not None, "map_files deadlocked on a lock the caller's other thread held"
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["squares"] == [n * n for n in range(40)]
    # Computed in workers, not in the caller (where the held lock would block as well),
    # while the caller's thread still held the lock.
    assert out["parent"] not in out["pids"] and len(out["pids"]) >= 1
    assert out["held"] is True
    # Children of the fork server, not of the caller.
    assert out["parent"] not in out["ppids"] and len(out["ppids"]) == 1


def test_a_caller_without_other_threads_forks_its_workers() -> None:
    run = _run(_MAP_ALONE, timeout=45)
    assert run is not None and run.returncode == 0, run and run.stderr
    out = json.loads(run.stdout)
    assert out["squares"] == [n * n for n in range(40)]
    assert out["parent"] not in out["pids"] and out["ppids"] == [out["parent"]]


def test_workers_keep_the_heap_for_their_whole_life() -> None:
    threading.Thread(target=threading.Event().wait, args=(5,), daemon=True).start()
    results = list(map_files(_kept_depth, list(range(24)), 2))  # from the fork server
    assert {pid for _, pid in results}.isdisjoint({os.getpid()})
    # Entered once by the worker's initializer, outside any file's own block.
    assert [depth for depth, _ in results] == [1] * 24


def test_one_job_runs_in_this_process() -> None:
    results = list(map_files(_kept_depth, list(range(3)), 1))
    assert results == [(1, os.getpid())] * 3
