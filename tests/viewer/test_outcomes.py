"""The collector's rollouts file joined to the rollouts table: rewards and fields, sorted and
filtered, every damaged line counted and named, memory bounded by one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_tools import traced_peak
from model_call_capture.store import CaptureStore
from model_call_capture.viewer import Query, RolloutIndex
from model_call_capture.viewer import _index as _index_module
from model_call_capture.viewer._outcomes import FIELDS_MAX, Outcomes

from .conftest import HOSTILE_FIELD, chat_line, rollout_row, write_hostile_rollouts


def _index(root: Path, **kwargs: Any) -> RolloutIndex:
    return RolloutIndex(CaptureStore(root, **kwargs), refresh_interval_s=0)


def _ids(index: RolloutIndex, **query: Any) -> list[str]:
    return [r.rollout_id for r in index.page(Query(**query)).rollouts]


def _demo_like(tmp_path: Path) -> Path:
    """`mcc demo`'s layout: DIR/model-calls/ and DIR/rollouts.jsonl beside it."""
    root = tmp_path / "model-calls"
    store = CaptureStore(root)
    for rollout_id in ("0-0", "1-0", "2-0", "10-0", "3-0"):
        store.append(rollout_id, chat_line())
    (tmp_path / "rollouts.jsonl").write_bytes(
        rollout_row(0, reward=0.5, task="run 10")
        + rollout_row(1, reward=1.0, task="run 2")
        + rollout_row(2, reward=-1, task="run 1")
        + rollout_row(10, reward=0.75, task=7)
    )  # 3-0 has no row
    return root


def test_rewards_and_fields_join_the_rollouts_they_name(tmp_path: Path) -> None:
    index = _index(_demo_like(tmp_path))
    page = index.page(Query())
    rows = {r.rollout_id: r for r in page.rollouts}
    assert [r.rollout_id for r in page.rollouts] == ["0-0", "1-0", "2-0", "3-0", "10-0"]
    assert {i: r.reward for i, r in rows.items()} == {
        "0-0": 0.5, "1-0": 1.0, "2-0": -1.0, "3-0": None, "10-0": 0.75,
    }  # fmt: skip
    assert rows["1-0"].fields == {"reward": 1.0, "task": "run 2"}  # no response, no stamps
    assert rows["3-0"].fields is None
    assert page.fields == ["reward", "task"]
    assert page.rollouts_file.path == str(tmp_path / "rollouts.jsonl")
    assert (page.rollouts_file.rows, page.rollouts_file.joined) == (4, 4)
    assert page.rollouts_file.problems == []


def test_sorted_by_reward_and_by_field_in_natural_order_unknown_last(tmp_path: Path) -> None:
    index = _index(_demo_like(tmp_path))
    assert _ids(index, sort="reward") == ["2-0", "0-0", "10-0", "1-0", "3-0"]
    assert _ids(index, sort="reward", descending=True) == ["1-0", "10-0", "0-0", "2-0", "3-0"]
    # Numbers first, then text with its digits compared as numbers: `run 2` before `run 10`.
    assert _ids(index, sort="field:task") == ["10-0", "2-0", "1-0", "0-0", "3-0"]
    assert _ids(index, sort="field:nothing") == ["0-0", "1-0", "2-0", "3-0", "10-0"]


def test_filtered_by_a_reward_range(tmp_path: Path) -> None:
    index = _index(_demo_like(tmp_path))
    assert _ids(index, reward_min=0.5) == ["0-0", "1-0", "10-0"]
    assert _ids(index, reward_min=0.5, reward_max=0.8) == ["0-0", "10-0"]
    assert _ids(index, reward_max=0) == ["2-0"]
    page = index.page(Query(reward_min=0.5))
    assert page.total == 3
    assert page.overview.totals.rewarded == 3 and page.overview.totals.mean_reward == 0.75


def test_a_hostile_rollouts_file_is_counted_named_and_never_held(tmp_path: Path) -> None:
    cap = 64 * 1024
    write_hostile_rollouts(tmp_path, cap)
    index = _index(tmp_path, max_line_bytes=cap)
    page = index.page(Query())
    rows = {r.rollout_id: r for r in page.rollouts}
    f = page.rollouts_file
    assert (f.rows, f.joined, f.damaged, f.duplicates, f.without_capture) == (11, 4, 5, 1, 1)
    assert f.rewards_not_numbers == 1
    problems = "\n".join(f.problems)
    assert [p.split(":")[0] for p in f.problems] == [
        "line 2", "line 3", "line 4", "line 5", "line 6", "line 7", "line 9",
    ]  # fmt: skip
    assert "line 2: JSON is malformed" in problems
    assert "line 3: Expected `object`, got `array`" in problems
    assert "line 4: names no rollout" in problems
    assert "line 5: invalid rollout id '../../etc/passwd'" in problems
    assert f"line 6: longer than {cap:,} bytes" in problems
    assert "line 7: reward 'high' is not a number" in problems
    assert "line 9: rollout 0-0 again (line 1): shown" in problems
    # The later row of 0-0 is shown; a non-number reward is text, never a number.
    assert rows["0-0"].reward == 0.25 and rows["0-0"].fields == {"reward": 0.25, "note": "again"}
    assert rows["1-0"].reward is None and rows["1-0"].fields == {"reward": "high"}
    note = rows["2-0"].fields and rows["2-0"].fields["note"]
    assert isinstance(note, str) and len(note) == 120 and note.endswith("…")
    assert note.startswith(HOSTILE_FIELD)  # data, as written (the browser test renders it)
    assert _ids(index, sort="reward") == ["0-0", "2-0", "10-0", "1-0"]  # "high" is unknown
    assert set(index.outcomes.by_id) == {
        "0-0",
        "1-0",
        "2-0",
        "10-0",
    }  # rows without captures: counted only


