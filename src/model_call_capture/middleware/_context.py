"""What the middleware tells the app about a captured call, and what the app may tell it."""

from __future__ import annotations

from ..contracts import Dialect

__all__ = ["CAPTURE_EXTENSION", "CaptureContext"]

CAPTURE_EXTENSION = "model_call_capture"
"""Key of the `CaptureContext` in `scope["extensions"]` of a captured request."""


class CaptureContext:
    """Per-request capture facts handed to the app at `scope["extensions"]["model_call_capture"]`.

    An app (for example a reverse proxy) may set `error_category` to say why a call
    failed when the status alone cannot, e.g. `"connection"` or `"timeout"` when its
    upstream failed and it answered 502 or 504 itself. The value it sets wins over the
    category the middleware would derive.
    """

    __slots__ = ("dialect", "error_category", "model_call_id", "rollout_id")

    def __init__(self, rollout_id: str, model_call_id: str, dialect: Dialect) -> None:
        self.rollout_id = rollout_id
        """The rollout the call is captured under."""
        self.model_call_id = model_call_id
        """The id its capture line will carry."""
        self.dialect: Dialect = dialect
        """The dialect of the observed path."""
        self.error_category: str | None = None
        """Set by the app to override the derived `error_category`; None to derive it."""
