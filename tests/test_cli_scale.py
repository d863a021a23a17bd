"""`mcc stats` and `mcc validate` at scale: bounded memory, huge and hostile files, `--jobs`.

Every command runs as a real subprocess, so memory is the child's own peak RSS
(`ru_maxrss` of its children, read by a small wrapper process) and address-space limits
apply to it alone. No figure here is a time: the timings are in benchmarks/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.captures import write_rollouts

REPO = Path(__file__).resolve().parents[1]

# Runs a command and prints the peak RSS (KiB on Linux) of it and its descendants.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "run = subprocess.run(sys.argv[1:], capture_output=True, timeout=600)\n"
    "sys.stderr.buffer.write(run.stderr)\n"
    "print(run.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _mcc_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "model_call_capture.cli", *args]


def _peak_rss_mib(*args: str) -> float:
    run = subprocess.run(
        [sys.executable, "-c", _MEASURE, *_mcc_cmd(*args)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    code, kib = run.stdout.split()
    assert code == "0", run.stderr
    return int(kib) / 1024


def _mcc(*args: str, limit_as: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        import resource

        assert limit_as is not None
        resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    return subprocess.run(
        _mcc_cmd(*args),
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit if limit_as else None,
    )


def test_stats_memory_grows_with_the_largest_rollout_not_with_the_directory(
    tmp_path: Path,
) -> None:
    # 48 rollouts of 2.5 MB (120 MB): a reader that keeps every record (or its line)
    # until the end peaks at least that much above a directory of one such rollout.
    one, many = tmp_path / "one", tmp_path / "many"
    write_rollouts(one, rollouts=1, lines=10, line_bytes=256 * 1024)
    write_rollouts(many, rollouts=48, lines=10, line_bytes=256 * 1024)
    base = _peak_rss_mib("stats", str(one), "--json")
    peak = _peak_rss_mib("stats", str(many), "--json")
    assert peak - base < 40, f"mcc stats peaked at {peak:.0f} MiB, {base:.0f} MiB for one rollout"


def test_stats_and_validate_say_the_same_whatever_the_jobs(tmp_path: Path) -> None:
    write_rollouts(tmp_path, rollouts=12, lines=5, line_bytes=2048)
    with (tmp_path / "3-0.capture.jsonl").open("ab") as f:
        f.write(b'{"torn\n{"status_code": "200"}\n' + b"w" * 5000 + b"\n")
    outputs = {}
    for jobs in ("1", "4"):
        outputs[jobs] = [
            _mcc("stats", str(tmp_path), "--jobs", jobs, "--max-line-bytes", "4096"),
            _mcc("stats", str(tmp_path), "--json", "--jobs", jobs),
            _mcc("validate", str(tmp_path), "--jobs", jobs, "--max-line-bytes", "4096"),
        ]
    for one, four in zip(outputs["1"], outputs["4"], strict=True):
        assert (one.returncode, one.stdout, one.stderr) == (
            four.returncode,
            four.stdout,
            four.stderr,
        )
    table, as_json, validated = outputs["4"]
    assert "3 unreadable lines skipped" in table.stderr  # a note: stdout stays the table
    assert sum(row["calls"] for row in json.loads(as_json.stdout)["rows"]) == 60
    assert validated.returncode == 1
    path = tmp_path / "3-0.capture.jsonl"
    assert f"{path}:8: line too long: 5000 bytes, over --max-line-bytes 4096" in validated.stdout
    assert "3 of 63 lines invalid in 1 of 12 files" in validated.stdout


def test_a_fifo_and_a_directory_named_like_capture_files_are_reported_never_waited_on(
    tmp_path: Path,
) -> None:
    write_rollouts(tmp_path, rollouts=1, lines=2, line_bytes=1024)
    os.mkfifo(tmp_path / "fifo.capture.jsonl")  # no writer ever opens it
    (tmp_path / "dir.capture.jsonl").mkdir()
    validated = _mcc("validate", str(tmp_path))
    assert validated.returncode == 1
    for name, kind in (("dir", "a directory"), ("fifo", "a FIFO")):
        assert f"{tmp_path / name}.capture.jsonl:0: cannot read: not a regular file ({kind})" in (
            validated.stdout
        )
    stats = _mcc("stats", str(tmp_path), "--json")
    assert stats.returncode == 0, stats.stderr
    assert sum(row["calls"] for row in json.loads(stats.stdout)["rows"]) == 2
    # The store skips entries that are not regular files, and names each once.
    assert f"skipping {tmp_path / 'fifo'}.capture.jsonl: a FIFO" in stats.stderr


def test_a_sparse_three_gigabyte_file_is_streamed_under_a_one_gigabyte_address_space(
    tmp_path: Path,
) -> None:
    path = tmp_path / "0-0.capture.jsonl"
    with path.open("wb") as f:
        f.truncate(3 << 30)  # a hole: no disk used, 3 GiB of zero bytes and no newline
        f.seek(3 << 30)
        f.write(b'\n{"dialect": "chat", "latency_ms": 5.0}\n')
    limit = 1 << 30
    validated = _mcc("validate", str(path), limit_as=limit)
    assert validated.returncode == 1, validated.stderr
    assert validated.stdout.splitlines() == [
        f"{path}:1: line too long: {3 << 30} bytes, over --max-line-bytes {256 << 20} (not read)",
        "1 of 2 lines invalid in 1 of 1 file",
    ]
    stats = _mcc("stats", str(tmp_path), "--json", limit_as=limit)
    assert stats.returncode == 0, stats.stderr
    (row,) = json.loads(stats.stdout)["rows"]
    assert (row["calls"], row["latency_p50_ms"]) == (1, 5.0)


@pytest.mark.parametrize("command", ["stats", "validate"])
def test_jobs_must_be_positive(tmp_path: Path, command: str) -> None:
    run = _mcc(command, str(tmp_path), "--jobs", "0")
    assert run.returncode == 2
    assert "--jobs" in run.stderr


def _square_or_fail(n: int) -> int:
    if n == 13:
        raise ValueError("thirteen")
    return n * n


def test_map_files_yields_in_input_order_and_raises_a_workers_error_in_order() -> None:
    from model_call_capture._parallel import map_files

    assert (
        list(map_files(_square_or_fail, list(range(12)) * 5, 3)) == [n * n for n in range(12)] * 5
    )
    seen = []
    with pytest.raises(ValueError, match="thirteen"):
        for result in map_files(_square_or_fail, list(range(20)), 2):
            seen.append(result)
    # Files go to workers in small batches: the error comes in order, after every file
    # of the batches before its own.
    assert seen == [n * n for n in range(len(seen))] and len(seen) <= 13
