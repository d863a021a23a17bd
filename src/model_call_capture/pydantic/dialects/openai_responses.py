# Generated from schemas/v1/dialects/openai-responses.schema.json by `python codegen/generate.py`; do not edit by hand.
from __future__ import annotations

from typing import Annotated, Any, Literal

from .._base import JsonModel
from pydantic import (
    MISSING,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)
from typing_extensions import TypeAliasType

OpenAIResponses = TypeAliasType(
    "OpenAIResponses", Annotated[Any, Field(title="OpenAIResponses")]
)
"""
OpenAI Responses API (`POST /v1/responses`), as far as model-call-capture reads it: the request, the response object (also the object reassembled from a stream), and the stream's event union. Every object is open: providers add fields every month and a capture must never reject one; an event of an unknown type is accepted as `UnknownEvent`. Bootstrapped from `msgspec.json.schema` of the Structs in `model_call_capture.dialects.responses`; tests/dialects/test_responses.py proves the two agree.
"""


class Request(JsonModel):
    """
    A `POST /v1/responses` request body (the fields people send; others are accepted).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    model: StrictStr | MISSING = MISSING
    """
    Model id, e.g. `gpt-5`.
    """
    input: StrictStr | list[dict[str, Any]] | MISSING = MISSING
    """
    Text, or a list of input items (messages, function_call_output, reasoning, ...).
    """
    instructions: StrictStr | None | MISSING = MISSING
    """
    System (developer) message inserted before the input.
    """
    tools: list[dict[str, Any]] | None | MISSING = MISSING
    """
    Tools the model may call (function, custom, web_search, mcp, ...).
    """
    tool_choice: StrictStr | dict[str, Any] | None | MISSING = MISSING
    """
    `none`, `auto`, `required`, or an object naming a tool.
    """
    parallel_tool_calls: StrictBool | None | MISSING = MISSING
    """
    Whether the model may call several tools at once.
    """
    stream: StrictBool | None | MISSING = MISSING
    """
    True to receive the response as Server-Sent Events.
    """
    stream_options: dict[str, Any] | None | MISSING = MISSING
    """
    Streaming options, e.g. `include_obfuscation`.
    """
    reasoning: dict[str, Any] | None | MISSING = MISSING
    """
    Reasoning settings: `effort`, `summary`.
    """
    text: dict[str, Any] | None | MISSING = MISSING
    """
    Text output settings: `format` (text, json_schema), `verbosity`.
    """
    max_output_tokens: StrictInt | None | MISSING = MISSING
    """
    Upper bound on generated tokens, reasoning included.
    """
    max_tool_calls: StrictInt | None | MISSING = MISSING
    """
    Upper bound on built-in tool calls.
    """
    temperature: StrictFloat | None | MISSING = MISSING
    """
    Sampling temperature.
    """
    top_p: StrictFloat | None | MISSING = MISSING
    """
    Nucleus sampling mass.
    """
    top_logprobs: StrictInt | None | MISSING = MISSING
    """
    Number of most likely tokens to return log probabilities for.
    """
    include: list[StrictStr] | None | MISSING = MISSING
    """
    Extra output to include, e.g. `reasoning.encrypted_content`.
    """
    previous_response_id: StrictStr | None | MISSING = MISSING
    """
    Continue from this stored response.
    """
    conversation: StrictStr | dict[str, Any] | None | MISSING = MISSING
    """
    Conversation this response belongs to.
    """
    store: StrictBool | None | MISSING = MISSING
    """
    Whether the provider stores the response.
    """
    background: StrictBool | None | MISSING = MISSING
    """
    Run the response in the background.
    """
    metadata: dict[str, Any] | None | MISSING = MISSING
    """
    Up to 16 caller-defined key/value pairs.
    """
    truncation: StrictStr | None | MISSING = MISSING
    """
    `auto` or `disabled`: how to handle input over the context window.
    """
    service_tier: StrictStr | None | MISSING = MISSING
    """
    Processing tier: `auto`, `default`, `flex`, `priority`, ...
    """
    prompt: dict[str, Any] | None | MISSING = MISSING
    """
    Reference to a stored prompt template and its variables.
    """
    prompt_cache_key: StrictStr | None | MISSING = MISSING
    """
    Key used to group requests for prompt caching.
    """
    prompt_cache_retention: StrictStr | None | MISSING = MISSING
    """
    Prompt cache retention policy, e.g. `24h`.
    """
    safety_identifier: StrictStr | None | MISSING = MISSING
    """
    Stable end-user identifier for abuse detection.
    """
    user: StrictStr | None | MISSING = MISSING
    """
    Deprecated end-user identifier.
    """


class InputTokensDetails(JsonModel):
    """
    Breakdown of the input tokens.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    cached_tokens: StrictInt | None | MISSING = MISSING
    """
    Input tokens served from the prompt cache (counted inside `input_tokens`).
    """


