"""Rollout collection: clearing stale captures, attaching ng_model_call_capture, a small collector."""

from __future__ import annotations

from typing import Any


def clear_model_call_captures_for_rollouts(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def merge_model_call_capture_into_record(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError

