"""A rollout's captured calls as an ATIF trajectory (`ATIF-v1.7`): a pure function, no I/O.

ATIF (Agent Trajectory Interchange Format, Harbor's RFC 0001) is what Harbor,
Terminal-Bench, the NeMo Agent Toolkit and NeMo Gym (`gym eval export --format atif`)
read and write. `rollout_to_atif` maps the records of one rollout as Gym 0.7.0 maps a
rollout (docs/formats.md, "ATIF trajectories"): the system and user messages the first
call sends are the first steps; each call is one agent step with its text, reasoning and
tool calls; the tool results the next call sends are that step's observation; a step's
metrics are the call's token counts and `final_metrics` their sums. It adds what Gym
leaves out and ATIF allows: `prompt_token_ids`, `completion_token_ids` and `logprobs` in
a step's metrics when they were captured.

A rollout that cannot be written without losing or inventing something (a failed call,
an attachment, several choices, a tool result that answers no tool call) raises
`AtifMappingError` saying why; the caller reports it and goes on with the others.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from . import _codec
from .contracts import ModelCallRecord
from .dialects import DIALECTS
from .dialects.base import Part, Turn
from .errors import AtifMappingError

__all__ = ["ATIF_SCHEMA_VERSION", "encode_trajectory", "rollout_indices", "rollout_to_atif"]

ATIF_SCHEMA_VERSION = "ATIF-v1.7"
"""The ATIF version written (the newest that NeMo Gym 0.7.0 and nvidia-nat-atif know)."""

_GYM_ROLLOUT_ID = re.compile(r"([0-9]{1,18})-([0-9]{1,18})")


def rollout_indices(rollout_id: str) -> tuple[int, int] | None:
    """`(task index, rollout index)` of a rollout id as NeMo Gym names rollouts
    (`<task>-<rollout>`), None for any other id (an attempt's `-a<n>` included)."""
    match = _GYM_ROLLOUT_ID.fullmatch(rollout_id)
    return (int(match[1]), int(match[2])) if match else None


def _timestamp(seconds: float | None) -> str | None:
    """ISO 8601 UTC with a `Z`, as Gym writes step timestamps."""
    if seconds is None:
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def _call_name(record: ModelCallRecord) -> str:
    return f"call {record.call_index}" + (
        f" ({record.model_call_id})" if record.model_call_id else ""
    )


def _message(parts: list[Part], where: str) -> str | list[dict[str, Any]]:
    """The text of a turn: one text part as a string (ATIF: string for text-only content),
    several as text content parts; anything but text raises."""
    texts = []
    for part in parts:
        if part.kind != "text":
            raise AtifMappingError(f"{where}: a {part.name or part.kind} part is not representable")
        texts.append(part.text)
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": t} for t in texts] if texts else ""


def _arguments(part: Part, where: str) -> dict[str, Any]:
    try:
        value = _codec.decode(part.arguments) if part.arguments is not None else {}
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        raise AtifMappingError(f"{where}: tool call arguments are not JSON") from None
    if not isinstance(value, dict):
        raise AtifMappingError(f"{where}: tool call arguments are not a JSON object")
    return value


def _tool_calls(parts: list[Part], where: str) -> list[dict[str, Any]]:
    calls = []
    for part in parts:
        if not part.call_id or not part.name:
            raise AtifMappingError(f"{where}: a tool call without an id or a name")
        calls.append(
            {
                "tool_call_id": part.call_id,
                "function_name": part.name,
                "arguments": _arguments(part, where),
            }
        )
    return calls


def _agent_step(turn: Turn, where: str) -> dict[str, Any]:
    """An agent step of an assistant turn: its text and tool calls (reasoning comes from
    the record, which knows encrypted reasoning from text)."""
    texts = [p for p in turn.parts if p.kind == "text"]
    calls = [p for p in turn.parts if p.kind == "tool_call"]
    for part in turn.parts:
        if part.kind not in ("text", "tool_call", "reasoning"):
            raise AtifMappingError(f"{where}: a {part.name or part.kind} item is not representable")
    step: dict[str, Any] = {"source": "agent", "message": _message(texts, where) if texts else ""}
    if calls:
        step["tool_calls"] = _tool_calls(calls, where)
    return step


class _Builder:
    """The steps of one trajectory, built call by call."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.agent_steps: list[dict[str, Any]] = []
        self.context = ""
        """A completion prompt's text so far: the last prompt and what the model added."""

    def add(self, step: dict[str, Any]) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, **step}
        self.steps.append(step)
        return step

    def observe(self, part: Part, where: str) -> None:
        """Attach a tool result to the latest agent step, which must have made the call."""
        last = self.agent_steps[-1] if self.agent_steps else None
        ids = {c["tool_call_id"] for c in (last or {}).get("tool_calls", ())}
        if last is None or part.call_id not in ids:
            raise AtifMappingError(
                f"{where}: tool result {part.call_id!r} answers no tool call of the step before it"
            )
        results = last.setdefault("observation", {"results": []})["results"]
        results.append({"source_call_id": part.call_id, "content": part.text})

    def sent(self, turns: list[Turn], where: str) -> None:
        """The turns a request sends that no earlier step holds."""
        for turn in turns:
            if turn.role in ("system", "developer", "user"):
                source = "user" if turn.role == "user" else "system"
                self.add({"source": source, "message": _message(turn.parts, where)})
            elif turn.role == "tool":
                for part in turn.parts:
                    if part.kind != "tool_result":
                        raise AtifMappingError(f"{where}: a tool turn holds a {part.kind} part")
                    self.observe(part, where)
            elif turn.role == "prompt":
                self.prompt(turn, where)
            elif turn.role == "assistant":
                # History the first request replays (few-shot, a resumed session): context
                # the model did not generate in this rollout.
                step = self.add({**_agent_step(turn, where), "is_copied_context": True})
                self.agent_steps.append(step)
            else:
                raise AtifMappingError(f"{where}: a message of role {turn.role!r}")

    def prompt(self, turn: Turn, where: str) -> None:
        """A Completions prompt: raw text that repeats the conversation so far, so only
        what it adds to the last prompt and completion is a new `user` step. A prompt of
        token ids has no text: it is in the agent step's `metrics.prompt_token_ids`."""
        if any(p.name == "token_ids" for p in turn.parts):
            self.context = ""
            return
        text = _message(turn.parts, where)
        if not isinstance(text, str):
            raise AtifMappingError(f"{where}: a prompt with a suffix is not representable")
        added = (
            text[len(self.context) :] if self.context and text.startswith(self.context) else text
        )
        self.context = text
        if added:
            self.add({"source": "user", "message": added})


