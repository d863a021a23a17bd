// Generated from schemas/v1/dialects/openai-responses.schema.json by `python codegen/generate.py`; do not edit by hand.
/**
 * The JSON payload of one `data:` line of a Responses stream (a trailing `data: [DONE]` some providers send is not JSON and not described here): every event type the Responses API documents, tagged by `type`, or any other object (a future or provider-specific event, or an error body without `type`), which is accepted, never rejected.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "StreamEvent".
 */
export type StreamEvent =
  | ResponseCreatedEvent
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
  | UnknownEvent;

/**
 * A `POST /v1/responses` request body (the fields people send; others are accepted).
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "Request".
 */
export interface Request {
  /**
   * Model id, e.g. `gpt-5`.
   */
  model?: string;
  /**
   * Text, or a list of input items (messages, function_call_output, reasoning, ...).
   */
  input?:
    | string
    | {
        [k: string]: unknown;
      }[];
  /**
   * System (developer) message inserted before the input.
   */
  instructions?: string | null;
  /**
   * Tools the model may call (function, custom, web_search, mcp, ...).
   */
  tools?:
    | {
        [k: string]: unknown;
      }[]
    | null;
  /**
   * `none`, `auto`, `required`, or an object naming a tool.
   */
  tool_choice?:
    | string
    | {
        [k: string]: unknown;
      }
    | null;
  /**
   * Whether the model may call several tools at once.
   */
  parallel_tool_calls?: boolean | null;
  /**
   * True to receive the response as Server-Sent Events.
   */
  stream?: boolean | null;
  /**
   * Streaming options, e.g. `include_obfuscation`.
   */
  stream_options?: {
    [k: string]: unknown;
  } | null;
  /**
   * Reasoning settings: `effort`, `summary`.
   */
  reasoning?: {
    [k: string]: unknown;
  } | null;
  /**
   * Text output settings: `format` (text, json_schema), `verbosity`.
   */
  text?: {
    [k: string]: unknown;
  } | null;
  /**
   * Upper bound on generated tokens, reasoning included.
   */
  max_output_tokens?: number | null;
  /**
   * Upper bound on built-in tool calls.
   */
  max_tool_calls?: number | null;
  /**
   * Sampling temperature.
   */
  temperature?: number | null;
  /**
   * Nucleus sampling mass.
   */
  top_p?: number | null;
  /**
   * Number of most likely tokens to return log probabilities for.
   */
  top_logprobs?: number | null;
  /**
   * Extra output to include, e.g. `reasoning.encrypted_content`.
   */
  include?: string[] | null;
  /**
   * Continue from this stored response.
   */
  previous_response_id?: string | null;
  /**
   * Conversation this response belongs to.
   */
  conversation?:
    | string
    | {
        [k: string]: unknown;
      }
    | null;
  /**
   * Whether the provider stores the response.
   */
  store?: boolean | null;
  /**
   * Run the response in the background.
   */
  background?: boolean | null;
  /**
   * Up to 16 caller-defined key/value pairs.
   */
  metadata?: {
    [k: string]: unknown;
  } | null;
  /**
   * `auto` or `disabled`: how to handle input over the context window.
   */
  truncation?: string | null;
  /**
   * Processing tier: `auto`, `default`, `flex`, `priority`, ...
   */
  service_tier?: string | null;
  /**
   * Reference to a stored prompt template and its variables.
   */
  prompt?: {
    [k: string]: unknown;
  } | null;
  /**
   * Key used to group requests for prompt caching.
   */
  prompt_cache_key?: string | null;
  /**
   * Prompt cache retention policy, e.g. `24h`.
   */
  prompt_cache_retention?: string | null;
  /**
   * Stable end-user identifier for abuse detection.
   */
  safety_identifier?: string | null;
  /**
   * Deprecated end-user identifier.
   */
  user?: string | null;
  [k: string]: unknown;
}
/**
 * A Responses API response object (`object: "response"`).
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "Response".
 */
