// Generated from schemas/v1/dialects/openai-chat.schema.json by `python codegen/generate.py`; do not edit by hand.
/**
 * The JSON payload of one `data:` line of a Chat Completions stream (the `data: [DONE]` sentinel that ends a stream is not JSON and not described here). A chunk, an error payload (a chunk or an `event: error` whose data has an `error` member), or any other object: unknown events are accepted, never rejected.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "ChatStreamEvent".
 */
export type ChatStreamEvent =
  | ChatCompletionChunk
  | ErrorChunk
  | {
      [k: string]: unknown;
    };

/**
 * A `POST /v1/chat/completions` request body (the fields capture reads; others pass).
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "Request".
 */
export interface Request {
  /**
   * The model to use.
   */
  model?: string | null;
  /**
   * The conversation so far.
   */
  messages?: {
    [k: string]: unknown;
  }[];
  /**
   * Tools the model may call.
   */
  tools?:
    | {
        [k: string]: unknown;
      }[]
    | null;
  /**
   * How the model must choose a tool.
   */
  tool_choice?:
    | string
    | {
        [k: string]: unknown;
      }
    | null;
  /**
   * Stream the answer as Server-Sent Events.
   */
  stream?: boolean | null;
  /**
   * Options of a streamed request.
   */
  stream_options?: StreamOptions | null;
  /**
   * How many choices to generate.
   */
  n?: number | null;
  /**
   * Legacy cap on generated tokens.
   */
  max_tokens?: number | null;
  /**
   * Cap on generated tokens, reasoning included.
   */
  max_completion_tokens?: number | null;
  /**
   * Sampling temperature.
   */
  temperature?: number | null;
  /**
   * Return log probabilities of the output tokens.
   */
  logprobs?: boolean | null;
  /**
   * Structured-output format.
   */
  response_format?: {
    [k: string]: unknown;
  } | null;
  [k: string]: unknown;
}
/**
 * Options of a streamed request.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
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
 * A `chat.completion` response body (also the object reassembled from a stream).
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "Response".
 */
export interface Response {
  /**
   * The completion's id (`chatcmpl-...`).
   */
  id: string;
  /**
   * `chat.completion`.
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
   * The generated choices, one per `n`.
   */
  choices: Choice[];
  /**
   * Token usage.
   */
  usage?: Usage | null;
  /**
   * Backend configuration fingerprint.
   */
  system_fingerprint?: string | null;
  /**
   * The service tier that served the request.
   */
  service_tier?: string | null;
  [k: string]: unknown;
}
/**
 * One choice of a complete response.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "Choice".
 */
export interface Choice {
  /**
   * Position of the choice (0 .. n-1).
   */
  index: number;
  /**
   * The generated message.
   */
  message: Message;
  /**
   * Why generation stopped: `stop`, `length`, `tool_calls`, `content_filter`, ...
   */
  finish_reason?: string | null;
  /**
   * Log probabilities, when requested.
   */
  logprobs?: ChoiceLogprobs | null;
  [k: string]: unknown;
}
/**
 * The assistant message of a choice.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "Message".
 */
export interface Message {
  /**
   * `assistant`.
   */
  role?: string | null;
  /**
   * The text, null when the model only called tools or refused.
   */
  content?: string | null;
  /**
   * The refusal text, when the model refused.
   */
  refusal?: string | null;
  /**
   * Reasoning text (DeepSeek, vLLM, SGLang).
   */
  reasoning_content?: string | null;
  /**
   * Reasoning text (OpenRouter, Groq).
   */
  reasoning?: string | null;
  /**
   * Tool calls the model asked for.
   */
  tool_calls?: MessageToolCall[] | null;
  /**
   * Deprecated single function call.
   */
  function_call?: FunctionCall | null;
  /**
   * URL citations and other annotations of the content.
   */
  annotations?:
    | {
        [k: string]: unknown;
      }[]
    | null;
  [k: string]: unknown;
}
/**
 * A tool call in a complete message.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "MessageToolCall".
 */
export interface MessageToolCall {
  /**
   * The call's id (`call_...`); some compatible servers omit it.
   */
  id?: string | null;
  /**
   * `function` (or `custom`).
   */
  type?: string | null;
  /**
   * The function called.
   */
  function?: FunctionCall | null;
  [k: string]: unknown;
}
/**
 * The function a tool call invokes.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "FunctionCall".
 */
export interface FunctionCall {
  /**
   * The function's name.
   */
  name?: string | null;
  /**
   * The arguments as JSON text, as generated (possibly invalid JSON).
   */
  arguments?: string | null;
  [k: string]: unknown;
}
/**
 * Log probabilities of a choice's content and refusal tokens.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "ChoiceLogprobs".
 */
