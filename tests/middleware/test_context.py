"""What the app tells the line: `start_model_execution` and the execution fields of schema 1.1.

A FastAPI model server fills in the `ModelExecutionOutcome` of each call the way a Gym model
server does (`routing/r-exec-local` and `r-exec-up` in Gym's reference files are the
shape of its lines: all four fields, null where unknown). Every expected line below is
written by hand. The hostile cases give the fields values of the wrong type or outside
their set: the call must still be served and captured, with the bad values dropped and
named in a `field_dropped` gap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from hypothesis import given, settings
from hypothesis import strategies as st

from model_call_capture import ModelExecutionOutcome, start_model_execution
from model_call_capture.middleware._context import CaptureContext, execution_facts
from model_call_capture.records import read_model_call_records
from model_call_capture.store import CaptureStore
from servers import serve

from .conftest import call, capturing, chat_body, new_rollout, only_line, post

EXECUTION_FIELDS = (
    "upstream_attempted",
    "response_source",
    "upstream_status_code",
    "local_response_reason",
)
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
}
TOO_LONG = {"error": {"message": "prompt too long", "code": "context_length_exceeded"}}


def execution_app() -> FastAPI:
    """A model server whose handler sets the execution fields the request's `case` names."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        case = (await request.json()).get("case")
        if case == "silent":  # never starts an execution
            return JSONResponse(COMPLETION)
        if case == "local":  # refuses before trying the upstream, as Gym's example server
            run = start_model_execution(request, upstream_attempted=False)
            run.response_source = "local"
            run.local_response_reason = "context_length_exceeded"
            return JSONResponse(TOO_LONG, status_code=400)
        if case == "gym-items":  # code written for Gym fills a mapping
            run = start_model_execution(request, upstream_attempted=True)
            run["response_source"] = "upstream"
            run["upstream_status_code"] = 200
            return JSONResponse(COMPLETION)
        if case == "fallback":  # the upstream failed; the server answered from a cache
            run = start_model_execution(request, upstream_attempted=True)
            run.upstream_status_code = 503
            run.response_source = "local"
            run.local_response_reason = "cached_reply"
            return JSONResponse(COMPLETION)
        if case == "hostile":
            run = start_model_execution(request, upstream_attempted="yes")  # type: ignore[arg-type]
            run.response_source = "cache"  # type: ignore[assignment]
            run.upstream_status_code = True
            run.local_response_reason = _Shouty("x")
            return JSONResponse(COMPLETION)
        if case == "replaced":  # the app puts something else in the context's place
            context = request.scope["extensions"]["model_call_capture"]
            start_model_execution(request, upstream_attempted=True)
            context.execution = {"upstream_attempted": True}
            return JSONResponse(COMPLETION)
        if case == "category-wins":
            request.scope["extensions"]["model_call_capture"].error_category = "rate_limit"
            run = start_model_execution(request, upstream_attempted=False)
            run.local_response_reason = "context_length_exceeded"
            return JSONResponse(TOO_LONG, status_code=400)
        raise AssertionError(case)

    return app


class _Shouty(str):
    """A `str` subclass whose methods must never run while the line is built."""

    def __str__(self) -> str:
        raise AssertionError("the capture called the app's __str__")

    def __len__(self) -> int:
        raise AssertionError("the capture called the app's __len__")

    def __eq__(self, other: object) -> bool:
        raise AssertionError("the capture called the app's __eq__")

    __hash__ = str.__hash__


def _send(tmp_path: Path, case: str) -> tuple[int | None, dict[str, Any]]:
    rollout = new_rollout()
    exchange = post(capturing(tmp_path, app=execution_app()), rollout, {"case": case})
    assert exchange.error is None
    return exchange.status, only_line(tmp_path, rollout) | {"_rollout": rollout}


def _execution(line: dict[str, Any]) -> dict[str, Any]:
    return {name: line[name] for name in EXECUTION_FIELDS if name in line}


def test_an_app_that_says_nothing_writes_no_execution_fields(tmp_path: Path) -> None:
    status, line = _send(tmp_path, "silent")
    assert status == 200
    assert _execution(line) == {}
    (record,) = read_model_call_records(CaptureStore(tmp_path), line["_rollout"])
    assert [getattr(record, name) for name in EXECUTION_FIELDS] == [None, None, None, None]


def test_a_local_refusal_as_gym_writes_it_and_its_error_category(tmp_path: Path) -> None:
    status, line = _send(tmp_path, "local")
    assert status == 400
    assert _execution(line) == {
        "upstream_attempted": False,
        "response_source": "local",
        "upstream_status_code": None,
        "local_response_reason": "context_length_exceeded",
    }
    # 400 alone would be client_error; the reason makes it context_length_exceeded (Gym).
    assert line["error_category"] == "context_length_exceeded"
    assert line["response"] == TOO_LONG
    (record,) = read_model_call_records(CaptureStore(tmp_path), line["_rollout"])
    assert (record.upstream_attempted, record.response_source) == (False, "local")
    assert record.local_response_reason == "context_length_exceeded"
    assert record.error_category == "context_length_exceeded"


