# Generated from schemas/v1/dialects/anthropic-messages.schema.json by `python codegen/generate.py`; do not edit by hand.
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

AnthropicMessages = TypeAliasType(
    "AnthropicMessages", Annotated[Any, Field(title="AnthropicMessages")]
)
"""
Anthropic Messages (`POST /v1/messages`), as far as model-call-capture reads it: the request, the message (the response body, the `message` of `message_start`, and the object reassembled from a stream), its content blocks, and the stream's events, tagged by `type` (the error event's shape is also the error body of a non-2xx reply). Every object is open: unknown fields are accepted, and unknown block, delta and event types are accepted, never rejected. Bootstrapped from `msgspec.json.schema` of the Structs in `model_call_capture.dialects.messages`; tests/dialects/test_messages.py proves the two agree.
"""


class Request(JsonModel):
    """
    A `POST /v1/messages` request body (the fields capture reads; others pass through).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    model: StrictStr
    """
    The model that will complete the prompt.
    """
    messages: list[dict[str, Any]]
    """
    The conversation so far: alternating `user` / `assistant` turns.
    """
    max_tokens: StrictInt
    """
    The most tokens to generate before stopping.
    """
    system: StrictStr | list[dict[str, Any]] | MISSING = MISSING
    """
    The system prompt: a string or a list of text blocks.
    """
    tools: list[dict[str, Any]] | MISSING = MISSING
    """
    Tools the model may use: client tools with `input_schema`, or server tools by `type`.
    """
    tool_choice: dict[str, Any] | MISSING = MISSING
    """
    How the model must choose a tool (`auto`, `any`, `tool`, `none`).
    """
    stream: StrictBool | MISSING = MISSING
    """
    Stream the answer as Server-Sent Events.
    """
    thinking: dict[str, Any] | MISSING = MISSING
    """
    Extended thinking settings (`{"type": "enabled", "budget_tokens": n}` or `disabled`).
    """
    temperature: StrictFloat | MISSING = MISSING
    """
    Sampling temperature.
    """
    top_p: StrictFloat | MISSING = MISSING
    """
    Nucleus sampling mass.
    """
    top_k: StrictInt | MISSING = MISSING
    """
    Sample only from the k most likely tokens.
    """
    stop_sequences: list[StrictStr] | MISSING = MISSING
    """
    Custom sequences that stop generation.
    """
    metadata: dict[str, Any] | MISSING = MISSING
    """
    Request metadata (`user_id`).
    """
    service_tier: StrictStr | MISSING = MISSING
    """
    `auto` or `standard_only`.
    """
    container: StrictStr | dict[str, Any] | None | MISSING = MISSING
    """
    The container to reuse for code execution.
    """
    mcp_servers: list[dict[str, Any]] | MISSING = MISSING
    """
    MCP servers the API may call (beta).
    """
    context_management: dict[str, Any] | MISSING = MISSING
    """
    Context editing settings (beta).
    """


class CacheCreation(JsonModel):
    """
    Cache-write tokens by time to live.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    ephemeral_5m_input_tokens: StrictInt | None = None
    """
    Input tokens written to the 5-minute cache.
    """
    ephemeral_1h_input_tokens: StrictInt | None = None
    """
    Input tokens written to the 1-hour cache.
    """


class ServerToolUsage(JsonModel):
    """
    How often server tools ran.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    web_search_requests: StrictInt | None = None
    """
    Web searches run.
    """
    web_fetch_requests: StrictInt | None = None
    """
    Web fetches run.
    """


class ContentBlock(JsonModel):
    """
    One content block: an object tagged by `type`. A block of a type listed here must match its definition; a block of any other type (a future one) is accepted as it is.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: StrictStr
    """
    The block's type.
    """


class TextBlock(JsonModel):
    """
    Text the model wrote.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["text"]
    """
    Always `text`.
    """
    text: StrictStr
    """
    The text.
    """
    citations: list[dict[str, Any]] | None = None
    """
    Sources the text cites.
    """


class ThinkingBlock(JsonModel):
    """
    The model's extended thinking.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["thinking"]
    """
    Always `thinking`.
    """
    thinking: StrictStr
    """
    The thinking text.
    """
    signature: StrictStr | MISSING = MISSING
    """
    Opaque signature to send back with the block.
    """


