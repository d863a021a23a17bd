"""Capture configuration: reading CaptureConfig from a global config mapping or YAML file."""

from __future__ import annotations

from typing import Any


def load_capture_config(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError

