// Generated from schemas/v1/dialects/anthropic-messages.schema.json by `python codegen/generate.py`; do not edit by hand.
/**
 * The JSON payload of one event of a Messages stream, tagged by `type`. An event of a type listed here (for `content_block_delta`: with a delta type listed here) must match its definition; any other object (a future event or delta type, an `event: error` payload without `type`) is accepted, never rejected.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "StreamEvent".
 */
export type StreamEvent =
  | MessageStartEvent
  | ContentBlockStartEvent
  | ContentBlockDeltaEvent
  | ContentBlockStopEvent
  | MessageDeltaEvent
  | MessageStopEvent
  | PingEvent
  | ErrorEvent
  | {
      [k: string]: unknown;
    };

/**
 * A `POST /v1/messages` request body (the fields capture reads; others pass through).
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "Request".
 */
export interface Request {
  /**
   * The model that will complete the prompt.
   */
  model: string;
  /**
   * The conversation so far: alternating `user` / `assistant` turns.
   */
  messages: {
    [k: string]: unknown;
  }[];
  /**
   * The most tokens to generate before stopping.
   */
  max_tokens: number;
  /**
   * The system prompt: a string or a list of text blocks.
   */
  system?:
    | string
    | {
        [k: string]: unknown;
      }[];
  /**
   * Tools the model may use: client tools with `input_schema`, or server tools by `type`.
   */
  tools?: {
    [k: string]: unknown;
  }[];
  /**
   * How the model must choose a tool (`auto`, `any`, `tool`, `none`).
   */
  tool_choice?: {
    [k: string]: unknown;
  };
  /**
   * Stream the answer as Server-Sent Events.
   */
  stream?: boolean;
  /**
   * Extended thinking settings (`{"type": "enabled", "budget_tokens": n}` or `disabled`).
   */
  thinking?: {
    [k: string]: unknown;
  };
  /**
   * Sampling temperature.
   */
  temperature?: number;
  /**
   * Nucleus sampling mass.
   */
  top_p?: number;
  /**
   * Sample only from the k most likely tokens.
   */
  top_k?: number;
  /**
   * Custom sequences that stop generation.
   */
  stop_sequences?: string[];
  /**
   * Request metadata (`user_id`).
   */
  metadata?: {
    [k: string]: unknown;
  };
  /**
   * `auto` or `standard_only`.
   */
  service_tier?: string;
  /**
   * The container to reuse for code execution.
   */
  container?:
    | string
    | {
        [k: string]: unknown;
      }
    | null;
  /**
   * MCP servers the API may call (beta).
   */
  mcp_servers?: {
    [k: string]: unknown;
  }[];
  /**
   * Context editing settings (beta).
   */
  context_management?: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * A Messages API response body, and the `message` of `message_start`.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "Message".
 */
export interface Message {
  /**
   * Unique message id (`msg_...`).
   */
  id: string;
  /**
   * Always `message`.
   */
  type?: string;
  /**
   * Always `assistant`.
   */
  role?: string;
  /**
   * The model that produced the message.
   */
  model: string;
  /**
   * Content blocks in order; each an open object tagged by `type` (see `ContentBlock`).
   */
  content: ContentBlock[];
  /**
   * Why generation stopped (`end_turn`, `max_tokens`, `stop_sequence`, `tool_use`, ...).
   */
  stop_reason?: string | null;
  /**
   * The custom stop sequence that was generated, if any.
   */
  stop_sequence?: string | null;
  /**
   * Structured detail on why output stopped (refusals).
   */
  stop_details?: {
    [k: string]: unknown;
  } | null;
  /**
   * Token usage.
   */
  usage: Usage;
  /**
   * The container used by code execution, if any.
   */
  container?: {
    [k: string]: unknown;
  } | null;
  /**
   * What context editing did (beta).
   */
  context_management?: {
    [k: string]: unknown;
  } | null;
  [k: string]: unknown;
}
/**
 * One content block: an object tagged by `type`. A block of a type listed here must match its definition; a block of any other type (a future one) is accepted as it is.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ContentBlock".
 */
export interface ContentBlock {
  /**
   * The block's type.
   */
  type: string;
  [k: string]: unknown;
}
/**
 * Token usage of a message. `input_tokens` excludes cache reads and writes.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "Usage".
 */
export interface Usage {
  /**
   * Input tokens that were neither read from nor written to the prompt cache.
   */
  input_tokens?: number | null;
  /**
   * Generated tokens (thinking included; not reported apart).
   */
  output_tokens?: number | null;
  /**
   * Input tokens written to the prompt cache.
   */
  cache_creation_input_tokens?: number | null;
  /**
   * Input tokens read from the prompt cache.
   */
  cache_read_input_tokens?: number | null;
  /**
   * Cache-write tokens by time to live.
   */
  cache_creation?: CacheCreation | null;
  /**
   * How often server tools ran.
   */
  server_tool_use?: ServerToolUsage | null;
  /**
   * The tier that served the request.
   */
  service_tier?: string | null;
  [k: string]: unknown;
}
/**
 * Cache-write tokens by time to live.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "CacheCreation".
 */
export interface CacheCreation {
  /**
   * Input tokens written to the 5-minute cache.
   */
  ephemeral_5m_input_tokens?: number | null;
  /**
   * Input tokens written to the 1-hour cache.
   */
  ephemeral_1h_input_tokens?: number | null;
  [k: string]: unknown;
}
/**
 * How often server tools ran.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ServerToolUsage".
 */
export interface ServerToolUsage {
  /**
   * Web searches run.
   */
  web_search_requests?: number | null;
  /**
   * Web fetches run.
   */
  web_fetch_requests?: number | null;
  [k: string]: unknown;
}
/**
 * Text the model wrote.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "TextBlock".
 */
export interface TextBlock {
  /**
   * Always `text`.
   */
  type: "text";
  /**
   * The text.
   */
  text: string;
  /**
   * Sources the text cites.
   */
  citations?:
    | {
        [k: string]: unknown;
      }[]
    | null;
  [k: string]: unknown;
}
/**
 * The model's extended thinking.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ThinkingBlock".
 */
export interface ThinkingBlock {
  /**
   * Always `thinking`.
   */
  type: "thinking";
  /**
   * The thinking text.
   */
  thinking: string;
  /**
   * Opaque signature to send back with the block.
   */
  signature?: string;
  [k: string]: unknown;
}
/**
 * Thinking that was encrypted by the safety system.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "RedactedThinkingBlock".
 */
export interface RedactedThinkingBlock {
  /**
   * Always `redacted_thinking`.
   */
  type: "redacted_thinking";
  /**
   * Opaque encrypted thinking.
   */
  data: string;
  [k: string]: unknown;
}
/**
 * A call of a client tool: the caller runs it and answers with a `tool_result`.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ToolUseBlock".
 */
export interface ToolUseBlock {
  /**
   * Always `tool_use`.
   */
  type: "tool_use";
  /**
   * The call id (`toolu_...`).
   */
  id: string;
  /**
   * The tool's name.
   */
  name: string;
  /**
   * The arguments (a JSON object).
   */
  input: unknown;
  /**
   * Who made the call, when not the model directly (programmatic tool calling).
   */
  caller?: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * A call of a server tool (web search, code execution, ...) that the API runs itself.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ServerToolUseBlock".
 */
export interface ServerToolUseBlock {
  /**
   * Always `server_tool_use`.
   */
  type: "server_tool_use";
  /**
   * The call id (`srvtoolu_...`).
   */
  id: string;
  /**
   * The server tool's name.
   */
  name: string;
  /**
   * The arguments (a JSON object).
   */
  input: unknown;
  /**
   * Who made the call, when not the model directly.
   */
  caller?: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * A call of a tool on an MCP server, run by the API (beta).
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "MCPToolUseBlock".
 */
export interface MCPToolUseBlock {
  /**
   * Always `mcp_tool_use`.
   */
  type: "mcp_tool_use";
  /**
   * The call id.
   */
  id: string;
  /**
   * The tool's name.
   */
  name: string;
  /**
   * The MCP server's name.
   */
  server_name: string;
  /**
   * The arguments (a JSON object).
   */
  input: unknown;
  [k: string]: unknown;
}
/**
 * The result of an MCP tool call (beta).
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "MCPToolResultBlock".
 */
export interface MCPToolResultBlock {
  /**
   * Always `mcp_tool_result`.
   */
  type: "mcp_tool_result";
  /**
   * The call it answers.
   */
  tool_use_id: string;
  /**
   * The result: a string or text blocks.
   */
  content: unknown;
  /**
   * True when the call failed.
   */
  is_error?: boolean;
  [k: string]: unknown;
}
/**
 * Web search results.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "WebSearchToolResultBlock".
 */
export interface WebSearchToolResultBlock {
  /**
   * Always `web_search_tool_result`.
   */
  type: "web_search_tool_result";
  /**
   * The call it answers.
   */
  tool_use_id: string;
  /**
   * A list of results, or an error object.
   */
  content: unknown;
  /**
   * Who made the call, when not the model directly.
   */
  caller?: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * A fetched web page.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "WebFetchToolResultBlock".
 */
export interface WebFetchToolResultBlock {
  /**
   * Always `web_fetch_tool_result`.
   */
  type: "web_fetch_tool_result";
  /**
   * The call it answers.
   */
  tool_use_id: string;
  /**
   * The fetched document, or an error object.
   */
  content: unknown;
  /**
   * Who made the call, when not the model directly.
   */
  caller?: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * The result of running code.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "CodeExecutionToolResultBlock".
 */
export interface CodeExecutionToolResultBlock {
  /**
   * Always `code_execution_tool_result`.
   */
  type: "code_execution_tool_result";
  /**
   * The call it answers.
   */
  tool_use_id: string;
  /**
   * stdout, stderr, return code and files, or an error object.
   */
  content: unknown;
  [k: string]: unknown;
}
/**
 * The result of a bash command run by code execution.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "BashCodeExecutionToolResultBlock".
 */
export interface BashCodeExecutionToolResultBlock {
  /**
   * Always `bash_code_execution_tool_result`.
   */
  type: "bash_code_execution_tool_result";
  /**
   * The call it answers.
   */
  tool_use_id: string;
  /**
   * stdout, stderr, return code and files, or an error object.
   */
  content: unknown;
  [k: string]: unknown;
}
/**
 * The result of a file operation run by code execution.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "TextEditorCodeExecutionToolResultBlock".
 */
export interface TextEditorCodeExecutionToolResultBlock {
  /**
   * Always `text_editor_code_execution_tool_result`.
   */
  type: "text_editor_code_execution_tool_result";
  /**
   * The call it answers.
   */
  tool_use_id: string;
  /**
   * What the operation returned, or an error object.
   */
  content: unknown;
  [k: string]: unknown;
}
/**
 * Tools found by the tool search tool.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ToolSearchToolResultBlock".
 */
export interface ToolSearchToolResultBlock {
  /**
   * Always `tool_search_tool_result`.
   */
  type: "tool_search_tool_result";
  /**
   * The call it answers.
   */
  tool_use_id: string;
  /**
   * The tool references found, or an error object.
   */
  content: unknown;
  [k: string]: unknown;
}
/**
 * Advice returned by the advisor tool (beta).
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "AdvisorToolResultBlock".
 */
export interface AdvisorToolResultBlock {
  /**
   * Always `advisor_tool_result`.
   */
  type: "advisor_tool_result";
  /**
   * The call it answers.
   */
  tool_use_id: string;
  /**
   * The advice, redacted advice, or an error object.
   */
  content: unknown;
  [k: string]: unknown;
}
/**
 * A file uploaded to the code-execution container.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ContainerUploadBlock".
 */
export interface ContainerUploadBlock {
  /**
   * Always `container_upload`.
   */
  type: "container_upload";
  /**
   * The uploaded file's id.
   */
  file_id: string;
  [k: string]: unknown;
}
/**
 * A summary of earlier context written by automatic compaction (beta).
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "CompactionBlock".
 */
export interface CompactionBlock {
  /**
   * Always `compaction`.
   */
  type: "compaction";
  /**
   * The summary; null when compaction failed.
   */
  content?: string | null;
  /**
   * Opaque metadata to send back verbatim.
   */
  encrypted_content?: string | null;
  /**
   * Signature over the summary.
   */
  signature?: string | null;
  [k: string]: unknown;
}
/**
 * The point where one model's output gives way to a fallback model's (beta).
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "FallbackBlock".
 */
export interface FallbackBlock {
  /**
   * Always `fallback`.
   */
  type: "fallback";
  /**
   * The model that declined.
   */
  from: {
    [k: string]: unknown;
  };
  /**
   * The model that continues.
   */
  to: {
    [k: string]: unknown;
  };
  /**
   * What made the first model hand over.
   */
  trigger?: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * The tools the API listed on an MCP server (beta).
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "MCPToolListingBlock".
 */
export interface MCPToolListingBlock {
  /**
   * Always `mcp_tool_listing`.
   */
  type: "mcp_tool_listing";
  /**
   * The MCP server's name.
   */
  mcp_server_name: string;
  /**
   * The tools listed.
   */
  tools: {
    [k: string]: unknown;
  }[];
  [k: string]: unknown;
}
/**
 * First event: the message envelope with empty (or prefilled) content and starting usage.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "MessageStartEvent".
 */
export interface MessageStartEvent {
  /**
   * Always `message_start`.
   */
  type: "message_start";
  /**
   * The message so far.
   */
  message: Message;
  [k: string]: unknown;
}
/**
 * A content block begins at `index`.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ContentBlockStartEvent".
 */
export interface ContentBlockStartEvent {
  /**
   * Always `content_block_start`.
   */
  type: "content_block_start";
  /**
   * The block's position in `content`.
   */
  index: number;
  /**
   * The block's starting value (open object tagged by `type`, see `ContentBlock`).
   */
  content_block: ContentBlock;
  [k: string]: unknown;
}
/**
 * More content for the block at `index`.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ContentBlockDeltaEvent".
 */
export interface ContentBlockDeltaEvent {
  /**
   * Always `content_block_delta`.
   */
  type: "content_block_delta";
  /**
   * The block's position in `content`.
   */
  index: number;
  /**
   * What to add.
   */
  delta: TextDelta | InputJSONDelta | CitationsDelta | ThinkingDelta | SignatureDelta | CompactionDelta;
  [k: string]: unknown;
}
/**
 * More text for a `text` block.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "TextDelta".
 */
export interface TextDelta {
  /**
   * Always `text_delta`.
   */
  type: "text_delta";
  /**
   * The text fragment.
   */
  text: string;
  [k: string]: unknown;
}
/**
 * A fragment of a tool call's JSON arguments.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "InputJSONDelta".
 */
export interface InputJSONDelta {
  /**
   * Always `input_json_delta`.
   */
  type: "input_json_delta";
  /**
   * The JSON text fragment; the fragments of a block joined are its `input`.
   */
  partial_json: string;
  [k: string]: unknown;
}
/**
 * One more citation for a `text` block.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "CitationsDelta".
 */
export interface CitationsDelta {
  /**
   * Always `citations_delta`.
   */
  type: "citations_delta";
  /**
   * The citation (open object tagged by `type`).
   */
  citation: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * More thinking text for a `thinking` block.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ThinkingDelta".
 */
export interface ThinkingDelta {
  /**
   * Always `thinking_delta`.
   */
  type: "thinking_delta";
  /**
   * The thinking fragment.
   */
  thinking: string;
  [k: string]: unknown;
}
/**
 * The signature of a `thinking` block, sent just before its `content_block_stop`.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "SignatureDelta".
 */
export interface SignatureDelta {
  /**
   * Always `signature_delta`.
   */
  type: "signature_delta";
  /**
   * The signature (appended to the block's, which starts empty).
   */
  signature: string;
  [k: string]: unknown;
}
/**
 * Content of a `compaction` block (beta).
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "CompactionDelta".
 */
export interface CompactionDelta {
  /**
   * Always `compaction_delta`.
   */
  type: "compaction_delta";
  /**
   * Summary text.
   */
  content?: string | null;
  /**
   * Opaque metadata to send back verbatim.
   */
  encrypted_content?: string | null;
  [k: string]: unknown;
}
/**
 * The block at `index` is complete.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ContentBlockStopEvent".
 */
export interface ContentBlockStopEvent {
  /**
   * Always `content_block_stop`.
   */
  type: "content_block_stop";
  /**
   * The block's position in `content`.
   */
  index: number;
  [k: string]: unknown;
}
/**
 * Final top-level changes and cumulative usage, just before `message_stop`.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "MessageDeltaEvent".
 */
export interface MessageDeltaEvent {
  /**
   * Always `message_delta`.
   */
  type: "message_delta";
  /**
   * Changed message fields.
   */
  delta: MessageDelta;
  /**
   * Cumulative usage.
   */
  usage?: MessageDeltaUsage | null;
  /**
   * What context editing did (beta).
   */
  context_management?: {
    [k: string]: unknown;
  } | null;
  [k: string]: unknown;
}
/**
 * Top-level message fields changed by `message_delta`.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "MessageDelta".
 */
export interface MessageDelta {
  /**
   * Why generation stopped.
   */
  stop_reason?: string | null;
  /**
   * The custom stop sequence that was generated, if any.
   */
  stop_sequence?: string | null;
  /**
   * Structured detail on why output stopped.
   */
  stop_details?: {
    [k: string]: unknown;
  } | null;
  /**
   * The container used by code execution.
   */
  container?: {
    [k: string]: unknown;
  } | null;
  [k: string]: unknown;
}
/**
 * Cumulative usage carried by `message_delta`; each present count overrides the start's.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "MessageDeltaUsage".
 */
export interface MessageDeltaUsage {
  /**
   * Generated tokens so far.
   */
  output_tokens?: number | null;
  /**
   * Input tokens, when the server reports them late.
   */
  input_tokens?: number | null;
  /**
   * Input tokens written to the prompt cache.
   */
  cache_creation_input_tokens?: number | null;
  /**
   * Input tokens read from the prompt cache.
   */
  cache_read_input_tokens?: number | null;
  /**
   * How often server tools ran.
   */
  server_tool_use?: ServerToolUsage | null;
  [k: string]: unknown;
}
/**
 * Last event of a complete stream.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "MessageStopEvent".
 */
export interface MessageStopEvent {
  /**
   * Always `message_stop`.
   */
  type: "message_stop";
  [k: string]: unknown;
}
/**
 * Keep-alive; carries nothing.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "PingEvent".
 */
export interface PingEvent {
  /**
   * Always `ping`.
   */
  type: "ping";
  [k: string]: unknown;
}
/**
 * An error that ends the stream.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ErrorEvent".
 */
export interface ErrorEvent {
  /**
   * Always `error`.
   */
  type: "error";
  /**
   * What went wrong.
   */
  error: ErrorBody;
  /**
   * The request's id, when the server sends it.
   */
  request_id?: string | null;
  [k: string]: unknown;
}
/**
 * What went wrong.
 *
 * This interface was referenced by `AnthropicMessages`'s JSON-Schema
 * via the `definition` "ErrorBody".
 */
export interface ErrorBody {
  /**
   * Error kind (`overloaded_error`, `api_error`, ...).
   */
  type?: string;
  /**
   * Human-readable description.
   */
  message?: string;
  [k: string]: unknown;
}