class RedactedThinkingBlock(JsonModel):
    """
    Thinking that was encrypted by the safety system.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["redacted_thinking"]
    """
    Always `redacted_thinking`.
    """
    data: StrictStr
    """
    Opaque encrypted thinking.
    """


class ToolUseBlock(JsonModel):
    """
    A call of a client tool: the caller runs it and answers with a `tool_result`.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["tool_use"]
    """
    Always `tool_use`.
    """
    id: StrictStr
    """
    The call id (`toolu_...`).
    """
    name: StrictStr
    """
    The tool's name.
    """
    input: Any
    """
    The arguments (a JSON object).
    """
    caller: dict[str, Any] | MISSING = MISSING
    """
    Who made the call, when not the model directly (programmatic tool calling).
    """


class ServerToolUseBlock(JsonModel):
    """
    A call of a server tool (web search, code execution, ...) that the API runs itself.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["server_tool_use"]
    """
    Always `server_tool_use`.
    """
    id: StrictStr
    """
    The call id (`srvtoolu_...`).
    """
    name: StrictStr
    """
    The server tool's name.
    """
    input: Any
    """
    The arguments (a JSON object).
    """
    caller: dict[str, Any] | MISSING = MISSING
    """
    Who made the call, when not the model directly.
    """


class MCPToolUseBlock(JsonModel):
    """
    A call of a tool on an MCP server, run by the API (beta).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["mcp_tool_use"]
    """
    Always `mcp_tool_use`.
    """
    id: StrictStr
    """
    The call id.
    """
    name: StrictStr
    """
    The tool's name.
    """
    server_name: StrictStr
    """
    The MCP server's name.
    """
    input: Any
    """
    The arguments (a JSON object).
    """


class MCPToolResultBlock(JsonModel):
    """
    The result of an MCP tool call (beta).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["mcp_tool_result"]
    """
    Always `mcp_tool_result`.
    """
    tool_use_id: StrictStr
    """
    The call it answers.
    """
    content: Any
    """
    The result: a string or text blocks.
    """
    is_error: StrictBool = False
    """
    True when the call failed.
    """


class WebSearchToolResultBlock(JsonModel):
    """
    Web search results.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["web_search_tool_result"]
    """
    Always `web_search_tool_result`.
    """
    tool_use_id: StrictStr
    """
    The call it answers.
    """
    content: Any
    """
    A list of results, or an error object.
    """
    caller: dict[str, Any] | MISSING = MISSING
    """
    Who made the call, when not the model directly.
    """


class WebFetchToolResultBlock(JsonModel):
    """
    A fetched web page.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["web_fetch_tool_result"]
    """
    Always `web_fetch_tool_result`.
    """
    tool_use_id: StrictStr
    """
    The call it answers.
    """
    content: Any
    """
    The fetched document, or an error object.
    """
    caller: dict[str, Any] | MISSING = MISSING
    """
    Who made the call, when not the model directly.
    """


class CodeExecutionToolResultBlock(JsonModel):
    """
    The result of running code.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["code_execution_tool_result"]
    """
    Always `code_execution_tool_result`.
    """
    tool_use_id: StrictStr
    """
    The call it answers.
    """
    content: Any
    """
    stdout, stderr, return code and files, or an error object.
    """


class BashCodeExecutionToolResultBlock(JsonModel):
    """
    The result of a bash command run by code execution.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["bash_code_execution_tool_result"]
    """
    Always `bash_code_execution_tool_result`.
    """
    tool_use_id: StrictStr
    """
    The call it answers.
    """
    content: Any
    """
    stdout, stderr, return code and files, or an error object.
    """


class TextEditorCodeExecutionToolResultBlock(JsonModel):
    """
    The result of a file operation run by code execution.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["text_editor_code_execution_tool_result"]
    """
    Always `text_editor_code_execution_tool_result`.
    """
    tool_use_id: StrictStr
    """
    The call it answers.
    """
    content: Any
    """
    What the operation returned, or an error object.
    """


class ToolSearchToolResultBlock(JsonModel):
    """
    Tools found by the tool search tool.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["tool_search_tool_result"]
    """
    Always `tool_search_tool_result`.
    """
    tool_use_id: StrictStr
    """
    The call it answers.
    """
    content: Any
    """
    The tool references found, or an error object.
    """


class AdvisorToolResultBlock(JsonModel):
    """
    Advice returned by the advisor tool (beta).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["advisor_tool_result"]
    """
    Always `advisor_tool_result`.
    """
    tool_use_id: StrictStr
    """
    The call it answers.
    """
    content: Any
    """
    The advice, redacted advice, or an error object.
    """


