"""The package type-checks under `mypy --strict` (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_mypy_strict_on_src() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
