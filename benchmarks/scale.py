"""`python -m benchmarks scale --rollouts N`: the read side on an RL-sized directory, beside DuckDB.

Generates a seeded directory (`_generate.py`), then runs each command as its own process,
one after another on the same files in the same run: `mcc stats`, `mcc export` (with and
without `--payloads`), `mcc validate`, `read_model_call_records` over every rollout, and
DuckDB's `read_json` doing each one's job: beside `mcc export`, `COPY ... TO parquet` of
the same 30 columns with the same values (`_duck.FAIR_COLUMNS`), beside `mcc export
--payloads` the same with the four payload columns (`_duck.FAIR_PAYLOADS_COLUMNS`), and
beside `mcc stats --json` its figures in SQL (`_duck_stats.STATS_QUERY`). Every run checks
that each wrote what ours wrote (`_duck.mismatches`, `_duck_stats.differences`, noted on
the row); the former 10-column query (Anthropic input tokens without cache) is a primed
info row beside the export without payloads. For each: wall time, lines per second, peak
RSS (of the largest process of the command's tree: a command that runs worker processes,
such as `mcc export --jobs`, uses more in all), CPU seconds (user + system of the whole
tree: on a loaded machine the steadier figure) and the size of what it wrote.
The export without payloads also runs on one core on both sides (`--jobs 1`, DuckDB
`SET threads TO 1`), and beside it the floor of any reader built on msgspec: the same
files split over the same workers (`map_files`, the same `--jobs`), each file's lines cut
as every reader cuts them (`store.read_file_lines`) and each line decoded into a Struct
with no fields (`msgspec` still checks every byte of it), nothing else. When that floor
alone takes more than half of DuckDB's `COPY`, no msgspec-based export can be 2x DuckDB.
Beside it the export floor (`export_floor_file`, both core counts): the export's own steps
that no export with its verdicts and values can skip (the files read, each chunk's whole
lines decoded by msgspec at once into the fields a record needs, the UTF-8 check of the
text msgspec skips, each dialect's `derive`), and nothing after them (no record, no
Arrow, no Parquet).
The machine is shared: figures are noisy, compare rows of one run only.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec

from model_call_capture.arrow import PAYLOAD_COLUMNS
from model_call_capture.store import read_file_lines

from ._duck import (
    FAIR_COLUMNS,
    FAIR_PAYLOADS_COLUMNS,
    FAIR_PAYLOADS_SOURCE,
    FAIR_SOURCE,
    OMITTED,
    SHORT_QUERY,
    SHORT_SOURCE,
    copy_sql,
    mismatches,
    query_sql,
)
from ._duck_stats import STATS_QUERY, STATS_SOURCE, differences
from ._generate import generate

__all__ = ["export_floor_file", "floor_file", "main"]

_PR_SET_CHILD_SUBREAPER = 36


class _Nothing(msgspec.Struct):
    pass


_decode_nothing = msgspec.json.Decoder(_Nothing).decode


def floor_file(path: str | Path) -> int:
    """The lines of one capture file, each checked by msgspec and nothing else kept."""
    lines = 0
    for _, line in read_file_lines(Path(path)):
        with contextlib.suppress(msgspec.DecodeError):
            _decode_nothing(line)
        lines += 1
    return lines


def export_floor_file(path: str | Path) -> int:
    """What no export of `path` with the export's verdicts and values can skip; its lines.

    The file read in chunks and cut into runs of whole lines (`reader.RawLines.runs`),
    each run's lines checked by msgspec in one call into the Struct of the fields a record
    needs (`records.decode_run_without_payloads`, one line at a time where a run is not
    taken whole), the UTF-8 check of the text msgspec skips (`LineRun.objects`), and the
    dialect's `derive` on each line: the export's own steps up to the record, nothing after,
    through the reader's own loop (`reader.CaptureLines` with `decode_run`).
    """
    from model_call_capture.dialects import DIALECTS
    from model_call_capture.reader import CaptureLines
    from model_call_capture.records import (
        decode_line_without_payloads,
        decode_run_without_payloads,
    )

    path = Path(path)
    decoded = CaptureLines(
        read_file_lines(path),
        path,
        strict=False,
        decode=decode_line_without_payloads,
        decode_run=decode_run_without_payloads,
    )
    lines = 0
    for _, line in decoded:
        module = DIALECTS.get(line.dialect) if line.dialect is not None else None
        if module is not None:
            module.derive(line.request, line.response)
        lines += 1
    return lines


# A floor (`floor_file` or `export_floor_file`, argv[4]) over every file, split over
# `--jobs` workers as `mcc` splits them.
_FLOOR = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from benchmarks import scale
from model_call_capture._parallel import map_files
files = sorted(Path(sys.argv[1]).glob("*.capture.jsonl"))
jobs = int(sys.argv[2]) if sys.argv[2] != "default" else None
print(sum(map_files(getattr(scale, sys.argv[4]), files, jobs)))
"""

