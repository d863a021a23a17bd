"""The viewer's web app: two pages, their static files, and the JSON they read.

Read only: every route is GET (HEAD), reads through the store, and nothing is ever
written. Captured text reaches the browser only as JSON values that the pages put into
the document with `textContent` (never parsed as HTML); the Content-Security-Policy
allows scripts and styles from this server only (no inline script, no `eval`), so even
a page bug could not run captured text. Requests naming another host than the one served
are refused (a web page the user visits cannot reach the viewer by DNS rebinding).
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import _codec
from ..errors import CaptureError, InvalidRolloutIdError
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..rollout_ids import validate_rollout_id
from ..store import CaptureStore
from ._conversation import Limits, build_conversation
from ._entries import Call, Entries
from ._index import FIELD_SORT, SORT_KEYS, Query, RolloutIndex, RolloutSummary
from ._outcomes import Outcomes, beside
from ._search import QUERY_CHARS_MAX, Search, SearchResult

__all__ = ["CSP", "create_app"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The pages' Content-Security-Policy: nothing inline, nothing from elsewhere."""

_SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
_STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
_RAW_CHARS = 1_000_000  # characters of one payload the raw tab shows
_SEARCHES_MAX = 4  # searches at a time; more are refused (429) rather than queued


def _static_files() -> dict[str, tuple[bytes, str]]:
    """The pages and their assets, from the package (the wheel ships them): name -> (bytes, type)."""
    files = {}
    for item in (
        resources.files(__package__ or "model_call_capture.viewer").joinpath("static").iterdir()
    ):
        suffix = "." + item.name.rsplit(".", 1)[-1]
        if item.is_file() and suffix in _STATIC_TYPES:
            files[item.name] = (item.read_bytes(), _STATIC_TYPES[suffix])
    return files


class _SecurityHeaders:
    """Adds the security headers to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in _SECURITY_HEADERS if n not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class _Json(JSONResponse):
    """JSON through the library's one codec (msgspec Structs as they are)."""

    def render(self, content: Any) -> bytes:
        return _codec.encode(content)


def _query(request: Request) -> Query:
    params = request.query_params

    def number(name: str, default: int) -> int:
        value = params.get(name, "")
        number = _codec.ascii_int(value, 8)
        return default if number is None else number

    def real(name: str) -> float | None:
        value = params.get(name, "").strip()
        try:
            number = float(value) if 0 < len(value) <= 40 else None
        except ValueError:
            return None
        return number if number is not None and math.isfinite(number) else None

    sort = params.get("sort", "rollout_id")
    known = sort in SORT_KEYS or (sort.startswith(FIELD_SORT) and len(sort) <= 100)
    return Query(
        model=params.get("model") or None,
        dialect=params.get("dialect") or None,
        error=params.get("error") or None,
        search=(params.get("q") or "")[:200] or None,
        reward_min=real("reward_min"),
        reward_max=real("reward_max"),
        sort=sort if known else "rollout_id",
        descending=params.get("order") == "desc",
        page=number("page", 1),
        page_size=number("page_size", 50),
    )


