"""The drop-in capture middleware: configured from the environment, constructed with `app` only.

An inference server that loads middleware by import path calls the class with the app and
nothing else (vLLM and TensorRT-LLM: `--middleware model_call_capture.dropin.CaptureMiddleware`),
and the API-server processes it spawns inherit environment variables and nothing else. So
this class reads its settings from the environment, once per instance (each process builds
its own; all of them append to the same rollout files, which the store locks):

- `MCC_CAPTURE_DIR`: the absolute capture directory; setting it turns capture on;
- `MCC_MODEL_SERVER_NAME`: the model server's name in every line's `model_ref.name`
  (required when capture is on);
- `MCC_CONFIG`: the run's global YAML config (the one file servers and collector share);
  its capture keys are read, and the variables above and below override them;
- `MCC_<FIELD>` for each other `CaptureConfig` field (`MCC_OBSERVABILITY_ENABLED`,
  `MCC_CAPTURE_MAX_BYTES`, `MCC_CAPTURE_STREAM_RAW`, `MCC_CAPTURE_MEMORY_BUDGET_BYTES`,
  `MCC_CAPTURE_LAYOUT`, `MCC_OTLP_ENDPOINT`),
  its value read as the YAML scalar one would write for that key in `MCC_CONFIG`.

A bad value raises `CaptureConfigError` naming the variable, both when this module is
imported (which a server loading middleware by path does while it starts) and from the
constructor. With none of these set (or capture turned off by them) the
middleware passes every call through uncaptured, still stripping the `/ng-rollout/<id>`
prefix, and says so once per process in the log. Everything else (which calls are captured,
how, what a failure does) is `model_call_capture.middleware.CaptureMiddleware`'s.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from ._asgi import ASGIApp
from .config import CAPTURE_KEYS, load_capture_config, load_global_config
from .contracts import CaptureConfig
from .errors import CaptureConfigError
from .middleware import CaptureMiddleware as _CaptureMiddleware

__all__ = [
    "CAPTURE_DIR_VAR",
    "CONFIG_VAR",
    "MODEL_SERVER_NAME_VAR",
    "CaptureMiddleware",
    "DropinSettings",
    "field_variables",
    "settings_from_environ",
]

CAPTURE_DIR_VAR = "MCC_CAPTURE_DIR"
"""The absolute capture directory; its presence turns capture on."""
MODEL_SERVER_NAME_VAR = "MCC_MODEL_SERVER_NAME"
"""The model server's name, written into every line's `model_ref.name`."""
CONFIG_VAR = "MCC_CONFIG"
"""The path of the run's global YAML config, whose capture keys are the defaults."""

_DIR_FIELD = "model_call_capture_dir"

logger = logging.getLogger("model_call_capture.dropin")


def field_variables() -> dict[str, str]:
    """`MCC_<FIELD>` -> field, for each `CaptureConfig` field but the directory (`MCC_CAPTURE_DIR`)."""
    return {f"MCC_{key.upper()}": key for key in sorted(CAPTURE_KEYS - {_DIR_FIELD})}


@dataclass(frozen=True, slots=True)
class DropinSettings:
    """What the environment says: the capture config, and the model server's name."""

    config: CaptureConfig
    """The capture settings (capture off when `observability_enabled` is false)."""
    model_server_name: str
    """`MCC_MODEL_SERVER_NAME`; empty when capture is off and it was not set."""
    off_reason: str
    """Why capture is off, for the log; empty when it is on."""


def settings_from_environ(environ: Mapping[str, str] | None = None) -> DropinSettings:
    """Read the drop-in's settings from `environ` (default `os.environ`).

    Raises `CaptureConfigError` naming the variable whose value is wrong (or missing).
    """
    env = os.environ if environ is None else environ
    fields = field_variables()
    settings = _config_file_settings(env)
    for var, key in fields.items():
        if var in env:
            settings[key] = _field_value(var, key, env[var])
    if CAPTURE_DIR_VAR in env:
        settings[_DIR_FIELD] = _capture_dir(env[CAPTURE_DIR_VAR])
        if "MCC_OBSERVABILITY_ENABLED" not in env:
            settings["observability_enabled"] = True
    try:
        config = load_capture_config(settings)
    except CaptureConfigError as exc:
        named = [CONFIG_VAR, CAPTURE_DIR_VAR, *fields]
        sources = ", ".join(var for var in named if var in env)
        raise CaptureConfigError(f"the capture settings of {sources}: {exc}") from None
    name = env.get(MODEL_SERVER_NAME_VAR, "")
    if config.observability_enabled and not name.strip():
        state = "is empty" if MODEL_SERVER_NAME_VAR in env else "is not set"
        raise CaptureConfigError(
            f"{MODEL_SERVER_NAME_VAR} {state}: with capture on, set it to this model "
            f"server's name (it goes into every captured line's model_ref.name)"
        )
    return DropinSettings(
        config=config, model_server_name=name, off_reason=_off_reason(env, config)
    )


