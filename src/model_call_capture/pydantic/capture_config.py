# Generated from schemas/v1/capture-config.schema.json by `python codegen/generate.py`; do not edit by hand.
from __future__ import annotations

from typing import Annotated, Literal

from ._base import JsonModel
from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr


class CaptureConfig(JsonModel):
    """
    Top-level run settings that turn capture on.

    Unknown keys are accepted, as this is a slice of a larger global config.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    observability_enabled: StrictBool = False
    """
    Turn model-call capture on for every model server in the run.
    """
    model_call_capture_dir: Annotated[StrictStr | None, Field(pattern="^/")] = None
    """
    Absolute directory of the capture files; required when capture is on.
    """
    capture_max_bytes: Annotated[StrictInt, Field(ge=0)] = 67108864
    """
    Per-call cap on captured request and response bytes; past it the payload is cut.
    """
    capture_stream_raw: Literal["always", "on_failure", "never"] = "on_failure"
    """
    When to keep a stream's raw SSE body in `response_raw`.
    """
    capture_memory_budget_bytes: Annotated[StrictInt, Field(ge=0)] = 1073741824
    """
    Per-process bound on the bytes captures in flight hold; past it capture degrades.
    """
    capture_layout: Literal["auto", "shared", "segments"] = "auto"
    """
    Where writers append: one shared file per rollout under flock, per-writer segments, or auto (segments where the filesystem's locks are not coherent across hosts).
    """
    otlp_endpoint: StrictStr | None = None
    """
    OTLP/HTTP endpoint that gets each captured call's GenAI span once its line is durable (needs the `otel` extra); null: no live spans.
    """
