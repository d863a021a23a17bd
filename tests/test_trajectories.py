"""Token trajectories: the chaining rule on hand-built records, a property over random
conversations, and a real five-turn rollout through the middleware on uvicorn with the
openai SDK against the demo server's vLLM mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CompletionsRollout
from model_call_capture import (
    CaptureConfig,
    ModelCallRecord,
    TokenTrajectory,
    build_token_trajectories,
    install_model_call_capture,
    read_model_call_records,
)
from model_call_capture import trajectories as trajectories_module
from model_call_capture.demo.model_server import create_app
from model_call_capture.store import CaptureStore
from servers import serve


def rec(
    call_id: str,
    prompt: list[int] | None,
    generation: list[int] | None,
    log_probs: list[float] | None = None,
    *,
    start: float | None = None,
    end: float | None = None,
    index: int = 0,
) -> ModelCallRecord:
    """A record with only what trajectories read; every other field unknown."""
    fields: dict[str, Any] = dict.fromkeys(ModelCallRecord.__struct_fields__)
    fields.update(
        model_call_id=call_id,
        call_index=index,
        tool_calls=[],
        capture_cut=False,
        derivation_problems=msgspec.UNSET,
        started_at=start,
        completed_at=end,
        prompt_token_ids=prompt,
        generation_token_ids=generation,
        generation_log_probs=log_probs,
    )
    return ModelCallRecord(**fields)


A = rec("A", [1, 2], [3, 4], [-0.5, -0.25], start=0.0, end=1.0, index=0)


def test_three_chained_calls_are_one_trajectory() -> None:
    b = rec("B", [1, 2, 3, 4, 9], [5], [-1.0], start=1.5, end=2.0, index=1)
    c = rec("C", [1, 2, 3, 4, 9, 5, 8, 8], [6, 7], None, start=2.5, end=3.0, index=2)
    assert build_token_trajectories([A, b, c], rollout_id="r-1") == [
        TokenTrajectory(
            rollout_id="r-1",
            model_call_ids=["A", "B", "C"],
            token_ids=[1, 2, 3, 4, 9, 5, 8, 8, 6, 7],
            loss_mask=[0, 0, 1, 1, 0, 1, 0, 0, 1, 1],
            log_probs=[None, None, -0.5, -0.25, None, -1.0, None, None, None, None],
            break_reasons=[],
        )
    ]


def test_a_rewritten_history_starts_a_new_trajectory_and_says_where() -> None:
    b = rec("B", [1, 2, 3, 7, 9], [5], None, start=1.5, end=2.0, index=1)
    first, second = build_token_trajectories([A, b])
    assert first.model_call_ids == ["A"] and first.break_reasons == []
    assert second.model_call_ids == ["B"]
    assert second.token_ids == [1, 2, 3, 7, 9, 5]
    assert second.loss_mask == [0, 0, 0, 0, 0, 1]
    assert second.break_reasons == [
        "history_rewritten: prompt of B differs from A prompt + generation at token 3"
    ]


def test_a_truncated_context_is_named() -> None:
    b = rec("B", [1, 2, 3], [5], None, start=1.5, end=2.0, index=1)
    assert build_token_trajectories([A, b])[1].break_reasons == [
        "prompt_shorter: prompt of B (3 tokens) is a prefix of A prompt + generation (4 tokens)"
    ]


def test_concurrent_sub_agents_form_separate_chains() -> None:
    p1 = rec("P1", [1], [2], start=0.0, end=1.0, index=0)
    s1 = rec("S1", [50, 51], [52], start=1.1, end=2.0, index=2)
    s2 = rec("S2", [60], [61], start=1.2, end=1.9, index=1)
    p2 = rec("P2", [1, 2, 70], [3], start=2.1, end=3.0, index=3)
    trajectories = build_token_trajectories([p1, s2, s1, p2])  # append order: completion order
    assert [t.model_call_ids for t in trajectories] == [["P1", "P2"], ["S1"], ["S2"]]
    assert [t.break_reasons for t in trajectories] == [
        [],
        ["history_rewritten: prompt of S1 differs from P1 prompt + generation at token 0"],
        [
            "concurrent: S2 started before S1 completed",
            "history_rewritten: prompt of S2 differs from P1 prompt + generation at token 0",
        ],
    ]
    assert trajectories[0].token_ids == [1, 2, 70, 3]
    assert trajectories[0].loss_mask == [0, 1, 0, 1]


def test_a_call_that_starts_before_the_chain_completed_never_continues_it() -> None:
    # Its prompt does extend the chain (a parallel sample of the same turn), but it was sent
    # before the chain's last call had returned: it cannot be that call's continuation.
    early = rec("X", [1, 2, 3, 4, 5], [6], start=0.5, end=1.5, index=1)
    assert build_token_trajectories([A, early])[1].break_reasons == [
        "concurrent: X started before A completed"
    ]


def test_the_longest_matching_chain_wins() -> None:
    short = rec("S", [1], [2], start=0.0, end=0.5, index=0)
    long = rec("L", [1, 2, 3], [4], start=0.6, end=1.0, index=1)
    rewritten = rec("R", [9], [9], start=1.1, end=1.2, index=2)
    nxt = rec("N", [1, 2, 3, 4, 5], [6], start=1.3, end=1.4, index=3)
    chains = [t.model_call_ids for t in build_token_trajectories([short, long, rewritten, nxt])]
    assert chains == [["S", "L", "N"], ["R"]]


def test_calls_without_token_ids_are_in_no_trajectory() -> None:
    no_prompt = rec("np", None, [7], start=1.1, end=1.2, index=1)
    no_generation = rec("ng", [1, 2, 3, 4], None, start=1.3, end=1.4, index=2)
    b = rec("B", [1, 2, 3, 4, 0], [5], start=1.5, end=2.0, index=3)
    (only,) = build_token_trajectories([A, no_prompt, no_generation, b])
    assert only.model_call_ids == ["A", "B"]


def test_calls_are_taken_in_the_order_they_started() -> None:
    b = rec("B", [1, 2, 3, 4, 9], [5], start=1.5, end=2.0, index=0)
    first = rec("A", [1, 2], [3, 4], start=0.0, end=1.0, index=1)
    (only,) = build_token_trajectories([b, first])
    assert only.model_call_ids == ["A", "B"]


def test_no_records_no_trajectories() -> None:
    assert build_token_trajectories([]) == []


def test_past_four_open_chains_the_rest_are_counted() -> None:
    calls = [rec(f"c{i}", [100 + i], [0], start=float(i), end=i + 0.5, index=i) for i in range(6)]
    last = build_token_trajectories(calls)[-1]
    assert last.break_reasons[-1] == "more: 1 earlier chains not continued either"
    assert len(last.break_reasons) == 5


# --- property: the loss mask gives back every call's generated ids ------------------------

_turns = st.tuples(
    st.booleans(),  # rewrite the history before this call?
    st.lists(st.integers(0, 999), max_size=6),  # tool / template tokens added to the prompt
    st.lists(st.integers(0, 999), max_size=6),  # generated ids
    st.booleans(),  # did the server give log-probs?
)


@settings(max_examples=200, deadline=None)
@given(turns=st.lists(_turns, min_size=1, max_size=12))
def test_masked_tokens_are_the_generated_ids_of_every_call(
    turns: list[tuple[bool, list[int], list[int], bool]],
) -> None:
    records: list[ModelCallRecord] = []
    expected_chains: list[list[int]] = []  # call indexes of each chain
    sequence: list[int] = []
    for i, (rewrite, added, generated, has_log_probs) in enumerate(turns):
        if rewrite or i == 0:
            # a fresh first token that no earlier sequence has: the history really differs
            prompt = [1000 + i, *added]
            expected_chains.append([i])
        else:
            prompt = sequence + added
            expected_chains[-1].append(i)
        log_probs = [-(k + 1) / 8 for k in range(len(generated))] if has_log_probs else None
        records.append(
            rec(f"c{i}", prompt, generated, log_probs, start=2.0 * i, end=2.0 * i + 1, index=i)
        )
        sequence = prompt + generated
    trajectories = build_token_trajectories(records)
    assert [t.model_call_ids for t in trajectories] == [
        [f"c{i}" for i in chain] for chain in expected_chains
    ]
    for trajectory, chain in zip(trajectories, expected_chains, strict=True):
        calls = [records[i] for i in chain]
        assert len(trajectory.token_ids) == len(trajectory.loss_mask) == len(trajectory.log_probs)
        last = calls[-1]
        assert trajectory.token_ids == (last.prompt_token_ids or []) + (
            last.generation_token_ids or []
        )
        masked = [t for t, m in zip(trajectory.token_ids, trajectory.loss_mask, strict=True) if m]
        assert masked == [t for c in calls for t in c.generation_token_ids or []]
        masked_log_probs = [
            p for p, m in zip(trajectory.log_probs, trajectory.loss_mask, strict=True) if m
        ]
        expected: list[float | None] = []
        for c in calls:
            generated = c.generation_token_ids or []
            expected += c.generation_log_probs or [None] * len(generated)
        assert masked_log_probs == expected
        unmasked = [
            p for p, m in zip(trajectory.log_probs, trajectory.loss_mask, strict=True) if not m
        ]
        assert set(unmasked) <= {None}


# --- a real rollout: middleware, uvicorn, the openai SDK, the demo's vLLM mode -------------

_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
_VLLM = {"return_token_ids": True, "logprobs": True, "return_tokens_as_token_ids": True}
IM_START, IM_END = 256, 257
# What the scripted model generates, written out here by hand: its text and tool call as
# the demo's chat template renders them (docs/formats.md, "the demo's vLLM mode").
TOOL_TURN = (
    "Let me check the weather for you \u2014 one moment."
    '<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n</tool_call>'
)
TEXT_TURN = "It is 18 \u00b0C with light rain in Paris: take a raincoat and an umbrella."


def _turn(client: openai.OpenAI, messages: list[Any], stream: bool) -> dict[str, Any]:
    """One chat call; the assistant message it produced, as a client sends it back."""
    if not stream:
        reply = client.chat.completions.create(
            model="demo-gpt", messages=messages, tools=[_TOOL], extra_body=_VLLM
        )
        return reply.choices[0].message.model_dump(exclude_none=True)
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in client.chat.completions.create(
        model="demo-gpt", messages=messages, tools=[_TOOL], stream=True, extra_body=_VLLM
    ):
        for choice in chunk.choices:
            text.append(choice.delta.content or "")
            for part in choice.delta.tool_calls or []:
                call = calls.setdefault(
                    part.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] = call["id"] or part.id or ""
                if part.function is not None:
                    call["function"]["name"] += part.function.name or ""
                    call["function"]["arguments"] += part.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def _rollout(
    tmp_path: Path, rollout_id: str, *, rewrite_after: int | None = None
) -> list[ModelCallRecord]:
    """Five turns of a tool-using chat (JSON and streamed alternately); the rollout's records."""
    config = CaptureConfig(observability_enabled=True, model_call_capture_dir=str(tmp_path))
    app = install_model_call_capture(create_app(), config, model_server_name="policy")
    with serve(app) as server:
        client = openai.OpenAI(
            base_url=f"{server.url}/ng-rollout/{rollout_id}/v1", api_key="k", max_retries=0
        )
        messages: list[Any] = [{"role": "user", "content": "What should I wear in Paris today?"}]
        follow_ups = ["And tomorrow?", "One word?"]
        for turn in range(5):
            if turn == rewrite_after:
                messages[0] = {"role": "user", "content": "What should I wear in Rome today?"}
            message = _turn(client, messages, stream=turn % 2 == 1)
            messages.append(message)
            for call in message.get("tool_calls") or []:
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": "18 C, rain"}
                )
            if not message.get("tool_calls"):
                messages.append({"role": "user", "content": follow_ups.pop(0)})
        client.close()
    return read_model_call_records(CaptureStore(tmp_path), rollout_id)


