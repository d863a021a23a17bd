"""CaptureStore: durable appends, tolerant reads, and rollout ids that cannot escape the directory."""

from __future__ import annotations

import errno
import fcntl
import itertools
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import require_capability
from model_call_capture import _codec
from model_call_capture.contracts import CaptureLine, ModelRef
from model_call_capture.errors import (
    DamagedLineError,
    InvalidRolloutIdError,
    UnsupportedFormatError,
)
from model_call_capture.store import (
    CaptureStore,
    FileVersion,
    ListedRollout,
    Rollout,
    _locking,
    _writer,
    capture_files_under,
    read_file_lines,
)


def _line(call_id: str, **fields: object) -> CaptureLine:
    return CaptureLine(
        model_call_id=call_id,
        dialect="chat",
        model_ref=ModelRef(type="responses_api_models", name="policy"),
        status_code=200,
        **fields,  # type: ignore[arg-type]
    )


def _codec_line(call_id: str) -> bytes:
    return msgspec.json.encode(_line(call_id)) + b"\n"


# -- rollout ids ---------------------------------------------------------------------------


def test_invalid_rollout_id_is_refused_before_touching_a_path(tmp_path: Path) -> None:
    root = tmp_path / "captures"
    store = CaptureStore(root)
    for call in (
        lambda: store.append("../escape", _line("c")),
        lambda: store.read("../escape"),
        lambda: store.read_available("/abs"),
        lambda: store.rollout("a/b"),
        lambda: store.mark_incomplete(".."),
        lambda: store.is_incomplete(".."),
        lambda: store.clear("../x"),
        lambda: store.path("a\x00"),
    ):
        with pytest.raises(InvalidRolloutIdError):
            call()
    assert not root.exists()


def test_an_id_that_is_not_a_plain_string_cannot_take_a_validated_ids_file(tmp_path: Path) -> None:
    # The store remembers the paths of ids it validated: a str subclass that hashes and
    # compares like one of them, or an id that is not a string at all, is validated itself.
    class Lookalike(str):
        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return hash("a")

    store = CaptureStore(tmp_path)
    store.append("a", _line("mine"))
    for rollout_id in (Lookalike("../escape"), ["a"]):
        with pytest.raises(InvalidRolloutIdError):
            store.append(rollout_id, _line("theirs"))  # type: ignore[arg-type]
    assert [ln.model_call_id for ln in store.read("a")] == ["mine"]


# -- appending -----------------------------------------------------------------------------


def test_append_writes_one_compact_line_and_creates_the_directory(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path / "new" / "dir")
    store.append("1-0", _line("call-a", request={"input": "hi"}))
    assert store.path("1-0") == tmp_path / "new" / "dir" / "1-0.capture.jsonl"
    raw = store.path("1-0").read_bytes()
    assert raw.startswith(b"{") and raw.endswith(b"}\n") and raw.count(b"\n") == 1
    assert b'"model_ref":{"type":"responses_api_models","name":"policy"}' in raw  # compact
    parsed = json.loads(raw)
    assert (
        parsed["model_call_id"],
        parsed["dialect"],
        parsed["status_code"],
        parsed["request"],
    ) == (
        "call-a",
        "chat",
        200,
        {"input": "hi"},
    )