class OutputTokensDetails(JsonModel):
    """
    Breakdown of the output tokens.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    reasoning_tokens: StrictInt | None | MISSING = MISSING
    """
    Reasoning tokens (counted inside `output_tokens`).
    """


class ResponseError(JsonModel):
    """
    Why a response failed.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    code: StrictStr | None | MISSING = MISSING
    """
    Error code, e.g. `server_error`, `rate_limit_exceeded`.
    """
    message: StrictStr | None | MISSING = MISSING
    """
    Human-readable description.
    """


class IncompleteDetails(JsonModel):
    """
    Why a response is incomplete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    reason: StrictStr | None | MISSING = MISSING
    """
    `max_output_tokens` or `content_filter`.
    """


class ResponseOutputItemAddedEvent(JsonModel):
    """
    An output item was added.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.output_item.added"]
    """
    The event type, `response.output_item.added`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    item: dict[str, Any]
    """
    The output item (message, function_call, reasoning, ...), an open object tagged by `type`.
    """


class ResponseOutputItemDoneEvent(JsonModel):
    """
    An output item is complete; carries the final item.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.output_item.done"]
    """
    The event type, `response.output_item.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    item: dict[str, Any]
    """
    The output item (message, function_call, reasoning, ...), an open object tagged by `type`.
    """


class ResponseContentPartAddedEvent(JsonModel):
    """
    A content part was added to a message or reasoning item.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.content_part.added"]
    """
    The event type, `response.content_part.added`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    content_index: StrictInt = 0
    """
    Position of the content part in the item's `content`.
    """
    part: dict[str, Any]
    """
    The content part (output_text, refusal, reasoning_text).
    """


class ResponseContentPartDoneEvent(JsonModel):
    """
    A content part is complete; carries the final part.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.content_part.done"]
    """
    The event type, `response.content_part.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    content_index: StrictInt = 0
    """
    Position of the content part in the item's `content`.
    """
    part: dict[str, Any]
    """
    The final content part.
    """


class ResponseTextDeltaEvent(JsonModel):
    """
    A fragment of output text.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.output_text.delta"]
    """
    The event type, `response.output_text.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    content_index: StrictInt = 0
    """
    Position of the content part in the item's `content`.
    """
    delta: StrictStr
    """
    The text fragment to append.
    """
    obfuscation: StrictStr | MISSING = MISSING
    """
    Random padding that hides the length of the delta.
    """
    logprobs: list[dict[str, Any]] | None | MISSING = MISSING
    """
    Log probabilities of the tokens in the delta.
    """


class ResponseTextDoneEvent(JsonModel):
    """
    An output text part is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.output_text.done"]
    """
    The event type, `response.output_text.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    content_index: StrictInt = 0
    """
    Position of the content part in the item's `content`.
    """
    text: StrictStr
    """
    The full text of the part.
    """
    logprobs: list[dict[str, Any]] | None | MISSING = MISSING
    """
    Log probabilities of the tokens of the part.
    """


class ResponseOutputTextAnnotationAddedEvent(JsonModel):
    """
    An annotation (citation, file path, ...) was added to an output text part.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.output_text.annotation.added"]
    """
    The event type, `response.output_text.annotation.added`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    content_index: StrictInt = 0
    """
    Position of the content part in the item's `content`.
    """
    annotation_index: StrictInt = 0
    """
    Position of the annotation in the part's `annotations`.
    """
    annotation: dict[str, Any] | None | MISSING = MISSING
    """
    The annotation.
    """


class ResponseRefusalDeltaEvent(JsonModel):
    """
    A fragment of refusal text.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.refusal.delta"]
    """
    The event type, `response.refusal.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    content_index: StrictInt = 0
    """
    Position of the content part in the item's `content`.
    """
    delta: StrictStr
    """
    The text fragment to append.
    """
    obfuscation: StrictStr | MISSING = MISSING
    """
    Random padding that hides the length of the delta.
    """


class ResponseRefusalDoneEvent(JsonModel):
    """
    A refusal part is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.refusal.done"]
    """
    The event type, `response.refusal.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    content_index: StrictInt = 0
    """
    Position of the content part in the item's `content`.
    """
    refusal: StrictStr
    """
    The full refusal text.
    """


class ResponseReasoningTextDeltaEvent(JsonModel):
    """
    A fragment of raw reasoning text.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.reasoning_text.delta"]
    """
    The event type, `response.reasoning_text.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    content_index: StrictInt = 0
    """
    Position of the content part in the item's `content`.
    """
    delta: StrictStr
    """
    The text fragment to append.
    """
    obfuscation: StrictStr | MISSING = MISSING
    """
    Random padding that hides the length of the delta.
    """


class ResponseReasoningTextDoneEvent(JsonModel):
    """
    A reasoning text part is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.reasoning_text.done"]
    """
    The event type, `response.reasoning_text.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    content_index: StrictInt = 0
    """
    Position of the content part in the item's `content`.
    """
    text: StrictStr
    """
    The full reasoning text of the part.
    """


class ResponseReasoningSummaryPartAddedEvent(JsonModel):
    """
    A reasoning summary part was added.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.reasoning_summary_part.added"]
    """
    The event type, `response.reasoning_summary_part.added`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    summary_index: StrictInt = 0
    """
    Position of the summary part in the reasoning item's `summary`.
    """
    part: dict[str, Any]
    """
    The summary part (`summary_text`).
    """


class ResponseReasoningSummaryPartDoneEvent(JsonModel):
    """
    A reasoning summary part is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.reasoning_summary_part.done"]
    """
    The event type, `response.reasoning_summary_part.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    summary_index: StrictInt = 0
    """
    Position of the summary part in the reasoning item's `summary`.
    """
    part: dict[str, Any]
    """
    The final summary part.
    """
    status: StrictStr | None | MISSING = MISSING
    """
    `incomplete` when the part was cut.
    """


class ResponseReasoningSummaryTextDeltaEvent(JsonModel):
    """
    A fragment of reasoning summary text.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.reasoning_summary_text.delta"]
    """
    The event type, `response.reasoning_summary_text.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    summary_index: StrictInt = 0
    """
    Position of the summary part in the reasoning item's `summary`.
    """
    delta: StrictStr
    """
    The text fragment to append.
    """
    obfuscation: StrictStr | MISSING = MISSING
    """
    Random padding that hides the length of the delta.
    """


class ResponseReasoningSummaryTextDoneEvent(JsonModel):
    """
    A reasoning summary text is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.reasoning_summary_text.done"]
    """
    The event type, `response.reasoning_summary_text.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    summary_index: StrictInt = 0
    """
    Position of the summary part in the reasoning item's `summary`.
    """
    text: StrictStr
    """
    The full summary text.
    """


class ResponseFunctionCallArgumentsDeltaEvent(JsonModel):
    """
    A fragment of a function call's JSON arguments.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.function_call_arguments.delta"]
    """
    The event type, `response.function_call_arguments.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    delta: StrictStr
    """
    The fragment to append.
    """
    obfuscation: StrictStr | MISSING = MISSING
    """
    Random padding that hides the length of the delta.
    """


class ResponseFunctionCallArgumentsDoneEvent(JsonModel):
    """
    A function call's arguments are complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.function_call_arguments.done"]
    """
    The event type, `response.function_call_arguments.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    arguments: StrictStr
    """
    The full JSON arguments text.
    """
    name: StrictStr | MISSING = MISSING
    """
    The function name (sent by some providers).
    """


class ResponseCustomToolCallInputDeltaEvent(JsonModel):
    """
    A fragment of a custom tool call's free-form input.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.custom_tool_call_input.delta"]
    """
    The event type, `response.custom_tool_call_input.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    delta: StrictStr
    """
    The fragment to append.
    """
    obfuscation: StrictStr | MISSING = MISSING
    """
    Random padding that hides the length of the delta.
    """


class ResponseCustomToolCallInputDoneEvent(JsonModel):
    """
    A custom tool call's input is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.custom_tool_call_input.done"]
    """
    The event type, `response.custom_tool_call_input.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    input: StrictStr
    """
    The full input text.
    """


class ResponseMcpCallArgumentsDeltaEvent(JsonModel):
    """
    A fragment of an MCP tool call's JSON arguments.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.mcp_call_arguments.delta"]
    """
    The event type, `response.mcp_call_arguments.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    delta: StrictStr
    """
    The fragment to append.
    """
    obfuscation: StrictStr | MISSING = MISSING
    """
    Random padding that hides the length of the delta.
    """


class ResponseMcpCallArgumentsDoneEvent(JsonModel):
    """
    An MCP tool call's arguments are complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.mcp_call_arguments.done"]
    """
    The event type, `response.mcp_call_arguments.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    arguments: StrictStr
    """
    The full JSON arguments text.
    """


class ResponseCodeInterpreterCallCodeDeltaEvent(JsonModel):
    """
    A fragment of the code a code interpreter call runs.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.code_interpreter_call_code.delta"]
    """
    The event type, `response.code_interpreter_call_code.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    delta: StrictStr
    """
    The fragment to append.
    """
    obfuscation: StrictStr | MISSING = MISSING
    """
    Random padding that hides the length of the delta.
    """


class ResponseCodeInterpreterCallCodeDoneEvent(JsonModel):
    """
    The code of a code interpreter call is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.code_interpreter_call_code.done"]
    """
    The event type, `response.code_interpreter_call_code.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    code: StrictStr
    """
    The full code.
    """


class ResponseApplyPatchCallOperationDiffDeltaEvent(JsonModel):
    """
    A fragment of the diff of an apply_patch call's operation.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.apply_patch_call_operation_diff.delta"]
    """
    The event type, `response.apply_patch_call_operation_diff.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    delta: StrictStr
    """
    The fragment to append.
    """
    obfuscation: StrictStr | MISSING = MISSING
    """
    Random padding that hides the length of the delta.
    """


class ResponseApplyPatchCallOperationDiffDoneEvent(JsonModel):
    """
    The diff of an apply_patch call's operation is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.apply_patch_call_operation_diff.done"]
    """
    The event type, `response.apply_patch_call_operation_diff.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    diff: StrictStr
    """
    The full diff.
    """


class ResponseShellCallCommandAddedEvent(JsonModel):
    """
    A command was added to a shell call.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.shell_call_command.added"]
    """
    The event type, `response.shell_call_command.added`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the shell call item.
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    command_index: StrictInt = 0
    """
    Position of the command in the shell call's `action.commands`.
    """
    command: StrictStr = ""
    """
    The command text so far.
    """


class ResponseShellCallCommandDeltaEvent(JsonModel):
    """
    A fragment of a shell call command.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.shell_call_command.delta"]
    """
    The event type, `response.shell_call_command.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the shell call item.
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    command_index: StrictInt = 0
    """
    Position of the command in the shell call's `action.commands`.
    """
    delta: StrictStr
    """
    The fragment to append.
    """
    obfuscation: StrictStr | None | MISSING = MISSING
    """
    Random padding that hides the length of the delta.
    """


class ResponseShellCallCommandDoneEvent(JsonModel):
    """
    A shell call command is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.shell_call_command.done"]
    """
    The event type, `response.shell_call_command.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the shell call item.
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    command_index: StrictInt = 0
    """
    Position of the command in the shell call's `action.commands`.
    """
    command: StrictStr
    """
    The full command.
    """


class ResponseShellCallOutputContentDeltaEvent(JsonModel):
    """
    A fragment of a shell call's output.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.shell_call_output_content.delta"]
    """
    The event type, `response.shell_call_output_content.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the shell call item.
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    command_index: StrictInt = 0
    """
    Position of the command in the shell call's `action.commands`.
    """
    delta: dict[str, Any]
    """
    The output fragment (`stdout`, `stderr`).
    """


class ResponseShellCallOutputContentDoneEvent(JsonModel):
    """
    A shell call's output is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.shell_call_output_content.done"]
    """
    The event type, `response.shell_call_output_content.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the shell call item.
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    command_index: StrictInt = 0
    """
    Position of the command in the shell call's `action.commands`.
    """
    output: list[dict[str, Any]]
    """
    The full output entries.
    """


class ResponseFileSearchCallInProgressEvent(JsonModel):
    """
    A file search call started.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.file_search_call.in_progress"]
    """
    The event type, `response.file_search_call.in_progress`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseFileSearchCallSearchingEvent(JsonModel):
    """
    A file search call is searching.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.file_search_call.searching"]
    """
    The event type, `response.file_search_call.searching`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseFileSearchCallCompletedEvent(JsonModel):
    """
    A file search call completed.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.file_search_call.completed"]
    """
    The event type, `response.file_search_call.completed`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseWebSearchCallInProgressEvent(JsonModel):
    """
    A web search call started.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.web_search_call.in_progress"]
    """
    The event type, `response.web_search_call.in_progress`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseWebSearchCallSearchingEvent(JsonModel):
    """
    A web search call is searching.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.web_search_call.searching"]
    """
    The event type, `response.web_search_call.searching`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseWebSearchCallCompletedEvent(JsonModel):
    """
    A web search call completed.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.web_search_call.completed"]
    """
    The event type, `response.web_search_call.completed`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseCodeInterpreterCallInProgressEvent(JsonModel):
    """
    A code interpreter call started.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.code_interpreter_call.in_progress"]
    """
    The event type, `response.code_interpreter_call.in_progress`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseCodeInterpreterCallInterpretingEvent(JsonModel):
    """
    A code interpreter call is running its code.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.code_interpreter_call.interpreting"]
    """
    The event type, `response.code_interpreter_call.interpreting`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseCodeInterpreterCallCompletedEvent(JsonModel):
    """
    A code interpreter call completed.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.code_interpreter_call.completed"]
    """
    The event type, `response.code_interpreter_call.completed`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseImageGenCallInProgressEvent(JsonModel):
    """
    An image generation call started.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.image_generation_call.in_progress"]
    """
    The event type, `response.image_generation_call.in_progress`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseImageGenCallGeneratingEvent(JsonModel):
    """
    An image generation call is generating.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.image_generation_call.generating"]
    """
    The event type, `response.image_generation_call.generating`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseImageGenCallCompletedEvent(JsonModel):
    """
    An image generation call completed.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.image_generation_call.completed"]
    """
    The event type, `response.image_generation_call.completed`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseImageGenCallPartialImageEvent(JsonModel):
    """
    A partial image of an image generation call.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.image_generation_call.partial_image"]
    """
    The event type, `response.image_generation_call.partial_image`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """
    partial_image_b64: StrictStr
    """
    Base64-encoded partial image.
    """
    partial_image_index: StrictInt = 0
    """
    Position of the partial image (0-based).
    """
    background: StrictStr | None | MISSING = MISSING
    """
    Background setting of the image.
    """
    output_format: StrictStr | None | MISSING = MISSING
    """
    Image format (png, webp, jpeg).
    """
    quality: StrictStr | None | MISSING = MISSING
    """
    Image quality setting.
    """
    size: StrictStr | None | MISSING = MISSING
    """
    Image size, e.g. `1024x1024`.
    """


