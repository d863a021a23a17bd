// Generated from schemas/v1/model-call-capture.schema.json by `python codegen/generate.py`; do not edit by hand.
/**
 * The API dialect of a call: OpenAI Responses (`/v1/responses`), OpenAI Chat Completions (`/v1/chat/completions`), Anthropic Messages (`/v1/messages`), (1.2) OpenAI legacy Completions (`/v1/completions`).
 *
 * This interface was referenced by `ModelCallCapture`'s JSON-Schema
 * via the `definition` "Dialect".
 */
export type Dialect = "responses" | "chat" | "messages" | "completions";

/**
 * The `ng_model_call_capture` attachment of a rollout record.
 */
export interface ModelCallCapture {
  /**
   * The rollout-attempt id the calls were captured under.
   */
  rollout_id: string;
  /**
   * Sums over the calls.
   */
  metrics: ModelCallMetrics;
  /**
   * The records, without request/response payloads unless asked for.
   */
  calls: ModelCallRecord[];
  /**
   * Why the capture may be incomplete; omitted when empty.
   */
  gaps?: ObservationGap[];
  [k: string]: unknown;
}
/**
 * Sums over the calls of one rollout; null where no call reported a value.
 *
 * This interface was referenced by `ModelCallCapture`'s JSON-Schema
 * via the `definition` "ModelCallMetrics".
 */
export interface ModelCallMetrics {
  /**
   * Number of captured model calls.
   */
  num_calls: number;
  /**
   * Sum of known tokens_in.
   */
  tokens_in: number | null;
  /**
   * Sum of known tokens_out.
   */
  tokens_out: number | null;
  /**
   * Sum of known tokens_reasoning.
   */
  tokens_reasoning: number | null;
  /**
   * Sum of known tokens_total.
   */
  tokens_total: number | null;
  /**
   * Sum of known cached_tokens.
   */
  cached_tokens: number | null;
  /**
   * Sum of known latency_total_ms.
   */
  latency_total_ms: number | null;
  /**
   * Sum of known cache_creation_tokens.
   */
  cache_creation_tokens?: number | null;
  /**
   * Number of calls per error_category (calls without an error are not counted).
   */
  error_categories?: {
    [k: string]: number;
  };
  [k: string]: unknown;
}
/**
 * A typed record derived from one capture line, for training and evaluation.
 *
 * This interface was referenced by `ModelCallCapture`'s JSON-Schema
 * via the `definition` "ModelCallRecord".
 */
