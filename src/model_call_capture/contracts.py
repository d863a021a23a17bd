"""The typed contracts: msgspec Structs mirroring the JSON Schemas in `schemas/v1/`.

The schemas are the source of truth; these Structs are written by hand to match them,
and `tests/test_contracts.py` proves that the two agree. This module holds the types and
nothing else.

Field conventions (see msgspec's schema-evolution guide):
- a field that is always written is required, and nullable where `null` means unknown;
- an optional addition made within v1 has a default, and `UNSET` where "absent" and
  "null" must stay apart;
- `null` always means unknown, never zero.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from . import _codec

__all__ = [
    "CAPTURE_LINE_FORMAT",
    "CaptureConfig",
    "CaptureLayout",
    "CaptureLine",
    "CaptureLineFormat",
    "Dialect",
    "ErrorCategory",
    "GapCode",
    "ModelCallCapture",
    "ModelCallMetrics",
    "ModelCallRecord",
    "ModelRef",
    "ObservationGap",
    "ResponseSource",
    "StreamRawPolicy",
    "TokenTrajectory",
    "ToolCall",
]

# Constrained scalars shared by several documents; each bound is also in the JSON Schemas.
_Count = Annotated[int, Meta(ge=0)]
_Milliseconds = Annotated[float, Meta(ge=0)]
_RolloutId = Annotated[
    str, Meta(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]
_AbsolutePath = Annotated[str, Meta(pattern=r"^/")]
_TokenId = Annotated[int, Meta(ge=0, le=2**31 - 1)]
"""A token id: a vocabulary index, exported as int32."""

Dialect = Literal["responses", "chat", "messages", "completions"]
"""The API dialect of a call: OpenAI Responses, OpenAI Chat Completions, Anthropic Messages,
(1.2) OpenAI legacy Completions. The same names as the registry (`dialects.DIALECTS`), which
sits above this module: tests/test_contracts.py checks that the two agree."""

ErrorCategory = str
"""Why a call failed (`timeout`, `rate_limit`, `auth`, ...); an open set, see docs/formats.md."""

GapCode = str
"""Why an attachment or a line is incomplete (`model_call_capture_no_records`, `memory_budget`, ...)."""

StreamRawPolicy = Literal["always", "on_failure", "never"]
CaptureLayout = Literal["auto", "shared", "segments"]
"""When the raw SSE body of a stream is kept in `response_raw`."""

ResponseSource = Literal["upstream", "local"]
"""Who answered a call: the model server's upstream, or the server itself (schema 1.1)."""

CaptureLineFormat = Literal["model-call-capture/1"]
"""The only `format` a v1 capture line may carry; a future major is not a v1 line."""

CAPTURE_LINE_FORMAT: CaptureLineFormat = "model-call-capture/1"
"""The `format` value of capture lines written by this library's v1."""


class ModelRef(msgspec.Struct, kw_only=True, gc=False):
    """Which model server recorded a call."""

    type: str
    """The kind of server instance, `responses_api_models` for a Gym model server."""
    name: str
    """The configured name of the server instance."""


class ToolCall(msgspec.Struct, kw_only=True, gc=False):
    """One tool call the model asked for."""

    call_id: str | None
    """The provider's id for the call (`call_...`, `toolu_...`), null when absent."""
    name: str | None
    """The tool's name, null when absent."""
    arguments: Any
    """Parsed JSON arguments; `{"_raw": text}` when the text was not valid JSON."""


