"""Typed records and metrics: derivation, strict and tolerant reading, sums that keep null."""

from __future__ import annotations

import gc
import json
import pickle
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion

from conftest import FULL_GYM_REFERENCE, needs_full_gym_reference, require_capability
from model_call_capture import _codec
from model_call_capture.contracts import (
    CaptureLine,
    ModelCallMetrics,
    ModelCallRecord,
    ModelRef,
)
from model_call_capture.errors import (
    DamagedLineError,
    InvalidRolloutIdError,
    LineTooLongError,
    UnsupportedFormatError,
)
from model_call_capture.records import (
    aggregate_model_call_metrics,
    aggregate_model_call_records,
    build_model_call_record,
    decode_line_lazily,
    iter_model_call_records,
    iter_rollout_records,
    read_available_model_call_records,
    read_model_call_records,
)
from model_call_capture.store import CaptureStore, Rollout

REF = ModelRef(type="responses_api_models", name="policy")


def _record(**fields: Any) -> ModelCallRecord:
    base: dict[str, Any] = dict.fromkeys(ModelCallRecord.__struct_fields__)
    base.update(call_index=0, tool_calls=[], capture_cut=False, derivation_problems=msgspec.UNSET)
    base.update(fields)
    return ModelCallRecord(**base)


# -- building one record -------------------------------------------------------------------


def test_line_fields_are_carried_over_and_unset_raw_texts_become_null() -> None:
    line = CaptureLine(
        model_call_id="call-1",
        dialect=None,
        model_ref=REF,
        started_at=100.0,
        completed_at=100.5,
        latency_ms=500.0,
        latency_ttft_ms=50.0,
        status_code=502,
        error_category="upstream_error",
        request=None,
        request_raw='"hello"',
        response={"detail": "bad gateway"},
    )
    assert msgspec.to_builtins(build_model_call_record(line, 7)) == {
        "model_call_id": "call-1",
        "response_id": None,
        "call_index": 7,
        "model_ref": {"type": "responses_api_models", "name": "policy"},
        "model": None,
        "dialect": None,
        "status_code": 502,
        "response_status": None,
        "finish_reason": None,
        "started_at": 100.0,
        "completed_at": 100.5,
        "tokens_in": None,
        "tokens_out": None,
        "tokens_reasoning": None,
        "tokens_total": None,
        "cached_tokens": None,
        "cache_hit": None,
        "cache_creation_tokens": None,
        "tool_calls": [],
        "reasoning_content": None,
        "error_category": "upstream_error",
        "latency_total_ms": 500.0,
        "latency_ttft_ms": 50.0,
        "request": None,
        "response": {"detail": "bad gateway"},
        "request_raw": '"hello"',
        "response_raw": None,
        "capture_cut": False,
        # schema 1.1: a line without them (every 1.0 line) reads them as unknown
        "client_session_id": None,
        "upstream_attempted": None,
        "response_source": None,
        "upstream_status_code": None,
        "local_response_reason": None,
        "prompt_token_ids": None,
        "generation_token_ids": None,
        "generation_log_probs": None,
    }


def test_the_execution_fields_and_session_of_a_line_are_carried_over() -> None:
    line = CaptureLine(
        model_call_id="call-2",
        status_code=400,
        error_category="context_length_exceeded",
        client_session_id="sess-42",
        upstream_attempted=False,
        response_source="local",
        upstream_status_code=None,
        local_response_reason="context_length_exceeded",
    )
    record = build_model_call_record(line, 0)
    assert (
        record.client_session_id,
        record.upstream_attempted,
        record.response_source,
        record.upstream_status_code,
        record.local_response_reason,
        record.error_category,
    ) == ("sess-42", False, "local", None, "context_length_exceeded", "context_length_exceeded")
    upstream = build_model_call_record(
        CaptureLine(upstream_attempted=True, response_source="upstream", upstream_status_code=429),
        1,
    )
    assert (upstream.upstream_attempted, upstream.response_source) == (True, "upstream")
    assert upstream.upstream_status_code == 429


def test_capture_cut_is_carried_over() -> None:
    assert build_model_call_record(CaptureLine(capture_cut=True), 0).capture_cut is True