_READ = """
import sys
from model_call_capture.records import read_model_call_records
from model_call_capture.store import CaptureStore
store = CaptureStore(sys.argv[1])
n = tokens = 0
for rollout_id in store.rollout_ids():
    for r in read_model_call_records(store, rollout_id):
        n += 1
        tokens += r.tokens_in or 0
print(n, tokens)
"""

# The stats SQL's rows printed as `mcc stats --json` prints its own (its `rows`).
_DUCK_STATS = """
import json, sys, duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")  # stdout is the rows, nothing else
rows = con.execute(sys.argv[1]).fetchall()
names = [column[0] for column in con.description]
print(json.dumps([dict(zip(names, row)) for row in rows]))
"""
# `COPY`, on all threads or on one (beside `mcc export --jobs 1`: both sides on one core).
_DUCK_COPY = """
import sys, duckdb
con = duckdb.connect()
if sys.argv[1] != "all":
    con.execute("SET threads TO " + sys.argv[1])
con.execute(sys.argv[2])
"""
FAIR = "duckdb COPY TO parquet (the same 30 columns)"
"""The headline baseline of `mcc export`: `_duck.FAIR_COLUMNS`, every column but `OMITTED`."""
FAIR_1 = "duckdb COPY TO parquet, one thread (the same 30 columns)"
FAIR_PAYLOADS = "duckdb COPY TO parquet, payload columns (the same 34 columns)"
"""The baseline of `mcc export --payloads`: `_duck.FAIR_PAYLOADS_COLUMNS`."""
EXPORT_FLOOR = "export floor: read, msgspec a chunk's whole lines at once, UTF-8 check, derive"
EXPORT_FLOOR_1 = "export floor, --jobs 1 (one core)"
STATS = "mcc stats --json"
DUCK_STATS = "duckdb read_json: stats SQL (the same figures)"
"""The baseline of `mcc stats --json`: `_duck_stats.STATS_QUERY`."""
_SHORT_NOTE = "10 columns, Anthropic input tokens without cache"


@dataclass
class Measure:
    """One command's run."""

    what: str
    seconds: float
    peak_rss: int
    """Bytes (`ru_maxrss` of the largest process of the tree)."""
    cpu: float
    """CPU seconds (user + system) of the command's whole tree: the processes it waited for,
    and those it left to end after it (`_reap_orphans`)."""
    output_bytes: int
    ok: bool
    error: str = ""
    note: str = ""
    stdout: bytes = b""
    """What the command printed (the stats are compared on it)."""


def _run(what: str, argv: list[str], out: Path | None) -> Measure:
    """Run `argv` as a child of GNU time, which reports the child's own peak RSS.

    Not `wait4` of `time` from here: on Linux a child's `ru_maxrss` also counts the pages
    of this (much bigger) process that it was forked from before its `exec`; `time` is
    tiny. A process the command started but did not wait for (the fork server of
    `map_files`, whose children are the workers) is orphaned when the command exits: this
    process is the subreaper that waits for it (`_reap_orphans`), and adds its CPU
    seconds and peak RSS, which `time` never sees.
    """
    started = time.perf_counter()
    with (
        tempfile.TemporaryFile() as stdout,
        tempfile.TemporaryFile() as stderr,
        tempfile.NamedTemporaryFile("r") as rss,
    ):
        code = subprocess.call(
            ["/usr/bin/time", "-f", "%M %U %S", "-o", rss.name, *argv],
            stdout=stdout,
            stderr=stderr,
        )
        seconds = time.perf_counter() - started
        stdout.seek(0)
        stderr.seek(0)
        printed = stdout.read()
        error = stderr.read().decode(errors="replace").strip().splitlines()
        peak_kib, user, system = rss.read().split()[-3:]
    orphans_cpu, orphans_peak = _reap_orphans()
    size = out.stat().st_size if out is not None and out.exists() else len(printed)
    # `mcc validate` exits 1 on invalid lines; the generated failures are valid lines.
    ok = code == 0
    cpu = float(user) + float(system) + orphans_cpu
    peak = max(int(peak_kib) * 1024, orphans_peak)
    error_line = "" if ok else (error or ["?"])[-1]
    return Measure(what, seconds, peak, cpu, size, ok, error_line, stdout=printed)


