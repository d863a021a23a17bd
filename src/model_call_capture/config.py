"""Capture configuration: reading CaptureConfig from a global config mapping or YAML file.

The global config is the one NeMo Gym reads: capture settings sit at the top level, beside
the server instances, and apply to every model server of the run::

    observability_enabled: true
    model_call_capture_dir: /data/model-calls

    policy_model:
      responses_api_models:
        vllm_model:
          entrypoint: app.py
          host: 127.0.0.1
          port: 8000

A server instance is a top-level key whose value maps a server type
(`responses_api_models`, `responses_api_agents`, ...) to one implementation's settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import msgspec
import yaml

from .contracts import CaptureConfig, CaptureLayout, StreamRawPolicy
from .errors import CaptureConfigError

__all__ = [
    "CAPTURE_KEYS",
    "CaptureConfigError",
    "ConfigSource",
    "ServerInstance",
    "load_capture_config",
    "load_global_config",
    "load_server_instances",
]

ConfigSource = Mapping[str, Any] | str | os.PathLike[str] | None
"""A global config mapping, the path of a YAML file holding one, or None (capture off)."""

CAPTURE_KEYS = frozenset(CaptureConfig.__struct_fields__)
"""The top-level keys that configure capture (`observability_enabled`, ...)."""


@dataclass(frozen=True, slots=True)
class ServerInstance:
    """One server instance of the global config: `<name>: {<server_type>: {<impl>: {...}}}`."""

    name: str
    """The instance's top-level key, e.g. `policy_model`; model calls resolve by this name."""
    server_type: str
    """`responses_api_models`, `responses_api_agents`, `resources_servers`, ..."""
    implementation: str
    """The implementation key under the type, e.g. `vllm_model`."""
    host: str | None
    """Host the server listens on, when configured."""
    port: int | None
    """Port the server listens on, when configured."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """The implementation's settings as written."""

    @property
    def base_url(self) -> str | None:
        """`http://<host>:<port>`, or None when host or port is not configured."""
        if self.host is None or self.port is None:
            return None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def load_global_config(source: ConfigSource) -> dict[str, Any]:
    """The global config as a plain dict: a copy of a mapping, a parsed YAML file, or `{}`."""
    if source is None:
        return {}
    if isinstance(source, Mapping):
        return dict(source)
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CaptureConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CaptureConfigError(f"config file {path} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CaptureConfigError(
            f"config file {path} must hold a mapping at the top level, got {type(data).__name__}"
        )
    return data


def load_capture_config(source: ConfigSource) -> CaptureConfig:
    """Read the capture settings from a global config (mapping, YAML path, or None).

    Capture is off unless `observability_enabled` is true; then `model_call_capture_dir`
    must be an absolute path (every producer and the collector must resolve it to the
    same volume, which a relative path cannot promise). The byte bounds
    (`capture_max_bytes` per call, `capture_memory_budget_bytes` for all calls in flight)
    are non-negative integers. Other top-level keys (server instances, other settings)
    are ignored. Raises `CaptureConfigError` with the reason.
    """
    data = load_global_config(source)
    settings = {key: data[key] for key in CAPTURE_KEYS if key in data}
    enabled = settings.get("observability_enabled", False)
    if not isinstance(enabled, bool):
        raise CaptureConfigError(f"observability_enabled must be true or false, got {enabled!r}")
    policy = settings.get("capture_stream_raw", "on_failure")
    if policy not in get_args(StreamRawPolicy):
        raise CaptureConfigError(
            f"capture_stream_raw must be one of {list(get_args(StreamRawPolicy))}, got {policy!r}"
        )
    layout = settings.get("capture_layout", "auto")
    if layout not in get_args(CaptureLayout):
        raise CaptureConfigError(
            f"capture_layout must be one of {list(get_args(CaptureLayout))}, got {layout!r}"
        )
    for key in ("capture_max_bytes", "capture_memory_budget_bytes"):
        value = settings.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CaptureConfigError(f"{key} must be a non-negative integer, got {value!r}")
    endpoint = settings.get("otlp_endpoint")
    if endpoint is not None and not isinstance(endpoint, str):
        raise CaptureConfigError(f"otlp_endpoint must be a URL string or null, got {endpoint!r}")
    directory = settings.get("model_call_capture_dir")
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise CaptureConfigError(f"model_call_capture_dir must be a path string, got {directory!r}")
    if directory is not None:
        directory = settings["model_call_capture_dir"] = os.fspath(directory)
    if not enabled and directory is not None and not os.path.isabs(directory):
        # Capture is off: the directory is never used, and the contract holds only an
        # absolute one.
        del settings["model_call_capture_dir"]
    if enabled:
        if not directory:
            raise CaptureConfigError(
                "observability_enabled is true but model_call_capture_dir is not set: "
                "set it to an absolute directory shared by every model server and the collector"
            )
        if not os.path.isabs(settings["model_call_capture_dir"]):
            raise CaptureConfigError(
                f"model_call_capture_dir must be an absolute path when observability_enabled "
                f"is true, got {settings['model_call_capture_dir']!r}: model servers and the "
                f"collector may run in different working directories"
            )
    try:
        return msgspec.convert(settings, CaptureConfig)
    except msgspec.ValidationError as exc:  # pragma: no cover - every field is checked above
        raise CaptureConfigError(f"invalid capture settings: {exc}") from exc


def load_server_instances(source: ConfigSource) -> dict[str, ServerInstance]:
    """The server instances of a global config by name (top-level keys shaped like one).

    An instance is `<name>: {<server_type>: {<implementation>: {settings}}}`; `host` and
    `port` are read from the settings when present. Other top-level keys are skipped.
    """
    instances: dict[str, ServerInstance] = {}
    for name, value in load_global_config(source).items():
        if name in CAPTURE_KEYS or not isinstance(value, Mapping) or len(value) != 1:
            continue
        ((server_type, impls),) = value.items()
        if not isinstance(impls, Mapping) or len(impls) != 1:
            continue
        ((implementation, settings),) = impls.items()
        if not isinstance(settings, Mapping):
            continue
        host = settings.get("host")
        port = settings.get("port")
        instances[str(name)] = ServerInstance(
            name=str(name),
            server_type=str(server_type),
            implementation=str(implementation),
            host=str(host) if host is not None else None,
            port=_port(port),
            settings=dict(settings),
        )
    return instances


def _port(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None
