"""Hostile entries in the capture directory, its creation under any umask, and shared mounts.

Another local user may plant names in a capture directory before the store uses them:
FIFOs, directories, another user's world-writable file, a hard link to a file elsewhere.
Everything here is real (FIFOs made with mkfifo, files chowned to another uid, the real
umask, uvicorn on 127.0.0.1); the two things that cannot run here (an NFS server) are
replaced by what is said at each test.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import require_capability
from model_call_capture.collection import build_model_call_capture
from model_call_capture.contracts import CaptureLine
from model_call_capture.errors import NotARegularFileError
from model_call_capture.store import CaptureStore, _mounts

from .apps import CHAT_REPLY, capturing, reply_app

CHAT = "/v1/chat/completions"
OTHER_UID = 12345  # some other user: the tests run as root and chown files to it


def _line(call_id: str) -> CaptureLine:
    return CaptureLine(model_call_id=call_id)


def _release(fifos: list[Path]) -> None:
    """Open each FIFO once both ways: an open() blocked on it (the old bug) returns."""
    for fifo in fifos:
        try:
            os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))
        except OSError:
            pass


def _in_thread(fn: Callable[[], None], fifos: list[Path]) -> BaseException | None:
    """Run `fn` in a thread; fail (not hang) when it does not return within 10 s."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        _release(fifos)
        thread.join(10)
        pytest.fail("the store blocked on a FIFO in the capture directory")
    return outcome[0]


# -- 17: FIFOs ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["r.capture.incomplete", "r.capture.jsonl"])
def test_a_fifo_under_a_capture_name_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo, 0o600)
    store = CaptureStore(tmp_path)
    if name.endswith(".incomplete"):
        error = _in_thread(lambda: store.mark_incomplete("r"), [fifo])
    else:
        error = _in_thread(lambda: store.append("r", _line("c")), [fifo])
    assert isinstance(error, NotARegularFileError)
    # The marker is opened write-only (ENXIO: a FIFO nobody reads), the capture file for
    # reading too (it opens, and is then refused for what it is).
    expected_errno = errno.ENXIO if name.endswith(".incomplete") else errno.EINVAL
    assert (error.errno, error.filename) == (expected_errno, str(fifo))
    assert f"refusing capture file {fifo}: not a regular file (a FIFO)" in str(error)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # left alone


def test_clear_removes_fifos_without_waiting_on_them(tmp_path: Path) -> None:
    fifos = [tmp_path / "r.capture.jsonl", tmp_path / "r.capture.incomplete"]
    for fifo in fifos:
        os.mkfifo(fifo, 0o600)
    store = CaptureStore(tmp_path)
    assert _in_thread(lambda: store.clear("r"), fifos) is None
    assert os.listdir(tmp_path) == []


