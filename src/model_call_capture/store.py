"""CaptureStore: durable, append-only, per-rollout JSONL capture files."""

from __future__ import annotations

from typing import Any

class CaptureStore:
    """Not implemented yet."""


class InvalidRolloutIdError(ValueError):
    """Not implemented yet."""
