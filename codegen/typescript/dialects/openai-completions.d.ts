// Generated from schemas/v1/dialects/openai-completions.schema.json by `python codegen/generate.py`; do not edit by hand.
/**
 * The JSON payload of one `data:` line of a Completions stream (the `data: [DONE]` sentinel that ends a stream is not JSON and not described here). A chunk, an error payload (an object with an `error` member, as vLLM sends when generation fails mid-stream), or any other object: unknown events are accepted, never rejected.
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "CompletionStreamEvent".
 */
export type CompletionStreamEvent =
  | CompletionChunk
  | ErrorChunk
  | {
      [k: string]: unknown;
    };

/**
 * A `POST /v1/completions` request body (the fields capture reads; others pass).
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "Request".
 */
export interface Request {
  /**
   * The model to use.
   */
  model?: string | null;
  /**
   * The prompt(s): a text, a list of texts, a list of token ids, or a list of token-id lists.
   */
  prompt?: string | unknown[] | null;
  /**
   * Text that comes after the completion (insertion).
   */
  suffix?: string | null;
  /**
   * Return the prompt before the completion, in `text` and in the log-probs.
   */
  echo?: boolean | null;
  /**
   * How many choices to generate per prompt.
   */
  n?: number | null;
  /**
   * Candidates generated server-side per prompt, of which `n` are returned.
   */
  best_of?: number | null;
  /**
   * Cap on generated tokens.
   */
  max_tokens?: number | null;
  /**
   * Sampling temperature.
   */
  temperature?: number | null;
  /**
   * Return the log-probabilities of this many most likely tokens at each position.
   */
  logprobs?: number | null;
  /**
   * Stream the answer as Server-Sent Events.
   */
  stream?: boolean | null;
  /**
   * Options of a streamed request.
   */
  stream_options?: StreamOptions | null;
  /**
   * Sequences where generation stops.
   */
  stop?: string | string[] | null;
  /**
   * vLLM: return the prompt's and each choice's generated token ids.
   */
  return_token_ids?: boolean | null;
  /**
   * vLLM: spell the log-probs' tokens as `token_id:N`.
   */
  return_tokens_as_token_ids?: boolean | null;
  /**
   * vLLM: return the log-probabilities of the prompt's tokens (JSON replies only).
   */
  prompt_logprobs?: number | null;
  [k: string]: unknown;
}
/**
 * Options of a streamed request.
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "StreamOptions".
 */
export interface StreamOptions {
  /**
   * Send a last chunk with `usage` (and empty `choices`) before `[DONE]`.
   */
  include_usage?: boolean | null;
  [k: string]: unknown;
}
/**
 * A `text_completion` response body (also the object reassembled from a stream).
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "Response".
 */
export interface Response {
  /**
   * The completion's id (`cmpl-...`).
   */
  id: string;
  /**
   * `text_completion`.
   */
  object: string;
  /**
   * Unix seconds when the completion was created.
   */
  created: number;
  /**
   * The model that generated it.
   */
  model: string;
  /**
   * The generated choices: `n` per prompt.
   */
  choices: Choice[];
  /**
   * Token usage, summed over every prompt and choice.
   */
  usage?: Usage | null;
  /**
   * Backend configuration fingerprint.
   */
  system_fingerprint?: string | null;
  [k: string]: unknown;
}
/**
 * One choice of a complete response.
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "Choice".
 */
export interface Choice {
  /**
   * Position of the choice (prompt index x `n` + choice number).
   */
  index: number;
  /**
   * The generated text (with `echo`, the prompt first).
   */
  text: string;
  /**
   * Why generation stopped: `stop`, `length`, `content_filter`, ...
   */
  finish_reason?: string | null;
  /**
   * Log-probabilities, when requested.
   */
  logprobs?: Logprobs | null;
  /**
   * vLLM: the stop string or token id that ended generation.
   */
  stop_reason?: number | string | null;
  /**
   * vLLM `return_token_ids`: the prompt's token ids.
   */
  prompt_token_ids?: number[] | null;
  /**
   * vLLM `return_token_ids`: the generated token ids.
   */
  token_ids?: number[] | null;
  /**
   * vLLM `prompt_logprobs`: per prompt token, its candidates by token id (null for the first).
   */
  prompt_logprobs?:
    | ({
        [k: string]: unknown;
      } | null)[]
    | null;
  [k: string]: unknown;
}
/**
 * Log-probabilities of a choice's tokens, as parallel lists (the legacy shape).
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "Logprobs".
 */