def test_item_access_as_code_written_for_gym_uses_it(tmp_path: Path) -> None:
    status, line = _send(tmp_path, "gym-items")
    assert status == 200
    assert _execution(line) == {
        "upstream_attempted": True,
        "response_source": "upstream",
        "upstream_status_code": 200,
        "local_response_reason": None,
    }
    assert line["error_category"] is None


def test_the_upstream_status_may_differ_from_the_clients(tmp_path: Path) -> None:
    status, line = _send(tmp_path, "fallback")
    assert (status, line["status_code"], line["error_category"]) == (200, 200, None)
    assert _execution(line) == {
        "upstream_attempted": True,
        "response_source": "local",
        "upstream_status_code": 503,
        "local_response_reason": "cached_reply",
    }


def test_hostile_values_are_dropped_with_gaps_and_the_call_is_still_served(
    tmp_path: Path,
) -> None:
    status, line = _send(tmp_path, "hostile")
    assert status == 200
    assert line["response"] == COMPLETION
    assert _execution(line) == {
        "upstream_attempted": None,
        "response_source": None,
        "upstream_status_code": None,
        "local_response_reason": None,
    }
    assert line["gaps"] == [
        {"code": "field_dropped", "detail": "upstream_attempted: expected true or false, got str"},
        {
            "code": "field_dropped",
            "detail": 'response_source: expected "upstream" or "local", got \'cache\'',
        },
        {
            "code": "field_dropped",
            "detail": "upstream_status_code: expected an HTTP status (100-999), got bool",
        },
        {
            "code": "field_dropped",
            "detail": "local_response_reason: expected a string, got _Shouty",
        },
    ]


def test_an_execution_replaced_by_something_else_is_not_read(tmp_path: Path) -> None:
    status, line = _send(tmp_path, "replaced")
    assert status == 200
    assert _execution(line) == {
        "upstream_attempted": None,
        "response_source": None,
        "upstream_status_code": None,
        "local_response_reason": None,
    }
    assert line["gaps"] == [
        {"code": "field_dropped", "detail": "execution: expected a ModelExecutionOutcome, got dict"}
    ]


def test_a_category_the_app_sets_wins_over_the_one_the_reason_implies(tmp_path: Path) -> None:
    _, line = _send(tmp_path, "category-wins")
    assert line["error_category"] == "rate_limit"
    assert line["local_response_reason"] == "context_length_exceeded"


@pytest.mark.parametrize(
    ("name", "value", "detail"),
    [
        ("upstream_status_code", 99, "expected an HTTP status (100-999), got 99"),
        ("upstream_status_code", 1000, "expected an HTTP status (100-999), got 1000"),
        ("upstream_status_code", 200.0, "expected an HTTP status (100-999), got float"),
        ("upstream_status_code", "200", "expected an HTTP status (100-999), got str"),
        ("upstream_attempted", 1, "expected true or false, got int"),
        ("response_source", "Local", 'expected "upstream" or "local", got \'Local\''),
        (
            "response_source",
            "x" * 100,
            'expected "upstream" or "local", got \'' + "x" * 40 + "...'",
        ),
        ("local_response_reason", "r" * 257, "expected at most 256 characters, got 257"),
        ("local_response_reason", b"bytes", "expected a string, got bytes"),
    ],
)
def test_each_field_keeps_only_values_of_its_type(name: str, value: Any, detail: str) -> None:
    run = ModelExecutionOutcome(upstream_attempted=True)
    setattr(run, name, value)
    facts = execution_facts(run)
    assert facts is not None
    assert getattr(facts, name) is None
    assert [g.detail for g in facts.gaps] == [f"{name}: {detail}"]
    assert facts.upstream_attempted is (None if name == "upstream_attempted" else True)


def test_boundary_values_are_kept() -> None:
    run = ModelExecutionOutcome(upstream_attempted=False)
    run.upstream_status_code = 100
    run.local_response_reason = "r" * 256
    run.response_source = "upstream"
    facts = execution_facts(run)
    assert facts is not None and facts.gaps == ()
    assert (facts.upstream_status_code, facts.response_source) == (100, "upstream")
    run.upstream_status_code = 999
    facts = execution_facts(run)
    assert facts is not None and facts.upstream_status_code == 999


def test_a_raw_scope_works_and_a_second_start_returns_the_same_execution() -> None:
    context = CaptureContext("r-1", "id", "chat")
    scope: dict[str, Any] = {"type": "http", "extensions": {"model_call_capture": context}}
    first = start_model_execution(scope, upstream_attempted=False)
    first.response_source = "local"
    second = start_model_execution(scope, upstream_attempted=True)
    assert second is first is context.execution
    assert (second.upstream_attempted, second.response_source) == (True, "local")


