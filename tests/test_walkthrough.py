"""docs/rl-walkthrough.md, run as written, so the page cannot rot.

Every fenced block of the page runs in order in one temporary directory: a bash line
ending in `&` starts a real server in the background (the scripted model server on
uvicorn, `mcc serve` in front of it, both on 127.0.0.1, on free ports put in place of the
page's 8000 and 8787), every other bash line runs to completion, and each Python block
runs as its own process (the real openai client, the real collector). Then the results
are checked against the capture files, read with the standard library as the oracle.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO

PAGE = REPO / "docs" / "rl-walkthrough.md"
_BIN = Path(sys.executable).parent


def _blocks() -> list[tuple[str, str]]:
    """(info string, code) of every fenced block on the page, in order."""
    text = PAGE.read_text(encoding="utf-8")
    return re.findall(r"^```([^\n]*)\n(.*?)^```$", text, flags=re.S | re.M)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _env() -> dict[str, str]:
    # `mcc` and `python` of this interpreter's environment, whatever PATH says.
    return {
        **os.environ,
        "PATH": f"{_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "NO_COLOR": "1",
    }


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{process.args!r} exited with {process.returncode}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port} after 60 s: {process.args!r}")


def _command(line: str) -> list[str]:
    words = shlex.split(line)
    return [sys.executable, *words[1:]] if words[0] == "python" else words


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    """The directory where every block of the page ran, and what each block printed."""
    cwd = tmp_path_factory.mktemp("walkthrough")
    ports = {"8000": str(_free_port()), "8787": str(_free_port())}
    servers: list[subprocess.Popen[bytes]] = []
    printed: list[str] = []
    try:
        for info, code in _blocks():
            for page_port, port in ports.items():
                code = re.sub(rf"\b{page_port}\b", port, code)
            if info == "python":
                done = subprocess.run(
                    [sys.executable, "-c", code],
                    cwd=cwd,
                    env=_env(),
                    capture_output=True,
                    text=True,
                    timeout=240,
                )
                assert done.returncode == 0, done.stderr
                printed.append(done.stdout)
                continue
            assert info == "bash", info
            for line in code.strip().splitlines():
                if line.endswith("&"):
                    # Their logs go to a file: a pipe nobody reads would stop them once full.
                    with (cwd / f"server-{len(servers)}.log").open("wb") as log:
                        server = subprocess.Popen(
                            _command(line.rstrip("& ")), cwd=cwd, env=_env(), stdout=log, stderr=log
                        )
                    servers.append(server)
                    (port,) = [p for p in ports.values() if f"--port {p}" in line]
                    _wait_for(int(port), server)
                    continue
                done = subprocess.run(
                    _command(line), cwd=cwd, env=_env(), capture_output=True, text=True, timeout=240
                )
                assert done.returncode == 0, f"{line}: {done.stdout}{done.stderr}"
                printed.append(done.stdout)
        yield cwd, printed
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _capture_lines(cwd: Path) -> dict[str, list[dict[str, object]]]:
    captures = cwd / "rl-run" / "model-calls"
    return {
        path.name.removesuffix(".capture.jsonl"): [
            json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
        ]
        for path in sorted(captures.glob("*.capture.jsonl"))
    }


def test_the_page_runs_a_server_the_collector_an_export_and_a_batch() -> None:
    infos = [info for info, _ in _blocks()]
    assert infos == ["bash", "python", "python", "bash", "python"]
    code = "\n".join(code for _, code in _blocks())
    for part in ("mcc serve", "collect(", "read_model_call_records", "--tokens", "np.zeros"):
        assert part in code


def test_every_rollout_is_collected_with_its_captured_calls(
    walked: tuple[Path, list[str]],
) -> None:
    cwd, printed = walked
    assert printed[0] == "collected 6 of 6 rollouts; failed: {}\n"
    lines = _capture_lines(cwd)
    assert sorted(lines) == ["0-0", "0-1", "1-0", "1-1", "2-0", "2-1"]
    rows = [
        json.loads(line) for line in (cwd / "rl-run" / "rollouts.jsonl").read_text().splitlines()
    ]
    for row in rows:
        capture = row["ng_model_call_capture"]
        calls = lines[capture["rollout_id"]]
        # two calls: the tool call, then the answer after the tool's result
        assert capture["metrics"]["num_calls"] == len(calls) == 2
        assert "gaps" not in capture
        assert [c["status_code"] for c in calls] == [200, 200]
        city = ("Berlin", "Lyon", "Oslo")[row["_ng_task_index"]]
        assert row["reward"] == (0.0 if city == "Oslo" else 1.0)
    # the third block printed one line per rollout and one per call
    assert printed[1].count("rollout ") == 6 and printed[1].count("  call ") == 12


def test_the_batch_trains_exactly_the_generated_tokens(walked: tuple[Path, list[str]]) -> None:
    cwd, printed = walked
    validate, _stats, export, batch = printed[2:]
    assert validate.startswith("ok: 12 lines in 6 files are valid")
    assert export.startswith("wrote 6 token trajectories to rl-run/trajectories.parquet")
    # The oracle: each rollout's last call holds the whole sequence (its prompt is every
    # earlier prompt, generation, tool result and template), and every call's generated
    # ids are trained.
    lines = _capture_lines(cwd)
    generated = [
        len(call["response"]["choices"][0]["token_ids"])  # type: ignore[index]
        for calls in lines.values()
        for call in calls
    ]
    width = max(
        len(calls[-1]["response"]["prompt_token_ids"])  # type: ignore[index]
        + len(calls[-1]["response"]["choices"][0]["token_ids"])  # type: ignore[index]
        for calls in lines.values()
    )
    first, second = batch.splitlines()
    assert first == f"batch 6 x {width}, {sum(generated)} trained tokens"
    # batch order is the natural order of rollout ids: Berlin, Berlin, Lyon, Lyon, Oslo, Oslo
    mean = 4 / 6
    expected = [round(r - mean, 3) for r in (1.0, 1.0, 1.0, 1.0, 0.0, 0.0)]
    assert second == f"rewards {[1.0, 1.0, 1.0, 1.0, 0.0, 0.0]} advantages {expected}"
