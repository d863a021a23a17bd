"""The store's kept descriptors (`store/_descriptors.py`): reused between batches, never across
a fork, a clear, a rename or a bound, and dropped when they fail."""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from model_call_capture import _codec
from model_call_capture.contracts import CaptureLine
from model_call_capture.store import CaptureStore, _descriptors


def _line(call_id: str) -> CaptureLine:
    return CaptureLine(model_call_id=call_id, dialect="chat", status_code=200)


def _line_bytes(call_id: str) -> bytes:
    return bytes(_codec.encode_line(_line(call_id)))


def _ids(store: CaptureStore, rollout_id: str = "r") -> list[str]:
    return [str(line.model_call_id) for line in store.read(rollout_id)]


def _fds_on(inode: tuple[int, int]) -> list[int]:
    """This process's descriptors open on the file `inode` (device, inode) names."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.stat(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own descriptor, closed meanwhile
            continue
        if (st.st_dev, st.st_ino) == inode:
            found.append(int(name))
    return found


def _fds_under(root: Path) -> list[str]:
    """Targets of this process's descriptors open on files under `root`."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith(f"{root}/"):
            found.append(target)
    return found


@pytest.fixture(autouse=True)
def _no_kept_descriptors() -> Iterator[None]:
    _descriptors.drop_all()
    yield
    _descriptors.drop_all()


def test_the_next_append_reuses_the_descriptor_of_the_last_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    kept = _descriptors._held[os.fspath(store.path("r"))].fd
    opened: list[str] = []
    real_open = os.open

    def spy(path: str | os.PathLike[str], flags: int, *args: int) -> int:
        opened.append(os.fspath(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", spy)
    store.append("r", _line("b"))
    monkeypatch.undo()
    assert opened == []
    assert _descriptors._held[os.fspath(store.path("r"))].fd == kept
    assert _ids(store) == ["a", "b"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() in a process with threads
def test_a_forked_child_neither_uses_nor_keeps_the_parents_descriptors(tmp_path: Path) -> None:
    # The parent's kept descriptor holds the file's lock, as while one of its batches writes.
    # A child that used its copy would share that lock (flock belongs to the open file
    # description) and write at once; a child with its own descriptor waits for the lock.
    store = CaptureStore(tmp_path)
    store.append("r", _line("parent"))
    kept = _descriptors._held[os.fspath(store.path("r"))].fd
    fcntl.flock(kept, fcntl.LOCK_EX)
    pid = os.fork()
    if pid == 0:  # the child: exit codes say what it found
        code = 3
        try:
            inherited_open = True
            try:
                os.fstat(kept)
            except OSError:
                inherited_open = False
            code = 2 if inherited_open or _descriptors._held else 0
            store.append("r", _line("child"))
        finally:
            os._exit(code)
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            done, _ = os.waitpid(pid, os.WNOHANG)
            assert done == 0, "the child appended while the parent held the lock"
            time.sleep(0.05)
        assert store.path("r").read_bytes() == _line_bytes("parent")  # readers would wait too
    finally:
        fcntl.flock(kept, fcntl.LOCK_UN)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child kept the parent's descriptors open"
    assert _ids(store) == ["parent", "child"]
    store.append("r", _line("parent again"))  # the parent's descriptor is still its own
    assert _descriptors._held[os.fspath(store.path("r"))].fd == kept


def test_a_kept_descriptor_of_another_process_is_neither_used_nor_closed(tmp_path: Path) -> None:
    # As a child forked without Python's at-fork hooks would find its parent's.
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    path = os.fspath(store.path("r"))
    held = _descriptors._held[path]
    fcntl.flock(held.fd, fcntl.LOCK_EX)  # used, this append would not wait: it would write
    _descriptors._held[path] = held._replace(pid=held.pid + 1)
    try:
        with pytest.raises(OSError) as caught:  # the lock taken through a fresh descriptor
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
        assert caught.value.errno in (errno.EAGAIN, errno.EWOULDBLOCK)
        assert _descriptors.take(path) is None
        os.fstat(held.fd)  # not closed
    finally:
        fcntl.flock(held.fd, fcntl.LOCK_UN)
    store.append("r", _line("b"))
    assert _descriptors._held[path].fd != held.fd
    os.close(held.fd)
    assert _ids(store) == ["a", "b"]


def test_clear_in_this_process_closes_the_kept_descriptor_and_the_next_line_goes_to_the_new_file(
    tmp_path: Path,
) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("old"))
    old = os.open(store.path("r"), os.O_RDONLY)
    try:
        st = os.fstat(old)
        store.clear("r")
        assert _fds_on((st.st_dev, st.st_ino)) == [old]  # the kept one was closed
        store.append("r", _line("new"))
        assert os.fstat(old).st_size == st.st_size  # nothing written into the cleared file
    finally:
        os.close(old)
    assert _ids(store) == ["new"]


def test_clear_in_another_process_while_a_descriptor_is_kept(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("old"))
    old = os.open(store.path("r"), os.O_RDONLY)
    try:
        st = os.fstat(old)
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from model_call_capture.store import CaptureStore; "
                "CaptureStore(sys.argv[1]).clear('r')",
                str(tmp_path),
            ],
            check=True,
            timeout=60,
        )
        assert len(_fds_on((st.st_dev, st.st_ino))) == 2  # ours and the kept one
        store.append("r", _line("new"))
        assert os.fstat(old).st_size == st.st_size  # nothing written into the cleared file
        assert _fds_on((st.st_dev, st.st_ino)) == [old]  # the kept one was closed
    finally:
        os.close(old)
    assert _ids(store) == ["new"]


