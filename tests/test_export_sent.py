"""The state of an incremental export to an endpoint (`export/_sent.py`): what it sends again,
what it never sends twice, and what it does with a state file it did not write.

The spans go through the real OpenTelemetry SDK exporter to a real uvicorn server that
decodes them and counts their ids (`otlp_tools.Receiver`), so a test sees every span sent,
repeats included; tests/test_otlp.py proves the same against a real Phoenix.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs the [otel] extra")

from model_call_capture import CaptureStore
from model_call_capture.errors import ExportError
from model_call_capture.export import export
from model_call_capture.genai import span_id_for
from model_call_capture.records import read_model_call_records
from otlp_tools import Receiver
from servers import serve


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, str]]:
    app = Receiver()
    with serve(app) as server:
        yield app, server.url


@pytest.fixture(autouse=True)
def _state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state-home"))


def _line(call_id: str, completed_at: float) -> bytes:
    line = {
        "model_call_id": call_id,
        "dialect": "chat",
        "started_at": completed_at - 1,
        "completed_at": completed_at,
        "status_code": 200,
        "request": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        "response": {"choices": [{"message": {"role": "assistant", "content": "yo"}}]},
    }
    return json.dumps(line).encode() + b"\n"


def _append(path: Path, *lines: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as f:
        f.write(b"".join(lines))


def _span_ids(directory: Path, rollout_id: str, call_ids: list[str]) -> list[str]:
    records = read_model_call_records(CaptureStore(directory), rollout_id)
    by_call = {r.model_call_id: r for r in records}
    return [f"{span_id_for(rollout_id, by_call[c]):016x}" for c in call_ids]


def _send(source: Any, url: str, **options: Any) -> Any:
    return export(
        source, format="otlp", incremental=True, format_options={"endpoint": url}, **options
    )


def test_only_calls_not_sent_before_are_sent_though_a_segment_reorders_the_merge(
    tmp_path: Path, receiver: tuple[Receiver, str]
) -> None:
    app, url = receiver
    calls = tmp_path / "calls"
    shared = calls / "r.capture.jsonl"
    segment = calls / "r.capture.segments" / "otherhost.7.0123abcd.jsonl"
    _append(shared, _line("a", 10), _line("c", 30))
    _append(segment, _line("b", 20))
    first = _send(calls, url)
    assert first.rows == 3 and not first.up_to_date
    assert sorted(app.span_ids) == sorted(_span_ids(calls, "r", ["a", "b", "c"]))

    # A later call in the segment completed before "b" and "c": it goes before them in the
    # merge, so positions in the merged rollout move; positions in each file do not.
    _append(segment, _line("early", 15))
    _append(shared, _line("d", 40))
    app.span_ids.clear()
    second = _send(calls, url)
    assert second.rows == 2
    assert sorted(app.span_ids) == sorted(_span_ids(calls, "r", ["early", "d"]))
    assert len(set(app.trace_ids.values())) == 1  # one rollout, one trace

    app.span_ids.clear()
    third = _send(calls, url)
    assert third.up_to_date and app.span_ids == []


def test_a_file_written_anew_is_sent_again_whole(
    tmp_path: Path, receiver: tuple[Receiver, str]
) -> None:
    """Cleared and captured again under the same name (or compacted): another file, whose
    lines the state cannot tell apart from the old ones'. Sent again: the same span ids
    for the same calls, new ones for the new calls."""
    app, url = receiver
    calls = tmp_path / "calls"
    path = calls / "r.capture.jsonl"
    _append(path, _line("a", 10), _line("b", 20))
    assert _send(calls, url).rows == 2
    path.unlink()
    _append(path, _line("x", 30), _line("y", 40), _line("z", 50))
    app.span_ids.clear()
    assert _send(calls, url).rows == 3
    assert sorted(app.span_ids) == sorted(_span_ids(calls, "r", ["x", "y", "z"]))


def test_a_refused_send_leaves_the_state_and_the_next_export_sends(
    tmp_path: Path, receiver: tuple[Receiver, str]
) -> None:
    app, url = receiver
    calls = tmp_path / "calls"
    path = calls / "r.capture.jsonl"
    _append(path, _line("a", 10))
    _send(calls, url)
    (state,) = (tmp_path / "state-home").rglob("*.json")
    before = state.read_bytes()
    _append(path, _line("b", 20))
    app.refuse = True
    with pytest.raises(Exception, match="did not accept"):
        _send(calls, url)
    assert state.read_bytes() == before
    app.refuse = False
    app.span_ids.clear()
    assert _send(calls, url).rows == 1
    assert app.span_ids == _span_ids(calls, "r", ["b"])
    assert state.read_bytes() != before


def test_the_state_names_no_credential(tmp_path: Path, receiver: tuple[Receiver, str]) -> None:
    _, url = receiver
    calls = tmp_path / "calls"
    _append(calls / "r.capture.jsonl", _line("a", 10))
    secret = url.replace("http://", "http://user:s3cr3t-pw@") + "/v1/traces?api_key=s3cr3t-key"
    result = export(
        calls,
        format="otlp",
        incremental=True,
        format_options={"endpoint": secret, "headers": {"authorization": "Bearer s3cr3t-hdr"}},
    )
    assert result.rows == 1 and "s3cr3t" not in result.destination
    # The state and its lock: no temporary left over.
    state, lock = sorted(p for p in (tmp_path / "state-home").rglob("*") if not p.is_dir())
    assert lock.name == state.name + ".lock" and result.state == str(state)
    assert state.parent == tmp_path / "state-home" / "model-call-capture" / "export-sent"
    assert "s3cr3t" not in str(state) and b"s3cr3t" not in state.read_bytes()
    assert os.stat(state).st_mode & 0o777 == 0o600
    document = json.loads(state.read_bytes())
    assert document["destination"] == f"{url}/v1/traces"
    assert document["source"] == str(calls.resolve())


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\xffnot json", "not an export state"),
        (b"[]", "not an export state"),
        (b'{"format": "mcc-export-sent/1"}', "not an export state"),
        (
            b'{"format": "x/1", "destination": "", "source": "", "options": {}, "rollouts": {}}',
            "state format 'x/1'",
        ),
        (
            b'{"format": "mcc-export-sent/1", "destination": "http://a/v1/traces", "source": "",'
            b' "options": {}, "rollouts": {"r": [["r.capture.jsonl", -1, 0, 0, 0, ""]]}}',
            "not an export state",
        ),
        (None, "more than an export state"),  # 65 MiB: refused unread
    ],
    ids=["binary", "array", "fields-missing", "foreign-format", "negative-inode", "oversized"],
)
def test_a_state_file_it_did_not_write_is_refused_and_kept(
    tmp_path: Path, receiver: tuple[Receiver, str], content: bytes | None, message: str
) -> None:
    app, url = receiver
    calls = tmp_path / "calls"
    _append(calls / "r.capture.jsonl", _line("a", 10))
    state = tmp_path / "state.json"
    if content is None:
        with state.open("wb") as f:
            f.truncate(65 << 20)
    else:
        state.write_bytes(content)
    before = os.stat(state)
    with pytest.raises(ExportError, match=message) as raised:
        _send(calls, url, state=state)
    assert str(state) in str(raised.value) and "remove it" in str(raised.value)
    assert app.span_ids == []
    assert os.stat(state).st_mtime_ns == before.st_mtime_ns


def test_a_state_of_another_endpoint_or_content_setting_is_refused(
    tmp_path: Path, receiver: tuple[Receiver, str]
) -> None:
    app, url = receiver
    calls = tmp_path / "calls"
    _append(calls / "r.capture.jsonl", _line("a", 10))
    state = tmp_path / "state.json"
    _send(calls, url, state=state)
    with pytest.raises(ExportError, match="content=False"):
        export(
            calls,
            format="otlp",
            incremental=True,
            state=state,
            format_options={"endpoint": url, "content": True},
        )
    with pytest.raises(ExportError, match="is the state of an export of"):
        _send(calls, "http://127.0.0.1:9", state=state)
    assert len(app.span_ids) == 1


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_state_that_is_no_file_is_refused_without_waiting(
    tmp_path: Path, receiver: tuple[Receiver, str], kind: str
) -> None:
    _, url = receiver
    calls = tmp_path / "calls"
    _append(calls / "r.capture.jsonl", _line("a", 10))
    state = tmp_path / "state"
    if kind == "fifo":
        os.mkfifo(state)  # opened for reading the usual way, it would wait for a writer
    else:
        state.mkdir()
    with pytest.raises(ExportError, match="not a regular file"):
        _send(calls, url, state=state)


def test_options_that_do_not_go_with_an_endpoint_state_are_refused(
    tmp_path: Path, receiver: tuple[Receiver, str]
) -> None:
    _, url = receiver
    calls = tmp_path / "calls"
    _append(calls / "r.capture.jsonl", _line("a", 10))
    with pytest.raises(ExportError, match="--state goes with --incremental"):
        export(calls, format="otlp", state=tmp_path / "s", format_options={"endpoint": url})
    with pytest.raises(ExportError, match="needs a state file"):
        _send(CaptureStore(calls).rollouts(), url)
    with pytest.raises(ExportError, match="--incremental and --state are for endpoint"):
        export(calls, tmp_path / "atif", format="atif", incremental=True)
    with pytest.raises(ExportError, match="--incremental and --state are for endpoint"):
        export(calls, tmp_path / "x.parquet", state=tmp_path / "s")
    # Rollouts (not a directory) with a state file of their own: fine.
    assert _send(CaptureStore(calls).rollouts(), url, state=tmp_path / "s").rows == 1


def test_worker_processes_carry_the_marks_back(
    tmp_path: Path, receiver: tuple[Receiver, str]
) -> None:
    app, url = receiver
    calls = tmp_path / "calls"
    for i in range(4):
        _append(calls / f"r{i}.capture.jsonl", _line(f"a{i}", 10), _line(f"b{i}", 20))
    assert _send(calls, url, jobs=2).rows == 8
    _append(calls / "r2.capture.jsonl", _line("c2", 30))
    app.span_ids.clear()
    assert _send(calls, url, jobs=2).rows == 1
    assert app.span_ids == _span_ids(calls, "r2", ["c2"])


def test_a_second_export_while_one_holds_the_state_stops_at_once(
    tmp_path: Path, receiver: tuple[Receiver, str]
) -> None:
    import fcntl

    app, url = receiver
    calls = tmp_path / "calls"
    _append(calls / "r.capture.jsonl", _line("a", 10))
    state = tmp_path / "state.json"
    fd = os.open(f"{state}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a running export holds it
        with pytest.raises(ExportError, match=r"another incremental export .* is running"):
            _send(calls, url, state=state)
    finally:
        os.close(fd)
    assert app.span_ids == [] and not state.exists()
    assert _send(calls, url, state=state).rows == 1