class ResponseMcpCallInProgressEvent(JsonModel):
    """
    An MCP tool call started.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.mcp_call.in_progress"]
    """
    The event type, `response.mcp_call.in_progress`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseMcpCallCompletedEvent(JsonModel):
    """
    An MCP tool call completed.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.mcp_call.completed"]
    """
    The event type, `response.mcp_call.completed`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseMcpCallFailedEvent(JsonModel):
    """
    An MCP tool call failed.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.mcp_call.failed"]
    """
    The event type, `response.mcp_call.failed`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseMcpListToolsInProgressEvent(JsonModel):
    """
    Listing an MCP server's tools started.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.mcp_list_tools.in_progress"]
    """
    The event type, `response.mcp_list_tools.in_progress`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseMcpListToolsCompletedEvent(JsonModel):
    """
    Listing an MCP server's tools completed.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.mcp_list_tools.completed"]
    """
    The event type, `response.mcp_list_tools.completed`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseMcpListToolsFailedEvent(JsonModel):
    """
    Listing an MCP server's tools failed.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.mcp_list_tools.failed"]
    """
    The event type, `response.mcp_list_tools.failed`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseCompactionCompactingEvent(JsonModel):
    """
    A compaction item is being produced.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.compaction.compacting"]
    """
    The event type, `response.compaction.compacting`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    item_id: StrictStr | MISSING = MISSING
    """
    Id of the output item (may change from event to event with some providers).
    """
    output_index: StrictInt
    """
    Position of the item in `response.output`.
    """


