"""Streams shaped to make reassembly quadratic cost linear work (chat, Completions, Responses).

The stream states run on the model server's event loop as chunks pass, so a model (or an
upstream) that sends many fragments of one vendor field, many indexed list entries or
many tool calls without an index must not make each fragment cost the size of all before
it. Timing is not asserted here (noise; figures belong to benchmarks): each test counts
the work itself, with values whose `+`, `==` or hash count what the state does to them,
or with the one copy a build may make, so the count is exact and the same on any machine.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from model_call_capture.dialects.base import DroppedNotes
from model_call_capture.dialects.chat._choice import ChoiceState
from model_call_capture.dialects.completions import new_stream_state as completions_state
from model_call_capture.dialects.responses import _items
from model_call_capture.reassembly import StreamReassembler

N = 2_000


class CopiedText(str):
    """A fragment that counts the characters every concatenation with it copies."""

    copied = 0

    def __add__(self, other: str) -> str:
        CopiedText.copied += len(self) + len(other)
        return str.__add__(self, other)

    def __radd__(self, other: str) -> str:
        CopiedText.copied += len(other) + len(self)
        return str.__add__(other, self)


class ComparedIndex(int):
    """An `index` that counts how often it is compared."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        ComparedIndex.compared += 1
        return int(self) == other

    __hash__ = int.__hash__


class HashedId(str):
    """A tool call id that counts how often it is hashed."""

    hashed = 0

    def __hash__(self) -> int:
        HashedId.hashed += 1
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


def test_many_fragments_of_a_merged_member_are_joined_once() -> None:
    # `content` under a vendor object of the delta is concatenated by the merge rule; it
    # used to be rebuilt at each fragment (`old + value`): N fragments of 10 characters
    # copied about 10 * N * N / 2 characters (20 million here; a 22 MB stream took 20 s).
    CopiedText.copied = 0
    choice = ChoiceState(0)
    for _ in range(N):
        choice.feed(
            {"index": 0, "delta": {"audio": {"content": CopiedText("0123456789")}}}, DroppedNotes()
        )
    message = choice.build()["message"]
    assert message["audio"] == {"content": "0123456789" * N}
    assert type(message["audio"]["content"]) is str
    assert CopiedText.copied <= 2 * 10 * N


class CopiedList(list[Any]):
    """A list fragment that counts the entries every `+` with it copies (`old + new`)."""

    copied = 0

    def __add__(self, other: Any) -> Any:
        CopiedList.copied += len(self) + len(other)
        return list(self) + list(other)

    def __radd__(self, other: Any) -> Any:  # taken before list's `+` (a subclass of it)
        CopiedList.copied += len(other) + len(self)
        return list(other) + list(self)


def test_many_completions_chunks_of_one_choice_copy_nothing_already_joined() -> None:
    # A Completions choice grows by its text, its token ids and its log-prob lists in every
    # chunk: rebuilt at each chunk (`old + new`), N chunks copy about N * N / 2 entries.
    # The state is fed parsed chunks here: JSON text cannot carry the counting types.
    CopiedText.copied = CopiedList.copied = 0
    state = completions_state()
    choice = state.choices  # built by the first chunk below
    for n in range(N):
        fragment = {
            "index": 0,
            "text": CopiedText("0123456789"),
            "token_ids": CopiedList([n]),
            "logprobs": {"tokens": CopiedList(["t"]), "token_logprobs": CopiedList([-1.0])},
        }
        if n == 0:
            state._chunk({"choices": [fragment]})
        else:
            choice[0].feed(fragment, DroppedNotes())
    built = state.result().response
    assert built is not None
    assert built["choices"][0]["text"] == "0123456789" * N
    assert built["choices"][0]["token_ids"] == list(range(N))
    assert len(built["choices"][0]["logprobs"]["token_logprobs"]) == N
    assert CopiedText.copied == CopiedList.copied == 0