class ContainerUploadBlock(JsonModel):
    """
    A file uploaded to the code-execution container.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["container_upload"]
    """
    Always `container_upload`.
    """
    file_id: StrictStr
    """
    The uploaded file's id.
    """


class CompactionBlock(JsonModel):
    """
    A summary of earlier context written by automatic compaction (beta).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["compaction"]
    """
    Always `compaction`.
    """
    content: StrictStr | None = None
    """
    The summary; null when compaction failed.
    """
    encrypted_content: StrictStr | None = None
    """
    Opaque metadata to send back verbatim.
    """
    signature: StrictStr | None = None
    """
    Signature over the summary.
    """


class FallbackBlock(JsonModel):
    """
    The point where one model's output gives way to a fallback model's (beta).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["fallback"]
    """
    Always `fallback`.
    """
    from_: Annotated[dict[str, Any], Field(alias="from")]
    """
    The model that declined.
    """
    to: dict[str, Any]
    """
    The model that continues.
    """
    trigger: dict[str, Any] | MISSING = MISSING
    """
    What made the first model hand over.
    """


class MCPToolListingBlock(JsonModel):
    """
    The tools the API listed on an MCP server (beta).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["mcp_tool_listing"]
    """
    Always `mcp_tool_listing`.
    """
    mcp_server_name: StrictStr
    """
    The MCP server's name.
    """
    tools: list[dict[str, Any]]
    """
    The tools listed.
    """


class ContentBlockStartEvent(JsonModel):
    """
    A content block begins at `index`.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["content_block_start"]
    """
    Always `content_block_start`.
    """
    index: StrictInt
    """
    The block's position in `content`.
    """
    content_block: ContentBlock
    """
    The block's starting value (open object tagged by `type`, see `ContentBlock`).
    """


class ContentBlockStopEvent(JsonModel):
    """
    The block at `index` is complete.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["content_block_stop"]
    """
    Always `content_block_stop`.
    """
    index: StrictInt
    """
    The block's position in `content`.
    """


class MessageStopEvent(JsonModel):
    """
    Last event of a complete stream.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["message_stop"]
    """
    Always `message_stop`.
    """


class PingEvent(JsonModel):
    """
    Keep-alive; carries nothing.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["ping"]
    """
    Always `ping`.
    """


class TextDelta(JsonModel):
    """
    More text for a `text` block.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["text_delta"]
    """
    Always `text_delta`.
    """
    text: StrictStr
    """
    The text fragment.
    """


class InputJSONDelta(JsonModel):
    """
    A fragment of a tool call's JSON arguments.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["input_json_delta"]
    """
    Always `input_json_delta`.
    """
    partial_json: StrictStr
    """
    The JSON text fragment; the fragments of a block joined are its `input`.
    """


class CitationsDelta(JsonModel):
    """
    One more citation for a `text` block.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["citations_delta"]
    """
    Always `citations_delta`.
    """
    citation: dict[str, Any]
    """
    The citation (open object tagged by `type`).
    """


class ThinkingDelta(JsonModel):
    """
    More thinking text for a `thinking` block.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["thinking_delta"]
    """
    Always `thinking_delta`.
    """
    thinking: StrictStr
    """
    The thinking fragment.
    """


