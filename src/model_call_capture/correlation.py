"""Correlating model calls with rollouts in agents: the helpers gated on the configuration.

The rule of rollout ids and the `/ng-rollout/<id>` prefix are in `rollout_ids` (a
foundation module, pure); this module builds the agent helpers on them.

The agent helpers (`rollout_id_from_run`, `url_path_for_run`, `url_path_for_request`,
`base_url_for_run`, `resolve_model_base_url`) are gated on `observability_enabled`: while
capture is off they return URLs unprefixed and no rollout id. They exist as methods of
`RolloutCorrelation` (built from the global config) and as module functions that use the
process-wide correlation set with `configure_correlation(global_config)` (capture off until
then), or the one passed as `correlation=`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .config import ConfigSource, ServerInstance, load_capture_config, load_server_instances
from .contracts import CaptureConfig
from .rollout_ids import (
    apply_rollout_prefix,
    rollout_id_for_body,
    rollout_path_prefix,
    split_rollout_prefix,
    validate_rollout_id,
)

__all__ = [
    "RolloutCorrelation",
    "add_rollout_self_call_route",
    "base_url_for_run",
    "configure_correlation",
    "current_correlation",
    "resolve_model_base_url",
    "rollout_id_from_run",
    "url_path_for_request",
    "url_path_for_run",
]


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
