"""The rollouts index: summaries by hand-counted figures, read incrementally as files grow."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from model_call_capture.store import CaptureStore, _reading
from model_call_capture.viewer import Entries, Query, RolloutIndex
from model_call_capture.viewer._entries import DamagedLine

from .conftest import chat_line


def _index(root: Path) -> RolloutIndex:
    return RolloutIndex(CaptureStore(root), refresh_interval_s=0)


def test_a_summary_sums_the_readable_calls(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", chat_line(model="a", tokens=(10, 5), started_at=100.0))
    store.append(
        "r", chat_line(model="b", tokens=(7, 1), started_at=50.0, error_category="rate_limit")
    )
    with open(store.path("r"), "ab") as f:
        f.write(b"{not json\n")
    store.mark_incomplete("r")
    summary = _index(tmp_path).summary("r")
    assert summary is not None
    assert (summary.calls, summary.errors, summary.damaged, summary.gaps) == (2, 1, 1, 2)
    assert (summary.tokens_in, summary.tokens_out, summary.latency_ms) == (17, 6, 1000.0)
    assert summary.models == ["a", "b"] and summary.dialects == ["chat"]
    assert summary.error_categories == ["rate_limit"]
    assert (summary.first_call, summary.last_call) == (50.0, 100.5)
    assert summary.incomplete and summary.indexed


def test_gaps_count_damaged_lines_line_gaps_and_the_marker(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    line = json.loads(chat_line())
    line["gaps"] = [{"code": "raw_text_cut"}, {"code": "memory_budget"}]
    store.append("r", json.dumps(line).encode())
    with open(store.path("r"), "ab") as f:
        f.write(b"{\n")
    summary = _index(tmp_path).summary("r")
    assert summary is not None
    assert (summary.damaged, summary.capture_gaps, summary.gaps) == (1, 2, 3)
    store.mark_incomplete("r")
    summary = _index(tmp_path).summary("r")
    assert summary is not None and summary.gaps == 4


def test_a_grown_file_is_read_from_where_the_last_read_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", chat_line(tokens=(1, 1)))
    index = RolloutIndex(store, refresh_interval_s=0)
    starts: list[int] = []
    lines = _reading.read_file_lines

    def spy(path: Path, *, start: int = 0, **options: Any) -> Any:  # where each read starts
        starts.append(start)
        return lines(path, start=start, **options)

    monkeypatch.setattr(_reading, "read_file_lines", spy)
    assert index.summary("r").calls == 1  # type: ignore[union-attr]
    size = os.path.getsize(store.path("r"))
    store.append("r", chat_line(tokens=(2, 2)))
    with open(store.path("r"), "ab") as f:
        f.write(b'{"torn": ')  # a line torn by a crash: no newline
    summary = index.summary("r")
    assert summary is not None and (summary.calls, summary.tokens_in, summary.damaged) == (2, 3, 1)
    store.append("r", chat_line(tokens=(4, 4)))  # the store ends the torn line first
    summary = index.summary("r")
    assert summary is not None and (summary.calls, summary.tokens_in, summary.damaged) == (3, 7, 1)
    assert starts[:2] == [0, size] and starts[2] > size
    assert index.summary("r") == summary and len(starts) == 3  # unchanged: not read again


def test_a_replaced_file_is_read_again_whole(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for _ in range(3):
        store.append("r", chat_line())
    index = _index(tmp_path)
    assert index.summary("r").calls == 3  # type: ignore[union-attr]
    store.clear("r")
    store.append("r", chat_line(tokens=(99, 1)))
    summary = index.summary("r")
    assert summary is not None and (summary.calls, summary.tokens_in) == (1, 99)
    store.clear("r")
    assert index.summary("r") is None


def test_entries_put_damaged_lines_where_they_are(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", chat_line())
    with open(store.path("r"), "ab") as f:
        f.write(b"[1, 2]\n\n" + b"x" * 3000 + b"\n")
    store.append("r", chat_line())
    with open(store.path("r"), "ab") as f:
        f.write(b'{"status_code": "200"}\n')
    items = list(Entries(store.rollout("r"), max_line_bytes=store.max_line_bytes))
    kinds = [
        ("damaged", i.line) if isinstance(i, DamagedLine) else ("call", i.record.call_index)
        for i in items
    ]
    # Calls keep their call_index; damaged lines are named by their line in the file, as
    # editors and `mcc validate` number them (the blank third line counted).
    assert kinds == [("call", 0), ("damaged", 2), ("damaged", 4), ("call", 3), ("damaged", 6)]
    reasons = [i.reason for i in items if isinstance(i, DamagedLine)]
    assert reasons[0].startswith("Expected `object`, got `array`")
    assert "`$.status_code`" in reasons[2]
    small = CaptureStore(tmp_path, max_line_bytes=2000)
    assert [
        i.reason
        for i in Entries(small.rollout("r"), max_line_bytes=small.max_line_bytes)
        if isinstance(i, DamagedLine)
    ][1] == ("longer than the longest line this reader keeps")


def _ids(index: RolloutIndex, **query: Any) -> list[str]:
    return [r.rollout_id for r in index.page(Query(**query)).rollouts]


def test_pages_filter_sort_and_paginate(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("a", chat_line(model="m1", tokens=(30, 1)))
    store.append("b", chat_line(model="m2", tokens=(10, 1), error_category="timeout"))
    store.append("c", chat_line(model="m1", tokens=(20, 1)))
    store.append("c", chat_line(model="m1", tokens=(20, 1)))
    index = _index(tmp_path)
    assert _ids(index) == ["a", "b", "c"]
    assert _ids(index, sort="tokens_in") == ["b", "a", "c"]
    assert _ids(index, sort="tokens_in", descending=True) == ["c", "a", "b"]
    assert _ids(index, sort="calls", descending=True) == ["c", "a", "b"]
    assert _ids(index, model="m1") == ["a", "c"]
    assert _ids(index, error="any") == ["b"]
    assert _ids(index, error="none") == ["a", "c"]
    assert _ids(index, error="timeout") == ["b"]
    assert _ids(index, search="M2") == ["b"]
    assert _ids(index, search="TIME") == ["b"]
    assert _ids(index, dialect="messages") == []
    page = index.page(Query(page=2, page_size=2))
    assert [r.rollout_id for r in page.rollouts] == ["c"]
    assert (page.total, page.rollouts_in_directory, page.page_size) == (3, 3, 2)
    assert (page.models, page.dialects, page.error_categories) == (
        ["m1", "m2"],
        ["chat"],
        ["timeout"],
    )


def test_rollouts_are_in_the_natural_order_of_their_ids(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    wanted = ["0-0", "1-0", "2-0", "10-0", "100-0"]
    for rollout_id in sorted(wanted):
        store.append(rollout_id, chat_line(tokens=(5, 1)))
    index = _index(tmp_path)
    assert _ids(index) == wanted
    assert _ids(index, descending=True) == wanted[::-1]
    assert _ids(index, sort="tokens_in") == wanted  # ties keep the natural order


def test_a_page_reads_only_its_own_rows(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for i in range(30):
        store.append(f"r{i:02d}", chat_line())
    index = _index(tmp_path)
    page = index.page(Query(page_size=5))
    assert [r.rollout_id for r in page.rollouts] == ["r00", "r01", "r02", "r03", "r04"]
    assert all(r.indexed and r.calls == 1 for r in page.rollouts)
    assert page.indexed == 5  # the other 25 are left to the background thread
    index.run_once()
    assert index.page(Query(page_size=5)).indexed == 30


def test_captured_names_are_capped(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for i in range(12):
        store.append("r", chat_line(model=f"{i}-" + "m" * 500))
    summary = _index(tmp_path).summary("r")
    assert summary is not None and len(summary.models) == 8
    assert {len(m) for m in summary.models} == {120} and summary.models[0].endswith("…")


def test_a_page_asked_for_during_a_listing_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CaptureStore(tmp_path)
    for i in range(3):
        store.append(f"r{i}", chat_line())
    index = RolloutIndex(store, refresh_interval_s=60)
    listing = index._list
    started = threading.Event()

    def slow_list() -> Any:  # a large directory: the listing takes a while
        started.set()
        time.sleep(0.3)
        return listing()

    monkeypatch.setattr(index, "_list", slow_list)
    background = threading.Thread(target=index.refresh, kwargs={"force": True})
    background.start()
    started.wait()
    assert [r.rollout_id for r in index.page(Query()).rollouts] == ["r0", "r1", "r2"]
    background.join()
