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
TARGETS = (
    "| 1 |",
    "| 2 |",
    "| 3a |",
    "| 3b |",
    "| 4a |",
    "| 4b |",
    "| 4c |",
    "| 5 |",
    "| 6a |",
    "| 7a |",
    "| 7b |",
    "| 8a |",
    "| 8b |",
    "| 8c |",
    "| 8d |",
    "| 8e |",
    "| 10a |",
    "| 10b |",
)


def _python_m(
    *args: str, tmp_path: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m ARGS` from the repository root (capture files under `tmp_path`), its output kept."""
    env = {**os.environ, "MCC_BENCH_DIR": str(tmp_path)} if tmp_path is not None else None
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_contention_probe_measures_every_side() -> None:
    """`python -m benchmarks.contention`: each server measured, a figure per side and metric."""
    probe = ["benchmarks.contention", "--rounds", "1", "--seconds", "0.3", "--control", "1"]
    done = _python_m(*probe, "--side", f"again={ROOT / 'src'}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "stack h11 + asyncio, 1 x 0.3 s per side", done.stdout
    sides = ["on", "off", "again", "spin1us"]
    assert [line.split(":")[0].strip() for line in lines[1:5]] == sides
    assert lines[5].split() == ["per", "request", "(median)", *sides]
    figures = {line[:44].strip(): line[44:].split() for line in lines[6:]}
    assert "others voluntary switches" in figures and "load client: times it slept" in figures
    assert all(len(cells) == len(sides) for cells in figures.values()), done.stdout
    # Capture off starts no write thread, so its other threads never switch.
    switches = [float(cell) for cell in figures["others voluntary switches"]]
    assert switches[1] == switches[3] == 0.0 and switches[0] > 0, done.stdout


def test_quick_run_prints_a_row_for_every_target(tmp_path: Path) -> None:
    # Nine sections, each starting servers of its own: minutes on a busy 2-core machine.
    done = _python_m("benchmarks", "--quick", tmp_path=tmp_path, timeout=300)
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


def test_scale_quick_run_measures_every_command(tmp_path: Path) -> None:
    """`python -m benchmarks scale --quick`: ours and DuckDB's commands each ran and were measured."""
    done = _python_m("benchmarks", "scale", "--quick", tmp_path=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "command: python -m benchmarks scale --rollouts 6" in out, out
    assert "| command | seconds | lines/s | CPU s | peak RSS | output | note |" in out, out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line][1:]
    names = [row.split(" | ")[0][2:] for row in rows]
    for name in ("mcc stats", "mcc export", "mcc export --payloads", "mcc validate"):
        assert any(n.startswith(name) for n in names), (name, out)
    assert sum("duckdb" in n for n in names) == 6 and any(
        "read_model_call_records" in n for n in names
    )
    assert sum(n.startswith("msgspec floor") for n in names) == 2, out
    assert sum(n.startswith("export floor") for n in names) == 2, out
    # Each fair baseline was checked against ours, and did the same job.
    assert "| same figures as mcc stats --json in all 3 groups |" in out, out
    assert out.count("| same values as mcc export in all 30 columns |") == 1, out
    assert out.count("| same values as mcc export --jobs 1 in all 30 columns |") == 1, out
    assert out.count("| same values as mcc export --payloads in all 34 columns |") == 1, out
    # The floor against DuckDB's COPY, both cores and one, stated with its figures.
    assert out.count("- both cores: the msgspec floor takes ") == 1, out
    assert out.count("- one core: the msgspec floor takes ") == 1, out
    assert out.count("- both cores: the export floor takes ") == 1, out
    assert out.count("- one core: the export floor takes ") == 1, out
    assert not [row for row in rows if "| failed |" in row], out
    assert list(tmp_path.iterdir()) == [], "the generated directory was not deleted"


def test_the_floor_checks_every_line_and_keeps_nothing(tmp_path: Path) -> None:
    path = tmp_path / "r.capture.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": [1, 2\n{"c": "x"}')  # a blank, a damaged, a torn line
    # A subprocess, as the benchmark runs it (and mypy does not follow it into benchmarks/).
    code = "import sys; from benchmarks.scale import floor_file; print(floor_file(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "3"


def test_the_export_floor_derives_every_line_it_decodes(tmp_path: Path) -> None:
    path = tmp_path / "r.capture.jsonl"
    good = b'{"model_call_id":"a","dialect":"chat","request":{"model":"m"},"response":{"id":"r"}}'
    # Two calls, a blank line, a damaged line, a torn line; then a file of one run of three.
    path.write_bytes(good + b"\n\n" + b'{"b": [1, 2\n' + good + b"\n" + good[:-5])
    other = tmp_path / "s.capture.jsonl"
    other.write_bytes((good + b"\n") * 3)
    code = (
        "import sys; from benchmarks.scale import export_floor_file as f; "
        "print(f(sys.argv[1]), f(sys.argv[2]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), str(other)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == ["2", "3"]


def test_the_floor_verdict_states_the_cpu_that_2x_allows_on_any_schedule() -> None:
    # Figures of the 2026-12-01 19:51 scale run; the expected text is worked out by hand:
    # both cores, 2 x 18.5 / 2 = 18.5 CPU s allowed, 18.6 used (101%), -0.1 left; one
    # core, 39.2 / 2 = 19.6 allowed, 14.8 used (76%), 4.8 left.
    code = (
        "from benchmarks.scale import Measure, EXPORT_FLOOR, EXPORT_FLOOR_1, FAIR, FAIR_1, "
        "_floor_verdict\n"
        "m = lambda what, s, cpu: Measure(what, s, 0, cpu, 0, True)\n"
        "print(_floor_verdict([m(FAIR, 18.5, 35.1), m(FAIR_1, 39.2, 39.1), "
        "m(EXPORT_FLOOR, 9.7, 18.6), m(EXPORT_FLOOR_1, 14.8, 14.8)], cores=2))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    both, one = done.stdout.splitlines()
    assert both.startswith("- both cores: the export floor takes 9.7 s wall / 18.6 CPU s"), both
    assert "0.52x / 0.53x of it" in both and "rules 2x out" in both, both
    assert both.endswith(
        "2x allows 18.5 CPU s (2 x half DuckDB's wall), the floor uses 101% of it, "
        "leaving -0.1 CPU s for everything else."
    ), both
    assert one.startswith("- one core: the export floor takes 14.8 s wall / 14.8 CPU s"), one
    assert "does not rule 2x out" in one, one
    assert one.endswith(
        "2x allows 19.6 CPU s (1 x half DuckDB's wall), the floor uses 76% of it, "
        "leaving 4.8 CPU s for everything else."
    ), one


def test_the_vllm_rows_state_what_the_run_can_resolve() -> None:
    from benchmarks.vllm_dropin import resolution

    assert resolution([100.0] * 8, [100.0] * 8) == "95% interval 1.00-1.00x; A/A 1.00x"
    # Sides that differ only by noise give an interval around 1 and an A/A off 1.
    plain = [90.0, 110.0] * 6
    text = resolution(list(reversed(plain)), plain)
    low, high = (float(x) for x in text.split("interval ")[1].split("x;")[0].split("-"))
    assert low < 1.0 < high
    assert text.endswith("A/A 0.82x")
    assert resolution([1.0, 2.0], [1.0, 2.0]) == ""
