// Generated from schemas/v1/capture-line.schema.json by `python codegen/generate.py`; do not edit by hand.
/**
 * The API dialect of a call: OpenAI Responses (`/v1/responses`), OpenAI Chat Completions (`/v1/chat/completions`), Anthropic Messages (`/v1/messages`), (1.2) OpenAI legacy Completions (`/v1/completions`).
 *
 * This interface was referenced by `CaptureLine`'s JSON-Schema
 * via the `definition` "Dialect".
 */
export type Dialect = "responses" | "chat" | "messages" | "completions";

/**
 * One raw line of `<rollout_id>.capture.jsonl`, as the capture middleware writes it.
 *
 * Compatible with the lines NeMo Gym writes: every field is optional on read, and
 * unknown fields are accepted (and ignored). On write the eleven core fields are always
 * present (null when unknown), as in Gym's lines; the `UNSET` ones only when set.
 */
export interface CaptureLine {
  /**
   * `model-call-capture/1`; absent on lines written by NeMo Gym, which are v1 too.
   */
  format?: "model-call-capture/1";
  /**
   * Unique, server-generated id of the call.
   */
  model_call_id?: string | null;
  /**
   * The API dialect of the call.
   */
  dialect?: Dialect | null;
  /**
   * Which model server recorded the call.
   */
  model_ref?: ModelRef | null;
  /**
   * UTC Unix seconds, taken immediately before invoking the downstream app.
   */
  started_at?: number | null;
  /**
   * UTC Unix seconds, taken when the downstream app returned or raised.
   */
  completed_at?: number | null;
  /**
   * Monotonic duration of the call in milliseconds.
   */
  latency_ms?: number | null;
  /**
   * Milliseconds to the first response body byte that is not an SSE comment.
   */
  latency_ttft_ms?: number | null;
  /**
   * HTTP status the app sent, or the one its exception carried.
   */
  status_code?: number | null;
  /**
   * Why the call failed, null when it did not.
   */
  error_category?: string | null;
  /**
   * The request body as a JSON object; null when it was malformed or not an object.
   */
  request?: {
    [k: string]: unknown;
  } | null;
  /**
   * The response body, or the response reassembled from a stream; null when unknown.
   */
  response?: {
    [k: string]: unknown;
  } | null;
  /**
   * The request body as text, written when it was not a JSON object.
   */
  request_raw?: string | null;
  /**
   * The response body as text, written when it could not be parsed or was a stream.
   */
  response_raw?: string | null;
  /**
   * True when the per-call byte cap cut the captured payload (the client got it all).
   */
  capture_cut?: boolean;
  /**
   * True when the response was a Server-Sent Events stream.
   */
  stream?: boolean;
  /**
   * What the capture left out of this line or replaced, and why; absent when nothing.
   */
  gaps?: ObservationGap[];
  /**
   * (1.1) The request's one distinct non-empty `x-session-id` header value; correlation evidence, not authentication.
   */
  client_session_id?: string | null;
  /**
   * (1.1) Whether the model server tried its upstream for this call, as the app said; absent when it said nothing.
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
  [k: string]: unknown;
}
/**
 * Which model server recorded a call.
 *
 * This interface was referenced by `CaptureLine`'s JSON-Schema
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
 * Why a capture may be incomplete: the capture attached to a rollout, or one call's line.
 *
 * This interface was referenced by `CaptureLine`'s JSON-Schema
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