def test_fields_past_the_first_names_are_counted_not_kept(tmp_path: Path) -> None:
    CaptureStore(tmp_path).append("0-0", chat_line())
    many = {f"f{i}": i for i in range(FIELDS_MAX + 5)}
    long_name = "n" * 500
    (tmp_path / "rollouts.jsonl").write_bytes(rollout_row(0, **{long_name: 1}, reward=True, **many))
    page = _index(tmp_path).page(Query())
    assert len(page.fields) == FIELDS_MAX + 1 and page.fields[0] == "reward"
    assert page.fields[1] == "n" * 59 + "…"
    assert page.rollouts_file.fields_left_out == 6
    row = page.rollouts[0]
    assert row.reward is None and row.fields is not None and row.fields["reward"] is True


def test_the_file_is_read_on_as_it_grows_and_a_torn_line_waits(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("0-0", chat_line())
    path = tmp_path / "rollouts.jsonl"
    path.write_bytes(rollout_row(0, reward=1))
    outcomes = Outcomes(path)
    assert outcomes.refresh(["0-0", "1-0"])
    assert not outcomes.refresh(["0-0", "1-0"])  # unchanged: nothing read
    whole = rollout_row(1, reward=2)
    with open(path, "ab") as out:
        out.write(whole[:20])  # a collector mid-write
    outcomes.refresh(["0-0", "1-0"])
    assert outcomes.file.damaged == 0 and set(outcomes.by_id) == {"0-0"}
    with open(path, "ab") as out:
        out.write(whole[20:])
    outcomes.refresh(["0-0", "1-0"])
    assert outcomes.file.damaged == 0 and outcomes.by_id["1-0"].reward == 2
    assert (outcomes.by_id["1-0"].line, outcomes.file.rows) == (2, 2)


def test_a_row_joins_once_its_rollout_gets_captures(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("0-0", chat_line())
    (tmp_path / "rollouts.jsonl").write_bytes(rollout_row(0, reward=1) + rollout_row(1, reward=2))
    index = _index(tmp_path)
    page = index.page(Query())
    assert page.rollouts_file.without_capture == 1
    store.append("1-0", chat_line())
    rows = {r.rollout_id: r.reward for r in index.page(Query()).rollouts}
    assert rows == {"0-0": 1, "1-0": 2}


def test_reading_a_large_rollouts_file_holds_one_line(tmp_path: Path) -> None:
    """300 rows of 100 KB responses (30 MB) and a 16 MB line past the 1 MiB cap: the peak
    traced while the index reads them is a few read chunks (1 MiB), not the file or that line."""
    store = CaptureStore(tmp_path, max_line_bytes=1 << 20)
    big = {"output": "z" * 100_000}
    with open(tmp_path / "rollouts.jsonl", "wb") as out:
        for i in range(300):
            store.append(f"{i}-0", chat_line())
            row = {"response": big, "reward": i / 300, "_ng_task_index": i, "_ng_rollout_index": 0}
            out.write(json.dumps(row).encode() + b"\n")
        out.write(rollout_row(7, blob="b" * (16 << 20)))
    size = (tmp_path / "rollouts.jsonl").stat().st_size
    index = RolloutIndex(store, refresh_interval_s=0)
    _, peak = traced_peak(lambda: index.refresh(force=True))
    file = index.rollouts_file()
    assert (file.joined, file.damaged) == (300, 1)
    assert size > 46_000_000 and peak < 8_000_000, peak


def test_a_page_leaves_a_large_rollouts_file_to_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _demo_like(tmp_path)
    monkeypatch.setattr(_index_module, "_PAGE_READ_BYTES", 100)  # the file is larger
    index = _index(root)
    page = index.page(Query())
    assert [r.reward for r in page.rollouts] == [None] * 5
    assert page.rollouts_file.note is not None and "being read" in page.rollouts_file.note
    index.run_once()  # the background thread's listing reads it whole
    page = index.page(Query())
    assert page.rollouts_file.note is None and page.rollouts_file.joined == 4
    assert [r.reward for r in page.rollouts] == [0.5, 1.0, -1.0, None, 0.75]