def _utf8(text: str) -> list[int]:
    return list(text.encode())


def test_a_five_turn_tool_rollout_is_one_trajectory(tmp_path: Path) -> None:
    records = _rollout(tmp_path, "r-5")
    assert len(records) == 5 and all(r.derivation_problems is msgspec.UNSET for r in records)
    (trajectory,) = build_token_trajectories(records, rollout_id="r-5")
    last = records[-1]
    assert trajectory.rollout_id == "r-5"
    assert trajectory.model_call_ids == [r.model_call_id for r in records]
    assert trajectory.break_reasons == []
    assert trajectory.token_ids == (last.prompt_token_ids or []) + (last.generation_token_ids or [])
    # the template of the first prompt: the tools block opens it
    assert trajectory.token_ids[:16] == [IM_START, *_utf8("system\n# Tools\n")]
    # the generated spans, exactly: tool call, text, tool call, text, tool call
    generated = [t for t, m in zip(trajectory.token_ids, trajectory.loss_mask, strict=True) if m]
    turns = [TOOL_TURN, TEXT_TURN, TOOL_TURN, TEXT_TURN, TOOL_TURN]
    assert generated == [t for text in turns for t in (*_utf8(text), IM_END)]
    # each span where its call's prompt ended, nothing else masked
    spans = set()
    for record in records:
        start = len(record.prompt_token_ids or [])
        spans |= set(range(start, start + len(record.generation_token_ids or [])))
    assert [i for i, m in enumerate(trajectory.loss_mask) if m] == sorted(spans)
    # the demo's scripted log-probs, -(1 + (id + position) % 16) / 64, on generated tokens only
    for record in records:
        start = len(record.prompt_token_ids or [])
        for position, token in enumerate(record.generation_token_ids or []):
            assert trajectory.log_probs[start + position] == -(1 + (token + position) % 16) / 64
    assert sum(p is not None for p in trajectory.log_probs) == len(generated)


