"""Stream events of the OpenAI Responses API that belong to tool calls.

Function, custom, MCP, code interpreter, apply_patch and shell calls stream their
arguments, code or commands in deltas; the built-in tools (file search, web search,
image generation, MCP, compaction) report their progress.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, UnsetType

from ._events import _Event, _ItemEvent

__all__ = [
    "ResponseApplyPatchCallOperationDiffDeltaEvent",
    "ResponseApplyPatchCallOperationDiffDoneEvent",
    "ResponseCodeInterpreterCallCodeDeltaEvent",
    "ResponseCodeInterpreterCallCodeDoneEvent",
    "ResponseCodeInterpreterCallCompletedEvent",
    "ResponseCodeInterpreterCallInProgressEvent",
    "ResponseCodeInterpreterCallInterpretingEvent",
    "ResponseCompactionCompactingEvent",
    "ResponseCustomToolCallInputDeltaEvent",
    "ResponseCustomToolCallInputDoneEvent",
    "ResponseFileSearchCallCompletedEvent",
    "ResponseFileSearchCallInProgressEvent",
    "ResponseFileSearchCallSearchingEvent",
    "ResponseFunctionCallArgumentsDeltaEvent",
    "ResponseFunctionCallArgumentsDoneEvent",
    "ResponseImageGenCallCompletedEvent",
    "ResponseImageGenCallGeneratingEvent",
    "ResponseImageGenCallInProgressEvent",
    "ResponseImageGenCallPartialImageEvent",
    "ResponseMcpCallArgumentsDeltaEvent",
    "ResponseMcpCallArgumentsDoneEvent",
    "ResponseMcpCallCompletedEvent",
    "ResponseMcpCallFailedEvent",
    "ResponseMcpCallInProgressEvent",
    "ResponseMcpListToolsCompletedEvent",
    "ResponseMcpListToolsFailedEvent",
    "ResponseMcpListToolsInProgressEvent",
    "ResponseShellCallCommandAddedEvent",
    "ResponseShellCallCommandDeltaEvent",
    "ResponseShellCallCommandDoneEvent",
    "ResponseShellCallOutputContentDeltaEvent",
    "ResponseShellCallOutputContentDoneEvent",
    "ResponseWebSearchCallCompletedEvent",
    "ResponseWebSearchCallInProgressEvent",
    "ResponseWebSearchCallSearchingEvent",
]

_Any = dict[str, Any]


class _ArgsDelta(_ItemEvent, kw_only=True):
    delta: str
    """The fragment to append."""
    obfuscation: str | UnsetType = UNSET
    """Random padding that hides the length of the delta."""


class ResponseFunctionCallArgumentsDeltaEvent(
    _ArgsDelta, tag="response.function_call_arguments.delta", kw_only=True
):
    """A fragment of a function call's JSON arguments."""


class ResponseFunctionCallArgumentsDoneEvent(
    _ItemEvent, tag="response.function_call_arguments.done", kw_only=True
):
    """A function call's arguments are complete."""

    arguments: str
    """The full JSON arguments text."""
    name: str | UnsetType = UNSET
    """The function name (sent by some providers)."""


class ResponseCustomToolCallInputDeltaEvent(
    _ArgsDelta, tag="response.custom_tool_call_input.delta", kw_only=True
):
    """A fragment of a custom tool call's free-form input."""


class ResponseCustomToolCallInputDoneEvent(
    _ItemEvent, tag="response.custom_tool_call_input.done", kw_only=True
):
    """A custom tool call's input is complete."""

    input: str
    """The full input text."""


class ResponseMcpCallArgumentsDeltaEvent(
    _ArgsDelta, tag="response.mcp_call_arguments.delta", kw_only=True
):
    """A fragment of an MCP tool call's JSON arguments."""


class ResponseMcpCallArgumentsDoneEvent(
    _ItemEvent, tag="response.mcp_call_arguments.done", kw_only=True
):
    """An MCP tool call's arguments are complete."""

    arguments: str
    """The full JSON arguments text."""


class ResponseCodeInterpreterCallCodeDeltaEvent(
    _ArgsDelta, tag="response.code_interpreter_call_code.delta", kw_only=True
):
    """A fragment of the code a code interpreter call runs."""


class ResponseCodeInterpreterCallCodeDoneEvent(
    _ItemEvent, tag="response.code_interpreter_call_code.done", kw_only=True
):
    """The code of a code interpreter call is complete."""

    code: str
    """The full code."""


class ResponseApplyPatchCallOperationDiffDeltaEvent(
    _ArgsDelta, tag="response.apply_patch_call_operation_diff.delta", kw_only=True
):
    """A fragment of the diff of an apply_patch call's operation."""


class ResponseApplyPatchCallOperationDiffDoneEvent(
    _ItemEvent, tag="response.apply_patch_call_operation_diff.done", kw_only=True
):
    """The diff of an apply_patch call's operation is complete."""

    diff: str
    """The full diff."""


class _CommandEvent(_Event, kw_only=True):
    item_id: str | UnsetType = UNSET
    """Id of the shell call item."""
    output_index: int
    """Position of the item in `response.output`."""
    command_index: int = 0
    """Position of the command in the shell call's `action.commands`."""


