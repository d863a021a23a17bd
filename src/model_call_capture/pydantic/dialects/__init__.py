# Generated from the schemas under schemas/v1/dialects/ by `python codegen/generate.py`; do not edit by hand.
"""Pydantic v2 models of the dialect payloads, one module per dialect: `anthropic_messages`, `openai_chat`, `openai_completions`, `openai_responses`.

Each module holds the dialect's request, response and stream-event types, named as in
the schema's `$defs`; validate a union alias (a stream event) with `pydantic.TypeAdapter`.
"""