def _new_turns(turns: list[Turn], first: bool) -> list[Turn]:
    """What a request adds to the conversation: everything for the first call; after the
    last assistant turn (the previous call's reply, sent back) for the others, and all of
    it when the request sends no history (a `previous_response_id` continuation)."""
    if first:
        return turns
    last = max((i for i, t in enumerate(turns) if t.role == "assistant"), default=-1)
    return turns[last + 1 :]


def _metrics(record: ModelCallRecord) -> dict[str, Any] | None:
    metrics: dict[str, Any] = {}
    counts = (record.tokens_in, record.tokens_out, record.cached_tokens)
    if any(v is not None for v in (*counts, record.tokens_reasoning, record.tokens_total)):
        for key, value in zip(
            ("prompt_tokens", "completion_tokens", "cached_tokens"), counts, strict=False
        ):
            if value is not None:
                metrics[key] = value
    if record.prompt_token_ids is not None:
        metrics["prompt_token_ids"] = record.prompt_token_ids
    if record.generation_token_ids is not None:
        metrics["completion_token_ids"] = record.generation_token_ids
    if record.generation_log_probs is not None:
        metrics["logprobs"] = record.generation_log_probs
    extra = {
        key: value
        for key, value in (
            ("reasoning_tokens", record.tokens_reasoning),
            ("total_tokens", record.tokens_total),
            ("cache_creation_input_tokens", record.cache_creation_tokens),
        )
        if value is not None
    }
    if extra:
        metrics["extra"] = extra
    return metrics or None