def test_files_are_created_with_mode_0600_by_default(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        store = CaptureStore(tmp_path)
        store.append("1-0", _line("a"))
        store.mark_incomplete("1-0")
        custom = CaptureStore(tmp_path / "shared", file_mode=0o640)
        custom.append("1-0", _line("a"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(store.path("1-0").stat().st_mode) == 0o600
    assert stat.S_IMODE(store.incomplete_path("1-0").stat().st_mode) == 0o600
    assert stat.S_IMODE(custom.path("1-0").stat().st_mode) == 0o640


def test_append_accepts_encoded_bytes_and_adds_the_newline(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", b'{"model_call_id":"x"}')
    store.append("r", b'{"model_call_id":"y"}\n')
    assert store.path("r").read_bytes() == b'{"model_call_id":"x"}\n{"model_call_id":"y"}\n'


@pytest.mark.parametrize(
    "data",
    # two lines; empty; blank; a line after a newline; a line and a blank line after it
    [b'{"a":1}\n{"b":2}\n', b"", b"\n", b"  \n", b'\n{"a":1}', b'{"a":1}\n\n'],
)
def test_append_refuses_bytes_that_are_not_one_line(tmp_path: Path, data: bytes) -> None:
    store = CaptureStore(tmp_path)
    with pytest.raises(ValueError, match=r"^a capture line must be one non-empty line of JSON$"):
        store.append("r", data)
    assert not store.exists("r")


def test_lines_that_a_stdlib_encoder_would_lose_round_trip(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    big = 2**80 + 1
    line = _line("big", response={"usage": {"prompt_tokens": big}, "text": '\u2028 "q" \\ \x01'})
    store.append("r", line)
    raw = store.path("r").read_bytes()
    assert raw.count(b"\n") == 1
    assert json.loads(raw)["response"]["usage"]["prompt_tokens"] == big
    assert store.read("r") == [line]


def test_append_after_a_torn_line_starts_a_fresh_line(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("first"))
    with open(store.path("r"), "ab") as f:  # what a writer killed mid-write leaves behind
        f.write(b'{"model_call_id": "torn", "resp')
    store.append("r", _line("after"))

    raw = store.path("r").read_bytes()
    assert raw.split(b"\n")[1:3] == [b'{"model_call_id": "torn", "resp', _codec_line("after")[:-1]]
    lines, damaged = store.read_available("r")
    assert [(i, ln.model_call_id) for i, ln in lines] == [(0, "first"), (2, "after")]
    assert damaged == 1


def test_a_symlink_in_the_directory_cannot_redirect_a_write(tmp_path: Path) -> None:
    root = tmp_path / "captures"
    root.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious\n")
    outside.chmod(0o600)  # a private file of ours: only the symlink refusal protects it
    (root / "r.capture.jsonl").symlink_to(outside)
    (root / "r.capture.incomplete").symlink_to(tmp_path / "elsewhere")
    store = CaptureStore(root)

    # (tmp_path's own name holds "symlink": match the whole refusal)
    with pytest.raises(OSError, match="refusing to follow a symlink at "):
        store.append("r", _line("x"))
    with pytest.raises(OSError, match="refusing to follow a symlink at "):
        store.read("r")
    with pytest.raises(OSError, match="refusing to follow a symlink at "):
        store.mark_incomplete("r")
    assert outside.read_bytes() == b"precious\n"
    assert not (tmp_path / "elsewhere").exists()

    store.clear("r")  # removes the links, never their targets
    assert outside.read_bytes() == b"precious\n"
    assert list(root.iterdir()) == []


def test_a_directory_in_place_of_the_capture_file_is_an_oserror(tmp_path: Path) -> None:
    (tmp_path / "r.capture.jsonl").mkdir()
    with pytest.raises(OSError):
        CaptureStore(tmp_path).append("r", _line("x"))


def test_an_unwritable_directory_raises_oserror(tmp_path: Path) -> None:
    target = tmp_path / "captures"
    target.mkdir()
    if os.geteuid() != 0:
        target.chmod(0o500)
        try:
            with pytest.raises(PermissionError):
                CaptureStore(target).append("r", _line("x"))
        finally:
            target.chmod(0o700)
        return
    # Root ignores permission bits, so make the directory unwritable for real: a read-only
    # bind mount of it onto itself.
    mounted = subprocess.run(["mount", "--bind", str(target), str(target)], capture_output=True)
    require_capability(
        "mount (a read-only bind mount, as root)",
        mounted.returncode == 0,
        f"root without mount rights: {mounted.stderr.decode().strip()}",
    )
    try:
        subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(target)], check=True, capture_output=True
        )
        with pytest.raises(OSError) as raised:
            CaptureStore(target).append("r", _line("x"))
        assert raised.value.errno == errno.EROFS
    finally:
        subprocess.run(["umount", str(target)], check=True)


def test_creating_a_capture_file_fsyncs_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file's own fsync does not make its directory entry durable: a crash could lose a
    # new capture file whole. Spy on every fsync and note which were of the directory.
    real_fsync = os.fsync
    synced: list[tuple[str, bool]] = []  # (what the fd is, did the capture file exist then)
    root = tmp_path / "captures"
    store = CaptureStore(root)

    def spy(fd: int) -> None:
        st = os.fstat(fd)
        is_root = stat.S_ISDIR(st.st_mode) and os.path.samestat(st, os.stat(root))
        kind = "root" if is_root else "dir" if stat.S_ISDIR(st.st_mode) else "file"
        synced.append((kind, store.path("r").exists()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    store.append("r", _line("first"))
    assert ("root", True) in synced  # the directory, after the file was created in it
    assert [kind for kind, _ in synced if kind != "file"] == ["root"]
    synced.clear()
    store.append("r", _line("second"))
    assert [kind for kind, _ in synced] == ["file"]  # an existing file: only its own fsync
    store.mark_incomplete("r")
    assert [kind for kind, _ in synced] == ["file", "root"]


def test_a_failed_read_back_or_first_write_fails_the_append_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EIO reading back the last byte of a file another writer wrote, and ENOSPC on the
    # first write of this process to a new file: injected at the OS calls.
    store = CaptureStore(tmp_path)
    store.path("r").write_bytes(b'{"model_call_id":"x"}\n')
    store.path("r").chmod(0o600)

    def failing_pread(fd: int, n: int, offset: int) -> bytes:
        raise OSError(errno.EIO, "Input/output error")

    def failing_write(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pread", failing_pread)
    with pytest.raises(OSError) as read_back:
        store.append("r", _line("a"))
    monkeypatch.undo()
    monkeypatch.setattr(os, "write", failing_write)
    with pytest.raises(OSError) as first_write:
        store.append("new", _line("a"))
    monkeypatch.undo()
    assert (read_back.value.errno, first_write.value.errno) == (errno.EIO, errno.ENOSPC)
    assert [ln.model_call_id for ln in store.read("r")] == ["x"]
    assert store.path("new").read_bytes() == b""


def test_a_failed_fsync_of_the_new_files_directory_fails_the_append_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EIO from a directory's fsync: injected at the OS call (the real-EIO test of
    # tests/reliability/test_disk_faults.py fails the file's own fsync).
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    store = CaptureStore(tmp_path / "captures")
    with pytest.raises(OSError) as info:
        store.append("r", _line("x"))
    assert info.value.errno == errno.EIO


def test_after_a_failed_directory_fsync_appends_fail_until_the_directory_is_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The new file stays when its directory's fsync fails, but its entry may not survive a
    # crash: an append that returned then would claim a durability it lacks. EIO from the
    # directory's fsync is injected at the OS call, twice, then the disk recovers.
    real_fsync = os.fsync
    directory_fsyncs: list[bool] = []  # True for each one that failed

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            directory_fsyncs.append(len(directory_fsyncs) < 2)
            if directory_fsyncs[-1]:
                raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    store = CaptureStore(tmp_path / "captures")
    with pytest.raises(OSError):
        store.append("r", _line("x"))
    assert store.path("r").exists()
    with pytest.raises(OSError) as again:
        store.append("r", _line("y"))  # the file exists now: the directory is synced again
    assert again.value.errno == errno.EIO
    store.append("r", _line("z"))
    store.append("r", _line("w"))
    assert directory_fsyncs == [True, True, False]  # none once one succeeded
    assert [ln.model_call_id for ln in store.read("r")] == ["z", "w"]


def test_a_failed_fsync_fails_the_append(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # EIO cannot be provoked on this machine's disk without root: injected at the OS call.
    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    store = CaptureStore(tmp_path)
    # A private file of ours: the store refuses files others could read or change.
    (tmp_path / "r.capture.jsonl").touch(mode=0o600)
    with pytest.raises(OSError, match="fsync failed"):
        store.append("r", _line("x"))


# -- group commit --------------------------------------------------------------------------


def test_concurrent_appends_share_fsyncs_and_each_returns_after_one_covering_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = os.fsync
    covered: list[int] = []  # file sizes at the start of each finished fsync
    lock = threading.Lock()

    def observed_fsync(fd: int) -> None:
        size = os.fstat(fd).st_size
        real_fsync(fd)
        with lock:
            covered.append(size)

    monkeypatch.setattr(os, "fsync", observed_fsync)
    store = CaptureStore(tmp_path)
    store.append("r", _line("warm-up"))  # creates the file (and fsyncs the directory)
    covered.clear()

    threads_n = 32
    durable_at_return: dict[str, int] = {}
    barrier = threading.Barrier(threads_n)

    def worker(i: int) -> None:
        barrier.wait()
        store.append("r", _line(f"t{i:02d}"))
        with lock:
            durable_at_return[f"t{i:02d}"] = max(covered)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    raw = store.path("r").read_bytes()
    ends: dict[str, int] = {}
    offset = 0
    for chunk in raw.splitlines(keepends=True):
        offset += len(chunk)
        ends[json.loads(chunk)["model_call_id"]] = offset
    assert len(ends) == threads_n + 1
    for call_id, durable in durable_at_return.items():
        assert ends[call_id] <= durable, call_id
    assert len(covered) < threads_n, "concurrent appends should share fsyncs"


class _HeldFsync:
    """The real `os.fsync`, except that the first call waits until `release` is set."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        self.real = os.fsync

    def __call__(self, fd: int) -> None:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            assert self.release.wait(10)
        self.real(fd)


def _start_batch(
    store: CaptureStore, fsync: _HeldFsync, n: int, leader: str = "leader"
) -> tuple[list[threading.Thread], dict[str, BaseException | None]]:
    """One append held in its fsync, then `n` appends that queue behind it as one batch.

    `outcome` gets each append's exception (any, KeyboardInterrupt included) or None.
    """
    outcome: dict[str, BaseException | None] = {}

    def append(call_id: str) -> None:
        try:
            store.append("r", _line(call_id))
            outcome[call_id] = None
        except BaseException as exc:
            outcome[call_id] = exc

    threads = [threading.Thread(target=append, args=(leader,))]
    threads[0].start()
    assert fsync.entered.wait(10)
    threads += [threading.Thread(target=append, args=(f"f{i}",)) for i in range(n)]
    for t in threads[1:]:
        t.start()
    path = os.fspath(store.path("r"))
    for _ in range(1000):  # until every follower has joined the waiting batch
        pending = _writer._busy[path]
        if pending is not None and len(pending.lines) == n:
            break
        threading.Event().wait(0.01)
    assert pending is not None and len(pending.lines) == n
    return threads, outcome


def test_lines_appended_during_a_write_go_out_in_one_write_and_one_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("first"))  # creates the file (and fsyncs the directory)
    fsync = _HeldFsync()
    writes: list[int] = []
    real_writev = os.writev

    def counted_writev(fd: int, buffers: list[bytes]) -> int:
        writes.append(len(buffers))
        return real_writev(fd, buffers)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "writev", counted_writev)
    threads, outcome = _start_batch(store, fsync, 5)
    fsync.release.set()
    for t in threads:
        t.join()

    assert outcome == dict.fromkeys(["leader", "f0", "f1", "f2", "f3", "f4"])
    assert fsync.calls == 2  # the leader's line, then the five queued lines together
    assert writes == [5]
    ids = [str(line.model_call_id) for line in store.read("r")]
    assert ids[:2] == ["first", "leader"]
    assert sorted(ids[2:]) == ["f0", "f1", "f2", "f3", "f4"]


class _TwiceHeldFsync(_HeldFsync):
    """`_HeldFsync`, and the second call (a batch's) waits too, until `release_second` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.second_entered = threading.Event()
        self.release_second = threading.Event()

    def __call__(self, fd: int) -> None:
        if self.calls != 1:
            super().__call__(fd)
            return
        self.calls += 1
        self.second_entered.set()
        assert self.release_second.wait(10)
        self.real(fd)


def test_a_line_appended_while_a_batch_is_fsynced_waits_for_the_next_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Group commit holds after the first batch too: a line appended while the batch of
    # lines that queued behind the first write is in its fsync does not write on its own,
    # it starts the next batch (a write of its own would be a fourth fsync).
    store = CaptureStore(tmp_path)
    store.append("r", _line("first"))  # created already: no directory fsync below
    fsync = _TwiceHeldFsync()
    monkeypatch.setattr(os, "fsync", fsync)
    threads, outcome = _start_batch(store, fsync, 2)
    fsync.release.set()
    assert fsync.second_entered.wait(10)  # the batch of f0 and f1 is in its fsync
    late = threading.Thread(target=lambda: store.append("r", _line("late")))
    late.start()
    path = os.fspath(store.path("r"))
    waiting = False
    for _ in range(500):
        batch = _writer._busy.get(path)
        if batch is not None and len(batch.lines) == 1:
            waiting = True
            break
        threading.Event().wait(0.01)
    calls_while_held = fsync.calls
    fsync.release_second.set()
    for t in [*threads, late]:
        t.join(10)
    assert waiting, "the late line did not wait in the next batch"
    assert calls_while_held == 2
    assert fsync.calls == 3 and outcome == dict.fromkeys(["leader", "f0", "f1"])
    assert sorted(ln.model_call_id or "" for ln in store.read("r")) == [
        "f0",
        "f1",
        "first",
        "late",
        "leader",
    ]


@pytest.mark.parametrize(("whole", "part"), [(2, 10), (2, 0), (1, 0)])
def test_a_write_cut_inside_a_batch_fails_only_the_lines_not_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whole: int, part: int
) -> None:
    # ENOSPC mid-batch cannot be timed on a real full disk: injected at the OS calls. The
    # batch's writev writes `whole` whole lines and `part` bytes of the next (0: the cut
    # falls exactly between two lines); the retry of the rest fails, as on a disk that
    # just filled up.
    store = CaptureStore(tmp_path)
    store.append("r", _line("first"))
    fsync = _HeldFsync()
    real_write = os.write

    def short_writev(fd: int, buffers: list[bytes]) -> int:
        return real_write(fd, b"".join(buffers[:whole]) + bytes(buffers[whole][:part]))

    def full_write(fd: int, data: bytes) -> int:
        if fsync.release.is_set():
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "writev", short_writev)
    monkeypatch.setattr(os, "write", full_write)
    threads, outcome = _start_batch(store, fsync, 4)
    fsync.release.set()
    for t in threads:
        t.join()
    monkeypatch.undo()

    returned = {call_id for call_id, exc in outcome.items() if exc is None}
    failed = {call_id: exc for call_id, exc in outcome.items() if exc is not None}
    assert len(returned) == 1 + whole and "leader" in returned  # the leader, the whole lines
    assert len(failed) == 4 - whole
    assert all(isinstance(exc, OSError) and exc.errno == errno.ENOSPC for exc in failed.values())
    assert fsync.calls == 2  # the whole lines of the cut batch were still made durable
    store.append("r", _line("after"))
    lines, damaged = store.read_available("r")
    assert [line.model_call_id for _, line in lines][:2] == ["first", "leader"]
    assert {line.model_call_id for _, line in lines[2 : 2 + whole]} == returned - {"leader"}
    assert lines[-1][1].model_call_id == "after"
    assert len(lines) == 3 + whole
    assert damaged == (1 if part else 0)  # the cut line, alone on its line


def test_a_cut_batch_whose_fsync_fails_loses_its_whole_lines_to_the_fsync_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The batch's writev writes one whole line and 10 bytes of the next, the rest of the
    # write fails (ENOSPC), then its fsync fails too (EIO): all injected at the OS calls.
    store = CaptureStore(tmp_path)
    store.append("r", _line("first"))
    fsync = _HeldFsync()
    real_write = os.write

    def short_writev(fd: int, buffers: list[bytes]) -> int:
        return real_write(fd, bytes(buffers[0]) + bytes(buffers[1][:10]))

    def full_write(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)
    threads, outcome = _start_batch(store, fsync, 3)
    monkeypatch.setattr(os, "writev", short_writev)
    monkeypatch.setattr(os, "write", full_write)
    monkeypatch.setattr(os, "fsync", failing_fsync)
    fsync.release.set()
    for t in threads:
        t.join()
    monkeypatch.undo()
    assert outcome["leader"] is None
    errors = sorted(
        (exc.errno, str(exc))
        for call_id, exc in outcome.items()
        if call_id != "leader" and isinstance(exc, OSError)
    )
    assert errors == [
        (errno.EIO, "[Errno 5] fsync failed: Input/output error"),  # the whole line
        (errno.ENOSPC, "[Errno 28] No space left on device"),
        (errno.ENOSPC, "[Errno 28] No space left on device"),
    ]


@pytest.mark.parametrize("step", [7, 1])
def test_short_writes_are_completed_and_the_end_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: int
) -> None:
    # A regular file writes short only when the disk is nearly full or a signal lands:
    # injected at the OS calls, every write takes at most a few bytes (one, at worst).
    store = CaptureStore(tmp_path)
    store.append("r", _line("first"))
    fsync = _HeldFsync()
    real_write = os.write

    def short_writev(fd: int, buffers: list[bytes]) -> int:
        return real_write(fd, b"".join(buffers)[:10])

    def short_write(fd: int, data: bytes) -> int:
        return real_write(fd, bytes(data[:step]))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "writev", short_writev)
    monkeypatch.setattr(os, "write", short_write)
    threads, outcome = _start_batch(store, fsync, 2)  # the leader's one line, then a batch
    fsync.release.set()
    for t in threads:
        t.join()
    monkeypatch.undo()

    assert outcome == dict.fromkeys(["leader", "f0", "f1"])
    lines, damaged = store.read_available("r")
    assert damaged == 0
    ids = [str(line.model_call_id) for _, line in lines]
    assert ids[:2] == ["first", "leader"] and sorted(ids[2:]) == ["f0", "f1"]
    path = os.fspath(store.path("r"))
    st = os.stat(path)
    assert _writer._ends[path] == (st.st_dev, st.st_ino, st.st_size)


def test_a_batch_of_one_line_is_written_by_its_own_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("first"))
    fsync = _HeldFsync()
    monkeypatch.setattr(os, "fsync", fsync)
    threads, outcome = _start_batch(store, fsync, 1)
    fsync.release.set()
    for t in threads:
        t.join(10)
        assert not t.is_alive(), "the only line of a batch was left waiting for a leader"
    assert outcome == dict.fromkeys(["leader", "f0"])
    assert [str(line.model_call_id) for line in store.read("r")] == ["first", "leader", "f0"]


def test_a_batch_error_reaches_every_line_as_its_own_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A failing batch write is injected (the real cut write is covered above): this test is
    # about what the followers receive, an exception object of their own that says the same.
    store = CaptureStore(tmp_path)
    store.append("r", _line("first"))
    fsync = _HeldFsync()
    monkeypatch.setattr(os, "fsync", fsync)
    threads, outcome = _start_batch(store, fsync, 3)
    error = OSError(errno.ENOSPC, "No space left on device", "/captures/r.capture.jsonl")
    monkeypatch.setattr(_writer, "_write_durably", lambda path, lines, creation, **_: [error] * 3)
    fsync.release.set()
    for t in threads:
        t.join()
    assert outcome["leader"] is None
    failed = [outcome[f"f{i}"] for i in range(3)]
    assert sum(exc is error for exc in failed) == 1  # the batch's leader raises the original
    copies = [exc for exc in failed if exc is not error]
    assert len(copies) == 2 and copies[0] is not copies[1]
    for exc in copies:
        assert isinstance(exc, OSError)
        assert (exc.errno, exc.strerror, exc.filename) == (
            errno.ENOSPC,
            "No space left on device",
            "/captures/r.capture.jsonl",
        )
        assert exc.__cause__ is error


def test_the_batch_leader_raises_the_error_itself_and_the_others_a_copy_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The batch's fsync fails (EIO injected at the OS call): its lines were written, so the
    # file tells which thread led the batch (the first of it), and that thread raises the
    # error whose cause is the fsync's own; the others raise copies caused by it.
    store = CaptureStore(tmp_path)
    fsync = _HeldFsync()
    monkeypatch.setattr(os, "fsync", fsync)
    threads, outcome = _start_batch(store, fsync, 3)
    injected = OSError(errno.EIO, "Input/output error")

    def failing_fsync(fd: int) -> None:
        raise injected

    monkeypatch.setattr(os, "fsync", failing_fsync)
    fsync.release.set()
    for t in threads:
        t.join()
    monkeypatch.undo()
    ids = [json.loads(raw)["model_call_id"] for _, raw in read_file_lines(store.path("r"))]
    assert ids[0] == "leader" and sorted(ids[1:]) == ["f0", "f1", "f2"]
    batch_leader, *others = (outcome[i] for i in ids[1:])
    assert isinstance(batch_leader, OSError) and batch_leader.__cause__ is injected
    assert str(batch_leader) == "[Errno 5] fsync failed: Input/output error"
    for exc in others:
        assert isinstance(exc, OSError) and exc.__cause__ is batch_leader
        assert str(exc) == str(batch_leader)


def test_an_interrupted_batch_leader_fails_its_batch_and_releases_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A KeyboardInterrupt (or any BaseException) inside a worker thread's write cannot be
    # delivered by a signal (signals reach the main thread only): injected at the write.
    store = CaptureStore(tmp_path)
    store.append("r", _line("first"))
    fsync = _HeldFsync()
    monkeypatch.setattr(os, "fsync", fsync)
    threads, outcome = _start_batch(store, fsync, 3, leader="held")

    def interrupted(path: str, lines: list[bytes], creation: object, **_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_writer, "_write_durably", interrupted)
    fsync.release.set()
    for t in threads:
        t.join(10)
        assert not t.is_alive(), "a follower of an interrupted batch was left waiting"
    assert outcome["held"] is None
    failed = [outcome[f"f{i}"] for i in range(3)]
    assert sum(isinstance(exc, KeyboardInterrupt) for exc in failed) == 1
    others = [exc for exc in failed if not isinstance(exc, KeyboardInterrupt)]
    assert len(others) == 2
    for exc in others:
        assert isinstance(exc, OSError) and exc.errno == errno.EIO
        assert exc.strerror == "capture write interrupted: KeyboardInterrupt()"
    monkeypatch.undo()
    store.append("r", _line("after"))  # the file is not left busy
    assert [line.model_call_id for line in store.read("r")] == ["first", "held", "after"]


def test_an_append_to_a_free_file_checks_it_with_the_one_fstat_taken_under_its_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lock taken at once: the ownership, mode, link and size checks share one fstat,
    # taken once the lock is held (a file replaced before that is still seen: nlink 0).
    store = CaptureStore(tmp_path)
    store.append("r", _line("first"))  # created already: the creation's own fstat is not counted
    real_fstat, real_flock = os.fstat, fcntl.flock
    calls: list[str] = []

    def fstat(fd: int) -> os.stat_result:
        calls.append("fstat")
        return real_fstat(fd)

    def flock(fd: int, operation: int) -> None:
        calls.append("unlock" if operation == fcntl.LOCK_UN else "lock")
        real_flock(fd, operation)

    monkeypatch.setattr(os, "fstat", fstat)
    monkeypatch.setattr(fcntl, "flock", flock)
    store.append("r", _line("second"))
    monkeypatch.undo()
    assert calls == ["lock", "fstat", "unlock"]
    assert [line.model_call_id for line in store.read("r")] == ["first", "second"]


def test_a_planted_file_whose_lock_is_held_is_refused_without_waiting_for_it(
    tmp_path: Path,
) -> None:
    # Another user's file (here: one others may write, planted under the capture name)
    # whose lock its planter holds: refused before the append waits for that lock, which
    # might never be released.
    store = CaptureStore(tmp_path)
    path = store.path("r")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX)
    outcome: list[BaseException | None] = []

    def append() -> None:
        try:
            store.append("r", _line("x"))
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    writer = threading.Thread(target=append, daemon=True)
    writer.start()
    writer.join(10)
    stuck = writer.is_alive()
    os.close(fd)  # releases the lock: a writer that waited for it returns now
    writer.join(10)
    assert not stuck, "the append waited for the lock of a file it must refuse"
    assert len(outcome) == 1 and isinstance(outcome[0], OSError)
    assert outcome[0].errno == errno.EPERM and "lets other users change or read it" in str(
        outcome[0]
    )
    assert path.read_bytes() == b""


def test_a_planted_file_is_refused_as_such_when_its_lock_also_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lock is tried before the checks when it is free; a lock that fails on a file that
    # is not ours must still report the refusal (what the user can fix), not the lock error.
    store = CaptureStore(tmp_path)
    path = store.path("r")
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    path.chmod(0o666)

    def broken(fd: int, operation: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(fcntl, "flock", broken)
    with pytest.raises(OSError, match="lets other users change or read it") as caught:
        store.append("r", _line("x"))
    assert caught.value.errno == errno.EPERM


def test_a_file_mode_changed_after_construction_applies_to_new_files(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("a", _line("x"))
    store.file_mode = 0o640
    store.append("b", _line("x"))
    store.mark_incomplete("c")
    assert stat.S_IMODE(store.path("a").stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path("b").stat().st_mode) == 0o640
    assert stat.S_IMODE(store.incomplete_path("c").stat().st_mode) == 0o640


def test_a_root_changed_after_construction_takes_the_next_appends(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path / "a")
    store.append("r", _line("x"))
    store.root = tmp_path / "b"
    store.append("r", _line("y"))
    assert (tmp_path / "a" / "r.capture.jsonl").read_bytes().count(b"\n") == 1
    assert [line.model_call_id for line in store.read("r")] == ["y"]


def test_group_state_is_released_after_appends(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for i in range(3):
        store.append(f"r{i}", _line("x"))
    assert _writer._busy == {}


_WRITER = """
import sys
from model_call_capture.contracts import CaptureLine
from model_call_capture.store import CaptureStore
root, proc, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = CaptureStore(root)
pad = "x" * (proc * 3000)  # different sizes, some beyond a pipe buffer's atomic size
for i in range(count):
    store.append("shared", CaptureLine(model_call_id=f"p{proc}-{i}", request={"pad": pad}))
"""


def test_four_processes_append_to_one_file_without_losing_or_interleaving(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(p), "200"])
        for p in range(4)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    raw = CaptureStore(tmp_path).path("shared").read_bytes()
    lines = raw.split(b"\n")
    assert lines[-1] == b""
    decoded = [json.loads(line) for line in lines[:-1]]  # any interleaving breaks the JSON
    ids = [d["model_call_id"] for d in decoded]
    assert len(ids) == 800
    assert set(ids) == {f"p{p}-{i}" for p in range(4) for i in range(200)}
    for p in range(4):  # each process's own lines stay in its order
        own = [int(i.split("-")[1]) for i in ids if i.startswith(f"p{p}-")]
        assert own == list(range(200))
    assert all(d["request"]["pad"] == "x" * (int(d["model_call_id"][1]) * 3000) for d in decoded)


# -- reading -------------------------------------------------------------------------------


def test_reading_a_missing_rollout_gives_nothing(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path / "absent")
    assert store.read("r") == []
    assert store.read_available("r") == ([], 0)
    assert list(read_file_lines(store.path("r"))) == []
    assert store.rollout_ids() == []


def test_lines_appended_after_a_read_started_are_not_read(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    store.append("r", _line("b"))
    lines = iter(read_file_lines(store.path("r")))
    first = next(lines)  # the file is open and its size known from here on
    store.append("r", _line("late"))
    ids = [json.loads(raw)["model_call_id"] for _, raw in [first, *lines]]
    assert ids == ["a", "b"]
    assert [ln.model_call_id for ln in store.read("r")] == ["a", "b", "late"]


def test_every_byte_is_read_across_chunks_down_to_a_one_byte_file(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    # A big line and blank lines up to 1 MiB + 1 byte: the last newline is alone in the
    # second 1 MiB chunk of the read, and still counted.
    big = msgspec.json.encode(_line("big", request={"pad": "p" * ((1 << 20) - 40)}))
    tail = b"\n" * (1 + (1 << 20) - (len(big) % (1 << 20)))
    store.path("r").write_bytes(big + tail)
    lines = read_file_lines(store.path("r"))
    assert [len(raw) for _, raw in lines] == [len(big)]
    assert (lines.count, lines.unterminated) == (len(tail), False)  # blank ones included
    store.path("t").write_bytes(b"{")  # one byte: a line torn by a crash
    assert store.read_available("t") == ([], 1)


def test_a_file_read_with_editor_numbering_counts_from_one_with_blank_lines(
    tmp_path: Path,
) -> None:
    path = tmp_path / "any-name.jsonl"
    path.write_bytes(b'{"a":1}\n\n{"b":2}\n')
    assert list(read_file_lines(path, numbering="editor")) == [(1, b'{"a":1}'), (3, b'{"b":2}')]
    assert list(read_file_lines(path)) == [(0, b'{"a":1}'), (1, b'{"b":2}')]


def test_gym_numbering_skips_blank_lines_and_counts_damaged_ones(gym_reference_dir: Path) -> None:
    # collection/9-8: call-A, {not-json}, blank, [1,2], spaces, call-B, a torn last line.
    store = CaptureStore(gym_reference_dir / "collection")
    assert [(i, raw[:20]) for i, raw in read_file_lines(store.path("9-8"))] == [
        (0, b'{"model_call_id":"ca'),
        (1, b"{not-json}"),
        (2, b"[1,2]"),
        (3, b'{"model_call_id":"ca'),
        (4, b'{"model_call_id": "c'),
    ]
    lines, damaged = store.read_available("9-8")
    assert [(i, ln.model_call_id) for i, ln in lines] == [(0, "call-A"), (3, "call-B")]
    assert damaged == 3


def test_a_line_with_wrong_field_types_is_damaged(gym_reference_dir: Path) -> None:
    # collection/9-7: {"model_ref":{"type":"bogus","name":1}}
    lines, damaged = CaptureStore(gym_reference_dir / "collection").read_available("9-7")
    assert [(i, ln.model_call_id) for i, ln in lines] == [(0, "call-A")]
    assert damaged == 1


def test_read_names_the_file_and_line_of_a_damaged_line(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.path("r").write_bytes(b'{"model_call_id":"a"}\n\n{oops}\n')
    with pytest.raises(DamagedLineError) as info:
        store.read("r")
    assert info.value.path == tmp_path / "r.capture.jsonl"
    assert (info.value.line_index, info.value.line) == (1, 3)  # editors count the blank line
    assert f"{tmp_path / 'r.capture.jsonl'}, line 3: " in str(info.value)


def test_unknown_fields_are_accepted(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.path("r").write_bytes(
        b'{"model_call_id":"a","a_later_field":{"x":[1]},"client_session_id":"s","format":"model-call-capture/1"}\n'
    )
    # `client_session_id` is a field since schema 1.1; `a_later_field` is unknown and ignored.
    assert store.read("r") == [
        CaptureLine(model_call_id="a", format="model-call-capture/1", client_session_id="s")
    ]


@pytest.mark.parametrize(
    "line",
    [
        b'{"format":"model-call-capture/2","model_call_id":"a"}',
        b'{"format":"model-call-capture/17","model_call_id":7}',  # also invalid as v1
    ],
)
def test_a_future_format_is_a_typed_error_naming_file_and_line(tmp_path: Path, line: bytes) -> None:
    store = CaptureStore(tmp_path)
    store.path("r").write_bytes(b'{"model_call_id":"ok"}\n' + line + b"\n")
    for read in (store.read, store.read_available):
        with pytest.raises(UnsupportedFormatError) as info:
            read("r")
        assert info.value.path == tmp_path / "r.capture.jsonl"
        assert (info.value.line_index, info.value.line) == (1, 2)
        assert "line 2 " in str(info.value)
        assert "newer than this reader" in str(info.value)


def test_an_unknown_format_name_is_refused(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.path("r").write_bytes(b'{"format":"something-else/1"}\n')
    with pytest.raises(UnsupportedFormatError, match="unknown format 'something-else/1'"):
        store.read("r")


def test_readers_see_only_complete_lines_while_writers_append(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    stop = threading.Event()
    seen_damaged: list[int] = []

    def reader() -> None:
        while not stop.is_set():
            _, damaged = store.read_available("r")
            seen_damaged.append(damaged)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(200):
            store.append("r", _line(f"c{i}", request={"pad": "y" * 70_000}))
    finally:
        stop.set()
        t.join()
    assert seen_damaged and set(seen_damaged) == {0}
    assert len(store.read("r")) == 200


# -- markers, clearing, listing -------------------------------------------------------------


def test_incomplete_marker_clear_and_rollout_ids(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("1-0", _line("a"))
    store.append("1-1", _line("b"))
    store.mark_incomplete("1-1")
    store.mark_incomplete("2-0")
    (tmp_path / "notes.txt").write_text("not a capture")
    (tmp_path / "-bad.capture.jsonl").write_text("")
    assert store.rollout_ids() == ["1-0", "1-1", "2-0"]
    assert (store.is_incomplete("1-0"), store.is_incomplete("1-1")) == (False, True)
    assert store.incomplete_path("1-1").read_bytes() == b""

    store.clear("1-1")
    store.clear("never-existed")
    assert not store.path("1-1").exists()
    assert not store.is_incomplete("1-1")
    assert store.rollout_ids() == ["1-0", "2-0"]

    store.append("1-1", _line("fresh"))
    assert [ln.model_call_id for ln in store.read("1-1")] == ["fresh"]


def test_listing_says_what_changed_without_opening_a_file(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("1-0", _line("a"))
    store.mark_incomplete("1-0")
    store.mark_incomplete("2-0")
    (tmp_path / "dir.capture.jsonl").mkdir()
    (tmp_path / "link.capture.jsonl").symlink_to(store.path("1-0"))
    (tmp_path / "notes.txt").write_text("not a capture")
    info = store.path("1-0").stat()
    assert store.listing() == {
        "1-0": ListedRollout(
            Rollout("1-0", (store.path("1-0"),)),
            (FileVersion(info.st_ino, info.st_size, info.st_mtime_ns),),
            True,
        ),
        "2-0": ListedRollout(Rollout("2-0", ()), (), True),
    }
    assert store.rollouts() == [store.listing()[i].rollout for i in ("1-0", "2-0")]
    store.append("1-0", _line("b"))
    (grown,) = store.listing()["1-0"].versions
    assert grown.inode == info.st_ino and grown.size > info.st_size
    assert CaptureStore(tmp_path / "missing").listing() == {}


def test_lines_from_an_offset_are_what_was_appended_since(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    first = read_file_lines(store.path("r"))
    assert [raw for _, raw in first] != [] and first.size == store.path("r").stat().st_size
    store.append("r", _line("b"))
    store.append("r", _line("c"))
    rest = read_file_lines(store.path("r"), start=first.size)
    assert [_codec.decode(raw)["model_call_id"] for _, raw in rest] == ["b", "c"]
    assert first.size + rest.size == store.path("r").stat().st_size
    assert list(read_file_lines(store.path("r"), start=first.size + rest.size)) == []


def test_read_available_counts_each_kind_of_damage_and_keeps_every_good_line(
    tmp_path: Path,
) -> None:
    # One line of each kind of damage the reader must count, not raise on: JSON that is
    # not JSON, JSON of the wrong shape, bytes that are not UTF-8, nesting too deep for
    # the decoder, and a torn last line; the good lines keep their gym index.
    store = CaptureStore(tmp_path)
    good = [msgspec.json.encode(_line(f"ok-{i}")) for i in range(3)]
    damaged = [
        b'{"model_call_id": "torn", "requ',
        b'{"model_call_id": 5}',
        b'{"model_call_id": "\xff\xfe not utf-8"}',
        b"[" * 100_000 + b"]" * 100_000,
    ]
    body = b"\n".join([good[0], damaged[0], b"", damaged[1], good[1], damaged[2], damaged[3]])
    body += b"\n" + good[2] + b"\n" + b'{"model_call_id": "cut'  # torn by a crash, no newline
    store.path("r").write_bytes(body)

    lines, count = store.read_available("r")

    assert [(i, line.model_call_id) for i, line in lines] == [(0, "ok-0"), (3, "ok-1"), (6, "ok-2")]
    assert count == 5
    with pytest.raises(DamagedLineError) as caught:
        store.read("r")
    assert caught.value.line_index == 1


def test_exists_is_true_only_for_the_rollout_that_has_a_capture_file(tmp_path: Path) -> None:
    # A miss is confirmed by listing: the listing must find this rollout's name, not any
    # entry, and a directory that does not exist has no capture files.
    assert not CaptureStore(tmp_path / "missing").exists("r")
    store = CaptureStore(tmp_path)
    store.append("a", _line("x"))
    store.mark_incomplete("b")
    assert (store.exists("a"), store.exists("b"), store.exists("c")) == (True, False, False)


def test_clear_forgets_where_this_process_last_wrote(tmp_path: Path) -> None:
    # A file created after `clear` may reuse the inode and reach the same size: the torn-line
    # check must not be skipped on the strength of the old file's end.
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    assert os.fspath(store.path("r")) in _writer._ends
    store.clear("r")
    assert os.fspath(store.path("r")) not in _writer._ends


def test_clear_removes_a_dangling_symlink(tmp_path: Path) -> None:
    (tmp_path / "r.capture.jsonl").symlink_to(tmp_path / "nowhere")
    store = CaptureStore(tmp_path)
    assert store.exists("r")  # the link itself, even though it leads nowhere
    store.clear("r")
    assert not os.path.lexists(tmp_path / "r.capture.jsonl")
    assert not store.exists("r")


def test_clear_racing_another_clear_does_not_raise(tmp_path: Path) -> None:
    # The file is unlinked by someone else while this clear waits for the writers' lock.
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    fd = os.open(store.path("r"), os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    errors: list[BaseException] = []

    def clear() -> None:
        try:
            store.clear("r")
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=clear)
    thread.start()
    threading.Event().wait(0.2)  # let the clear open the file and block on the lock
    store.path("r").unlink()
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    thread.join(10)
    assert errors == []
    assert not store.exists("r")


def test_a_refused_symlink_error_names_the_path(tmp_path: Path) -> None:
    (tmp_path / "r.capture.jsonl").symlink_to(tmp_path / "elsewhere")
    store = CaptureStore(tmp_path)
    with pytest.raises(OSError) as info:
        store.read("r")
    assert info.value.errno == errno.ELOOP
    assert info.value.filename == str(store.path("r"))


def test_repr_names_the_root(tmp_path: Path) -> None:
    assert repr(CaptureStore(tmp_path)) == f"CaptureStore({str(tmp_path)!r})"


def test_msgspec_errors_are_what_read_available_counts() -> None:
    # The store treats exactly these as damage; guard against a msgspec rename.
    assert issubclass(msgspec.ValidationError, msgspec.DecodeError)


_KILLED_WRITER = """
import sys
from model_call_capture.contracts import CaptureLine
from model_call_capture.store import CaptureStore
root, proc = sys.argv[1], sys.argv[2]
store = CaptureStore(root)
pad = "z" * 300_000  # big lines, so a kill can land inside a write
print("ready", flush=True)
for i in range(10_000):
    store.append("crashy", CaptureLine(model_call_id=f"{proc}-{i}", request={"pad": pad}))
    print(f"{proc}-{i}", flush=True)  # acknowledged: the append returned
"""


def test_writers_killed_mid_append_lose_no_acknowledged_line(tmp_path: Path) -> None:
    import random
    import signal
    import time

    rng = random.Random(20261129)
    print("random seed 20261129")
    acknowledged: set[str] = set()
    kills = 0
    for round_ in range(6):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _KILLED_WRITER, str(tmp_path), f"r{round_}w{w}"],
                stdout=subprocess.PIPE,
                text=True,
            )
            for w in range(2)
        ]
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0.02, 0.15))
        for p in procs:
            p.send_signal(signal.SIGKILL)
        for p in procs:
            p.wait()
            assert p.stdout is not None
            acknowledged.update(
                line.strip() for line in p.stdout.read().splitlines() if line.strip()
            )
            p.stdout.close()
            kills += 1

    store = CaptureStore(tmp_path)
    lines, damaged = store.read_available("crashy")
    on_disk = {line.model_call_id for _, line in lines}
    assert acknowledged <= on_disk, sorted(acknowledged - on_disk)[:5]
    assert damaged <= kills  # at most one torn line per killed writer
    assert all(line.request == {"pad": "z" * 300_000} for _, line in lines)
    # The next append after whatever the kills left starts on a fresh line and is readable.
    store.append("crashy", CaptureLine(model_call_id="after-the-crashes"))
    lines_after, damaged_after = store.read_available("crashy")
    assert lines_after[-1][1].model_call_id == "after-the-crashes"
    assert damaged_after == damaged


def test_an_append_racing_clear_never_writes_into_the_cleared_file(tmp_path: Path) -> None:
    # Real threads append without pause while clear() runs again and again. Before each
    # clear the test keeps the file open, so the cleared inode stays readable: once clear()
    # has returned, no append may write into it (a line written there is read by no one),
    # and every acknowledged line is in the live file or was in a file before it was cleared.
    store = CaptureStore(tmp_path)
    path = store.path("r")
    stop = threading.Event()
    acknowledged: list[str] = []
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in itertools.count():
                if stop.is_set():
                    return
                store.append("r", _line(f"w{n}-{i}"))
                acknowledged.append(f"w{n}-{i}")
        except BaseException as exc:  # reported below, not lost in the thread
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    cleared: list[tuple[int, int]] = []  # (fd of a cleared file, its size when clear returned)
    try:
        while len(cleared) < 150 and not failures:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            store.clear("r")
            cleared.append((fd, os.fstat(fd).st_size))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert failures == []
    try:
        written_after_clear = [size for fd, size in cleared if os.fstat(fd).st_size != size]
        seen = {line.model_call_id for line in store.read("r")}
        for fd, _ in cleared:
            seen.update(
                json.loads(raw)["model_call_id"] for raw in os.pread(fd, 1 << 26, 0).splitlines()
            )
    finally:
        for fd, _ in cleared:
            os.close(fd)
    assert written_after_clear == []
    assert set(acknowledged) <= seen


def test_a_filesystem_without_flock_still_captures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Stand-in for an NFS/FUSE mount without locks: flock fails with ENOLCK at the OS call.
    def no_locks(fd: int, operation: int) -> None:
        raise OSError(37, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    monkeypatch.setattr(_locking, "_warned_no_locks", False)
    # The shared layout forced: `auto` writes segments there (tests/test_segments.py).
    store = CaptureStore(tmp_path, layout="shared")
    with caplog.at_level("WARNING", logger="model_call_capture.store"):
        for i in range(3):
            store.append("r", _line(f"c{i}"))
        assert [ln.model_call_id for ln in store.read("r")] == ["c0", "c1", "c2"]
        store.clear("r")
    assert not store.path("r").exists()
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [  # once, not once per append
        "capture files: the filesystem does not support flock (No locks available); appends "
        "from several hosts to one rollout file are not serialized"
    ]


def test_other_flock_errors_fail_the_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(fd: int, operation: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fcntl, "flock", broken)
    with pytest.raises(OSError, match="Input/output error"):
        CaptureStore(tmp_path).append("r", _line("x"))


_valid_lines = st.builds(
    lambda call_id, tokens: (
        "valid",
        json.dumps({"model_call_id": call_id, "response": {"usage": {"t": tokens}}}).encode(),
    ),
    st.text(max_size=8),
    st.integers(min_value=-(2**70), max_value=2**70),
)
_damaged_lines = st.one_of(
    st.just(("damaged", b"{not json")),
    st.just(("damaged", b"[1, 2]")),
    st.just(("damaged", b'{"model_call_id": 5}')),
    st.just(("damaged", b'"just a string"')),
    st.binary(min_size=1, max_size=20)
    .filter(
        lambda b: (
            b"\n" not in b
            and b"\r" not in b
            and b.strip() != b""
            and b.strip()[:1] not in (b"{", b"[")
        )
    )
    .map(lambda b: ("damaged", b)),
)
_blank_lines = st.sampled_from([b"", b" ", b"\t", b"  \t "]).map(lambda b: ("blank", b))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(_valid_lines, _damaged_lines, _blank_lines), max_size=15), st.booleans())
def test_numbering_and_damage_count_for_any_file(
    lines: list[tuple[str, bytes]], final_newline: bool
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        store = CaptureStore(root)
        body = b"\n".join(raw for _, raw in lines) + (b"\n" if final_newline and lines else b"")
        store.path("r").write_bytes(body)
        expected_valid: list[int] = []
        damaged = 0
        index = 0
        for kind, _ in lines:  # oracle: Gym's numbering, by construction of each line
            if kind == "blank":
                continue
            if kind == "valid":
                expected_valid.append(index)
            else:
                damaged += 1
            index += 1
        got, got_damaged = store.read_available("r")
        assert [i for i, _ in got] == expected_valid
        assert got_damaged == damaged


NATURAL = ["0-0", "1-0", "1-0-a2", "1-0-a10", "2-0", "10-0", "100-0", "a9", "a10", "b"]


def test_rollouts_are_listed_in_the_natural_order_of_their_ids(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for rollout_id in sorted(NATURAL):  # written in text order: 0-0, 1-0, 10-0, 100-0, ...
        store.append(rollout_id, b'{"request": null}')
    assert store.rollout_ids() == NATURAL
    assert [r.id for r in store.rollouts()] == NATURAL
    assert [p.name.split(".")[0] for p in capture_files_under(tmp_path)] == NATURAL
