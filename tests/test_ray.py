"""`read_model_calls` on a real local Ray cluster: the same calls and sums as the records.

One Ray instance (2 CPUs, no dashboard, 127.0.0.1) serves the whole module and is shut
down at its end; the capture directory is a real `mcc demo` run. The read tasks run in
Ray worker processes, so these tests also prove the rows are decoded there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from model_call_capture.arrow import record_schema  # noqa: E402
from model_call_capture.contracts import ModelCallRecord  # noqa: E402
from model_call_capture.errors import RolloutSourceError  # noqa: E402
from model_call_capture.ray import (  # noqa: E402
    ModelCallDatasource,
    capture_rollouts,
    group_rollouts,
    read_model_calls,
)
from model_call_capture.records import read_model_call_records  # noqa: E402
from model_call_capture.store import CaptureStore, Rollout  # noqa: E402

_MCC = (sys.executable, "-m", "model_call_capture.cli")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A real Ray instance on this machine, shut down when the module is done."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        address="local",
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def demo_calls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The capture directory of a real `mcc demo` run with 6 rollouts."""
    root = tmp_path_factory.mktemp("demo")
    run = subprocess.run(
        [*_MCC, "demo", "--dir", str(root / "d"), "--rollouts", "6"],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert run.returncode == 0, run.stderr
    return root / "d" / "model-calls"


def _records(root: Path) -> dict[str, list[ModelCallRecord]]:
    store = CaptureStore(root)
    return {rid: read_model_call_records(store, rid) for rid in store.rollout_ids()}


def _sum(values: list[int | None]) -> int:
    return sum(v for v in values if v is not None)


def test_counts_and_token_sums_equal_the_records(cluster: None, demo_calls: Path) -> None:
    records = _records(demo_calls)
    flat = [r for rs in records.values() for r in rs]
    assert len(records) == 6 and len(flat) >= 36

    ds = read_model_calls(demo_calls, override_num_blocks=3)
    assert ds.count() == len(flat)
    for column in ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_total"):
        assert ds.sum(column) == _sum([getattr(r, column) for r in flat]), column
    per_rollout = {
        row["rollout_id"]: row["count()"] for row in ds.groupby("rollout_id").count().take_all()
    }
    assert per_rollout == {rid: len(rs) for rid, rs in records.items()}
    assert ds.schema().names == record_schema().names


def test_rows_are_the_records(cluster: None, demo_calls: Path) -> None:
    records = _records(demo_calls)
    rows = read_model_calls(demo_calls, payloads=True, override_num_blocks=4).take_all()
    # Ray delivers blocks as their tasks finish (unless `preserve_order` is set).
    rows.sort(key=lambda row: (row["rollout_id"], row["call_index"]))
    expected = [(rid, r) for rid in sorted(records) for r in records[rid]]
    assert [(row["rollout_id"], row["call_index"]) for row in rows] == [
        (rid, r.call_index) for rid, r in expected
    ]
    for row, (_, record) in zip(rows, expected, strict=True):
        assert row["model_call_id"] == record.model_call_id
        assert row["model"] == record.model and row["dialect"] == record.dialect
        assert row["latency_total_ms"] == record.latency_total_ms
        assert json.loads(row["request"]) == record.request
        assert json.loads(row["response"]) == record.response
        assert [c["name"] for c in row["tool_calls"]] == [c.name for c in record.tool_calls]


def test_read_tasks_are_planned_from_file_sizes(demo_calls: Path) -> None:
    """Planning needs no Ray instance and reads no line: only the files' names and sizes."""
    files = sorted(demo_calls.glob("*.capture.jsonl"))
    tasks = ModelCallDatasource(demo_calls).get_read_tasks(4)
    assert len(tasks) == 4
    planned = [f for t in tasks for f in t.metadata.input_files or ()]
    assert planned == [str(f) for f in files]
    assert sum(t.metadata.size_bytes or 0 for t in tasks) == sum(f.stat().st_size for f in files)
    assert all(t.metadata.num_rows is None for t in tasks)


def test_groups_are_consecutive_and_balanced_by_bytes() -> None:
    rollouts = [
        (Rollout(str(i), (Path(f"{i}.capture.jsonl"),)), size)
        for i, size in enumerate([90, 5, 5, 5, 5, 90])
    ]
    groups = group_rollouts(rollouts, 3)
    assert [[r.id for r, _ in g] for g in groups] == [["0"], ["1", "2", "3", "4"], ["5"]]
    assert [len(g) for g in group_rollouts(rollouts, 100)] == [1] * 6
    assert group_rollouts([], 4) == []


def test_a_directory_stands_for_its_rollouts_and_those_below_it(
    demo_calls: Path, tmp_path: Path
) -> None:
    below = tmp_path / "runs" / "a"
    below.mkdir(parents=True)
    (below / "7-0.capture.jsonl").write_bytes((demo_calls / "0-0.capture.jsonl").read_bytes())
    (tmp_path / "runs" / "b.capture.jsonl").write_bytes(b"")
    found = [(r.id, r.files) for r, _ in capture_rollouts(tmp_path / "runs")]
    assert found == [
        ("b", (tmp_path / "runs" / "b.capture.jsonl",)),
        ("7-0", (below / "7-0.capture.jsonl",)),
    ]
    store = CaptureStore(demo_calls)
    assert [r for r, _ in capture_rollouts(store)] == store.rollouts()


def test_a_missing_path_or_a_wrong_type_is_refused_on_the_driver(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such capture file or directory"):
        capture_rollouts([tmp_path / "nope"])
    with pytest.raises(RolloutSourceError, match="got a int"):
        capture_rollouts(7)  # type: ignore[arg-type]


def test_the_rows_of_both_layouts_are_the_rows_of_one_file(
    cluster: None, both_layouts: tuple[Path, Path]
) -> None:
    # The same calls written to one shared file per rollout, and dealt to a shared file and
    # two segments per rollout (tests/conftest.py): the same rows, each rollout's in order.
    one, split = both_layouts
    rows = [
        sorted(
            read_model_calls(d, payloads=True, override_num_blocks=3).take_all(),
            key=lambda row: (row["rollout_id"], row["call_index"]),
        )
        for d in (one, split)
    ]
    assert len(rows[0]) > 6 and rows[1] == rows[0]
