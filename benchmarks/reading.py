"""Target 6 (issue 14): reading at scale.

6a: `mcc validate` against the record reader on the same file (lines/s, in one process:
the check of `--jobs 1`), target >= 0.8x. 6b: cutting one very long line, our reader
against the reader it replaced (re-joining the line so far at every chunk). 6c: the
peak RSS of `mcc stats` over a generated directory, against the directory's size.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from model_call_capture.cli.validate import check_file
from model_call_capture.reader import RawLines
from model_call_capture.records import read_available_model_call_records
from model_call_capture.store import CaptureStore

from ._common import Row, interleaved, not_ready
from .captures import write_rollouts
from .records import ROLLOUT, write_capture_file

__all__ = ["run"]

TARGET = 0.8
_CHUNK = 1 << 20


def _quadratic_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The cutting this release replaced: the line so far re-joined to every chunk."""
    pending = b""
    for chunk in chunks:
        parts = (pending + chunk).split(b"\n")
        pending = parts.pop()
        yield from parts
    if pending:
        yield pending


def _validate_row(quick: bool) -> Row:
    n = 2_000 if quick else 50_000
    what = f"mcc validate vs read_available_model_call_records, {n:,} lines"
    with tempfile.TemporaryDirectory(prefix="mcc-bench-validate-") as tmp:
        path = write_capture_file(Path(tmp), n)
        store = CaptureStore(tmp)
        count, problems = check_file(path)
        if count != n or problems:
            return not_ready("6a", what, f">= {TARGET:g}x", f"{len(problems)} problems")
        t_validate, t_read = interleaved(
            lambda: check_file(path),
            lambda: read_available_model_call_records(store, ROLLOUT),
            rounds=3,
            pause_gc=False,
        )
    ratio = t_read / t_validate
    return Row(
        "6a",
        what,
        f"{n / t_validate:,.0f} lines/s (validate)",
        f"{n / t_read:,.0f} lines/s (records)",
        f"{ratio:.2f}x",
        f">= {TARGET:g}x",
        ratio >= TARGET,
        "one process (--jobs 1); jsonschema runs only on lines the contract refuses",
    )


def _merged_row(quick: bool) -> Row:
    """Row 6d: a rollout written in three files (its shared file and two segments, the
    segment layout) read merged, against the same lines in its one shared file."""
    n = 600 if quick else 30_000
    with tempfile.TemporaryDirectory(prefix="mcc-bench-merged-") as tmp:
        one = write_capture_file(Path(tmp), n)
        lines = one.read_bytes().splitlines(keepends=True)
        split = Path(tmp) / "split"
        segments = split / f"{ROLLOUT}.capture.segments"
        segments.mkdir(parents=True)
        (split / one.name).write_bytes(b"".join(lines[0::3]))
        for k, name in ((1, "host-a.1.00000000.jsonl"), (2, "host-b.1.00000000.jsonl")):
            (segments / name).write_bytes(b"".join(lines[k::3]))
            os.utime(segments / name, (0, 0))  # settled: no writer may be mid-line
        stores = CaptureStore(tmp), CaptureStore(split)
        t_merged, t_one = interleaved(
            lambda: read_available_model_call_records(stores[1], ROLLOUT),
            lambda: read_available_model_call_records(stores[0], ROLLOUT),
            rounds=1 if quick else 5,
            pause_gc=False,
        )
    return Row(
        "6d",
        f"a rollout of three files read merged, {n:,} lines",
        f"{n / t_merged:,.0f} records/s (shared file + 2 segments)",
        f"{n / t_one:,.0f} records/s (the same lines in one file)",
        f"{t_one / t_merged:.2f}x",
        "(info)",
        None,
        "lazy payloads; the merge decodes each line's completed_at once more, line by line",
    )


def _long_line_row(quick: bool) -> Row:
    size = (8 if quick else 128) << 20
    data = b'{"x": "' + b"a" * size + b'"}\n'
    chunks = [data[i : i + _CHUNK] for i in range(0, len(data), _CHUNK)]
    t_ours, t_old = interleaved(
        lambda: list(RawLines(chunks)), lambda: list(_quadratic_lines(chunks)), rounds=1
    )
    return Row(
        "6b",
        f"cut one {size >> 20} MiB line read in 1 MiB chunks",
        f"{t_ours:.3f} s",
        f"{t_old:.3f} s (re-join per chunk, before)",
        f"{t_old / t_ours:.0f}x",
        "linear",
        None,
        "the old reader copied the line so far at every chunk",
    )


def _stats_rss_row(quick: bool) -> Row:
    rollouts, lines, kb = (40, 10, 16) if quick else (500, 50, 16)
    measure = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    with tempfile.TemporaryDirectory(prefix="mcc-bench-stats-") as tmp:
        paths = write_rollouts(Path(tmp), rollouts=rollouts, lines=lines, line_bytes=kb * 1024)
        size = sum(p.stat().st_size for p in paths)
        cmd = [sys.executable, "-m", "model_call_capture.cli", "stats", tmp, "--json"]
        done = subprocess.run(
            [sys.executable, "-c", measure, *cmd], capture_output=True, text=True, check=True
        )
    peak = int(done.stdout) / 1024
    return Row(
        "6c",
        f"peak RSS of mcc stats, {rollouts} rollouts x {lines} lines of {kb} KB",
        f"{peak:.0f} MiB",
        f"{size / 2**20:.0f} MiB of captures",
        f"{peak / (size / 2**20):.2f}x",
        "<= 256 MiB",
        peak <= 256,
        "streams file by file; all cores (--jobs default)",
    )


def run(quick: bool) -> list[Row]:
    """Rows 6a (validate vs records), 6b (a long line), 6c (stats memory), 6d (merged read)."""
    rows = []
    for make in (_validate_row, _long_line_row, _stats_rss_row, _merged_row):
        try:
            rows.append(make(quick))
        except Exception as exc:  # a component not ready: report it, do not crash the run
            rows.append(not_ready("6", make.__name__, "-", f"{type(exc).__name__}: {exc}"))
    return rows
