# Generated from schemas/v1/capture-line.schema.json by `python codegen/generate.py`; do not edit by hand.
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

from ._internal import Dialect, ModelRef, ObservationGap


class CaptureLine(JsonModel):
    """
    One raw line of `<rollout_id>.capture.jsonl`, as the capture middleware writes it.

    Compatible with the lines NeMo Gym writes: every field is optional on read, and
    unknown fields are accepted (and ignored). On write the eleven core fields are always
    present (null when unknown), as in Gym's lines; the `UNSET` ones only when set.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    format: Literal["model-call-capture/1"] | MISSING = MISSING
    """
    `model-call-capture/1`; absent on lines written by NeMo Gym, which are v1 too.
    """
    model_call_id: StrictStr | None = None
    """
    Unique, server-generated id of the call.
    """
    dialect: Dialect | None = None
    """
    The API dialect of the call.
    """
    model_ref: ModelRef | None = None
    """
    Which model server recorded the call.
    """
    started_at: StrictFloat | None = None
    """
    UTC Unix seconds, taken immediately before invoking the downstream app.
    """
    completed_at: StrictFloat | None = None
    """
    UTC Unix seconds, taken when the downstream app returned or raised.
    """
    latency_ms: Annotated[StrictFloat | None, Field(ge=0.0)] = None
    """
    Monotonic duration of the call in milliseconds.
    """
    latency_ttft_ms: Annotated[StrictFloat | None, Field(ge=0.0)] = None
    """
    Milliseconds to the first response body byte that is not an SSE comment.
    """
    status_code: StrictInt | None = None
    """
    HTTP status the app sent, or the one its exception carried.
    """
    error_category: Annotated[
        StrictStr | None, Field(examples=["timeout", "rate_limit", "stream_truncated"])
    ] = None
    """
    Why the call failed, null when it did not.
    """
    request: dict[str, Any] | None = None
    """
    The request body as a JSON object; null when it was malformed or not an object.
    """
    response: dict[str, Any] | None = None
    """
    The response body, or the response reassembled from a stream; null when unknown.
    """
    request_raw: StrictStr | None | MISSING = MISSING
    """
    The request body as text, written when it was not a JSON object.
    """
    response_raw: StrictStr | None | MISSING = MISSING
    """
    The response body as text, written when it could not be parsed or was a stream.
    """
    capture_cut: StrictBool | MISSING = MISSING
    """
    True when the per-call byte cap cut the captured payload (the client got it all).
    """
    stream: StrictBool | MISSING = MISSING
    """
    True when the response was a Server-Sent Events stream.
    """
    gaps: list[ObservationGap] | MISSING = MISSING
    """
    What the capture left out of this line or replaced, and why; absent when nothing.
    """
    client_session_id: StrictStr | None | MISSING = MISSING
    """
    (1.1) The request's one distinct non-empty `x-session-id` header value; correlation evidence, not authentication.
    """
    upstream_attempted: StrictBool | None | MISSING = MISSING
    """
    (1.1) Whether the model server tried its upstream for this call, as the app said; absent when it said nothing.
    """
    response_source: Literal["upstream", "local"] | None | MISSING = MISSING
    """
    (1.1) `upstream` when the upstream answered, `local` when the server answered itself.
    """
    upstream_status_code: StrictInt | None | MISSING = MISSING
    """
    (1.1) The upstream's HTTP status, which may differ from the status the client got.
    """
    local_response_reason: StrictStr | None | MISSING = MISSING
    """
    (1.1) Why the server answered locally (`context_length_exceeded`, `upstream_timeout`, ...).
    """
