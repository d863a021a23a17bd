"""SIGKILL of writer processes appending to shared rollout files, at random moments.

A long-lived spawner process imports the store once and forks writers on request (a fork
costs a millisecond where a fresh interpreter costs a hundred, which is what lets the CI
size reach 200 kills). Each writer appends lines of known content to one of two shared
rollout files and acknowledges each append (after it returned) in its own ack file. The
test kills writers with SIGKILL at random moments, then checks what is on disk with the
stdlib `json` module as an independent reader.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import httpx

from model_call_capture.collection import build_model_call_capture
from model_call_capture.contracts import CaptureLine
from model_call_capture.store import CaptureStore

from .conftest import Figure, sized

ROUNDS_PER_FILE = 50  # a fresh pair of files every 50 rounds keeps nightly files small
WRITERS_PER_ROUND = 4
SEED = int(os.environ.get("MCC_SEED", "20261129"))

_SPAWNER = r"""
import os, sys, zlib
from model_call_capture.contracts import CaptureLine
from model_call_capture.store import CaptureStore

root, ack_dir = sys.argv[1], sys.argv[2]
store = CaptureStore(root)


def pad_size(name, i):
    # Deterministic sizes from 1 KB to ~1.5 MB, so kills land inside writes too.
    return 1000 + zlib.crc32(f"{name}-{i}".encode()) % 1_500_000