def test_many_entries_of_an_indexed_list_are_found_by_index() -> None:
    # Each entry with a new `index` used to be compared with every entry before it.
    ComparedIndex.compared = 0
    choice = ChoiceState(0)
    for i in range(N):
        choice.feed(
            {"index": 0, "delta": {"images": [{"index": ComparedIndex(i), "url": "u"}]}},
            DroppedNotes(),
        )
    for i in range(N):  # and again: each merges into its own entry
        choice.feed(
            {"index": 0, "delta": {"images": [{"index": ComparedIndex(i), "x": 1}]}}, DroppedNotes()
        )
    images = choice.build()["message"]["images"]
    assert type(images) is list
    assert images == [{"index": i, "url": "u", "x": 1} for i in range(N)]
    assert ComparedIndex.compared <= 4 * N


def test_many_tool_calls_without_an_index_are_told_apart_by_id() -> None:
    # A call without `index` continues the last call unless its id is new; the ids of all
    # calls used to be gathered again for each fragment.
    HashedId.hashed = 0
    choice = ChoiceState(0)
    calls = [{"id": HashedId(f"call_{i}"), "function": {"name": "f"}} for i in range(N)]
    choice.feed({"index": 0, "delta": {"tool_calls": calls}}, DroppedNotes())
    choice.feed(
        {"index": 0, "delta": {"tool_calls": [{"function": {"arguments": "{}"}}]}}, DroppedNotes()
    )
    built = choice.build()["message"]["tool_calls"]
    assert [c["id"] for c in built] == [f"call_{i}" for i in range(N)]
    assert [c["function"]["arguments"] for c in built] == [""] * (N - 1) + ["{}"]
    assert HashedId.hashed <= 4 * N


def test_a_tool_call_whose_id_changes_is_found_by_its_new_id() -> None:
    # The ids are counted as they change, not gathered again: the rule is the same. A
    # fragment with a known id continues the last call; a number replaces a string id.
    choice = ChoiceState(0)
    for fragment in ({"id": 7}, {"id": "b"}, {"id": 7, "type": "x"}, {"id": "b"}):
        choice.feed({"index": 0, "delta": {"tool_calls": [fragment]}}, DroppedNotes())
    built = choice.build()["message"]["tool_calls"]
    assert [(c["id"], c["type"]) for c in built] == [(7, "function"), (7, "x"), ("b", "function")]


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


@pytest.mark.parametrize("kind", ["content_part", "shell_command"])
def test_many_parts_of_a_responses_item_are_placed_with_one_copy(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The build placed each part with a copy of the list so far: N parts, N copies of up to
    # N entries (a 7 MB stream of 40,000 parts took 2 s, 64 MB would take minutes).
    copies: list[int] = []

    class CountingMeta(type):
        """`list` as the module sees it: the same type to `isinstance`, counted when called."""

        def __instancecheck__(cls, value: object) -> bool:
            return isinstance(value, list)

        def __call__(cls, *args: Any) -> list[Any]:
            copies.append(1)
            return list(*args)

    class CountingList(metaclass=CountingMeta):
        pass

    monkeypatch.setattr(_items, "list", CountingList, raising=False)
    body = _event(
        "response.created",
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
    )
    if kind == "content_part":
        item: dict[str, Any] = {"id": "m", "type": "message", "role": "assistant", "content": []}
        events = [
            _event(
                "response.content_part.added",
                {
                    "type": "response.content_part.added",
                    "output_index": 0,
                    "item_id": "m",
                    "content_index": i,
                    "part": {"type": "output_text", "text": f"{i}"},
                },
            )
            for i in range(N)
        ]
    else:
        item = {"id": "s", "type": "shell_call", "action": {"commands": []}}
        events = [
            _event(
                "response.shell_call_command.delta",
                {
                    "type": "response.shell_call_command.delta",
                    "output_index": 0,
                    "item_id": "s",
                    "command_index": i,
                    "delta": f"{i}",
                },
            )
            for i in range(N)
        ]
    body += _event(
        "response.output_item.added",
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    )
    reassembler = StreamReassembler("responses")
    reassembler.feed(body + b"".join(events))
    result = reassembler.finish()
    assert result.dropped == []
    response = result.response
    assert response is not None
    (built,) = response["output"]
    if kind == "content_part":
        assert [p["text"] for p in built["content"]] == [f"{i}" for i in range(N)]
    else:
        assert built["action"]["commands"] == [f"{i}" for i in range(N)]
    assert len(copies) <= 4