export interface Response {
  /**
   * Response id, `resp_...`.
   */
  id?: string;
  /**
   * Always `response`.
   */
  object?: string;
  /**
   * Unix seconds when the response was created.
   */
  created_at?: number;
  /**
   * Unix seconds when the response completed.
   */
  completed_at?: number | null;
  /**
   * `completed`, `failed`, `in_progress`, `cancelled`, `queued` or `incomplete`.
   */
  status?: string | null;
  /**
   * Model that generated the response.
   */
  model?: string;
  /**
   * Output items (message, function_call, reasoning, web_search_call, ...), open objects tagged by `type`.
   */
  output?:
    | {
        [k: string]: unknown;
      }[]
    | null;
  /**
   * Concatenated output text, sent by some providers (the OpenAI SDKs compute it).
   */
  output_text?: string | null;
  /**
   * Token usage; null until the response is finished.
   */
  usage?: ResponseUsage | null;
  /**
   * Why the response failed; null otherwise.
   */
  error?: ResponseError | null;
  /**
   * Why the response is incomplete; null otherwise.
   */
  incomplete_details?: IncompleteDetails | null;
  /**
   * The instructions the request carried.
   */
  instructions?:
    | string
    | {
        [k: string]: unknown;
      }[]
    | null;
  /**
   * Caller-defined key/value pairs.
   */
  metadata?: {
    [k: string]: unknown;
  } | null;
  /**
   * Tools the model could call.
   */
  tools?:
    | {
        [k: string]: unknown;
      }[]
    | null;
  /**
   * How the model chose tools.
   */
  tool_choice?:
    | string
    | {
        [k: string]: unknown;
      }
    | null;
  /**
   * Whether parallel tool calls were allowed.
   */
  parallel_tool_calls?: boolean | null;
  /**
   * Sampling temperature.
   */
  temperature?: number | null;
  /**
   * Nucleus sampling mass.
   */
  top_p?: number | null;
  /**
   * Number of most likely tokens with log probabilities.
   */
  top_logprobs?: number | null;
  /**
   * Upper bound on generated tokens.
   */
  max_output_tokens?: number | null;
  /**
   * Upper bound on built-in tool calls.
   */
  max_tool_calls?: number | null;
  /**
   * The response this one continues.
   */
  previous_response_id?: string | null;
  /**
   * Conversation this response belongs to.
   */
  conversation?: {
    [k: string]: unknown;
  } | null;
  /**
   * Reasoning settings used.
   */
  reasoning?: {
    [k: string]: unknown;
  } | null;
  /**
   * Text output settings used.
   */
  text?: {
    [k: string]: unknown;
  } | null;
  /**
   * Truncation strategy used.
   */
  truncation?: string | null;
  /**
   * Processing tier actually used.
   */
  service_tier?: string | null;
  /**
   * Whether the response ran in the background.
   */
  background?: boolean | null;
  /**
   * Whether the response is stored.
   */
  store?: boolean | null;
  /**
   * Stored prompt template used.
   */
  prompt?: {
    [k: string]: unknown;
  } | null;
  /**
   * Prompt cache key used.
   */
  prompt_cache_key?: string | null;
  /**
   * Prompt cache retention policy used.
   */
  prompt_cache_retention?: string | null;
  /**
   * End-user identifier for abuse detection.
   */
  safety_identifier?: string | null;
  /**
   * Deprecated end-user identifier.
   */
  user?: string | null;
  [k: string]: unknown;
}
/**
 * Token usage of a response.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseUsage".
 */
export interface ResponseUsage {
  /**
   * Input tokens, cached tokens included.
   */
  input_tokens?: number | null;
  /**
   * Breakdown of the input tokens.
   */
  input_tokens_details?: InputTokensDetails | null;
  /**
   * Output tokens, reasoning tokens included.
   */
  output_tokens?: number | null;
  /**
   * Breakdown of the output tokens.
   */
  output_tokens_details?: OutputTokensDetails | null;
  /**
   * Input plus output tokens.
   */
  total_tokens?: number | null;
  [k: string]: unknown;
}
/**
 * Breakdown of the input tokens.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "InputTokensDetails".
 */