def _become_subreaper() -> None:
    """Have the orphans of the commands' trees re-parented here (Linux `PR_SET_CHILD_SUBREAPER`)."""
    if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def _reap_orphans(deadline: float = 60.0) -> tuple[float, int]:
    """Wait for the orphans of the last command; their CPU seconds and largest peak RSS.

    `wait4` gives each orphan's own usage plus that of the children it waited for.
    """
    cpu, peak = 0.0, 0
    end = time.monotonic() + deadline
    while True:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:  # none left
            return cpu, peak
        if pid == 0:
            if time.monotonic() > end:
                raise RuntimeError("an orphan of the last command is still running")
            time.sleep(0.01)
            continue
        cpu += usage.ru_utime + usage.ru_stime
        peak = max(peak, usage.ru_maxrss * 1024)


def _commands(root: Path, work: Path) -> list[tuple[str, list[str], Path | None]]:
    python = sys.executable
    mcc = [python, "-m", "model_call_capture.cli"]

    def copy(threads: str, query: str, source: str, out: str) -> list[str]:
        return [python, "-c", _DUCK_COPY, threads, copy_sql(query, source, root, work / out)]

    def floor(jobs: str, function: str = "floor_file") -> list[str]:
        here = str(Path(__file__).resolve().parents[1])
        return [python, "-c", _FLOOR, str(root), jobs, here, function]

    stats = query_sql(STATS_QUERY, STATS_SOURCE, root)
    return [
        (STATS, [*mcc, "stats", str(root), "--json"], None),
        (DUCK_STATS, [python, "-c", _DUCK_STATS, stats], None),
        (
            "mcc export (parquet)",
            [*mcc, "export", str(root), "--out", str(work / "mcc.parquet")],
            work / "mcc.parquet",
        ),
        (FAIR, copy("all", FAIR_COLUMNS, FAIR_SOURCE, "duck.parquet"), work / "duck.parquet"),
        (
            f"duckdb COPY TO parquet' ({_SHORT_NOTE})",
            copy("all", SHORT_QUERY, SHORT_SOURCE, "duck-short.parquet"),
            work / "duck-short.parquet",
        ),
        (
            "mcc export --jobs 1 (one core)",
            [*mcc, "export", str(root), "--jobs", "1", "--out", str(work / "mcc-1.parquet")],
            work / "mcc-1.parquet",
        ),
        (FAIR_1, copy("1", FAIR_COLUMNS, FAIR_SOURCE, "duck-1.parquet"), work / "duck-1.parquet"),
        (
            f"duckdb COPY TO parquet, one thread' ({_SHORT_NOTE})",
            copy("1", SHORT_QUERY, SHORT_SOURCE, "duck-short-1.parquet"),
            work / "duck-short-1.parquet",
        ),
        ("msgspec floor: read, cut, decode into an empty Struct", floor("default"), None),
        ("msgspec floor, --jobs 1 (one core)", floor("1"), None),
        (EXPORT_FLOOR, floor("default", "export_floor_file"), None),
        (EXPORT_FLOOR_1, floor("1", "export_floor_file"), None),
        ("mcc validate", [*mcc, "validate", str(root)], None),
        ("read_model_call_records, all rollouts", [python, "-c", _READ, str(root)], None),
        # Last: DuckDB's COPY with payloads takes about 10 GB, which pushes the files out of
        # the page cache, and the commands after it read them from the disk.
        (
            "mcc export --payloads",
            [*mcc, "export", str(root), "--payloads", "--out", str(work / "mcc-p.parquet")],
            work / "mcc-p.parquet",
        ),
        (
            FAIR_PAYLOADS,
            copy("all", FAIR_PAYLOADS_COLUMNS, FAIR_PAYLOADS_SOURCE, "duck-p.parquet"),
            work / "duck-p.parquet",
        ),
    ]