export interface Logprobs {
  /**
   * Each token's text (vLLM `return_tokens_as_token_ids`: `token_id:N`).
   */
  tokens?: string[] | null;
  /**
   * Each token's log-probability; null where none is known (the first token of an echoed prompt).
   */
  token_logprobs?: (number | null)[] | null;
  /**
   * The most likely tokens at each position, token text -> log-probability.
   */
  top_logprobs?:
    | ({
        [k: string]: number;
      } | null)[]
    | null;
  /**
   * Each token's character offset in the choice's text.
   */
  text_offset?: number[] | null;
  [k: string]: unknown;
}
/**
 * Token usage of a completion.
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "Usage".
 */
export interface Usage {
  /**
   * Input tokens, cached ones included.
   */
  prompt_tokens?: number | null;
  /**
   * Generated tokens, reasoning included.
   */
  completion_tokens?: number | null;
  /**
   * prompt_tokens + completion_tokens.
   */
  total_tokens?: number | null;
  /**
   * Breakdown of the prompt tokens.
   */
  prompt_tokens_details?: PromptTokensDetails | null;
  /**
   * Breakdown of the completion tokens.
   */
  completion_tokens_details?: CompletionTokensDetails | null;
  [k: string]: unknown;
}
/**
 * Breakdown of the prompt tokens.
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "PromptTokensDetails".
 */
export interface PromptTokensDetails {
  /**
   * Prompt tokens served from the prompt cache (counted inside `prompt_tokens`).
   */
  cached_tokens?: number | null;
  /**
   * Audio input tokens.
   */
  audio_tokens?: number | null;
  [k: string]: unknown;
}
/**
 * Breakdown of the completion tokens.
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "CompletionTokensDetails".
 */
export interface CompletionTokensDetails {
  /**
   * Reasoning tokens (counted inside `completion_tokens`).
   */
  reasoning_tokens?: number | null;
  /**
   * Audio output tokens.
   */
  audio_tokens?: number | null;
  /**
   * Predicted-output tokens that appeared in the completion.
   */
  accepted_prediction_tokens?: number | null;
  /**
   * Predicted-output tokens that did not appear in the completion.
   */
  rejected_prediction_tokens?: number | null;
  [k: string]: unknown;
}
/**
 * An error envelope sent instead of a completion (HTTP 4xx/5xx body).
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "ErrorResponse".
 */
export interface ErrorResponse {
  /**
   * The error.
   */
  error: ErrorObject;
  [k: string]: unknown;
}
/**
 * An error reported by the API or a compatible server.
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "ErrorObject".
 */
export interface ErrorObject {
  /**
   * Human-readable description.
   */
  message?: string | null;
  /**
   * Error class (`invalid_request_error`, `server_error`, ...); Groq's stream omits it.
   */
  type?: string | null;
  /**
   * Machine-readable code; a string at OpenAI, a number at OpenRouter.
   */
  code?: string | number | null;
  /**
   * The request parameter at fault.
   */
  param?: string | null;
  [k: string]: unknown;
}
/**
 * One chunk of a stream (also a `text_completion` object).
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "CompletionChunk".
 */
export interface CompletionChunk {
  /**
   * The completion's id, the same in every chunk.
   */
  id: string;
  /**
   * `text_completion`.
   */
  object: string;
  /**
   * Unix seconds when the completion was created.
   */
  created: number;
  /**
   * The model.
   */
  model: string;
  /**
   * Choice fragments; empty in the final usage chunk.
   */
  choices: StreamChoice[];
  /**
   * Token usage, in the last chunk (`stream_options.include_usage`).
   */
  usage?: Usage | null;
  /**
   * Backend configuration fingerprint.
   */
  system_fingerprint?: string | null;
  /**
   * An in-stream error carried in an ordinary chunk.
   */
  error?: ErrorObject | null;
  [k: string]: unknown;
}
/**
 * One choice of a stream chunk: what it adds.
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "StreamChoice".
 */
export interface StreamChoice {
  /**
   * Which choice the chunk belongs to.
   */
  index: number;
  /**
   * A fragment of the text; fragments are concatenated.
   */
  text: string;
  /**
   * Set on the choice's last chunk.
   */
  finish_reason?: string | null;
  /**
   * Log-probabilities of this chunk's tokens; lists are concatenated.
   */
  logprobs?: Logprobs | null;
  /**
   * vLLM: the stop string or token id that ended generation (last chunk).
   */
  stop_reason?: number | string | null;
  /**
   * vLLM `return_token_ids`: the prompt's token ids, in the choice's first chunk only.
   */
  prompt_token_ids?: number[] | null;
  /**
   * vLLM `return_token_ids`: the token ids generated in this chunk.
   */
  token_ids?: number[] | null;
  [k: string]: unknown;
}
/**
 * The data of an in-stream error event (Groq's `event: error`, an error-only chunk).
 *
 * This interface was referenced by `OpenAICompletions`'s JSON-Schema
 * via the `definition` "ErrorChunk".
 */
export interface ErrorChunk {
  /**
   * The error.
   */
  error: ErrorObject;
  [k: string]: unknown;
}