def test_fifo_rollouts_fill_no_writer_thread_and_other_rollouts_are_captured(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # More hostile rollouts than the middleware has writer threads (32): each used to
    # block a thread forever in open(), and then every other rollout's calls waited.
    fifos = []
    for i in range(40):
        for suffix in ("capture.jsonl", "capture.incomplete"):
            fifos.append(tmp_path / f"h{i}.{suffix}")
            os.mkfifo(fifos[-1], 0o600)
    with caplog.at_level(logging.ERROR), capturing(reply_app(), tmp_path) as server:
        try:

            def post(rollout: str) -> httpx.Response:
                url = f"{server.url}/ng-rollout/{rollout}{CHAT}"
                return httpx.post(url, content=b"{}", timeout=20)

            with ThreadPoolExecutor(40) as pool:
                replies = list(pool.map(post, [f"h{i}" for i in range(40)]))
            good = post("good")
        finally:
            _release(fifos)
    assert [r.status_code for r in replies] == [200] * 40
    assert (good.status_code, good.content) == (200, CHAT_REPLY)
    assert (tmp_path / "good.capture.jsonl").read_bytes().count(b"\n") == 1
    failures = [r.getMessage() for r in caplog.records if "capture failed" in r.getMessage()]
    assert len(failures) == 40
    assert all("not a regular file (a FIFO)" in message for message in failures)


# -- 19: another user's file, loose modes, hard links -------------------------------------


def _planted(path: Path, *, mode: int, uid: int | None = None) -> Path:
    path.write_bytes(b"")
    os.chmod(path, mode)
    if uid is not None:
        os.chown(path, uid, -1)
    return path


@pytest.mark.parametrize(
    ("mode", "uid", "reason"),
    [
        (0o666, OTHER_UID, f"owned by uid {OTHER_UID}"),
        (0o600, OTHER_UID, f"owned by uid {OTHER_UID}"),
        (0o644, None, "mode 0644 lets other users change or read it"),
        (0o620, None, "mode 0620 lets other users change or read it"),
        (0o602, None, "mode 0602 lets other users change or read it"),
    ],
)
def test_a_file_that_is_not_privately_ours_is_refused(
    tmp_path: Path, mode: int, uid: int | None, reason: str
) -> None:
    path = _planted(tmp_path / "r.capture.jsonl", mode=mode, uid=uid)
    store = CaptureStore(tmp_path)
    with pytest.raises(OSError, match=f"refusing capture file {path}: {reason}") as info:
        store.append("r", _line("c"))
    assert (info.value.errno, info.value.filename) == (errno.EPERM, str(path))
    assert path.read_bytes() == b""
    incomplete = _planted(tmp_path / "r.capture.incomplete", mode=mode, uid=uid)
    with pytest.raises(OSError, match=f"refusing capture file {incomplete}: {reason}") as info:
        store.mark_incomplete("r")
    assert (info.value.errno, info.value.filename) == (errno.EPERM, str(incomplete))


def test_a_mode_the_store_grants_itself_is_not_refused(tmp_path: Path) -> None:
    for rollout, mode in (("r", 0o640), ("s", 0o644)):
        _planted(tmp_path / f"{rollout}.capture.jsonl", mode=mode)
        store = CaptureStore(tmp_path, file_mode=mode)
        store.append(rollout, _line("c"))  # a refusal would raise here
        assert [line.model_call_id for line in store.read(rollout)] == ["c"]


def test_a_hard_link_to_a_file_elsewhere_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = _planted(elsewhere / "notes.txt", mode=0o600)
    captures = tmp_path / "captures"
    captures.mkdir()
    os.link(target, captures / "r.capture.jsonl")
    with pytest.raises(OSError, match="it has 2 hard links"):
        CaptureStore(captures).append("r", _line("c"))
    assert target.read_bytes() == b""


def test_a_refused_file_is_a_capture_failure_logged_once_and_the_call_succeeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    planted = _planted(tmp_path / "r.capture.jsonl", mode=0o666, uid=OTHER_UID)
    with caplog.at_level(logging.ERROR), capturing(reply_app(), tmp_path) as server:
        for _ in range(3):
            reply = httpx.post(f"{server.url}/ng-rollout/r{CHAT}", content=b"{}", timeout=30)
            assert (reply.status_code, reply.content) == (200, CHAT_REPLY)
    assert planted.read_bytes() == b""
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1, messages
    assert f"refusing capture file {planted}: owned by uid {OTHER_UID}" in messages[0]
    marker = os.stat(tmp_path / "r.capture.incomplete")
    assert (marker.st_uid, stat.S_IMODE(marker.st_mode)) == (os.geteuid(), 0o600)


# -- 18: directories and symlinks with capture names --------------------------------------


def test_entries_that_are_not_regular_files_are_skipped_and_reported_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = CaptureStore(tmp_path)
    store.append("ok", _line("c"))
    (tmp_path / "dir.capture.jsonl").mkdir()
    (tmp_path / "link.capture.jsonl").symlink_to(store.path("ok"))
    os.mkfifo(tmp_path / "fifo.capture.incomplete", 0o600)
    with caplog.at_level(logging.WARNING, logger="model_call_capture.store"):
        assert store.rollout_ids() == ["ok"]
        assert CaptureStore(tmp_path).rollout_ids() == ["ok"]
    messages = sorted(r.getMessage() for r in caplog.records)
    assert messages == [
        f"capture directory: skipping {tmp_path}/dir.capture.jsonl: a directory, not a capture file",
        f"capture directory: skipping {tmp_path}/fifo.capture.incomplete: a FIFO, not a capture file",
        f"capture directory: skipping {tmp_path}/link.capture.jsonl: a symlink, not a capture file",
    ]


def test_devices_and_sockets_with_capture_names_are_named_for_what_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    try:
        os.mknod(tmp_path / "chr.capture.jsonl", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        os.mknod(tmp_path / "blk.capture.jsonl", stat.S_IFBLK | 0o600, os.makedev(7, 0))
    except PermissionError as exc:
        require_capability("mknod (root)", False, f"makes device nodes: {exc}")
    monkeypatch.chdir(tmp_path)  # a short socket address
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock.capture.incomplete")
        store = CaptureStore(tmp_path)
        with caplog.at_level(logging.WARNING, logger="model_call_capture.store"):
            assert store.rollout_ids() == []
        assert sorted(r.getMessage() for r in caplog.records) == [
            f"capture directory: skipping {tmp_path}/{name}: {kind}, not a capture file"
            for name, kind in [
                ("blk.capture.jsonl", "a block device"),
                ("chr.capture.jsonl", "a character device"),
                ("sock.capture.incomplete", "a socket"),
            ]
        ]
        with pytest.raises(
            NotARegularFileError, match=r"not a regular file \(a character device\)"
        ) as info:
            store.read("chr")
        assert (info.value.errno, info.value.filename) == (errno.EINVAL, str(store.path("chr")))
        with pytest.raises(OSError, match=r"not a regular file \(a character device\)"):
            store.append("chr", _line("c"))


# -- 20: the directory's mode under any umask ---------------------------------------------


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    old = os.umask(0o022)
    os.umask(old)

    def set_umask(value: int) -> None:
        os.umask(value)

    try:
        yield set_umask
    finally:
        os.umask(old)


@pytest.mark.parametrize(("mask", "dir_mode"), [(0o000, None), (0o777, None), (0o077, 0o750)])
def test_created_directories_get_the_store_mode_whatever_the_umask(
    tmp_path: Path, umask: Callable[[int], None], mask: int, dir_mode: int | None
) -> None:
    root = tmp_path / "a" / "b" / "captures"
    store = CaptureStore(root) if dir_mode is None else CaptureStore(root, dir_mode=dir_mode)
    umask(mask)
    store.append("r", _line("c"))
    store.mark_incomplete("r")
    umask(0o022)
    expected = 0o700 if dir_mode is None else dir_mode
    for created in (tmp_path / "a", tmp_path / "a" / "b", root):
        assert stat.S_IMODE(created.stat().st_mode) == expected, created
    for path in (store.path("r"), store.incomplete_path("r")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


@pytest.mark.parametrize(("mask", "dir_mode"), [(0o000, 0o700), (0o077, 0o750)])
def test_nothing_the_store_creates_is_ever_wider_than_its_modes(
    tmp_path: Path,
    umask: Callable[[int], None],
    monkeypatch: pytest.MonkeyPatch,
    mask: int,
    dir_mode: int,
) -> None:
    # Not even for the moment between its creation and the chmod that fixes what the umask
    # took away: a file or directory created open (mode 0777 under umask 0) could be
    # opened by another user in that moment. The mode of each one the store changes is
    # read just before the change.
    before_and_after: list[tuple[int, int]] = []
    real_fchmod = os.fchmod

    def fchmod(fd: int, mode: int) -> None:
        before_and_after.append((stat.S_IMODE(os.fstat(fd).st_mode), mode))
        real_fchmod(fd, mode)

    monkeypatch.setattr(os, "fchmod", fchmod)
    store = CaptureStore(tmp_path / "a" / "captures", dir_mode=dir_mode)
    umask(mask)
    store.append("r", _line("c"))
    store.mark_incomplete("r")
    umask(0o022)
    assert [(f"{b:04o}", f"{a:04o}") for b, a in before_and_after if b & ~a] == []
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == dir_mode
    assert stat.S_IMODE(store.path("r").stat().st_mode) == 0o600


def test_an_existing_directory_is_left_as_it_is(tmp_path: Path) -> None:
    root = tmp_path / "captures"
    root.mkdir()
    os.chmod(root, 0o1777)
    CaptureStore(root).append("r", _line("c"))
    assert stat.S_IMODE(root.stat().st_mode) == 0o1777


# -- 22: exclusive locks on descriptors opened for writing ---------------------------------


def test_every_exclusive_lock_is_taken_on_a_descriptor_open_for_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spy, because no NFSv4 server can run here: NFSv4 emulates flock with byte-range
    # locks, and an exclusive one on a descriptor opened read-only fails with EBADF.
    # The spy only observes: each flock still runs, and the access mode is read from the
    # real descriptor with F_GETFL.
    real_flock = fcntl.flock
    exclusive: list[int] = []

    def observed_flock(fd: int, operation: int) -> None:
        if operation & fcntl.LOCK_EX:
            exclusive.append(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE)
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", observed_flock)  # what _locking calls
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    store.mark_incomplete("r")
    assert store.read("r")
    store.clear("r")
    assert not store.exists("r")
    assert len(exclusive) == 2  # the append and the clear
    assert all(mode in (os.O_WRONLY, os.O_RDWR) for mode in exclusive), exclusive


# -- 23: a name another NFS client just created --------------------------------------------


def test_a_miss_answered_from_a_stale_lookup_is_confirmed_by_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No second NFS client can run here. An NFS client with lookupcache=all answers a
    # lookup of a name it saw missing from its negative cache for a while after another
    # host created the file: open() and lstat() raise ENOENT though the file exists. That
    # answer is injected here, once per name; the listing of the directory is real.
    store = CaptureStore(tmp_path)
    store.append("r", _line("a"))
    store.mark_incomplete("r")
    names = {os.fspath(store.path("r"))}
    stale = set(names)  # open() misses it once; lstat() always
    real_open, real_lexists = os.open, os.path.lexists

    def stale_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) in stale:
            stale.discard(os.fspath(path))
            raise FileNotFoundError(2, "No such file or directory", os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    def stale_lexists(path: Any) -> bool:
        return False if os.fspath(path) in names else real_lexists(path)

    monkeypatch.setattr(os, "open", stale_open)
    monkeypatch.setattr(os.path, "lexists", stale_lexists)
    capture = build_model_call_capture("r", tmp_path)
    assert [call.model_call_id for call in capture.calls] == ["a"]
    assert [gap.code for gap in capture.gaps or []] == ["model_call_capture_incomplete"]
    assert store.exists("r")


# -- 24: NFS mounts that take locks locally -------------------------------------------------

# Hand-written in the shape of proc(5)'s /proc/self/mountinfo, because this machine has no
# NFS mount: fields are id, parent, major:minor, root, mount point, mount options,
# optional fields, "-", fs type, source, superblock options (where NFS puts `nolock`).
MOUNTINFO = """\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
60 27 0:52 / /mnt/nfs3 rw,relatime shared:30 - nfs srv:/export rw,vers=3,rsize=1048576,hard,nolock,proto=tcp,local_lock=all,addr=10.0.0.2
61 27 0:53 / /mnt/nfs4 rw,relatime shared:31 master:7 - nfs4 srv:/export rw,vers=4.2,hard,proto=tcp,local_lock=none,addr=10.0.0.2
62 61 0:54 / /mnt/nfs4/flock rw,relatime - nfs4 srv:/other rw,vers=4.1,hard,local_lock=flock,addr=10.0.0.3
63 27 0:55 / /mnt/with\\040space rw - nfs srv:/s rw,vers=3,local_lock=none
this line is not a mount
"""


def test_mountinfo_lines_are_parsed() -> None:
    mounts = _mounts.parse_mountinfo(MOUNTINFO)
    assert [(m.device, m.mount_point, m.fs_type) for m in mounts] == [
        ((254, 0), "/", "ext4"),
        ((0, 52), "/mnt/nfs3", "nfs"),
        ((0, 53), "/mnt/nfs4", "nfs4"),
        ((0, 54), "/mnt/nfs4/flock", "nfs4"),
        ((0, 55), "/mnt/with space", "nfs"),
    ]
    reasons = [_mounts.appends_may_be_lost(m) for m in mounts]
    assert reasons == [
        None,
        "nfs mount /mnt/nfs3 with local_lock=all,nolock",
        None,
        "nfs4 mount /mnt/nfs4/flock with local_lock=flock",
        None,
    ]
    assert "shared:30" not in mounts[1].options and "nolock" in mounts[1].options


def test_this_machines_mount_of_the_capture_dir_is_found_and_not_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    real = _mounts.parse_mountinfo(_mounts.MOUNTINFO.read_text())
    mount = _mounts.mount_of(tmp_path / "not-yet" / "captures", real)
    assert mount is not None
    st_dev = tmp_path.stat().st_dev
    assert mount.device == (os.major(st_dev), os.minor(st_dev))
    with caplog.at_level(logging.WARNING, logger="model_call_capture.store"):
        CaptureStore(tmp_path / "captures").append("r", _line("c"))
    assert not caplog.records


def _nolock_table(tmp_path: Path) -> tuple[Path, str]:
    """This machine's real mount table, with the capture directory's mount turned into a
    nolock NFS mount (the only part that cannot be real here): the table, the mount point."""
    real = _mounts.MOUNTINFO.read_text()
    mount = _mounts.mount_of(tmp_path, _mounts.parse_mountinfo(real))
    assert mount is not None
    fields = next(
        line.split(" ")
        for line in real.splitlines()
        if line.split(" ")[2] == f"{mount.device[0]}:{mount.device[1]}"
        and line.split(" ")[4] == mount.mount_point
    )
    sep = fields.index("-")
    fields[sep + 1 : sep + 4] = ["nfs", "srv:/export", "rw,vers=3,nolock,local_lock=all"]
    table = tmp_path / "mountinfo"
    table.write_text(real + " ".join(fields) + "\n")
    return table, mount.mount_point


def test_auto_writes_segments_on_a_nolock_mount_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    table, point = _nolock_table(tmp_path)
    root = tmp_path / "captures"
    with caplog.at_level(logging.INFO, logger="model_call_capture.store"):
        first = _mounts.choose_layout(root, "auto", table)
        again = _mounts.choose_layout(root, "auto", table)
    assert first == again == "segments"
    assert [r.getMessage() for r in caplog.records] == [
        f"capture directory {root}: writing the segments layout (nfs mount {point} with "
        "local_lock=all,nolock; docs/reliability.md)"
    ]


def test_a_forced_shared_layout_on_a_nolock_mount_is_warned_about_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    table, point = _nolock_table(tmp_path)
    root = tmp_path / "captures"
    with caplog.at_level(logging.WARNING, logger="model_call_capture.store"):
        first = _mounts.choose_layout(root, "shared", table)
        again = _mounts.choose_layout(root, "shared", table)
    assert first == again == "shared"
    assert len(caplog.records) == 1
    assert "concurrent appends from several hosts" in caplog.records[0].getMessage()
    assert f"nfs mount {point} with local_lock=all,nolock" in caplog.records[0].getMessage()


def test_a_store_reads_the_mount_table_once_at_its_first_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once per store, before its first line: not never, nor once per append (a read of
    # the whole mount table on every captured call). Spied at the store's call.
    checked: list[Path] = []
    real = _mounts.choose_layout

    def check(root: Path, requested: _mounts.Layout) -> str:
        checked.append(root)
        return real(root, requested)

    monkeypatch.setattr("model_call_capture.store._store.choose_layout", check)
    store = CaptureStore(tmp_path / "captures")
    for i in range(3):
        store.append("r", _line(f"c{i}"))
    assert checked == [tmp_path / "captures"]


def _mount_line(number: int, device: tuple[int, int], point: str, fs: str, options: str) -> str:
    """One mountinfo line (proc(5)): the mount point as given (no escapes needed here)."""
    major, minor = device
    return f"{number} 1 {major}:{minor} / {point} rw,relatime - {fs} src {options}\n"


def test_the_mount_of_a_path_is_the_deepest_one_of_its_device_that_contains_it(
    tmp_path: Path,
) -> None:
    # A hand-written table around this machine's real directories: the path's device is
    # real (mount_of stats it), the mounts listed are not.
    (tmp_path / "BOX" / "inner").mkdir(parents=True)
    st_dev = tmp_path.stat().st_dev
    device = (os.major(st_dev), os.minor(st_dev))
    other = (device[0] + 1, device[1])
    table = "".join(
        [
            _mount_line(1, device, "/", "ext4", "rw"),
            # the same device mounted deeper, at a point whose name ends in "X"
            _mount_line(2, device, f"{tmp_path}/BOX", "nfs", "rw,nolock"),
            # the same device at a point that does not contain the path
            _mount_line(3, device, f"{tmp_path}/elsewhere/deeper/still/deeper", "ext4", "rw"),
            # deeper still, but another device: the path is not on it
            _mount_line(4, other, f"{tmp_path}/BOX/inner", "ext4", "rw"),
        ]
    )
    mounts = _mounts.parse_mountinfo(table)
    found = _mounts.mount_of(tmp_path / "BOX" / "inner" / "not-yet" / "captures", mounts)
    assert found is not None and (found.mount_point, found.fs_type) == (f"{tmp_path}/BOX", "nfs")
    assert _mounts.mount_of(tmp_path / "BOX", mounts) == found  # the mount point itself


def test_a_mount_table_that_is_not_utf8_is_still_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Mount points are bytes: mountinfo escapes only space, tab, newline and backslash.
    st_dev = tmp_path.stat().st_dev
    device = (os.major(st_dev), os.minor(st_dev))
    table = tmp_path / "mountinfo"
    table.write_bytes(
        _mount_line(1, device, "/mnt/caf\xe9", "ext4", "rw").encode("latin-1")
        + _mount_line(2, device, "/", "nfs", "rw,nolock").encode()
    )
    with caplog.at_level(logging.INFO, logger="model_call_capture.store"):
        layout = _mounts.choose_layout(tmp_path / "captures", "auto", table)
    assert layout == "segments"
    assert len(caplog.records) == 1
    assert "(nfs mount / with nolock;" in caplog.records[0].getMessage()


def test_each_capture_dir_s_layout_is_logged_at_its_first_choice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    st_dev = tmp_path.stat().st_dev
    table = tmp_path / "mountinfo"
    table.write_text(_mount_line(1, (os.major(st_dev), os.minor(st_dev)), "/", "nfs", "nolock"))
    first, second = tmp_path / "first", tmp_path / "second"
    with caplog.at_level(logging.INFO, logger="model_call_capture.store"):
        _mounts.choose_layout(first, "auto", table)
        logged_at_first_choice = [r.getMessage() for r in caplog.records]
        _mounts.choose_layout(first, "auto", table)
        _mounts.choose_layout(second, "auto", table)
        # A table that lists no mount holding the directory: the shared layout.
        table.write_text(_mount_line(1, (0, 1), "/nowhere", "nfs", "nolock"))
        assert _mounts.choose_layout(tmp_path / "third", "auto", table) == "shared"
    assert logged_at_first_choice == [
        f"capture directory {first}: writing the segments layout (nfs mount / with nolock; "
        "docs/reliability.md)"
    ]
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        f"capture directory {first}",
        f"capture directory {second}",
        f"capture directory {tmp_path / 'third'}",
    ]
    assert caplog.records[-1].getMessage().endswith("(no mount table; docs/reliability.md)")


def test_mounts_without_cross_host_locks_get_segments() -> None:
    table = "".join(
        _mount_line(i, (0, 60 + i), point, fs, options)
        for i, (point, fs, options) in enumerate(
            [
                ("/gcs", "fuse.gcsfuse", "rw"),
                ("/s3", "fuse.s3fs", "rw"),
                ("/f", "fuse", "rw"),
                ("/usb", "fuseblk", "rw"),
                ("/lustre", "lustre", "rw,flock"),
                ("/lustre-local", "lustre", "rw,localflock"),
                ("/lustre-default", "lustre", "rw"),
                ("/bee", "beegfs", "rw"),
                ("/9p", "9p", "rw,trans=virtio"),
                ("/ceph", "ceph", "rw"),
                ("/nfs", "nfs4", "rw,local_lock=none"),
            ]
        )
    )
    reasons = {
        m.mount_point: _mounts.appends_may_be_lost(m) for m in _mounts.parse_mountinfo(table)
    }
    assert reasons == {
        "/gcs": "FUSE mount /gcs (fuse.gcsfuse), whose locks are local to each host",
        "/s3": "FUSE mount /s3 (fuse.s3fs), whose locks are local to each host",
        "/f": "FUSE mount /f (fuse), whose locks are local to each host",
        "/usb": None,
        "/lustre": None,
        "/lustre-local": "lustre mount /lustre-local with localflock",
        "/lustre-default": "lustre mount /lustre-default with no flock option",
        "/bee": "beegfs mount /bee, which takes no lock across hosts",
        "/9p": "9p mount /9p, which takes no lock across hosts",
        "/ceph": None,
        "/nfs": None,
    }


def test_an_escaped_mount_point_that_is_not_utf8_once_unescaped_is_kept() -> None:
    # "\040" is a space; "\377" a byte that is no UTF-8: replaced, the mount still listed.
    (mount,) = _mounts.parse_mountinfo(_mount_line(1, (0, 60), "/mnt/a\\040b\\377", "nfs", "rw"))
    assert mount.mount_point == "/mnt/a b\ufffd"


def test_every_mount_line_is_parsed_around_malformed_ones_and_empty_fields() -> None:
    # A malformed line in the middle; a mount whose source is empty (`mount -t tmpfs ""`),
    # which leaves an empty field between two spaces.
    table = (
        "70 1 0:70 / /first rw,noatime - tmpfs src rw,size=4k\n"
        "not a mount line\n"
        "71 1 0:71 / /empty-source ro,nosuid - tmpfs  rw,size=8k\n"
    )
    mounts = _mounts.parse_mountinfo(table)
    assert [(m.mount_point, m.fs_type, m.options) for m in mounts] == [
        ("/first", "tmpfs", frozenset({"rw", "noatime", "size=4k"})),
        ("/empty-source", "tmpfs", frozenset({"ro", "nosuid", "rw", "size=8k"})),
    ]
