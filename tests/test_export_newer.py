"""`mcc export` and `export()` past a line of a newer format (issue 33 item 5).

As `mcc stats` and `mcc show` do: the rollout holding the line is exported up to it, the
line is named (file, line from 1) in `ExportResult.newer_lines` and in a warning on
stderr, every other rollout is exported whole, and the command exits 2. A format whose
row would be wrong for a rollout read in part (token trajectories, ATIF) skips the
rollout with the line as its reason. Real capture files, real worker processes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from model_call_capture.arrow import open_export_dataset
from model_call_capture.cli import main
from model_call_capture.export import export

SAMPLE = Path(__file__).parent / "data" / "schema-1.0" / "0-0.capture.jsonl"
NEWER = b'{"format":"model-call-capture/2","model_call_id":"x"}'


@pytest.fixture
def captures(tmp_path: Path) -> Path:
    """Rollouts `a` (a call, the newer line, a call), `b` and `c` (every sample call)."""
    good = SAMPLE.read_bytes().splitlines()
    root = tmp_path / "captures"
    root.mkdir()
    (root / "a.capture.jsonl").write_bytes(b"\n".join([good[0], NEWER, good[1], b""]))
    for name in ("b", "c"):
        (root / f"{name}.capture.jsonl").write_bytes(b"\n".join([*good, b""]))
    return root


def _named(captures: Path) -> str:
    return (
        f"capture line in {captures / 'a.capture.jsonl'}, line 2 has format "
        "'model-call-capture/2', newer than this reader"
    )


def _rows_by_rollout(out: Path) -> dict[str, int]:
    if out.suffix == ".jsonl":
        ids = [json.loads(line)["rollout_id"] for line in out.read_text().splitlines()]
    elif out.is_dir():
        ids = open_export_dataset(out).to_table(columns=["rollout_id"]).column(0).to_pylist()
    else:
        ids = pq.read_table(out, columns=["rollout_id"]).column(0).to_pylist()
    return {rollout_id: ids.count(rollout_id) for rollout_id in sorted(set(ids))}


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("name", ["calls.jsonl", "calls.parquet"])
def test_export_reads_the_rollout_up_to_the_line_and_the_others_whole(
    captures: Path, tmp_path: Path, name: str, jobs: int
) -> None:
    calls = len(SAMPLE.read_bytes().splitlines())
    result = export(captures, tmp_path / name, jobs=jobs)
    assert _rows_by_rollout(tmp_path / name) == {"a": 1, "b": calls, "c": calls}
    assert result.rows == 1 + 2 * calls
    assert result.newer == 1 and result.skipped == 0 and result.damaged == 0
    (line,) = result.newer_lines
    assert line.startswith(f"rollout a read up to {_named(captures)}"), line


@pytest.mark.parametrize("name", ["calls.jsonl", "calls.parquet"])
def test_mcc_export_warns_of_the_line_and_exits_2(
    captures: Path, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = len(SAMPLE.read_bytes().splitlines())
    with pytest.raises(SystemExit) as exited:
        main(["export", str(captures), "--out", str(tmp_path / name), "--jobs", "2"])
    out, err = capsys.readouterr()
    assert exited.value.code == 2, err
    assert out.startswith(f"wrote {1 + 2 * calls} calls to {tmp_path / name}"), out
    assert f"mcc export: warning: rollout a read up to {_named(captures)}" in " ".join(
        err.split()
    ), err
    assert _rows_by_rollout(tmp_path / name) == {"a": 1, "b": calls, "c": calls}


def test_an_incremental_export_reads_the_rollout_again_each_run(
    captures: Path, tmp_path: Path
) -> None:
    """Its files stay out of the manifest: each run (files unchanged) exports it again and
    names the line again, so the rollout is not left in part once a newer reader runs."""
    calls = len(SAMPLE.read_bytes().splitlines())
    out = tmp_path / "dataset"
    for rows in (1 + 2 * calls, 1):  # the first run: every rollout; then `a` alone
        result = export(captures, out, incremental=True, jobs=2)
        assert not result.up_to_date
        assert result.newer == 1 and result.rows == rows
        assert _rows_by_rollout(out) == {"a": 1, "b": calls, "c": calls}
    assert result.newer_lines[0].startswith(f"rollout a read up to {_named(captures)}")


@pytest.mark.parametrize(
    ("name", "options"),
    [("tokens.jsonl", {"tokens": True}), ("tokens.parquet", {"tokens": True}), ("atif", {})],
)
def test_a_format_without_room_for_part_of_a_rollout_skips_it_with_the_line(
    captures: Path, tmp_path: Path, name: str, options: dict[str, bool]
) -> None:
    fmt = {"format": "atif"} if name == "atif" else {}
    result = export(captures, tmp_path / name, jobs=2, **options, **fmt)  # type: ignore[arg-type]
    assert result.newer == 0 and result.skipped == 1
    (skipped,) = result.skipped_reasons
    assert skipped.rollout_id == "a" and skipped.reason.startswith(_named(captures))


def test_an_otlp_export_skips_the_rollout_and_leaves_it_unmarked(
    captures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spans of the other rollouts are sent (a real OTLP/HTTP receiver); the rollout is
    left unmarked in the incremental state, so every run names it again."""
    from otlp_tools import Receiver
    from servers import serve

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state-home"))
    calls = len(SAMPLE.read_bytes().splitlines())
    app = Receiver()
    with serve(app) as server:
        for sent in (2 * calls, 0):  # then `b` and `c` are sent, `a` still waits
            result = export(
                captures,
                format="otlp",
                incremental=True,
                format_options={"endpoint": server.url},
                jobs=2,
            )
            assert result.rows + result.calls_left_out == sent
            assert result.skipped == 1 and not result.up_to_date
            (skipped,) = result.skipped_reasons
            assert skipped.rollout_id == "a" and skipped.reason.startswith(_named(captures))
    assert len(app.span_ids) == len(set(app.span_ids)) > 0