for command in sys.stdin:
    parts = command.split()
    if parts[0] == "spawn":
        name, rollout = parts[1], parts[2]
        pid = os.fork()
        if pid == 0:
            ack = os.open(os.path.join(ack_dir, name + ".ack"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            i = 0
            try:
                while True:
                    store.append(rollout, CaptureLine(model_call_id=f"{name}-{i}", request={"pad": "z" * pad_size(name, i)}))
                    os.write(ack, f"{name}-{i}\n".encode())
                    i += 1
            finally:
                os._exit(0)
        print(pid, flush=True)
    elif parts[0] == "reap":
        os.waitpid(int(parts[1]), 0)
        print("reaped", flush=True)
"""

_ID = re.compile(rb'"model_call_id":"(w\d+-\d+)-(\d+)"')
_HEADER = b'{"model_call_id":"'


def _pad_size(name: str, i: int) -> int:
    return 1000 + zlib.crc32(f"{name}-{i}".encode()) % 1_500_000


def _expected_line(name: str, i: int) -> bytes:
    """The exact bytes of a writer's line, spelled out with the stdlib encoder."""
    doc = {
        "model_call_id": f"{name}-{i}",
        **dict.fromkeys(
            [
                "dialect",
                "model_ref",
                "started_at",
                "completed_at",
                "latency_ms",
                "latency_ttft_ms",
                "status_code",
                "error_category",
            ]
        ),
        "request": {"pad": "z" * _pad_size(name, i)},
        "response": None,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def _acks(ack_dir: Path) -> set[str]:
    acked: set[str] = set()
    for path in ack_dir.glob("*.ack"):
        data = path.read_bytes()
        # A writer killed mid-ack leaves a partial ack line: not an acknowledgement.
        complete = data[: data.rfind(b"\n") + 1]
        acked.update(complete.decode().split())
    return acked


def test_writers_killed_at_random_moments_lose_no_acknowledged_append(
    tmp_path: Path, figures: list[Figure]
) -> None:
    rounds = sized(50, 500)
    rng = random.Random(SEED)
    print(f"random seed {SEED} (MCC_SEED), {rounds} rounds of {WRITERS_PER_ROUND} writers")
    root, ack_dir = tmp_path / "captures", tmp_path / "acks"
    ack_dir.mkdir()
    spawner = subprocess.Popen(
        [sys.executable, "-c", _SPAWNER, str(root), str(ack_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert spawner.stdin is not None and spawner.stdout is not None
    kills = 0
    try:
        for r in range(rounds):
            pids = []
            for w in range(WRITERS_PER_ROUND):
                spawner.stdin.write(f"spawn w{r}-{w} crash-{r // ROUNDS_PER_FILE}-{w % 2}\n")
                spawner.stdin.flush()
                pids.append(int(spawner.stdout.readline()))
            for pid in pids:
                time.sleep(rng.uniform(0.0, 0.02))  # staggered: each dies at its own moment
                os.kill(pid, signal.SIGKILL)
                kills += 1
            for pid in pids:
                spawner.stdin.write(f"reap {pid}\n")
                spawner.stdin.flush()
                assert spawner.stdout.readline() == "reaped\n"
    finally:
        spawner.stdin.close()
        spawner.wait(timeout=30)
        spawner.stdout.close()

    acked = _acks(ack_dir)
    store = CaptureStore(root)
    on_disk: set[str] = set()
    torn_total = 0
    rollouts = store.rollout_ids()
    assert rollouts and all(r.startswith("crash-") for r in rollouts)
    for rollout in rollouts:
        raw = store.path(rollout).read_bytes()
        parts = raw.split(b"\n")
        final = parts.pop()  # b"" when the file ends with a newline
        torn_here = 0
        here: set[str] = set()
        for part in [*parts, final]:
            if not part:
                continue
            try:
                doc = json.loads(part)
            except json.JSONDecodeError:
                # A torn line: a strict prefix of one line a writer was writing, never
                # bytes of two writers mixed.
                torn_here += 1
                match = _ID.search(part)
                if match is None:
                    assert _HEADER.startswith(part), part[:100]
                else:
                    full = _expected_line(match.group(1).decode(), int(match.group(2)))
                    assert full.startswith(part) and len(part) < len(full), part[:100]
                continue
            name, _, i = doc["model_call_id"].rpartition("-")
            assert part == _expected_line(name, int(i)), doc["model_call_id"]
            here.add(doc["model_call_id"])
        torn_total += torn_here

        lines, damaged = store.read_available(rollout)
        assert damaged == torn_here  # read_available counts the torn lines
        assert {ln.model_call_id for _, ln in lines} == here
        on_disk |= here
        attachment = build_model_call_capture(rollout, root)
        assert attachment.metrics.num_calls == len(here)
        if damaged:
            assert [(g.code, g.detail) for g in attachment.gaps or []] == [
                ("model_call_capture_records_unreadable", f"count={damaged}")
            ]
        # The next append after the crashes starts on a fresh line and is readable.
        store.append(rollout, CaptureLine(model_call_id=f"after-{rollout}"))
        after, damaged_after = store.read_available(rollout)
        assert after[-1][1].model_call_id == f"after-{rollout}"
        assert damaged_after == damaged

    lost = acked - on_disk
    assert not lost, sorted(lost)[:5]
    assert torn_total <= kills
    print(
        f"{kills} kills, {len(acked)} acknowledged appends, {len(on_disk)} lines on disk, {torn_total} torn lines"
    )
    figures.append(
        Figure(
            "writer process killed (SIGKILL) while appending to shared rollout files",
            f"real SIGKILL at random moments, {WRITERS_PER_ROUND} writers x 2 shared files per round, "
            f"lines 1 KB-1.5 MB; {len(acked)} appends acknowledged",
            kills,
            len(on_disk),
            len(lost),
            f"{torn_total} torn lines, each isolated on its own line and reported as a "
            "`model_call_capture_records_unreadable` gap; every acknowledged append readable",
        )
    )


_SERVER = r"""
import sys, uvicorn
from model_call_capture.contracts import CaptureConfig
from model_call_capture.demo.model_server import create_app
from model_call_capture.middleware import CaptureMiddleware

config = CaptureConfig(observability_enabled=True, model_call_capture_dir=sys.argv[1])
app = CaptureMiddleware(create_app(), config=config, model_server_name="policy_model")
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="critical", lifespan="off", access_log=False)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_server(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    for _ in range(5):
        port = _free_port()
        proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(root), str(port)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return proc, f"http://127.0.0.1:{port}"
            except OSError:
                time.sleep(0.02)
        proc.kill()
        proc.wait()
    raise RuntimeError("the model server did not start")


def test_model_server_killed_while_serving_loses_no_call_the_client_saw_end(
    tmp_path: Path, figures: list[Figure]
) -> None:
    """The durability promise end to end: a client that saw the end of a response can rely
    on its line being on disk, even when the server process is SIGKILLed right after."""
    kills = sized(8, 100)
    rng = random.Random(SEED)
    print(f"random seed {SEED} (MCC_SEED), {kills} server kills")
    root = tmp_path / "captures"
    seen_end: list[str] = []
    lock = threading.Lock()
    for kill in range(kills):
        proc, url = _start_server(root)
        stop = threading.Event()

        def client(
            worker: int, url: str = url, stop: threading.Event = stop, kill: int = kill
        ) -> None:
            n = 0
            with httpx.Client(timeout=10) as http:
                while not stop.is_set():
                    marker = f"k{kill}-w{worker}-{n}"
                    n += 1
                    stream = n % 2 == 0
                    body = {
                        "model": "demo-gpt",
                        "messages": [{"role": "user", "content": marker}],
                        "stream": stream,
                    }
                    try:
                        reply = http.post(
                            f"{url}/ng-rollout/srv-{worker % 2}/v1/chat/completions", json=body
                        )
                        ended = reply.status_code == 200 and (
                            reply.text.endswith("data: [DONE]\n\n")
                            if stream
                            else "choices" in reply.json()
                        )
                    except (httpx.HTTPError, ValueError):
                        ended = False  # cut by the kill: not acknowledged
                    if ended:
                        with lock:
                            seen_end.append(marker)

        threads = [threading.Thread(target=client, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.2, 0.8))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stop.set()
        for t in threads:
            t.join()
    calls = len(seen_end)

    store = CaptureStore(root)
    captured: set[str] = set()
    torn = 0
    for rollout in ("srv-0", "srv-1"):
        lines, damaged = store.read_available(rollout)
        torn += damaged
        for _, line in lines:
            assert line.request is not None
            captured.add(line.request["messages"][0]["content"])
    lost = set(seen_end) - captured
    assert not lost, sorted(lost)[:5]
    assert torn <= kills
    print(
        f"{kills} kills, {calls} calls whose end the client saw, {len(captured)} lines, {torn} torn"
    )
    figures.append(
        Figure(
            "model server (middleware) killed with SIGKILL while serving",
            f"real SIGKILL of a uvicorn process at a random moment, 4 clients, JSON and streams; "
            f"{calls} calls whose end the client saw",
            kills,
            len(captured),
            len(lost),
            "every call whose end the client saw is on disk; a call cut by the kill fails at the client "
            f"with a connection error; torn lines: {torn}",
        )
    )
