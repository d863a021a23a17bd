"""Smoke test of the benchmarks: `python -m benchmarks --quick` runs and prints its table.

No timing assertion here (the machines are shared and noisy; figures belong in
docs/performance.md): only that every section ran, measured on real parts (SDKs,
uvicorn, files with fsync, subprocesses), and reported a ratio rather than crashing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("| 1 |", "| 2 |", "| 3a |", "| 3b |", "| 4a |", "| 4b |", "| 4c |", "| 5 |", "| 6a |")


def test_quick_run_prints_a_row_for_every_target(tmp_path: Path) -> None:
    env = {**os.environ, "MCC_BENCH_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("machine: nproc "), out
    assert "| # | measure | ours | baseline | ratio | target | verdict | note |" in out
    rows = [
        line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| # ")
    ]
    for target in TARGETS:
        assert any(row.startswith(target) for row in rows), f"no row for target {target}:\n{out}"
    # A section that crashed would say so in its row instead of giving a ratio.
    assert not [row for row in rows if "n/a (not ready)" in row], out
    assert not [row for row in rows if "Traceback" in row], out
    assert "Traceback" not in done.stderr, done.stderr
