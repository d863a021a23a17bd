"""`mcc export` at scale: streamed, deterministic, incremental, atomic, private with payloads.

The export runs in-process through `main()` (the `mcc` entry point), or as a real
subprocess where its memory is measured or it is killed. Captures come from a real
`mcc demo` run and from `benchmarks.export_scale.generate_captures`.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from benchmarks.export_scale import generate_captures, peak_rss
from conftest import CompletionsRollout
from model_call_capture import _codec
from model_call_capture.arrow import (
    EXPORT_MANIFEST,
    PAYLOAD_COLUMNS,
    iter_trajectory_batches,
    open_export_dataset,
    record_schema,
    trajectory_schema,
)
from model_call_capture.cli import main
from model_call_capture.records import read_available_model_call_records
from model_call_capture.store import CaptureStore
from model_call_capture.trajectories import build_token_trajectories


def mcc(*args: str) -> int:
    """Run `mcc ARGS` in this process; its exit code."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    code = exited.value.code
    return code if isinstance(code, int) else 1


def _expected(root: Path, payloads: bool) -> list[dict[str, Any]]:
    """Every record of `root` as `read_available_model_call_records` gives it, in export order."""
    store = CaptureStore(root)
    rows = []
    for rollout_id in sorted(store.rollout_ids()):
        for record in read_available_model_call_records(store, rollout_id)[0]:
            row = {"rollout_id": rollout_id, **record.to_dict()}
            row.setdefault("derivation_problems", None)  # absent in the record, a null column
            for name in () if payloads else PAYLOAD_COLUMNS:
                row.pop(name, None)
            rows.append(row)
    return rows


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    """An exported row with its JSON text decoded (tool arguments, payloads)."""
    for call in row["tool_calls"]:
        call["arguments"] = json.loads(call["arguments"])
    for name in ("request", "response"):
        if row.get(name) is not None:
            row[name] = json.loads(row[name])
    return row


def _sorted_rows(table: pa.Table) -> list[dict[str, Any]]:
    rows = table.select(record_schema().names).to_pylist()
    return sorted(rows, key=lambda r: (r["rollout_id"], r["call_index"]))


@pytest.mark.parametrize("payloads", [False, True])
def test_parquet_export_equals_the_records_row_by_row_on_every_column(
    demo_calls: Path, tmp_path: Path, payloads: bool
) -> None:
    out = tmp_path / "calls.parquet"
    assert mcc("export", str(demo_calls), "--out", str(out), *["--payloads"] * payloads) == 0
    file = pq.ParquetFile(out)
    assert file.schema_arrow == record_schema(payloads)
    assert file.metadata.row_group(0).column(0).compression == "ZSTD"
    rows = [_decoded(r) for r in file.read().to_pylist()]
    expected = _expected(demo_calls, payloads)
    assert len(rows) > 20
    assert rows == expected


@pytest.mark.parametrize("payloads", [True, False])
@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_the_output_is_the_same_bytes_whatever_the_jobs(
    tmp_path: Path, fmt: str, payloads: bool
) -> None:
    # `--jobs 1` builds the tables in this process (no IPC), `--jobs 4` in workers.
    captures = tmp_path / "captures"
    generate_captures(captures, rollouts=40, calls=3, payload_bytes=2000)
    outs = [tmp_path / f"jobs{n}.{fmt}" for n in (1, 4)]
    for jobs, out in zip((1, 4), outs, strict=True):
        args = ["export", str(captures), "--out", str(out), "--jobs", str(jobs)]
        assert mcc(*args, *["--payloads"] * payloads, "--row-group-size", "7") == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
    if fmt == "parquet":
        file = pq.ParquetFile(outs[0])
        assert file.metadata.num_rows == 120
        assert [file.metadata.row_group(i).num_rows for i in range(3)] == [7, 7, 7]