@pytest.mark.parametrize(
    "where",
    [{}, {"extensions": None}, {"extensions": {"model_call_capture": "junk"}}, "a string", None],
)
def test_an_uncaptured_request_gets_an_execution_nobody_reads(where: Any) -> None:
    run = start_model_execution(where, upstream_attempted=True)
    assert isinstance(run, ModelExecutionOutcome) and run.upstream_attempted is True
    run.response_source = "local"  # no error: handlers need no branch for capture off


def test_a_start_after_the_app_replaced_the_execution_hands_out_a_fresh_one() -> None:
    context = CaptureContext("r-1", "id", "chat")
    context.execution = {"junk": True}  # type: ignore[assignment]
    scope: dict[str, Any] = {"type": "http", "extensions": {"model_call_capture": context}}
    run = start_model_execution(scope, upstream_attempted=True)
    assert type(run) is ModelExecutionOutcome and context.execution is run


def test_a_request_whose_scope_raises_gets_an_execution_nobody_reads() -> None:
    class Broken:
        @property
        def scope(self) -> Any:
            raise RuntimeError("no scope")

    run = start_model_execution(Broken(), upstream_attempted=False)
    assert run.upstream_attempted is False


def test_unknown_names_are_refused_as_attributes_and_items() -> None:
    run = ModelExecutionOutcome(upstream_attempted=True)
    with pytest.raises(AttributeError):
        run.status = 200  # type: ignore[attr-defined]
    with pytest.raises(KeyError):
        run["status"] = 200
    with pytest.raises(KeyError):
        run["status"]
    assert run["upstream_attempted"] is True
    assert repr(run) == (
        "ModelExecutionOutcome(upstream_attempted=True, response_source=None, "
        "upstream_status_code=None, local_response_reason=None)"
    )


def test_an_unprefixed_call_is_served_and_not_captured(tmp_path: Path) -> None:
    exchange = call(
        capturing(tmp_path, app=execution_app()),
        "/v1/chat/completions",
        b'{"case": "local"}',
    )
    assert exchange.status == 400
    assert list(tmp_path.iterdir()) == []


def test_the_fields_over_uvicorn_with_the_openai_sdk(tmp_path: Path) -> None:
    rollout = new_rollout()
    with serve(capturing(tmp_path, app=execution_app())) as server:
        client = openai.OpenAI(
            base_url=f"{server.url}/ng-rollout/{rollout}/v1", api_key="k", max_retries=0
        )
        with pytest.raises(openai.BadRequestError, match="prompt too long"):
            client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "hi"}],
                extra_body={"case": "local"},
            )
        ok = httpx.post(
            f"{server.url}/ng-rollout/{rollout}/v1/chat/completions",
            json={**chat_body(), "case": "gym-items"},
            headers={"x-session-id": "sess-7"},
        )
        assert ok.status_code == 200
    records = read_model_call_records(CaptureStore(tmp_path), rollout)
    assert [
        (
            r.status_code,
            r.error_category,
            r.client_session_id,
            *(getattr(r, n) for n in EXECUTION_FIELDS),
        )
        for r in records
    ] == [
        (400, "context_length_exceeded", None, False, "local", None, "context_length_exceeded"),
        (200, None, "sess-7", True, "upstream", 200, None),
    ]


_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True),
    st.text(max_size=300),
    st.binary(max_size=8),
    st.sampled_from(["upstream", "local", _Shouty("local"), object(), [1], {"a": 1}]),
)


@settings(max_examples=300, deadline=None)
@given(st.tuples(_ANY, _ANY, _ANY, _ANY))
def test_any_values_give_only_valid_fields_and_one_gap_per_refused_value(
    values: tuple[Any, Any, Any, Any],
) -> None:
    run = ModelExecutionOutcome(upstream_attempted=True)
    for name, value in zip(EXECUTION_FIELDS, values, strict=True):
        object.__setattr__(run, name, value)
    facts = execution_facts(run)
    assert facts is not None
    kept = [getattr(facts, name) for name in EXECUTION_FIELDS]
    assert kept[0] is None or type(kept[0]) is bool
    assert kept[1] in (None, "upstream", "local") and type(kept[1]) in (type(None), str)
    assert kept[2] is None or (type(kept[2]) is int and 100 <= kept[2] <= 999)
    assert kept[3] is None or (type(kept[3]) is str and len(kept[3]) <= 256)
    refused = [
        n
        for n, v, k in zip(EXECUTION_FIELDS, values, kept, strict=True)
        if v is not None and k is None
    ]
    assert [g.detail.split(":")[0] for g in facts.gaps if isinstance(g.detail, str)] == refused
