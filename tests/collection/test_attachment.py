"""The rollout attachment and clearing stale captures."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

from model_call_capture import _codec
from model_call_capture.collection import (
    build_model_call_capture,
    clear_model_call_captures_for_rollouts,
    merge_model_call_capture_into_record,
)
from model_call_capture.errors import InvalidRolloutIdError
from model_call_capture.records import read_available_model_call_records
from model_call_capture.store import CaptureStore

from .conftest import capture_line

# Ours alone: the byte cap's flag and the token fields (issue 16; Gym 0.7.0's records have
# none; `derivation_problems` is absent when empty, as on every Gym reference call).
OUR_ONLY_CALL_FIELDS = {
    "capture_cut",
    "prompt_token_ids",
    "generation_token_ids",
    "generation_log_probs",
}
# Gym 0.7.0's execution fields, fields of our records too since schema 1.1.
SCHEMA_1_1_FIELDS = {
    "client_session_id",
    "upstream_attempted",
    "response_source",
    "upstream_status_code",
    "local_response_reason",
}


# -- the attachment, against NeMo Gym 0.7.0 ------------------------------------------------


def test_attachment_equals_gyms_on_every_field_both_define(gym_reference_dir: Path) -> None:
    compared = equal = 0
    mismatches: list[str] = []
    deliberate = 0
    for expected_path in sorted(gym_reference_dir.glob("*/*.expected.json")):
        rollout_id = expected_path.name[: -len(".expected.json")]
        name = f"{expected_path.parent.name}/{rollout_id}"
        expected = json.loads(expected_path.read_text())["attachment"]
        record = {"_ng_rollout_id": rollout_id, "response": {"id": "x"}, "reward": 1.0}
        before = dict(record)
        if "error" in expected:  # Gym refused the id: so do we
            with pytest.raises(InvalidRolloutIdError):
                merge_model_call_capture_into_record(record, [expected_path.parent])
            compared += 1
            equal += 1
            continue
        merged = merge_model_call_capture_into_record(record, [expected_path.parent])
        assert merged is record  # in place, as Gym
        assert {k: v for k, v in merged.items() if k != "ng_model_call_capture"} == before
        ours = merged["ng_model_call_capture"]
        assert set(ours) == set(expected), name
        for key in ("rollout_id", "gaps"):
            if key in expected:
                compared += 1
                equal += ours[key] == expected[key]
                if ours[key] != expected[key]:
                    mismatches.append(f"{name}: {key} {ours[key]!r} != {expected[key]!r}")
        for field in sorted(ours["metrics"].keys() & expected["metrics"].keys()):
            compared += 1
            if ours["metrics"][field] == expected["metrics"][field]:
                equal += 1
            else:
                mismatches.append(f"{name}: metrics.{field}")
        assert len(ours["calls"]) == len(expected["calls"]), name
        for mine, theirs in zip(ours["calls"], expected["calls"], strict=True):
            assert set(mine) - set(theirs) == OUR_ONLY_CALL_FIELDS, name
            assert set(theirs) - set(mine) == set(), name
            assert SCHEMA_1_1_FIELDS <= set(mine), name
            for field in sorted(mine.keys() & theirs.keys()):
                compared += 1
                if mine[field] == theirs[field]:
                    equal += 1
                elif (name, field) in DELIBERATE_ATTACHMENT_DIFFERENCES:
                    assert (mine[field], theirs[field]) == DELIBERATE_ATTACHMENT_DIFFERENCES[
                        (name, field)
                    ]
                    deliberate += 1
                else:
                    mismatches.append(
                        f"{name}: call {theirs['call_index']} {field} {mine[field]!r} != {theirs[field]!r}"
                    )
    print(
        f"\nattachment vs Gym: {compared} fields compared, {equal} equal, {deliberate} deliberately different"
    )
    assert mismatches == []
    assert deliberate == len(DELIBERATE_ATTACHMENT_DIFFERENCES)


# The same deliberate record difference as in test_records (docs/compatibility.md).
DELIBERATE_ATTACHMENT_DIFFERENCES = {
    ("matrix/chat-json-nan", "response_status"): (None, "completed"),
    ("matrix/messages-json-nan", "response_status"): (None, "completed"),
}


def test_the_attachment_spelled_out_with_every_gap(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("3-1", capture_line("a", tokens=5, error_category="timeout"))
    store.append("3-1", capture_line("b", tokens=None))
    with open(store.path("3-1"), "ab") as f:
        f.write(b"{torn")
    store.mark_incomplete("3-1")
    row: dict[str, Any] = {
        "_ng_task_index": 3,
        "_ng_rollout_index": 1,
        "reward": 0.5,
        "response": {"output": []},
    }
    merged = merge_model_call_capture_into_record(row, tmp_path)
    assert merged is row
    attachment = row.pop("ng_model_call_capture")
    assert row == {
        "_ng_task_index": 3,
        "_ng_rollout_index": 1,
        "reward": 0.5,
        "response": {"output": []},
    }
    assert attachment["rollout_id"] == "3-1"
    assert attachment["gaps"] == [
        {"code": "model_call_capture_records_unreadable", "detail": "count=1"},
        {"code": "model_call_capture_incomplete"},
    ]
    assert attachment["metrics"] == {
        "num_calls": 2,
        "tokens_in": 5,
        "tokens_out": 2,  # only call a reported usage
        "tokens_reasoning": None,
        "tokens_total": 7,
        "cached_tokens": None,
        "latency_total_ms": 20.0,
        "cache_creation_tokens": None,
        "error_categories": {"timeout": 1},
    }
    assert [c["model_call_id"] for c in attachment["calls"]] == ["a", "b"]
    assert all("request" not in c and "response" not in c for c in attachment["calls"])


def test_merge_changes_the_record_in_place_and_returns_it_as_gym_does(tmp_path: Path) -> None:
    CaptureStore(tmp_path).append("r", capture_line("a"))
    row: dict[str, object] = {"_ng_rollout_id": "r", "reward": 1.0}
    # Code written for Gym ignores the return value: the attachment must be in `row`.
    merge_model_call_capture_into_record(row, [tmp_path])
    assert list(row) == ["_ng_rollout_id", "reward", "ng_model_call_capture"]
    first = row["ng_model_call_capture"]
    assert isinstance(first, dict)
    assert [c["model_call_id"] for c in first["calls"]] == ["a"]
    # A second merge replaces the attachment (the same object comes back).
    CaptureStore(tmp_path).append("r", capture_line("b"))
    assert merge_model_call_capture_into_record(row, [tmp_path]) is row
    second = row["ng_model_call_capture"]
    assert isinstance(second, dict)
    assert [c["model_call_id"] for c in second["calls"]] == ["a", "b"]
    assert (row["_ng_rollout_id"], row["reward"]) == ("r", 1.0)


def test_a_refused_rollout_id_leaves_the_record_as_it_was(tmp_path: Path) -> None:
    row = {"_ng_rollout_id": "../x", "reward": 1.0}
    with pytest.raises(InvalidRolloutIdError):
        merge_model_call_capture_into_record(row, [tmp_path])
    assert row == {"_ng_rollout_id": "../x", "reward": 1.0}


def test_payloads_are_attached_only_when_asked(tmp_path: Path) -> None:
    CaptureStore(tmp_path).append("r", capture_line("a"))
    merged = merge_model_call_capture_into_record(
        {"_ng_rollout_id": "r"}, [tmp_path], include_payloads=True
    )
    call = merged["ng_model_call_capture"]["calls"][0]
    assert call["request"] == {"input": "hi"}
    assert call["response"]["id"] == "resp-a"
    assert (call["request_raw"], call["response_raw"]) == (None, None)


def test_no_records_gap_only_when_nothing_else_explains_it(tmp_path: Path) -> None:
    merged = merge_model_call_capture_into_record({"_ng_rollout_id": "none"}, [tmp_path])
    assert merged["ng_model_call_capture"]["gaps"] == [{"code": "model_call_capture_no_records"}]
    assert merged["ng_model_call_capture"]["calls"] == []
    assert merged["ng_model_call_capture"]["metrics"]["num_calls"] == 0


def test_unreadable_capture_is_a_gap_not_an_exception(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text('{"model_call_id":"secret"}\n')
    (tmp_path / "r.capture.jsonl").symlink_to(tmp_path / "elsewhere")
    attachment = merge_model_call_capture_into_record({"_ng_rollout_id": "r"}, [tmp_path])[
        "ng_model_call_capture"
    ]
    assert [g["code"] for g in attachment["gaps"]] == ["model_call_capture_unreadable"]
    assert "symlink" in attachment["gaps"][0]["detail"]
    assert attachment["calls"] == []

    (tmp_path / "f.capture.jsonl").write_text('{"format":"model-call-capture/2"}\n')
    gaps = merge_model_call_capture_into_record({"_ng_rollout_id": "f"}, [tmp_path])[
        "ng_model_call_capture"
    ]["gaps"]
    assert gaps[0]["code"] == "model_call_capture_unreadable"
    assert "newer than this reader" in gaps[0]["detail"]


def test_a_fifo_is_an_unreadable_gap_and_a_line_over_the_cap_a_damaged_one(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "p.capture.jsonl")  # no writer: a blocking open would hang the collector
    gaps = merge_model_call_capture_into_record({"_ng_rollout_id": "p"}, [tmp_path])[
        "ng_model_call_capture"
    ]["gaps"]
    assert [g["code"] for g in gaps] == ["model_call_capture_unreadable"]
    assert "not a regular file (a FIFO)" in gaps[0]["detail"]

    store = CaptureStore(tmp_path, max_line_bytes=64)
    (tmp_path / "q.capture.jsonl").write_bytes(
        b'{"model_call_id": "' + b"x" * 100 + b'"}\n{"request": null}\n'
    )
    records, damaged = read_available_model_call_records(store, "q")
    assert ([r.call_index for r in records], damaged) == ([1], 1)


def test_several_capture_dirs_are_read_in_order(tmp_path: Path) -> None:
    CaptureStore(tmp_path / "a").append("r", capture_line("first"))
    CaptureStore(tmp_path / "b").append("r", capture_line("second"))
    attachment = merge_model_call_capture_into_record(
        {"_ng_rollout_id": "r"}, [tmp_path / "a", tmp_path / "b"]
    )["ng_model_call_capture"]
    assert [c["model_call_id"] for c in attachment["calls"]] == ["first", "second"]
    assert attachment["metrics"]["num_calls"] == 2


@pytest.mark.parametrize("marked", ["a", "b"])
def test_an_incomplete_marker_in_any_of_several_capture_dirs_is_a_gap(
    tmp_path: Path, marked: str
) -> None:
    # A write that failed in one directory leaves the rollout incomplete whatever the
    # other directories hold: the marker of the first one must not be forgotten.
    for name in ("a", "b"):
        CaptureStore(tmp_path / name).append("r", capture_line(name))
    CaptureStore(tmp_path / marked).mark_incomplete("r")
    attachment = merge_model_call_capture_into_record(
        {"_ng_rollout_id": "r"}, [tmp_path / "a", tmp_path / "b"]
    )["ng_model_call_capture"]
    assert [c["model_call_id"] for c in attachment["calls"]] == ["a", "b"]
    assert attachment["gaps"] == [{"code": "model_call_capture_incomplete"}]


def test_an_unreadable_dir_does_not_hide_the_next_and_damage_adds_up(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "r.capture.jsonl").write_text('{"format":"model-call-capture/2"}\n')
    for name in ("b", "c"):
        CaptureStore(tmp_path / name).append("r", capture_line(name))
        with (tmp_path / name / "r.capture.jsonl").open("a") as f:
            f.write("not json\n")
    attachment = merge_model_call_capture_into_record(
        {"_ng_rollout_id": "r"}, [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    )["ng_model_call_capture"]
    assert [c["model_call_id"] for c in attachment["calls"]] == ["b", "c"]
    assert [(g["code"], g.get("detail")) for g in attachment["gaps"][1:]] == [
        ("model_call_capture_records_unreadable", "count=2")
    ]
    assert attachment["gaps"][0]["code"] == "model_call_capture_unreadable"


def test_typed_attachment_leaves_payloads_absent_by_default(tmp_path: Path) -> None:
    line = capture_line("a", request_raw="not json", response_raw="data: [DONE]\n\n")
    CaptureStore(tmp_path).append("r", line)
    (call,) = build_model_call_capture("r", tmp_path).calls
    payloads = (call.request, call.response, call.request_raw, call.response_raw)
    assert payloads == (msgspec.UNSET,) * 4
    assert b"request" not in _codec.encode_line(call)
    (full,) = build_model_call_capture("r", tmp_path, include_payloads=True).calls
    assert (full.request_raw, full.response_raw) == ("not json", "data: [DONE]\n\n")


def test_a_record_without_a_rollout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^the record names no rollout: it needs _ng_rollout_id"):
        merge_model_call_capture_into_record({"reward": 1}, tmp_path)
    with pytest.raises(InvalidRolloutIdError):
        merge_model_call_capture_into_record({"_ng_rollout_id": "../x"}, tmp_path)


def test_clear_removes_exactly_the_rows_attempt_ids(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for rollout_id in ("1-0", "1-0-a1", "1-1", "2-0"):
        store.append(rollout_id, capture_line("x"))
    store.mark_incomplete("1-0-a1")
    cleared = clear_model_call_captures_for_rollouts(
        [
            {"_ng_task_index": 1, "_ng_rollout_index": 0, "_ng_attempt_index": 1},
            {"_ng_task_index": 2, "_ng_rollout_index": 0},
            {"_ng_task_index": 2, "_ng_rollout_index": 0},
        ],
        [tmp_path],
    )
    assert cleared == ["1-0-a1", "2-0"]
    assert store.rollout_ids() == ["1-0", "1-1"]
