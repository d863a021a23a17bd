"""Processes and threads appending to the same and to different rollouts while readers read.

Writers are real subprocesses and real threads on one real directory; every line has a
content fixed by its id, so a reader can tell a complete line from a partial or mixed one.
The no-flock variant is a stand-in for an NFS/FUSE mount without locks: `fcntl.flock`
raises ENOLCK at the OS call in every writer and reader (no such mount exists here). The
shared layout is forced in both (`capture_layout: auto` writes segments without flock:
tests/reliability/test_many_hosts.py), so this is what a forced shared layout does there.
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest

from model_call_capture.contracts import CaptureLine
from model_call_capture.store import CaptureStore, _locking

from .conftest import Figure, sized

_WRITER = r"""
import errno, fcntl, sys, zlib
from model_call_capture.contracts import CaptureLine
from model_call_capture.store import CaptureStore

root, name, count, no_flock = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
if no_flock:
    def refuse(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")
    fcntl.flock = refuse
store = CaptureStore(root, layout="shared")
for i in range(count):
    line = CaptureLine(model_call_id=f"{name}-{i}", request={"pad": "p" * (zlib.crc32(f"{name}-{i}".encode()) % 200_000)})
    store.append("shared", line)
    store.append(f"own-{name}", line)
"""


def _pad(call_id: str) -> str:
    return "p" * (zlib.crc32(call_id.encode()) % 200_000)


def _run(root: Path, *, no_flock: bool) -> tuple[int, int, int, int, int]:
    """(writers, lines written, lines on disk, reads that saw a damaged line, blank lines)."""
    count = sized(60, 600)
    procs, threads = 3, 3
    store = CaptureStore(root, layout="shared")
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _WRITER,
                str(root),
                f"proc{p}",
                str(count),
                "1" if no_flock else "0",
            ]
        )
        for p in range(procs)
    ]
    errors: list[BaseException] = []
    stop = threading.Event()
    damaged_seen: list[int] = []
    reads = 0

    def write(name: str) -> None:
        try:
            for i in range(count):
                line = CaptureLine(
                    model_call_id=f"{name}-{i}", request={"pad": _pad(f"{name}-{i}")}
                )
                store.append("shared", line)
                store.append(f"own-{name}", line)
        except BaseException as exc:
            errors.append(exc)

    def read() -> None:
        nonlocal reads
        try:
            while not stop.is_set():
                lines, damaged = store.read_available("shared")
                damaged_seen.append(damaged)
                reads += 1
                for _, line in lines:  # a line read as valid is a whole line, never a part
                    assert line.request == {"pad": _pad(line.model_call_id or "")}, (
                        line.model_call_id
                    )
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    thread_writers = [threading.Thread(target=write, args=(f"thread{t}",)) for t in range(threads)]
    for t in thread_writers:
        t.start()
    for t in thread_writers:
        t.join()
    for p in writers:
        assert p.wait(timeout=120) == 0
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors[:3]
    assert reads > 0

    names = [f"proc{p}" for p in range(procs)] + [f"thread{t}" for t in range(threads)]
    raw = store.path("shared").read_bytes()
    assert raw.endswith(b"\n")
    parts = raw.split(b"\n")[:-1]
    blank = sum(1 for part in parts if not part)
    if not no_flock:
        assert blank == 0
    docs = [json.loads(part) for part in parts if part]  # an interleaving breaks the JSON
    ids = [d["model_call_id"] for d in docs]
    assert sorted(ids) == sorted(f"{n}-{i}" for n in names for i in range(count))
    for d in docs:
        assert d["request"] == {"pad": _pad(d["model_call_id"])}
    for n in names:
        assert [i for i in ids if i.rpartition("-")[0] == n] == [f"{n}-{i}" for i in range(count)]
        own = [
            json.loads(p)["model_call_id"]
            for p in store.path(f"own-{n}").read_bytes().splitlines()
            if p
        ]
        assert own == [f"{n}-{i}" for i in range(count)]
    on_disk = len(ids) + len(names) * count
    return len(names), len(names) * count * 2, on_disk, sum(1 for d in damaged_seen if d), blank


def test_processes_and_threads_append_while_readers_read(
    tmp_path: Path, figures: list[Figure]
) -> None:
    writers, written, on_disk, damaged_reads, _ = _run(tmp_path, no_flock=False)
    # With flock a reader never even sees a line being written.
    assert damaged_reads == 0
    figures.append(
        Figure(
            "processes and threads appending to one shared and to their own rollout files, readers reading",
            "real: 3 processes + 3 threads, 2 reader threads, lines up to 200 KB",
            writers,
            on_disk,
            written - on_disk,
            "nothing: no interleaving, no lost line, readers never saw a partial line",
        )
    )


def test_without_flock_lines_still_never_interleave_on_one_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, figures: list[Figure]
) -> None:
    def refuse(fd: int, operation: int) -> None:
        raise OSError(37, "No locks available")

    monkeypatch.setattr(fcntl, "flock", refuse)
    monkeypatch.setattr(_locking, "_warned_no_locks", True)  # warned once; tested in test_store
    writers, written, on_disk, damaged_reads, blank = _run(tmp_path, no_flock=True)
    # Without the lock a reader may see the first part of a line still being written: it
    # counts it as damaged for that read (never as valid), and the line is whole afterwards.
    # A writer may likewise take a line in progress for a torn one and start on a fresh
    # line: a blank line, which every reader skips without counting.
    print(f"reads that saw a line in progress as damaged: {damaged_reads}; blank lines: {blank}")
    figures.append(
        Figure(
            "filesystem without flock (NFS/FUSE refusing locks), shared layout forced",
            "stand-in: flock raises ENOLCK at the OS call in every writer and reader; 3 processes + 3 threads",
            writers,
            on_disk,
            written - on_disk,
            "one warning; no interleaving on one host (one O_APPEND write per line); a reader may "
            f"transiently count a line still being written as damaged ({damaged_reads} reads here); "
            f"a writer may add a blank line, which readers skip ({blank} here)",
        )
    )