class ResponseAudioDeltaEvent(JsonModel):
    """
    A fragment of output audio.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.audio.delta"]
    """
    The event type, `response.audio.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    delta: StrictStr
    """
    Base64-encoded audio bytes.
    """


class ResponseAudioDoneEvent(JsonModel):
    """
    The output audio is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.audio.done"]
    """
    The event type, `response.audio.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """


class ResponseAudioTranscriptDeltaEvent(JsonModel):
    """
    A fragment of the output audio's transcript.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.audio.transcript.delta"]
    """
    The event type, `response.audio.transcript.delta`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    delta: StrictStr
    """
    The transcript fragment.
    """


class ResponseAudioTranscriptDoneEvent(JsonModel):
    """
    The output audio's transcript is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.audio.transcript.done"]
    """
    The event type, `response.audio.transcript.done`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """


class ResponseErrorEvent(JsonModel):
    """
    Terminal: an error occurred while streaming (fields flat, or nested under `error`).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["error"]
    """
    The event type, `error`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    code: StrictStr | None | MISSING = MISSING
    """
    Error code.
    """
    message: StrictStr | None | MISSING = MISSING
    """
    Human-readable description.
    """
    param: StrictStr | None | MISSING = MISSING
    """
    The request parameter the error is about.
    """
    error: dict[str, Any] | None | MISSING = MISSING
    """
    The error object (`type`, `code`, `message`, `param`), as the API sends it today.
    """


