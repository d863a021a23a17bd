"""`model_call_capture.export`: the engine from Python, and the sink seam.

`export()` writes what `mcc export` writes, byte for byte; its errors are `ExportError`s
(never the command line's); a sink written against the seam gets every rollout in order,
reports the rollouts it skips, and is published atomically or not at all. Captures come
from a real `mcc demo` run (`demo_calls`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from model_call_capture.cli import main
from model_call_capture.errors import CaptureError, ExportError
from model_call_capture.export import (
    SINKS,
    ExportOptions,
    Output,
    Part,
    Sink,
    Skipped,
    export,
    one_group_each,
)
from model_call_capture.records import iter_rollout_records
from model_call_capture.store import CaptureStore, Rollout


def _mcc(*args: str, code: int = 0) -> None:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    assert (exited.value.code or 0) == code


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("calls.parquet", {}),
        ("calls.jsonl", {"payloads": True}),
        ("tokens.jsonl", {"tokens": True}),
        ("tokens.parquet", {"tokens": True}),
    ],
)
def test_export_from_python_writes_the_bytes_mcc_export_writes(
    demo_calls: Path, tmp_path: Path, name: str, options: dict[str, Any]
) -> None:
    by_cli, by_python = tmp_path / "cli" / name, tmp_path / "py" / name
    by_cli.parent.mkdir()
    by_python.parent.mkdir()
    flags = [f"--{key}" for key in options]
    _mcc("export", str(demo_calls), "--out", str(by_cli), "--jobs", "2", *flags)
    result = export(CaptureStore(demo_calls), by_python, jobs=2, **options)
    assert by_python.read_bytes() == by_cli.read_bytes()
    assert result.damaged == 0 and (result.rows > 0 or options.get("tokens"))
    assert result.unit == ("token trajectories" if options.get("tokens") else "calls")
    assert sorted(p.name for p in by_python.parent.iterdir()) == [name]  # no temporary left


def test_an_incremental_dataset_from_python_is_up_to_date_the_second_time(
    demo_calls: Path, tmp_path: Path
) -> None:
    first = export(str(demo_calls), tmp_path / "ds", partition_by=["model"], incremental=True)
    assert first.rows > 0 and not first.up_to_date
    again = export(demo_calls, tmp_path / "ds", partition_by=["model"], incremental=True)
    assert (again.rows, again.up_to_date) == (0, True)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"format": "jsonl", "partition_by": ["model"]}, "write Parquet datasets"),
        ({"tokens": True, "payloads": True}, "--tokens writes one file"),
        ({"format": "csv"}, "unknown export format 'csv': one of parquet, jsonl"),
        ({"partition_by": ["nope"]}, "no column 'nope'"),
    ],
)
def test_options_that_do_not_go_together_raise_export_errors(
    demo_calls: Path, tmp_path: Path, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ExportError, match=message) as refused:
        export(demo_calls, tmp_path / "out.parquet", **options)  # type: ignore[arg-type]
    assert isinstance(refused.value, CaptureError)
    assert list(tmp_path.iterdir()) == []


def test_the_engine_never_imports_the_command_line(demo_calls: Path, tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from model_call_capture.export import export\n"
        f"export({str(demo_calls)!r}, {str(tmp_path / 'c.jsonl')!r}, jobs=1)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
    assert (tmp_path / "c.jsonl").stat().st_size > 0


@dataclass(frozen=True, slots=True)
class _IdsSink:
    """A sink of the seam as a new format would write it: one line per rollout, some skipped."""

    skip: str
    fail: bool = False
    unit: str = "rollouts"
    preload: tuple[str, ...] = ()
    private: bool = False
    output: Output = "file"

    def groups(self, rollouts: Sequence[Rollout]) -> list[Sequence[Rollout]]:
        return one_group_each(rollouts)

    def part(self, rollouts: Sequence[Rollout]) -> Part:
        (rollout,) = rollouts
        if rollout.id == self.skip:
            return Part(b"", 0, skipped=(Skipped(rollout.id, "no calls the format can hold"),))
        calls = len(list(iter_rollout_records(rollout)))
        return Part(f"{rollout.id} {calls} {os.getpid()}\n".encode(), 1)

    def write(self, parts: Iterator[Part], out: Path | None) -> None:
        assert out is not None  # a file sink is given its file
        with out.open("wb") as f:
            for part in parts:
                f.write(part.data)
                if self.fail:
                    raise OSError("the format's writer failed")


def _with_sink(monkeypatch: pytest.MonkeyPatch, sink: Sink, name: str = "ids") -> None:
    def factory(options: ExportOptions) -> Sink:
        return sink

    monkeypatch.setitem(SINKS, name, factory)


def test_a_new_sink_gets_every_rollout_in_order_and_reports_the_ones_it_skips(
    demo_calls: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CaptureStore(demo_calls)
    ids = store.rollout_ids()
    _with_sink(monkeypatch, _IdsSink(skip=ids[1]))
    result = export(store, tmp_path / "ids.txt", format="ids", jobs=2)
    lines = (tmp_path / "ids.txt").read_text().splitlines()
    assert [line.split()[0] for line in lines] == [i for i in ids if i != ids[1]]
    assert str(os.getpid()) not in {line.split()[2] for line in lines}  # made in a worker
    counts = {i: len(list(iter_rollout_records(store.rollout(i)))) for i in ids}
    assert [int(line.split()[1]) for line in lines] == [counts[i] for i in ids if i != ids[1]]
    assert (result.rows, result.skipped, result.unit) == (len(ids) - 1, 1, "rollouts")
    assert result.skipped_reasons == [Skipped(ids[1], "no calls the format can hold")]


def test_a_sink_that_fails_leaves_the_previous_export_in_place(
    demo_calls: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "ids.txt"
    target.write_bytes(b"the last good export\n")
    _with_sink(monkeypatch, _IdsSink(skip="", fail=True))
    with pytest.raises(OSError, match="the format's writer failed"):
        export(demo_calls, target, format="ids", jobs=1)
    assert target.read_bytes() == b"the last good export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ids.txt"]


def test_the_command_prints_what_a_sink_skipped(
    demo_calls: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    skip = CaptureStore(demo_calls).rollout_ids()[0]
    _with_sink(monkeypatch, _IdsSink(skip=skip), "jsonl")  # what a .jsonl name selects
    # Exit status 2: the export is published, but not whole.
    _mcc("export", str(demo_calls), "--out", str(tmp_path / "x.jsonl"), code=2)
    captured = capsys.readouterr()
    assert f"skipped {skip}: no calls the format can hold" in captured.err


def test_atif_from_python_writes_what_the_command_writes(demo_calls: Path, tmp_path: Path) -> None:
    options = ["--agent-name", "a", "--agent-version", "1", "--session-id", "s"]
    _mcc(
        "export",
        str(demo_calls),
        "--format",
        "atif",
        "--out",
        str(tmp_path / "cli"),
        *options,
        code=2,
    )
    result = export(
        demo_calls,
        tmp_path / "py",
        format="atif",
        format_options={"agent_name": "a", "agent_version": "1", "session_id": "s"},
    )
    names = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert (
        names == sorted(p.name for p in (tmp_path / "py").iterdir()) and "manifest.jsonl" in names
    )
    for name in names:
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    assert result.rows == len(names) - 1 and result.skipped >= 1  # the demo's refused call
    with pytest.raises(ExportError, match="no option 'agent'"):
        export(demo_calls, tmp_path / "other", format="atif", format_options={"agent": "a"})
    with pytest.raises(ExportError, match="needs --endpoint"):
        export(demo_calls, format="otlp")


# -- what the user named is checked first; the line cap; calls without token ids ----------


_NO_PYARROW = "import sys; sys.modules['pyarrow'] = None\n"  # its import fails, as uninstalled


@pytest.mark.parametrize("missing", ["source", "out"])
def test_a_missing_directory_is_named_before_a_missing_pyarrow(
    demo_calls: Path, tmp_path: Path, missing: str
) -> None:
    source = tmp_path / "no-captures" if missing == "source" else demo_calls
    out = tmp_path / "no-dir" / "calls.parquet" if missing == "out" else tmp_path / "c.parquet"
    probe = _NO_PYARROW + (
        "from model_call_capture.export import export\n"
        f"try:\n    export({str(source)!r}, {str(out)!r}, jobs=1)\n"
        "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    named = source if missing == "source" else out.parent
    assert str(named) in done.stdout and "pyarrow" not in done.stdout, done.stdout
    assert "no such" in done.stdout


def _line_lengths(captures: Path) -> list[int]:
    # The oracle: every capture line's bytes, without its newline, by the standard library.
    return [
        len(line)
        for path in sorted(captures.glob("*.capture.jsonl"))
        for line in path.read_bytes().splitlines()
    ]


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("calls.jsonl", {}),
        ("calls.parquet", {}),
        ("tokens.jsonl", {"tokens": True}),
        ("tokens.parquet", {"tokens": True}),
        ("dataset", {"partition_by": ["model"]}),
    ],
)
def test_max_line_bytes_counts_longer_lines_as_damaged_in_every_row_format(
    demo_calls: Path, tmp_path: Path, name: str, options: dict[str, Any]
) -> None:
    lengths = sorted(_line_lengths(demo_calls))
    # A cap between two line lengths, a few bytes from each, so no newline is in doubt.
    middle = len(lengths) // 2
    pairs = zip(lengths[middle:], lengths[middle + 1 :], strict=False)
    cap = next((a + b) // 2 for a, b in pairs if b - a > 4)
    longer = sum(n > cap for n in lengths)
    assert 0 < longer < len(lengths)
    result = export(demo_calls, tmp_path / name, max_line_bytes=cap, jobs=2, **options)
    assert result.damaged == longer
    if not options:
        assert result.rows == len(lengths) - longer
    whole = export(demo_calls, tmp_path / f"whole-{name}", jobs=2, **options)
    assert whole.damaged == 0


def test_mcc_export_max_line_bytes_is_the_library_option(
    demo_calls: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _mcc("export", str(demo_calls), "--out", str(tmp_path / "c.jsonl"), "--max-line-bytes", "1")
    out, err = capsys.readouterr()
    lines = len(_line_lengths(demo_calls))
    assert out == f"wrote 0 calls to {tmp_path / 'c.jsonl'} (jsonl)\n"
    assert f"{lines} unreadable lines skipped" in err
    assert (tmp_path / "c.jsonl").read_bytes() == b""


def test_calls_without_token_ids_are_counted_as_left_out_of_trajectories(
    demo_calls: Path, tmp_path: Path
) -> None:
    # The plain demo's calls carry no token ids (no server returned them).
    result = export(demo_calls, tmp_path / "t.jsonl", tokens=True, jobs=2)
    assert (result.rows, result.calls_left_out) == (0, len(_line_lengths(demo_calls)))