def _check_call(record: ModelCallRecord) -> None:
    where = _call_name(record)
    if record.error_category is not None:
        raise AtifMappingError(f"{where} failed ({record.error_category})")
    if record.status_code is not None and not 200 <= record.status_code < 300:
        raise AtifMappingError(f"{where} returned status {record.status_code}")
    if record.response_status not in (None, "completed"):
        raise AtifMappingError(f"{where} is {record.response_status}, not completed")
    if not isinstance(record.response, dict):
        raise AtifMappingError(f"{where} has no response")
    if record.dialect not in DIALECTS:
        raise AtifMappingError(f"{where} has no known dialect")


def _call_step(record: ModelCallRecord) -> dict[str, Any]:
    where = _call_name(record)
    module = DIALECTS[record.dialect or ""]
    replies = module.response_turns(record.response)
    if len(replies) != 1:
        raise AtifMappingError(f"{where}: {len(replies)} replies (an ATIF step holds one)")
    step: dict[str, Any] = {"timestamp": _timestamp(record.started_at)}
    step.update(_agent_step(replies[0], where))
    step["model_name"] = record.model
    if record.reasoning_content:
        step["reasoning_content"] = record.reasoning_content
    step["metrics"] = _metrics(record)
    step["llm_call_count"] = 1
    provenance = {
        "model_call_id": record.model_call_id,
        "call_index": record.call_index,
        "response_id": record.response_id,
        "dialect": record.dialect,
        "finish_reason": record.finish_reason,
    }
    step["extra"] = {"model_call_capture": {k: v for k, v in provenance.items() if v is not None}}
    return {k: v for k, v in step.items() if v is not None}


def _final_metrics(agent_steps: list[dict[str, Any]], total_steps: int) -> dict[str, Any]:
    """Sums over the agent steps of this rollout; a total is left out when any step lacks it."""
    final: dict[str, Any] = {}
    for key, total in (
        ("prompt_tokens", "total_prompt_tokens"),
        ("completion_tokens", "total_completion_tokens"),
        ("cached_tokens", "total_cached_tokens"),
    ):
        values = [(s.get("metrics") or {}).get(key) for s in agent_steps]
        if values and all(v is not None for v in values):
            final[total] = sum(values)
    final["total_steps"] = total_steps
    return final


def rollout_to_atif(
    records: Sequence[ModelCallRecord],
    *,
    rollout_id: str,
    session_id: str,
    agent_name: str,
    agent_version: str,
) -> dict[str, Any]:
    """The `ATIF-v1.7` trajectory of one rollout's records (with payloads), as JSON values.

    `trajectory_id` is `{session_id}:{task}:{rollout}` for a Gym rollout id
    (`<task>-<rollout>`), as Gym writes it, else `{session_id}:{rollout_id}`. Raises
    `AtifMappingError` (the reason) when the rollout cannot be represented.
    """
    if not records:
        raise AtifMappingError("no captured calls")
    builder = _Builder()
    for index, record in enumerate(records):
        _check_call(record)
        module = DIALECTS[record.dialect or ""]
        turns = module.request_turns(record.request)
        builder.sent(_new_turns(turns, index == 0), _call_name(record))
        step = builder.add(_call_step(record))
        builder.agent_steps.append(step)
        if builder.context and isinstance(step["message"], str):
            builder.context += step["message"]
    generated = [s for s in builder.agent_steps if not s.get("is_copied_context")]
    models = {s.get("model_name") for s in generated}
    agent: dict[str, Any] = {"name": agent_name, "version": agent_version}
    if len(models) == 1 and None not in models:
        agent["model_name"] = models.pop()
    indices = rollout_indices(rollout_id)
    trajectory_key = f"{indices[0]}:{indices[1]}" if indices else rollout_id
    return {
        "schema_version": ATIF_SCHEMA_VERSION,
        "session_id": session_id,
        "trajectory_id": f"{session_id}:{trajectory_key}",
        "agent": agent,
        "steps": builder.steps,
        "final_metrics": _final_metrics(generated, len(builder.steps)),
        "extra": {"model_call_capture": {"rollout_id": rollout_id, "calls": len(records)}},
    }


def encode_trajectory(trajectory: dict[str, Any]) -> bytes:
    """A trajectory as the file holds it: JSON indented by two spaces, a final newline."""
    return msgspec.json.format(_codec.encode(trajectory), indent=2) + b"\n"
