# Generated from the schemas under schemas/v1/ by `python codegen/generate.py`; do not edit by hand.
from __future__ import annotations

from typing import Annotated, Any, Literal

from ._base import JsonModel
from pydantic import (
    MISSING,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)
from typing_extensions import TypeAliasType

ErrorCategoriesAdditionalProperty = TypeAliasType(
    "ErrorCategoriesAdditionalProperty", Annotated[StrictInt, Field(ge=0)]
)


class ModelCallMetrics(JsonModel):
    """
    Sums over the calls of one rollout; null where no call reported a value.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    num_calls: Annotated[StrictInt, Field(ge=0)]
    """
    Number of captured model calls.
    """
    tokens_in: Annotated[StrictInt | None, Field(ge=0)]
    """
    Sum of known tokens_in.
    """
    tokens_out: Annotated[StrictInt | None, Field(ge=0)]
    """
    Sum of known tokens_out.
    """
    tokens_reasoning: Annotated[StrictInt | None, Field(ge=0)]
    """
    Sum of known tokens_reasoning.
    """
    tokens_total: Annotated[StrictInt | None, Field(ge=0)]
    """
    Sum of known tokens_total.
    """
    cached_tokens: Annotated[StrictInt | None, Field(ge=0)]
    """
    Sum of known cached_tokens.
    """
    latency_total_ms: Annotated[StrictFloat | None, Field(ge=0.0)]
    """
    Sum of known latency_total_ms.
    """
    cache_creation_tokens: Annotated[StrictInt | None | MISSING, Field(ge=0)] = MISSING
    """
    Sum of known cache_creation_tokens.
    """
    error_categories: dict[str, ErrorCategoriesAdditionalProperty] | MISSING = MISSING
    """
    Number of calls per error_category (calls without an error are not counted).
    """


class ObservationGap(JsonModel):
    """
    Why a capture may be incomplete: the capture attached to a rollout, or one call's line.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    code: Annotated[
        StrictStr,
        Field(
            examples=["model_call_capture_no_records", "model_call_capture_records_unreadable", "model_call_capture_incomplete", "model_call_capture_unreadable", "request_undecodable", "memory_budget"]
        ),
    ]
    """
    A rollout's: `model_call_capture_no_records`, `model_call_capture_records_unreadable`, `model_call_capture_incomplete` or `model_call_capture_unreadable`; a line's: `request_undecodable`, `response_undecodable`, `memory_budget`, `raw_text_cut`, `payload_as_text`, `redacted_raw`, `raw_text_spill_failed`, (1.1) `field_dropped` or `request_unread`.
    """
    detail: StrictStr | MISSING = MISSING
    """
    More about the gap, e.g. `count=3` unreadable lines.
    """


class ModelRef(JsonModel):
    """
    Which model server recorded a call.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    type: StrictStr
    """
    The kind of server instance, `responses_api_models` for a Gym model server.
    """
    name: StrictStr
    """
    The configured name of the server instance.
    """


class ToolCall(JsonModel):
    """
    One tool call the model asked for.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    call_id: StrictStr | None
    """
    The provider's id for the call (`call_...`, `toolu_...`), null when absent.
    """
    name: StrictStr | None
    """
    The tool's name, null when absent.
    """
    arguments: Any
    """
    Parsed JSON arguments; `{"_raw": text}` when the text was not valid JSON.
    """


Dialect = TypeAliasType(
    "Dialect",
    Annotated[
        Literal["responses", "chat", "messages", "completions"],
        Field(examples=["chat"], title="Dialect"),
    ],
)
"""
The API dialect of a call: OpenAI Responses (`/v1/responses`), OpenAI Chat Completions (`/v1/chat/completions`), Anthropic Messages (`/v1/messages`), (1.2) OpenAI legacy Completions (`/v1/completions`).
"""