# The fair rows, and the export whose values each must equal.
_SAME_DATA = (
    (FAIR, "duck.parquet", "mcc export", "mcc.parquet"),
    (FAIR_1, "duck-1.parquet", "mcc export --jobs 1", "mcc-1.parquet"),
    (FAIR_PAYLOADS, "duck-p.parquet", "mcc export --payloads", "mcc-p.parquet"),
)


def _check_same_data(measures: list[Measure], work: Path) -> str:
    """Note on each fair row whether DuckDB wrote `mcc export`'s values; the counts, as text."""
    out = []
    for m in measures:
        for name, duck, command, ours in _SAME_DATA:
            if m.what != name or not m.ok or not (work / ours).exists():
                continue
            counts = mismatches(work / duck, work / ours)
            wrong = {column: n for column, n in counts.items() if n}
            compared = len(counts) - 2
            payloads = (
                "; payloads as digests: md5 of the parsed JSON, of the raw text"
                if any(column in counts for column in PAYLOAD_COLUMNS)
                else ""
            )
            if wrong:
                m.note = f"MISMATCH with {command}: " + ", ".join(
                    f"{column} {n:,}" for column, n in wrong.items()
                )
            else:
                m.note = f"same values as {command} in all {compared + 1} columns"
            out.append(
                f"- {name} against `{command}`, joined on model_call_id, values that differ "
                f"per column (JSON compared parsed{payloads}, floats within 1e-9): "
                + ", ".join(f"{column} {n}" for column, n in counts.items())
                + f"; not written by DuckDB: {', '.join(OMITTED)}."
            )
    return "\n".join(out)


def _check_same_stats(measures: list[Measure]) -> str:
    """Note on the stats SQL's row whether it printed `mcc stats --json`'s figures; the counts."""
    by_name = {m.what: m for m in measures if m.ok}
    duck, ours = by_name.get(DUCK_STATS), by_name.get(STATS)
    if duck is None or ours is None:
        return ""
    try:
        rows = json.loads(ours.stdout)["rows"]
        counts = differences(json.loads(duck.stdout), rows)
    except (ValueError, KeyError, TypeError) as exc:  # a run's figures are not lost to a check
        duck.note = f"NOT COMPARED with mcc stats: {type(exc).__name__}: {exc}"
        return f"- {DUCK_STATS}: not compared with `mcc stats --json` ({exc})."
    wrong = {name: n for name, n in counts.items() if n}
    groups = len(rows)
    if wrong:
        duck.note = "MISMATCH with mcc stats: " + ", ".join(f"{k} {n:,}" for k, n in wrong.items())
    else:
        duck.note = f"same figures as mcc stats --json in all {groups} groups"
    return (
        f"- {DUCK_STATS} against `mcc stats --json`, groups of (model, dialect) whose figure "
        "differs, per field (compared exactly): "
        + ", ".join(f"{name} {n}" for name, n in counts.items())
        + "."
    )


def _table(measures: list[Measure], lines: int) -> str:
    out = [
        "| command | seconds | lines/s | CPU s | peak RSS | output | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in measures:
        if not m.ok:
            out.append(f"| {m.what} | failed | - | - | {_mb(m.peak_rss)} | - | {m.error[:120]} |")
            continue
        out.append(
            f"| {m.what} | {m.seconds:.1f} | {lines / m.seconds:,.0f} | {m.cpu:.1f} "
            f"| {_mb(m.peak_rss)} | {_mb(m.output_bytes)} | {m.note} |"
        )
    return "\n".join(out)


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n / 1e3:,.1f} KB"