def test_a_dialect_whose_derive_raises_still_gives_a_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from model_call_capture.dialects import DIALECTS

    def broken(request: object, response: object) -> object:
        raise RuntimeError("bug in a dialect")

    monkeypatch.setattr(DIALECTS["chat"], "derive", broken)
    record = build_model_call_record(
        CaptureLine(dialect="chat", model_call_id="x", latency_ms=3.0), 2
    )
    assert (record.model_call_id, record.call_index, record.latency_total_ms, record.tokens_in) == (
        "x",
        2,
        3.0,
        None,
    )


# -- reading -------------------------------------------------------------------------------


def _write(tmp_path: Path, text: bytes) -> CaptureStore:
    store = CaptureStore(tmp_path)
    store.path("r").write_bytes(text)
    return store


def test_read_raises_naming_file_and_line(tmp_path: Path) -> None:
    store = _write(
        tmp_path, b'{"model_call_id":"a"}\n   \n{"model_call_id":"b"}\n{"model_call_id": 5}\n'
    )
    with pytest.raises(DamagedLineError) as info:
        read_model_call_records(store, "r")
    assert str(tmp_path / "r.capture.jsonl") in str(info.value)
    # As editors number lines: the fourth, the blank one counted (index 2 among the calls).
    assert "line 4: " in str(info.value) and (info.value.line, info.value.line_index) == (4, 2)
    assert "Expected `str | null`, got `int` - at `$.model_call_id`" in str(info.value)


def test_read_available_skips_damaged_lines_and_keeps_positions(tmp_path: Path) -> None:
    store = _write(
        tmp_path, b'{"model_call_id":"a"}\n{bad\n\n{"model_call_id":"b"}\n{"model_call_id":"c","res'
    )
    records, invalid = read_available_model_call_records(store, "r")
    assert [(r.call_index, r.model_call_id) for r in records] == [(0, "a"), (2, "b")]
    assert invalid == 2
    minimal = b'{"request": {"i": 0}, "response": {}}'  # as NeMo Gym's tests write them
    assert [
        r.call_index
        for r in read_model_call_records(_write(tmp_path, minimal + b"\n\n" + minimal), "r")
    ] == [0, 1]


def test_a_missing_rollout_has_no_records_and_empty_metrics(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    assert read_model_call_records(store, "r") == []
    assert read_available_model_call_records(store, "r") == ([], 0)
    assert msgspec.to_builtins(aggregate_model_call_metrics(store, "r")) == {
        "num_calls": 0,
        "tokens_in": None,
        "tokens_out": None,
        "tokens_reasoning": None,
        "tokens_total": None,
        "cached_tokens": None,
        "latency_total_ms": None,
        "cache_creation_tokens": None,
        "error_categories": {},
    }


# -- metrics -------------------------------------------------------------------------------


def test_metrics_sum_known_values_and_keep_unknown_null() -> None:
    records = [
        _record(
            tokens_in=10,
            tokens_out=5,
            tokens_total=15,
            latency_total_ms=1.5,
            cache_creation_tokens=4,
        ),
        _record(
            tokens_in=None,
            tokens_out=7,
            tokens_reasoning=None,
            latency_total_ms=2.25,
            error_category="timeout",
        ),
        _record(tokens_in=3, cached_tokens=0, error_category="timeout"),
        _record(error_category="rate_limit"),
    ]
    assert aggregate_model_call_records(records) == ModelCallMetrics(
        num_calls=4,
        tokens_in=13,
        tokens_out=12,
        tokens_reasoning=None,
        tokens_total=15,
        cached_tokens=0,  # a reported 0 is known: it stays 0, unlike an unknown
        latency_total_ms=3.75,
        cache_creation_tokens=4,
        error_categories={"rate_limit": 1, "timeout": 2},
    )


_counts = st.one_of(st.none(), st.integers(min_value=0, max_value=2**70))
_millis = st.one_of(st.none(), st.floats(min_value=0, max_value=1e9, allow_nan=False))
_records = st.builds(
    _record,
    tokens_in=_counts,
    tokens_out=_counts,
    tokens_reasoning=_counts,
    tokens_total=_counts,
    cached_tokens=_counts,
    cache_creation_tokens=_counts,
    latency_total_ms=_millis,
    error_category=st.one_of(
        st.none(), st.sampled_from(["timeout", "auth", "rate_limit", "cancelled"])
    ),
)
_SUMMED = (
    "tokens_in",
    "tokens_out",
    "tokens_reasoning",
    "tokens_total",
    "cached_tokens",
    "cache_creation_tokens",
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_records, max_size=12))
def test_metrics_equal_the_sum_of_the_records(records: list[ModelCallRecord]) -> None:
    metrics = aggregate_model_call_records(records)
    assert metrics.num_calls == len(records)
    for name in _SUMMED:
        known = [getattr(r, name) for r in records if getattr(r, name) is not None]
        assert getattr(metrics, name) == (sum(known) if known else None), name
    latencies = [r.latency_total_ms for r in records if r.latency_total_ms is not None]
    expected_latency = None
    for value in latencies:  # same order as the records: float sums are order-sensitive
        expected_latency = value if expected_latency is None else expected_latency + value
    assert metrics.latency_total_ms == expected_latency
    categories: dict[str, int] = {}
    for r in records:
        if r.error_category is not None:
            categories[r.error_category] = categories.get(r.error_category, 0) + 1
    assert metrics.error_categories == categories


