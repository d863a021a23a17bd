# Generated from schemas/v1/model-call-record.schema.json by `python codegen/generate.py`; do not edit by hand.
from ._internal import ModelCallRecord

__all__ = ["ModelCallRecord"]
