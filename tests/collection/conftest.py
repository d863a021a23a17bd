"""Helpers shared by the attachment and collector tests."""

from __future__ import annotations

from typing import Any

from model_call_capture.contracts import CaptureLine, ModelRef


def capture_line(call_id: str, tokens: int | None = 3, **fields: Any) -> CaptureLine:
    """A capture line of one Responses call, with `tokens` input tokens (no usage when None)."""
    usage = (
        {"input_tokens": tokens, "output_tokens": 2, "total_tokens": (tokens or 0) + 2}
        if tokens
        else {}
    )
    return CaptureLine(
        model_call_id=call_id,
        dialect="responses",
        model_ref=ModelRef(type="responses_api_models", name="policy"),
        latency_ms=10.0,
        status_code=200,
        request={"input": "hi"},
        response={"id": f"resp-{call_id}", "model": "m", "status": "completed", "usage": usage},
        **fields,
    )
