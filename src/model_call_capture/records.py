"""Typed records and metrics derived from capture files."""

from __future__ import annotations

from typing import Any


def aggregate_model_call_metrics(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def aggregate_model_call_records(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def build_model_call_record(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def read_available_model_call_records(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def read_model_call_records(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError

