# Generated from schemas/v1/model-call-record.schema.json by `python codegen/generate.py`; do not edit by hand.
from ._internal import GenerationTokenId, ModelCallRecord, PromptTokenId

__all__ = ["GenerationTokenId", "ModelCallRecord", "PromptTokenId"]
