"""Correlating model calls with rollouts: rollout ids, the /ng-rollout/<id> prefix and agent helpers.

A rollout id names its capture files, so it must be a safe file-name stem:
`^[A-Za-z0-9][A-Za-z0-9._-]*$`, at most `MAX_ROLLOUT_ID_LENGTH` characters
(`validate_rollout_id`). Every module that takes a rollout id checks it here.

A model call is captured under a rollout when its URL path starts with
`/ng-rollout/<rollout_id>`; the model server strips the prefix before routing. The id of
a rollout attempt comes from the run request body:

- `_ng_rollout_id`, when present, is used as is (validated);
- else `"{_ng_task_index}-{_ng_rollout_index}"`, with `-a<n>` appended when
  `_ng_attempt_index` is n > 0, so a resumed attempt never mixes with an earlier one.

The agent helpers (`rollout_id_from_run`, `url_path_for_run`, `url_path_for_request`,
`base_url_for_run`, `resolve_model_base_url`) are gated on `observability_enabled`: while
capture is off they return URLs unprefixed and no rollout id. They exist as methods of
`RolloutCorrelation` (built from the global config) and as module functions that use the
process-wide correlation set with `configure_correlation(global_config)` (capture off until
then), or the one passed as `correlation=`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from .config import ConfigSource, ServerInstance, load_capture_config, load_server_instances
from .contracts import CaptureConfig
from .errors import InvalidRolloutIdError

__all__ = [
    "MAX_ROLLOUT_ID_LENGTH",
    "ROLLOUT_PREFIX",
    "SELF_CALL_ROUTE",
    "RolloutCorrelation",
    "add_rollout_self_call_route",
    "apply_rollout_prefix",
    "base_url_for_run",
    "configure_correlation",
    "current_correlation",
    "resolve_model_base_url",
    "rollout_id_for_body",
    "rollout_id_from_run",
    "rollout_order",
    "rollout_path_prefix",
    "route_path",
    "split_rollout_prefix",
    "split_scope_prefix",
    "url_path_for_request",
    "url_path_for_run",
    "validate_rollout_id",
]

MAX_ROLLOUT_ID_LENGTH = 200
"""Longest accepted rollout id; keeps `<id>.capture.incomplete` under NAME_MAX (255)."""

# ASCII only (the class lists ASCII ranges explicitly) and \Z, not $: `$` would accept a
# trailing newline.
_ROLLOUT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_ROLLOUT_ID_RULE = (
    f"a rollout id must match ^[A-Za-z0-9][A-Za-z0-9._-]*$ and be at most "
    f"{MAX_ROLLOUT_ID_LENGTH} characters"
)


_DIGITS = re.compile(r"(\d+)")


def rollout_order(rollout_id: str) -> tuple[tuple[str | int, ...], str]:
    """The sort key of rollout ids in their natural order: runs of digits compare as
    numbers (`2-0` before `10-0`, `1-0-a2` before `1-0-a10`), the rest as text; ids
    equal that way (`01-0`, `1-0`) in text order. Every list of rollouts a user sees, and
    every export, is in this order.
    """
    parts = _DIGITS.split(rollout_id)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), rollout_id


def validate_rollout_id(rollout_id: str) -> str:
    """Return `rollout_id` if it is a safe file-name stem, else raise `InvalidRolloutIdError`.

    The rule (`^[A-Za-z0-9][A-Za-z0-9._-]*$`, at most 200 characters) excludes path
    separators, `.`/`..`, absolute paths, NUL and non-ASCII look-alikes.
    """
    if (
        not isinstance(rollout_id, str)
        or len(rollout_id) > MAX_ROLLOUT_ID_LENGTH
        or _ROLLOUT_ID.match(rollout_id) is None
    ):
        shown = repr(rollout_id)
        if len(shown) > 80:
            shown = shown[:60] + f"...<{len(shown)} chars>"
        raise InvalidRolloutIdError(f"invalid rollout id {shown}: {_ROLLOUT_ID_RULE}")
    return rollout_id


ROLLOUT_PREFIX = "/ng-rollout/"
"""The path segment that introduces a rollout id."""
SELF_CALL_ROUTE = "/ng-rollout/{rollout_id}/v1/responses"
"""The prefixed self-call route registered on agents."""


def _index(body: Mapping[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRolloutIdError(f"{key} must be a non-negative integer, got {value!r}")
    return value


def rollout_id_for_body(body: Mapping[str, Any]) -> str | None:
    """The rollout-attempt id a run body names, whether or not capture is on.

    `_ng_rollout_id` (validated) wins; else `{_ng_task_index}-{_ng_rollout_index}` plus
    `-a<n>` for `_ng_attempt_index` n > 0. None when the body names no rollout. Raises
    `InvalidRolloutIdError` for an id or index that is malformed.
    """
    explicit = body.get("_ng_rollout_id")
    if explicit is not None:
        return validate_rollout_id(explicit)
    task = _index(body, "_ng_task_index")
    rollout = _index(body, "_ng_rollout_index")
    attempt = _index(body, "_ng_attempt_index")
    if task is None or rollout is None:
        return None
    rollout_id = f"{task}-{rollout}"
    if attempt:
        rollout_id += f"-a{attempt}"
    return validate_rollout_id(rollout_id)


def rollout_path_prefix(rollout_id: str) -> str:
    """`/ng-rollout/<rollout_id>` (validated, no trailing slash)."""
    return ROLLOUT_PREFIX + validate_rollout_id(rollout_id)


def split_rollout_prefix(path: str) -> tuple[str | None, str]:
    """Split `/ng-rollout/<id>/rest` into `(id, "/rest")`; `(None, path)` when unprefixed.

    The id is returned as written, not validated: callers decide what an invalid one means.
    """
    if not path.startswith(ROLLOUT_PREFIX):
        return None, path
    rest = path[len(ROLLOUT_PREFIX) :]
    rollout_id, slash, tail = rest.partition("/")
    return rollout_id, slash + tail if slash else "/"


def apply_rollout_prefix(url_path: str, rollout_id: str) -> str:
    """Prefix `url_path` with `/ng-rollout/<rollout_id>` (replacing an existing prefix)."""
    _, path = split_rollout_prefix(url_path)
    if not path.startswith("/"):
        path = "/" + path
    return rollout_path_prefix(rollout_id) + path


def _prefix_base_url(base_url: str, rollout_id: str) -> str:
    parts = urlsplit(base_url)
    path = apply_rollout_prefix(parts.path or "/", rollout_id)
    if path.endswith("/") and not parts.path.endswith("/"):
        path = path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


def _rollout_id_of_request(request: Any) -> str | None:
    """The rollout id an inbound request was addressed to (path param or URL prefix)."""
    if isinstance(request, str):
        path = request
    else:
        params = getattr(request, "path_params", None)
        if isinstance(params, Mapping) and params.get("rollout_id"):
            return validate_rollout_id(params["rollout_id"])
        scope = request if isinstance(request, Mapping) else getattr(request, "scope", {})
        path = scope.get("raw_path", b"").decode("latin-1") or scope.get("path", "")
        if not path:
            url = getattr(request, "url", None)
            path = getattr(url, "path", "") or ""
    rollout_id, _ = split_rollout_prefix(path)
    return validate_rollout_id(rollout_id) if rollout_id is not None else None


class RolloutCorrelation:
    """The agent helpers, gated on one run's capture settings and server instances.

    Build it from the global config with `RolloutCorrelation.from_config(source)`.
    """

    def __init__(
        self,
        capture: CaptureConfig | None = None,
        servers: Mapping[str, ServerInstance] | None = None,
    ) -> None:
        self.capture = capture or CaptureConfig()
        """The run's capture settings; the helpers prefix only when capture is on."""
        self.servers: dict[str, ServerInstance] = dict(servers or {})
        """Server instances by name, for `resolve_model_base_url`."""

    @classmethod
    def from_config(cls, source: ConfigSource) -> RolloutCorrelation:
        """Read capture settings and server instances from a global config (mapping or YAML)."""
        return cls(load_capture_config(source), load_server_instances(source))

    @property
    def enabled(self) -> bool:
        """True when `observability_enabled` is on."""
        return self.capture.observability_enabled

    def rollout_id_from_run(self, body: Mapping[str, Any]) -> str | None:
        """The run's rollout-attempt id, or None when capture is off or the body names none."""
        return rollout_id_for_body(body) if self.enabled else None

    def url_path_for_run(self, url_path: str, body: Mapping[str, Any]) -> str:
        """`url_path` prefixed with the run's rollout id; unchanged when capture is off."""
        rollout_id = self.rollout_id_from_run(body)
        return apply_rollout_prefix(url_path, rollout_id) if rollout_id else url_path

    def url_path_for_request(self, url_path: str, request: Any) -> str:
        """Carry the prefix of an inbound self-call (`/ng-rollout/<id>/v1/responses`) to `url_path`.

        `request` is a Starlette/FastAPI request, an ASGI scope, or a path string.
        Unchanged when capture is off or the inbound request was not prefixed.
        """
        if not self.enabled:
            return url_path
        rollout_id = _rollout_id_of_request(request)
        return apply_rollout_prefix(url_path, rollout_id) if rollout_id else url_path

    def base_url_for_run(self, base_url: str, body: Mapping[str, Any]) -> str:
        """`http://host:port/v1` -> `http://host:port/ng-rollout/<id>/v1`; unchanged when capture is off."""
        rollout_id = self.rollout_id_from_run(body)
        return _prefix_base_url(base_url, rollout_id) if rollout_id else base_url

    def resolve_model_base_url(self, name: str, rollout_id: str | None) -> str:
        """Base URL of the model server instance `name`, prefixed for `rollout_id` when capture is on.

        Returns `http://host:port[/ng-rollout/<id>]`; an OpenAI client adds `/v1` to it,
        an Anthropic client uses it as is. Raises `KeyError` naming the known instances
        for an unknown name, `ValueError` when the instance has no host/port.
        """
        try:
            server = self.servers[name]
        except KeyError:
            raise KeyError(
                f"no server instance {name!r} in the global config; known: {sorted(self.servers)}"
            ) from None
        base = server.base_url
        if base is None:
            raise ValueError(f"server instance {name!r} has no host and port in the global config")
        if rollout_id is None or not self.enabled:
            return base
        return base + rollout_path_prefix(rollout_id)