export interface InputTokensDetails {
  /**
   * Input tokens served from the prompt cache (counted inside `input_tokens`).
   */
  cached_tokens?: number | null;
  [k: string]: unknown;
}
/**
 * Breakdown of the output tokens.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "OutputTokensDetails".
 */
export interface OutputTokensDetails {
  /**
   * Reasoning tokens (counted inside `output_tokens`).
   */
  reasoning_tokens?: number | null;
  [k: string]: unknown;
}
/**
 * Why a response failed.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseError".
 */
export interface ResponseError {
  /**
   * Error code, e.g. `server_error`, `rate_limit_exceeded`.
   */
  code?: string | null;
  /**
   * Human-readable description.
   */
  message?: string | null;
  [k: string]: unknown;
}
/**
 * Why a response is incomplete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "IncompleteDetails".
 */
export interface IncompleteDetails {
  /**
   * `max_output_tokens` or `content_filter`.
   */
  reason?: string | null;
  [k: string]: unknown;
}
/**
 * The response was created (first event of a stream).
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseCreatedEvent".
 */
export interface ResponseCreatedEvent {
  /**
   * The event type, `response.created`.
   */
  type: "response.created";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * The response as of this event.
   */
  response: Response;
  [k: string]: unknown;
}
/**
 * The response is queued (background mode; first event of a resumed stream).
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseQueuedEvent".
 */
export interface ResponseQueuedEvent {
  /**
   * The event type, `response.queued`.
   */
  type: "response.queued";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * The response as of this event.
   */
  response: Response;
  [k: string]: unknown;
}
/**
 * The response is being generated.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseInProgressEvent".
 */
export interface ResponseInProgressEvent {
  /**
   * The event type, `response.in_progress`.
   */
  type: "response.in_progress";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * The response as of this event.
   */
  response: Response;
  [k: string]: unknown;
}
/**
 * Terminal: the response completed; carries the final response.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseCompletedEvent".
 */
export interface ResponseCompletedEvent {
  /**
   * The event type, `response.completed`.
   */
  type: "response.completed";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * The response as of this event.
   */
  response: Response;
  [k: string]: unknown;
}
/**
 * Terminal: the response finished incomplete (e.g. max_output_tokens).
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseIncompleteEvent".
 */
export interface ResponseIncompleteEvent {
  /**
   * The event type, `response.incomplete`.
   */
  type: "response.incomplete";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * The response as of this event.
   */
  response: Response;
  [k: string]: unknown;
}
/**
 * Terminal: the response failed; `response.error` says why.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseFailedEvent".
 */
export interface ResponseFailedEvent {
  /**
   * The event type, `response.failed`.
   */
  type: "response.failed";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * The response as of this event.
   */
  response: Response;
  [k: string]: unknown;
}
/**
 * An output item was added.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseOutputItemAddedEvent".
 */
