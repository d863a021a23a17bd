"""A rollout as the conversation it was: the one place that turns records into turns.

Each call's request carries the whole history so far; a person wants each turn once.
So a call shows the turns of its request that the previous call had not already shown
(its request, then its response), then its own response; a request that does not
continue that history (a retry with another prompt, a second conversation) is shown
from where it parts from it, with a note. A request of one part (a completion prompt,
text or token ids) that is the last call's prompt and answer plus more is shown from
where it goes on (`_continued.Continued`). The dialects say what a request and a response
hold (`DialectModule.request_turns` / `response_turns`); this module only diffs and caps.

Both views read this: the web page (as JSON, `/api/rollouts/<id>`) and `mcc show`.
A call's system prompt (its request's leading `system` / `developer` turns) and the tools
it offers are its setup (`SetupView`): shown once, for the first call, and again on each
call whose setup differs from the call before; not among the call's input turns.

What a page holds is capped (`Limits`): a huge rollout or a huge turn is cut, with a
note saying how much was left out, so memory stays bounded by the caps and one call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from .. import _codec
from ..contracts import ModelCallRecord, ObservationGap
from ..dialects import DIALECTS
from ..dialects.base import Part, StatedError, Tool, Turn, stated_error
from ..reassembly import StreamReassembler
from ._continued import Continued
from ._entries import Call, DamagedLine

__all__ = [
    "CallView",
    "Conversation",
    "Limits",
    "PartView",
    "SetupView",
    "ToolView",
    "TurnView",
    "build_conversation",
    "pretty_json",
]


@dataclass(frozen=True, slots=True)
class Limits:
    """How much one page shows."""

    calls: int = 2000
    """Calls shown; later calls are counted in a note."""
    part_chars: int = 20_000
    """Characters of one text, reasoning, tool argument or result shown."""
    total_chars: int = 4_000_000
    """Characters of captured text shown over the whole page; past it, parts are cut short."""
    cut_part_chars: int = 200
    """Characters of a part shown once the page's total is spent."""
    parts: int = 50_000
    """Parts (texts, tool calls, results, ...) shown over the whole page; later ones are counted."""
    tools: int = 200
    """Tool definitions shown of one request; the others are counted."""


