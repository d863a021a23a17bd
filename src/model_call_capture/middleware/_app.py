"""The pure-ASGI shell: which requests are captured, and mounting the middleware on an app."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, cast

from .._asgi import ASGIApp, Message, Receive, Scope, Send
from ..contracts import CaptureConfig, Dialect, ModelRef
from ..dialects import dialect_for_path
from ..errors import InvalidRolloutIdError
from ..redaction import Redaction
from ..rollout_ids import route_path, split_scope_prefix, validate_rollout_id
from ..store import CaptureStore
from ._budget import MemoryBudget
from ._call import CapturedCall
from ._context import CAPTURE_EXTENSION
from ._redirect import RedirectPrefix
from ._writer import CaptureWriter, LogOnce, Store

__all__ = ["CaptureMiddleware", "install_model_call_capture"]

_MODEL_REF_TYPE = "responses_api_models"

logger = logging.getLogger("model_call_capture.middleware")


class CaptureMiddleware:
    """Pure ASGI middleware that records prefixed model calls into per-rollout capture files.

    `config` turns capture on (`observability_enabled`) and names the directory;
    `model_server_name` goes into every line's `model_ref`; `store` replaces the
    `CaptureStore` built from the config (tests, or several middlewares sharing one);
    `redact` (see `model_call_capture.redaction`) rewrites every line just before it is
    written, and a line it fails on is not written at all (the rollout is marked incomplete).
    Per-request state lives in a per-request object; the instance holds only settings,
    the store, the writer (its threads and log-once bookkeeping) and the memory budget
    its calls share (`capture_memory_budget_bytes`).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        config: CaptureConfig,
        model_server_name: str,
        store: CaptureStore | None = None,
        redact: Redaction | None = None,
    ) -> None:
        self.app = app
        self.config = config
        self.redact = redact
        self.model_ref = ModelRef(type=_MODEL_REF_TYPE, name=model_server_name)
        self.store: Store | None = None
        if config.observability_enabled:
            if store is None:
                if not config.model_call_capture_dir:
                    raise ValueError(
                        "model_call_capture_dir is required when observability_enabled is true"
                    )
                store = CaptureStore(config.model_call_capture_dir, layout=config.capture_layout)
            self.store = store
        self.live = _live_spans(config) if self.store is not None else None
        """The sender of live GenAI spans (`otlp_endpoint`), None when it is not set."""
        self.writer = CaptureWriter(self.store, redact, self.live.submit if self.live else None)
        self.budget = MemoryBudget(config.capture_memory_budget_bytes)
        """The capture memory budget all calls through this middleware share."""
        self._invalid_ids = LogOnce()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        split = split_scope_prefix(scope)
        if split is None:
            await self.app(scope, receive, send)
            return
        rollout_id, scope = split
        try:
            validate_rollout_id(rollout_id)
        except InvalidRolloutIdError as exc:
            invalid: InvalidRolloutIdError | None = exc
        else:
            invalid = None
        # A redirect keeps the prefix (of a valid id only: it is written into a header).
        redirect = None if invalid else RedirectPrefix(scope, rollout_id)
        dialect = dialect_for_path(route_path(scope)) if self.store is not None else None
        if dialect is None:
            await self.app(scope, receive, _redirecting(send, redirect))
            return
        if invalid is not None:
            if self._invalid_ids.first(rollout_id):
                logger.warning("model call forwarded without capture: %s", invalid)
            await self.app(scope, receive, send)
            return
        call = CapturedCall(
            rollout_id,
            cast(Dialect, dialect),
            scope.get("headers"),
            config=self.config,
            model_ref=self.model_ref,
            budget=self.budget,
            writer=self.writer,
            redirect=redirect,
        )
        scope["extensions"] = {**(scope.get("extensions") or {}), CAPTURE_EXTENSION: call.context}
        call.start()
        try:
            await self.app(scope, call.receive_from(receive), call.send_to(send))
        except BaseException as exc:
            await call.finish(exc)
            raise
        await call.finish(None)


def _redirecting(send: Send, redirect: RedirectPrefix | None) -> Send:
    """`send`, with the `Location` of a redirect kept under the rollout prefix."""
    if redirect is None:
        return send

    async def redirecting_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = redirect.start_message(message)
        await send(message)

    return redirecting_send


def install_model_call_capture(
    app: Any,
    config: CaptureConfig | Mapping[str, Any] | str,
    *,
    model_server_name: str,
    store: CaptureStore | None = None,
    redact: Redaction | None = None,
) -> Any:
    """Mount the capture middleware on `app` and return the app to serve.

    A Starlette or FastAPI app gets it through `app.add_middleware` (outermost of its
    user middleware, so routing sees the stripped path) and is returned itself; any other
    ASGI app is wrapped and the wrapper is returned. `config` is a `CaptureConfig`, or a
    global config mapping / YAML path read with `load_capture_config`. `redact` is the
    redaction hook (`model_call_capture.redaction.Redactor`, or any line -> line callable).
    """
    if not isinstance(config, CaptureConfig):
        from ..config import load_capture_config

        config = load_capture_config(config)
    options: dict[str, Any] = {
        "config": config,
        "model_server_name": model_server_name,
        "store": store,
        "redact": redact,
    }
    if hasattr(app, "add_middleware") and hasattr(app, "user_middleware"):
        app.add_middleware(CaptureMiddleware, **options)
        return app
    return CaptureMiddleware(app, **options)


def _live_spans(config: CaptureConfig) -> Any:
    """`otlp.LiveSpans` for `config.otlp_endpoint` (None when unset); raises
    `OtlpExportError` at startup when the `otel` extra is missing or the URL is not http(s)."""
    if not config.otlp_endpoint:
        return None
    from ..otlp import LiveSpans

    return LiveSpans(config.otlp_endpoint)
