# Generated from schemas/v1/model-call-capture.schema.json by `python codegen/generate.py`; do not edit by hand.
from ._internal import (
    Dialect,
    ErrorCategoriesAdditionalProperty,
    ModelCallCapture,
    ModelCallMetrics,
    ModelRef,
    ObservationGap,
    ToolCall,
)

__all__ = ["Dialect", "ErrorCategoriesAdditionalProperty", "ModelCallCapture", "ModelCallMetrics", "ModelRef", "ObservationGap", "ToolCall"]
