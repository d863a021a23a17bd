"""OpenAI Responses API: wire types, terminal events, stream reassembly and record derivation.

The wire types are open msgspec Structs mirroring `schemas/v1/dialects/openai-responses.schema.json`:
unknown fields are ignored on decode, every field a provider may leave out is optional,
and `decode_event` turns an event of an unknown (future) type into `UnknownEvent`
instead of rejecting it.

`StreamState` rebuilds the final response of a stream. The response carried by
`response.completed` / `.incomplete` / `.failed` is the result, as the server sent it.
When the stream ends without one, the response is rebuilt from the last lifecycle
envelope (`response.created`, `.queued` or `.in_progress`), the output items added and
done, and every delta seen. Items are joined by `output_index`, never by item id:
some providers (GitHub Copilot) give each event of one item a different id.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NamedTuple

import msgspec
from msgspec import UNSET, UnsetType

from .. import _codec
from ..contracts import ToolCall
from ..sse import SseEvent
from ._text import TextParts
from .base import (
    Derived,
    NotList,
    NotObject,
    Payload,
    StreamResult,
    Terminal,
    decode_view,
    escaped_ascii,
    request_model,
    token_count,
    tool_arguments,
)

__all__ = [
    "EVENT_TYPES",
    "NAME",
    "PATH",
    "Derived",
    "IncompleteDetails",
    "InputTokensDetails",
    "OutputTokensDetails",
    "Request",
    "Response",
    "ResponseError",
    "ResponseUsage",
    "StreamEvent",
    "StreamState",
    "UnknownEvent",
    "decode_event",
    "derive",
    "new_stream_state",
]

NAME = "responses"
PATH = "/v1/responses"
EVENT_NAMES: tuple[str, ...] = (
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.delta",
    "response.reasoning_text.done",
    "error",
)
"""The `event:` names the SSE decoder looks up instead of decoding (the common ones)."""

_Any = dict[str, Any]


# --------------------------------------------------------------------------- request


class Request(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A `POST /v1/responses` request body (the fields people send; others are accepted)."""

    model: str | UnsetType = UNSET
    """Model id, e.g. `gpt-5`."""
    input: str | list[_Any] | UnsetType = UNSET
    """Text, or a list of input items (messages, function_call_output, reasoning, ...)."""
    instructions: str | None | UnsetType = UNSET
    """System (developer) message inserted before the input."""
    tools: list[_Any] | None | UnsetType = UNSET
    """Tools the model may call (function, custom, web_search, mcp, ...)."""
    tool_choice: str | _Any | None | UnsetType = UNSET
    """`none`, `auto`, `required`, or an object naming a tool."""
    parallel_tool_calls: bool | None | UnsetType = UNSET
    """Whether the model may call several tools at once."""
    stream: bool | None | UnsetType = UNSET
    """True to receive the response as Server-Sent Events."""
    stream_options: _Any | None | UnsetType = UNSET
    """Streaming options, e.g. `include_obfuscation`."""
    reasoning: _Any | None | UnsetType = UNSET
    """Reasoning settings: `effort`, `summary`."""
    text: _Any | None | UnsetType = UNSET
    """Text output settings: `format` (text, json_schema), `verbosity`."""
    max_output_tokens: int | None | UnsetType = UNSET
    """Upper bound on generated tokens, reasoning included."""
    max_tool_calls: int | None | UnsetType = UNSET
    """Upper bound on built-in tool calls."""
    temperature: float | None | UnsetType = UNSET
    """Sampling temperature."""
    top_p: float | None | UnsetType = UNSET
    """Nucleus sampling mass."""
    top_logprobs: int | None | UnsetType = UNSET
    """Number of most likely tokens to return log probabilities for."""
    include: list[str] | None | UnsetType = UNSET
    """Extra output to include, e.g. `reasoning.encrypted_content`."""
    previous_response_id: str | None | UnsetType = UNSET
    """Continue from this stored response."""
    conversation: str | _Any | None | UnsetType = UNSET
    """Conversation this response belongs to."""
    store: bool | None | UnsetType = UNSET
    """Whether the provider stores the response."""
    background: bool | None | UnsetType = UNSET
    """Run the response in the background."""
    metadata: dict[str, Any] | None | UnsetType = UNSET
    """Up to 16 caller-defined key/value pairs."""
    truncation: str | None | UnsetType = UNSET
    """`auto` or `disabled`: how to handle input over the context window."""
    service_tier: str | None | UnsetType = UNSET
    """Processing tier: `auto`, `default`, `flex`, `priority`, ..."""
    prompt: _Any | None | UnsetType = UNSET
    """Reference to a stored prompt template and its variables."""
    prompt_cache_key: str | None | UnsetType = UNSET
    """Key used to group requests for prompt caching."""
    prompt_cache_retention: str | None | UnsetType = UNSET
    """Prompt cache retention policy, e.g. `24h`."""
    safety_identifier: str | None | UnsetType = UNSET
    """Stable end-user identifier for abuse detection."""
    user: str | None | UnsetType = UNSET
    """Deprecated end-user identifier."""


# -------------------------------------------------------------------------- response