_current = RolloutCorrelation()


def configure_correlation(source: ConfigSource | RolloutCorrelation) -> RolloutCorrelation:
    """Set the process-wide correlation the module functions use, from a global config."""
    global _current
    _current = (
        source if isinstance(source, RolloutCorrelation) else RolloutCorrelation.from_config(source)
    )
    return _current


def current_correlation() -> RolloutCorrelation:
    """The process-wide correlation (capture off until `configure_correlation` is called)."""
    return _current


def rollout_id_from_run(
    body: Mapping[str, Any], *, correlation: RolloutCorrelation | None = None
) -> str | None:
    """`RolloutCorrelation.rollout_id_from_run` of `correlation` or the process-wide one."""
    return (correlation or _current).rollout_id_from_run(body)


def url_path_for_run(
    url_path: str, body: Mapping[str, Any], *, correlation: RolloutCorrelation | None = None
) -> str:
    """`RolloutCorrelation.url_path_for_run` of `correlation` or the process-wide one."""
    return (correlation or _current).url_path_for_run(url_path, body)


def url_path_for_request(
    url_path: str, request: Any, *, correlation: RolloutCorrelation | None = None
) -> str:
    """`RolloutCorrelation.url_path_for_request` of `correlation` or the process-wide one."""
    return (correlation or _current).url_path_for_request(url_path, request)


