"""The Arrow export schema and the record batches: the records' own values, one fixed schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pytest

from model_call_capture import _codec
from model_call_capture.arrow import PAYLOAD_COLUMNS, iter_record_batches, record_schema
from model_call_capture.contracts import ModelCallRecord
from model_call_capture.errors import RolloutSourceError
from model_call_capture.records import read_available_model_call_records
from model_call_capture.store import CaptureStore


def _paths(root: Path) -> list[Path]:
    return sorted(root.glob("*.capture.jsonl"))


def _expected_row(rollout_id: str, record: ModelCallRecord, payloads: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"rollout_id": rollout_id, **record.to_dict()}
    row.setdefault("derivation_problems", None)  # absent in the record, a null column here
    for call in row["tool_calls"]:
        call["arguments"] = None if call["arguments"] is None else _codec.encode(call["arguments"])
    if not payloads:
        for name in PAYLOAD_COLUMNS:
            row.pop(name, None)
    return row


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    """A batch row with its JSON text decoded, comparable with `ModelCallRecord.to_dict()`."""
    for call in row["tool_calls"]:
        if call["arguments"] is not None:
            call["arguments"] = _codec.encode(json.loads(call["arguments"]))
    for name in ("request", "response"):
        if row.get(name) is not None:
            row[name] = json.loads(row[name])
    return row


def test_schema_columns_are_rollout_id_then_every_record_field_in_order() -> None:
    fields = list(ModelCallRecord.__struct_fields__)
    assert record_schema(True).names == ["rollout_id", *fields]
    assert record_schema(False).names == ["rollout_id"] + [
        f for f in fields if f not in PAYLOAD_COLUMNS
    ]
    assert record_schema().field("tokens_in").type == pa.int64()
    assert record_schema().field("started_at").type == pa.float64()
    assert record_schema(True).field("response").type == pa.large_string()
    assert record_schema() == record_schema(False)  # built the same way every time


@pytest.mark.parametrize("payloads", [False, True])
def test_batches_equal_the_records_row_by_row_on_every_column(
    demo_calls: Path, payloads: bool
) -> None:
    store = CaptureStore(demo_calls)
    expected = []
    for path in _paths(demo_calls):
        rollout_id = path.name.removesuffix(".capture.jsonl")
        records, _ = read_available_model_call_records(store, rollout_id)
        expected += [_expected_row(rollout_id, r, payloads) for r in records]
    batches = iter_record_batches(_paths(demo_calls), payloads=payloads, batch_size=7)
    rows = []
    for batch in batches:
        assert batch.schema == record_schema(payloads)
        assert batch.num_rows <= 7
        rows += [_decoded(r) for r in batch.to_pylist()]
    assert len(expected) > 20 and any(r["tool_calls"] for r in expected)
    assert rows == expected
    assert (batches.rows, batches.damaged, batches.out_of_range) == (len(rows), 0, 0)


def _write_line(root: Path, rollout_id: str, line: dict[str, Any]) -> Path:
    CaptureStore(root).append(rollout_id, msgspec.json.encode(line) + b"\n")
    return root / f"{rollout_id}.capture.jsonl"


def test_a_token_count_beyond_int64_becomes_null_and_is_counted(
    demo_calls: Path, tmp_path: Path
) -> None:
    chat = next(
        json.loads(line)
        for path in _paths(demo_calls)
        for line in path.read_text().splitlines()
        if json.loads(line).get("dialect") == "chat" and json.loads(line).get("response")
    )
    chat["response"]["usage"]["prompt_tokens"] = 2**70
    chat["response"]["usage"]["completion_tokens"] = 7
    path = _write_line(tmp_path, "huge", chat)
    assert (
        read_available_model_call_records(CaptureStore(tmp_path), "huge")[0][0].tokens_in == 2**70
    )
    batches = iter_record_batches([path])
    (row,) = pa.Table.from_batches(list(batches)).to_pylist()
    assert row["tokens_in"] is None and row["tokens_out"] == 7
    assert batches.out_of_range >= 1


def test_damaged_lines_are_skipped_and_counted(demo_calls: Path, tmp_path: Path) -> None:
    path = tmp_path / "r.capture.jsonl"
    good = _paths(demo_calls)[0].read_bytes()
    path.write_bytes(b"{not json\n" + good)
    batches = iter_record_batches([path])
    table = pa.Table.from_batches(list(batches), schema=record_schema())
    assert table.column("call_index").to_pylist()[0] == 1  # the damaged line keeps its place
    assert batches.damaged == 1


def test_a_file_that_is_not_a_capture_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_bytes(b"{}\n")
    with pytest.raises(ValueError, match="not a capture file"):
        list(iter_record_batches([tmp_path / "x.jsonl"]))
    with pytest.raises(FileNotFoundError, match="no such capture file or directory"):
        list(iter_record_batches(tmp_path / "missing"))


def test_a_directory_a_store_rollouts_and_files_give_the_same_rows(demo_calls: Path) -> None:
    def rows(source: Any) -> list[dict[str, Any]]:
        table = pa.Table.from_batches(list(iter_record_batches(source)))
        listed: list[dict[str, Any]] = table.to_pylist()
        return listed

    store = CaptureStore(demo_calls)
    expected = rows(_paths(demo_calls))
    assert len(expected) > 20
    assert rows(str(demo_calls)) == expected  # a str is a directory, not characters
    assert rows(demo_calls) == expected
    assert rows(store) == expected
    assert rows(store.rollouts()) == expected
    assert rows([str(p) for p in _paths(demo_calls)]) == expected


@pytest.mark.parametrize(
    ("source", "got"),
    [
        (7, "got a int"),
        (b"dir", "got a bytes"),
        ({"a": 1}, "got a dict"),
        ([3.5], "a list holding a float"),
    ],
)
def test_what_is_not_rollouts_is_refused_saying_what_it_is(source: Any, got: str) -> None:
    with pytest.raises(RolloutSourceError, match=got) as refused:
        list(iter_record_batches(source))
    assert isinstance(refused.value, TypeError)
    assert "expected a capture directory, a CaptureStore, rollouts or capture files" in str(
        refused.value
    )


def test_no_files_yield_no_batches() -> None:
    assert list(iter_record_batches([])) == []


def test_model_refs_and_tool_calls_with_nulls_keep_their_values(tmp_path: Path) -> None:
    def line(i: int, **fields: Any) -> dict[str, Any]:
        return {
            "format": "model-call-capture/1",
            "model_call_id": f"m{i}",
            "dialect": "chat",
        } | fields

    calls = [
        {"id": "a", "function": {"name": "f", "arguments": '{"x": 1}'}},
        {"function": {"arguments": "not json"}},
    ]
    lines = [
        line(0),  # no model_ref, no tool calls
        line(
            1,
            model_ref={"type": "t", "name": "n"},
            response={"choices": [{"message": {"tool_calls": calls}}]},
        ),
        line(2),
    ]
    path = tmp_path / "r.capture.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    table = pa.Table.from_batches(list(iter_record_batches([path])))
    assert table.column("model_ref").to_pylist() == [None, {"type": "t", "name": "n"}, None]
    assert table.column("tool_calls").to_pylist() == [
        [],
        [
            {"call_id": "a", "name": "f", "arguments": '{"x":1}'},
            {"call_id": None, "name": None, "arguments": '{"_raw":"not json"}'},
        ],
        [],
    ]
