"""Anthropic Messages content blocks and the deltas of `content_block_delta`.

Content blocks stay plain JSON objects inside `Message` and `ContentBlockStartEvent`:
Anthropic adds block types every few months, and msgspec cannot give a tagged union an
open fallback, so a typed union there would reject the next new block. The block Structs
here are typed views, which `block_view()` gives of one block.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "KNOWN_BLOCK_TYPES",
    "KNOWN_DELTA_TYPES",
    "AdvisorToolResultBlock",
    "BashCodeExecutionToolResultBlock",
    "CitationsDelta",
    "CodeExecutionToolResultBlock",
    "CompactionBlock",
    "CompactionDelta",
    "ContainerUploadBlock",
    "ContentBlock",
    "ContentBlockDelta",
    "FallbackBlock",
    "InputJSONDelta",
    "MCPToolListingBlock",
    "MCPToolResultBlock",
    "MCPToolUseBlock",
    "RedactedThinkingBlock",
    "ServerToolUseBlock",
    "SignatureDelta",
    "TextBlock",
    "TextDelta",
    "TextEditorCodeExecutionToolResultBlock",
    "ThinkingBlock",
    "ThinkingDelta",
    "ToolSearchToolResultBlock",
    "ToolUseBlock",
    "WebFetchToolResultBlock",
    "WebSearchToolResultBlock",
    "block_view",
    "struct_tag",
]


class TextBlock(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="text"):
    """Text the model wrote."""

    text: str
    """The text."""
    citations: list[dict[str, Any]] | None = None
    """Sources the text cites."""


class ThinkingBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="thinking"
):
    """The model's extended thinking."""

    thinking: str
    """The thinking text."""
    signature: str | UnsetType = UNSET
    """Opaque signature to send back with the block."""


class RedactedThinkingBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="redacted_thinking"
):
    """Thinking that was encrypted by the safety system."""

    data: str
    """Opaque encrypted thinking."""


class ToolUseBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="tool_use"
):
    """A call of a client tool: the caller runs it and answers with a `tool_result`."""

    id: str
    """The call id (`toolu_...`)."""
    name: str
    """The tool's name."""
    input: Any
    """The arguments (a JSON object)."""
    caller: dict[str, Any] | UnsetType = UNSET
    """Who made the call, when not the model directly (programmatic tool calling)."""


class ServerToolUseBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="server_tool_use"
):
    """A call of a server tool (web search, code execution, ...) that the API runs itself."""

    id: str
    """The call id (`srvtoolu_...`)."""
    name: str
    """The server tool's name."""
    input: Any
    """The arguments (a JSON object)."""
    caller: dict[str, Any] | UnsetType = UNSET
    """Who made the call, when not the model directly."""


class MCPToolUseBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="mcp_tool_use"
):
    """A call of a tool on an MCP server, run by the API (beta)."""

    id: str
    """The call id."""
    name: str
    """The tool's name."""
    server_name: str
    """The MCP server's name."""
    input: Any
    """The arguments (a JSON object)."""


class MCPToolResultBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="mcp_tool_result"
):
    """The result of an MCP tool call (beta)."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """The result: a string or text blocks."""
    is_error: bool = False
    """True when the call failed."""


class WebSearchToolResultBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="web_search_tool_result"
):
    """Web search results."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """A list of results, or an error object."""
    caller: dict[str, Any] | UnsetType = UNSET
    """Who made the call, when not the model directly."""


class WebFetchToolResultBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="web_fetch_tool_result"
):
    """A fetched web page."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """The fetched document, or an error object."""
    caller: dict[str, Any] | UnsetType = UNSET
    """Who made the call, when not the model directly."""


class CodeExecutionToolResultBlock(
    msgspec.Struct,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag="code_execution_tool_result",
):
    """The result of running code."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """stdout, stderr, return code and files, or an error object."""


class BashCodeExecutionToolResultBlock(
    msgspec.Struct,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag="bash_code_execution_tool_result",
):
    """The result of a bash command run by code execution."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """stdout, stderr, return code and files, or an error object."""


class TextEditorCodeExecutionToolResultBlock(
    msgspec.Struct,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag="text_editor_code_execution_tool_result",
):
    """The result of a file operation run by code execution."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """What the operation returned, or an error object."""


class ToolSearchToolResultBlock(
    msgspec.Struct,
    kw_only=True,
    omit_defaults=True,
    tag_field="type",
    tag="tool_search_tool_result",
):
    """Tools found by the tool search tool."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """The tool references found, or an error object."""


class AdvisorToolResultBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="advisor_tool_result"
):
    """Advice returned by the advisor tool (beta)."""

    tool_use_id: str
    """The call it answers."""
    content: Any
    """The advice, redacted advice, or an error object."""


class ContainerUploadBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="container_upload"
):
    """A file uploaded to the code-execution container."""

    file_id: str
    """The uploaded file's id."""


class CompactionBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="compaction"
):
    """A summary of earlier context written by automatic compaction (beta)."""

    content: str | None = None
    """The summary; null when compaction failed."""
    encrypted_content: str | None = None
    """Opaque metadata to send back verbatim."""
    signature: str | None = None
    """Signature over the summary."""


class FallbackBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="fallback"
):
    """The point where one model's output gives way to a fallback model's (beta)."""

    from_: dict[str, Any] = msgspec.field(name="from")
    """The model that declined."""
    to: dict[str, Any]
    """The model that continues."""
    trigger: dict[str, Any] | UnsetType = UNSET
    """What made the first model hand over."""


class MCPToolListingBlock(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="mcp_tool_listing"
):
    """The tools the API listed on an MCP server (beta)."""

    mcp_server_name: str
    """The MCP server's name."""
    tools: list[dict[str, Any]]
    """The tools listed."""


ContentBlock = (
    TextBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolUseBlock
    | ServerToolUseBlock
    | MCPToolUseBlock
    | MCPToolResultBlock
    | WebSearchToolResultBlock
    | WebFetchToolResultBlock
    | CodeExecutionToolResultBlock
    | BashCodeExecutionToolResultBlock
    | TextEditorCodeExecutionToolResultBlock
    | ToolSearchToolResultBlock
    | AdvisorToolResultBlock
    | ContainerUploadBlock
    | CompactionBlock
    | FallbackBlock
    | MCPToolListingBlock
)
"""Every content block type the Anthropic SDK (2.14, beta included) knows, tagged by `type`."""


# Deltas of `content_block_delta`.
# The events that arrive by the thousand (deltas, stops, pings) are `gc=False`: decoded
# from JSON and short-lived, they are never in a reference cycle: tracking them in the
# cyclic GC would only add to their decoding time.


class TextDelta(msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="text_delta"):
    """More text for a `text` block."""

    text: str
    """The text fragment."""


class InputJSONDelta(
    msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="input_json_delta"
):
    """A fragment of a tool call's JSON arguments."""

    partial_json: str
    """The JSON text fragment; the fragments of a block joined are its `input`."""


class CitationsDelta(msgspec.Struct, kw_only=True, tag_field="type", tag="citations_delta"):
    """One more citation for a `text` block."""

    citation: dict[str, Any]
    """The citation (open object tagged by `type`)."""


class ThinkingDelta(msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="thinking_delta"):
    """More thinking text for a `thinking` block."""

    thinking: str
    """The thinking fragment."""


class SignatureDelta(
    msgspec.Struct, kw_only=True, gc=False, tag_field="type", tag="signature_delta"
):
    """The signature of a `thinking` block, sent just before its `content_block_stop`."""

    signature: str
    """The signature (appended to the block's, which starts empty)."""


class CompactionDelta(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type", tag="compaction_delta"
):
    """Content of a `compaction` block (beta)."""

    content: str | None = None
    """Summary text."""
    encrypted_content: str | None = None
    """Opaque metadata to send back verbatim."""


ContentBlockDelta = (
    TextDelta | InputJSONDelta | CitationsDelta | ThinkingDelta | SignatureDelta | CompactionDelta
)
"""Every delta type the Anthropic SDK (2.14, beta included) knows, tagged by `type`."""


def struct_tag(tp: Any) -> str:
    """The `type` tag of a tagged wire Struct."""
    return str(tp.__struct_config__.tag)


KNOWN_BLOCK_TYPES = frozenset(struct_tag(t) for t in ContentBlock.__args__)
"""The `type`s of `ContentBlock`."""
KNOWN_DELTA_TYPES = frozenset(struct_tag(t) for t in ContentBlockDelta.__args__)
"""The `type`s of `ContentBlockDelta`."""


def block_view(block: Any) -> ContentBlock | None:
    """The typed view of one content block; None for an unknown type or a malformed block."""
    try:
        return cast("ContentBlock", msgspec.convert(block, ContentBlock))
    except msgspec.ValidationError:
        return None