def base_url_for_run(
    base_url: str, body: Mapping[str, Any], *, correlation: RolloutCorrelation | None = None
) -> str:
    """`RolloutCorrelation.base_url_for_run` of `correlation` or the process-wide one."""
    return (correlation or _current).base_url_for_run(base_url, body)


def resolve_model_base_url(
    name: str, rollout_id: str | None, *, correlation: RolloutCorrelation | None = None
) -> str:
    """`RolloutCorrelation.resolve_model_base_url` of `correlation` or the process-wide one."""
    return (correlation or _current).resolve_model_base_url(name, rollout_id)


def add_rollout_self_call_route(
    app: Any, endpoint: Callable[..., Any] | None = None, *, path: str = "/v1/responses"
) -> None:
    """Register `/ng-rollout/{rollout_id}<path>` on a FastAPI or Starlette app.

    The prefixed route calls `endpoint`, by default the one already registered at `path`
    (POST). The endpoint learns the rollout from `request.path_params["rollout_id"]`,
    which `url_path_for_request` reads. Registering is harmless while capture is off.
    """
    methods = ["POST"]
    if endpoint is None:
        for route in getattr(app, "routes", []):
            if (
                getattr(route, "path", None) == path
                and getattr(route, "endpoint", None) is not None
            ):
                endpoint = route.endpoint
                methods = sorted(getattr(route, "methods", None) or methods)
                break
        else:
            raise ValueError(f"no route at {path!r} to mirror; pass the endpoint explicitly")
    prefixed = "/ng-rollout/{rollout_id}" + path
    if hasattr(app, "add_api_route"):  # FastAPI: keep its request parsing and validation
        app.add_api_route(prefixed, endpoint, methods=methods)
    else:
        app.add_route(prefixed, endpoint, methods=methods)