@settings(max_examples=100, deadline=None)
@given(st.lists(_records, min_size=1, max_size=8))
def test_null_stays_null(records: list[ModelCallRecord]) -> None:
    unknown = [
        msgspec.structs.replace(r, **dict.fromkeys(_SUMMED), latency_total_ms=None) for r in records
    ]
    metrics = msgspec.to_builtins(aggregate_model_call_records(unknown))
    for name in (*_SUMMED, "latency_total_ms"):
        assert metrics[name] is None, name


@settings(max_examples=50, deadline=None)
@given(st.lists(_records, max_size=6), st.lists(_records, max_size=6))
def test_metrics_of_a_union_are_the_sum_of_the_parts(
    a: list[ModelCallRecord], b: list[ModelCallRecord]
) -> None:
    whole = aggregate_model_call_records(a + b)
    left, right = aggregate_model_call_records(a), aggregate_model_call_records(b)
    assert whole.num_calls == left.num_calls + right.num_calls
    for name in _SUMMED:
        x, y = getattr(left, name), getattr(right, name)
        assert getattr(whole, name) == (None if x is None and y is None else (x or 0) + (y or 0))


# -- compatibility with NeMo Gym 0.7.0 ------------------------------------------------------

# Each deliberate difference from what Gym derived: (rollout, call_index, field) -> (ours, Gym's).
# The reasons are in docs/compatibility.md.
DELIBERATE_RECORD_DIFFERENCES: dict[tuple[str, int, str], tuple[Any, Any]] = {
    # A chat / messages body that carries a Responses-style `status`: Gym reads `status`
    # whatever the dialect; `response_status` is the Responses API status only.
    ("matrix/chat-json-nan", 0, "response_status"): (None, "completed"),
    ("matrix/messages-json-nan", 0, "response_status"): (None, "completed"),
}


# Rollouts Gym's store read but whose id Gym's collector refused: our store refuses the id
# on every path (docs/compatibility.md).
DELIBERATE_REFUSED_IDS = {"routing/.hidden"}


def test_an_id_gym_wrote_but_refused_to_attach_is_refused_by_our_store(
    gym_reference_dir: Path,
) -> None:
    expected = json.loads((gym_reference_dir / "routing" / ".hidden.expected.json").read_text())
    assert "got '.hidden'" in expected["attachment"]["error"]
    assert len(expected["records"]) == 1  # what Gym's store read
    with pytest.raises(InvalidRolloutIdError, match=r"invalid rollout id '\.hidden'"):
        read_available_model_call_records(CaptureStore(gym_reference_dir / "routing"), ".hidden")


def _gym_rollouts(root: Path) -> list[tuple[str, Path, dict[str, Any]]]:
    out = []
    for path in sorted(root.glob("*/*.expected.json")):
        rollout_id = path.name[: -len(".expected.json")]
        out.append((f"{path.parent.name}/{rollout_id}", path.parent, json.loads(path.read_text())))
    return out