export interface ResponseOutputItemAddedEvent {
  /**
   * The event type, `response.output_item.added`.
   */
  type: "response.output_item.added";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The output item (message, function_call, reasoning, ...), an open object tagged by `type`.
   */
  item: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * An output item is complete; carries the final item.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseOutputItemDoneEvent".
 */
export interface ResponseOutputItemDoneEvent {
  /**
   * The event type, `response.output_item.done`.
   */
  type: "response.output_item.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The output item (message, function_call, reasoning, ...), an open object tagged by `type`.
   */
  item: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * A content part was added to a message or reasoning item.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseContentPartAddedEvent".
 */
export interface ResponseContentPartAddedEvent {
  /**
   * The event type, `response.content_part.added`.
   */
  type: "response.content_part.added";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the content part in the item's `content`.
   */
  content_index?: number;
  /**
   * The content part (output_text, refusal, reasoning_text).
   */
  part: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * A content part is complete; carries the final part.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseContentPartDoneEvent".
 */
export interface ResponseContentPartDoneEvent {
  /**
   * The event type, `response.content_part.done`.
   */
  type: "response.content_part.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the content part in the item's `content`.
   */
  content_index?: number;
  /**
   * The final content part.
   */
  part: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * A fragment of output text.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseTextDeltaEvent".
 */
export interface ResponseTextDeltaEvent {
  /**
   * The event type, `response.output_text.delta`.
   */
  type: "response.output_text.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the content part in the item's `content`.
   */
  content_index?: number;
  /**
   * The text fragment to append.
   */
  delta: string;
  /**
   * Random padding that hides the length of the delta.
   */
  obfuscation?: string;
  /**
   * Log probabilities of the tokens in the delta.
   */
  logprobs?:
    | {
        [k: string]: unknown;
      }[]
    | null;
  [k: string]: unknown;
}
/**
 * An output text part is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseTextDoneEvent".
 */
export interface ResponseTextDoneEvent {
  /**
   * The event type, `response.output_text.done`.
   */
  type: "response.output_text.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the content part in the item's `content`.
   */
  content_index?: number;
  /**
   * The full text of the part.
   */
  text: string;
  /**
   * Log probabilities of the tokens of the part.
   */
  logprobs?:
    | {
        [k: string]: unknown;
      }[]
    | null;
  [k: string]: unknown;
}
/**
 * An annotation (citation, file path, ...) was added to an output text part.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseOutputTextAnnotationAddedEvent".
 */
export interface ResponseOutputTextAnnotationAddedEvent {
  /**
   * The event type, `response.output_text.annotation.added`.
   */
  type: "response.output_text.annotation.added";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the content part in the item's `content`.
   */
  content_index?: number;
  /**
   * Position of the annotation in the part's `annotations`.
   */
  annotation_index?: number;
  /**
   * The annotation.
   */
  annotation?: {
    [k: string]: unknown;
  } | null;
  [k: string]: unknown;
}
/**
 * A fragment of refusal text.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseRefusalDeltaEvent".
 */
export interface ResponseRefusalDeltaEvent {
  /**
   * The event type, `response.refusal.delta`.
   */
  type: "response.refusal.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the content part in the item's `content`.
   */
  content_index?: number;
  /**
   * The text fragment to append.
   */
  delta: string;
  /**
   * Random padding that hides the length of the delta.
   */
  obfuscation?: string;
  [k: string]: unknown;
}
/**
 * A refusal part is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseRefusalDoneEvent".
 */
export interface ResponseRefusalDoneEvent {
  /**
   * The event type, `response.refusal.done`.
   */
  type: "response.refusal.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the content part in the item's `content`.
   */
  content_index?: number;
  /**
   * The full refusal text.
   */
  refusal: string;
  [k: string]: unknown;
}
/**
 * A fragment of raw reasoning text.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseReasoningTextDeltaEvent".
 */
export interface ResponseReasoningTextDeltaEvent {
  /**
   * The event type, `response.reasoning_text.delta`.
   */
  type: "response.reasoning_text.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the content part in the item's `content`.
   */
  content_index?: number;
  /**
   * The text fragment to append.
   */
  delta: string;
  /**
   * Random padding that hides the length of the delta.
   */
  obfuscation?: string;
  [k: string]: unknown;
}
/**
 * A reasoning text part is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseReasoningTextDoneEvent".
 */
export interface ResponseReasoningTextDoneEvent {
  /**
   * The event type, `response.reasoning_text.done`.
   */
  type: "response.reasoning_text.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the content part in the item's `content`.
   */
  content_index?: number;
  /**
   * The full reasoning text of the part.
   */
  text: string;
  [k: string]: unknown;
}
/**
 * A reasoning summary part was added.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseReasoningSummaryPartAddedEvent".
 */
export interface ResponseReasoningSummaryPartAddedEvent {
  /**
   * The event type, `response.reasoning_summary_part.added`.
   */
  type: "response.reasoning_summary_part.added";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the summary part in the reasoning item's `summary`.
   */
  summary_index?: number;
  /**
   * The summary part (`summary_text`).
   */
  part: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * A reasoning summary part is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseReasoningSummaryPartDoneEvent".
 */
export interface ResponseReasoningSummaryPartDoneEvent {
  /**
   * The event type, `response.reasoning_summary_part.done`.
   */
  type: "response.reasoning_summary_part.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the summary part in the reasoning item's `summary`.
   */
  summary_index?: number;
  /**
   * The final summary part.
   */
  part: {
    [k: string]: unknown;
  };
  /**
   * `incomplete` when the part was cut.
   */
  status?: string | null;
  [k: string]: unknown;
}
/**
 * A fragment of reasoning summary text.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseReasoningSummaryTextDeltaEvent".
 */
export interface ResponseReasoningSummaryTextDeltaEvent {
  /**
   * The event type, `response.reasoning_summary_text.delta`.
   */
  type: "response.reasoning_summary_text.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the summary part in the reasoning item's `summary`.
   */
  summary_index?: number;
  /**
   * The text fragment to append.
   */
  delta: string;
  /**
   * Random padding that hides the length of the delta.
   */
  obfuscation?: string;
  [k: string]: unknown;
}
/**
 * A reasoning summary text is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseReasoningSummaryTextDoneEvent".
 */
export interface ResponseReasoningSummaryTextDoneEvent {
  /**
   * The event type, `response.reasoning_summary_text.done`.
   */
  type: "response.reasoning_summary_text.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the summary part in the reasoning item's `summary`.
   */
  summary_index?: number;
  /**
   * The full summary text.
   */
  text: string;
  [k: string]: unknown;
}
/**
 * A fragment of a function call's JSON arguments.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseFunctionCallArgumentsDeltaEvent".
 */
export interface ResponseFunctionCallArgumentsDeltaEvent {
  /**
   * The event type, `response.function_call_arguments.delta`.
   */
  type: "response.function_call_arguments.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The fragment to append.
   */
  delta: string;
  /**
   * Random padding that hides the length of the delta.
   */
  obfuscation?: string;
  [k: string]: unknown;
}
/**
 * A function call's arguments are complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseFunctionCallArgumentsDoneEvent".
 */
export interface ResponseFunctionCallArgumentsDoneEvent {
  /**
   * The event type, `response.function_call_arguments.done`.
   */
  type: "response.function_call_arguments.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The full JSON arguments text.
   */
  arguments: string;
  /**
   * The function name (sent by some providers).
   */
  name?: string;
  [k: string]: unknown;
}
/**
 * A fragment of a custom tool call's free-form input.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseCustomToolCallInputDeltaEvent".
 */
export interface ResponseCustomToolCallInputDeltaEvent {
  /**
   * The event type, `response.custom_tool_call_input.delta`.
   */
  type: "response.custom_tool_call_input.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The fragment to append.
   */
  delta: string;
  /**
   * Random padding that hides the length of the delta.
   */
  obfuscation?: string;
  [k: string]: unknown;
}
/**
 * A custom tool call's input is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseCustomToolCallInputDoneEvent".
 */
export interface ResponseCustomToolCallInputDoneEvent {
  /**
   * The event type, `response.custom_tool_call_input.done`.
   */
  type: "response.custom_tool_call_input.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The full input text.
   */
  input: string;
  [k: string]: unknown;
}
/**
 * A fragment of an MCP tool call's JSON arguments.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseMcpCallArgumentsDeltaEvent".
 */
export interface ResponseMcpCallArgumentsDeltaEvent {
  /**
   * The event type, `response.mcp_call_arguments.delta`.
   */
  type: "response.mcp_call_arguments.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The fragment to append.
   */
  delta: string;
  /**
   * Random padding that hides the length of the delta.
   */
  obfuscation?: string;
  [k: string]: unknown;
}
/**
 * An MCP tool call's arguments are complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseMcpCallArgumentsDoneEvent".
 */
export interface ResponseMcpCallArgumentsDoneEvent {
  /**
   * The event type, `response.mcp_call_arguments.done`.
   */
  type: "response.mcp_call_arguments.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The full JSON arguments text.
   */
  arguments: string;
  [k: string]: unknown;
}
/**
 * A fragment of the code a code interpreter call runs.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseCodeInterpreterCallCodeDeltaEvent".
 */
export interface ResponseCodeInterpreterCallCodeDeltaEvent {
  /**
   * The event type, `response.code_interpreter_call_code.delta`.
   */
  type: "response.code_interpreter_call_code.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The fragment to append.
   */
  delta: string;
  /**
   * Random padding that hides the length of the delta.
   */
  obfuscation?: string;
  [k: string]: unknown;
}
/**
 * The code of a code interpreter call is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseCodeInterpreterCallCodeDoneEvent".
 */
export interface ResponseCodeInterpreterCallCodeDoneEvent {
  /**
   * The event type, `response.code_interpreter_call_code.done`.
   */
  type: "response.code_interpreter_call_code.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The full code.
   */
  code: string;
  [k: string]: unknown;
}
/**
 * A fragment of the diff of an apply_patch call's operation.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseApplyPatchCallOperationDiffDeltaEvent".
 */
export interface ResponseApplyPatchCallOperationDiffDeltaEvent {
  /**
   * The event type, `response.apply_patch_call_operation_diff.delta`.
   */
  type: "response.apply_patch_call_operation_diff.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The fragment to append.
   */
  delta: string;
  /**
   * Random padding that hides the length of the delta.
   */
  obfuscation?: string;
  [k: string]: unknown;
}
/**
 * The diff of an apply_patch call's operation is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseApplyPatchCallOperationDiffDoneEvent".
 */
export interface ResponseApplyPatchCallOperationDiffDoneEvent {
  /**
   * The event type, `response.apply_patch_call_operation_diff.done`.
   */
  type: "response.apply_patch_call_operation_diff.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * The full diff.
   */
  diff: string;
  [k: string]: unknown;
}
/**
 * A command was added to a shell call.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseShellCallCommandAddedEvent".
 */
export interface ResponseShellCallCommandAddedEvent {
  /**
   * The event type, `response.shell_call_command.added`.
   */
  type: "response.shell_call_command.added";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the shell call item.
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the command in the shell call's `action.commands`.
   */
  command_index?: number;
  /**
   * The command text so far.
   */
  command?: string;
  [k: string]: unknown;
}
/**
 * A fragment of a shell call command.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseShellCallCommandDeltaEvent".
 */
export interface ResponseShellCallCommandDeltaEvent {
  /**
   * The event type, `response.shell_call_command.delta`.
   */
  type: "response.shell_call_command.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the shell call item.
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the command in the shell call's `action.commands`.
   */
  command_index?: number;
  /**
   * The fragment to append.
   */
  delta: string;
  /**
   * Random padding that hides the length of the delta.
   */
  obfuscation?: string | null;
  [k: string]: unknown;
}
/**
 * A shell call command is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseShellCallCommandDoneEvent".
 */
export interface ResponseShellCallCommandDoneEvent {
  /**
   * The event type, `response.shell_call_command.done`.
   */
  type: "response.shell_call_command.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the shell call item.
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the command in the shell call's `action.commands`.
   */
  command_index?: number;
  /**
   * The full command.
   */
  command: string;
  [k: string]: unknown;
}
/**
 * A fragment of a shell call's output.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseShellCallOutputContentDeltaEvent".
 */
export interface ResponseShellCallOutputContentDeltaEvent {
  /**
   * The event type, `response.shell_call_output_content.delta`.
   */
  type: "response.shell_call_output_content.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the shell call item.
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the command in the shell call's `action.commands`.
   */
  command_index?: number;
  /**
   * The output fragment (`stdout`, `stderr`).
   */
  delta: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * A shell call's output is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseShellCallOutputContentDoneEvent".
 */
export interface ResponseShellCallOutputContentDoneEvent {
  /**
   * The event type, `response.shell_call_output_content.done`.
   */
  type: "response.shell_call_output_content.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the shell call item.
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Position of the command in the shell call's `action.commands`.
   */
  command_index?: number;
  /**
   * The full output entries.
   */
  output: {
    [k: string]: unknown;
  }[];
  [k: string]: unknown;
}
/**
 * A file search call started.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseFileSearchCallInProgressEvent".
 */
export interface ResponseFileSearchCallInProgressEvent {
  /**
   * The event type, `response.file_search_call.in_progress`.
   */
  type: "response.file_search_call.in_progress";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A file search call is searching.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseFileSearchCallSearchingEvent".
 */
export interface ResponseFileSearchCallSearchingEvent {
  /**
   * The event type, `response.file_search_call.searching`.
   */
  type: "response.file_search_call.searching";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A file search call completed.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseFileSearchCallCompletedEvent".
 */
export interface ResponseFileSearchCallCompletedEvent {
  /**
   * The event type, `response.file_search_call.completed`.
   */
  type: "response.file_search_call.completed";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A web search call started.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseWebSearchCallInProgressEvent".
 */
export interface ResponseWebSearchCallInProgressEvent {
  /**
   * The event type, `response.web_search_call.in_progress`.
   */
  type: "response.web_search_call.in_progress";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A web search call is searching.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseWebSearchCallSearchingEvent".
 */
export interface ResponseWebSearchCallSearchingEvent {
  /**
   * The event type, `response.web_search_call.searching`.
   */
  type: "response.web_search_call.searching";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A web search call completed.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseWebSearchCallCompletedEvent".
 */
export interface ResponseWebSearchCallCompletedEvent {
  /**
   * The event type, `response.web_search_call.completed`.
   */
  type: "response.web_search_call.completed";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A code interpreter call started.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseCodeInterpreterCallInProgressEvent".
 */
export interface ResponseCodeInterpreterCallInProgressEvent {
  /**
   * The event type, `response.code_interpreter_call.in_progress`.
   */
  type: "response.code_interpreter_call.in_progress";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A code interpreter call is running its code.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseCodeInterpreterCallInterpretingEvent".
 */
export interface ResponseCodeInterpreterCallInterpretingEvent {
  /**
   * The event type, `response.code_interpreter_call.interpreting`.
   */
  type: "response.code_interpreter_call.interpreting";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A code interpreter call completed.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseCodeInterpreterCallCompletedEvent".
 */
export interface ResponseCodeInterpreterCallCompletedEvent {
  /**
   * The event type, `response.code_interpreter_call.completed`.
   */
  type: "response.code_interpreter_call.completed";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * An image generation call started.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseImageGenCallInProgressEvent".
 */
export interface ResponseImageGenCallInProgressEvent {
  /**
   * The event type, `response.image_generation_call.in_progress`.
   */
  type: "response.image_generation_call.in_progress";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * An image generation call is generating.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseImageGenCallGeneratingEvent".
 */
export interface ResponseImageGenCallGeneratingEvent {
  /**
   * The event type, `response.image_generation_call.generating`.
   */
  type: "response.image_generation_call.generating";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * An image generation call completed.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseImageGenCallCompletedEvent".
 */
export interface ResponseImageGenCallCompletedEvent {
  /**
   * The event type, `response.image_generation_call.completed`.
   */
  type: "response.image_generation_call.completed";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A partial image of an image generation call.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseImageGenCallPartialImageEvent".
 */
export interface ResponseImageGenCallPartialImageEvent {
  /**
   * The event type, `response.image_generation_call.partial_image`.
   */
  type: "response.image_generation_call.partial_image";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  /**
   * Base64-encoded partial image.
   */
  partial_image_b64: string;
  /**
   * Position of the partial image (0-based).
   */
  partial_image_index?: number;
  /**
   * Background setting of the image.
   */
  background?: string | null;
  /**
   * Image format (png, webp, jpeg).
   */
  output_format?: string | null;
  /**
   * Image quality setting.
   */
  quality?: string | null;
  /**
   * Image size, e.g. `1024x1024`.
   */
  size?: string | null;
  [k: string]: unknown;
}
/**
 * An MCP tool call started.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseMcpCallInProgressEvent".
 */
export interface ResponseMcpCallInProgressEvent {
  /**
   * The event type, `response.mcp_call.in_progress`.
   */
  type: "response.mcp_call.in_progress";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * An MCP tool call completed.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseMcpCallCompletedEvent".
 */
export interface ResponseMcpCallCompletedEvent {
  /**
   * The event type, `response.mcp_call.completed`.
   */
  type: "response.mcp_call.completed";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * An MCP tool call failed.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseMcpCallFailedEvent".
 */
export interface ResponseMcpCallFailedEvent {
  /**
   * The event type, `response.mcp_call.failed`.
   */
  type: "response.mcp_call.failed";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * Listing an MCP server's tools started.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseMcpListToolsInProgressEvent".
 */
export interface ResponseMcpListToolsInProgressEvent {
  /**
   * The event type, `response.mcp_list_tools.in_progress`.
   */
  type: "response.mcp_list_tools.in_progress";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * Listing an MCP server's tools completed.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseMcpListToolsCompletedEvent".
 */
export interface ResponseMcpListToolsCompletedEvent {
  /**
   * The event type, `response.mcp_list_tools.completed`.
   */
  type: "response.mcp_list_tools.completed";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * Listing an MCP server's tools failed.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseMcpListToolsFailedEvent".
 */
export interface ResponseMcpListToolsFailedEvent {
  /**
   * The event type, `response.mcp_list_tools.failed`.
   */
  type: "response.mcp_list_tools.failed";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A compaction item is being produced.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseCompactionCompactingEvent".
 */
export interface ResponseCompactionCompactingEvent {
  /**
   * The event type, `response.compaction.compacting`.
   */
  type: "response.compaction.compacting";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Id of the output item (may change from event to event with some providers).
   */
  item_id?: string;
  /**
   * Position of the item in `response.output`.
   */
  output_index: number;
  [k: string]: unknown;
}
/**
 * A fragment of output audio.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseAudioDeltaEvent".
 */
export interface ResponseAudioDeltaEvent {
  /**
   * The event type, `response.audio.delta`.
   */
  type: "response.audio.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Base64-encoded audio bytes.
   */
  delta: string;
  [k: string]: unknown;
}
/**
 * The output audio is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseAudioDoneEvent".
 */
export interface ResponseAudioDoneEvent {
  /**
   * The event type, `response.audio.done`.
   */
  type: "response.audio.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  [k: string]: unknown;
}
/**
 * A fragment of the output audio's transcript.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseAudioTranscriptDeltaEvent".
 */
export interface ResponseAudioTranscriptDeltaEvent {
  /**
   * The event type, `response.audio.transcript.delta`.
   */
  type: "response.audio.transcript.delta";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * The transcript fragment.
   */
  delta: string;
  [k: string]: unknown;
}
/**
 * The output audio's transcript is complete.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseAudioTranscriptDoneEvent".
 */
export interface ResponseAudioTranscriptDoneEvent {
  /**
   * The event type, `response.audio.transcript.done`.
   */
  type: "response.audio.transcript.done";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  [k: string]: unknown;
}
/**
 * Terminal: an error occurred while streaming (fields flat, or nested under `error`).
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseErrorEvent".
 */
export interface ResponseErrorEvent {
  /**
   * The event type, `error`.
   */
  type: "error";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  /**
   * Error code.
   */
  code?: string | null;
  /**
   * Human-readable description.
   */
  message?: string | null;
  /**
   * The request parameter the error is about.
   */
  param?: string | null;
  /**
   * The error object (`type`, `code`, `message`, `param`), as the API sends it today.
   */
  error?: {
    [k: string]: unknown;
  } | null;
  [k: string]: unknown;
}
/**
 * A heartbeat sent during long-running responses; carries no response state.
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "ResponseKeepaliveEvent".
 */
export interface ResponseKeepaliveEvent {
  /**
   * The event type, `keepalive`.
   */
  type: "keepalive";
  /**
   * Position of the event in the stream.
   */
  sequence_number?: number;
  [k: string]: unknown;
}
/**
 * Any event whose `type` is not one of `EVENT_TYPES` (a future or provider-specific event).
 *
 * This interface was referenced by `OpenAIResponses`'s JSON-Schema
 * via the `definition` "UnknownEvent".
 */
export interface UnknownEvent {
  /**
   * The event type, if the payload names one; never one of the known types (those must match their own definition).
   */
  type?: string;
  [k: string]: unknown;
}
