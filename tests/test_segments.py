"""The segment layout (store/_segments.py, _reading.py, _compact.py): per-writer files, the
merge order every reader gives, `auto`, and `mcc compact`."""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from model_call_capture.arrow import iter_record_batches
from model_call_capture.collection import build_model_call_capture
from model_call_capture.errors import DamagedLineError
from model_call_capture.records import read_available_model_call_records
from model_call_capture.store import CaptureStore, _compact, _locking, _segments

_NAME = re.compile(r"^[A-Za-z0-9_-]+\.[0-9]+\.[0-9a-f]{8}\.jsonl$")
_BASE = 1_800_000_000.0


def _raw(call_id: str, completed: float | None) -> bytes:
    line: dict[str, object] = {"model_call_id": call_id, "dialect": "chat", "status_code": 200}
    if completed is not None:
        line["completed_at"] = _BASE + completed
    return json.dumps(line).encode()


def _ids(store: CaptureStore, rollout_id: str) -> list[str]:
    return [str(line.model_call_id) for _, line in store.read_available(rollout_id)[0]]


def _settle(path: Path) -> None:
    """Make a segment look untouched for two minutes (its writer cannot be mid-write)."""
    old = time.time() - 120
    os.utime(path, (old, old))


# -- writing ---------------------------------------------------------------------------------


def test_a_segment_is_a_private_file_of_its_writer_named_by_host_pid_and_random(
    tmp_path: Path,
) -> None:
    root = tmp_path / "captures"
    store = CaptureStore(root, layout="segments")
    store.append("r", _raw("a", 1))
    store.append("r", _raw("b", 2))
    store.append("other", _raw("c", 3))
    directory = root / "r.capture.segments"
    (name,) = os.listdir(directory)
    assert _NAME.match(name), name
    host, pid, _ = name.split(".", 2)
    assert (host, int(pid)) == (_segments.this_host(), os.getpid())
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(directory / name).st_mode) == 0o600
    assert (directory / name).read_bytes() == _raw("a", 1) + b"\n" + _raw("b", 2) + b"\n"
    # Nothing a reader of the shared layout lists: no name ends in .capture.jsonl/.incomplete.
    assert sorted(p.name for p in root.iterdir()) == [
        "other.capture.segments",
        "r.capture.segments",
    ]
    assert not list(root.glob("*.capture.jsonl")) and not list(root.glob("**/*.capture.jsonl"))
    assert CaptureStore(root).rollout_ids() == ["other", "r"]
    assert _ids(CaptureStore(root), "r") == ["a", "b"]


def test_a_segment_name_already_taken_is_never_appended_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another host with the same pid drew the same random part first: O_EXCL refuses the
    # name and the writer draws again.
    directory = tmp_path / "r.capture.segments"
    directory.mkdir(mode=0o700)
    taken = directory / f"{_segments.this_host()}.{os.getpid()}.00000000.jsonl"
    taken.write_bytes(_raw("theirs", 1) + b"\n")
    draws = iter(["00000000", "11111111"])
    monkeypatch.setattr("secrets.token_hex", lambda n: next(draws))
    CaptureStore(tmp_path, layout="segments").append("r", _raw("mine", 2))
    assert taken.read_bytes() == _raw("theirs", 1) + b"\n"
    mine = directory / f"{_segments.this_host()}.{os.getpid()}.11111111.jsonl"
    assert mine.read_bytes() == _raw("mine", 2) + b"\n"


def test_each_writer_marks_its_own_segment_incomplete_and_clear_removes_everything(
    tmp_path: Path,
) -> None:
    store = CaptureStore(tmp_path, layout="segments")
    store.append("r", _raw("a", 1))
    assert not store.is_incomplete("r")
    store.mark_incomplete("r")
    (segment,) = (tmp_path / "r.capture.segments").glob("*.jsonl")
    marker = segment.with_suffix(".incomplete")
    assert marker.exists()
    assert CaptureStore(tmp_path).is_incomplete("r")
    store.clear("r")
    assert list(tmp_path.iterdir()) == []
    # The writer's open segment was unlinked: its next line goes to a fresh one.
    store.append("r", _raw("b", 2))
    assert _ids(CaptureStore(tmp_path), "r") == ["b"]


def test_a_forked_child_writes_its_own_segment(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path, layout="segments")
    store.append("r", _raw("parent", 1))
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            store.append("r", _raw("child", 2))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    store.append("r", _raw("parent-again", 3))
    segments = sorted((tmp_path / "r.capture.segments").glob("*.jsonl"))
    pids = sorted(int(p.name.split(".")[1]) for p in segments)
    assert pids == sorted([os.getpid(), pid])
    assert _ids(CaptureStore(tmp_path), "r") == ["parent", "child", "parent-again"]