export interface ChoiceLogprobs {
  /**
   * Per content token.
   */
  content?: TokenLogprob[] | null;
  /**
   * Per refusal token.
   */
  refusal?: TokenLogprob[] | null;
  [k: string]: unknown;
}
/**
 * Log probability of one output token.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "TokenLogprob".
 */
export interface TokenLogprob {
  /**
   * The token.
   */
  token: string;
  /**
   * Its log probability.
   */
  logprob: number;
  /**
   * Its UTF-8 bytes.
   */
  bytes?: number[] | null;
  /**
   * The most likely tokens at this position.
   */
  top_logprobs?: TopLogprob[];
  [k: string]: unknown;
}
/**
 * One of the most likely tokens at a position.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "TopLogprob".
 */
export interface TopLogprob {
  /**
   * The token.
   */
  token: string;
  /**
   * Its log probability.
   */
  logprob: number;
  /**
   * Its UTF-8 bytes.
   */
  bytes?: number[] | null;
  [k: string]: unknown;
}
/**
 * Token usage of a completion.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
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
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
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
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
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
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
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
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
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
 * One `chat.completion.chunk` of a stream.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "ChatCompletionChunk".
 */
export interface ChatCompletionChunk {
  /**
   * The completion's id, the same in every chunk; empty in Azure's first chunk.
   */
  id: string;
  /**
   * `chat.completion.chunk` (empty in Azure's first chunk).
   */
  object: string;
  /**
   * Unix seconds when the completion was created (0 in Azure's first chunk).
   */
  created: number;
  /**
   * The model; empty in Azure's first chunk.
   */
  model: string;
  /**
   * Choice deltas; empty in the final usage chunk.
   */
  choices: ChunkChoice[];
  /**
   * Token usage, in the last chunk (OpenAI) or the finish chunk (DeepSeek).
   */
  usage?: Usage | null;
  /**
   * Backend configuration fingerprint.
   */
  system_fingerprint?: string | null;
  /**
   * The service tier that served the request.
   */
  service_tier?: string | null;
  /**
   * An in-stream error (OpenRouter puts it in an ordinary chunk).
   */
  error?: ErrorObject | null;
  [k: string]: unknown;
}
/**
 * One choice of a stream chunk.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "ChunkChoice".
 */
export interface ChunkChoice {
  /**
   * Which choice the delta belongs to.
   */
  index: number;
  /**
   * What the chunk adds to the message.
   */
  delta: Delta;
  /**
   * Set on the choice's last content chunk.
   */
  finish_reason?: string | null;
  /**
   * Log probabilities of the tokens in this delta.
   */
  logprobs?: ChoiceLogprobs | null;
  [k: string]: unknown;
}
/**
 * What one chunk adds to a choice's message.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "Delta".
 */
export interface Delta {
  /**
   * `assistant`, usually in the first chunk only.
   */
  role?: string | null;
  /**
   * A fragment of the text.
   */
  content?: string | null;
  /**
   * A fragment of the refusal.
   */
  refusal?: string | null;
  /**
   * A fragment of reasoning text (DeepSeek, vLLM, SGLang).
   */
  reasoning_content?: string | null;
  /**
   * A fragment of reasoning text (OpenRouter, Groq).
   */
  reasoning?: string | null;
  /**
   * Tool-call fragments.
   */
  tool_calls?: ToolCallDelta[] | null;
  /**
   * Deprecated single function-call fragment.
   */
  function_call?: FunctionCallDelta | null;
  [k: string]: unknown;
}
/**
 * A fragment of one tool call, joined to the others by `index`.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "ToolCallDelta".
 */
export interface ToolCallDelta {
  /**
   * Which tool call of the choice this fragment belongs to.
   */
  index?: number | null;
  /**
   * The call's id, usually in the first fragment only.
   */
  id?: string | null;
  /**
   * `function`, usually in the first fragment only.
   */
  type?: string | null;
  /**
   * The function fragment.
   */
  function?: FunctionCallDelta | null;
  [k: string]: unknown;
}
/**
 * A fragment of a tool call's function.
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "FunctionCallDelta".
 */
export interface FunctionCallDelta {
  /**
   * The function's name, usually in the first fragment only.
   */
  name?: string | null;
  /**
   * A fragment of the arguments text; fragments are concatenated.
   */
  arguments?: string | null;
  [k: string]: unknown;
}
/**
 * The data of an in-stream error event (Groq's `event: error`, an error-only chunk).
 *
 * This interface was referenced by `OpenAIChat`'s JSON-Schema
 * via the `definition` "ErrorChunk".
 */
export interface ErrorChunk {
  /**
   * The error.
   */
  error: ErrorObject;
  [k: string]: unknown;
}
