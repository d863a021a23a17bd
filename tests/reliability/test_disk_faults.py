"""Disk and permission faults while the middleware serves on a real uvicorn server.

Real where the machine allows it (the suite runs as root in CI): a full disk is a 64 KB
tmpfs mounted by the test, a read-only directory is a read-only bind mount, a removed
directory is removed. When a mount is refused the real variant is skipped with the reason.
EIO cannot be produced for real here (no device-mapper), so EIO during write and fsync,
and ENOSPC mid-write, are injected at the store's `os.write` / `os.writev` / `os.fsync`
calls: the store module sees a stand-in `os` whose `write`/`writev`/`fsync` fail; every
other call is the real one.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import subprocess
import tempfile
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import require_capability
from model_call_capture.collection import build_model_call_capture
from model_call_capture.contracts import CaptureLine
from model_call_capture.middleware._raw import MEMORY_BYTES
from model_call_capture.store import CaptureStore, _files, _reading, _store, _writer

from .apps import CHAT_REPLY, AckingStore, capturing, mounted, read_json_lines, reply_app
from .conftest import Figure

CHAT = "/v1/chat/completions"
FAILED = "model-call capture failed for rollout"


def _body(i: int, size: int = 6000) -> bytes:
    return b'{"model":"m","messages":[{"role":"user","content":"' + b"q" * size + b'"}],"n":%d}' % i


def _failures_logged(caplog: pytest.LogCaptureFixture) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in caplog.records:
        message = record.getMessage()
        if message.startswith(FAILED):
            rollout = message[len(FAILED) :].split("'")[1]
            counts[rollout] = counts.get(rollout, 0) + 1
    return counts


def _call(client: httpx.Client, url: str, rollout: str, i: int) -> None:
    response = client.post(f"{url}/ng-rollout/{rollout}{CHAT}", content=_body(i))
    # The model call succeeds whatever happened to its capture, byte for byte.
    assert (response.status_code, response.content) == (200, CHAT_REPLY)


def _on_disk(store: AckingStore, rollout: str) -> tuple[set[str | None], int]:
    lines, damaged = store.read_available(rollout)
    return {line.model_call_id for _, line in lines}, damaged


def test_a_full_disk_for_real(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, figures: list[Figure]
) -> None:
    with mounted("tmpfs", tmp_path / "tiny", "size=64k") as refused:
        require_capability("a tmpfs mount (root)", refused is None, f"mount refused: {refused}")
        directory = tmp_path / "tiny" / "captures"
        store = AckingStore(directory)
        calls = 30
        with (
            caplog.at_level(logging.ERROR),
            capturing(reply_app(), directory, store=store) as server,
        ):
            with httpx.Client(timeout=30) as client:
                for i in range(calls):
                    _call(client, server.url, "disk-full", i)
        acked = {call_id for _, call_id in store.acked}
        on_disk, damaged = _on_disk(store, "disk-full")
        assert 0 < len(acked) < calls  # the disk filled up part way
        assert acked <= on_disk
        assert damaged <= 1  # at most the one line the full disk cut
        assert _failures_logged(caplog) == {"disk-full": 1}  # once, not once per failed call
        assert store.is_incomplete("disk-full")  # an empty marker needs no data block
        codes = [g.code for g in build_model_call_capture("disk-full", directory).gaps or []]
        assert "model_call_capture_incomplete" in codes
    figures.append(
        Figure(
            "disk full (ENOSPC) while serving",
            "real: 64 KB tmpfs mounted by the test, 6 KB requests",
            calls,
            len(on_disk),
            len(acked - on_disk),
            f"every call answered byte for byte; one error log; rollout marked incomplete; "
            f"{calls - len(on_disk)} calls not captured",
        )
    )


def _truncated_chat_stream(deltas: int) -> bytes:
    """A chat SSE stream of `deltas` content deltas that stops before its end (a failure)."""
    chunk = {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "word "}, "finish_reason": None}],
    }
    return (b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n") * deltas


def test_a_full_temporary_directory_for_real_costs_only_the_raw_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, figures: list[Figure]
) -> None:
    # The raw text of a failed 2 MB stream is spilled to the temporary directory past 1 MiB
    # in memory (middleware/_raw.py); a 256 KB tmpfs there fills up during the first write.
    spill_dir = tmp_path / "tmp"
    with mounted("tmpfs", spill_dir, "size=256k") as refused:
        require_capability("a tmpfs mount (root)", refused is None, f"mount refused: {refused}")
        monkeypatch.setattr(tempfile, "tempdir", str(spill_dir))
        directory = tmp_path / "captures"
        stream = _truncated_chat_stream(14_000)
        pieces = 2000
        step = -(-len(stream) // pieces)
        sse = ((b"content-type", b"text/event-stream"),)
        with capturing(reply_app(stream, headers=sse, chunks=pieces), directory) as server:
            with httpx.Client(timeout=60) as client:
                for i in range(3):
                    reply = client.post(
                        f"{server.url}/ng-rollout/spill-full{CHAT}", content=_body(i)
                    )
                    assert (reply.status_code, reply.content) == (200, stream)
        lines = read_json_lines(directory / "spill-full.capture.jsonl")
        # The bytes in memory when the first spill was due: whole chunks up to 1 MiB.
        kept = (MEMORY_BYTES // step) * step
        assert [(line["error_category"], "response_raw" in line) for line in lines] == [
            ("stream_truncated", False)
        ] * 3
        assert [line["gaps"] for line in lines] == [
            [
                {
                    "code": "raw_text_spill_failed",
                    "detail": f"response_raw: the raw stream text was dropped after {kept} "
                    "bytes: its temporary file failed (ENOSPC: No space left on device)",
                }
            ]
        ] * 3
        assert lines[0]["response"]["choices"][0]["message"]["content"] == "word " * 14_000
        free = os.statvfs(spill_dir)
        assert free.f_bfree == free.f_blocks  # every spill file was closed: its blocks are back
    figures.append(
        Figure(
            "temporary directory full (ENOSPC) while a stream's raw text is spilled",
            "real: 256 KB tmpfs as the temporary directory, 2 MB streams that fail",
            3,
            len(lines),
            0,
            "every call answered byte for byte; each line whole but for its raw text, with a "
            "`raw_text_spill_failed` gap; the spill files' blocks freed",
        )
    )


# The store's modules that call `os`: a fault is injected into all of them, as into one.
_STORE_MODULES = (_files, _reading, _store, _writer)


def _patch_store_os(monkeypatch: pytest.MonkeyPatch, fake_os: Any) -> None:
    for module in _STORE_MODULES:
        monkeypatch.setattr(module, "os", fake_os)


class _FaultyOs(types.SimpleNamespace):
    """The store's view of `os`: real, except `write`/`fsync` fail while armed."""

    def __init__(self, write_errno: int | None, fsync_errno: int | None) -> None:
        super().__init__()
        self.write_errno = write_errno
        self.fsync_errno = fsync_errno
        self.armed = False
        self.partial = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: Any) -> int:
        if self.armed and self.write_errno is not None:
            if len(data) > 1 and not self.partial_pending:
                # Like a real full disk: the first write is short, the retry fails.
                self.partial_pending = True
                self.partial += 1
                return os.write(fd, bytes(data[: len(data) // 2]))
            self.partial_pending = False
            raise OSError(self.write_errno, os.strerror(self.write_errno))
        return os.write(fd, data)

    def writev(self, fd: int, buffers: list[Any]) -> int:
        # The store writes a batch of lines (or a torn line's newline and a line) with one
        # writev: it fails the same way.
        if self.armed and self.write_errno is not None:
            return self.write(fd, b"".join(buffers))
        return os.writev(fd, buffers)

    partial_pending = False

    def fsync(self, fd: int) -> None:
        if self.armed and self.fsync_errno is not None:
            raise OSError(self.fsync_errno, os.strerror(self.fsync_errno))
        os.fsync(fd)


@pytest.mark.parametrize(
    ("fault", "write_errno", "fsync_errno"),
    [
        ("disk full (ENOSPC) during write", errno.ENOSPC, None),
        ("I/O error (EIO) during write", errno.EIO, None),
        ("I/O error (EIO) during fsync", None, errno.EIO),
    ],
)
def test_write_and_fsync_errors_while_serving(
    fault: str,
    write_errno: int | None,
    fsync_errno: int | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    figures: list[Figure],
) -> None:
    faulty = _FaultyOs(write_errno, fsync_errno)
    _patch_store_os(monkeypatch, faulty)
    store = AckingStore(tmp_path)
    rollouts = ["ra", "rb", "rc"]
    calls = 0
    with caplog.at_level(logging.ERROR), capturing(reply_app(), tmp_path, store=store) as server:
        with httpx.Client(timeout=30) as client:
            for phase in ("before", "during", "after"):
                faulty.armed = phase == "during"
                for _i in range(4):
                    for rollout in rollouts:
                        _call(client, server.url, rollout, calls)
                        calls += 1
    acked: dict[str, set[str | None]] = {r: set() for r in rollouts}
    for rollout, call_id in store.acked:
        acked[rollout].add(call_id)
    captured = lost = 0
    for rollout in rollouts:
        on_disk, damaged = _on_disk(store, rollout)
        assert acked[rollout] <= on_disk
        assert len(acked[rollout]) == 8  # the calls before and after the fault
        assert damaged <= 4  # only lines cut by the fault; every line after it is readable
        assert store.is_incomplete(rollout)
        captured += len(on_disk)
        lost += len(acked[rollout] - on_disk)
    assert _failures_logged(caplog) == dict.fromkeys(rollouts, 1)
    figures.append(
        Figure(
            fault,
            "injected at the store's os.write / os.fsync (no device-mapper here); "
            + (
                "first write short, retry fails"
                if write_errno
                else "the line is written, fsync fails"
            ),
            calls,
            captured,
            lost,
            "every call answered byte for byte; one error log per rollout; rollouts marked incomplete; "
            "captures resume when the fault clears, on a fresh line",
        )
    )


def test_capture_directory_removed_while_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, figures: list[Figure]
) -> None:
    directory = tmp_path / "captures"
    store = AckingStore(directory)
    with caplog.at_level(logging.ERROR), capturing(reply_app(), directory, store=store) as server:
        with httpx.Client(timeout=30) as client:
            for i in range(5):
                _call(client, server.url, "gone", i)
            shutil.rmtree(directory)
            for i in range(5, 10):
                _call(client, server.url, "gone", i)
    on_disk, damaged = _on_disk(store, "gone")
    # The store recreates the directory on the next append; what was removed is gone.
    assert on_disk == {call_id for _, call_id in store.acked[5:]}
    assert (damaged, len(store.acked)) == (0, 10)
    assert _failures_logged(caplog) == {}
    figures.append(
        Figure(
            "capture directory removed while serving",
            "real: shutil.rmtree between calls",
            10,
            len(on_disk),
            0,
            "nothing: the directory is recreated on the next append and later calls are captured "
            "(the removed lines are gone with the directory)",
        )
    )


def test_capture_directory_made_read_only_while_serving(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    figures: list[Figure],
) -> None:
    directory = tmp_path / "captures"
    directory.mkdir()
    store = AckingStore(directory)
    how = "real: read-only bind mount of the directory on itself (root ignores permission bits)"
    with caplog.at_level(logging.ERROR), capturing(reply_app(), directory, store=store) as server:
        with httpx.Client(timeout=30) as client:
            for i in range(4):
                _call(client, server.url, "ro", i)
            before = directory.joinpath("ro.capture.jsonl").read_bytes()
            with mounted("bind-ro", directory) as refused:
                # No stand-in: an injected EROFS would pass without the real thing.
                require_capability(
                    "a read-only bind mount (root)", refused is None, f"mount refused: {refused}"
                )
                for i in range(4, 8):
                    _call(client, server.url, "ro", i)
            for i in range(8, 12):
                _call(client, server.url, "ro", i)
    on_disk, damaged = _on_disk(store, "ro")
    acked = {call_id for _, call_id in store.acked}
    assert len(acked) == 8 and acked <= on_disk and damaged == 0
    # Nothing already captured was damaged: the file still starts with the same bytes.
    assert directory.joinpath("ro.capture.jsonl").read_bytes().startswith(before)
    assert _failures_logged(caplog) == {"ro": 1}
    messages = [r.getMessage() for r in caplog.records]
    # The marker cannot be written on a read-only directory: that is said once too.
    assert sum("could not mark rollout 'ro' incomplete" in m for m in messages) == 1
    figures.append(
        Figure(
            "capture directory made read-only while serving",
            how,
            12,
            len(on_disk),
            len(acked - on_disk),
            "every call answered byte for byte; one error log and one 'could not mark incomplete' log; "
            "4 calls not captured; captures resume when writable",
        )
    )


def test_a_line_cut_by_a_full_disk_is_isolated_once_space_returns(tmp_path: Path) -> None:
    with mounted("tmpfs", tmp_path / "tiny", "size=16k") as refused:
        require_capability("a tmpfs mount (root)", refused is None, f"mount refused: {refused}")
        store = AckingStore(tmp_path / "tiny")
        filler = tmp_path / "tiny" / "filler"
        filler.write_bytes(b"f" * 8192)
        store.append("r", CaptureLine(model_call_id="small"))
        with pytest.raises(OSError) as info:
            store.append("r", CaptureLine(model_call_id="big", request={"pad": "x" * 20_000}))
        assert info.value.errno == errno.ENOSPC
        filler.unlink()
        store.append("r", CaptureLine(model_call_id="after"))
        lines, damaged = store.read_available("r")
        assert [line.model_call_id for _, line in lines] == ["small", "after"]
        assert damaged == 1  # the cut line, on its own line


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@contextmanager
def _failing_disk(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """An ext4 filesystem whose device fails its writes with a real EIO once it is full:
    yields (mount point, loop device); everything is unmounted and detached afterwards.

    The filesystem (32 MB) lives on a loop device backed by a sparse image on a 3 MB tmpfs:
    when the tmpfs is full, the loop device fails the block writes, and ext4 reports EIO at
    `fsync` (and then aborts its journal, as on a dying disk). Skips when the machine does
    not allow the mounts.
    """
    missing = [
        tool
        for tool in ("mount", "losetup", "blockdev", "mkfs.ext4", "e2fsck")
        if not shutil.which(tool)
    ]
    require_capability(", ".join(missing), not missing, "the tools to build a failing disk")
    outer, inner, again = tmp_path / "backing", tmp_path / "disk", tmp_path / "again"
    for directory in (outer, inner, again):
        directory.mkdir()
    backing = _run("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(outer))
    require_capability("a tmpfs mount (root)", backing.returncode == 0, backing.stderr)
    loops: list[str] = []
    try:
        image = outer / "disk.img"
        with open(image, "wb") as f:
            f.truncate(32 << 20)
        made = _run("mkfs.ext4", "-q", "-F", str(image))
        attached = _run("losetup", "-f", "--show", str(image))
        require_capability(
            "a loop device",
            made.returncode == 0 and attached.returncode == 0,
            made.stderr or attached.stderr,
        )
        loops.append(attached.stdout.strip())
        _run("blockdev", "--setrw", loops[0])
        mounted = _run("mount", loops[0], str(inner))
        require_capability("mounting a loop device", mounted.returncode == 0, mounted.stderr)
        yield inner, loops[0]
    finally:
        for mount_point in (again, inner):
            _run("umount", str(mount_point))
        for loop in loops:
            _run("losetup", "-d", loop)
        for extra in _run("losetup", "-j", str(outer / "disk.img")).stdout.splitlines():
            _run("losetup", "-d", extra.split(":")[0])
        _run("umount", "-l", str(outer))


def _reread_after_repair(tmp_path: Path, loop: str) -> CaptureStore:
    """Unmount the failed filesystem, give the backing tmpfs room, repair the image as an
    operator would, and mount it again read-only to read what really reached the device."""
    outer, inner, again = tmp_path / "backing", tmp_path / "disk", tmp_path / "again"
    assert _run("umount", str(inner)).returncode == 0
    assert _run("losetup", "-d", loop).returncode == 0
    assert _run("mount", "-o", "remount,size=64m", str(outer)).returncode == 0
    assert _run("e2fsck", "-fy", str(outer / "disk.img")).returncode in (0, 1, 2)
    assert _run("mount", "-o", "ro,loop", str(outer / "disk.img"), str(again)).returncode == 0
    return CaptureStore(again / "captures")


def test_a_real_eio_from_the_device_at_fsync(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, figures: list[Figure]
) -> None:
    calls = 40
    with _failing_disk(tmp_path) as (disk, loop):
        directory = disk / "captures"
        store = AckingStore(directory)
        with (
            caplog.at_level(logging.ERROR),
            capturing(reply_app(), directory, store=store) as server,
        ):
            with httpx.Client(timeout=30) as client:
                for i in range(calls):
                    response = client.post(
                        f"{server.url}/ng-rollout/eio{CHAT}", content=_body(i, 200_000)
                    )
                    assert (response.status_code, response.content) == (200, CHAT_REPLY)
        acked = {call_id for _, call_id in store.acked}
        assert 0 < len(acked) < calls
        logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith(FAILED)]
        assert len(logged) == 1 and "Errno 5" in logged[0]  # a real EIO, said once
        lines, damaged = _reread_after_repair(tmp_path, loop).read_available("eio")
        on_disk = {line.model_call_id for _, line in lines}
        assert acked <= on_disk  # every acknowledged line survived the failing device
    figures.append(
        Figure(
            "I/O error (EIO) from the device at fsync",
            "real: ext4 on a loop device whose backing file runs out of room (the block writes fail)",
            calls,
            len(on_disk),
            len(acked - on_disk),
            f"every call answered byte for byte; one error log; {calls - len(acked)} calls not captured "
            f"(ext4 then turns read-only, so the marker cannot be written: logged once); after e2fsck every "
            f"acknowledged line is on the device ({damaged} damaged lines)",
        )
    )