class ModelCallCapture(JsonModel):
    """
    The `ng_model_call_capture` attachment of a rollout record.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    rollout_id: Annotated[
        StrictStr,
        Field(max_length=200, min_length=1, pattern="^[A-Za-z0-9][A-Za-z0-9._-]*$"),
    ]
    """
    The rollout-attempt id the calls were captured under.
    """
    metrics: ModelCallMetrics
    """
    Sums over the calls.
    """
    calls: list[ModelCallRecord]
    """
    The records, without request/response payloads unless asked for.
    """
    gaps: list[ObservationGap] | MISSING = MISSING
    """
    Why the capture may be incomplete; omitted when empty.
    """


PromptTokenId = TypeAliasType(
    "PromptTokenId", Annotated[StrictInt, Field(ge=0, le=2147483647)]
)


GenerationTokenId = TypeAliasType(
    "GenerationTokenId", Annotated[StrictInt, Field(ge=0, le=2147483647)]
)


class ModelCallRecord(JsonModel):
    """
    A typed record derived from one capture line, for training and evaluation.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    model_call_id: StrictStr | None
    """
    Unique, server-generated id of the call.
    """
    response_id: StrictStr | None
    """
    The provider's response id (`resp_...`, `chatcmpl-...`, `msg_...`).
    """
    call_index: Annotated[StrictInt, Field(ge=0)]
    """
    The line's durable append position in its rollout file (0-based).
    """
    model_ref: ModelRef | None
    """
    Which model server recorded the call.
    """
    model: StrictStr | None
    """
    The model named by the response, else by the request.
    """
    dialect: Dialect | None
    """
    The API dialect of the call.
    """
    status_code: StrictInt | None
    """
    HTTP status of the call.
    """
    response_status: Annotated[
        StrictStr | None, Field(examples=["completed", "incomplete", "failed"])
    ]
    """
    Responses API `status` (`completed`, `incomplete`, `failed`); null elsewhere.
    """
    finish_reason: Annotated[
        StrictStr | None, Field(examples=["stop", "length", "tool_calls", "end_turn"])
    ]
    """
    Why generation stopped (`stop`, `length`, `tool_calls`, `end_turn`, ...).
    """
    started_at: StrictFloat | None
    """
    UTC Unix seconds, immediately before invoking the downstream app.
    """
    completed_at: StrictFloat | None
    """
    UTC Unix seconds, when the downstream app returned or raised.
    """
    tokens_in: Annotated[StrictInt | None, Field(ge=0)]
    """
    Input tokens, cache reads and writes included.
    """
    tokens_out: Annotated[StrictInt | None, Field(ge=0)]
    """
    Output tokens, reasoning included.
    """
    tokens_reasoning: Annotated[StrictInt | None, Field(ge=0)]
    """
    Reasoning tokens; null where the provider does not report them.
    """
    tokens_total: Annotated[StrictInt | None, Field(ge=0)]
    """
    Total tokens as reported, else tokens_in + tokens_out.
    """
    cached_tokens: Annotated[StrictInt | None, Field(ge=0)]
    """
    Input tokens served from the prompt cache.
    """
    cache_hit: StrictBool | None
    """
    Whether any input token came from the prompt cache.
    """
    cache_creation_tokens: Annotated[StrictInt | None, Field(ge=0)]
    """
    Input tokens written to the prompt cache (Anthropic).
    """
    tool_calls: list[ToolCall]
    """
    Tool calls the model asked for, in order.
    """
    reasoning_content: StrictStr | None
    """
    Reasoning text or summaries the response carried.
    """
    error_category: StrictStr | None
    """
    Why the call failed, null when it did not.
    """
    latency_total_ms: Annotated[StrictFloat | None, Field(ge=0.0)]
    """
    Monotonic duration of the call in milliseconds.
    """
    latency_ttft_ms: Annotated[StrictFloat | None, Field(ge=0.0)]
    """
    Milliseconds to the first response byte that is not an SSE comment.
    """
    request: dict[str, Any] | None | MISSING = MISSING
    """
    The request body; null when it was malformed or not an object; absent in attached calls.
    """
    response: dict[str, Any] | None | MISSING = MISSING
    """
    The response body or the reassembled stream; absent in attached calls.
    """
    request_raw: StrictStr | None | MISSING = MISSING
    """
    The raw request text when it was not a JSON object; absent in attached calls.
    """
    response_raw: StrictStr | None | MISSING = MISSING
    """
    The raw response text when it could not be parsed or was a stream; absent in attached calls.
    """
    capture_cut: StrictBool = False
    """
    True when the per-call byte cap cut the captured payload.
    """
    client_session_id: StrictStr | None = None
    """
    (1.1) The request's one distinct non-empty `x-session-id` header value; correlation evidence, not authentication.
    """
    upstream_attempted: StrictBool | None = None
    """
    (1.1) Whether the model server tried its upstream for this call; null when not said.
    """
    response_source: Literal["upstream", "local"] | None = None
    """
    (1.1) `upstream` when the upstream answered, `local` when the server answered itself.
    """
    upstream_status_code: StrictInt | None = None
    """
    (1.1) The upstream's HTTP status, which may differ from the status the client got.
    """
    local_response_reason: StrictStr | None = None
    """
    (1.1) Why the server answered locally (`context_length_exceeded`, `upstream_timeout`, ...).
    """
    prompt_token_ids: Annotated[
        list[PromptTokenId] | None, Field(examples=[[151644, 872, 198]])
    ] = None
    """
    (1.1) The prompt's token ids as the server returned them; null when it did not (single-choice responses).
    """
    generation_token_ids: Annotated[
        list[GenerationTokenId] | None, Field(examples=[[9707, 0, 151645]])
    ] = None
    """
    (1.1) The generated token ids as the server returned them; null when it did not.
    """
    generation_log_probs: Annotated[
        list[StrictFloat] | None, Field(examples=[[-0.0123, -1.5, -0.0001]])
    ] = None
    """
    (1.1) The log-probability of each generated token; null when the server did not return them.
    """
    derivation_problems: Annotated[
        list[ObservationGap] | MISSING,
        Field(
            examples=[[{"code": "token_ids_invalid", "detail": "choices[0].token_ids[2]: a float, not a token id"}]]
        ),
    ] = MISSING
    """
    (1.1) Why a derived field is null although the response held a value for it; absent when none.
    """
