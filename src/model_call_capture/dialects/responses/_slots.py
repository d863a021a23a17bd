"""Where each text-carrying stream event writes into its output item.

A delta appends to a text slot and the matching done event replaces it; the slot is a
field of a content or summary part, a field of the item, a field of its `operation`, or
an entry of its `action.commands`. The tables are built once, at import; the stream
state only looks events up in them.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NamedTuple

from ._decoder import StreamEvent

__all__ = ["PART_EVENTS", "PART_TEXT_FIELD", "SLOTS", "SLOT_CLASSES", "Slot", "new_part"]

_Where = Literal["part", "field", "operation", "command"]


class Slot(NamedTuple):
    """Where a text-carrying event writes into its output item."""

    item_type: str
    """Type of the item to synthesize when the event arrives before its item."""
    where: _Where
    """`part`: a field of a content/summary part; `field`: a field of the item;
    `operation`: a field of `item.operation`; `command`: an entry of `item.action.commands`."""
    container: str
    """`content` or `summary` for parts; unused otherwise."""
    index_key: str
    """Name of the event field holding the part or command index ('' when none)."""
    field: str
    """The field written (`text`, `refusal`, `arguments`, ...)."""
    part_type: str
    """Type of the part to synthesize when the part was never announced."""
    value_key: str
    """Name of the event field holding the text."""
    append: bool
    """True for a delta (append), False for a done event (replace)."""


def _delta_and_done(
    stem: str,
    item_type: str,
    where: _Where,
    *,
    field: str,
    done_key: str,
    container: str = "",
    index_key: str = "",
    part_type: str = "",
) -> dict[str, Slot]:
    """The slots of `<stem>.delta` (appends its `delta`) and `<stem>.done` (sets `done_key`)."""
    return {
        stem + ".delta": Slot(
            item_type, where, container, index_key, field, part_type, "delta", True
        ),
        stem + ".done": Slot(
            item_type, where, container, index_key, field, part_type, done_key, False
        ),
    }


def _part(stem: str, item_type: str, container: str, field: str, part_type: str) -> dict[str, Slot]:
    """A text field of a content or summary part; the done event names the field as the part does."""
    index_key = "content_index" if container == "content" else "summary_index"
    return _delta_and_done(
        stem,
        item_type,
        "part",
        field=field,
        done_key=field,
        container=container,
        index_key=index_key,
        part_type=part_type,
    )


def _item_field(stem: str, item_type: str, field: str) -> dict[str, Slot]:
    """A text field of the item itself (a tool call's arguments, input or code)."""
    return _delta_and_done(stem, item_type, "field", field=field, done_key=field)


def _shell_command() -> dict[str, Slot]:
    """An entry of a shell call's `action.commands`, announced with its first text."""
    slots = _delta_and_done(
        "response.shell_call_command",
        "shell_call",
        "command",
        field="",
        done_key="command",
        index_key="command_index",
    )
    slots["response.shell_call_command.added"] = slots["response.shell_call_command.done"]
    return slots


SLOTS: Final[dict[str, Slot]] = {
    **_part("response.output_text", "message", "content", "text", "output_text"),
    **_part("response.refusal", "message", "content", "refusal", "refusal"),
    **_part("response.reasoning_text", "reasoning", "content", "text", "reasoning_text"),
    **_part("response.reasoning_summary_text", "reasoning", "summary", "text", "summary_text"),
    **_item_field("response.function_call_arguments", "function_call", "arguments"),
    **_item_field("response.custom_tool_call_input", "custom_tool_call", "input"),
    **_item_field("response.mcp_call_arguments", "mcp_call", "arguments"),
    **_item_field("response.code_interpreter_call_code", "code_interpreter_call", "code"),
    **_delta_and_done(
        "response.apply_patch_call_operation_diff",
        "apply_patch_call",
        "operation",
        field="diff",
        done_key="diff",
    ),
    **_shell_command(),
}
"""The slot of every text-carrying event, by event type."""

SLOT_CLASSES: Final[dict[type, Slot]] = {
    cls: SLOTS[str(cls.__struct_config__.tag)]
    for cls in StreamEvent.__args__
    if str(cls.__struct_config__.tag) in SLOTS
}
"""The same slots by decoded event class: the stream state's first lookup for every event."""

PART_EVENTS: Final = {
    "response.content_part.added": ("content", "content_index", False),
    "response.content_part.done": ("content", "content_index", True),
    "response.reasoning_summary_part.added": ("summary", "summary_index", False),
    "response.reasoning_summary_part.done": ("summary", "summary_index", True),
}
"""Part events by type: (container, name of the index field, whether the part is final)."""

PART_TEXT_FIELD: Final = {
    "output_text": "text",
    "refusal": "refusal",
    "reasoning_text": "text",
    "summary_text": "text",
}
"""The field holding the text of each part type."""


def new_part(slot: Slot, item: dict[str, Any]) -> dict[str, Any]:
    """The part a delta writes into when the part was never announced."""
    part_type = slot.part_type
    if part_type == "output_text" and item.get("type") == "reasoning":
        part_type = "reasoning_text"  # some providers stream raw reasoning as output_text parts
    part: dict[str, Any] = {"type": part_type, slot.field: ""}
    if part_type == "output_text":
        part["annotations"] = []
    return part