def test_records_and_metrics_equal_gyms_on_every_field_both_define(gym_reference_dir: Path) -> None:
    compared = equal = 0
    differences: dict[tuple[str, int, str], tuple[Any, Any]] = {}
    other: list[str] = []
    rollouts = _gym_rollouts(gym_reference_dir)
    assert len(rollouts) >= (150 if FULL_GYM_REFERENCE else 1)
    for name, folder, expected in rollouts:
        rollout_id = name.split("/", 1)[1]
        if name in DELIBERATE_REFUSED_IDS:
            continue
        store = CaptureStore(folder)
        records, invalid = read_available_model_call_records(store, rollout_id)
        if invalid != expected["invalid_count"]:
            other.append(f"{name}: invalid_count {invalid} != {expected['invalid_count']}")
        ours = _codec.to_builtins(records)
        if len(ours) != len(expected["records"]):
            other.append(f"{name}: {len(ours)} records != {len(expected['records'])}")
            continue
        for mine, theirs in zip(ours, expected["records"], strict=True):
            for field in sorted(mine.keys() & theirs.keys()):
                compared += 1
                if mine[field] == theirs[field]:
                    equal += 1
                else:
                    differences[(name, theirs["call_index"], field)] = (mine[field], theirs[field])
        metrics = msgspec.to_builtins(aggregate_model_call_records(records))
        for field in sorted(metrics.keys() & expected["metrics"].keys()):
            compared += 1
            if metrics[field] == expected["metrics"][field]:
                equal += 1
            else:
                other.append(
                    f"{name}: metrics.{field} {metrics[field]!r} != {expected['metrics'][field]!r}"
                )
    print(
        f"\nrecords+metrics vs Gym: {compared} fields compared, {equal} equal, {len(differences)} deliberately different"
    )
    assert other == []
    assert differences == DELIBERATE_RECORD_DIFFERENCES
    assert compared == equal + len(DELIBERATE_RECORD_DIFFERENCES)


@pytest.mark.parametrize(
    ("rollout", "expected"),
    [
        # (client_session_id, upstream_attempted, response_source, upstream_status_code,
        #  local_response_reason, error_category): read by hand from Gym's lines
        ("r-session", ("sess-42", None, None, None, None, None)),
        ("r-exec-up", (None, True, "upstream", 200, None, None)),
        (
            "r-exec-local",
            (None, False, "local", None, "context_length_exceeded", "context_length_exceeded"),
        ),
        ("r-session2", (None, None, None, None, None, None)),  # two different x-session-id
        ("r-query", (None, None, None, None, None, None)),
    ],
)
def test_the_schema_1_1_fields_gym_wrote_are_read(
    gym_reference_dir: Path, rollout: str, expected: tuple[Any, ...]
) -> None:
    store = CaptureStore(gym_reference_dir / "routing")
    require_capability(
        "the full Gym reference",
        store.path(rollout).exists(),
        f"routing/{rollout} is not in the sample; the full reference has it",
    )
    records, invalid = read_available_model_call_records(store, rollout)
    assert invalid == 0
    (r,) = records
    assert (
        r.client_session_id,
        r.upstream_attempted,
        r.response_source,
        r.upstream_status_code,
        r.local_response_reason,
        r.error_category,
    ) == expected


def test_a_file_this_library_wrote_with_schema_1_0_reads_unchanged() -> None:
    # Written by release 0.1.0 (schema 1.0) and kept as a fixture forever (its README).
    folder = Path(__file__).parent / "data" / "schema-1.0"
    records, invalid = read_available_model_call_records(CaptureStore(folder), "0-0")
    assert invalid == 0
    assert [(r.dialect, r.status_code, r.error_category) for r in records] == [
        ("chat", 200, None),
        ("chat", 200, None),
        ("responses", 200, None),
        ("responses", 200, None),
        ("messages", 200, None),
        ("messages", 200, None),
    ]
    for r in records:
        assert r.client_session_id is None and r.upstream_attempted is None
        assert r.response_source is None and r.upstream_status_code is None
        assert r.local_response_reason is None
        assert r.tokens_in is not None and r.response is not None  # the 1.0 fields as before


def test_every_record_of_gyms_files_without_the_fields_has_them_null(
    gym_reference_dir: Path,
) -> None:
    # Gym writes the fields only when known; every other line (and every 1.0 line) reads null.
    set_by_gym = {"routing/r-session", "routing/r-exec-up", "routing/r-exec-local"}
    seen = 0
    for name, folder, _ in _gym_rollouts(gym_reference_dir):
        if name in DELIBERATE_REFUSED_IDS or name in set_by_gym:
            continue
        records, _ = read_available_model_call_records(CaptureStore(folder), name.split("/")[1])
        for r in records:
            seen += 1
            assert r.client_session_id is None, name
            assert r.upstream_attempted is None and r.response_source is None, name
            assert r.upstream_status_code is None and r.local_response_reason is None, name
    assert seen >= (400 if FULL_GYM_REFERENCE else 1)


