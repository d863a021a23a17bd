"""The examples of docs/engines.md, run as written, so the page cannot rot.

The page's bash block (`mcc demo`, `mcc export`) runs once in a temporary directory; each
Python block then runs there as its own process and must exit cleanly and print the
demo's models. Blocks fenced as ```` ```python spark ```` are only checked to exist: Spark
needs a JVM that this machine does not have.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

PAGE = REPO / "docs" / "engines.md"
_BIN = Path(sys.executable).parent


def _blocks() -> list[tuple[str, str]]:
    """(info string, code) of every fenced block on the page, in order."""
    text = PAGE.read_text(encoding="utf-8")
    return re.findall(r"^```([^\n]*)\n(.*?)^```$", text, flags=re.S | re.M)


def _python_blocks() -> list[str]:
    return [code for info, code in _blocks() if info == "python"]


def _env() -> dict[str, str]:
    # `mcc` and `python` of this interpreter's environment, whatever PATH says.
    return {
        **os.environ,
        "PATH": f"{_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "NO_COLOR": "1",
    }


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory where the page's bash block ran: `mcc-demo/`, `calls*.parquet`."""
    cwd = tmp_path_factory.mktemp("engines")
    (bash,) = [code for info, code in _blocks() if info == "bash"]
    for command in bash.strip().splitlines():
        done = subprocess.run(
            shlex.split(command), cwd=cwd, env=_env(), capture_output=True, text=True, timeout=240
        )
        assert done.returncode == 0, f"{command}: {done.stderr}"
    assert (cwd / "calls.parquet").is_file() and (cwd / "calls-payloads.parquet").is_file()
    return cwd


def test_the_page_has_an_example_per_engine() -> None:
    infos = [info for info, _ in _blocks()]
    assert infos.count("python spark") == 1
    engines = ["import duckdb", "import polars", "import pandas", "read_model_calls", "export("]
    python = _python_blocks()
    found = [next(i for i, code in enumerate(python) if e in code) for e in engines]
    assert found == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("index", range(5), ids=["duckdb", "polars", "pandas", "ray", "export"])
def test_example_runs_and_reads_the_demo(workdir: Path, index: int) -> None:
    code = _python_blocks()[index]
    if index == 3:
        pytest.importorskip("ray")
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=workdir,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    for model in ("demo-gpt", "demo-claude"):
        assert model in done.stdout, done.stdout
