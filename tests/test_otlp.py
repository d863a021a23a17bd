"""`mcc export --format otlp` against a real OTLP backend: Arize Phoenix, in a venv of its own.

The test starts `phoenix serve` on free ports with a temporary working directory, sends a
real demo run's spans to it and reads them back through Phoenix's REST API. It finds
Phoenix through `MCC_PHOENIX_VENV` (`.ci/run` builds it); without it the test skips
outside CI and fails in CI.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import require_capability
from model_call_capture import CaptureStore
from model_call_capture.genai import record_span, span_id_for, trace_id_for
from model_call_capture.records import read_model_call_records

PHOENIX_VENV = os.environ.get("MCC_PHOENIX_VENV", "")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = Path(PHOENIX_VENV) / "bin" / "phoenix"
    require_capability(
        "Arize Phoenix", binary.is_file(), "set MCC_PHOENIX_VENV to a venv with arize-phoenix"
    )
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
    }
    log = (work / "serve.log").open("wb")
    process = subprocess.Popen([str(binary), "serve"], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        # About 25 s alone; minutes on a busy shared 2-core machine.
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert process.poll() is None, (work / "serve.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "phoenix did not answer /healthz within 180 s"
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _spans(url: str, expected: int) -> list[dict[str, Any]]:
    """Every span of the default project, waiting (bounded) until `expected` are stored."""
    deadline = time.monotonic() + 30
    while True:
        spans: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = "?limit=1000" + (f"&cursor={cursor}" if cursor else "")
            with urllib.request.urlopen(f"{url}/v1/projects/default/spans{query}") as reply:
                page = json.load(reply)
            spans += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


def _export(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "model_call_capture.cli", "export", str(directory)]
    return subprocess.run(
        [*command, "--format", "otlp", *args], capture_output=True, text=True, timeout=120
    )


def _iso_ns(text: str) -> int:
    from datetime import datetime

    moment = datetime.fromisoformat(text)
    return int(moment.timestamp()) * 10**9 + moment.microsecond * 1000


def test_phoenix_shows_every_call_as_a_genai_span(phoenix: str, demo_calls: Path) -> None:
    run = _export(demo_calls, "--endpoint", phoenix, "--content")
    assert run.returncode == 0, run.stderr
    store = CaptureStore(demo_calls)
    expected = {}
    for rollout_id in store.rollout_ids():
        for record in read_model_call_records(store, rollout_id):
            span = record_span(record, rollout_id)
            assert span is not None
            expected[f"{span_id_for(rollout_id, record):016x}"] = (rollout_id, record)
    spans = {s["context"]["span_id"]: s for s in _spans(phoenix, len(expected))}
    assert set(spans) == set(expected)
    for span_id, (rollout_id, record) in expected.items():
        stored = spans[span_id]
        attributes = stored["attributes"]
        assert stored["context"]["trace_id"] == f"{trace_id_for(rollout_id):032x}"
        assert isinstance(record.request, dict)
        assert record.started_at is not None and record.completed_at is not None
        assert stored["name"] == f"chat {record.request['model']}"
        # Phoenix keeps microseconds.
        assert abs(_iso_ns(stored["start_time"]) - record.started_at * 1e9) < 2000
        assert abs(_iso_ns(stored["end_time"]) - record.completed_at * 1e9) < 2000
        assert attributes["gen_ai.conversation.id"] == rollout_id
        assert attributes["session.id"] == rollout_id  # Phoenix's own session attribute
        if record.error_category is None:
            assert stored["status_code"] == "UNSET"
            assert attributes["llm.token_count.prompt"] == record.tokens_in
            assert attributes["llm.token_count.completion"] == record.tokens_out
            assert attributes["gen_ai.usage.input_tokens"] == record.tokens_in
        else:
            assert stored["status_code"] == "ERROR"
            assert attributes["error.type"] == record.error_category
        if record.error_category is None:
            # With --content, the conversation as Phoenix shows it (llm.input_messages.*).
            last_user = [m for m in _messages(attributes, "input") if m[0] == "user"][-1]
            assert last_user[1]  # the text the user sent
            assert any(role == "assistant" for role, _ in _messages(attributes, "output"))


def _messages(attributes: dict[str, Any], side: str) -> list[tuple[str, str]]:
    out = []
    index = 0
    while f"llm.{side}_messages.{index}.message.role" in attributes:
        prefix = f"llm.{side}_messages.{index}.message"
        text = attributes.get(f"{prefix}.content", "")
        if not text:
            text = "".join(
                v
                for k, v in attributes.items()
                if k.startswith(f"{prefix}.contents.") and k.endswith(".text")
            )
        out.append((attributes[f"{prefix}.role"], text))
        index += 1
    return out


def test_exporting_twice_describes_the_same_spans(
    phoenix: str, demo_calls: Path, tmp_path: Path
) -> None:
    one = tmp_path / "one"
    (one / "model-calls").mkdir(parents=True)
    name = sorted(p.name for p in demo_calls.glob("*.capture.jsonl"))[0]
    (one / "model-calls" / name).write_bytes((demo_calls / name).read_bytes())
    before = {s["context"]["span_id"] for s in _spans(phoenix, 0)}
    for _ in range(2):
        run = _export(one, "--endpoint", phoenix)
        assert run.returncode == 0, run.stderr
    rollout_id = name.removesuffix(".capture.jsonl")
    records = read_model_call_records(CaptureStore(one / "model-calls"), rollout_id)
    ids = {f"{span_id_for(rollout_id, r):016x}" for r in records}
    assert ids <= before  # the first test sent these very spans already
    stored = [s["context"]["span_id"] for s in _spans(phoenix, 0) if s["context"]["span_id"] in ids]
    # Phoenix keys spans by id: the same spans sent again are stored once.
    assert sorted(stored) == sorted(ids)


def test_a_refusing_endpoint_fails_the_export(demo_calls: Path) -> None:
    run = _export(demo_calls, "--endpoint", f"http://127.0.0.1:{_free_port()}")
    assert run.returncode == 1
    assert "did not accept" in run.stderr


def test_live_spans_from_capture_reach_phoenix(phoenix: str, tmp_path: Path) -> None:
    import openai

    from model_call_capture import CaptureConfig, install_model_call_capture
    from model_call_capture.demo.model_server import create_app
    from servers import serve

    config = CaptureConfig(
        observability_enabled=True,
        model_call_capture_dir=str(tmp_path / "calls"),
        otlp_endpoint=phoenix,
    )
    app = install_model_call_capture(create_app(), config, model_server_name="live")
    with serve(app) as server:
        client = openai.OpenAI(base_url=f"{server.url}/ng-rollout/live-1/v1", api_key="unused")
        client.chat.completions.create(
            model="demo-gpt", messages=[{"role": "user", "content": "hello"}]
        )
        stream = client.chat.completions.create(
            model="demo-gpt", messages=[{"role": "user", "content": "again"}], stream=True
        )
        for _ in stream:
            pass
    records = read_model_call_records(CaptureStore(tmp_path / "calls"), "live-1")
    assert len(records) == 2
    ids = {f"{span_id_for('live-1', r):016x}": r for r in records}
    deadline = time.monotonic() + 30
    while True:
        spans = {s["context"]["span_id"]: s for s in _spans(phoenix, 0)}
        if set(ids) <= set(spans) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(ids) <= set(spans)
    for span_id, record in ids.items():
        stored = spans[span_id]
        assert stored["name"] == "chat demo-gpt"
        assert stored["attributes"]["gen_ai.conversation.id"] == "live-1"
        assert stored["attributes"]["gen_ai.usage.output_tokens"] == record.tokens_out
        # The very span `mcc export --format otlp` describes for the line on disk.
        exported = record_span(record, "live-1")
        assert exported is not None
        assert {k: stored["attributes"][k] for k in exported.attributes} == {
            k: list(v) if isinstance(v, list) else v for k, v in exported.attributes.items()
        }


def test_live_spans_drop_and_count_what_does_not_fit_never_blocking(tmp_path: Path) -> None:
    """An endpoint that takes 2 s to answer holds the sender: the queue fills and the rest
    is dropped and counted, while `submit` returns at once (no wait on the network)."""
    import asyncio
    import threading

    from model_call_capture.contracts import CaptureLine
    from model_call_capture.otlp import LiveSpans
    from servers import serve

    released = threading.Event()
    waiting = threading.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        waiting.set()
        await asyncio.to_thread(released.wait, 2)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    with serve(slow) as server:
        live = LiveSpans(server.url, max_queue=4, batch_size=1, interval=0.01)
        line = CaptureLine(model_call_id="c", dialect="chat", started_at=1.0, completed_at=2.0)
        live.submit("r", line)  # taken by the sender, which then waits on the endpoint
        assert waiting.wait(30)
        for _ in range(20):
            live.submit("r", line)
        assert live.dropped == 20 - 4
        released.set()
        live.close(timeout=10)
    assert live.sent + live.failed == 5


def test_an_unknown_otlp_endpoint_scheme_is_refused_at_startup(tmp_path: Path) -> None:
    from model_call_capture import CaptureConfig, install_model_call_capture
    from model_call_capture.demo.model_server import create_app
    from model_call_capture.errors import OtlpExportError

    config = CaptureConfig(
        observability_enabled=True,
        model_call_capture_dir=str(tmp_path),
        otlp_endpoint="udp://collector:4318",
    )
    with pytest.raises(OtlpExportError, match="not an http"):
        install_model_call_capture(create_app(), config, model_server_name="x")


def test_an_unreachable_live_endpoint_fails_no_call_and_loses_no_line(tmp_path: Path) -> None:
    import openai

    from model_call_capture import CaptureConfig, install_model_call_capture
    from model_call_capture.demo.model_server import create_app
    from servers import serve

    config = CaptureConfig(
        observability_enabled=True,
        model_call_capture_dir=str(tmp_path / "calls"),
        otlp_endpoint=f"http://127.0.0.1:{_free_port()}",  # nothing listens there
    )
    app = install_model_call_capture(create_app(), config, model_server_name="live")
    with serve(app) as server:
        client = openai.OpenAI(
            base_url=f"{server.url}/ng-rollout/down-1/v1", api_key="unused", max_retries=0
        )
        for _ in range(3):
            reply = client.chat.completions.create(
                model="demo-gpt", messages=[{"role": "user", "content": "hello"}]
            )
            assert reply.choices[0].message.content
    records = read_model_call_records(CaptureStore(tmp_path / "calls"), "down-1")
    assert len(records) == 3 and all(r.error_category is None for r in records)


def _capture_calls(directory: Path, rollout_id: str, prompts: list[str], layout: str) -> None:
    """Real calls through the capture middleware (openai SDK, real uvicorn) into `directory`."""
    import openai

    from model_call_capture import CaptureConfig, install_model_call_capture
    from model_call_capture.demo.model_server import create_app
    from servers import serve

    config = CaptureConfig(
        observability_enabled=True,
        model_call_capture_dir=str(directory),
        capture_layout=layout,  # type: ignore[arg-type]
    )
    app = install_model_call_capture(create_app(), config, model_server_name="grow")
    with serve(app) as server:
        client = openai.OpenAI(base_url=f"{server.url}/ng-rollout/{rollout_id}/v1", api_key="-")
        for i, prompt in enumerate(prompts):
            messages: Any = [{"role": "user", "content": prompt}]
            if i % 2:
                for _ in client.chat.completions.create(
                    model="demo-gpt", messages=messages, stream=True
                ):
                    pass
            else:
                client.chat.completions.create(model="demo-gpt", messages=messages)


def _incremental(
    directory: Path, url: str, home: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "model_call_capture.cli", "export", str(directory)]
    command += ["--format", "otlp", "--endpoint", url, "--incremental", *args]
    env = {**os.environ, "XDG_STATE_HOME": str(home), "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "3"}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def _ids(directory: Path, rollout_id: str) -> list[str]:
    records = read_model_call_records(CaptureStore(directory), rollout_id)
    return [f"{span_id_for(rollout_id, r):016x}" for r in records]


def _trace(url: str, rollout_id: str, expected: int) -> list[str]:
    """The span ids Phoenix stores in the trace of `rollout_id` (waiting for `expected`)."""
    trace = f"{trace_id_for(rollout_id):032x}"
    deadline = time.monotonic() + 30
    while True:
        ids = [s["context"]["span_id"] for s in _spans(url, 0) if s["context"]["trace_id"] == trace]
        if len(ids) >= expected or time.monotonic() > deadline:
            return ids
        time.sleep(0.5)


def test_incremental_sends_each_call_once_and_a_grown_rollout_in_its_trace(
    phoenix: str, tmp_path: Path
) -> None:
    """Calls appended to a rollout later, by a writer of another layout (a segment, merged
    with the shared file by `completed_at`), reach Phoenix as new spans of the same trace;
    nothing is sent twice (the relay counts every span sent: Phoenix itself stores a span
    sent again once, and could not tell)."""
    from otlp_tools import Receiver
    from servers import serve

    calls, home = tmp_path / "calls", tmp_path / "home"
    relay = Receiver(relay_to=phoenix)
    _capture_calls(calls, "grow-1", ["one", "two"], "shared")
    with serve(relay) as server:
        run = _incremental(calls, server.url, home)
        assert run.returncode == 0, run.stderr
        assert "sent 2 spans" in run.stdout
        first = _ids(calls, "grow-1")
        assert sorted(relay.span_ids) == sorted(first)

        again = _incremental(calls, server.url, home)
        assert again.returncode == 0 and "is up to date" in again.stdout
        assert len(relay.span_ids) == 2

        _capture_calls(calls, "grow-1", ["three", "four", "five"], "segments")
        assert len(CaptureStore(calls).rollout("grow-1").files) == 2
        grown = _incremental(calls, server.url, home)
        assert grown.returncode == 0, grown.stderr
        assert "sent 3 spans" in grown.stdout
    every = _ids(calls, "grow-1")
    assert len(every) == 5
    assert sorted(relay.span_ids) == sorted(every)  # each sent exactly once
    assert sorted(_trace(phoenix, "grow-1", 5)) == sorted(every)


def test_a_send_to_an_endpoint_that_is_down_is_sent_by_the_next_run(
    phoenix: str, demo_calls: Path, tmp_path: Path
) -> None:
    from otlp_tools import Receiver
    from servers import serve

    calls, home = tmp_path / "calls", tmp_path / "home"
    calls.mkdir()
    demo = sorted(demo_calls.glob("*.capture.jsonl"))
    (calls / "down-1.capture.jsonl").write_bytes(demo[0].read_bytes())
    relay = Receiver(relay_to=phoenix)
    with serve(relay) as server:
        url, port = server.url, server.port
        assert _incremental(calls, url, home).returncode == 0
    (state,) = home.rglob("*.json")
    before = state.read_bytes()
    with (calls / "down-1.capture.jsonl").open("ab") as f:  # the rollout grows
        f.write(demo[1].read_bytes())
    down = _incremental(calls, url, home)  # nothing listens on the port now
    assert down.returncode == 1 and "did not accept" in down.stderr
    assert state.read_bytes() == before
    sent = len(relay.span_ids)
    with serve(relay, port=port):
        up = _incremental(calls, url, home)
    assert up.returncode == 0, up.stderr
    every = _ids(calls, "down-1")
    assert sorted(relay.span_ids) == sorted(every)
    assert len(relay.span_ids) - sent == len(every) - sent > 0
    assert sorted(_trace(phoenix, "down-1", len(every))) == sorted(every)


def test_since_sends_the_calls_started_at_or_after_it_and_incremental_goes_on_from_there(
    phoenix: str, demo_calls: Path, tmp_path: Path
) -> None:
    import datetime

    from otlp_tools import Receiver
    from servers import serve

    calls, home = tmp_path / "calls", tmp_path / "home"
    calls.mkdir()
    demo = sorted(demo_calls.glob("*.capture.jsonl"))
    (calls / "since-1.capture.jsonl").write_bytes(demo[0].read_bytes())
    records = read_model_call_records(CaptureStore(calls), "since-1")
    starts = sorted(r.started_at for r in records if r.started_at is not None)
    assert len(starts) >= 3
    cut = starts[len(starts) // 2]
    later = [f"{span_id_for('since-1', r):016x}" for r in records if (r.started_at or 0) >= cut]
    relay = Receiver(relay_to=phoenix)
    with serve(relay) as server:
        plain = _export(calls, "--endpoint", server.url, "--since", repr(cut))
        assert plain.returncode == 0, plain.stderr
        assert sorted(relay.span_ids) == sorted(later)
        relay.span_ids.clear()
        # ISO 8601 without a zone is UTC; a second before `cut` takes the same calls here.
        moment = datetime.datetime.fromtimestamp(int(cut), datetime.UTC).replace(tzinfo=None)
        iso = _incremental(calls, server.url, home, "--since", moment.isoformat())
        assert iso.returncode == 0, iso.stderr
        assert sorted(relay.span_ids) == sorted(
            f"{span_id_for('since-1', r):016x}" for r in records if (r.started_at or 0) >= int(cut)
        )
        # The calls before TIME were looked at: an incremental run without --since does not
        # send them later; the rollout's new calls it does.
        with (calls / "since-1.capture.jsonl").open("ab") as f:
            f.write(demo[1].read_bytes())
        relay.span_ids.clear()
        assert _incremental(calls, server.url, home).returncode == 0
    new = _ids(calls, "since-1")[len(records) :]
    assert sorted(relay.span_ids) == sorted(new)
    stored = set(_trace(phoenix, "since-1", len(later) + len(new)))
    assert set(later) | set(new) <= stored