class ResponseKeepaliveEvent(JsonModel):
    """
    A heartbeat sent during long-running responses; carries no response state.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["keepalive"]
    """
    The event type, `keepalive`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """


class UnknownEvent(JsonModel):
    """
    Any event whose `type` is not one of `EVENT_TYPES` (a future or provider-specific event).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: StrictStr | MISSING = MISSING
    """
    The event type, if the payload names one; never one of the known types (those must match their own definition).
    """


class ResponseUsage(JsonModel):
    """
    Token usage of a response.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    input_tokens: StrictInt | None | MISSING = MISSING
    """
    Input tokens, cached tokens included.
    """
    input_tokens_details: InputTokensDetails | None | MISSING = MISSING
    """
    Breakdown of the input tokens.
    """
    output_tokens: StrictInt | None | MISSING = MISSING
    """
    Output tokens, reasoning tokens included.
    """
    output_tokens_details: OutputTokensDetails | None | MISSING = MISSING
    """
    Breakdown of the output tokens.
    """
    total_tokens: StrictInt | None | MISSING = MISSING
    """
    Input plus output tokens.
    """


class Response(JsonModel):
    """
    A Responses API response object (`object: "response"`).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    id: StrictStr | MISSING = MISSING
    """
    Response id, `resp_...`.
    """
    object: StrictStr | MISSING = MISSING
    """
    Always `response`.
    """
    created_at: StrictFloat | MISSING = MISSING
    """
    Unix seconds when the response was created.
    """
    completed_at: StrictFloat | None | MISSING = MISSING
    """
    Unix seconds when the response completed.
    """
    status: StrictStr | None | MISSING = MISSING
    """
    `completed`, `failed`, `in_progress`, `cancelled`, `queued` or `incomplete`.
    """
    model: StrictStr | MISSING = MISSING
    """
    Model that generated the response.
    """
    output: list[dict[str, Any]] | None | MISSING = MISSING
    """
    Output items (message, function_call, reasoning, web_search_call, ...), open objects tagged by `type`.
    """
    output_text: StrictStr | None | MISSING = MISSING
    """
    Concatenated output text, sent by some providers (the OpenAI SDKs compute it).
    """
    usage: ResponseUsage | None | MISSING = MISSING
    """
    Token usage; null until the response is finished.
    """
    error: ResponseError | None | MISSING = MISSING
    """
    Why the response failed; null otherwise.
    """
    incomplete_details: IncompleteDetails | None | MISSING = MISSING
    """
    Why the response is incomplete; null otherwise.
    """
    instructions: StrictStr | list[dict[str, Any]] | None | MISSING = MISSING
    """
    The instructions the request carried.
    """
    metadata: dict[str, Any] | None | MISSING = MISSING
    """
    Caller-defined key/value pairs.
    """
    tools: list[dict[str, Any]] | None | MISSING = MISSING
    """
    Tools the model could call.
    """
    tool_choice: StrictStr | dict[str, Any] | None | MISSING = MISSING
    """
    How the model chose tools.
    """
    parallel_tool_calls: StrictBool | None | MISSING = MISSING
    """
    Whether parallel tool calls were allowed.
    """
    temperature: StrictFloat | None | MISSING = MISSING
    """
    Sampling temperature.
    """
    top_p: StrictFloat | None | MISSING = MISSING
    """
    Nucleus sampling mass.
    """
    top_logprobs: StrictInt | None | MISSING = MISSING
    """
    Number of most likely tokens with log probabilities.
    """
    max_output_tokens: StrictInt | None | MISSING = MISSING
    """
    Upper bound on generated tokens.
    """
    max_tool_calls: StrictInt | None | MISSING = MISSING
    """
    Upper bound on built-in tool calls.
    """
    previous_response_id: StrictStr | None | MISSING = MISSING
    """
    The response this one continues.
    """
    conversation: dict[str, Any] | None | MISSING = MISSING
    """
    Conversation this response belongs to.
    """
    reasoning: dict[str, Any] | None | MISSING = MISSING
    """
    Reasoning settings used.
    """
    text: dict[str, Any] | None | MISSING = MISSING
    """
    Text output settings used.
    """
    truncation: StrictStr | None | MISSING = MISSING
    """
    Truncation strategy used.
    """
    service_tier: StrictStr | None | MISSING = MISSING
    """
    Processing tier actually used.
    """
    background: StrictBool | None | MISSING = MISSING
    """
    Whether the response ran in the background.
    """
    store: StrictBool | None | MISSING = MISSING
    """
    Whether the response is stored.
    """
    prompt: dict[str, Any] | None | MISSING = MISSING
    """
    Stored prompt template used.
    """
    prompt_cache_key: StrictStr | None | MISSING = MISSING
    """
    Prompt cache key used.
    """
    prompt_cache_retention: StrictStr | None | MISSING = MISSING
    """
    Prompt cache retention policy used.
    """
    safety_identifier: StrictStr | None | MISSING = MISSING
    """
    End-user identifier for abuse detection.
    """
    user: StrictStr | None | MISSING = MISSING
    """
    Deprecated end-user identifier.
    """


