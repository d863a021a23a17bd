// How a TypeScript consumer reads model-call-capture files with the generated declarations.
// tests/test_codegen.py compiles it with `tsc --strict --noEmit -p codegen`; each
// `@ts-expect-error` below proves that a declaration is precise, not `any`: if a type
// degrades, the directive is unused and the compile fails.
import type { CaptureLine } from "./typescript/capture-line.js";
import type { ModelCallCapture } from "./typescript/model-call-capture.js";
import type { ModelCallRecord, ToolCall } from "./typescript/model-call-record.js";
import type { CaptureConfig } from "./typescript/capture-config.js";
import type { ChatStreamEvent, Response as ChatResponse } from "./typescript/dialects/openai-chat.js";

/** The capture lines of one `<rollout_id>.capture.jsonl` file; blank lines are skipped. */
export function readCaptureLines(text: string): CaptureLine[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as CaptureLine);
}

/** One line as a short human summary; every field of a line may be absent or null. */
export function describeLine(line: CaptureLine): string {
  const server = line.model_ref ? `${line.model_ref.type}/${line.model_ref.name}` : "unknown server";
  const status = line.status_code ?? "no status";
  const failed = line.error_category !== undefined && line.error_category !== null;
  const latency = line.latency_ms == null ? "?" : line.latency_ms.toFixed(1);
  return `${line.dialect ?? "?"} via ${server}: ${status}${failed ? ` (${line.error_category})` : ""} in ${latency} ms`;
}

/** The chat response of a line, when the line is a chat call with a parsed response. */
export function chatResponse(line: CaptureLine): ChatResponse | undefined {
  return line.dialect === "chat" && line.response ? (line.response as ChatResponse) : undefined;
}

/** The first choice's text of a chat response. */
export function chatText(response: ChatResponse): string | null {
  return response.choices?.[0]?.message.content ?? null;
}

/** The records of an `ng_model_call_capture` attachment, the tokens they used and its gaps. */
export function readAttachment(text: string): { records: ModelCallRecord[]; tokens: number | null; gaps: string[] } {
  const capture = JSON.parse(text) as ModelCallCapture;
  const gaps = (capture.gaps ?? []).map((gap) => (gap.detail ? `${gap.code} (${gap.detail})` : gap.code));
  return { records: capture.calls, tokens: capture.metrics.tokens_total, gaps };
}

/** The tool names a record asked for, in order. */
export function toolNames(record: ModelCallRecord): string[] {
  return record.tool_calls.map((call: ToolCall) => call.name ?? "<unnamed>");
}

/** Whether a stream event payload carries an error. */
export function isErrorEvent(event: ChatStreamEvent): boolean {
  return "error" in event && event.error !== undefined && event.error !== null;
}

const record: ModelCallRecord = {
  model_call_id: "00000000bb6784ff0000000000000001",
  response_id: "chatcmpl-1",
  call_index: 0,
  model_ref: { type: "responses_api_models", name: "policy_model" },
  model: "fake-model-1",
  dialect: "chat",
  status_code: 200,
  response_status: null,
  finish_reason: "tool_calls",
  started_at: 1800000123.647,
  completed_at: 1800000123.668,
  tokens_in: 120,
  tokens_out: 40,
  tokens_reasoning: 12,
  tokens_total: 160,
  cached_tokens: 64,
  cache_hit: true,
  cache_creation_tokens: null,
  tool_calls: [{ call_id: "call_1", name: "get_weather", arguments: { city: "Paris" } }],
  reasoning_content: "Need the weather.",
  error_category: null,
  latency_total_ms: 21.0,
  latency_ttft_ms: 21.0,
  request: null,
  response: null,
  request_raw: null,
  response_raw: null,
};
toolNames(record);

const config: CaptureConfig = { observability_enabled: true, model_call_capture_dir: "/data/captures" };
config.observability_enabled;

// @ts-expect-error: tokens are numbers, not strings
const wrongTokens: ModelCallRecord = { ...record, tokens_in: "120" };
// @ts-expect-error: an unknown dialect
const wrongDialect: CaptureLine = { dialect: "gemini" };
// @ts-expect-error: a record without its required call_index
const missingIndex: ModelCallRecord = (({ call_index, ...rest }) => rest)(record);
// @ts-expect-error: a model reference needs a name
const wrongRef: CaptureLine = { model_ref: { type: "responses_api_models" } };
// @ts-expect-error: capture_stream_raw is one of three policies
const wrongPolicy: CaptureConfig = { capture_stream_raw: "sometimes" };
// @ts-expect-error: tool arguments are any JSON value (`unknown`), not `any`
const argumentsText: string = record.tool_calls[0]?.arguments;
export { wrongTokens, wrongDialect, missingIndex, wrongRef, wrongPolicy, argumentsText };
