// Generated from schemas/v1/capture-config.schema.json by `python codegen/generate.py`; do not edit by hand.
/**
 * Top-level run settings that turn capture on.
 *
 * Unknown keys are accepted, as this is a slice of a larger global config.
 */
export interface CaptureConfig {
  /**
   * Turn model-call capture on for every model server in the run.
   */
  observability_enabled?: boolean;
  /**
   * Absolute directory of the capture files; required when capture is on.
   */
  model_call_capture_dir?: string | null;
  /**
   * Per-call cap on captured request and response bytes; past it the payload is cut.
   */
  capture_max_bytes?: number;
  /**
   * When to keep a stream's raw SSE body in `response_raw`.
   */
  capture_stream_raw?: "always" | "on_failure" | "never";
  /**
   * Per-process bound on the bytes captures in flight hold; past it capture degrades.
   */
  capture_memory_budget_bytes?: number;
  /**
   * Where writers append: one shared file per rollout under flock, per-writer segments, or auto (segments where the filesystem's locks are not coherent across hosts).
   */
  capture_layout?: "auto" | "shared" | "segments";
  /**
   * OTLP/HTTP endpoint that gets each captured call's GenAI span once its line is durable (needs the `otel` extra); null: no live spans.
   */
  otlp_endpoint?: string | null;
  [k: string]: unknown;
}