def _capped(value: Any) -> dict[str, Any] | None:
    """A payload as indented text for the raw tab, cut at `_RAW_CHARS` with what was left out."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(_codec.to_builtins(value), indent=2, ensure_ascii=False)
        except RecursionError:  # the indenting encoder recurses in Python: deep JSON unindented
            text = _codec.encode(value).decode()
    return {"text": text[:_RAW_CHARS], "cut": max(len(text) - _RAW_CHARS, 0)}


def _error(message: str, status: int) -> Response:
    return _Json({"error": " ".join(message.split())[:500]}, status_code=status)


class _Viewer:
    """The routes' handlers over one capture directory."""

    def __init__(self, store: CaptureStore, limits: Limits, shown: str, outcomes: Outcomes) -> None:
        self.store = store
        self.index = RolloutIndex(store, outcomes=outcomes)
        self.limits = limits
        self.static = _static_files()
        self.searching = 0
        self.searched: deque[SearchResult] = deque(maxlen=16)
        """The last searches' results, cancelled ones too (what a test of cancelling reads)."""
        self.shown = shown

    def info(self, request: Request) -> Response:
        """What every page's header says: the directory shown, as given and as read."""
        return _Json(
            {
                "directory": self.shown,
                "capture_dir": str(self.store.root.resolve()),
                "rollouts_file": self.index.rollouts_file().path,
            }
        )

    def _summary(self, request: Request) -> RolloutSummary | None:
        """The summary of the path's rollout: None unless its id is valid and it is here."""
        try:
            rollout_id = validate_rollout_id(request.path_params["rollout_id"])
        except InvalidRolloutIdError:
            return None
        return self.index.summary(rollout_id)

    def page(self, name: str) -> Callable[[Request], Response]:
        def handler(request: Request) -> Response:
            if name == "rollout.html" and self._summary(request) is None:
                return Response("no such rollout", status_code=404, media_type="text/plain")
            body, media_type = self.static[name]
            return Response(body, media_type=media_type)

        return handler

    async def asset(self, request: Request) -> Response:
        found = self.static.get(request.path_params["name"])
        if found is None or found[1].startswith("text/html"):
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(found[0], media_type=found[1])

    def rollouts(self, request: Request) -> Response:
        return _Json(self.index.page(_query(request)))

    def rollout(self, request: Request) -> Response:
        summary = self._summary(request)
        if summary is None:
            return _error("no such rollout", 404)
        try:
            conversation = build_conversation(
                summary.rollout_id,
                self._entries(summary.rollout_id),
                incomplete=summary.incomplete,
                limits=self.limits,
            )
        except (OSError, CaptureError) as exc:
            return _error(str(exc), 422)
        return _Json({"summary": summary, "conversation": conversation})

    def _entries(self, rollout_id: str) -> Entries:
        return Entries(self.store.rollout(rollout_id), max_line_bytes=self.store.max_line_bytes)

    def summary(self, request: Request) -> Response:
        summary = self._summary(request)
        return _error("no such rollout", 404) if summary is None else _Json(summary)

    def neighbours(self, request: Request) -> Response:
        """The rollouts before and after this one in natural order, for previous/next."""
        summary = self._summary(request)
        if summary is None:
            return _error("no such rollout", 404)
        previous, following = self.index.neighbours(summary.rollout_id)
        return _Json({"previous": previous, "next": following})

    async def search(self, request: Request) -> Response:
        """Full-text search over the rollouts' messages (`_search.Search`), in steps on a
        worker thread; between steps, a client that went away cancels it."""
        params = request.query_params
        query = params.get("q", "")
        if not query.strip():
            return _error("no query: give q=TEXT", 400)
        if len(query) > QUERY_CHARS_MAX:
            return _error(f"the query is longer than {QUERY_CHARS_MAX} characters", 400)
        if self.searching >= _SEARCHES_MAX:
            return _error(f"{_SEARCHES_MAX} searches are running; try again", 429)
        budget_ms = _codec.ascii_int(params.get("budget_ms", ""), 6) or 5000
        limit = _codec.ascii_int(params.get("limit", ""), 4) or 100
        self.searching += 1
        search = None
        try:
            search = Search(
                query,
                await anyio.to_thread.run_sync(self.index.ordered),
                self.index.rollout,
                max_line_bytes=self.store.max_line_bytes,
                budget_s=min(max(budget_ms, 100), 10_000) / 1000,
                max_matches=min(max(limit, 1), 500),
                after=params.get("after") or None,
            )
            while not search.done:
                await anyio.to_thread.run_sync(search.step)
                if not search.done and await request.is_disconnected():
                    search.cancel()
        finally:
            self.searching -= 1
            if search is not None:
                if not search.done:  # the server is stopping
                    search.cancel()
                self.searched.append(search.result())
        return _Json(search.result())

    def call(self, request: Request) -> Response:
        summary = self._summary(request)
        if summary is None:
            return _error("no such rollout", 404)
        wanted = request.path_params["index"]
        try:
            for entry in self._entries(summary.rollout_id):
                if isinstance(entry, Call) and entry.record.call_index == wanted:
                    record = entry.record
                    return _Json(
                        {
                            "index": wanted,
                            "request": _capped(record.request),
                            "response": _capped(record.response),
                            "request_raw": _capped(record.request_raw),
                            "response_raw": _capped(record.response_raw),
                        }
                    )
        except (OSError, CaptureError) as exc:
            return _error(str(exc), 422)
        return _error("no such call", 404)

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Keep the index current in a background thread while the app runs."""
        worker = threading.Thread(target=self.index.run, name="mcc-view-index", daemon=True)
        worker.start()
        try:
            yield
        finally:
            self.index.stop()


def create_app(
    root: str | os.PathLike[str],
    *,
    limits: Limits | None = None,
    allowed_hosts: list[str] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    shown: str | None = None,
    rollouts: str | os.PathLike[str] | None = None,
) -> Starlette:
    """The viewer over the capture directory `root` (read only).

    `allowed_hosts` are the `Host` header values served (default: 127.0.0.1, localhost,
    ::1); a background thread keeps the rollouts index (`app.state.index`) current while
    the app runs. A line longer than `max_line_bytes` is shown as damaged, never held.
    `shown` is the directory as the user named it (every page's header; default `root`);
    `rollouts` the collector's rollouts file whose rewards and fields are joined to the
    rollouts (default: `rollouts.jsonl` in `root`, else in the directory holding it).
    """
    store = CaptureStore(root, max_line_bytes=max_line_bytes)
    where = beside(store.root) if rollouts is None else Path(rollouts)
    outcomes = Outcomes(where, max_line_bytes=max_line_bytes)
    viewer = _Viewer(store, limits or Limits(), str(root) if shown is None else shown, outcomes)
    app = Starlette(
        routes=[
            Route("/", viewer.page("index.html"), methods=["GET"]),
            Route("/rollouts/{rollout_id}", viewer.page("rollout.html"), methods=["GET"]),
            Route("/static/{name}", viewer.asset, methods=["GET"]),
            Route("/api/info", viewer.info, methods=["GET"]),
            Route("/api/rollouts", viewer.rollouts, methods=["GET"]),
            Route("/api/rollouts/{rollout_id}", viewer.rollout, methods=["GET"]),
            Route("/api/rollouts/{rollout_id}/summary", viewer.summary, methods=["GET"]),
            Route("/api/rollouts/{rollout_id}/calls/{index:int}", viewer.call, methods=["GET"]),
            Route("/api/rollouts/{rollout_id}/neighbours", viewer.neighbours, methods=["GET"]),
            Route("/api/search", viewer.search, methods=["GET"]),
        ],
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(
                TrustedHostMiddleware,
                allowed_hosts=allowed_hosts or ["127.0.0.1", "localhost", "::1", "[::1]"],
            ),
        ],
        lifespan=viewer.lifespan,
    )
    app.state.index = viewer.index
    app.state.searches = viewer.searched
    return app
