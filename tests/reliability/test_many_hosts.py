"""Many hosts, one capture directory: writers whose `flock` is refused or local only.

Real where this machine allows it: two FUSE mounts (bindfs) of one directory are two
clients of one shared filesystem, each with its own kernel inode, so `flock` through one
does not exclude the other and an `O_APPEND` write goes at the size that mount last saw,
as on NFS `nolock`. On them the shared layout loses lines, and `auto` (which reads the
real mount table) writes segments and loses none.

What is stood in (this machine has one kernel, no NFS client and no second host):

- a host: a real writer process whose `socket.gethostname()` answers another name (the
  name segments carry, and what the reader's liveness check compares);
- a filesystem that refuses `flock`: `fcntl.flock` raises ENOLCK at the OS call in that
  process (as NFS without lockd and some FUSE mounts do);
- an NFS mount whose locks are local to each client: the process's mount table
  (`store._mounts.MOUNTINFO`) says the capture directory is on `nfs` with `nolock`.

Everything else is real: processes, threads racing on the same rollouts, files, fsync,
SIGKILL. A third kind of writer takes real, working `flock`s and writes the shared file,
so the directory holds both layouts at once. Each writer acknowledges a line (in its ack
file) only after `append` returned.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import require_capability
from model_call_capture.collection import build_model_call_capture
from model_call_capture.errors import DamagedLineError
from model_call_capture.records import read_available_model_call_records
from model_call_capture.store import CaptureStore

from .conftest import Figure, sized

_WRITER = r"""
import errno, fcntl, json, os, socket, sys, threading, time
root, host, mode, ack_path, go, lines, rollouts, threads, pad = sys.argv[1:10]
lines, rollouts, threads, pad = int(lines), int(rollouts), int(threads), int(pad)
socket.gethostname = lambda: host
if mode == "refused":
    def refused(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")
    fcntl.flock = refused
from model_call_capture.store import CaptureStore, _mounts
if mode == "nolock":
    table = ack_path + ".mountinfo"
    real = _mounts.MOUNTINFO.read_text()
    mount = _mounts.mount_of(_mounts.Path(root), _mounts.parse_mountinfo(real))
    major, minor = mount.device
    with open(table, "w") as f:
        f.write(real + f"999 1 {major}:{minor} / {mount.mount_point} rw - nfs srv:/x rw,vers=3,nolock\n")
    _mounts.MOUNTINFO = _mounts.Path(table)
store = CaptureStore(root)
ack = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
while not os.path.exists(go):
    time.sleep(0.001)

def work(t):
    for i in range(lines):
        call = f"{host}-t{t}-{i}"
        line = {"model_call_id": call, "dialect": "chat", "status_code": 200,
                "completed_at": time.time(), "request": {"pad": "x" * pad}}
        store.append(f"r{i % rollouts}", json.dumps(line).encode())
        os.write(ack, (call + "\n").encode())

workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
for w in workers:
    w.start()
for w in workers:
    w.join()
print(store.written_layout())
"""


def _start(root: Path, host: str, mode: str, go: Path, **sizes: int) -> subprocess.Popen[str]:
    args = [str(sizes.get(k)) for k in ("lines", "rollouts", "threads", "pad")]
    ack = root.parent / f"{host}.ack"
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(root), host, mode, str(ack), str(go), *args],
        stdout=subprocess.PIPE,
        text=True,
    )


def _acked(path: Path) -> list[str]:
    return [x for x in path.read_text().split("\n") if x] if path.exists() else []


def test_racing_writers_without_coherent_locks_lose_no_acknowledged_line(
    tmp_path: Path, figures: list[Figure]
) -> None:
    root = tmp_path / "captures"
    go = tmp_path / "go"
    lines, rollouts = sized(60, 600), 3
    kinds = {"host-a": "refused", "host-b": "refused", "host-c": "nolock", "host-d": "locks"}
    writers = {
        host: _start(root, host, mode, go, lines=lines, rollouts=rollouts, threads=4, pad=2000)
        for host, mode in kinds.items()
    }
    time.sleep(1.0)  # every process imported the store and waits
    go.touch()
    layouts = {}
    for host, proc in writers.items():
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        layouts[host] = out.strip()
    assert layouts == {
        "host-a": "segments",
        "host-b": "segments",
        "host-c": "segments",
        "host-d": "shared",
    }
    acked = {host: _acked(tmp_path / f"{host}.ack") for host in kinds}
    assert all(len(ids) == 4 * lines for ids in acked.values())
    store = CaptureStore(root)
    assert store.rollout_ids() == [f"r{i}" for i in range(rollouts)]
    seen: list[str] = []
    for rollout_id in store.rollout_ids():
        records, damaged = read_available_model_call_records(store, rollout_id)
        assert damaged == 0
        assert [r.call_index for r in records] == list(range(len(records)))
        ids = [str(r.model_call_id) for r in records]
        seen.extend(ids)
        # Each writer thread's lines keep their order (its file's append order).
        for host in kinds:
            for t in range(4):
                mine = [int(x.rsplit("-", 1)[1]) for x in ids if x.startswith(f"{host}-t{t}-")]
                assert mine == sorted(mine)
        capture = build_model_call_capture(rollout_id, root)
        assert capture.metrics.num_calls == len(records) and not capture.gaps
    every = [call for ids in acked.values() for call in ids]
    assert sorted(seen) == sorted(every)  # every acknowledged line exactly once
    assert len(set(seen)) == len(seen)
    figures.append(
        Figure(
            "writers on several hosts without coherent locks (segments)",
            "stand-in: 4 processes x 4 threads racing on 3 rollouts; 2 with flock refused "
            "(ENOLCK), 1 whose mount table says nfs nolock, 1 with real flock on the shared file",
            4,
            len(every),
            0,
            "every acknowledged line read exactly once, in one order by every reader",
        )
    )


_KILLED = r"""
import json, os, sys, time
root, ack_path = sys.argv[1:3]
from model_call_capture.store import CaptureStore
store = CaptureStore(root, layout="segments")
ack = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
pad = "y" * (8 << 20)  # a write long enough for a SIGKILL to land inside it
i = 0
while True:
    call = f"k{i}"
    line = {"model_call_id": call, "dialect": "chat", "completed_at": time.time(), "request": {"pad": pad}}
    store.append("r", json.dumps(line).encode())
    os.write(ack, (call + "\n").encode())
    i += 1
"""


def test_a_killed_writer_leaves_at_most_one_torn_line_in_its_own_segment(
    tmp_path: Path, figures: list[Figure]
) -> None:
    torn_runs = 0
    runs = sized(6, 30)
    for run in range(runs):
        root = tmp_path / f"run{run}"
        ack = tmp_path / f"run{run}.ack"
        CaptureStore(root, layout="shared").append(
            "r", b'{"model_call_id": "shared", "completed_at": 1}'
        )
        proc = subprocess.Popen([sys.executable, "-c", _KILLED, str(root), str(ack)])
        deadline = time.monotonic() + 60
        while len(_acked(ack)) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        # Kill as soon as the next line's write has begun: the segment grew past its
        # last whole line (the kernel grows a file page by page as a write copies it).
        (segment,) = (root / "r.capture.segments").glob(f"*.{proc.pid}.*.jsonl")
        whole = segment.stat().st_size
        while segment.stat().st_size == whole and time.monotonic() < deadline:
            pass
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        acked = _acked(ack)
        store = CaptureStore(root)
        records, damaged = read_available_model_call_records(store, "r")
        ids = [str(r.model_call_id) for r in records]
        assert ids[0] == "shared" and set(acked) <= set(ids[1:])
        assert len(ids) - 1 <= len(acked) + 1  # at most the one line written but not acknowledged
        torn = not segment.read_bytes().endswith(b"\n")
        # The writer's pid is gone on this host: a torn tail is counted at once, and named.
        assert damaged == (1 if torn else 0)
        if torn:
            torn_runs += 1
            capture = build_model_call_capture("r", root)
            named = segment.relative_to(root)
            assert [(g.code, g.detail) for g in capture.gaps or []] == [
                ("model_call_capture_records_unreadable", f"count=1; {named}: 1")
            ]
            try:
                store.read("r")
            except DamagedLineError as exc:
                assert exc.path == segment
            else:
                raise AssertionError("the torn line was not reported")
    print(f"{torn_runs} of {runs} kills tore a line")
    assert torn_runs >= 1, "no kill landed inside a write: the test proved nothing"
    figures.append(
        Figure(
            "a writer of segments killed (SIGKILL) mid-write",
            f"real: SIGKILL of a process writing 8 MB lines to its segment, {runs} runs",
            runs,
            "-",
            0,
            f"{torn_runs} runs left one torn line, in the killed writer's own segment: "
            "counted and named (records_unreadable `count=1; <segment>: 1`); every "
            "acknowledged line read",
        )
    )


@pytest.fixture
def two_clients(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """One directory mounted twice with FUSE (bindfs): the backing directory, mount a, mount b."""
    require_capability(
        "bindfs and FUSE as root",
        shutil.which("bindfs") is not None and os.path.exists("/dev/fuse") and os.geteuid() == 0,
        "two real FUSE mounts stand for two clients of one shared filesystem",
    )
    back, a, b = tmp_path / "back", tmp_path / "a", tmp_path / "b"
    for d in (back, a, b):
        d.mkdir()
    mounted = []
    try:
        for m in (a, b):
            subprocess.run(["bindfs", str(back), str(m)], check=True, timeout=30)
            mounted.append(m)
        yield back, a, b
    finally:
        for m in mounted:
            subprocess.run(["umount", "-l", str(m)], check=False, timeout=30)


_APPENDER = r"""
import json, os, sys, time
from model_call_capture.store import CaptureStore
root, tag, layout, n, go = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
store = CaptureStore(root, layout=layout)
while not os.path.exists(go):
    time.sleep(0.001)
for i in range(n):
    line = {"model_call_id": f"{tag}-{i}", "completed_at": time.time(), "pad": "x" * 500}
    store.append("r", json.dumps(line).encode())
print(store.written_layout())
"""


def _race(a: Path, b: Path, layout: str, n: int, go: Path) -> list[str]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _APPENDER, str(m / "cap"), tag, layout, str(n), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for m, tag in ((a, "A"), (b, "B"))
    ]
    time.sleep(1.0)
    go.touch()
    layouts = []
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        layouts.append(out.strip())
    go.unlink()
    return layouts


def test_two_fuse_clients_lose_shared_appends_and_none_with_auto(
    two_clients: tuple[Path, Path, Path], figures: list[Figure]
) -> None:
    back, a, b = two_clients
    go = back.parent / "go"
    n = sized(1500, 10_000)
    # Real flock through one mount does not exclude a holder through the other.
    fa, fb = os.open(a / "probe", os.O_RDWR | os.O_CREAT, 0o600), os.open(b / "probe", os.O_RDWR)
    try:
        fcntl.flock(fa, fcntl.LOCK_EX)
        fcntl.flock(fb, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no BlockingIOError: local locks
    finally:
        os.close(fa)
        os.close(fb)
    assert _race(a, b, "shared", n, go) == ["shared", "shared"]
    lost_lines, damaged = read_available_model_call_records(CaptureStore(back / "cap"), "r")
    lost = 2 * n - len({str(r.model_call_id) for r in lost_lines})
    shutil.rmtree(back / "cap")
    assert _race(a, b, "auto", n, go) == ["segments", "segments"]
    records, auto_damaged = read_available_model_call_records(CaptureStore(back / "cap"), "r")
    ids = [str(r.model_call_id) for r in records]
    assert auto_damaged == 0 and sorted(ids) == sorted(
        f"{tag}-{i}" for tag in "AB" for i in range(n)
    )
    assert build_model_call_capture("r", a / "cap").metrics.num_calls == 2 * n
    figures.append(
        Figure(
            "two clients of one shared filesystem whose flock is local to each",
            f"real: two FUSE mounts (bindfs) of one directory, one writer process on each, "
            f"{n} appends each to one rollout",
            2,
            2 * n,
            0,
            f"auto writes segments (from the real mount table): every acknowledged line read "
            f"once; the shared layout forced on the same mounts lost {lost} acknowledged "
            f"lines and left {damaged} damaged",
        )
    )