def _off_reason(env: Mapping[str, str], config: CaptureConfig) -> str:
    if config.observability_enabled:
        return ""
    if "MCC_OBSERVABILITY_ENABLED" in env:
        return "MCC_OBSERVABILITY_ENABLED is false"
    if CONFIG_VAR in env:
        return f"{CAPTURE_DIR_VAR} is not set and {CONFIG_VAR} does not turn capture on"
    return f"{CAPTURE_DIR_VAR} is not set"


def _config_file_settings(env: Mapping[str, str]) -> dict[str, Any]:
    if CONFIG_VAR not in env:
        return {}
    path = env[CONFIG_VAR]
    if not path:
        raise CaptureConfigError(f"{CONFIG_VAR} is empty: set it to the run's YAML config file")
    try:
        data = load_global_config(path)
    except CaptureConfigError as exc:
        raise CaptureConfigError(f"{CONFIG_VAR}: {exc}") from None
    return {key: data[key] for key in CAPTURE_KEYS if key in data}


def _field_value(var: str, key: str, text: str) -> Any:
    """The value of `MCC_<FIELD>`: a YAML scalar, checked alone by the config reader."""
    try:
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        value = text
    if value is None or isinstance(value, (list, dict)):
        raise CaptureConfigError(f"{var} must hold one value for {key}, got {text!r}")
    try:
        # Beside a placeholder directory, so `observability_enabled: true` passes alone.
        load_capture_config({_DIR_FIELD: os.sep, key: value})
    except CaptureConfigError as exc:
        raise CaptureConfigError(f"{var}={text!r}: {exc}") from None
    return value


def _capture_dir(text: str) -> str:
    if not text or not os.path.isabs(text):
        raise CaptureConfigError(
            f"{CAPTURE_DIR_VAR} must be an absolute directory, got {text!r}: every "
            f"API-server process and the collector must resolve it to the same place"
        )
    return text


_announced = threading.Lock()
_said_off = False


def _say_off_once(settings: DropinSettings) -> None:
    """Log once per process that capture is off, so a missing variable is seen."""
    global _said_off
    with _announced:
        if _said_off:
            return
        _said_off = True
    logger.warning(
        "model-call capture is off (%s): calls pass through uncaptured, "
        "the /ng-rollout/<id> prefix is still stripped",
        settings.off_reason,
    )


class CaptureMiddleware(_CaptureMiddleware):
    """`model_call_capture.middleware.CaptureMiddleware`, configured from the environment.

    Constructed with the ASGI app only (positionally or as `app=`), as servers that load
    middleware by import path do. Raises `CaptureConfigError` naming the variable when a
    setting is wrong, so the server fails to start instead of running without capture.
    """

    def __init__(self, app: ASGIApp) -> None:
        settings = settings_from_environ()
        super().__init__(app, config=settings.config, model_server_name=settings.model_server_name)
        if not settings.config.observability_enabled:
            _say_off_once(settings)
        else:
            logger.info(
                "model-call capture on: %s as %r (pid %d)",
                settings.config.model_call_capture_dir,
                settings.model_server_name,
                os.getpid(),
            )


# A server that loads this class by import path (vLLM, TensorRT-LLM) imports the module
# while it starts, before its ASGI server runs; Starlette builds middleware only at the
# first ASGI event, and uvicorn's default `lifespan="auto"` takes an exception there for
# "lifespan unsupported" and serves on (every request then fails). Reading the settings
# here too makes a bad variable stop the server where it loads the middleware.
settings_from_environ()
