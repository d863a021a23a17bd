"""The real parts the proxy tests run on, and the helpers they share.

- `mcc_serve(...)`: `mcc serve` as its own process on a port it picks (the first line it
  prints names it), with its stdout and stderr kept for the assertions.
- `upstream_url`: the demo model server as its own process (module fixture).
- `RecordingUpstream`: a raw ASGI app that answers every request with what it received
  (path, query, headers, body size), to run on `servers.serve` in a thread.
- `raw_request(port, data)`: bytes sent on a plain socket, the reply parsed by hand, for
  what an HTTP client library would refuse to send (absolute-form, `*`, `#`, dot segments).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from model_call_capture import CaptureStore

API_KEY = "sk-secret-never-recorded-4242"

_UPSTREAM_CODE = """
import socket, sys, uvicorn
from model_call_capture.demo.model_server import create_app
sock = socket.socket(fileno=int(sys.argv[1]))
config = uvicorn.Config(create_app(), log_level="warning", server_header=False, date_header=False)
uvicorn.Server(config).run(sockets=[sock])
"""


def listening_socket() -> socket.socket:
    """A socket bound to a free port on 127.0.0.1 and listening (the kernel accepts on it)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


def wait_until_serving(url: str, proc: subprocess.Popen[Any], log: Path) -> None:
    """Until `url` answers anything; fails with the process's stderr if it exits first."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}: {log.read_text()}")
        try:
            httpx.get(url + "/", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer: {log.read_text()}")


def stop(proc: subprocess.Popen[Any]) -> None:
    """Terminate a process started by a fixture, killing it if it does not exit."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


@dataclass
class Served:
    """A running `mcc serve` process."""

    url: str
    port: int
    capture_dir: Path
    proc: subprocess.Popen[str]
    banner: str
    """The first line it printed (where it listens, where it forwards to)."""
    stderr_path: Path

    def stderr(self) -> str:
        """What it wrote to stderr so far."""
        return self.stderr_path.read_text(errors="replace")


@contextmanager
def mcc_serve(upstream: str, root: Path, *options: str) -> Iterator[Served]:
    """`mcc serve --upstream upstream` with `options`, capturing into `root/captures`."""
    capture_dir = root / "captures"
    log = root / "serve-stderr.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "model_call_capture.cli",
                "serve",
                "--upstream",
                upstream,
                "--capture-dir",
                str(capture_dir),
                "--name",
                "proxy-test",
                "--port",
                "0",
                *options,
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        match = re.match(r"mcc serve: http://127\.0\.0\.1:(\d+) -> ", first)
        assert match, f"unexpected first line {first!r}: {log.read_text()}"
        port = int(match.group(1))
        url = f"http://127.0.0.1:{port}"
        wait_until_serving(url, proc, log)
        yield Served(url, port, capture_dir, proc, first, log)
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def upstream_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo model server, as its own process on a socket bound here (no port race)."""
    log = tmp_path_factory.mktemp("upstream") / "stderr.log"
    sock = listening_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", _UPSTREAM_CODE, str(sock.fileno())],
            pass_fds=[sock.fileno()],
            stderr=err,
        )
    sock.close()
    try:
        wait_until_serving(url, proc, log)
        yield url
    finally:
        stop(proc)


def lines(capture_dir: Path, rollout_id: str) -> list[Any]:
    """The capture lines of a rollout, read back through `CaptureStore`."""
    return CaptureStore(capture_dir).read(rollout_id)


def wait_for_lines(capture_dir: Path, rollout_id: str, count: int = 1) -> list[Any]:
    """The rollout's lines, once there are `count` (a line may land after the client left)."""
    store = CaptureStore(capture_dir)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if store.path(rollout_id).exists() and len(store.read_available(rollout_id)[0]) >= count:
            break
        time.sleep(0.02)
    return store.read(rollout_id)


@dataclass
class RecordingUpstream:
    """An ASGI upstream answering every request with JSON of what it received."""

    seen: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                break
        got = {
            "method": scope["method"],
            "path": scope["raw_path"].decode("latin-1"),
            "query": scope["query_string"].decode("latin-1"),
            "headers": {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]},
            "body_bytes": size,
        }
        self.seen.append(got)
        body = json.dumps(got).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


@dataclass
class RawReply:
    """An HTTP/1.1 reply read off a plain socket."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += data[:size]
        data = data[size + 2 :]


def parse_reply(data: bytes) -> RawReply:
    """One complete HTTP/1.1 reply (sized, chunked, or ended by close)."""
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _dechunk(body)
    elif "content-length" in headers:
        body = body[: int(headers["content-length"])]
    return RawReply(int(status_line.split()[1]), headers, body)


def read_to_end(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection.

    A reset ends it too: a server that closes with unread request bytes in its buffer
    resets the connection, after what it wrote has arrived.
    """
    data = bytearray()
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return bytes(data)


def raw_request(port: int, data: bytes, *, timeout: float = 10) -> RawReply:
    """Send `data` on a fresh connection (it asks the server to close) and parse the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        return parse_reply(read_to_end(sock))


def get(target: bytes) -> bytes:
    """A GET request for `target` as it goes on the wire, asking the server to close after."""
    return b"GET " + target + b" HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n"