class ResponseShellCallCommandAddedEvent(
    _CommandEvent, tag="response.shell_call_command.added", kw_only=True
):
    """A command was added to a shell call."""

    command: str = ""
    """The command text so far."""


class ResponseShellCallCommandDeltaEvent(
    _CommandEvent, tag="response.shell_call_command.delta", kw_only=True
):
    """A fragment of a shell call command."""

    delta: str
    """The fragment to append."""
    obfuscation: str | None | UnsetType = UNSET
    """Random padding that hides the length of the delta."""


class ResponseShellCallCommandDoneEvent(
    _CommandEvent, tag="response.shell_call_command.done", kw_only=True
):
    """A shell call command is complete."""

    command: str
    """The full command."""


class ResponseShellCallOutputContentDeltaEvent(
    _CommandEvent, tag="response.shell_call_output_content.delta", kw_only=True
):
    """A fragment of a shell call's output."""

    delta: _Any
    """The output fragment (`stdout`, `stderr`)."""


class ResponseShellCallOutputContentDoneEvent(
    _CommandEvent, tag="response.shell_call_output_content.done", kw_only=True
):
    """A shell call's output is complete."""

    output: list[_Any]
    """The full output entries."""


class ResponseFileSearchCallInProgressEvent(
    _ItemEvent, tag="response.file_search_call.in_progress", kw_only=True
):
    """A file search call started."""


class ResponseFileSearchCallSearchingEvent(
    _ItemEvent, tag="response.file_search_call.searching", kw_only=True
):
    """A file search call is searching."""


class ResponseFileSearchCallCompletedEvent(
    _ItemEvent, tag="response.file_search_call.completed", kw_only=True
):
    """A file search call completed."""


class ResponseWebSearchCallInProgressEvent(
    _ItemEvent, tag="response.web_search_call.in_progress", kw_only=True
):
    """A web search call started."""


class ResponseWebSearchCallSearchingEvent(
    _ItemEvent, tag="response.web_search_call.searching", kw_only=True
):
    """A web search call is searching."""


class ResponseWebSearchCallCompletedEvent(
    _ItemEvent, tag="response.web_search_call.completed", kw_only=True
):
    """A web search call completed."""


class ResponseCodeInterpreterCallInProgressEvent(
    _ItemEvent, tag="response.code_interpreter_call.in_progress", kw_only=True
):
    """A code interpreter call started."""


class ResponseCodeInterpreterCallInterpretingEvent(
    _ItemEvent, tag="response.code_interpreter_call.interpreting", kw_only=True
):
    """A code interpreter call is running its code."""


class ResponseCodeInterpreterCallCompletedEvent(
    _ItemEvent, tag="response.code_interpreter_call.completed", kw_only=True
):
    """A code interpreter call completed."""


class ResponseImageGenCallInProgressEvent(
    _ItemEvent, tag="response.image_generation_call.in_progress", kw_only=True
):
    """An image generation call started."""


class ResponseImageGenCallGeneratingEvent(
    _ItemEvent, tag="response.image_generation_call.generating", kw_only=True
):
    """An image generation call is generating."""


class ResponseImageGenCallCompletedEvent(
    _ItemEvent, tag="response.image_generation_call.completed", kw_only=True
):
    """An image generation call completed."""


class ResponseImageGenCallPartialImageEvent(
    _ItemEvent, tag="response.image_generation_call.partial_image", kw_only=True
):
    """A partial image of an image generation call."""

    partial_image_b64: str
    """Base64-encoded partial image."""
    partial_image_index: int = 0
    """Position of the partial image (0-based)."""
    background: str | None | UnsetType = UNSET
    """Background setting of the image."""
    output_format: str | None | UnsetType = UNSET
    """Image format (png, webp, jpeg)."""
    quality: str | None | UnsetType = UNSET
    """Image quality setting."""
    size: str | None | UnsetType = UNSET
    """Image size, e.g. `1024x1024`."""


class ResponseMcpCallInProgressEvent(_ItemEvent, tag="response.mcp_call.in_progress", kw_only=True):
    """An MCP tool call started."""


class ResponseMcpCallCompletedEvent(_ItemEvent, tag="response.mcp_call.completed", kw_only=True):
    """An MCP tool call completed."""


class ResponseMcpCallFailedEvent(_ItemEvent, tag="response.mcp_call.failed", kw_only=True):
    """An MCP tool call failed."""


class ResponseMcpListToolsInProgressEvent(
    _ItemEvent, tag="response.mcp_list_tools.in_progress", kw_only=True
):
    """Listing an MCP server's tools started."""


class ResponseMcpListToolsCompletedEvent(
    _ItemEvent, tag="response.mcp_list_tools.completed", kw_only=True
):
    """Listing an MCP server's tools completed."""


class ResponseMcpListToolsFailedEvent(
    _ItemEvent, tag="response.mcp_list_tools.failed", kw_only=True
):
    """Listing an MCP server's tools failed."""


class ResponseCompactionCompactingEvent(
    _ItemEvent, tag="response.compaction.compacting", kw_only=True
):
    """A compaction item is being produced."""