class InputTokensDetails(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Breakdown of the input tokens."""

    cached_tokens: int | None | UnsetType = UNSET
    """Input tokens served from the prompt cache (counted inside `input_tokens`)."""


class OutputTokensDetails(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Breakdown of the output tokens."""

    reasoning_tokens: int | None | UnsetType = UNSET
    """Reasoning tokens (counted inside `output_tokens`)."""


class ResponseUsage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Token usage of a response."""

    input_tokens: int | None | UnsetType = UNSET
    """Input tokens, cached tokens included."""
    input_tokens_details: InputTokensDetails | None | UnsetType = UNSET
    """Breakdown of the input tokens."""
    output_tokens: int | None | UnsetType = UNSET
    """Output tokens, reasoning tokens included."""
    output_tokens_details: OutputTokensDetails | None | UnsetType = UNSET
    """Breakdown of the output tokens."""
    total_tokens: int | None | UnsetType = UNSET
    """Input plus output tokens."""


class ResponseError(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Why a response failed."""

    code: str | None | UnsetType = UNSET
    """Error code, e.g. `server_error`, `rate_limit_exceeded`."""
    message: str | None | UnsetType = UNSET
    """Human-readable description."""


class IncompleteDetails(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Why a response is incomplete."""

    reason: str | None | UnsetType = UNSET
    """`max_output_tokens` or `content_filter`."""


class Response(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A Responses API response object (`object: "response"`)."""

    id: str | UnsetType = UNSET
    """Response id, `resp_...`."""
    object: str | UnsetType = UNSET
    """Always `response`."""
    created_at: float | UnsetType = UNSET
    """Unix seconds when the response was created."""
    completed_at: float | None | UnsetType = UNSET
    """Unix seconds when the response completed."""
    status: str | None | UnsetType = UNSET
    """`completed`, `failed`, `in_progress`, `cancelled`, `queued` or `incomplete`."""
    model: str | UnsetType = UNSET
    """Model that generated the response."""
    output: list[_Any] | None | UnsetType = UNSET
    """Output items (message, function_call, reasoning, web_search_call, ...), open objects tagged by `type`."""
    output_text: str | None | UnsetType = UNSET
    """Concatenated output text, sent by some providers (the OpenAI SDKs compute it)."""
    usage: ResponseUsage | None | UnsetType = UNSET
    """Token usage; null until the response is finished."""
    error: ResponseError | None | UnsetType = UNSET
    """Why the response failed; null otherwise."""
    incomplete_details: IncompleteDetails | None | UnsetType = UNSET
    """Why the response is incomplete; null otherwise."""
    instructions: str | list[_Any] | None | UnsetType = UNSET
    """The instructions the request carried."""
    metadata: dict[str, Any] | None | UnsetType = UNSET
    """Caller-defined key/value pairs."""
    tools: list[_Any] | None | UnsetType = UNSET
    """Tools the model could call."""
    tool_choice: str | _Any | None | UnsetType = UNSET
    """How the model chose tools."""
    parallel_tool_calls: bool | None | UnsetType = UNSET
    """Whether parallel tool calls were allowed."""
    temperature: float | None | UnsetType = UNSET
    """Sampling temperature."""
    top_p: float | None | UnsetType = UNSET
    """Nucleus sampling mass."""
    top_logprobs: int | None | UnsetType = UNSET
    """Number of most likely tokens with log probabilities."""
    max_output_tokens: int | None | UnsetType = UNSET
    """Upper bound on generated tokens."""
    max_tool_calls: int | None | UnsetType = UNSET
    """Upper bound on built-in tool calls."""
    previous_response_id: str | None | UnsetType = UNSET
    """The response this one continues."""
    conversation: _Any | None | UnsetType = UNSET
    """Conversation this response belongs to."""
    reasoning: _Any | None | UnsetType = UNSET
    """Reasoning settings used."""
    text: _Any | None | UnsetType = UNSET
    """Text output settings used."""
    truncation: str | None | UnsetType = UNSET
    """Truncation strategy used."""
    service_tier: str | None | UnsetType = UNSET
    """Processing tier actually used."""
    background: bool | None | UnsetType = UNSET
    """Whether the response ran in the background."""
    store: bool | None | UnsetType = UNSET
    """Whether the response is stored."""
    prompt: _Any | None | UnsetType = UNSET
    """Stored prompt template used."""
    prompt_cache_key: str | None | UnsetType = UNSET
    """Prompt cache key used."""
    prompt_cache_retention: str | None | UnsetType = UNSET
    """Prompt cache retention policy used."""
    safety_identifier: str | None | UnsetType = UNSET
    """End-user identifier for abuse detection."""
    user: str | None | UnsetType = UNSET
    """Deprecated end-user identifier."""


# ---------------------------------------------------------------------- stream events


class _Event(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type"):
    """Fields every stream event has."""

    sequence_number: int | UnsetType = UNSET
    """Position of the event in the stream."""


class _LifecycleEvent(_Event, kw_only=True):
    response: Response
    """The response as of this event."""


class ResponseCreatedEvent(_LifecycleEvent, tag="response.created", kw_only=True):
    """The response was created (first event of a stream)."""


class ResponseQueuedEvent(_LifecycleEvent, tag="response.queued", kw_only=True):
    """The response is queued (background mode; first event of a resumed stream)."""


class ResponseInProgressEvent(_LifecycleEvent, tag="response.in_progress", kw_only=True):
    """The response is being generated."""


class ResponseCompletedEvent(_LifecycleEvent, tag="response.completed", kw_only=True):
    """Terminal: the response completed; carries the final response."""


class ResponseIncompleteEvent(_LifecycleEvent, tag="response.incomplete", kw_only=True):
    """Terminal: the response finished incomplete (e.g. max_output_tokens)."""


class ResponseFailedEvent(_LifecycleEvent, tag="response.failed", kw_only=True):
    """Terminal: the response failed; `response.error` says why."""


class _OutputItemEvent(_Event, kw_only=True):
    output_index: int
    """Position of the item in `response.output`."""
    item: _Any
    """The output item (message, function_call, reasoning, ...), an open object tagged by `type`."""


class ResponseOutputItemAddedEvent(
    _OutputItemEvent, tag="response.output_item.added", kw_only=True
):
    """An output item was added."""


class ResponseOutputItemDoneEvent(_OutputItemEvent, tag="response.output_item.done", kw_only=True):
    """An output item is complete; carries the final item."""


class _ItemEvent(_Event, kw_only=True):
    item_id: str | UnsetType = UNSET
    """Id of the output item (may change from event to event with some providers)."""
    output_index: int
    """Position of the item in `response.output`."""


class _ContentEvent(_ItemEvent, kw_only=True):
    content_index: int = 0
    """Position of the content part in the item's `content`."""


class ResponseContentPartAddedEvent(_ContentEvent, tag="response.content_part.added", kw_only=True):
    """A content part was added to a message or reasoning item."""

    part: _Any
    """The content part (output_text, refusal, reasoning_text)."""


class ResponseContentPartDoneEvent(_ContentEvent, tag="response.content_part.done", kw_only=True):
    """A content part is complete; carries the final part."""

    part: _Any
    """The final content part."""


class _DeltaMixin(_ContentEvent, kw_only=True):
    delta: str
    """The text fragment to append."""
    obfuscation: str | UnsetType = UNSET
    """Random padding that hides the length of the delta."""


class ResponseTextDeltaEvent(_DeltaMixin, tag="response.output_text.delta", kw_only=True):
    """A fragment of output text."""

    logprobs: list[_Any] | None | UnsetType = UNSET
    """Log probabilities of the tokens in the delta."""


class ResponseTextDoneEvent(_ContentEvent, tag="response.output_text.done", kw_only=True):
    """An output text part is complete."""

    text: str
    """The full text of the part."""
    logprobs: list[_Any] | None | UnsetType = UNSET
    """Log probabilities of the tokens of the part."""


class ResponseOutputTextAnnotationAddedEvent(
    _ContentEvent, tag="response.output_text.annotation.added", kw_only=True
):
    """An annotation (citation, file path, ...) was added to an output text part."""

    annotation_index: int = 0
    """Position of the annotation in the part's `annotations`."""
    annotation: _Any | None | UnsetType = UNSET
    """The annotation."""


class ResponseRefusalDeltaEvent(_DeltaMixin, tag="response.refusal.delta", kw_only=True):
    """A fragment of refusal text."""


class ResponseRefusalDoneEvent(_ContentEvent, tag="response.refusal.done", kw_only=True):
    """A refusal part is complete."""

    refusal: str
    """The full refusal text."""


class ResponseReasoningTextDeltaEvent(
    _DeltaMixin, tag="response.reasoning_text.delta", kw_only=True
):
    """A fragment of raw reasoning text."""


class ResponseReasoningTextDoneEvent(
    _ContentEvent, tag="response.reasoning_text.done", kw_only=True
):
    """A reasoning text part is complete."""

    text: str
    """The full reasoning text of the part."""


class _SummaryEvent(_ItemEvent, kw_only=True):
    summary_index: int = 0
    """Position of the summary part in the reasoning item's `summary`."""


class ResponseReasoningSummaryPartAddedEvent(
    _SummaryEvent, tag="response.reasoning_summary_part.added", kw_only=True
):
    """A reasoning summary part was added."""

    part: _Any
    """The summary part (`summary_text`)."""


class ResponseReasoningSummaryPartDoneEvent(
    _SummaryEvent, tag="response.reasoning_summary_part.done", kw_only=True
):
    """A reasoning summary part is complete."""

    part: _Any
    """The final summary part."""
    status: str | None | UnsetType = UNSET
    """`incomplete` when the part was cut."""


class ResponseReasoningSummaryTextDeltaEvent(
    _SummaryEvent, tag="response.reasoning_summary_text.delta", kw_only=True
):
    """A fragment of reasoning summary text."""

    delta: str
    """The text fragment to append."""
    obfuscation: str | UnsetType = UNSET
    """Random padding that hides the length of the delta."""


class ResponseReasoningSummaryTextDoneEvent(
    _SummaryEvent, tag="response.reasoning_summary_text.done", kw_only=True
):
    """A reasoning summary text is complete."""

    text: str
    """The full summary text."""


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


class ResponseAudioDeltaEvent(_Event, tag="response.audio.delta", kw_only=True):
    """A fragment of output audio."""

    delta: str
    """Base64-encoded audio bytes."""


class ResponseAudioDoneEvent(_Event, tag="response.audio.done", kw_only=True):
    """The output audio is complete."""


class ResponseAudioTranscriptDeltaEvent(
    _Event, tag="response.audio.transcript.delta", kw_only=True
):
    """A fragment of the output audio's transcript."""

    delta: str
    """The transcript fragment."""


class ResponseAudioTranscriptDoneEvent(_Event, tag="response.audio.transcript.done", kw_only=True):
    """The output audio's transcript is complete."""


class ResponseErrorEvent(_Event, tag="error", kw_only=True):
    """Terminal: an error occurred while streaming (fields flat, or nested under `error`)."""

    code: str | None | UnsetType = UNSET
    """Error code."""
    message: str | None | UnsetType = UNSET
    """Human-readable description."""
    param: str | None | UnsetType = UNSET
    """The request parameter the error is about."""
    error: _Any | None | UnsetType = UNSET
    """The error object (`type`, `code`, `message`, `param`), as the API sends it today."""


class ResponseKeepaliveEvent(_Event, tag="keepalive", kw_only=True):
    """A heartbeat sent during long-running responses; carries no response state."""


class UnknownEvent(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Any event whose `type` is not one of `EVENT_TYPES` (a future or provider-specific event)."""

    type: str | UnsetType = UNSET
    """The event type, if the payload names one."""


StreamEvent = (
    ResponseCreatedEvent
    | ResponseQueuedEvent
    | ResponseInProgressEvent
    | ResponseCompletedEvent
    | ResponseIncompleteEvent
    | ResponseFailedEvent
    | ResponseOutputItemAddedEvent
    | ResponseOutputItemDoneEvent
    | ResponseContentPartAddedEvent
    | ResponseContentPartDoneEvent
    | ResponseTextDeltaEvent
    | ResponseTextDoneEvent
    | ResponseOutputTextAnnotationAddedEvent
    | ResponseRefusalDeltaEvent
    | ResponseRefusalDoneEvent
    | ResponseReasoningTextDeltaEvent
    | ResponseReasoningTextDoneEvent
    | ResponseReasoningSummaryPartAddedEvent
    | ResponseReasoningSummaryPartDoneEvent
    | ResponseReasoningSummaryTextDeltaEvent
    | ResponseReasoningSummaryTextDoneEvent
    | ResponseFunctionCallArgumentsDeltaEvent
    | ResponseFunctionCallArgumentsDoneEvent
    | ResponseCustomToolCallInputDeltaEvent
    | ResponseCustomToolCallInputDoneEvent
    | ResponseMcpCallArgumentsDeltaEvent
    | ResponseMcpCallArgumentsDoneEvent
    | ResponseCodeInterpreterCallCodeDeltaEvent
    | ResponseCodeInterpreterCallCodeDoneEvent
    | ResponseApplyPatchCallOperationDiffDeltaEvent
    | ResponseApplyPatchCallOperationDiffDoneEvent
    | ResponseShellCallCommandAddedEvent
    | ResponseShellCallCommandDeltaEvent
    | ResponseShellCallCommandDoneEvent
    | ResponseShellCallOutputContentDeltaEvent
    | ResponseShellCallOutputContentDoneEvent
    | ResponseFileSearchCallInProgressEvent
    | ResponseFileSearchCallSearchingEvent
    | ResponseFileSearchCallCompletedEvent
    | ResponseWebSearchCallInProgressEvent
    | ResponseWebSearchCallSearchingEvent
    | ResponseWebSearchCallCompletedEvent
    | ResponseCodeInterpreterCallInProgressEvent
    | ResponseCodeInterpreterCallInterpretingEvent
    | ResponseCodeInterpreterCallCompletedEvent
    | ResponseImageGenCallInProgressEvent
    | ResponseImageGenCallGeneratingEvent
    | ResponseImageGenCallCompletedEvent
    | ResponseImageGenCallPartialImageEvent
    | ResponseMcpCallInProgressEvent
    | ResponseMcpCallCompletedEvent
    | ResponseMcpCallFailedEvent
    | ResponseMcpListToolsInProgressEvent
    | ResponseMcpListToolsCompletedEvent
    | ResponseMcpListToolsFailedEvent
    | ResponseCompactionCompactingEvent
    | ResponseAudioDeltaEvent
    | ResponseAudioDoneEvent
    | ResponseAudioTranscriptDeltaEvent
    | ResponseAudioTranscriptDoneEvent
    | ResponseErrorEvent
    | ResponseKeepaliveEvent
)
"""Every stream event the Responses API documents, tagged by `type` (see `decode_event` for the fallback)."""

EVENT_TYPES: Final[frozenset[str]] = frozenset(
    str(cls.__struct_config__.tag) for cls in StreamEvent.__args__
)
"""The `type` of every event in `StreamEvent`."""

_event_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(StreamEvent)
_unknown_decoder = msgspec.json.Decoder(UnknownEvent)


def decode_event(data: bytes | str) -> Any:
    """Decode one event payload as a `StreamEvent`, or `UnknownEvent` when its type is not a known one.

    Raises `msgspec.DecodeError` / `msgspec.ValidationError` for invalid JSON, a non-object,
    or a known event type whose fields have the wrong shape (what the JSON Schema rejects too).
    """
    try:
        return _event_decoder.decode(data)
    except msgspec.ValidationError:
        unknown = _unknown_decoder.decode(data)
        if isinstance(unknown.type, str) and unknown.type in EVENT_TYPES:
            raise
        return unknown


# ---------------------------------------------------------------------- reassembly

_LIFECYCLE: Final = {
    "response.created": None,
    "response.queued": None,
    "response.in_progress": None,
    "response.completed": "complete",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}

_Where = Literal["part", "field", "operation", "command"]


class _Slot(NamedTuple):
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


def _slots() -> dict[str, _Slot]:
    table: dict[str, _Slot] = {}
    specs: list[tuple[str, str, _Where, str, str, str, str, str]] = [
        # type stem, item type, where, container, index key, field, part type, done value key
        (
            "response.output_text",
            "message",
            "part",
            "content",
            "content_index",
            "text",
            "output_text",
            "text",
        ),
        (
            "response.refusal",
            "message",
            "part",
            "content",
            "content_index",
            "refusal",
            "refusal",
            "refusal",
        ),
        (
            "response.reasoning_text",
            "reasoning",
            "part",
            "content",
            "content_index",
            "text",
            "reasoning_text",
            "text",
        ),
        (
            "response.reasoning_summary_text",
            "reasoning",
            "part",
            "summary",
            "summary_index",
            "text",
            "summary_text",
            "text",
        ),
        (
            "response.function_call_arguments",
            "function_call",
            "field",
            "",
            "",
            "arguments",
            "",
            "arguments",
        ),
        (
            "response.custom_tool_call_input",
            "custom_tool_call",
            "field",
            "",
            "",
            "input",
            "",
            "input",
        ),
        ("response.mcp_call_arguments", "mcp_call", "field", "", "", "arguments", "", "arguments"),
        (
            "response.code_interpreter_call_code",
            "code_interpreter_call",
            "field",
            "",
            "",
            "code",
            "",
            "code",
        ),
        (
            "response.apply_patch_call_operation_diff",
            "apply_patch_call",
            "operation",
            "",
            "",
            "diff",
            "",
            "diff",
        ),
        (
            "response.shell_call_command",
            "shell_call",
            "command",
            "",
            "command_index",
            "",
            "",
            "command",
        ),
    ]
    for stem, item_type, where, container, index_key, field, part_type, done_key in specs:
        table[stem + ".delta"] = _Slot(
            item_type, where, container, index_key, field, part_type, "delta", True
        )
        table[stem + ".done"] = _Slot(
            item_type, where, container, index_key, field, part_type, done_key, False
        )
    # A shell command is announced with its first text.
    table["response.shell_call_command.added"] = table["response.shell_call_command.done"]
    return table


_SLOTS: Final = _slots()
_SLOT_CLASSES: Final = {
    cls: _SLOTS[str(cls.__struct_config__.tag)]
    for cls in StreamEvent.__args__
    if str(cls.__struct_config__.tag) in _SLOTS
}
_PART_EVENTS: Final = {
    "response.content_part.added": ("content", "content_index", False),
    "response.content_part.done": ("content", "content_index", True),
    "response.reasoning_summary_part.added": ("summary", "summary_index", False),
    "response.reasoning_summary_part.done": ("summary", "summary_index", True),
}
_PART_TEXT_FIELD: Final = {
    "output_text": "text",
    "refusal": "refusal",
    "reasoning_text": "text",
    "summary_text": "text",
}
_MAX_NOTES = 32

_SlotKey = tuple[str, int]  # (kind, index): ("content", 0), ("arguments", 0), ("command", 2), ...


def _index(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _place(existing: Any, index: int, value: Any) -> list[Any]:
    """`existing` (a list, else empty) with `value` at position `index`.

    Positions come from the stream and may be absurd (`content_index: 10**9`), so a
    position past the end appends instead of padding: memory stays proportional to what
    arrived, and the order of the parts is kept.
    """
    items = list(existing) if isinstance(existing, list) else []
    if index < len(items):
        items[index] = value
    else:
        items.append(value)
    return items


class _ItemState:
    """One output item being rebuilt: the item as last announced plus what deltas added."""

    __slots__ = ("annotations", "done", "final_parts", "item", "parts", "texts")

    def __init__(self, item: _Any) -> None:
        self.item = item
        self.done = False
        self.parts: dict[tuple[str, int], _Any] = {}
        self.final_parts: set[tuple[str, int]] = set()
        self.texts: dict[tuple[str, str, int], TextParts] = {}
        self.annotations: dict[int, list[tuple[int, Any]]] = {}

    def build(self) -> _Any:
        """The item as far as it is known (the server's own item once it is done)."""
        if self.done:
            return self.item
        out = dict(self.item)
        parts = {key: dict(part) for key, part in self.parts.items()}
        commands: dict[int, str] = {}
        for (where, field, index), fragments in self.texts.items():
            text = fragments.value()
            if where == "content" or where == "summary":
                parts.setdefault((where, index), {})[field] = text
            elif where == "field":
                out[field] = text
            elif where == "operation":
                operation = out.get("operation")
                out["operation"] = {
                    **(operation if isinstance(operation, dict) else {}),
                    field: text,
                }
            else:  # a shell command
                commands[index] = text
        if commands:
            action = out.get("action")
            action = dict(action) if isinstance(action, dict) else {}
            listed = action.get("commands")
            for index in sorted(commands):
                listed = _place(listed, index, commands[index])
            action["commands"] = listed
            out["action"] = action
        for content_index, added in self.annotations.items():
            if ("content", content_index) in self.final_parts:
                continue
            part = parts.setdefault(("content", content_index), {"type": "output_text", "text": ""})
            existing = part.get("annotations")
            annotations = list(existing) if isinstance(existing, list) else []
            for _, annotation in sorted(added, key=lambda pair: pair[0]):
                annotations.append(annotation)
            part["annotations"] = annotations
        for container in ("content", "summary"):
            indexes = sorted(index for kind, index in parts if kind == container)
            if not indexes:
                continue
            merged = out.get(container)
            for index in indexes:
                merged = _place(merged, index, parts[(container, index)])
            assert isinstance(merged, list)
            out[container] = [part for part in merged if part is not None]
        return out


class StreamState:
    """Incremental reassembly of one OpenAI Responses API stream; no I/O, never raises."""

    __slots__ = ("_envelope", "_error", "_final", "_items", "_notes", "_suppressed", "_terminal")

    def __init__(self) -> None:
        self._terminal: Terminal | None = None
        self._final: _Any | None = None
        self._envelope: _Any | None = None
        self._items: dict[int, _ItemState] = {}
        self._error: _Any | None = None
        self._notes: list[str] = []
        self._suppressed = 0

    @property
    def terminal(self) -> Terminal | None:
        """The terminal kind once `response.completed|incomplete|failed` or `error` was fed."""
        return self._terminal

    def feed(self, event: SseEvent) -> None:
        """Take one decoded SSE event; never raises, whatever it holds."""
        try:
            self._feed(event)
        except Exception as exc:
            self._note(f"event could not be used ({type(exc).__name__})")

    def result(self) -> StreamResult:
        """The final response, or the partial reconstruction when the stream was cut."""
        response: _Any | None
        if self._final is not None:
            response = self._final
            if response.get("output") is None and self._items:
                response = {**response, "output": self._output()}
        else:
            output = self._output()
            if self._envelope is None and not output:
                response = None
            else:
                response = (
                    dict(self._envelope) if self._envelope is not None else {"object": "response"}
                )
                if output or not isinstance(response.get("output"), list):
                    response["output"] = output
        notes = list(self._notes)
        if self._suppressed:
            notes.append(f"{self._suppressed} more notes suppressed")
        return StreamResult(
            response=response,
            terminal=self._terminal,
            truncated=self._terminal is None,
            error=self._error,
            dropped=notes,
        )

    # -- internals ------------------------------------------------------------------

    def _note(self, note: str) -> None:
        if len(self._notes) < _MAX_NOTES:
            self._notes.append(note)
        else:
            self._suppressed += 1

    def _output(self) -> list[_Any]:
        return [self._items[index].build() for index in sorted(self._items)]

    def _feed(self, event: SseEvent) -> None:
        data = event.data
        if event.event.strip().lower() == "error":
            self._on_error(_codec.decode_object(data) or {"message": _codec.raw_text(data)})
            return
        try:
            typed = _event_decoder.decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            typed = None
        slot = _SLOT_CLASSES.get(type(typed))
        if slot is not None:
            if self._after_terminal(typed.__struct_config__.tag):
                return
            index = getattr(typed, slot.index_key) if slot.index_key else 0
            value = getattr(typed, slot.value_key)
            self._on_slot(
                slot,
                typed.output_index,
                index,
                value,
                typed.item_id,
                str(typed.__struct_config__.tag),
            )
            return
        del (
            typed
        )  # a final event carries the whole output: don't hold it twice while decoding it again
        stripped = data.strip()
        if not stripped or stripped == b"[DONE]":
            return
        payload = _codec.decode_object(data)
        if payload is None:
            self._note("non-JSON or non-object data: " + _codec.raw_text(stripped[:40]))
            return
        self._on_payload(payload)

    def _after_terminal(self, kind: object) -> bool:
        if self._terminal is None or (self._terminal == "error" and kind in _LIFECYCLE):
            return False
        self._note(f"event after the terminal event: {kind!s:.60}")
        return True

    def _on_payload(self, payload: _Any) -> None:
        kind = payload.get("type")
        if kind is None and isinstance(payload.get("error"), dict):
            self._on_error(payload)  # an error body without `type` (Groq, OpenRouter)
            return
        if not isinstance(kind, str):
            self._note("event without a string type")
            return
        if self._after_terminal(kind):
            return
        if kind == "error":
            self._on_error(payload)
        elif kind in _LIFECYCLE:
            self._on_lifecycle(kind, payload.get("response"))
        elif kind == "response.output_item.added" or kind == "response.output_item.done":
            self._on_item(kind, payload)
        elif kind in _PART_EVENTS:
            self._on_part(kind, payload)
        elif kind in _SLOTS:
            slot = _SLOTS[kind]
            index = payload.get(slot.index_key, 0) if slot.index_key else 0
            self._on_slot(
                slot,
                payload.get("output_index"),
                index,
                payload.get(slot.value_key),
                payload.get("item_id"),
                kind,
            )
        elif kind == "response.output_text.annotation.added":
            self._on_annotation(payload)
        elif kind not in EVENT_TYPES:
            self._note(f"unknown event type ignored: {kind:.60}")
        # Other known events (status changes, audio, partial images, shell output) carry
        # nothing that the final item does not repeat.

    def _on_error(self, payload: _Any) -> None:
        if self._terminal is None:
            self._terminal = "error"
            self._error = payload
        else:
            self._note("error event after the terminal event")

    def _on_lifecycle(self, kind: str, response: Any) -> None:
        terminal = _LIFECYCLE[kind]
        if not isinstance(response, dict):
            self._note(f"{kind} without a response object")
            if terminal is not None and self._terminal is None:
                self._terminal = terminal  # type: ignore[assignment]
            return
        if terminal is None:
            self._envelope = response
            return
        self._final = response
        if isinstance(response.get("output"), list):
            # The final response carries every item: the rebuilt ones would be a second copy.
            self._items.clear()
        if self._terminal is None:
            self._terminal = terminal  # type: ignore[assignment]

    def _on_item(self, kind: str, payload: _Any) -> None:
        index = _index(payload.get("output_index"))
        item = payload.get("item")
        if index is None or not isinstance(item, dict):
            self._note(f"{kind} without output_index or item")
            return
        state = self._items.get(index)
        if kind == "response.output_item.added":
            if state is None:
                self._items[index] = _ItemState(item)
            elif state.done:
                self._note(f"output_item.added after output_item.done at output_index {index}")
            else:
                state.item = item
        else:
            if state is None:
                state = self._items[index] = _ItemState(item)
            state.item = item
            state.done = True
            # The done item carries the whole text and every part; keep it once, not twice.
            state.texts.clear()
            state.parts.clear()
            state.annotations.clear()

    def _item_for(self, index: int, item_type: str, item_id: Any, kind: str) -> _ItemState | None:
        state = self._items.get(index)
        if state is None:
            self._note(f"{kind} before its output item at output_index {index}: item synthesized")
            item: _Any = {"type": item_type}
            if isinstance(item_id, str):
                item["id"] = item_id
            if item_type == "message":
                item.update(role="assistant", status="in_progress", content=[])
            state = self._items[index] = _ItemState(item)
        elif state.done:
            self._note(f"{kind} after output_item.done at output_index {index} ignored")
            return None
        return state

    def _on_part(self, kind: str, payload: _Any) -> None:
        container, index_key, final = _PART_EVENTS[kind]
        output_index = _index(payload.get("output_index"))
        index = _index(payload.get(index_key, 0))
        part = payload.get("part")
        if output_index is None or index is None or not isinstance(part, dict):
            self._note(f"{kind} without output_index, {index_key} or part")
            return
        item_type = (
            "message"
            if container == "content" and part.get("type") != "reasoning_text"
            else "reasoning"
        )
        state = self._item_for(output_index, item_type, payload.get("item_id"), kind)
        if state is None:
            return
        state.parts[(container, index)] = part
        field = _PART_TEXT_FIELD.get(part.get("type"))  # type: ignore[arg-type]
        if final:
            state.final_parts.add((container, index))
            if field is not None and isinstance(part.get(field), str):
                state.texts.pop((container, field, index), None)

    def _on_slot(
        self, slot: _Slot, output_index: Any, index: Any, value: Any, item_id: Any, kind: str
    ) -> None:
        output_index = _index(output_index)
        index = _index(index)
        if output_index is None or index is None or not isinstance(value, str):
            self._note(f"{kind} without a usable output_index, index or text")
            return
        state = self._item_for(output_index, slot.item_type, item_id, kind)
        if state is None:
            return
        if slot.where == "part":
            key = (slot.container, slot.field, index)
            if (slot.container, index) not in state.parts:
                state.parts[(slot.container, index)] = _new_part(slot, state.item)
        else:
            key = (slot.where, slot.field, index)
        fragments = state.texts.get(key)
        if fragments is None or not slot.append:
            state.texts[key] = TextParts(value)
        else:
            fragments.append(value)

    def _on_annotation(self, payload: _Any) -> None:
        output_index = _index(payload.get("output_index"))
        content_index = _index(payload.get("content_index", 0))
        annotation = payload.get("annotation")
        if output_index is None or content_index is None or annotation is None:
            self._note(
                "output_text.annotation.added without output_index, content_index or annotation"
            )
            return
        kind = "response.output_text.annotation.added"
        state = self._item_for(output_index, "message", payload.get("item_id"), kind)
        if state is None:
            return
        position = _index(payload.get("annotation_index")) or 0
        state.annotations.setdefault(content_index, []).append((position, annotation))


def _new_part(slot: _Slot, item: _Any) -> _Any:
    """The part a delta writes into when the part was never announced."""
    part_type = slot.part_type
    if part_type == "output_text" and item.get("type") == "reasoning":
        part_type = "reasoning_text"  # some providers stream raw reasoning as output_text parts
    part: _Any = {"type": part_type, slot.field: ""}
    if part_type == "output_text":
        part["annotations"] = []
    return part


END_MARKER_LEN = len("response.incomplete")
"""Length of the longest marker `may_end` looks for."""


def may_end(chunk: bytes) -> bool:
    """False only when SSE text holding `chunk` cannot complete the terminal event.

    What makes the state terminal: `response.completed`, `response.incomplete` or
    `response.failed`; an `error` event (its name compared case-insensitively, hence the
    lower-casing); a data object of type `error` or with an `error` member.
    """
    chunk = chunk.lower()
    return (
        b"error" in chunk
        or b"response.completed" in chunk
        or b"response.incomplete" in chunk
        or b"response.failed" in chunk
        or escaped_ascii(chunk)
    )


def new_stream_state() -> StreamState:
    """A fresh stream state."""
    return StreamState()


# ------------------------------------------------------------------------- derivation


class _TokenDetails(msgspec.Struct, gc=False):
    cached_tokens: Any = None
    reasoning_tokens: Any = None


class _UsageView(msgspec.Struct, gc=False):
    input_tokens: Any = None
    output_tokens: Any = None
    total_tokens: Any = None
    input_tokens_details: _TokenDetails | NotObject = None
    output_tokens_details: _TokenDetails | NotObject = None


class _TextView(msgspec.Struct, gc=False):
    text: Any = None


class _ItemView(msgspec.Struct, gc=False):
    type: Any = None
    call_id: Any = None
    name: Any = None
    arguments: Any = None
    input: Any = None
    summary: list[_TextView | NotObject] | NotList = None
    content: list[_TextView | NotObject] | NotList = None


class _IncompleteView(msgspec.Struct, gc=False):
    reason: Any = None


class _ResponseView(msgspec.Struct, gc=False):
    """The members of a Responses `response` that `derive` reads; the rest is skipped unread."""

    id: Any = None
    model: Any = None
    status: Any = None
    incomplete_details: _IncompleteView | NotObject = None
    usage: _UsageView | NotObject = None
    output: list[_ItemView | NotObject] | NotList = None


_response_view = msgspec.json.Decoder(_ResponseView)
_NO_USAGE = _UsageView()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _detail(details: object, name: str) -> object:
    return getattr(details, name) if isinstance(details, _TokenDetails) else None


def derive(request: Payload, response: Payload) -> Derived:
    """Derive record facts from a Responses request and response; never raises.

    Cached tokens are part of `input_tokens` and reasoning tokens part of `output_tokens`,
    so nothing is added twice. `finish_reason` is `incomplete_details.reason` (null for a
    completed response, as NeMo Gym records it). Tool calls are the `function_call` and
    `custom_tool_call` items; reasoning is every summary and reasoning text, in order,
    joined by a newline.
    """
    resp = decode_view(response, _response_view) or _ResponseView()
    usage = resp.usage if isinstance(resp.usage, _UsageView) else _NO_USAGE
    tokens_in = token_count(usage.input_tokens)
    tokens_out = token_count(usage.output_tokens)
    tokens_total = token_count(usage.total_tokens)
    if tokens_total is None and tokens_in is not None and tokens_out is not None:
        tokens_total = tokens_in + tokens_out
    cached = token_count(_detail(usage.input_tokens_details, "cached_tokens"))
    tool_calls: list[ToolCall] = []
    reasoning: list[str] = []
    output = resp.output
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, _ItemView):
            continue
        kind = item.type
        if kind == "function_call" or kind == "custom_tool_call":
            raw = item.arguments if kind == "function_call" else item.input
            tool_calls.append(
                ToolCall(
                    call_id=_str(item.call_id), name=_str(item.name), arguments=tool_arguments(raw)
                )
            )
        elif kind == "reasoning":
            for parts in (item.summary, item.content):
                for part in parts if isinstance(parts, list) else []:
                    text = part.text if isinstance(part, _TextView) else None
                    if isinstance(text, str) and text:
                        reasoning.append(text)
    incomplete = resp.incomplete_details
    return Derived(
        response_id=_str(resp.id),
        model=_str(resp.model) or _str(request_model(request)),
        response_status=_str(resp.status),
        finish_reason=_str(incomplete.reason) if isinstance(incomplete, _IncompleteView) else None,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        tokens_reasoning=token_count(_detail(usage.output_tokens_details, "reasoning_tokens")),
        tokens_total=tokens_total,
        cached_tokens=cached,
        cache_hit=None if cached is None else cached > 0,
        tool_calls=tool_calls,
        reasoning_content="\n".join(reasoning) if reasoning else None,
    )