class CaptureLine(msgspec.Struct, kw_only=True):
    """One raw line of `<rollout_id>.capture.jsonl`, as the capture middleware writes it.

    Compatible with the lines NeMo Gym writes: every field is optional on read, and
    unknown fields are accepted (and ignored). On write the eleven core fields are always
    present (null when unknown), as in Gym's lines; the `UNSET` ones only when set.
    """

    format: CaptureLineFormat | UnsetType = UNSET
    """`model-call-capture/1`; absent on lines written by NeMo Gym, which are v1 too."""
    model_call_id: str | None = None
    """Unique, server-generated id of the call."""
    dialect: Dialect | None = None
    """The API dialect of the call."""
    model_ref: ModelRef | None = None
    """Which model server recorded the call."""
    started_at: float | None = None
    """UTC Unix seconds, taken immediately before invoking the downstream app."""
    completed_at: float | None = None
    """UTC Unix seconds, taken when the downstream app returned or raised."""
    latency_ms: _Milliseconds | None = None
    """Monotonic duration of the call in milliseconds."""
    latency_ttft_ms: _Milliseconds | None = None
    """Milliseconds to the first response body byte that is not an SSE comment."""
    status_code: int | None = None
    """HTTP status the app sent, or the one its exception carried."""
    error_category: ErrorCategory | None = None
    """Why the call failed, null when it did not."""
    request: dict[str, Any] | None = None
    """The request body as a JSON object; null when it was malformed or not an object."""
    response: dict[str, Any] | None = None
    """The response body, or the response reassembled from a stream; null when unknown."""
    request_raw: str | None | UnsetType = UNSET
    """The request body as text, written when it was not a JSON object."""
    response_raw: str | None | UnsetType = UNSET
    """The response body as text, written when it could not be parsed or was a stream."""
    capture_cut: bool | UnsetType = UNSET
    """True when the per-call byte cap cut the captured payload (the client got it all)."""
    stream: bool | UnsetType = UNSET
    """True when the response was a Server-Sent Events stream."""
    gaps: list[ObservationGap] | UnsetType = UNSET
    """What the capture left out of this line or replaced, and why; absent when nothing."""
    client_session_id: str | None | UnsetType = UNSET
    """(1.1) The request's one distinct non-empty `x-session-id` header value; correlation evidence, not authentication."""
    upstream_attempted: bool | None | UnsetType = UNSET
    """(1.1) Whether the model server tried its upstream for this call, as the app said; absent when it said nothing."""
    response_source: ResponseSource | None | UnsetType = UNSET
    """(1.1) `upstream` when the upstream answered, `local` when the server answered itself."""
    upstream_status_code: int | None | UnsetType = UNSET
    """(1.1) The upstream's HTTP status, which may differ from the status the client got."""
    local_response_reason: str | None | UnsetType = UNSET
    """(1.1) Why the server answered locally (`context_length_exceeded`, `upstream_timeout`, ...)."""