def test_a_writer_of_more_rollouts_than_it_keeps_open_reopens_its_own_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_segments, "_OPEN_MAX", 2)
    store = CaptureStore(tmp_path, layout="segments")
    for round_ in range(3):
        for r in range(5):
            store.append(f"r{r}", _raw(f"c{round_}", round_))
    for r in range(5):
        (segment,) = (tmp_path / f"r{r}.capture.segments").iterdir()
        assert segment.read_bytes() == b"".join(_raw(f"c{i}", i) + b"\n" for i in range(3))
    assert len(_segments._open) == 2


def test_a_segments_directory_planted_by_another_user_or_as_a_symlink_is_refused(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "captures"
    root.mkdir()
    (root / "r.capture.segments").symlink_to(elsewhere)
    store = CaptureStore(root, layout="segments")
    with pytest.raises(OSError, match="not a directory"):
        store.append("r", _raw("a", 1))
    assert list(elsewhere.iterdir()) == []
    loose = root / "s.capture.segments"
    loose.mkdir()
    loose.chmod(0o777)
    with pytest.raises(OSError, match="not a private directory"):
        store.append("s", _raw("a", 1))
    assert list(loose.iterdir()) == []


# -- auto ------------------------------------------------------------------------------------


def test_auto_writes_the_shared_file_on_a_local_filesystem(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", _raw("a", 1))
    assert store.written_layout() == "shared"
    assert [p.name for p in tmp_path.iterdir()] == ["r.capture.jsonl"]


def test_auto_turns_to_segments_when_flock_is_refused_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Stand-in for an NFS/FUSE mount that refuses locks: flock fails with ENOLCK at the OS call.
    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    monkeypatch.setattr(_locking, "_warned_no_locks", False)
    store = CaptureStore(tmp_path)
    with caplog.at_level(logging.WARNING, logger="model_call_capture.store"):
        for i in range(3):
            store.append("r", _raw(f"c{i}", i))
    assert store.written_layout() == "segments"
    assert [r.getMessage() for r in caplog.records] == [
        f"capture directory {tmp_path}: the filesystem refuses flock (No locks available): "
        "writing the segments layout from now on (docs/reliability.md)"
    ]
    # The shared file was created by the first try and holds nothing: no line was lost or doubled.
    assert (tmp_path / "r.capture.jsonl").read_bytes() == b""
    assert _ids(CaptureStore(tmp_path), "r") == ["c0", "c1", "c2"]


def test_the_middleware_writes_the_layout_the_run_settings_say(tmp_path: Path) -> None:
    from model_call_capture.contracts import CaptureConfig
    from model_call_capture.middleware import CaptureMiddleware

    async def app(scope: object, receive: object, send: object) -> None:  # pragma: no cover
        pass

    config = CaptureConfig(
        observability_enabled=True,
        model_call_capture_dir=str(tmp_path),
        capture_layout="segments",
    )
    middleware = CaptureMiddleware(app, config=config, model_server_name="policy")
    assert isinstance(middleware.store, CaptureStore)
    assert middleware.store.written_layout() == "segments"


def test_an_unknown_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="capture_layout must be auto, shared or segments"):
        CaptureStore("/tmp/x", layout="per-host")  # type: ignore[arg-type]


# -- reading: the merge ----------------------------------------------------------------------


def test_a_rollouts_files_merge_by_completion_each_file_keeping_its_order(tmp_path: Path) -> None:
    shared = CaptureStore(tmp_path, layout="shared")
    a = tmp_path / "r.capture.segments" / "host-a.1.aaaaaaaa.jsonl"
    b = tmp_path / "r.capture.segments" / "host-b.1.bbbbbbbb.jsonl"
    for i, call in [(1, "s1"), (4, "s4"), (4.5, "s4.5")]:
        shared.append("r", _raw(call, i))
    a.parent.mkdir(mode=0o700)
    # Segment a is out of completion order (two concurrent calls appended 3 then 2): it
    # keeps its own order; a damaged line stays right after the line before it.
    a.write_bytes(b"\n".join([_raw("a3", 3), _raw("a2", 2), b"{torn", _raw("a6", 6)]) + b"\n")
    b.write_bytes(b"\n".join([_raw("b4", 4), _raw("bnull", None), _raw("b5", 5)]) + b"\n")
    store = CaptureStore(tmp_path)
    lines, damaged = store.read_available("r")
    # The merge, step by step: heads s1@1 a3@3 b4@4 -> s1; a3 -> a3; a2@2 -> a2; the
    # damaged line (keyed 2) -> it; then s4@4 ties b4@4 and the shared file ranks first;
    # b4, bnull (keyed 4, as b4), s4.5, b5, a6.
    assert [(i, str(line.model_call_id)) for i, line in lines] == [
        (0, "s1"),
        (1, "a3"),
        (2, "a2"),
        (4, "s4"),
        (5, "b4"),
        (6, "bnull"),
        (7, "s4.5"),
        (8, "b5"),
        (9, "a6"),
    ]
    assert damaged == 1


def test_a_damaged_line_in_a_segment_is_counted_and_named_by_its_file(tmp_path: Path) -> None:
    CaptureStore(tmp_path, layout="shared").append("r", _raw("s", 1))
    segment = tmp_path / "r.capture.segments" / "host-a.7.aaaaaaaa.jsonl"
    segment.parent.mkdir(mode=0o700)
    segment.write_bytes(_raw("a", 2) + b"\n{not json\n" + _raw("b", 3) + b"\n")
    store = CaptureStore(tmp_path)
    with pytest.raises(DamagedLineError) as raised:
        store.read("r")
    assert raised.value.path == segment and (raised.value.line_index, raised.value.line) == (1, 2)
    assert f"damaged capture line in {segment}, line 2: " in str(raised.value)


def test_the_attachment_names_each_file_with_damaged_lines_when_segments_have_some(
    tmp_path: Path,
) -> None:
    shared = CaptureStore(tmp_path, layout="shared")
    shared.append("r", _raw("s", 1))
    shared.append("r", b"{not json")
    shared.append("only-shared", b"{not json")
    segment = tmp_path / "r.capture.segments" / "host-a.7.aaaaaaaa.jsonl"
    segment.parent.mkdir(mode=0o700)
    segment.write_bytes(_raw("a", 2) + b"\n[1]\n" + b"{torn\n")
    gaps = build_model_call_capture("r", tmp_path).gaps or []
    assert [(g.code, g.detail) for g in gaps] == [
        (
            "model_call_capture_records_unreadable",
            "count=3; r.capture.jsonl: 1, r.capture.segments/host-a.7.aaaaaaaa.jsonl: 2",
        )
    ]
    # Damage in the shared file alone keeps NeMo Gym's detail.
    gaps = build_model_call_capture("only-shared", tmp_path).gaps or []
    assert [(g.code, g.detail) for g in gaps] == [
        ("model_call_capture_records_unreadable", "count=1")
    ]


def test_a_line_being_written_is_not_seen_until_whole(tmp_path: Path) -> None:
    # The unterminated tail of a segment whose writer is alive (this process) and which
    # changed just now: left out, not counted. Once its writer cannot be writing it (the
    # segment settled), it is a torn line: counted, and named.
    store = CaptureStore(tmp_path, layout="segments")
    store.append("r", _raw("a", 1))
    (segment,) = (tmp_path / "r.capture.segments").glob("*.jsonl")
    with segment.open("ab") as f:
        f.write(_raw("b", 2)[:20])
    reader = CaptureStore(tmp_path)
    assert reader.read_available("r") == (reader.read_available("r")[0], 0)
    assert _ids(reader, "r") == ["a"]
    _settle(segment)
    lines, damaged = reader.read_available("r")
    assert [str(line.model_call_id) for _, line in lines] == ["a"] and damaged == 1


# -- compact ---------------------------------------------------------------------------------


def _two_layouts(root: Path) -> list[str]:
    """A rollout written to the shared file and two settled segments; its ids in order."""
    shared = CaptureStore(root, layout="shared")
    shared.append("r", _raw("s1", 1))
    shared.append("r", _raw("s3", 3))
    directory = root / "r.capture.segments"
    directory.mkdir(mode=0o700)
    for name, lines in [
        ("host-a.1.aaaaaaaa", [_raw("a2", 2), _raw("a5", 5)]),
        ("host-b.2.bbbbbbbb", [_raw("b4", 4)]),
    ]:
        (directory / f"{name}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        _settle(directory / f"{name}.jsonl")
    (directory / "host-b.2.bbbbbbbb.incomplete").touch()
    return ["s1", "a2", "s3", "b4", "a5"]


def test_compact_rewrites_segments_into_the_shared_file_once(tmp_path: Path) -> None:
    expected = _two_layouts(tmp_path)
    store = CaptureStore(tmp_path)
    assert _ids(store, "r") == expected and store.is_incomplete("r")
    result = store.compact("r")
    assert (result.segments, result.lines, result.left_alone) == (2, 5, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.capture.incomplete", "r.capture.jsonl"]
    assert [
        json.loads(x)["model_call_id"]
        for x in (tmp_path / "r.capture.jsonl").read_text().split("\n")
        if x
    ] == expected
    assert _ids(store, "r") == expected and store.is_incomplete("r")
    again = store.compact("r")
    assert (again.segments, again.left_alone) == (0, None)
    assert _ids(store, "r") == expected


def test_a_compaction_stopped_after_its_commit_reads_each_line_once_and_is_finished_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _two_layouts(tmp_path)
    store = CaptureStore(tmp_path)

    def stopped(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # the process stops right after the rename

    real = _compact._finish
    monkeypatch.setattr(_compact, "_finish", stopped)
    with pytest.raises(KeyboardInterrupt):
        store.compact("r")
    # Segments still there, and the shared file holds their lines: each is read once.
    assert len(list((tmp_path / "r.capture.segments").glob("*.jsonl"))) == 2
    assert _ids(store, "r") == expected
    monkeypatch.setattr(_compact, "_finish", real)
    store.compact("r")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.capture.incomplete", "r.capture.jsonl"]
    assert _ids(store, "r") == expected


def test_compact_leaves_a_rollout_being_written_alone(tmp_path: Path) -> None:
    writer = CaptureStore(tmp_path, layout="segments")
    writer.append("r", _raw("a", 1))
    result = CaptureStore(tmp_path).compact("r")
    assert result.segments == 0 and result.left_alone is not None
    assert "may still be written" in result.left_alone
    assert not (tmp_path / "r.capture.jsonl").exists()
    assert _ids(CaptureStore(tmp_path), "r") == ["a"]


# -- every reader agrees ---------------------------------------------------------------------

_MCC = (sys.executable, "-m", "model_call_capture.cli")


def _json(value: object) -> object:
    return msgspec.json.decode(msgspec.json.encode(value))


def test_records_and_attachments_agree_across_layouts(both_layouts: tuple[Path, Path]) -> None:
    one, split = both_layouts
    ids = CaptureStore(one).rollout_ids()
    assert CaptureStore(split).rollout_ids() == ids
    for rollout_id in ids:
        expected, damaged = read_available_model_call_records(CaptureStore(one), rollout_id)
        got, got_damaged = read_available_model_call_records(CaptureStore(split), rollout_id)
        assert damaged == got_damaged == 0
        assert _json(got) == _json(expected)
        assert _json(build_model_call_capture(rollout_id, split)) == (
            _json(build_model_call_capture(rollout_id, one))
        )


def test_arrow_agrees_across_layouts(both_layouts: tuple[Path, Path]) -> None:
    pa = pytest.importorskip("pyarrow")
    one, split = both_layouts
    for payloads in (False, True):
        tables = [
            pa.Table.from_batches(list(iter_record_batches(d, payloads=payloads)))
            for d in (one, split)
        ]
        assert tables[1].to_pylist() == tables[0].to_pylist()


def test_the_commands_agree_across_layouts(both_layouts: tuple[Path, Path], tmp_path: Path) -> None:
    one, split = both_layouts
    rollout_id = CaptureStore(one).rollout_ids()[0]
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}

    def mcc(*args: str) -> str:
        done = subprocess.run([*_MCC, *args], capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    for args in (["stats"], ["stats", "--json"], ["show", "--raw"]):
        extra = [rollout_id] if args[0] == "show" else []
        assert mcc(*args, str(split), *extra) == mcc(*args, str(one), *extra)
    for fmt in ("jsonl", "parquet"):
        mcc("export", str(one), "--out", str(tmp_path / f"one.{fmt}"), "--payloads")
        mcc("export", str(split), "--out", str(tmp_path / f"split.{fmt}"), "--payloads")
    assert (tmp_path / "split.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    pq = pytest.importorskip("pyarrow.parquet")
    assert pq.read_table(tmp_path / "split.parquet").to_pylist() == (
        pq.read_table(tmp_path / "one.parquet").to_pylist()
    )
    # validate checks every file, segments included: the same lines, in more files.
    lines = sum(len(r.files[0].read_bytes().splitlines()) for r in CaptureStore(one).rollouts())
    files = len(CaptureStore(one).rollouts())
    assert mcc("validate", str(one)) == f"ok: {lines} lines in {files} files are valid\n"
    written = len(list(split.glob("*.capture.jsonl")) + list(split.glob("*.segments/*.jsonl")))
    assert written > files
    assert mcc("validate", str(split)) == f"ok: {lines} lines in {written} files are valid\n"


def test_the_viewer_agrees_across_layouts(both_layouts: tuple[Path, Path]) -> None:
    from starlette.testclient import TestClient

    from model_call_capture.viewer import create_app

    one, split = both_layouts
    # The demo's rollouts.jsonl sits beside `one` only; both are given it, so the rewards
    # joined to the rows are compared too.
    outcomes = one.parent / "rollouts.jsonl"
    assert outcomes.is_file()
    pages = []
    for directory in (one, split):
        app = create_app(directory, rollouts=outcomes)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            table = client.get("/api/rollouts").json()
            rollouts = {
                r["rollout_id"]: client.get(f"/api/rollouts/{r['rollout_id']}").json()
                for r in table["rollouts"]
            }
            calls = client.get(f"/api/rollouts/{table['rollouts'][0]['rollout_id']}/calls/1").json()
            pages.append((table["rollouts"], rollouts, calls))
    assert pages[1] == pages[0]
