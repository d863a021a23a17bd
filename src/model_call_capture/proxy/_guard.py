"""`TargetGuard`: the outermost layer of `mcc serve`, between the server and the capture."""

from __future__ import annotations

from urllib.parse import unquote

from .._asgi import ASGIApp, Receive, Scope, Send
from ._reply import send_error
from ._target import BadTarget, origin_path, resolve_request_path

__all__ = ["TargetGuard"]


class TargetGuard:
    """Refuses a request target the proxy will not forward (400), and normalises the rest.

    It runs before the capture middleware, so what is routed and captured is the path the
    upstream gets: an absolute-form target by its path, dot segments resolved
    (`/ng-rollout/x/v1/./chat/completions` is captured as the chat call it is). The rules
    are those of `_target`; `ProxyApp` applies them again on its own.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw: bytes | None = scope.get("raw_path")
        target = raw if raw is not None else scope["path"].encode("utf-8")
        try:
            path = resolve_request_path(origin_path(target, scope.get("query_string", b"")))
        except BadTarget as exc:
            await send_error(send, scope["path"], 400, "invalid_request_target", str(exc))
            return
        if path != target:
            scope = dict(scope)
            if raw is None:
                scope["path"] = path.decode("utf-8", "replace")
            else:
                scope["raw_path"] = path
                scope["path"] = unquote(path.decode("latin-1"))
        await self.app(scope, receive, send)