def test_a_file_renamed_away_is_not_written_again(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    moved = tmp_path / "moved.jsonl"
    os.rename(store.path("r"), moved)
    store.append("r", _line("b"))
    assert moved.read_bytes() == _line_bytes("a")
    assert _ids(store) == ["b"]
    st = moved.stat()
    assert _fds_on((st.st_dev, st.st_ino)) == []


def test_a_file_renamed_over_the_capture_name_is_checked_as_a_fresh_open_would(
    tmp_path: Path,
) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    planted = tmp_path / "planted"
    planted.write_bytes(b"")
    planted.chmod(0o666)
    os.rename(planted, store.path("r"))
    with pytest.raises(OSError, match="lets other users change or read it") as caught:
        store.append("r", _line("b"))
    assert caught.value.errno == errno.EPERM
    assert store.path("r").read_bytes() == b""


def test_kept_descriptors_are_bounded(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for i in range(100):
        store.append(f"r{i}", _line("x"))
    assert len(_fds_under(tmp_path)) == 32
    store.append("r0", _line("y"))  # evicted long ago: opened again, and kept
    assert len(_fds_under(tmp_path)) == 32
    assert f"{tmp_path}/r0.capture.jsonl" in _fds_under(tmp_path)
    assert _ids(store, "r0") == ["x", "y"]


def test_a_kept_descriptor_closed_behind_the_stores_back_is_replaced(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    os.close(_descriptors._held[os.fspath(store.path("r"))].fd)
    store.append("r", _line("b"))
    assert _ids(store) == ["a", "b"]


def test_a_kept_number_reused_by_another_file_is_not_written_nor_closed(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    number = _descriptors._held[os.fspath(store.path("r"))].fd
    os.close(number)
    other = tmp_path / "other"
    fd = os.open(other, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    if fd != number:
        os.dup2(fd, number)
        os.close(fd)
    try:
        store.append("r", _line("b"))
        assert other.read_bytes() == b""
        st = os.fstat(number)  # still open on the other file: not the store's to close
        assert (st.st_dev, st.st_ino) == (other.stat().st_dev, other.stat().st_ino)
    finally:
        fcntl.flock(number, fcntl.LOCK_UN)
        os.close(number)
    assert _ids(store) == ["a", "b"]


def test_a_failed_write_drops_the_kept_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    kept = _descriptors._held[os.fspath(store.path("r"))].fd

    def broken(fd: int, data: bytes) -> int:
        raise OSError(errno.EIO, "Input/output error")  # injected: a device error on write

    monkeypatch.setattr(os, "write", broken)
    with pytest.raises(OSError, match="Input/output error"):
        store.append("r", _line("b"))
    monkeypatch.undo()
    assert os.fspath(store.path("r")) not in _descriptors._held
    with pytest.raises(OSError) as caught:
        os.fstat(kept)
    assert caught.value.errno == errno.EBADF
    store.append("r", _line("c"))
    assert _ids(store) == ["a", "c"]