def test_metrics_add_cache_creation_tokens_and_error_categories(gym_reference_dir: Path) -> None:
    # Deliberate addition: Gym's metrics have neither field.
    records, _ = read_available_model_call_records(
        CaptureStore(gym_reference_dir / "status"), "status-429"
    )
    metrics = msgspec.to_builtins(aggregate_model_call_records(records))
    expected = json.loads((gym_reference_dir / "status" / "status-429.expected.json").read_text())[
        "metrics"
    ]
    assert set(metrics) - set(expected) == {"cache_creation_tokens", "error_categories"}
    assert metrics["error_categories"] == {"rate_limit": 1}


# -- snapshots -----------------------------------------------------------------------------


_SCENARIO_FOLDERS = ("matrix", "timeline", "requests", "status")


@needs_full_gym_reference
@pytest.mark.parametrize("folder", _SCENARIO_FOLDERS)
def test_derived_records_snapshot(
    folder: str, gym_reference_dir: Path, snapshot_json: SnapshotAssertion
) -> None:
    """The records derived from each scripted scenario, payloads left out (they are copied verbatim)."""
    store = CaptureStore(gym_reference_dir / folder)
    derived: dict[str, Any] = {}
    for rollout_id in store.rollout_ids():
        records, invalid = read_available_model_call_records(store, rollout_id)
        calls = _codec.to_builtins(records)
        for call in calls:
            for payload in ("request", "response", "request_raw", "response_raw"):
                call.pop(payload)
        derived[rollout_id] = {"invalid_count": invalid, "records": calls}
    assert derived == snapshot_json


# -- payloads decoded on first read ----------------------------------------------------------------


def test_payloads_are_decoded_once_on_first_read_and_changes_persist(tmp_path: Path) -> None:
    store = _write(
        tmp_path,
        b'{"dialect":"chat","request": {"model" : "m"},"response":{"id":"c1","n":[1,2]}}\n',
    )
    (record,) = read_model_call_records(store, "r")
    assert record.response_id == "c1"
    assert record.request == {"model": "m"}
    response = record.response
    assert isinstance(response, dict) and record.response is response
    response["n"].append(3)
    assert (
        b'"request":{"model":"m"},"response":{"id":"c1","n":[1,2,3]},"request_raw":null,"response_raw":null,"capture_cut":false,'
        in _codec.encode(record)
    )


def test_an_unread_record_encodes_its_payload_text_verbatim_and_equals_the_decoded_one(
    tmp_path: Path,
) -> None:
    store = _write(tmp_path, b'{"model_call_id":"a","request":{"model":"m"},"response":null}\n')
    (unread,) = read_model_call_records(store, "r")
    assert (
        b'"request":{"model":"m"},"response":null,"request_raw":null,"response_raw":null,"capture_cut":false,'
        in _codec.encode(unread)
    )
    (other,) = read_model_call_records(store, "r")
    assert other == _record(model_call_id="a", request={"model": "m"})
    assert _codec.to_builtins(other)["request"] == {"model": "m"}


def test_to_dict_gives_plain_values_where_msgspec_refuses_unread_payload_text(
    tmp_path: Path,
) -> None:
    store = _write(
        tmp_path, b'{"model_call_id":"a","request":{"model":"m"},"response":{"id":"c1"}}\n'
    )
    (record,) = read_model_call_records(store, "r")
    with pytest.raises(TypeError, match="Raw"):
        msgspec.to_builtins(record)
    row = record.to_dict()
    assert (row["model_call_id"], row["request"], row["response"], row["tool_calls"]) == (
        "a",
        {"model": "m"},
        {"id": "c1"},
        [],
    )