# -- the prefix in an ASGI scope (the capture middleware) ----------------------------


def split_scope_prefix(scope: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(rollout id, copy of the ASGI `scope` without the prefix), or None when it has none.

    The prefix is looked for after `root_path`, which is left alone. The id is read from
    `raw_path` when the server gave one, so a `%2F` inside the id stays inside the id
    instead of splitting the path. The id is returned as written, not validated.
    """
    path: str = scope["path"]
    root: str = scope.get("root_path") or ""
    base = root if root and path.startswith(root + ROLLOUT_PREFIX) else ""
    if not path.startswith(ROLLOUT_PREFIX, len(base)):
        return None
    rest = path[len(base) + len(ROLLOUT_PREFIX) :]
    raw: bytes | None = scope.get("raw_path")
    rollout_id: str | None = None
    new_raw: bytes | None = None
    if raw is not None:
        raw_base = base.encode("utf-8")
        raw_prefix = raw_base + ROLLOUT_PREFIX.encode()
        if raw.startswith(raw_prefix):
            segment, slash, tail = raw[len(raw_prefix) :].partition(b"/")
            candidate = unquote(segment.decode("ascii", "replace"))
            after = rest[len(candidate) :]
            if rest.startswith(candidate) and (not after or after.startswith("/")):
                rollout_id = candidate
                new_raw = raw_base + b"/" + tail if slash else raw_base + b"/"
    if rollout_id is None:
        rollout_id = rest.partition("/")[0]
    tail_path = rest[len(rollout_id) :] or "/"
    new_scope = dict(scope)
    new_scope["path"] = base + tail_path
    if raw is not None:
        new_scope["raw_path"] = (
            new_raw if new_raw is not None else quote(base + tail_path).encode("ascii")
        )
    return rollout_id, new_scope


def route_path(scope: Mapping[str, Any]) -> str:
    """The path an app routes on: the scope's `path` without its `root_path`."""
    path: str = scope["path"]
    root: str = scope.get("root_path") or ""
    if root and path.startswith(root + "/"):
        return path[len(root) :]
    return path