def test_a_rewritten_history_breaks_the_rollout_in_two(tmp_path: Path) -> None:
    records = _rollout(tmp_path, "r-rw", rewrite_after=2)
    first, second = build_token_trajectories(records, rollout_id="r-rw")
    ids = [r.model_call_id for r in records]
    assert first.model_call_ids == ids[:2]
    assert second.model_call_ids == ids[2:]
    (reason,) = second.break_reasons
    # "Paris" became "Rome" in the first user message: they differ at its first letter
    prompt = records[2].prompt_token_ids or []
    position = prompt.index(ord("R"))
    assert reason == (
        f"history_rewritten: prompt of {ids[2]} differs from {ids[1]} prompt + generation at token {position}"
    )


@pytest.mark.parametrize("stream", [False, True])
def test_the_demo_vllm_mode_is_consistent_call_by_call(tmp_path: Path, stream: bool) -> None:
    config = CaptureConfig(observability_enabled=True, model_call_capture_dir=str(tmp_path))
    app = install_model_call_capture(create_app(), config, model_server_name="policy")
    with serve(app) as server:
        client = openai.OpenAI(
            base_url=f"{server.url}/ng-rollout/one/v1", api_key="k", max_retries=0
        )
        _turn(client, [{"role": "user", "content": "Hi"}], stream)
        client.close()
    (record,) = read_model_call_records(CaptureStore(tmp_path), "one")
    tools_block = [
        IM_START,
        *_utf8("system\n# Tools\n" + msgspec.json.encode(_TOOL).decode()),
        IM_END,
        10,
    ]
    user = [IM_START, *_utf8("user\nHi"), IM_END, 10]
    assert record.prompt_token_ids == [*tools_block, *user, IM_START, *_utf8("assistant\n")]
    assert record.generation_token_ids == [*_utf8(TOOL_TURN), IM_END]
    assert record.tokens_in == len(record.prompt_token_ids)