def run(rollouts: int, *, base: Path, keep: bool = False) -> str:
    """Generate `rollouts` under `base`, measure every command, return the report."""
    root = base / "model-calls"
    work = base / "out"
    work.mkdir(parents=True, exist_ok=True)
    print(f"generating {rollouts} rollouts in {root} ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    made = generate(root, rollouts)
    generated = time.perf_counter() - started
    measures: list[Measure] = []
    _become_subreaper()
    try:
        for what, argv, out in _commands(root, work):
            print(f"running {what} ...", file=sys.stderr, flush=True)
            measures.append(_run(what, argv, out))
        same = _check_same_stats(measures) + "\n" + _check_same_data(measures, work)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(work, ignore_errors=True)
    head = (
        f"{made.rollouts} rollouts, {made.lines:,} lines, {made.bytes / 1e6:,.0f} MB "
        f"(mean line {made.bytes / max(made.lines, 1) / 1e3:.0f} KB; generated in {generated:.0f} s)"
    )
    table = _table(measures, made.lines)
    return head + "\n\n" + table + "\n\n" + same + "\n" + _floor_verdict(measures)


_FLOOR_PAIRS = (
    (
        "msgspec floor: read, cut, decode into an empty Struct",
        FAIR,
        "both cores",
    ),
    ("msgspec floor, --jobs 1 (one core)", FAIR_1, "one core"),
    (EXPORT_FLOOR, FAIR, "both cores"),
    (EXPORT_FLOOR_1, FAIR_1, "one core"),
)


def _floor_verdict(measures: list[Measure], cores: int | None = None) -> str:
    """The floor against DuckDB's `COPY`: can a msgspec-based export reach 2x?

    Two bounds. The wall: the floor runs on the export's own split of the files, so
    an export that does all the floor does and more takes longer in practice. The CPU,
    which holds for any schedule: an export 2x DuckDB's speed on `cores` cores has at
    most `cores` x half DuckDB's wall in CPU seconds, and the floor's CPU is part of it.
    """
    cores = cores or os.cpu_count() or 1
    by_name = {m.what: m for m in measures if m.ok}
    out = []
    for floor_name, duck_name, kind in _FLOOR_PAIRS:
        floor, duck = by_name.get(floor_name), by_name.get(duck_name)
        if floor is None or duck is None:
            continue
        n = cores if kind == "both cores" else 1
        wall, cpu = floor.seconds / duck.seconds, floor.cpu / duck.cpu
        budget = n * duck.seconds / 2  # CPU seconds of n cores in half DuckDB's wall
        floor_kind = "export floor" if floor_name.startswith("export") else "msgspec floor"
        if min(wall, cpu) > 0.5:
            verdict = "the floor alone rules 2x out for any msgspec-based export" + (
                " with these verdicts and values" if floor_kind == "export floor" else ""
            )
        else:
            verdict = (
                "the floor does not rule 2x out: it leaves everything else of an export "
                f"{duck.seconds / 2 - floor.seconds:.1f} s wall / "
                f"{duck.cpu / 2 - floor.cpu:.1f} CPU s"
            )
        out.append(
            f"- {kind}: the {floor_kind} takes {floor.seconds:.1f} s wall / {floor.cpu:.1f} "
            f"CPU s, DuckDB's COPY {duck.seconds:.1f} s / {duck.cpu:.1f} s: {wall:.2f}x / "
            f"{cpu:.2f}x of it (2x DuckDB needs <= 0.50x): {verdict}. CPU, on any schedule: "
            f"2x allows {budget:.1f} CPU s ({n} x half DuckDB's wall), the floor uses "
            f"{floor.cpu / budget:.0%} of it, leaving {budget - floor.cpu:.1f} CPU s for "
            "everything else."
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Parse the `scale` arguments, run, print the table."""
    from ._common import machine

    parser = argparse.ArgumentParser(prog="python -m benchmarks scale", description=__doc__)
    parser.add_argument("--rollouts", type=int, default=200, help="rollouts to generate")
    parser.add_argument("--quick", action="store_true", help="6 rollouts (CI smoke run)")
    parser.add_argument(
        "--dir",
        default=os.environ.get("MCC_BENCH_DIR") or tempfile.gettempdir(),
        help="where to generate (deleted afterwards)",
    )
    args = parser.parse_args(argv)
    rollouts = 6 if args.quick else args.rollouts
    base = Path(tempfile.mkdtemp(prefix="mcc-scale-", dir=args.dir))
    try:
        report = run(rollouts, base=base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"machine: {machine()}")
    print(f"command: python -m benchmarks scale --rollouts {rollouts}\n")
    print(report)
    return 0