# gc=False (also on ModelRef and ToolCall): records are read by the hundred thousand and
# kept for a whole pipeline; untracked, the cyclic collector never walks them (7% of a bulk
# read, and every later full collection). A record is never part of a reference cycle
# unless a caller builds one into its payloads, which would then only leak.
class ModelCallRecord(msgspec.Struct, kw_only=True, gc=False):
    """A typed record derived from one capture line, for training and evaluation."""

    model_call_id: str | None
    """Unique, server-generated id of the call."""
    response_id: str | None
    """The provider's response id (`resp_...`, `chatcmpl-...`, `msg_...`)."""
    call_index: _Count
    """The line's durable append position in its rollout file (0-based)."""
    model_ref: ModelRef | None
    """Which model server recorded the call."""
    model: str | None
    """The model named by the response, else by the request."""
    dialect: Dialect | None
    """The API dialect of the call."""
    status_code: int | None
    """HTTP status of the call."""
    response_status: str | None
    """Responses API `status` (`completed`, `incomplete`, `failed`); null elsewhere."""
    finish_reason: str | None
    """Why generation stopped (`stop`, `length`, `tool_calls`, `end_turn`, ...)."""
    started_at: float | None
    """UTC Unix seconds, immediately before invoking the downstream app."""
    completed_at: float | None
    """UTC Unix seconds, when the downstream app returned or raised."""
    tokens_in: _Count | None
    """Input tokens, cache reads and writes included."""
    tokens_out: _Count | None
    """Output tokens, reasoning included."""
    tokens_reasoning: _Count | None
    """Reasoning tokens; null where the provider does not report them."""
    tokens_total: _Count | None
    """Total tokens as reported, else tokens_in + tokens_out."""
    cached_tokens: _Count | None
    """Input tokens served from the prompt cache."""
    cache_hit: bool | None
    """Whether any input token came from the prompt cache."""
    cache_creation_tokens: _Count | None
    """Input tokens written to the prompt cache (Anthropic)."""
    tool_calls: list[ToolCall]
    """Tool calls the model asked for, in order."""
    reasoning_content: str | None
    """Reasoning text or summaries the response carried."""
    error_category: ErrorCategory | None
    """Why the call failed, null when it did not."""
    latency_total_ms: _Milliseconds | None
    """Monotonic duration of the call in milliseconds."""
    latency_ttft_ms: _Milliseconds | None
    """Milliseconds to the first response byte that is not an SSE comment."""
    request: dict[str, Any] | None | UnsetType = UNSET
    """The request body; null when it was malformed or not an object; absent in attached calls."""
    response: dict[str, Any] | None | UnsetType = UNSET
    """The response body or the reassembled stream; absent in attached calls."""
    request_raw: str | None | UnsetType = UNSET
    """The raw request text when it was not a JSON object; absent in attached calls."""
    response_raw: str | None | UnsetType = UNSET
    """The raw response text when it could not be parsed or was a stream; absent in attached calls."""
    capture_cut: bool = False
    """True when the per-call byte cap cut the captured payload."""
    client_session_id: str | None = None
    """(1.1) The request's one distinct non-empty `x-session-id` header value; correlation evidence, not authentication."""
    upstream_attempted: bool | None = None
    """(1.1) Whether the model server tried its upstream for this call; null when not said."""
    response_source: ResponseSource | None = None
    """(1.1) `upstream` when the upstream answered, `local` when the server answered itself."""
    upstream_status_code: int | None = None
    """(1.1) The upstream's HTTP status, which may differ from the status the client got."""
    local_response_reason: str | None = None
    """(1.1) Why the server answered locally (`context_length_exceeded`, `upstream_timeout`, ...)."""
    prompt_token_ids: list[_TokenId] | None = None
    """(1.1) The prompt's token ids as the server returned them; null when it did not (single-choice responses)."""
    generation_token_ids: list[_TokenId] | None = None
    """(1.1) The generated token ids as the server returned them; null when it did not."""
    generation_log_probs: list[float] | None = None
    """(1.1) The log-probability of each generated token; null when the server did not return them."""
    derivation_problems: list[ObservationGap] | UnsetType = UNSET
    """(1.1) Why a derived field is null although the response held a value for it; absent when none."""

    # A record read from a capture file holds `request` and `response` as the JSON text of
    # its line (`msgspec.Raw`) until they are first read: building the payload dicts of every
    # call cost more than the rest of a read, and most readers (metrics, attachments without
    # payloads) never look at them. The first read decodes the text and keeps the dict in the
    # record (later reads return the same object; changes persist); equality and repr decode
    # first. The codec writes unread text verbatim (the same JSON value; the same bytes for
    # lines this library wrote). `msgspec.to_builtins` has no rule for `msgspec.Raw`: read
    # the payloads first or use `to_dict()`. Text that does not decode to
    # an object (only a hand-edited line can hold it) reads as null.

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ModelCallRecord):
            _ = (
                self.request,
                self.response,
                other.request,
                other.response,
            )  # decode held payload text
        return msgspec.Struct.__eq__(self, other)

    def __repr__(self) -> str:
        _ = (self.request, self.response)
        return msgspec.Struct.__repr__(self)

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON-ready Python values (payloads decoded), e.g. for pandas.

        Use this rather than `msgspec.to_builtins`, which refuses the payload text a record
        read from a file holds until its payloads are first read (`msgspec.structs.asdict`
        returns that text as `msgspec.Raw`). Pickling and copying need nothing special.
        """
        value: dict[str, Any] = _codec.to_builtins(self)
        return value


def _lazy_payload(name: str, doc: str) -> None:
    """Make the field `name` of `ModelCallRecord` decode `msgspec.Raw` text on first read.

    msgspec stores the field in a slot and reads and writes it in C (init, decode, encode,
    `structs.replace`), so the field keeps its name, type and schema; only Python attribute
    access goes through this property, which reads and writes the slot through msgspec's
    own descriptor.
    """
    slot = ModelCallRecord.__dict__[name]
    read, write, decode = slot.__get__, slot.__set__, _codec.decode_object  # bound once

    def get(self: ModelCallRecord) -> Any:
        value = read(self, ModelCallRecord)
        if type(value) is msgspec.Raw:
            value = decode(value)
            write(self, value)
        return value

    setattr(ModelCallRecord, name, property(get, write, slot.__delete__, doc))


_lazy_payload(
    "request",
    "The request body; null when it was malformed or not an object; absent in attached calls.",
)
_lazy_payload("response", "The response body or the reassembled stream; absent in attached calls.")


class ModelCallMetrics(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Sums over the calls of one rollout; null where no call reported a value."""

    num_calls: _Count
    """Number of captured model calls."""
    tokens_in: _Count | None
    """Sum of known tokens_in."""
    tokens_out: _Count | None
    """Sum of known tokens_out."""
    tokens_reasoning: _Count | None
    """Sum of known tokens_reasoning."""
    tokens_total: _Count | None
    """Sum of known tokens_total."""
    cached_tokens: _Count | None
    """Sum of known cached_tokens."""
    latency_total_ms: _Milliseconds | None
    """Sum of known latency_total_ms."""
    cache_creation_tokens: _Count | None | UnsetType = UNSET
    """Sum of known cache_creation_tokens."""
    error_categories: dict[str, _Count] | UnsetType = UNSET
    """Number of calls per error_category (calls without an error are not counted)."""