def test_log_probs_of_another_length_than_the_ids_are_not_placed() -> None:
    # Derivation never gives such a record; one built by hand must not shift the arrays.
    (only,) = build_token_trajectories([rec("H", [1], [2, 3], [-0.5], start=0.0, end=1.0)])
    assert only.log_probs == [None, None, None]
    assert len(only.token_ids) == len(only.loss_mask) == 3


# --- cost: many chains in one rollout ---------------------------------------------------


class CountedTime(float):
    """A timestamp that counts how often a later one is compared with it."""

    compared = 0

    def __gt__(self, other: object) -> bool:
        CountedTime.compared += 1
        return float(self) > other  # type: ignore[operator]


class CountedId(int):
    """A token id that counts how often it is compared."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        CountedId.compared += 1
        return int(self) == other

    def __ne__(self, other: object) -> bool:
        CountedId.compared += 1
        return int(self) != other

    __hash__ = int.__hash__


def test_many_concurrent_calls_are_not_each_checked_against_every_chain() -> None:
    # 1,000 parallel calls of one rollout (sub-agents): each starts its own chain. Every
    # call used to be checked against every chain: N * N / 2 comparisons of when a chain
    # completed with when the call started (10,000 calls took 9.6 s, 40,000 minutes).
    n = 1000
    CountedTime.compared = 0
    calls = [
        rec(f"c{i}", [1, 2, 3], [4], start=CountedTime(0.0), end=CountedTime(1.0), index=i)
        for i in range(n)
    ]
    trajectories = build_token_trajectories(calls)
    assert [t.model_call_ids for t in trajectories] == [[f"c{i}"] for i in range(n)]
    assert trajectories[-1].break_reasons[0] == "concurrent: c999 started before c998 completed"
    assert trajectories[-1].break_reasons[-1] == "more: 995 earlier chains not continued either"
    assert CountedTime.compared <= 80 * n


def test_many_chains_that_look_alike_at_both_ends_are_not_each_compared() -> None:
    # Prompts of one length that share their first and last token pass the cheap check
    # at both ends; each call then compared its prompt with every earlier chain.
    n, length = 1000, 50
    CountedId.compared = 0
    calls = []
    for i in range(n):
        prompt: list[int] = [CountedId(7), *[CountedId(8 + i) for _ in range(length)], CountedId(7)]
        calls.append(rec(f"c{i}", prompt, [], start=2.0 * i, end=2.0 * i + 1, index=i))
    follow = [*calls[500].prompt_token_ids, CountedId(9)]  # type: ignore[misc]
    calls.append(rec("next", follow, [1], start=2.0 * n, end=2.0 * n + 1, index=n))
    trajectories = build_token_trajectories(calls)
    assert len(trajectories) == n
    assert trajectories[500].model_call_ids == ["c500", "next"]
    assert CountedId.compared <= 100 * n


_calls = st.lists(
    st.tuples(
        st.integers(0, 6),  # which earlier sequence the prompt starts from (past the end: none)
        st.lists(st.integers(0, 3), max_size=3),  # ids added to it
        st.lists(st.integers(0, 3), max_size=2),  # generated ids
        st.sampled_from([0.0, 0.5, 1.0, 2.0]),  # time since the previous call started
        st.sampled_from([0.25, 1.0, 3.0]),  # duration
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(calls=_calls)
def test_filed_chains_are_found_as_if_each_was_checked(
    calls: list[tuple[int, list[int], list[int], float, float]],
) -> None:
    # Past `_INDEX_FROM` chains a call looks chains up by digest; from the first chain
    # on, that must give what checking each chain against each call gives.
    records, sequences, start = [], [[]], 0.0  # type: ignore[var-annotated]
    for i, (source, added, generated, after, duration) in enumerate(calls):
        start += after
        base = sequences[source] if source < len(sequences) else [9]
        prompt = [*base, *added]
        records.append(rec(f"c{i}", prompt, generated, start=start, end=start + duration, index=i))
        sequences.append(prompt + generated)
    plain = build_token_trajectories(records)
    index_from = trajectories_module._INDEX_FROM
    trajectories_module._INDEX_FROM = 0
    try:
        filed = build_token_trajectories(records)
    finally:
        trajectories_module._INDEX_FROM = index_from
    assert filed == plain


def test_a_token_in_token_out_completions_rollout_is_one_trajectory(
    completions_rollout: CompletionsRollout,
) -> None:
    rollout = completions_rollout
    records = read_model_call_records(CaptureStore(rollout.directory), rollout.rollout_id)
    # the record holds what the client saw, JSON or streamed, with or without echo
    assert [
        (r.dialect, r.prompt_token_ids, r.generation_token_ids, r.generation_log_probs)
        for r in records
    ] == [("completions", *seen) for seen in rollout.seen]
    assert all(r.derivation_problems is msgspec.UNSET for r in records)
    (trajectory,) = build_token_trajectories(records, rollout_id=rollout.rollout_id)
    assert trajectory.model_call_ids == [r.model_call_id for r in records]
    assert trajectory.break_reasons == []
    prompt, generated, _ = rollout.seen[-1]
    assert trajectory.token_ids == prompt + generated
    # exactly the generated spans are masked: the answer and <|im_end|>, four times
    answer = [*_utf8(TEXT_TURN), IM_END]
    masked = [t for t, m in zip(trajectory.token_ids, trajectory.loss_mask, strict=True) if m]
    assert masked == answer * 4
    spans = set()
    for seen_prompt, seen_ids, _ in rollout.seen:
        spans |= set(range(len(seen_prompt), len(seen_prompt) + len(seen_ids)))
    assert [i for i, m in enumerate(trajectory.loss_mask) if m] == sorted(spans)
    values = [v for seen in rollout.seen for v in seen[2]]
    assert [v for v in trajectory.log_probs if v is not None] == values
