# Generated from the schemas under schemas/v1/ by `python codegen/generate.py`; do not edit by hand.

"""Pydantic v2 models of the model-call-capture documents, generated from the JSON Schemas.

For pipelines and FastAPI apps that speak pydantic; the library itself uses the msgspec
Structs of `model_call_capture.contracts`. Objects the schemas leave open accept (and keep)
unknown fields. Dialect payloads live in `model_call_capture.pydantic.dialects`.

    from model_call_capture.pydantic import CaptureLine, ModelCallRecord
    record = ModelCallRecord.model_validate_json(text)
"""

from __future__ import annotations

from .capture_config import CaptureConfig
from .capture_line import CaptureLine
from .model_call_capture import Dialect, ModelCallCapture, ModelCallMetrics, ModelRef, ObservationGap, ToolCall
from .model_call_record import ModelCallRecord
from .token_trajectory import TokenTrajectory

__all__ = [
    "CaptureConfig",
    "CaptureLine",
    "Dialect",
    "ModelCallCapture",
    "ModelCallMetrics",
    "ModelCallRecord",
    "ModelRef",
    "ObservationGap",
    "TokenTrajectory",
    "ToolCall",
]