class PartView(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One piece of a turn as shown (`dialects.base.Part`, capped)."""

    kind: str
    text: str = ""
    name: str | None = None
    call_id: str | None = None
    arguments: str | None = None
    """A tool call's arguments, indented when they are JSON."""
    error: bool = False
    answers: str | None = None
    """For a tool result: the name of the tool call it answers, when that call was seen."""
    cut: int = 0
    """Characters left out of `text` / `arguments` by the page's caps."""


class TurnView(msgspec.Struct, kw_only=True):
    """One turn as shown."""

    role: str
    parts: list[PartView]


class ToolView(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One tool a request offers (`dialects.base.Tool`, capped)."""

    name: str | None = None
    kind: str = "function"
    description: str = ""
    parameters: str | None = None
    """Its input schema, indented when it is JSON."""
    cut: int = 0
    """Characters left out of `description` / `parameters` by the page's caps."""


class SetupView(msgspec.Struct, kw_only=True):
    """What a request sets up before the conversation: its system prompt and its tools."""

    system: list[TurnView]
    """The request's leading `system` / `developer` turns (Responses' `instructions`,
    Messages' `system`)."""
    tools: list[ToolView]
    tools_left_out: int = 0
    """Tools not shown (`Limits.tools`)."""


class CallView(msgspec.Struct, kw_only=True, tag="call", tag_field="kind"):
    """One model call: its figures, the turns it added, and its output."""

    index: int
    """`call_index`: the line's position in the file."""
    model_call_id: str | None
    dialect: str | None
    model: str | None
    status_code: int | None
    error_category: str | None
    finish_reason: str | None
    response_status: str | None
    tokens_in: int | None
    tokens_out: int | None
    tokens_reasoning: int | None
    cached_tokens: int | None
    started_at: float | None
    completed_at: float | None
    latency_ms: float | None
    ttft_ms: float | None
    capture_cut: bool
    stream: bool | None
    """The response was a stream (None: the line does not say)."""
    gaps: list[ObservationGap]
    """What the capture left out of this call's line or replaced, and why."""
    raw_stream: bool
    """The raw stream text (or raw body) was kept: the raw tab shows it."""
    input: list[TurnView]
    """The turns of the request not shown before (the whole request for the first call)."""
    input_note: str | None
    """How the request relates to the history before it, when it does not simply continue it."""
    output: list[TurnView]
    error: StatedError | None = None
    """The error the call got, as its API stated it (the reply's or the stream's error
    object; a body that is not JSON is its message). The HTTP status is `status_code`."""
    setup: SetupView | None = None
    """This call's setup, when it differs from the call before's (the first call's is the
    conversation's `setup`)."""
    setup_note: str | None = None
    """What changed: `the system prompt`, `the tools`, or both."""


class Conversation(msgspec.Struct, kw_only=True):
    """A rollout as a person reads it: calls and damaged lines in file order."""

    rollout_id: str
    items: list[CallView | DamagedLine]
    calls: int
    """Readable calls in the file (shown or not)."""
    damaged: int
    incomplete: bool
    """The rollout is marked incomplete: a capture of it failed."""
    notes: list[str]
    """What the page left out, and why."""
    setup: SetupView | None = None
    """The first call's system prompt and tools; None when it has neither."""


def pretty_json(text: str) -> str:
    """JSON text indented for reading; any other text as it is."""
    try:
        value = _codec.decode(text)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return text
    if not isinstance(value, (dict, list)):
        return text
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except RecursionError:  # the indenting encoder recurses in Python: deep JSON stays as sent
        return text


def _key(turn: Turn) -> int:
    """What makes two turns the same turn (reasoning aside: clients often do not send it back)."""
    return hash(
        (
            turn.role,
            tuple(
                (p.kind, p.text, p.name, p.call_id, p.arguments)
                for p in turn.parts
                if p.kind != "reasoning"
            ),
        )
    )


def _call_error(record: ModelCallRecord, stream: bool | None) -> StatedError | None:
    """What the API said went wrong: from the reply, else (a call that failed) from the
    stream's error event or a reply that is not JSON, both kept in `response_raw`."""
    found = stated_error(record.response)
    if found is not None or record.error_category is None:
        return found
    raw = record.response_raw
    if not isinstance(raw, str) or not raw.strip():
        return None
    if not stream:
        return StatedError(message=" ".join(raw[:2000].split()))
    if record.dialect not in DIALECTS:
        return None
    reassembler = StreamReassembler(record.dialect)
    reassembler.feed(raw.encode())
    result = reassembler.finish()
    return stated_error(result.error, event=True) or stated_error(result.response)


def _tools(record: ModelCallRecord) -> list[Tool]:
    module = DIALECTS.get(record.dialect) if record.dialect is not None else None
    if module is None:
        return []
    try:
        return module.request_tools(record.request)
    except Exception:  # a bug in a dialect must not hide the rest of the rollout
        return [Tool(None, kind="?", description="(these tools could not be read)")]


def _setup_turns(request: list[Turn]) -> int:
    """How many of the request's first turns are its system prompt."""
    count = 0
    for turn in request:
        if turn.role not in ("system", "developer"):
            break
        count += 1
    return count


def _turns(record: ModelCallRecord) -> tuple[list[Turn], list[Turn]]:
    module = DIALECTS.get(record.dialect) if record.dialect is not None else None
    if module is None:
        return [], []
    try:
        request = module.request_turns(record.request)
    except Exception:  # a bug in a dialect must not hide the rest of the rollout
        request = [Turn("?", [Part("other", "(this request could not be read as turns)")])]
    try:
        response = module.response_turns(record.response)
    except Exception:
        response = [Turn("?", [Part("other", "(this response could not be read as turns)")])]
    return request, response


class _Builder:
    """Accumulates the page: the shown history's keys, tool names, the character budget."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.continued = Continued()
        self.history: list[int] = []
        self.budget = limits.total_chars
        self.tool_names: dict[str, str] = {}
        self.cut_parts = 0
        self.parts_left = limits.parts
        self.dropped_parts = 0
        self.first_setup: SetupView | None = None
        self.setup_keys: tuple[int, int] | None = None  # the last call's system prompt, tools

    def _cap(self, text: str) -> tuple[str, int]:
        limit = self.limits.part_chars if self.budget > 0 else self.limits.cut_part_chars
        shown = text[:limit]
        self.budget -= len(shown)
        if len(shown) < len(text):
            self.cut_parts += 1
        return shown, len(text) - len(shown)

    def part(self, part: Part) -> PartView:
        text, cut = self._cap(part.text)
        arguments = None
        if part.arguments is not None:
            arguments, more = self._cap(pretty_json(part.arguments))
            cut += more
        answers = None
        if part.kind == "tool_call" and part.call_id and part.name:
            if len(self.tool_names) < 10_000:
                self.tool_names[part.call_id] = part.name
        elif part.kind == "tool_result" and part.call_id:
            answers = self.tool_names.get(part.call_id)
        return PartView(
            kind=part.kind,
            text=text,
            name=part.name,
            call_id=part.call_id,
            arguments=arguments,
            error=part.error,
            answers=answers,
            cut=cut,
        )

    def turns(self, turns: list[Turn]) -> list[TurnView]:
        shown = []
        for turn in turns:
            if self.parts_left < len(turn.parts):
                self.dropped_parts += len(turn.parts) - max(self.parts_left, 0)
            parts = [self.part(p) for p in turn.parts[: max(self.parts_left, 0)]]
            self.parts_left -= len(parts)
            if parts or not turn.parts:
                shown.append(TurnView(role=turn.role, parts=parts))
        return shown

    def tool(self, tool: Tool) -> ToolView:
        description, cut = self._cap(tool.description)
        parameters = None
        if tool.parameters is not None:
            parameters, more = self._cap(pretty_json(tool.parameters))
            cut += more
        name, kind = (t[: self.limits.cut_part_chars] for t in (tool.name or "", tool.kind))
        return ToolView(
            name=name or None, kind=kind, description=description, parameters=parameters, cut=cut
        )

    def setup(self, system: list[Turn], tools: list[Tool]) -> tuple[SetupView | None, str | None]:
        """The call's setup when it differs from the last call's (or is the first), and what changed."""
        keys = (
            hash(tuple(_key(t) for t in system)),
            hash(tuple((t.name, t.kind, t.description, t.parameters) for t in tools)),
        )
        last, self.setup_keys = self.setup_keys, keys
        if last == keys or (last is None and not system and not tools):
            return None, None
        shown = self.limits.tools
        view = SetupView(
            system=self.turns(system),
            tools=[self.tool(t) for t in tools[:shown]],
            tools_left_out=max(len(tools) - shown, 0),
        )
        if last is None:
            self.first_setup = view
            return None, None
        changed = [
            w
            for w, a, b in zip(("the system prompt", "the tools"), last, keys, strict=True)
            if a != b
        ]
        return view, " and ".join(changed) + " changed"

    def call(self, call: Call) -> CallView:
        record = call.record
        request, response = _turns(record)
        system = _setup_turns(request)
        setup, setup_note = self.setup(request[:system], _tools(record))
        keys = [_key(t) for t in request]
        shared = 0
        for mine, seen in zip(keys, self.history, strict=False):
            if mine != seen:
                break
            shared += 1
        note = None
        if self.history and shared < len(self.history) and shared < len(keys):
            if shared == 0:
                note = "this request does not continue the history above"
            else:
                which = "its first turn" if shared == 1 else f"{shared} turns"
                note = f"this request parts from the history above after {which}"
        elif self.history and shared == len(keys):
            which = "the first turn" if shared == 1 else f"the first {shared} turns"
            note = f"no new input: this request sends {which} above again"
        new = request[max(shared, system) :]
        if shared == 0 and self.history and (cut := self.continued.cut(request)) is not None:
            new, note = cut
        self.continued.remember(request, response, record.generation_token_ids)
        self.history = keys + [_key(t) for t in response]
        return CallView(
            index=record.call_index,
            model_call_id=record.model_call_id,
            dialect=record.dialect,
            model=record.model,
            status_code=record.status_code,
            error_category=record.error_category,
            finish_reason=record.finish_reason,
            response_status=record.response_status,
            tokens_in=record.tokens_in,
            tokens_out=record.tokens_out,
            tokens_reasoning=record.tokens_reasoning,
            cached_tokens=record.cached_tokens,
            started_at=record.started_at,
            completed_at=record.completed_at,
            latency_ms=record.latency_total_ms,
            ttft_ms=record.latency_ttft_ms,
            capture_cut=record.capture_cut,
            stream=call.stream,
            gaps=call.gaps,
            raw_stream=record.response_raw is not None or record.request_raw is not None,
            input=self.turns(new),
            input_note=note,
            output=self.turns(response),
            error=_call_error(record, call.stream),
            setup=setup,
            setup_note=setup_note,
        )


def build_conversation(
    rollout_id: str,
    entries: Iterable[Call | DamagedLine],
    *,
    incomplete: bool = False,
    limits: Limits | None = None,
) -> Conversation:
    """The conversation of a rollout from its calls and damaged lines (`Entries`), in file order."""
    limits = limits or Limits()
    builder = _Builder(limits)
    items: list[CallView | DamagedLine] = []
    calls = damaged = left_out = 0
    for entry in entries:
        if isinstance(entry, DamagedLine):
            damaged += 1
            if len(items) < limits.calls * 2:
                items.append(entry)
            continue
        calls += 1
        if calls > limits.calls:
            left_out += 1
            continue
        items.append(builder.call(entry))
    notes = []
    if left_out:
        notes.append(f"{left_out} later calls not shown (a page shows {limits.calls})")
    if builder.dropped_parts:
        notes.append(
            f"{builder.dropped_parts} parts of turns not shown (a page shows {limits.parts})"
        )
    if builder.cut_parts:
        notes.append(f"{builder.cut_parts} long texts cut short; the raw tab of a call has them")
    return Conversation(
        rollout_id=rollout_id,
        items=items,
        calls=calls,
        damaged=damaged,
        incomplete=incomplete,
        notes=notes,
        setup=builder.first_setup,
    )