class ResponseCreatedEvent(JsonModel):
    """
    The response was created (first event of a stream).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.created"]
    """
    The event type, `response.created`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    response: Response
    """
    The response as of this event.
    """


class ResponseQueuedEvent(JsonModel):
    """
    The response is queued (background mode; first event of a resumed stream).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.queued"]
    """
    The event type, `response.queued`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    response: Response
    """
    The response as of this event.
    """


class ResponseInProgressEvent(JsonModel):
    """
    The response is being generated.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.in_progress"]
    """
    The event type, `response.in_progress`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    response: Response
    """
    The response as of this event.
    """


class ResponseCompletedEvent(JsonModel):
    """
    Terminal: the response completed; carries the final response.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.completed"]
    """
    The event type, `response.completed`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    response: Response
    """
    The response as of this event.
    """


class ResponseIncompleteEvent(JsonModel):
    """
    Terminal: the response finished incomplete (e.g. max_output_tokens).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.incomplete"]
    """
    The event type, `response.incomplete`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    response: Response
    """
    The response as of this event.
    """


class ResponseFailedEvent(JsonModel):
    """
    Terminal: the response failed; `response.error` says why.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["response.failed"]
    """
    The event type, `response.failed`.
    """
    sequence_number: StrictInt | MISSING = MISSING
    """
    Position of the event in the stream.
    """
    response: Response
    """
    The response as of this event.
    """


StreamEvent = TypeAliasType(
    "StreamEvent",
    Annotated[
        ResponseCreatedEvent | ResponseQueuedEvent | ResponseInProgressEvent | ResponseCompletedEvent | ResponseIncompleteEvent | ResponseFailedEvent | ResponseOutputItemAddedEvent | ResponseOutputItemDoneEvent | ResponseContentPartAddedEvent | ResponseContentPartDoneEvent | ResponseTextDeltaEvent | ResponseTextDoneEvent | ResponseOutputTextAnnotationAddedEvent | ResponseRefusalDeltaEvent | ResponseRefusalDoneEvent | ResponseReasoningTextDeltaEvent | ResponseReasoningTextDoneEvent | ResponseReasoningSummaryPartAddedEvent | ResponseReasoningSummaryPartDoneEvent | ResponseReasoningSummaryTextDeltaEvent | ResponseReasoningSummaryTextDoneEvent | ResponseFunctionCallArgumentsDeltaEvent | ResponseFunctionCallArgumentsDoneEvent | ResponseCustomToolCallInputDeltaEvent | ResponseCustomToolCallInputDoneEvent | ResponseMcpCallArgumentsDeltaEvent | ResponseMcpCallArgumentsDoneEvent | ResponseCodeInterpreterCallCodeDeltaEvent | ResponseCodeInterpreterCallCodeDoneEvent | ResponseApplyPatchCallOperationDiffDeltaEvent | ResponseApplyPatchCallOperationDiffDoneEvent | ResponseShellCallCommandAddedEvent | ResponseShellCallCommandDeltaEvent | ResponseShellCallCommandDoneEvent | ResponseShellCallOutputContentDeltaEvent | ResponseShellCallOutputContentDoneEvent | ResponseFileSearchCallInProgressEvent | ResponseFileSearchCallSearchingEvent | ResponseFileSearchCallCompletedEvent | ResponseWebSearchCallInProgressEvent | ResponseWebSearchCallSearchingEvent | ResponseWebSearchCallCompletedEvent | ResponseCodeInterpreterCallInProgressEvent | ResponseCodeInterpreterCallInterpretingEvent | ResponseCodeInterpreterCallCompletedEvent | ResponseImageGenCallInProgressEvent | ResponseImageGenCallGeneratingEvent | ResponseImageGenCallCompletedEvent | ResponseImageGenCallPartialImageEvent | ResponseMcpCallInProgressEvent | ResponseMcpCallCompletedEvent | ResponseMcpCallFailedEvent | ResponseMcpListToolsInProgressEvent | ResponseMcpListToolsCompletedEvent | ResponseMcpListToolsFailedEvent | ResponseCompactionCompactingEvent | ResponseAudioDeltaEvent | ResponseAudioDoneEvent | ResponseAudioTranscriptDeltaEvent | ResponseAudioTranscriptDoneEvent | ResponseErrorEvent | ResponseKeepaliveEvent | UnknownEvent,
        Field(
            examples=[{"type": "response.output_text.delta", "sequence_number": 6, "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "Let me", "logprobs": []}, {"type": "response.function_call_arguments.delta", "sequence_number": 9, "item_id": "fc_1", "output_index": 2, "delta": '{"city":'}, {"type": "error", "sequence_number": 2, "error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "You exceeded your current quota.", "param": None}}, {"type": "keepalive", "sequence_number": 466}, {"type": "response.some_future_event", "sequence_number": 3}]
        ),
    ],
)
"""
The JSON payload of one `data:` line of a Responses stream (a trailing `data: [DONE]` some providers send is not JSON and not described here): every event type the Responses API documents, tagged by `type`, or any other object (a future or provider-specific event, or an error body without `type`), which is accepted, never rejected.
"""