class SignatureDelta(JsonModel):
    """
    The signature of a `thinking` block, sent just before its `content_block_stop`.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["signature_delta"]
    """
    Always `signature_delta`.
    """
    signature: StrictStr
    """
    The signature (appended to the block's, which starts empty).
    """


class CompactionDelta(JsonModel):
    """
    Content of a `compaction` block (beta).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["compaction_delta"]
    """
    Always `compaction_delta`.
    """
    content: StrictStr | None = None
    """
    Summary text.
    """
    encrypted_content: StrictStr | None = None
    """
    Opaque metadata to send back verbatim.
    """


class MessageDelta(JsonModel):
    """
    Top-level message fields changed by `message_delta`.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    stop_reason: StrictStr | None = None
    """
    Why generation stopped.
    """
    stop_sequence: StrictStr | None = None
    """
    The custom stop sequence that was generated, if any.
    """
    stop_details: dict[str, Any] | None | MISSING = MISSING
    """
    Structured detail on why output stopped.
    """
    container: dict[str, Any] | None | MISSING = MISSING
    """
    The container used by code execution.
    """


class MessageDeltaUsage(JsonModel):
    """
    Cumulative usage carried by `message_delta`; each present count overrides the start's.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    output_tokens: StrictInt | None = None
    """
    Generated tokens so far.
    """
    input_tokens: StrictInt | None = None
    """
    Input tokens, when the server reports them late.
    """
    cache_creation_input_tokens: StrictInt | None = None
    """
    Input tokens written to the prompt cache.
    """
    cache_read_input_tokens: StrictInt | None = None
    """
    Input tokens read from the prompt cache.
    """
    server_tool_use: ServerToolUsage | None = None
    """
    How often server tools ran.
    """


class ErrorBody(JsonModel):
    """
    What went wrong.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: StrictStr | MISSING = MISSING
    """
    Error kind (`overloaded_error`, `api_error`, ...).
    """
    message: StrictStr | MISSING = MISSING
    """
    Human-readable description.
    """


class Usage(JsonModel):
    """
    Token usage of a message. `input_tokens` excludes cache reads and writes.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    input_tokens: StrictInt | None = None
    """
    Input tokens that were neither read from nor written to the prompt cache.
    """
    output_tokens: StrictInt | None = None
    """
    Generated tokens (thinking included; not reported apart).
    """
    cache_creation_input_tokens: StrictInt | None = None
    """
    Input tokens written to the prompt cache.
    """
    cache_read_input_tokens: StrictInt | None = None
    """
    Input tokens read from the prompt cache.
    """
    cache_creation: CacheCreation | None = None
    """
    Cache-write tokens by time to live.
    """
    server_tool_use: ServerToolUsage | None = None
    """
    How often server tools ran.
    """
    service_tier: StrictStr | None = None
    """
    The tier that served the request.
    """


class ContentBlockDeltaEvent(JsonModel):
    """
    More content for the block at `index`.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["content_block_delta"]
    """
    Always `content_block_delta`.
    """
    index: StrictInt
    """
    The block's position in `content`.
    """
    delta: Annotated[
        TextDelta | InputJSONDelta | CitationsDelta | ThinkingDelta | SignatureDelta | CompactionDelta,
        Field(discriminator="type"),
    ]
    """
    What to add.
    """


class MessageDeltaEvent(JsonModel):
    """
    Final top-level changes and cumulative usage, just before `message_stop`.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["message_delta"]
    """
    Always `message_delta`.
    """
    delta: MessageDelta
    """
    Changed message fields.
    """
    usage: MessageDeltaUsage | None = None
    """
    Cumulative usage.
    """
    context_management: dict[str, Any] | None | MISSING = MISSING
    """
    What context editing did (beta).
    """


class ErrorEvent(JsonModel):
    """
    An error that ends the stream.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["error"]
    """
    Always `error`.
    """
    error: ErrorBody
    """
    What went wrong.
    """
    request_id: StrictStr | None | MISSING = MISSING
    """
    The request's id, when the server sends it.
    """


class Message(JsonModel):
    """
    A Messages API response body, and the `message` of `message_start`.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    id: StrictStr
    """
    Unique message id (`msg_...`).
    """
    type: StrictStr = "message"
    """
    Always `message`.
    """
    role: StrictStr = "assistant"
    """
    Always `assistant`.
    """
    model: StrictStr
    """
    The model that produced the message.
    """
    content: list[ContentBlock]
    """
    Content blocks in order; each an open object tagged by `type` (see `ContentBlock`).
    """
    stop_reason: StrictStr | None = None
    """
    Why generation stopped (`end_turn`, `max_tokens`, `stop_sequence`, `tool_use`, ...).
    """
    stop_sequence: StrictStr | None = None
    """
    The custom stop sequence that was generated, if any.
    """
    stop_details: dict[str, Any] | None | MISSING = MISSING
    """
    Structured detail on why output stopped (refusals).
    """
    usage: Usage
    """
    Token usage.
    """
    container: dict[str, Any] | None | MISSING = MISSING
    """
    The container used by code execution, if any.
    """
    context_management: dict[str, Any] | None | MISSING = MISSING
    """
    What context editing did (beta).
    """


class MessageStartEvent(JsonModel):
    """
    First event: the message envelope with empty (or prefilled) content and starting usage.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: Literal["message_start"]
    """
    Always `message_start`.
    """
    message: Message
    """
    The message so far.
    """


StreamEvent = TypeAliasType(
    "StreamEvent",
    Annotated[
        MessageStartEvent | ContentBlockStartEvent | ContentBlockDeltaEvent | ContentBlockStopEvent | MessageDeltaEvent | MessageStopEvent | PingEvent | ErrorEvent | dict[str, Any],
        Field(
            examples=[{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
        ),
    ],
)
"""
The JSON payload of one event of a Messages stream, tagged by `type`. An event of a type listed here (for `content_block_delta`: with a delta type listed here) must match its definition; any other object (a future event or delta type, an `event: error` payload without `type`) is accepted, never rejected.
"""