export interface ModelCallRecord {
  /**
   * Unique, server-generated id of the call.
   */
  model_call_id: string | null;
  /**
   * The provider's response id (`resp_...`, `chatcmpl-...`, `msg_...`).
   */
  response_id: string | null;
  /**
   * The line's durable append position in its rollout file (0-based).
   */
  call_index: number;
  /**
   * Which model server recorded the call.
   */
  model_ref: ModelRef | null;
  /**
   * The model named by the response, else by the request.
   */
  model: string | null;
  /**
   * The API dialect of the call.
   */
  dialect: Dialect | null;
  /**
   * HTTP status of the call.
   */
  status_code: number | null;
  /**
   * Responses API `status` (`completed`, `incomplete`, `failed`); null elsewhere.
   */
  response_status: string | null;
  /**
   * Why generation stopped (`stop`, `length`, `tool_calls`, `end_turn`, ...).
   */
  finish_reason: string | null;
  /**
   * UTC Unix seconds, immediately before invoking the downstream app.
   */
  started_at: number | null;
  /**
   * UTC Unix seconds, when the downstream app returned or raised.
   */
  completed_at: number | null;
  /**
   * Input tokens, cache reads and writes included.
   */
  tokens_in: number | null;
  /**
   * Output tokens, reasoning included.
   */
  tokens_out: number | null;
  /**
   * Reasoning tokens; null where the provider does not report them.
   */
  tokens_reasoning: number | null;
  /**
   * Total tokens as reported, else tokens_in + tokens_out.
   */
  tokens_total: number | null;
  /**
   * Input tokens served from the prompt cache.
   */
  cached_tokens: number | null;
  /**
   * Whether any input token came from the prompt cache.
   */
  cache_hit: boolean | null;
  /**
   * Input tokens written to the prompt cache (Anthropic).
   */
  cache_creation_tokens: number | null;
  /**
   * Tool calls the model asked for, in order.
   */
  tool_calls: ToolCall[];
  /**
   * Reasoning text or summaries the response carried.
   */
  reasoning_content: string | null;
  /**
   * Why the call failed, null when it did not.
   */
  error_category: string | null;
  /**
   * Monotonic duration of the call in milliseconds.
   */
  latency_total_ms: number | null;
  /**
   * Milliseconds to the first response byte that is not an SSE comment.
   */
  latency_ttft_ms: number | null;
  /**
   * The request body; null when it was malformed or not an object; absent in attached calls.
   */
  request?: {
    [k: string]: unknown;
  } | null;
  /**
   * The response body or the reassembled stream; absent in attached calls.
   */
  response?: {
    [k: string]: unknown;
  } | null;
  /**
   * The raw request text when it was not a JSON object; absent in attached calls.
   */
  request_raw?: string | null;
  /**
   * The raw response text when it could not be parsed or was a stream; absent in attached calls.
   */
  response_raw?: string | null;
  /**
   * True when the per-call byte cap cut the captured payload.
   */
  capture_cut?: boolean;
  /**
   * (1.1) The request's one distinct non-empty `x-session-id` header value; correlation evidence, not authentication.
   */
  client_session_id?: string | null;
  /**
   * (1.1) Whether the model server tried its upstream for this call; null when not said.
   */
  upstream_attempted?: boolean | null;
  /**
   * (1.1) `upstream` when the upstream answered, `local` when the server answered itself.
   */
  response_source?: ("upstream" | "local") | null;
  /**
   * (1.1) The upstream's HTTP status, which may differ from the status the client got.
   */
  upstream_status_code?: number | null;
  /**
   * (1.1) Why the server answered locally (`context_length_exceeded`, `upstream_timeout`, ...).
   */
  local_response_reason?: string | null;
  /**
   * (1.1) The prompt's token ids as the server returned them; null when it did not (single-choice responses).
   */
  prompt_token_ids?: number[] | null;
  /**
   * (1.1) The generated token ids as the server returned them; null when it did not.
   */
  generation_token_ids?: number[] | null;
  /**
   * (1.1) The log-probability of each generated token; null when the server did not return them.
   */
  generation_log_probs?: number[] | null;
  /**
   * (1.1) Why a derived field is null although the response held a value for it; absent when none.
   */
  derivation_problems?: ObservationGap[];
  [k: string]: unknown;
}
/**
 * Which model server recorded a call.
 *
 * This interface was referenced by `ModelCallCapture`'s JSON-Schema
 * via the `definition` "ModelRef".
 */
export interface ModelRef {
  /**
   * The kind of server instance, `responses_api_models` for a Gym model server.
   */
  type: string;
  /**
   * The configured name of the server instance.
   */
  name: string;
  [k: string]: unknown;
}
/**
 * One tool call the model asked for.
 *
 * This interface was referenced by `ModelCallCapture`'s JSON-Schema
 * via the `definition` "ToolCall".
 */
export interface ToolCall {
  /**
   * The provider's id for the call (`call_...`, `toolu_...`), null when absent.
   */
  call_id: string | null;
  /**
   * The tool's name, null when absent.
   */
  name: string | null;
  /**
   * Parsed JSON arguments; `{"_raw": text}` when the text was not valid JSON.
   */
  arguments: unknown;
  [k: string]: unknown;
}
/**
 * Why a capture may be incomplete: the capture attached to a rollout, or one call's line.
 *
 * This interface was referenced by `ModelCallCapture`'s JSON-Schema
 * via the `definition` "ObservationGap".
 */
export interface ObservationGap {
  /**
   * A rollout's: `model_call_capture_no_records`, `model_call_capture_records_unreadable`, `model_call_capture_incomplete` or `model_call_capture_unreadable`; a line's: `request_undecodable`, `response_undecodable`, `memory_budget`, `raw_text_cut`, `payload_as_text`, `redacted_raw`, `raw_text_spill_failed`, (1.1) `field_dropped` or `request_unread`.
   */
  code: string;
  /**
   * More about the gap, e.g. `count=3` unreadable lines.
   */
  detail?: string;
  [k: string]: unknown;
}