def test_a_line_with_non_ascii_text_is_read_lazily_too(tmp_path: Path) -> None:
    # UTF-8 outside ASCII is checked once and the payloads stay JSON text until read.
    store = _write(
        tmp_path,
        '{"model_call_id":"a","request":{"input":"caf\u00e9"},"response":null}\n'.encode(),
    )
    (record,) = read_available_model_call_records(store, "r")[0]
    with pytest.raises(TypeError, match="Raw"):
        msgspec.to_builtins(record)
    assert record.request == {"input": "caf\u00e9"}


def test_an_unread_record_survives_pickling_for_worker_processes(tmp_path: Path) -> None:
    store = _write(
        tmp_path, b'{"model_call_id":"a","request":{"model":"m"},"response":{"id":"c1"}}\n'
    )
    (record,) = read_model_call_records(store, "r")
    copy = pickle.loads(pickle.dumps(record))
    assert (copy.model_call_id, copy.request, copy.response) == ("a", {"model": "m"}, {"id": "c1"})


def test_an_absent_or_null_payload_is_null_in_the_line_and_the_record_before_any_read(
    tmp_path: Path,
) -> None:
    # The lazy decode stores a checked payload back only when checking changed it: an
    # object's text stays the same `msgspec.Raw`, absent (UNSET) and `null` become None.
    lines = [
        b'{"model_call_id":"a"}',
        b'{"model_call_id":"b","request":null,"response":null}',
        b'{"model_call_id":"c","request":{"model":"m"},"response":{"id":"c1"}}',
    ]
    decoded = [decode_line_lazily(raw, path=None, line_index=i) for i, raw in enumerate(lines)]
    assert [(line.request, line.response) for line in decoded[:2]] == [(None, None), (None, None)]
    assert (bytes(decoded[2].request), bytes(decoded[2].response)) == (  # type: ignore[arg-type]
        b'{"model":"m"}',
        b'{"id":"c1"}',
    )
    store = _write(tmp_path, b"\n".join(lines) + b"\n")
    slots = [
        (row["request"], row["response"])
        for row in map(msgspec.structs.asdict, read_model_call_records(store, "r"))
    ]
    assert slots[:2] == [(None, None), (None, None)]  # not UNSET, not the text `null`
    assert [type(payload) for payload in slots[2]] == [msgspec.Raw, msgspec.Raw]


def test_payload_text_that_is_not_an_object_reads_as_null() -> None:
    # Only a hand-built record can hold such text: a line with it is damaged (next test).
    assert (
        _record(request=msgspec.Raw(b"[1]"), response=msgspec.Raw(b'{"x":1e400}')).request is None
    )
    assert _record(response=msgspec.Raw(b'{"x":1e400}')).response is None


def test_a_hand_edited_out_of_range_number_gives_a_record_with_a_null_payload(
    tmp_path: Path,
) -> None:
    # The one documented exception to "judged as the store judges them"
    # (docs/compatibility.md): finding it would take the full parse laziness avoids.
    store = _write(tmp_path, b'{"dialect":"chat","request":{"x":1e400},"response":{"id":"c1"}}\n')
    records, damaged = read_available_model_call_records(store, "r")
    assert [(r.response_id, r.request, r.response) for r in records] == [("c1", None, {"id": "c1"})]
    assert damaged == 0
    assert store.read_available("r")[1] == 1


def test_lines_are_judged_as_the_store_judges_them(tmp_path: Path) -> None:
    text = (
        b'{"model_call_id":"a","request":{"k":"\xc3\xa9"}}\n'
        b'{"model_call_id":"b","request":[1]}\n'
        b'{"model_call_id":"c","response":"text"}\n'
        b'{"model_call_id":"d","request":{"k":"\xff"}}\n'
        b'{"model_call_id":"e","unknown":"\xff","request":null}\n'
        b'{"model_call_id":"f","response":{"k":"\\ud800"}}\n'
    )
    store = _write(tmp_path, text)
    records, invalid = read_available_model_call_records(store, "r")
    assert [(r.call_index, r.model_call_id, r.request) for r in records] == [
        (0, "a", {"k": "é"}),
        (4, "e", None),
    ]
    assert invalid == 4
    lines, damaged = store.read_available("r")
    assert ([i for i, _ in lines], damaged) == ([0, 4], 4)
    with pytest.raises(
        DamagedLineError,
        match=r"line 2: .*Expected `object \| null`, got `array` - at `\$.request`",
    ):
        read_model_call_records(store, "r")


