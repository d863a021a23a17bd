"""Token ids and log-probs derived from chat and Responses payloads, JSON and streamed.

Every response here is built by hand in the shape a server's protocol definition gives
(vLLM's `chat_completion/protocol.py`, NeMo Gym's chat messages and Responses items,
OpenAI's logprobs; docs/formats.md names the versions), and every expected array is
written out by hand. Streams are cut at arbitrary byte positions (hypothesis) and must
give the same arrays as their JSON twins.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import derive_uncaught, state_failures
from model_call_capture import CaptureLine, ModelCallRecord, build_model_call_record
from model_call_capture.contracts import ObservationGap
from model_call_capture.reassembly import StreamReassembler


def _chat(choice: dict[str, Any], **top: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": "Hi!"}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", **choice}],
        **top,
    }


def _tokens(dialect: str, response: Any) -> tuple[Any, Any, Any, list[tuple[str, str]]]:
    d = derive_uncaught(dialect, None, response)
    listed = [] if d.derivation_problems is msgspec.UNSET else d.derivation_problems
    problems = [(p.code, p.detail) for p in listed if isinstance(p.detail, str)]
    return d.prompt_token_ids, d.generation_token_ids, d.generation_log_probs, problems


def _lp(*tokens: tuple[str, float]) -> dict[str, Any]:
    return {
        "content": [
            {"token": t, "logprob": v, "bytes": None, "top_logprobs": []} for t, v in tokens
        ]
    }


# --- chat, JSON ------------------------------------------------------------------------


def test_vllm_return_token_ids() -> None:
    response = _chat({"token_ids": [13347, 0, 151645]}, prompt_token_ids=[151644, 872, 198])
    assert _tokens("chat", response) == ([151644, 872, 198], [13347, 0, 151645], None, [])


def test_vllm_token_id_logprobs_alone_give_ids_and_log_probs() -> None:
    response = _chat({"logprobs": _lp(("token_id:13347", -0.25), ("token_id:0", -1.5))})
    assert _tokens("chat", response) == (None, [13347, 0], [-0.25, -1.5], [])


def test_vllm_token_ids_and_token_id_logprobs_agree() -> None:
    response = _chat(
        {"token_ids": [7, 8], "logprobs": _lp(("token_id:7", -0.5), ("token_id:8", 0))},
        prompt_token_ids=[1, 2],
    )
    # an integer log-prob (0) is a JSON number: kept as the float 0.0
    assert _tokens("chat", response) == ([1, 2], [7, 8], [-0.5, 0.0], [])


def test_nemo_gym_message_fields_as_nemo_rl_takes_them_back() -> None:
    response = _chat({})
    response["choices"][0]["message"].update(
        prompt_token_ids=[5, 6, 7],
        generation_token_ids=[9, 10],
        generation_log_probs=[-0.125, -2.0],
    )
    assert _tokens("chat", response) == ([5, 6, 7], [9, 10], [-0.125, -2.0], [])


def test_openai_logprobs_without_ids() -> None:
    response = _chat({"logprobs": _lp(("Hi", -0.01), ("!", -0.3))})
    assert _tokens("chat", response) == (None, None, [-0.01, -0.3], [])


def test_no_token_fields_is_null_without_problems() -> None:
    assert _tokens("chat", _chat({"logprobs": None})) == (None, None, None, [])


@pytest.mark.parametrize(
    ("choice", "problem"),
    [
        (
            {"token_ids": [7, 8.0]},
            ("token_ids_invalid", "choices[0].token_ids[1]: a float, not a token id"),
        ),
        (
            {"token_ids": [7, "8"]},
            ("token_ids_invalid", "choices[0].token_ids[1]: a string, not a token id"),
        ),
        (
            {"token_ids": [True, 8]},
            ("token_ids_invalid", "choices[0].token_ids[0]: a boolean, not a token id"),
        ),
        (
            {"token_ids": [-1]},
            (
                "token_ids_invalid",
                "choices[0].token_ids[0]: out of range (0 .. 2^31-1), not a token id",
            ),
        ),
        (
            {"token_ids": [2**31]},
            (
                "token_ids_invalid",
                "choices[0].token_ids[0]: out of range (0 .. 2^31-1), not a token id",
            ),
        ),
        (
            {"token_ids": "7 8"},
            ("token_ids_invalid", "choices[0].token_ids: a string, not a list of ids"),
        ),
    ],
)
def test_a_bad_generated_id_nulls_the_field_and_names_it(
    choice: dict[str, Any], problem: tuple[str, str]
) -> None:
    response = _chat(choice, prompt_token_ids=[1, 2])
    assert _tokens("chat", response) == ([1, 2], None, None, [problem])


def test_a_bad_prompt_id_nulls_only_the_prompt() -> None:
    response = _chat({"token_ids": [7]}, prompt_token_ids=[1, 2.5])
    assert _tokens("chat", response) == (
        None,
        [7],
        None,
        [("token_ids_invalid", "prompt_token_ids[1]: a float, not a token id")],
    )


def test_a_log_prob_that_is_not_a_number() -> None:
    response = _chat({"logprobs": _lp(("a", -0.5), ("b", "-0.5"))})  # type: ignore[arg-type]
    assert _tokens("chat", response) == (
        None,
        None,
        None,
        [("log_probs_invalid", "choices[0].logprobs.content[].logprob[1]: a string, not a number")],
    )
    response = _chat({"logprobs": _lp(("a", True))})
    assert _tokens("chat", response)[3] == [
        ("log_probs_invalid", "choices[0].logprobs.content[].logprob[0]: a boolean, not a number")
    ]


def test_mismatched_lengths_null_both_generation_fields() -> None:
    response = _chat({"token_ids": [7, 8, 9], "logprobs": _lp(("x", -0.5), ("y", -0.5))})
    assert _tokens("chat", response) == (
        None,
        None,
        None,
        [("token_lengths_disagree", "generation_token_ids has 3, generation_log_probs 2")],
    )


def test_token_ids_and_token_id_logprobs_that_disagree() -> None:
    response = _chat(
        {"token_ids": [7, 8], "logprobs": _lp(("token_id:7", -0.5), ("token_id:9", -1))}
    )
    assert _tokens("chat", response) == (
        None,
        None,
        [-0.5, -1.0],
        [
            (
                "token_sources_disagree",
                "generation_token_ids: choices[0].token_ids and choices[0].logprobs.content[].token differ",
            )
        ],
    )


def test_token_id_logprobs_mixed_with_text_tokens() -> None:
    response = _chat({"logprobs": _lp(("token_id:7", -0.5), ("hello", -1))})
    assert _tokens("chat", response) == (
        None,
        None,
        [-0.5, -1.0],
        [
            (
                "token_ids_invalid",
                "choices[0].logprobs.content[].token[1]: a string, not a token id",
            )
        ],
    )


def test_two_choices_carry_no_token_fields() -> None:
    response = _chat({"token_ids": [7]}, prompt_token_ids=[1])
    response["choices"].append({"index": 1, "message": {"role": "assistant"}, "token_ids": [8]})
    assert _tokens("chat", response) == (
        None,
        None,
        None,
        [
            (
                "token_ids_ambiguous",
                "2 choices: token fields are kept for single-choice responses only",
            )
        ],
    )


def test_two_choices_without_token_fields_have_no_problem() -> None:
    response = _chat({})
    response["choices"].append({"index": 1, "message": {"role": "assistant"}})
    assert _tokens("chat", response) == (None, None, None, [])


# --- Responses, JSON --------------------------------------------------------------------


def _response(*output: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "completed", "output": list(output)}


def _message(*parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "content": list(parts), **extra}


def test_gym_fields_on_the_last_output_item() -> None:
    response = _response(
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "t"}]},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": "{}",
            "prompt_token_ids": [1, 2, 3],
            "generation_token_ids": [4, 5],
            "generation_log_probs": [-0.5, -0.75],
        },
    )
    assert _tokens("responses", response) == ([1, 2, 3], [4, 5], [-0.5, -0.75], [])


def test_two_output_items_with_gym_fields_are_ambiguous() -> None:
    fields = {"prompt_token_ids": [1], "generation_token_ids": [2], "generation_log_probs": [-1]}
    response = _response(_message(**fields), {"type": "function_call", **fields})
    assert _tokens("responses", response) == (
        None,
        None,
        None,
        [("token_ids_ambiguous", "2 output items (output[0], output[1], ...) carry token fields")],
    )


def test_openai_output_text_logprobs_of_every_part_in_order() -> None:
    response = _response(
        _message(
            {"type": "output_text", "text": "Hi", "logprobs": [{"token": "Hi", "logprob": -0.5}]},
            {
                "type": "output_text",
                "text": " there",
                "logprobs": [{"token": " there", "logprob": -0.25}],
            },
        ),
        _message({"type": "output_text", "text": "!", "logprobs": [{"token": "!", "logprob": -2}]}),
    )
    assert _tokens("responses", response) == (None, None, [-0.5, -0.25, -2.0], [])


def test_a_float_id_in_gym_fields() -> None:
    response = _response(
        _message(prompt_token_ids=[1], generation_token_ids=[2, 3.5], generation_log_probs=[-1, -1])
    )
    assert _tokens("responses", response) == (
        [1],
        None,
        [-1.0, -1.0],
        [("token_ids_invalid", "output[0].generation_token_ids[1]: a float, not a token id")],
    )


# --- streams: any chunk boundary gives the JSON twin's arrays ----------------------------


def _sse(events: list[Any], *, named: bool = False) -> bytes:
    out = b""
    for event in events:
        data = event if isinstance(event, bytes) else json.dumps(event).encode()
        head = (
            b"event: " + event["type"].encode() + b"\n"
            if named and isinstance(event, dict)
            else b""
        )
        out += head + b"data: " + data + b"\n\n"
    return out


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish, **extra}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [choice],
    }


# vLLM with return_token_ids and logprobs (return_tokens_as_token_ids): the first chunk
# carries the prompt ids; each content chunk the ids and log-probs of its delta.
_VLLM_STREAM = _sse(
    [
        {
            **_chunk({"role": "assistant", "content": ""}, token_ids=[]),
            "prompt_token_ids": [256, 117, 10, 72, 105],
        },
        _chunk(
            {"content": "H\u00e9"},
            token_ids=[72, 195, 169],
            logprobs=_lp(("token_id:72", -0.5), ("token_id:195", -0.25), ("token_id:169", -0.125)),
        ),
        _chunk({"content": "!"}, token_ids=[33], logprobs=_lp(("token_id:33", -1.0))),
        _chunk({}, "stop", token_ids=[257], logprobs=_lp(("token_id:257", -0.0625))),
        b"[DONE]",
    ]
)


def _stream_tokens(
    dialect: str, pieces: list[bytes]
) -> tuple[Any, Any, Any, list[tuple[str, str]]]:
    reassembler = StreamReassembler(dialect)
    for piece in pieces:
        reassembler.feed(piece)
    result = reassembler.finish()
    assert state_failures(result.dropped) == []
    return _tokens(dialect, result.response)


def _cut(body: bytes, positions: list[int]) -> list[bytes]:
    edges = sorted({p for p in positions if 0 < p < len(body)})
    return [body[a:b] for a, b in zip([0, *edges], [*edges, len(body)], strict=True)]


_VLLM_EXPECTED: tuple[Any, Any, Any, list[tuple[str, str]]] = (
    [256, 117, 10, 72, 105],
    [72, 195, 169, 33, 257],
    [-0.5, -0.25, -0.125, -1.0, -0.0625],
    [],
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(1, len(_VLLM_STREAM) - 1), max_size=30))
def test_vllm_stream_cut_anywhere(cuts: list[int]) -> None:
    assert _stream_tokens("chat", _cut(_VLLM_STREAM, cuts)) == _VLLM_EXPECTED


def test_vllm_stream_in_one_piece_and_byte_by_byte() -> None:
    assert _stream_tokens("chat", [_VLLM_STREAM]) == _VLLM_EXPECTED
    pieces = [_VLLM_STREAM[i : i + 1] for i in range(len(_VLLM_STREAM))]
    assert _stream_tokens("chat", pieces) == _VLLM_EXPECTED


def test_a_stream_chunk_whose_token_ids_is_not_a_list_is_reported() -> None:
    body = _sse(
        [
            {**_chunk({"content": "a"}, token_ids=[7]), "prompt_token_ids": [1]},
            _chunk({"content": "b"}, "stop", token_ids="8"),
            b"[DONE]",
        ]
    )
    assert _stream_tokens("chat", [body]) == (
        [1],
        None,
        None,
        [("token_ids_invalid", "choices[0].token_ids[1]: a string, not a token id")],
    )


def test_a_cut_stream_keeps_the_ids_that_arrived() -> None:
    body = _VLLM_STREAM[: _VLLM_STREAM.index(b'"!"')]
    assert _stream_tokens("chat", [body])[:3] == (
        [256, 117, 10, 72, 105],
        [72, 195, 169],
        [-0.5, -0.25, -0.125],
    )


_TEXT_EVENTS: list[Any] = [
    {
        "type": "response.created",
        "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []},
    },
    {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
    },
    {
        "type": "response.content_part.added",
        "output_index": 0,
        "content_index": 0,
        "item_id": "msg_1",
        "part": {"type": "output_text", "text": "", "annotations": []},
    },
    {
        "type": "response.output_text.delta",
        "output_index": 0,
        "content_index": 0,
        "item_id": "msg_1",
        "delta": "Hi",
        "logprobs": [{"token": "Hi", "logprob": -0.5, "top_logprobs": []}],
    },
    {
        "type": "response.output_text.delta",
        "output_index": 0,
        "content_index": 0,
        "item_id": "msg_1",
        "delta": "!",
        "logprobs": [{"token": "!", "logprob": -0.25, "top_logprobs": []}],
    },
]
_TEXT_STREAM = _sse(_TEXT_EVENTS, named=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(1, len(_TEXT_STREAM) - 1), max_size=30))
def test_a_cut_responses_stream_keeps_the_text_logprobs_in_order(cuts: list[int]) -> None:
    assert _stream_tokens("responses", _cut(_TEXT_STREAM, cuts)) == (None, None, [-0.5, -0.25], [])


def test_a_done_event_replaces_the_delta_logprobs() -> None:
    done = {
        "type": "response.output_text.done",
        "output_index": 0,
        "content_index": 0,
        "item_id": "msg_1",
        "text": "Hi!",
        "logprobs": [{"token": "Hi", "logprob": -0.5}, {"token": "!", "logprob": -0.375}],
    }
    body = _sse([*_TEXT_EVENTS, done], named=True)
    assert _stream_tokens("responses", [body]) == (None, None, [-0.5, -0.375], [])


_GYM_ITEM = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Hi!", "annotations": []}],
    "prompt_token_ids": [256, 117, 10],
    "generation_token_ids": [72, 105, 33, 257],
    "generation_log_probs": [-0.5, -0.25, -0.125, -1.0],
}
_GYM_STREAM = _sse(
    [
        *_TEXT_EVENTS[:3],
        {"type": "response.output_item.done", "output_index": 0, "item": _GYM_ITEM},
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "object": "response",
                "status": "completed",
                "output": [_GYM_ITEM],
            },
        },
    ],
    named=True,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(1, len(_GYM_STREAM) - 1), max_size=30))
def test_a_gym_responses_stream_cut_anywhere(cuts: list[int]) -> None:
    assert _stream_tokens("responses", _cut(_GYM_STREAM, cuts)) == (
        [256, 117, 10],
        [72, 105, 33, 257],
        [-0.5, -0.25, -0.125, -1.0],
        [],
    )


# --- on the record ----------------------------------------------------------------------


def test_the_record_carries_the_fields_and_its_problems_round_trip() -> None:
    response = _chat({"token_ids": [7, 8.0]}, prompt_token_ids=[1, 2])
    line = CaptureLine(model_call_id="c1", dialect="chat", request={}, response=response)
    record = build_model_call_record(line, 0)
    assert (record.prompt_token_ids, record.generation_token_ids, record.generation_log_probs) == (
        [1, 2],
        None,
        None,
    )
    assert record.derivation_problems == [
        ObservationGap(
            code="token_ids_invalid", detail="choices[0].token_ids[1]: a float, not a token id"
        )
    ]
    again = msgspec.json.decode(msgspec.json.encode(record), type=ModelCallRecord)
    assert again == record


def test_a_record_without_problems_omits_the_field() -> None:
    line = CaptureLine(model_call_id="c1", dialect="chat", request={}, response=_chat({}))
    encoded = json.loads(msgspec.json.encode(build_model_call_record(line, 0)))
    assert "derivation_problems" not in encoded
    assert encoded["prompt_token_ids"] is None


# A recorded OpenAI Responses stream with `include: ["message.output_text.logprobs"]`
# (pydantic-ai's test suite, in the licence-checked sample of tests/data/corpus).
_RECORDED = (
    Path(__file__).resolve().parents[1]
    / "data/corpus/streams/responses"
    / "pydantic-ai--test_openai_test_openai_instructions_with_responses_logprobs_streaming.sse"
)


def test_recorded_openai_stream_gives_the_final_responses_logprobs() -> None:
    # response.completed carries the server's rounded values; they are the ones kept
    expected = [-0.0, 0.0, 0.0, 0.0, -0.0, -7.5e-05, -5.4e-05, -2e-06, -0.0]
    assert _stream_tokens("responses", [_RECORDED.read_bytes()]) == (None, None, expected, [])


def test_recorded_openai_stream_cut_before_completion_keeps_the_delta_logprobs() -> None:
    body = _RECORDED.read_bytes()
    body = body[: body.index(b"event: response.output_text.done")]
    expected = [
        -1.9361264946837764e-07,
        0.0,
        0.0,
        0.0,
        -3.128163257315464e-07,
        -7.493430894101039e-05,
        -5.371605948312208e-05,
        -2.45848218582978e-06,
        -3.128163257315464e-07,
    ]
    assert _stream_tokens("responses", [body]) == (None, None, expected, [])


def test_an_integer_log_prob_too_big_for_a_float() -> None:
    response = _chat({"logprobs": _lp(("a", 10**400))})
    assert _tokens("chat", response)[2:] == (
        None,
        [
            (
                "log_probs_invalid",
                "choices[0].logprobs.content[].logprob[0]: an integer beyond a float, not a number",
            )
        ],
    )


_anything = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["token_id:7", "token_id:", "token_id:01", "x"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["token", "logprob", "content"]), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=_anything, ids=_anything, logprobs=_anything, message=_anything, n=st.integers(1, 2))
def test_any_value_in_any_token_field_gives_valid_fields_or_named_problems(
    prompt: Any, ids: Any, logprobs: Any, message: Any, n: int
) -> None:
    response = _chat({"token_ids": ids, "logprobs": logprobs}, prompt_token_ids=prompt)
    response["choices"][0]["message"]["generation_token_ids"] = message
    response["choices"] *= n
    for dialect, body in (
        ("chat", response),
        (
            "responses",
            _response(
                _message(
                    prompt_token_ids=prompt, generation_token_ids=ids, generation_log_probs=logprobs
                )
            ),
        ),
    ):
        d = derive_uncaught(dialect, None, body)
        for field in (d.prompt_token_ids, d.generation_token_ids):
            assert field is None or all(type(i) is int and 0 <= i < 2**31 for i in field)
        assert d.generation_log_probs is None or all(
            type(p) is float for p in d.generation_log_probs
        )
        if d.generation_token_ids is not None and d.generation_log_probs is not None:
            assert len(d.generation_token_ids) == len(d.generation_log_probs)
        listed = [] if d.derivation_problems is msgspec.UNSET else d.derivation_problems
        assert d.derivation_problems is msgspec.UNSET or listed  # never an empty list
        assert all(p.code.startswith(("token_", "log_probs_")) for p in listed)


def test_openai_empty_logprobs_lists_mean_none_were_returned() -> None:
    response = _response(_message({"type": "output_text", "text": "Hi", "logprobs": []}))
    assert _tokens("responses", response) == (None, None, None, [])