class ObservationGap(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Why a capture may be incomplete: the capture attached to a rollout, or one call's line."""

    code: GapCode
    """A rollout's: `model_call_capture_no_records`, `model_call_capture_records_unreadable`, `model_call_capture_incomplete` or `model_call_capture_unreadable`; a line's: `request_undecodable`, `response_undecodable`, `memory_budget`, `raw_text_cut`, `payload_as_text`, `redacted_raw`, `raw_text_spill_failed`, (1.1) `field_dropped` or `request_unread`."""
    detail: str | UnsetType = UNSET
    """More about the gap, e.g. `count=3` unreadable lines."""


class ModelCallCapture(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The `ng_model_call_capture` attachment of a rollout record."""

    rollout_id: _RolloutId
    """The rollout-attempt id the calls were captured under."""
    metrics: ModelCallMetrics
    """Sums over the calls."""
    calls: list[ModelCallRecord]
    """The records, without request/response payloads unless asked for."""
    gaps: list[ObservationGap] | UnsetType = UNSET
    """Why the capture may be incomplete; omitted when empty."""


class CaptureConfig(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Top-level run settings that turn capture on.

    Unknown keys are accepted, as this is a slice of a larger global config.
    """

    observability_enabled: bool = False
    """Turn model-call capture on for every model server in the run."""
    model_call_capture_dir: _AbsolutePath | None = None
    """Absolute directory of the capture files; required when capture is on."""
    capture_max_bytes: _Count = 64 * 1024 * 1024
    """Per-call cap on captured request and response bytes; past it the payload is cut."""
    capture_stream_raw: StreamRawPolicy = "on_failure"
    """When to keep a stream's raw SSE body in `response_raw`."""
    capture_memory_budget_bytes: _Count = 1024 * 1024 * 1024
    """Per-process bound on the bytes captures in flight hold; past it capture degrades."""
    capture_layout: CaptureLayout = "auto"
    """Where writers append: one shared file per rollout under flock, per-writer segments, or auto (segments where the filesystem's locks are not coherent across hosts)."""
    otlp_endpoint: str | None = None
    """OTLP/HTTP endpoint that gets each captured call's GenAI span once its line is durable (needs the `otel` extra); null: no live spans."""

    def __post_init__(self) -> None:
        # The schema says the same with if/then; msgspec turns this ValueError into a
        # ValidationError at decode time, so both give one verdict.
        if self.observability_enabled and self.model_call_capture_dir is None:
            raise ValueError(
                "model_call_capture_dir is required when observability_enabled is true"
            )


class TokenTrajectory(msgspec.Struct, kw_only=True, gc=False):
    """One token sequence of a rollout for training: chained calls, with what the model generated.

    Built by `build_token_trajectories` (docs/formats.md, "Token trajectories"): the last
    call's prompt and generated ids, every earlier call of the chain being a prefix of it.
    `token_ids`, `loss_mask` and `log_probs` have the same length.
    """

    rollout_id: str | None
    """The rollout the calls were captured under; null when the caller did not say."""
    model_call_ids: list[str | None]
    """The calls of the chain, in order; each one's prompt starts with the previous one's prompt and generation."""
    token_ids: list[_TokenId]
    """The last call's prompt token ids followed by its generated ids."""
    loss_mask: list[Annotated[int, Meta(ge=0, le=1)]]
    """1 for a token a call of this chain generated, 0 for prompt, tool and template tokens."""
    log_probs: list[float | None]
    """The log-probability of each generated token; null for other tokens and where the server gave none."""
    break_reasons: list[str]
    """Why this chain does not continue an earlier one (`code: detail`); empty for the rollout's first chain."""