def test_a_line_of_a_newer_format_is_refused_whatever_its_payloads(tmp_path: Path) -> None:
    for line in (
        b'{"format":"model-call-capture/2"}\n',
        b'{"format":"model-call-capture/2","request":[1]}\n',
    ):
        store = _write(tmp_path, b'{"model_call_id":"a"}\n' + line)
        with pytest.raises(UnsupportedFormatError, match="newer than this reader") as info:
            read_available_model_call_records(store, "r")
        assert (info.value.path, info.value.line_index, info.value.line) == (store.path("r"), 1, 2)
        assert f"in {store.path('r')}, line 2 " in str(info.value)


def test_records_read_in_bulk_are_not_tracked_by_the_cyclic_collector(tmp_path: Path) -> None:
    store = _write(
        tmp_path,
        b'{"dialect":"chat","model_ref":{"type":"responses_api_models","name":"m"},"response":{"choices":[{"message":{"tool_calls":[{"id":"t","function":{"name":"f","arguments":"{}"}}]}}]}}\n',
    )
    (record,) = read_model_call_records(store, "r")
    assert [gc.is_tracked(value) for value in (record, record.model_ref, record.tool_calls[0])] == [
        False,
        False,
        False,
    ]


# -- record streams ------------------------------------------------------------------------


def test_a_rollout_stream_skips_damaged_lines_unless_strict_and_keeps_the_raw_lines(
    tmp_path: Path,
) -> None:
    store = _write(tmp_path, b'{"model_call_id":"a"}\n\n{bad\n{"model_call_id":"b"}')
    stream = iter_model_call_records(store, "r")
    assert [(r.call_index, r.model_call_id) for r in stream] == [(0, "a"), (2, "b")]
    assert stream.damaged == 1
    # The lines behind the records: 4, the blank one included.
    assert stream.lines.count == 4
    with pytest.raises(DamagedLineError, match="line 3: "):  # the blank line counted
        list(iter_model_call_records(store, "r", strict=True))


def test_a_rollout_of_any_file_name_is_read_with_its_own_line_cap(tmp_path: Path) -> None:
    path = tmp_path / "exported.jsonl"
    long_line = b'{"model_call_id":"' + b"x" * 60 + b'"}'
    path.write_bytes(b'{"model_call_id":"a"}\n{bad\n' + long_line + b"\n")
    stream = iter_rollout_records(Rollout("r", (path,)))
    assert [(r.call_index, r.model_call_id) for r in stream] == [(0, "a"), (2, "x" * 60)]
    assert (stream.damaged, stream.lines.count) == (1, 3)
    with pytest.raises(DamagedLineError) as info:
        list(iter_rollout_records(Rollout("r", (path,)), strict=True))
    assert (info.value.path, info.value.line_index) == (path, 1)
    assert str(path) in str(info.value)
    # A 40-byte cap makes the 80-byte line damaged too.
    capped = iter_rollout_records(Rollout("r", (path,)), max_line_bytes=40)
    assert [r.model_call_id for r in capped] == ["a"]
    assert capped.damaged == 2
    path.write_bytes(b'{"model_call_id":"a"}\n' + long_line + b"\n")
    with pytest.raises(LineTooLongError) as too_long:
        list(iter_rollout_records(Rollout("r", (path,)), strict=True, max_line_bytes=40))
    assert (too_long.value.line_index, too_long.value.size) == (1, 80)


def test_a_rollout_of_several_files_numbers_its_lines_on_across_them(tmp_path: Path) -> None:
    first, second = tmp_path / "r.capture.jsonl", tmp_path / "r.part-2"
    first.write_bytes(b'{"model_call_id":"a"}\n\n{bad\n')
    second.write_bytes(b'{"model_call_id":"b"}\n{"model_call_id":"c"}\n[1]\n')
    rollout = Rollout("r", (first, second, tmp_path / "gone"))
    stream = iter_rollout_records(rollout)
    assert [(r.call_index, r.model_call_id) for r in stream] == [(0, "a"), (2, "b"), (3, "c")]
    assert (stream.damaged, stream.lines.count) == (2, 6)
    with pytest.raises(DamagedLineError) as info:
        list(iter_rollout_records(Rollout("r", (second, first)), strict=True))
    # The error names the file and the line in that file.
    assert (info.value.path, info.value.line_index) == (second, 2)