def test_a_token_count_beyond_int64_is_null_and_reported_instead_of_failing(
    demo_calls: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    captures = tmp_path / "captures"
    captures.mkdir()
    lines = (demo_calls / "0-0.capture.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["response"]["usage"]["prompt_tokens"] = 2**70
    text = json.dumps(first) + "\n" + "\n".join(lines[1:]) + "\n"
    (captures / "huge.capture.jsonl").write_text(text)
    out = tmp_path / "calls.parquet"
    assert mcc("export", str(captures), "--out", str(out)) == 0
    table = pq.read_table(out)
    assert table.column("tokens_in").to_pylist()[0] is None
    assert table.num_rows == len(lines)
    assert "1 value beyond the export's types (int64) written as null" in capsys.readouterr().err


def test_an_export_with_payloads_is_as_private_as_the_captures(
    demo_calls: Path, tmp_path: Path
) -> None:
    for fmt in ("parquet", "jsonl"):
        private = tmp_path / f"private.{fmt}"
        public = tmp_path / f"public.{fmt}"
        assert mcc("export", str(demo_calls), "--out", str(private), "--payloads") == 0
        assert mcc("export", str(demo_calls), "--out", str(public)) == 0
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
        assert stat.S_IMODE(public.stat().st_mode) == 0o666 & ~_umask()
    dataset = tmp_path / "ds"
    assert mcc("export", str(demo_calls), "--out", str(dataset), "--payloads", "--incremental") == 0
    modes = {stat.S_IMODE(p.stat().st_mode) for p in dataset.rglob("*") if p.is_file()}
    assert modes == {0o600}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_partitioned_dataset_reads_back_with_the_one_schema(
    demo_calls: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ds"
    assert (
        mcc("export", str(demo_calls), "--out", str(out), "--partition-by", "model,status_code")
        == 0
    )
    assert any(p.name.startswith("model=") for p in out.iterdir())
    dataset = open_export_dataset(out)
    assert dataset.schema == record_schema()
    table = dataset.to_table()
    assert table.schema == record_schema()
    plain = ds.dataset(out, schema=record_schema(), partitioning="hive").to_table()
    assert _sorted_rows(plain) == _sorted_rows(table)
    expected = sorted(
        _expected(demo_calls, False), key=lambda r: (r["rollout_id"], r["call_index"])
    )
    assert [_decoded(r) for r in _sorted_rows(table)] == expected


def test_partitioning_by_an_unknown_or_nested_column_is_refused(
    demo_calls: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        mcc("export", str(demo_calls), "--out", str(tmp_path / "a"), "--partition-by", "nope") == 1
    )
    assert (
        mcc("export", str(demo_calls), "--out", str(tmp_path / "b"), "--partition-by", "model_ref")
        == 1
    )
    err = capsys.readouterr().err
    assert "no column 'nope'" in err and "'model_ref' is not a string, int or bool" in err


def _append_calls(captures: Path, rollout: str, template: Path, count: int) -> None:
    lines = template.read_bytes().splitlines(keepends=True)[:count]
    with (captures / f"{rollout}.capture.jsonl").open("ab") as f:
        f.writelines(lines)


@pytest.mark.parametrize("partition_by", ["", "model", "rollout_id"])
def test_an_incremental_export_after_new_calls_equals_a_full_export(
    tmp_path: Path, partition_by: str
) -> None:
    captures = tmp_path / "captures"
    generate_captures(captures, rollouts=12, calls=3, payload_bytes=1000)
    extra = ["--partition-by", partition_by] if partition_by else []
    inc = tmp_path / "inc"
    assert mcc("export", str(captures), "--out", str(inc), "--incremental", *extra) == 0
    untouched = {p: p.stat().st_mtime_ns for p in inc.rglob("*.parquet")}
    template = captures / "r000000.capture.jsonl"
    _append_calls(captures, "r000003", template, 2)  # grew
    _append_calls(captures, "new", template, 3)  # new
    (captures / "r000007.capture.jsonl").unlink()  # gone
    assert mcc("export", str(captures), "--out", str(inc), "--incremental", *extra) == 0
    full = tmp_path / "full"
    assert mcc("export", str(captures), "--out", str(full), *(extra or ["--incremental"])) == 0
    got = _sorted_rows(open_export_dataset(inc).to_table())
    assert got == _sorted_rows(open_export_dataset(full).to_table())
    assert len(got) == 12 * 3 + 2 + 3 - 3
    if partition_by == "rollout_id":  # only the files of changed rollouts were touched
        still = [p for p, t in untouched.items() if p.exists() and p.stat().st_mtime_ns == t]
        assert len(still) == 10
    assert mcc("export", str(captures), "--out", str(inc), "--incremental", *extra) == 0
    assert _sorted_rows(open_export_dataset(inc).to_table()) == got


def test_incremental_with_other_options_than_the_dataset_is_refused(
    demo_calls: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ds"
    assert mcc("export", str(demo_calls), "--out", str(out), "--incremental") == 0
    assert mcc("export", str(demo_calls), "--out", str(out), "--incremental", "--payloads") == 1
    assert "export it again without --incremental" in capsys.readouterr().err


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _kill_mid_write(args: list[str], temp_glob: tuple[Path, str]) -> None:
    """Start `mcc ARGS`, SIGKILL it once its temporary output exists."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "model_call_capture.cli", *args, "--jobs", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    where, pattern = temp_glob
    deadline = time.monotonic() + 120
    while not list(where.glob(pattern)) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the export finished before it could be killed"
    time.sleep(0.2)  # mid-write
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list(where.glob(pattern)), "the kill left no temporary file: nothing was tested"


@pytest.mark.parametrize("dataset", [False, True])
def test_a_killed_export_leaves_the_previous_one_readable_and_nothing_after_the_next(
    tmp_path: Path, dataset: bool
) -> None:
    captures = tmp_path / "captures"
    generate_captures(captures, rollouts=10, calls=2, payload_bytes=500)
    out = tmp_path / ("ds" if dataset else "calls.parquet")
    mode = ["--incremental"] if dataset else []
    assert mcc("export", str(captures), "--out", str(out), *mode) == 0
    before = _read_export(out, dataset)
    generate_captures(captures, rollouts=800, calls=10, payload_bytes=4000)
    stray = tmp_path / f".{out.name}.mcc-tmp-{_dead_pid()}"
    stray.write_bytes(b"left by a dead run")
    _kill_mid_write(
        ["export", str(captures), "--out", str(out), *mode],
        (out, ".mcc-tmp-*") if dataset else (tmp_path, f".{out.name}.mcc-tmp-*"),
    )
    assert _read_export(out, dataset) == before
    assert mcc("export", str(captures), "--out", str(out), *mode) == 0
    assert _read_export(out, dataset).num_rows == 8000
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    if dataset:
        leftovers += [p.name for p in out.rglob(".*")]
    assert leftovers == []


def _interrupt_mid_write(args: list[str], temp_glob: tuple[Path, str]) -> tuple[int, str]:
    """Start `mcc ARGS` in its own process group; Ctrl-C (SIGINT to the group) mid-write."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "model_call_capture.cli", *args, "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a terminal's Ctrl-C reaches the workers too
    )
    where, pattern = temp_glob
    deadline = time.monotonic() + 120
    while not list(where.glob(pattern)) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the export finished before it could be interrupted"
    time.sleep(0.2)  # mid-write
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


@pytest.mark.parametrize("mode", ["file", "dataset", "incremental"])
def test_an_interrupted_export_leaves_the_previous_one_and_nothing_else(
    tmp_path: Path, mode: str
) -> None:
    captures = tmp_path / "captures"
    generate_captures(captures, rollouts=10, calls=2, payload_bytes=500)
    dataset = mode != "file"
    out = tmp_path / ("ds" if dataset else "calls.parquet")
    options = {"file": [], "dataset": ["--partition-by", "model"], "incremental": ["--incremental"]}
    args = ["export", str(captures), "--out", str(out), "--payloads", *options[mode]]
    assert mcc(*args) == 0
    before = _read_export(out, dataset)
    generate_captures(captures, rollouts=800, calls=10, payload_bytes=4000)
    staging = (out, ".mcc-tmp-*") if mode == "incremental" else (tmp_path, f".{out.name}.mcc-tmp-*")
    code, err = _interrupt_mid_write(args, staging)
    assert (code, err.strip()) == (130, "mcc: interrupted")
    assert _read_export(out, dataset) == before
    # Nothing is left for a next run to clean: no hidden copy of the payloads stays behind.
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    if dataset:
        leftovers += [p.name for p in out.rglob(".*")]
    assert leftovers == []


@pytest.mark.skipif(not Path("/sys").is_dir(), reason="needs Linux's /sys, read only even for root")
@pytest.mark.parametrize("dataset", [False, True])
def test_an_export_where_it_cannot_write_names_out_in_one_line(
    demo_calls: Path, dataset: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    out = Path("/sys") / ("mcc-ds" if dataset else "mcc-calls.parquet")
    mode = ["--partition-by", "model"] if dataset else []
    assert mcc("export", str(demo_calls), "--out", str(out), *mode) == 1
    err = capsys.readouterr().err
    # Not the hidden temporary name the export writes first.
    assert err.startswith(f"mcc export: error: cannot write {out}: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("pid", ["\u00b2", "9" * 200, "99999999999999999999", "0"])
def test_names_that_look_like_a_stale_temporary_file_are_left_alone(
    demo_calls: Path, tmp_path: Path, pid: str
) -> None:
    # The cleanup of a dead run's temporary file read the pid after the tag with `isdigit`
    # and `int`: a name with a superscript or too many digits (planted, or a typo) made
    # every later export to that target fail with ValueError or OverflowError.
    out = tmp_path / "calls.parquet"
    planted = tmp_path / f".{out.name}.mcc-tmp-{pid}"
    planted.write_bytes(b"not ours")
    assert mcc("export", str(demo_calls), "--out", str(out)) == 0
    assert pq.read_table(out).num_rows > 0
    assert planted.read_bytes() == b"not ours"


def _read_export(out: Path, dataset: bool) -> pa.Table:
    return open_export_dataset(out).to_table() if dataset else pq.read_table(out)


def test_the_manifest_names_the_options_and_every_capture_file(
    demo_calls: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ds"
    assert mcc("export", str(demo_calls), "--out", str(out), "--partition-by", "dialect") == 0
    manifest = _codec.decode((out / EXPORT_MANIFEST).read_bytes())
    assert manifest["payloads"] is False and manifest["partition_by"] == ["dialect"]
    names = sorted(p.name for p in demo_calls.glob("*.capture.jsonl"))
    assert sorted(manifest["captures"]) == names
    size = (demo_calls / names[0]).stat().st_size
    assert manifest["captures"][names[0]][0] == size


@pytest.mark.parametrize("payloads", [False, True])
def test_peak_memory_does_not_grow_with_the_directory(tmp_path: Path, payloads: bool) -> None:
    """Peak RSS over a 1-rollout export stays far below the input's size.

    The directory (about 160 MiB of captures in 2,000 rollouts) is big enough that any
    export holding every call at once (as `mcc export` did before it streamed: more than
    1x the input without payloads, about 5x with them) exceeds the bound (1/2 and 3/4 of
    the input), while a streaming export holds one row group and a few rollouts.
    """
    small, big = tmp_path / "small", tmp_path / "big"
    generate_captures(small, rollouts=1, calls=10, payload_bytes=8000)
    size = generate_captures(big, rollouts=2000, calls=10, payload_bytes=8000)
    extra = ["--payloads"] * payloads
    base, _, code = peak_rss(
        ["export", str(small), "--out", str(tmp_path / "s.parquet"), "--jobs", "1", *extra]
    )
    assert code == 0
    peak, _, code = peak_rss(
        ["export", str(big), "--out", str(tmp_path / "b.parquet"), "--jobs", "1", *extra]
    )
    assert code == 0
    assert pq.ParquetFile(tmp_path / "b.parquet").metadata.num_rows == 20_000
    bound = size * 3 // 4 if payloads else size // 2
    assert peak - base < bound, f"{(peak - base) / 2**20:.0f} MiB over a 1-rollout export"


def test_a_dataset_never_replaces_a_directory_it_did_not_write(
    demo_calls: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert mcc("export", str(demo_calls), "--out", str(mine), "--partition-by", "model") == 1
    assert mcc("export", str(demo_calls), "--out", str(mine), "--incremental") == 1
    assert (mine / "notes.txt").read_text() == "keep me"
    assert "not an mcc export dataset" in capsys.readouterr().err


# --- --tokens: one row per token trajectory -------------------------------------------------


@pytest.fixture(scope="module")
def token_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `mcc demo --tokens` run (three rollouts), plus one capture without token ids."""
    root = tmp_path_factory.mktemp("token-demo")
    command = [sys.executable, "-m", "model_call_capture.cli", "demo", "--tokens"]
    run = subprocess.run(
        [*command, "--rollouts", "3", "--dir", str(root / "d")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr
    assert "token trajectories" in run.stdout
    captures = root / "d" / "model-calls"
    (captures / "plain.capture.jsonl").write_bytes(
        b'{"model_call_id":"p","dialect":"chat","request":{},"response":{"choices":[]}}\n'
    )
    return captures


def _expected_trajectories(captures: Path) -> list[dict[str, Any]]:
    store = CaptureStore(captures)
    rows: list[dict[str, Any]] = []
    for rollout_id in sorted(store.rollout_ids()):
        records = read_available_model_call_records(store, rollout_id)[0]
        for index, t in enumerate(build_token_trajectories(records, rollout_id=rollout_id)):
            rows.append(
                {
                    "rollout_id": rollout_id,
                    "trajectory_index": index,
                    "model_call_ids": t.model_call_ids,
                    "token_ids": t.token_ids,
                    "loss_mask": t.loss_mask,
                    "log_probs": t.log_probs,
                    "break_reasons": t.break_reasons,
                }
            )
    return rows


def test_export_tokens_reads_back_as_build_token_trajectories(
    token_demo: Path, tmp_path: Path
) -> None:
    expected = _expected_trajectories(token_demo)
    # three demo rollouts of five chained calls each; the plain capture gives none
    assert [(r["rollout_id"], len(r["model_call_ids"])) for r in expected] == [
        ("0-0", 5),
        ("1-0", 5),
        ("2-0", 5),
    ]
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"trajectories-{jobs}.parquet"
        assert mcc("export", str(token_demo), "--out", str(out), "--tokens", "--jobs", jobs) == 0
        table = pq.read_table(out)
        assert table.schema == trajectory_schema()
        # the demo's log-probs are multiples of 1/64: float32 holds them exactly
        assert table.to_pylist() == expected
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    paths = sorted(token_demo.glob("*.capture.jsonl"))
    batches = iter_trajectory_batches(paths, batch_size=2)
    streamed = pa.Table.from_batches(list(batches), schema=trajectory_schema())
    assert batches.rows == 3 and batches.damaged == 0
    assert streamed.to_pylist() == expected


def test_export_tokens_as_jsonl(token_demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "trajectories.jsonl"
    assert mcc("export", str(token_demo), "--out", str(out), "--tokens") == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == _expected_trajectories(token_demo)


@pytest.mark.parametrize("extra", [["--payloads"], ["--partition-by", "model"], ["--incremental"]])
def test_export_tokens_writes_one_file_without_payloads(
    token_demo: Path, tmp_path: Path, extra: list[str]
) -> None:
    out = tmp_path / "t.parquet"
    assert mcc("export", str(token_demo), "--out", str(out), "--tokens", *extra) == 1
    assert not out.exists()


_PANDAS_PROBE = """
import sys
from model_call_capture._parallel import map_files
from model_call_capture.export._parquet import worker_without_pandas

def probe(_):
    worker_without_pandas()
    import pyarrow as pa

    pa.array([1, 2])  # pyarrow's first conversion of Python values: where it imports pandas
    return "pandas" in sys.modules

if __name__ == "__main__":
    print(list(map_files(probe, [1, 2, 3], 2)), list(map_files(probe, [1], 1)))
    import pandas  # the caller's own pandas stays importable
"""


def test_the_workers_of_an_export_never_import_pandas_and_the_caller_still_can(
    tmp_path: Path,
) -> None:
    script = tmp_path / "probe.py"
    script.write_text(_PANDAS_PROBE)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    # Workers: no pandas; the caller's own process (one job runs in it): pyarrow's import.
    assert done.stdout.split("\n")[0] == "[False, False, False] [True]"


_COMMAND_PANDAS_PROBE = """
import sys
from model_call_capture.cli import main

try:
    main(["export", sys.argv[1], "--jobs", "1", "--out", sys.argv[2], *sys.argv[3:]])
except SystemExit as exc:
    assert not exc.code, exc.code
print("pandas" in sys.modules)
import pandas  # importable again once the command is done
print("pandas" in sys.modules)
"""


def test_the_export_command_never_imports_pandas_even_on_one_job(
    demo_calls: Path, tmp_path: Path
) -> None:
    for extra in ([], ["--partition-by", "model"]):
        out = tmp_path / ("calls" if extra else "calls.parquet")
        done = subprocess.run(
            [sys.executable, "-c", _COMMAND_PANDAS_PROBE, str(demo_calls), str(out), *extra],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-2:] == ["False", "True"], done.stdout
        assert pq.read_table(out).num_rows > 0


def test_export_covers_the_completions_dialect(
    completions_rollout: CompletionsRollout, tmp_path: Path
) -> None:
    rollout = completions_rollout
    calls, tokens = tmp_path / "calls.parquet", tmp_path / "tokens.parquet"
    assert mcc("export", str(rollout.directory), "--out", str(calls)) == 0
    rows = pq.read_table(calls).to_pylist()
    assert [
        (r["dialect"], r["prompt_token_ids"], r["generation_token_ids"], r["generation_log_probs"])
        for r in rows
    ] == [("completions", *seen) for seen in rollout.seen]  # log-probs: multiples of 1/64
    assert mcc("export", str(rollout.directory), "--out", str(tokens), "--tokens") == 0
    (row,) = pq.read_table(tokens).to_pylist()
    prompt, generated, _ = rollout.seen[-1]
    assert (row["rollout_id"], row["token_ids"]) == (rollout.rollout_id, prompt + generated)
    assert sum(row["loss_mask"]) == sum(len(seen[1]) for seen in rollout.seen)


def test_exports_list_rollouts_in_the_natural_order_of_their_ids(tmp_path: Path) -> None:
    from model_call_capture.export import export

    store = CaptureStore(tmp_path / "calls")
    wanted = ["0-0", "1-0", "2-0", "10-0", "100-0"]
    for rollout_id in sorted(wanted):  # 0-0, 1-0, 10-0, 100-0, 2-0
        store.append(rollout_id, b'{"model_call_id": "c", "request": null}')
    export(tmp_path / "calls", tmp_path / "out.jsonl", format="jsonl", jobs=1)
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [row["rollout_id"] for row in rows] == wanted
    export(tmp_path / "calls", tmp_path / "out.parquet", jobs=1)
    assert pq.read_table(tmp_path / "out.parquet").column("rollout_id").to_pylist() == wanted


def test_export_tokens_counts_the_calls_without_token_ids(
    token_demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fixture's plain capture holds one call without token ids; the demo's have them.
    assert mcc("export", str(token_demo), "--out", str(tmp_path / "t.jsonl"), "--tokens") == 0
    err = capsys.readouterr().err
    assert err == (
        "mcc export: note: 1 call without token ids (prompt_token_ids and generation_token_ids)"
        ' in no trajectory (docs/formats.md, "Token trajectories")\n'
    )
